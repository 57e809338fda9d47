/* bpe.c: the BPE model on one pre-token, step for step as HF tokenizers
 * (models/bpe/model.rs merge_word, models/bpe/word.rs Word::merge_all):
 *   - ignore_merges: a pre-token spelled exactly like a vocab entry is that entry;
 *   - each char is looked up in the vocab; a char that is absent becomes unk_token (fused
 *     with a preceding unk when fuse_unk) or, without unk_token, is dropped;
 *   - merges: a min-heap of (rank, position) candidates; the popped candidate is applied
 *     when the pair now at that position still merges into the same new id (stale entries
 *     are skipped exactly as HF checks them: by new id), and the pairs it forms with its
 *     neighbours are pushed.
 * The scratch (symbols, heap) belongs to the calling encode and grows as needed. */
#include "tokenizer/tok_impl.h"
#include "core/utf8.h"

#include <stdlib.h>

struct hy_tok_bpe_sym {
    int32_t id;
    int32_t prev, next; /* -1: none */
    uint32_t len;       /* bytes covered; 0 = merged into its left neighbour */
};

struct hy_tok_bpe_item {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
};

static inline bool item_less(const struct hy_tok_bpe_item *a, const struct hy_tok_bpe_item *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(struct hy_tok_bpe_item *h, size_t *n, struct hy_tok_bpe_item it)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!item_less(&it, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = it;
}

static struct hy_tok_bpe_item heap_pop(struct hy_tok_bpe_item *h, size_t *n)
{
    struct hy_tok_bpe_item top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && item_less(&h[c + 1], &h[c]))
            c++;
        if (!item_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

static hy_status reserve(struct hy_tok_bpe_scratch *sc, size_t n_sym, struct hy_err *err)
{
    /* n - 1 candidates at first; each pop that merges pushes at most two (net +1), and
     * there are at most n - 1 merges: the heap never holds more than 2 (n - 1). */
    size_t n_heap = 2 * n_sym + 1;
    if (n_sym > sc->sym_cap) {
        void *p = realloc(sc->sym, n_sym * sizeof *sc->sym);
        if (!p)
            return hy_err_set(err, HY_E_NOMEM, "tokenizer: out of memory");
        sc->sym = p;
        sc->sym_cap = n_sym;
    }
    if (n_heap > sc->heap_cap) {
        void *p = realloc(sc->heap, n_heap * sizeof *sc->heap);
        if (!p)
            return hy_err_set(err, HY_E_NOMEM, "tokenizer: out of memory");
        sc->heap = p;
        sc->heap_cap = n_heap;
    }
    return HY_OK;
}

void hy_tok_bpe_scratch_free(struct hy_tok_bpe_scratch *sc)
{
    free(sc->sym);
    free(sc->heap);
    sc->sym = NULL;
    sc->heap = NULL;
    sc->sym_cap = sc->heap_cap = 0;
}

static void add_sym(struct hy_tok_bpe_sym *sym, int32_t *n, int32_t id, uint32_t len)
{
    int32_t i = (*n)++;
    sym[i] = (struct hy_tok_bpe_sym){id, i - 1, -1, len};
    if (i > 0)
        sym[i - 1].next = i;
}

/* HF merge_word's first loop: chars to symbols. Returns the symbol count. */
static int32_t word_symbols(const struct hy_tok *t, const char *s, size_t n,
                            struct hy_tok_bpe_sym *sym)
{
    int32_t ns = 0;
    int32_t unk_len = 0; /* pending unk, bytes (0: none) */
    for (size_t i = 0; i < n;) {
        int len;
        uint32_t cp = hy_utf8_decode((const unsigned char *)s + i, &len);
        int32_t id = cp < TOK_DIRECT_CHARS ? t->char_id[cp]
                                           : hy_tok_strmap_get(&t->vocab, s + i, (size_t)len);
        if (id >= 0) {
            if (unk_len) {
                add_sym(sym, &ns, t->unk_id, (uint32_t)unk_len);
                unk_len = 0;
            }
            add_sym(sym, &ns, id, (uint32_t)len);
        } else if (t->unk_id >= 0) {
            if (unk_len && !t->fuse_unk) {
                add_sym(sym, &ns, t->unk_id, (uint32_t)unk_len);
                unk_len = 0;
            }
            unk_len += len;
        } /* else: dropped, as HF does without unk_token */
        i += (size_t)len;
    }
    if (unk_len)
        add_sym(sym, &ns, t->unk_id, (uint32_t)unk_len);
    return ns;
}

static void push_pair(const struct hy_tok *t, struct hy_tok_bpe_scratch *sc, size_t *nh,
                      int32_t pos)
{
    const struct hy_tok_bpe_sym *a = &sc->sym[pos];
    uint32_t rank;
    int32_t new_id;
    if (a->next >= 0 &&
        hy_tok_pairmap_get(&t->merges, a->id, sc->sym[a->next].id, &rank, &new_id)) {
        HY_ASSERT(*nh < sc->heap_cap);
        heap_push(sc->heap, nh, (struct hy_tok_bpe_item){rank, (uint32_t)pos, new_id});
    }
}

/* HF Word::merge_all (without dropout). */
static void merge_all(const struct hy_tok *t, struct hy_tok_bpe_scratch *sc, int32_t ns)
{
    struct hy_tok_bpe_sym *sym = sc->sym;
    size_t nh = 0;
    for (int32_t i = 0; i + 1 < ns; i++)
        push_pair(t, sc, &nh, i);
    while (nh) {
        struct hy_tok_bpe_item top = heap_pop(sc->heap, &nh);
        struct hy_tok_bpe_sym *cur = &sym[top.pos];
        if (cur->len == 0 || cur->next < 0)
            continue;
        struct hy_tok_bpe_sym right = sym[cur->next];
        uint32_t rank;
        int32_t new_id;
        if (!hy_tok_pairmap_get(&t->merges, cur->id, right.id, &rank, &new_id) ||
            new_id != top.new_id)
            continue; /* expired */
        sym[cur->next].len = 0;
        cur->id = top.new_id;
        cur->len += right.len;
        cur->next = right.next;
        if (right.next >= 0)
            sym[right.next].prev = (int32_t)top.pos;
        if (cur->prev >= 0)
            push_pair(t, sc, &nh, cur->prev);
        push_pair(t, sc, &nh, (int32_t)top.pos);
    }
}

hy_status hy_tok_bpe(const struct hy_tok *t, const char *s, size_t n, struct hy_tok_bpe_scratch *sc,
                     struct hy_tok_sink *out, struct hy_err *err)
{
    if (t->ignore_merges) {
        int32_t id = hy_tok_strmap_get(&t->vocab, s, n);
        if (id >= 0) {
            hy_tok_sink_put(out, id);
            return HY_OK;
        }
    }
    hy_status st = reserve(sc, n, err);
    if (st)
        return st;
    int32_t ns = word_symbols(t, s, n, sc->sym);
    if (ns > 1)
        merge_all(t, sc, ns);
    for (int32_t i = 0; i < ns; i++)
        if (sc->sym[i].len)
            hy_tok_sink_put(out, sc->sym[i].id);
    return HY_OK;
}
