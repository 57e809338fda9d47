/* encode.c: text -> ids through the pipeline of tok_impl.h, depth first.
 *
 * Pre-tokenizer stages follow HF (tokenizer/normalizer.rs NormalizedString::split,
 * tokenizer/pattern.rs, pre_tokenizers/split.rs, pre_tokenizers/byte_level.rs):
 *   - a Split stage lists the piece as alternating (span, is_match) elements: the regex's
 *     find_iter matches (empty ones included) and the text between them; invert flips the
 *     flags; then the behavior groups them: Isolated keeps every element, Removed drops the
 *     matches, MergedWithPrevious appends a match to the preceding non-match, MergedWithNext
 *     prepends a match to the following non-match, Contiguous joins runs of equal flags.
 *     Empty groups are dropped (PreTokenizedString::split).
 *   - ByteLevel: prefix a space when add_prefix_space and the piece does not start with one;
 *     split with the GPT-2 regex (Isolated) when use_regex; map every byte to its
 *     byte-level char.
 * Merging needs at most one held element, so each stage streams its groups to the next. */
#include "core/utf8.h"
#include "tokenizer/tok_impl.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCKS 40

/* Scratch strings, released in LIFO order (a stage frees what it made for one piece). */
struct arena {
    struct {
        char *mem;
        size_t cap, used;
    } blk[ARENA_BLOCKS];
    int n, cur;
};
struct arena_mark {
    int cur;
    size_t used;
};

struct enc {
    const struct hy_tok *tok;
    bool allow_special;
    struct hy_tok_sink out;
    struct arena ar;
    OnigRegion *region[TOK_MAX_STAGES];
    struct hy_tok_bpe_scratch bpe;
    struct hy_err *err;
};

static struct arena_mark arena_mark(const struct arena *a)
{
    return (struct arena_mark){a->cur, a->n ? a->blk[a->cur].used : 0};
}

static void arena_release(struct arena *a, struct arena_mark m)
{
    a->cur = m.cur;
    if (a->n)
        a->blk[a->cur].used = m.used;
}

static char *arena_alloc(struct arena *a, size_t n)
{
    if (a->n && a->blk[a->cur].cap - a->blk[a->cur].used >= n) {
        char *p = a->blk[a->cur].mem + a->blk[a->cur].used;
        a->blk[a->cur].used += n;
        return p;
    }
    /* Blocks after cur are free (LIFO): take the next one, growing it if too small. */
    int next = a->n ? a->cur + 1 : 0;
    if (next == ARENA_BLOCKS)
        return NULL;
    if (next == a->n || a->blk[next].cap < n) {
        size_t prev = a->n ? a->blk[a->n - 1].cap : 0;
        size_t cap = prev * 2 > (64u << 10) ? prev * 2 : (64u << 10);
        cap = cap > n ? cap : n;
        char *mem = malloc(cap);
        if (!mem)
            return NULL;
        if (next < a->n)
            free(a->blk[next].mem);
        else
            a->n++;
        a->blk[next].mem = mem;
        a->blk[next].cap = cap;
    }
    a->cur = next;
    a->blk[next].used = n;
    return a->blk[next].mem;
}

static void arena_free(struct arena *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->blk[i].mem);
}

static hy_status nomem(struct enc *e)
{
    return hy_err_set(e->err, HY_E_NOMEM, "tokenizer: out of memory");
}

static hy_status run_stage(struct enc *e, int k, const char *s, size_t n);

/* ---- Split ---- */

/* One group being built by the behavior state machine. */
struct grouper {
    struct enc *e;
    int k;
    const char *s;
    enum hy_tok_behavior beh;
    bool have, held_match; /* have: a pending group [a, b); held_match: it is a match */
    bool prev_match;
    size_t a, b;
};

static hy_status emit(struct grouper *g, size_t a, size_t b)
{
    return b > a ? run_stage(g->e, g->k + 1, g->s + a, b - a) : HY_OK;
}

static hy_status flush(struct grouper *g)
{
    if (!g->have)
        return HY_OK;
    g->have = false;
    return emit(g, g->a, g->b);
}

static hy_status hold(struct grouper *g, size_t a, size_t b, bool is_match)
{
    hy_status st = flush(g);
    g->have = true;
    g->held_match = is_match;
    g->a = a;
    g->b = b;
    return st;
}

static hy_status element(struct grouper *g, size_t a, size_t b, bool is_match)
{
    hy_status st = HY_OK;
    switch (g->beh) {
    case TOK_ISOLATED: st = emit(g, a, b); break;
    case TOK_REMOVED: st = is_match ? HY_OK : emit(g, a, b); break;
    case TOK_CONTIGUOUS:
        if (g->have && is_match == g->prev_match)
            g->b = b;
        else
            st = hold(g, a, b, is_match);
        break;
    case TOK_MERGED_PREV:
        if (g->have && is_match && !g->prev_match)
            g->b = b;
        else
            st = hold(g, a, b, is_match);
        break;
    case TOK_MERGED_NEXT:
        if (g->have && g->held_match && !is_match) {
            g->have = false;
            st = emit(g, g->a, b);
        } else if (is_match) {
            st = hold(g, a, b, true);
        } else {
            st = flush(g);
            if (!st)
                st = emit(g, a, b);
        }
        break;
    }
    g->prev_match = is_match;
    return st;
}

/* find_matches + invert + behavior over s[0..n), each group to stage k + 1. */
static hy_status split_stage(struct enc *e, int k, OnigRegex re, enum hy_tok_behavior beh,
                             bool invert, const char *s, size_t n)
{
    struct grouper g = {.e = e, .k = k, .s = s, .beh = beh};
    struct hy_tok_finditer it = {re, (const unsigned char *)s, n, 0, -1, e->region[k]};
    size_t prev = 0, ms, me;
    int r;
    hy_status st = HY_OK;
    while (!st && (r = hy_tok_finditer_next(&it, &ms, &me, e->err)) == 1) {
        if (prev != ms)
            st = element(&g, prev, ms, invert);
        if (!st)
            st = element(&g, ms, me, !invert);
        prev = me;
    }
    if (st)
        return st;
    if (r < 0)
        return HY_E_INVAL;
    if (prev != n && (st = element(&g, prev, n, invert)))
        return st;
    return flush(&g);
}

/* ---- ByteLevel ---- */

static hy_status map_bytes(struct enc *e, int k, const char *s, size_t n)
{
    const struct hy_tok *t = e->tok;
    struct arena_mark m = arena_mark(&e->ar);
    char *out = arena_alloc(&e->ar, 2 * n);
    if (!out)
        return nomem(e);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        out[o] = (char)t->b2u[b][0];
        out[o + 1] = (char)t->b2u[b][1];
        o += t->b2u_len[b];
    }
    hy_status st = run_stage(e, k + 1, out, o);
    arena_release(&e->ar, m);
    return st;
}

static hy_status byte_level_stage(struct enc *e, int k, const char *s, size_t n)
{
    const struct hy_tok_stage *sg = &e->tok->stage[k];
    struct arena_mark m = arena_mark(&e->ar);
    if (sg->add_prefix_space && s[0] != ' ') {
        char *p = arena_alloc(&e->ar, n + 1);
        if (!p)
            return nomem(e);
        p[0] = ' ';
        memcpy(p + 1, s, n);
        s = p;
        n++;
    }
    hy_status st = HY_OK;
    if (!sg->re) {
        st = map_bytes(e, k, s, n);
    } else {
        struct hy_tok_finditer it = {sg->re, (const unsigned char *)s, n, 0, -1, e->region[k]};
        size_t prev = 0, ms, me;
        int r;
        while (!st && (r = hy_tok_finditer_next(&it, &ms, &me, e->err)) == 1) {
            if (prev != ms)
                st = map_bytes(e, k, s + prev, ms - prev);
            if (!st && me > ms)
                st = map_bytes(e, k, s + ms, me - ms);
            prev = me;
        }
        if (!st && r < 0)
            st = HY_E_INVAL;
        if (!st && prev != n)
            st = map_bytes(e, k, s + prev, n - prev);
    }
    arena_release(&e->ar, m);
    return st;
}

static hy_status run_stage(struct enc *e, int k, const char *s, size_t n)
{
    if (n == 0)
        return HY_OK;
    if (k == e->tok->n_stage)
        return hy_tok_bpe(e->tok, s, n, &e->bpe, &e->out, e->err);
    const struct hy_tok_stage *sg = &e->tok->stage[k];
    if (sg->kind == TOK_STAGE_BYTELEVEL)
        return byte_level_stage(e, k, s, n);
    return split_stage(e, k, sg->re, sg->behavior, sg->invert, s, n);
}

/* ---- added tokens and normalization ---- */

static hy_status normalized_piece(void *ctx, int32_t id, const char *s, size_t n)
{
    struct enc *e = ctx;
    if (id >= 0) {
        hy_tok_sink_put(&e->out, id);
        return HY_OK;
    }
    return run_stage(e, 0, s, n);
}

static hy_status raw_piece(void *ctx, int32_t id, const char *s, size_t n)
{
    struct enc *e = ctx;
    if (id >= 0) {
        hy_tok_sink_put(&e->out, id);
        return HY_OK;
    }
    char *norm = NULL;
    if (e->tok->nfc) {
        size_t nn;
        hy_status st = hy_tok_nfc(s, n, &norm, &nn, e->err);
        if (st)
            return st;
        if (norm) {
            s = norm;
            n = nn;
        }
    }
    hy_status st =
        hy_tok_split_added(e->tok, &e->tok->trie_norm, s, n, e->allow_special, normalized_piece, e);
    free(norm);
    return st;
}

static hy_status alloc_regions(struct enc *e)
{
    for (int k = 0; k < e->tok->n_stage; k++)
        if (e->tok->stage[k].re && !(e->region[k] = onig_region_new()))
            return nomem(e);
    return HY_OK;
}

hy_status hy_tok_encode(const struct hy_tok *tok, const char *text, size_t len, bool allow_special,
                        int32_t *ids, size_t cap, size_t *n_out, struct hy_err *err)
{
    *n_out = 0;
    size_t bad = hy_utf8_validate(text, len);
    if (bad != len)
        return hy_err_set(err, HY_E_INVAL, "invalid UTF-8 at byte offset %zu", bad);
    struct enc e = {.tok = tok, .allow_special = allow_special, .err = err};
    e.out = (struct hy_tok_sink){ids, cap, 0};
    hy_status st = alloc_regions(&e);
    if (!st)
        st = hy_tok_split_added(tok, &tok->trie_raw, text, len, allow_special, raw_piece, &e);
    for (int k = 0; k < tok->n_stage; k++)
        if (e.region[k])
            onig_region_free(e.region[k], 1);
    arena_free(&e.ar);
    hy_tok_bpe_scratch_free(&e.bpe);
    if (st)
        return st;
    *n_out = e.out.n;
    if (e.out.n > cap)
        return hy_err_set(err, HY_E_NOSPACE, "encode: %zu ids do not fit in %zu", e.out.n, cap);
    return HY_OK;
}
