/* added.c: added tokens: reading them from tokenizer.json and finding them in text, as HF
 * tokenizers does (tokenizer/added_vocabulary.rs).
 *
 * Loading (AddedVocabulary::add_tokens, called by the deserializer in file order): every
 * field of an entry is required (serde, no defaults); an empty content is ignored; the id is
 * the vocab's id when the content is in the BPE vocab, else the next free id counting from
 * the vocab's size (the JSON "id" only triggers a warning when it differs, as in HF). A token
 * with normalized=true is matched in normalized text by its normalized form.
 *
 * Matching (find_matches): a leftmost-longest, non-overlapping scan over the token strings
 * (daachorse LeftmostLongest). A match is dropped - its text stays in the piece, and the scan
 * continues after it - when it is special and special tokens are not allowed (HF's
 * encode_special_tokens), or when single_word is set and a \w char touches either side.
 * lstrip takes the whitespace run before the match (not before the end of the previous
 * token), rstrip the run after it. Whitespace is Unicode White_Space (Rust regex \s). */
#include "tokenizer/tok_impl.h"
#include "core/json.h"
#include "core/log.h"
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>

/* Unicode White_Space (what Rust's regex \s and char::is_whitespace accept). */
static bool is_space_cp(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Start of the char that ends at s[end) (end > 0). */
static size_t char_start_before(const char *s, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

/* Start of the whitespace run that ends at s[end). */
static size_t space_run_before(const char *s, size_t end)
{
    while (end > 0) {
        size_t b = char_start_before(s, end);
        int len;
        if (!is_space_cp(hy_utf8_decode((const unsigned char *)s + b, &len)))
            break;
        end = b;
    }
    return end;
}

/* Length of the whitespace run that starts at s[0..n). */
static size_t space_run_after(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        int len;
        if (!is_space_cp(hy_utf8_decode((const unsigned char *)s + i, &len)))
            break;
        i += (size_t)len;
    }
    return i;
}

/* Longest token string starting at s[0..n): its token index, -1 if none. */
static int32_t trie_longest(const struct hy_tok_trie *t, const char *s, size_t n, size_t *len)
{
    int32_t best = -1;
    uint32_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        uint32_t c = t->node[cur].child;
        while (c && t->node[c].byte != b)
            c = t->node[c].sibling;
        if (!c)
            break;
        cur = c;
        if (t->node[cur].tok >= 0) {
            best = t->node[cur].tok;
            *len = i + 1;
        }
    }
    return best;
}

/* Leftmost-longest match at or after pos: the token index, -1 when none. */
static int32_t trie_find(const struct hy_tok_trie *t, const char *s, size_t n, size_t pos,
                         size_t *mstart, size_t *mend)
{
    for (size_t i = pos; i < n; i++) {
        if (!t->first[(unsigned char)s[i]])
            continue;
        size_t len;
        int32_t tok = trie_longest(t, s + i, n - i, &len);
        if (tok >= 0) {
            *mstart = i;
            *mend = i + len;
            return tok;
        }
    }
    return -1;
}

static bool keep_single_word(const struct hy_tok *t, const char *s, size_t n, size_t a, size_t b)
{
    bool start_space = a == 0 || !hy_tok_regex_is_word(t->word_re, s + char_start_before(s, a),
                                                       a - char_start_before(s, a));
    bool stop_space = b == n || !hy_tok_regex_is_word(t->word_re, s + b, n - b);
    return start_space && stop_space;
}

hy_status hy_tok_split_added(const struct hy_tok *t, const struct hy_tok_trie *trie, const char *s,
                             size_t n, bool allow_special, hy_tok_piece_fn piece, void *ctx)
{
    size_t start_offset = 0, pos = 0, ms, me;
    int32_t k;
    hy_status st;
    while (trie->n && (k = trie_find(trie, s, n, pos, &ms, &me)) >= 0) {
        pos = me;
        const struct hy_tok_added *a = &t->added[k];
        if (a->special && !allow_special)
            continue;
        if (a->single_word && !keep_single_word(t, s, n, ms, me))
            continue;
        size_t start = ms, stop = me;
        if (a->lstrip) {
            size_t ns = space_run_before(s, start);
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip)
            stop += space_run_after(s + stop, n - stop);
        if (start_offset < start && (st = piece(ctx, -1, s + start_offset, start - start_offset)))
            return st;
        if ((st = piece(ctx, a->id, NULL, 0)))
            return st;
        start_offset = stop;
    }
    if (start_offset < n)
        return piece(ctx, -1, s + start_offset, n - start_offset);
    return HY_OK;
}

/* ---- loading ---- */

struct added_json {
    const char *content;
    size_t len;
    int64_t json_id;
    bool flag[5]; /* special, single_word, lstrip, rstrip, normalized */
};

static const char *const flag_names[5] = {"special", "single_word", "lstrip", "rstrip",
                                          "normalized"};

static hy_status parse_entry(const json_t *e, size_t i, struct added_json *a, struct hy_err *err)
{
    if (!json_is_object(e))
        return hy_err_set(err, HY_E_FORMAT, "added_tokens[%zu]: expected an object, got %s", i,
                          hy_json_type_name(e));
    const json_t *c = json_object_get(e, "content");
    if (!json_is_string(c))
        return hy_err_set(err, HY_E_FORMAT, "added_tokens[%zu]: \"content\" must be a string", i);
    a->content = json_string_value(c);
    a->len = json_string_length(c);
    hy_status st = hy_json_get_int(e, "id", true, 0, UINT32_MAX, &a->json_id, err);
    for (int f = 0; f < 5 && !st; f++)
        st = hy_json_get_bool(e, flag_names[f], true, &a->flag[f], err);
    if (st)
        hy_err_prefix(err, "added_tokens[%zu] (\"%.40s\")", i, a->content);
    return hy_tok_format_status(st);
}

static hy_status grow_added(struct hy_tok *t, int32_t *cap)
{
    if (t->n_added < *cap)
        return HY_OK;
    int32_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(t->added, (size_t)nc * sizeof *t->added);
    if (!p)
        return HY_E_NOMEM;
    t->added = p;
    *cap = nc;
    return HY_OK;
}

/* Appends s to the added-token string pool; *off receives its offset. */
static hy_status pool_add(char **pool, size_t *len, size_t *cap, const char *s, size_t n,
                          uint32_t *off)
{
    if (*len + n > UINT32_MAX)
        return HY_E_RANGE;
    if (*len + n > *cap) {
        size_t nc = (*cap + n) * 2;
        char *p = realloc(*pool, nc);
        if (!p)
            return HY_E_NOMEM;
        *pool = p;
        *cap = nc;
    }
    memcpy(*pool + *len, s, n);
    *off = (uint32_t)*len;
    *len += n;
    return HY_OK;
}

/* AddedVocabulary::add_tokens for one entry; *next_id is the next free id. */
static hy_status add_one(struct hy_tok *t, const struct added_json *a, int32_t *next_id,
                         int32_t *cap, size_t *pool_len, size_t *pool_cap, struct hy_err *err)
{
    int32_t idx = hy_tok_strmap_get(&t->added_map, a->content, a->len);
    bool existed = idx >= 0;
    int32_t id = idx >= 0 ? t->added[idx].id : hy_tok_strmap_get(&t->vocab, a->content, a->len);
    if (id < 0) {
        if (*next_id >= TOK_MAX_ID)
            return hy_err_set(err, HY_E_UNSUPPORTED, "added token id %d is too large", *next_id);
        id = (*next_id)++;
    }
    if (id != a->json_id)
        HY_LOGW("tokenizer: added token '%.40s' was expected to have id %lld but gets id %d "
                "(as in HF tokenizers)",
                a->content, (long long)a->json_id, id);
    if (idx < 0) {
        if (grow_added(t, cap))
            return hy_err_set(err, HY_E_NOMEM, "added_tokens: out of memory");
        idx = t->n_added++;
        hy_status st = hy_tok_strmap_put(&t->added_map, a->content, a->len, idx, NULL);
        if (st)
            return hy_err_set(err, st, "added_tokens: out of memory");
    }
    struct hy_tok_added *d = &t->added[idx];
    bool was_special = existed && d->special; /* HF's special set only grows */
    *d = (struct hy_tok_added){.id = id,
                               .special = a->flag[0] || was_special,
                               .single_word = a->flag[1],
                               .lstrip = a->flag[2],
                               .rstrip = a->flag[3],
                               .normalized = a->flag[4]};
    if (pool_add(&t->added_pool, pool_len, pool_cap, a->content, a->len, &d->off))
        return hy_err_set(err, HY_E_NOMEM, "added_tokens: out of memory");
    d->len = (uint32_t)a->len;
    return HY_OK;
}

/* The string each token is matched by: its content, normalized when it says so. */
static hy_status match_strings(struct hy_tok *t, size_t *pool_len, size_t *pool_cap,
                               struct hy_err *err)
{
    for (int32_t i = 0; i < t->n_added; i++) {
        struct hy_tok_added *d = &t->added[i];
        d->match_off = d->off;
        d->match_len = d->len;
        char *norm = NULL;
        size_t nn = 0;
        if (d->normalized && t->nfc) {
            hy_status st = hy_tok_nfc(t->added_pool + d->off, d->len, &norm, &nn, err);
            if (st)
                return st;
        }
        if (norm) {
            hy_status st = pool_add(&t->added_pool, pool_len, pool_cap, norm, nn, &d->match_off);
            free(norm);
            if (st)
                return hy_err_set(err, HY_E_NOMEM, "added_tokens: out of memory");
            d->match_len = (uint32_t)nn;
        }
        struct hy_tok_trie *trie = d->normalized ? &t->trie_norm : &t->trie_raw;
        if (hy_tok_trie_add(trie, t->added_pool + d->match_off, d->match_len, i))
            return hy_err_set(err, HY_E_NOMEM, "added_tokens: out of memory");
        if (d->single_word && !t->word_re) {
            hy_status st = hy_tok_regex_compile(&t->word_re, "\\w", 2, "single_word", err);
            if (st)
                return st;
        }
    }
    return HY_OK;
}

hy_status hy_tok_load_added(struct hy_tok *t, const json_t *j, struct hy_err *err)
{
    if (hy_tok_strmap_init(&t->added_map, 64))
        return hy_err_set(err, HY_E_NOMEM, "added_tokens: out of memory");
    if (!j || json_is_null(j))
        return HY_OK;
    if (!json_is_array(j))
        return hy_err_set(err, HY_E_FORMAT, "added_tokens: expected an array, got %s",
                          hy_json_type_name(j));
    /* HF: next id = the model's vocab size (entry count, not largest id + 1) */
    int32_t next_id = (int32_t)t->vocab.n_ent, cap = 0;
    size_t pool_len = 0, pool_cap = 0;
    for (size_t i = 0; i < json_array_size(j); i++) {
        struct added_json a;
        hy_status st = parse_entry(json_array_get(j, i), i, &a, err);
        if (st)
            return st;
        if (a.len == 0)
            continue;
        if ((st = add_one(t, &a, &next_id, &cap, &pool_len, &pool_cap, err)))
            return st;
    }
    return match_strings(t, &pool_len, &pool_cap, err);
}
