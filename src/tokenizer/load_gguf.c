/* load_gguf.c: a tokenizer from GGUF metadata (tokenizer.ggml.*), built through the same
 * internals as tokenizer.json: the metadata is turned into the tokenizer.json document it
 * stands for and loaded by hy_tok_from_json, so both paths share every rule.
 *
 * What the GGUF keys become (llama.cpp's convert_hf_to_gguf get_vocab_base, reversed):
 *   tokenizer.ggml.model   must be "gpt2" (byte-level BPE);
 *   tokens / token_type    NORMAL (1), UNKNOWN (2) and BYTE (6) tokens form the BPE vocab;
 *                          CONTROL (3) become special added tokens, USER_DEFINED (4)
 *                          non-special ones (both matched in raw text, normalized false, as
 *                          llama.cpp treats them pre-normalized); UNUSED (5, the "[PADn]"
 *                          fillers) are left out. No token_type: all NORMAL;
 *   merges                 "a b" strings, ranked in order;
 *   tokenizer.ggml.pre     the pre-tokenizer, model doc 4.3 and llama.cpp's llama-vocab.cpp:
 *     "hunyuan"        NFC, then Split(the 7B tiktoken regex, Isolated), ByteLevel without
 *                      its regex: the 7B tokenizer.json pipeline. The regex is the
 *                      tokenizer.json form with (?i:'s|...); llama.cpp spells the cases out,
 *                      which differs only for "'ſ"/"'K"-like case folds. llama.cpp applies
 *                      no NFC; for NFC input (all that HF's NFC tokenizer sees) they agree.
 *     "hunyuan-dense"  no normalizer; Split(\p{N}{1,3}), Split(CJK runs), Split(the
 *                      DeepSeek-V3 regex), each Isolated, then ByteLevel without its regex.
 * Added-token ids: tokenizer.json gives an added token the next id after the vocab (HF's
 * rule, tokenizer/added.c); where the GGUF's id differs from that, the token also goes into
 * the BPE vocab so that its id is kept. */
#include "core/log.h"
#include "core/utf8.h"
#include "formats/gguf.h"
#include "tokenizer/tok_impl.h"

#include <stdlib.h>
#include <string.h>

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

static const char re_7b[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                            "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char re_dense_num[] = "\\p{N}{1,3}";
static const char re_dense_cjk[] = "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-"
                                   "\xe3\x83\xbf]+"; /* [一-龥぀-ゟ゠-ヿ]+ */
static const char re_dense_main[] =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static json_t *split_stage(const char *re)
{
    return json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern", "Regex", re,
                     "behavior", "Isolated", "invert", 0);
}

static json_t *bytelevel(bool decoder)
{
    return json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", decoder,
                     "trim_offsets", 1, "use_regex", decoder);
}

hy_status hy_tok_gguf_pipeline(const char *pre, json_t **normalizer, json_t **pre_tokenizer)
{
    json_t *stages = json_array();
    if (!strcmp(pre, "hunyuan")) {
        *normalizer = json_pack("{s:s}", "type", "NFC");
        json_array_append_new(stages, split_stage(re_7b));
    } else if (!strcmp(pre, "hunyuan-dense")) {
        *normalizer = json_null();
        json_array_append_new(stages, split_stage(re_dense_num));
        json_array_append_new(stages, split_stage(re_dense_cjk));
        json_array_append_new(stages, split_stage(re_dense_main));
    } else {
        json_decref(stages);
        *normalizer = *pre_tokenizer = NULL;
        return HY_E_UNSUPPORTED;
    }
    json_array_append_new(stages, bytelevel(false));
    *pre_tokenizer = json_pack("{s:s, s:o}", "type", "Sequence", "pretokenizers", stages);
    return *normalizer && *pre_tokenizer ? HY_OK : HY_E_NOMEM;
}

/* Removes offset-only fields (trim_offsets) recursively, for comparisons. */
static void strip_offsets(json_t *j)
{
    if (json_is_object(j)) {
        json_object_del(j, "trim_offsets");
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) strip_offsets(v);
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            strip_offsets(json_array_get(j, i));
    }
}

static bool same(const json_t *a, const json_t *b)
{
    json_t *x = a ? json_deep_copy(a) : json_null(), *y = b ? json_deep_copy(b) : json_null();
    strip_offsets(x);
    strip_offsets(y);
    bool eq = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return eq;
}

const char *hy_tok_gguf_pre_of(const json_t *root)
{
    static const char *const names[2] = {"hunyuan", "hunyuan-dense"};
    for (int i = 0; i < 2; i++) {
        json_t *norm = NULL, *pre = NULL;
        if (hy_tok_gguf_pipeline(names[i], &norm, &pre))
            return NULL;
        const json_t *n = json_object_get(root, "normalizer");
        bool ok = same(n && !json_is_null(n) ? n : NULL, json_is_null(norm) ? NULL : norm) &&
                  same(json_object_get(root, "pre_tokenizer"), pre);
        json_decref(norm);
        json_decref(pre);
        if (ok)
            return names[i];
    }
    return NULL;
}

/* A token string as JSON (must be valid UTF-8 without NUL). */
static hy_status token_json(const char *s, size_t n, size_t id, json_t **out, struct hy_err *err)
{
    if (memchr(s, 0, n) || hy_utf8_validate(s, n) != n)
        return hy_err_set(err, HY_E_FORMAT, "tokenizer.ggml.tokens[%zu] is not valid UTF-8 "
                          "without NUL", id);
    *out = json_stringn(s, n);
    return *out ? HY_OK : hy_err_set(err, HY_E_NOMEM, "out of memory");
}

struct vocab_build {
    json_t *vocab, *added;
    int64_t *types; /* [n] */
    size_t n;
};

/* True when the added tokens (CONTROL, USER_DEFINED) hold exactly the ids n_vocab,
 * n_vocab+1, ... in order: tokenizer.json's rule gives them those ids by itself. */
static bool added_contiguous(const struct vocab_build *b)
{
    size_t n_vocab = 0, next = 0;
    for (size_t id = 0; id < b->n; id++)
        n_vocab += b->types[id] == TT_NORMAL;
    next = n_vocab;
    for (size_t id = 0; id < b->n; id++)
        if (b->types[id] == TT_CONTROL || b->types[id] == TT_USER) {
            if (id != next)
                return false;
            next++;
        }
    return true;
}

/* Fills the vocab object and the added_tokens array (in id order) from tokens and types. */
static hy_status build_vocab(struct vocab_build *b, const struct hy_gguf_kv *toks,
                             struct hy_err *err)
{
    /* Added tokens go into the vocab too when their ids are not the ones HF's next-id rule
     * would give them: found in the vocab, they keep the vocab's (the GGUF's) id. */
    bool added_in_vocab = !added_contiguous(b);
    char *key = malloc(TOK_MAX_TOKEN_BYTES * 4 + 1);
    if (!key)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status st = HY_OK;
    size_t pos = 0;
    for (size_t id = 0; id < b->n && !st; id++) {
        const char *s;
        size_t len;
        hy_gguf_arr_str_next(toks, &pos, &s, &len);
        int64_t ty = b->types[id];
        bool added = ty == TT_CONTROL || ty == TT_USER;
        if (ty == TT_UNUSED)
            continue;
        json_t *str = NULL;
        if (len > TOK_MAX_TOKEN_BYTES * 4)
            st = hy_err_set(err, HY_E_FORMAT, "tokenizer.ggml.tokens[%zu] is too long", id);
        if (st || (st = token_json(s, len, id, &str, err)))
            break;
        memcpy(key, s, len);
        key[len] = 0;
        if (!added || added_in_vocab) {
            if (json_object_get(b->vocab, key))
                st = hy_err_set(err, HY_E_FORMAT, "tokenizer.ggml.tokens[%zu] '%.40s' appears "
                                "twice", id, key);
            else if (json_object_set_new(b->vocab, key, json_integer((json_int_t)id)))
                st = hy_err_set(err, HY_E_NOMEM, "out of memory");
        }
        if (!added || st) {
            json_decref(str);
            continue;
        }
        json_t *e = json_pack("{s:I, s:o, s:b, s:b, s:b, s:b, s:b}", "id", (json_int_t)id,
                              "content", str, "single_word", 0, "lstrip", 0, "rstrip", 0,
                              "normalized", 0, "special", ty == TT_CONTROL);
        if (!e || json_array_append_new(b->added, e))
            st = hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    free(key);
    return st;
}

static hy_status read_types(const struct hy_gguf *g, size_t n, int64_t *types, struct hy_err *err)
{
    const struct hy_gguf_kv *tt = NULL;
    hy_status st = hy_gguf_get_arr(g, "tokenizer.ggml.token_type", false, -1, &tt, err);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++)
        types[i] = TT_NORMAL;
    if (!tt)
        return HY_OK;
    if (tt->arr_n != n || tt->arr_type == HY_GGUF_F32 || tt->arr_type == HY_GGUF_F64 ||
        tt->arr_type == HY_GGUF_BOOL || tt->arr_type == HY_GGUF_STRING)
        return hy_err_set(err, HY_E_FORMAT, "tokenizer.ggml.token_type must be %zu integers (one "
                          "per token)", n);
    for (size_t i = 0; i < n; i++) {
        types[i] = hy_gguf_arr_int(tt, i);
        if (types[i] < TT_NORMAL || types[i] > TT_BYTE)
            return hy_err_set(err, HY_E_FORMAT, "tokenizer.ggml.token_type[%zu] = %lld is not a "
                              "known token type (1..6)", i, (long long)types[i]);
        if (types[i] == TT_UNKNOWN || types[i] == TT_BYTE)
            types[i] = TT_NORMAL;
    }
    return HY_OK;
}

static hy_status build_merges(const struct hy_gguf *g, json_t *merges, struct hy_err *err)
{
    const struct hy_gguf_kv *mk = NULL;
    hy_status st = hy_gguf_get_arr(g, "tokenizer.ggml.merges", true, HY_GGUF_STRING, &mk, err);
    size_t pos = 0;
    for (uint64_t i = 0; !st && i < mk->arr_n; i++) {
        const char *s;
        size_t len;
        hy_gguf_arr_str_next(mk, &pos, &s, &len);
        if (memchr(s, 0, len) || hy_utf8_validate(s, len) != len)
            return hy_err_set(err, HY_E_FORMAT, "tokenizer.ggml.merges[%llu] is not valid UTF-8 "
                              "without NUL", (unsigned long long)i);
        if (json_array_append_new(merges, json_stringn(s, len)))
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    return st;
}

static hy_status build_root(const struct hy_gguf *g, json_t *root, struct hy_err *err)
{
    const char *s;
    size_t len;
    char pre[64];
    hy_status st = hy_gguf_get_str(g, "tokenizer.ggml.model", true, &s, &len, err);
    if (st)
        return st;
    if (len != 4 || memcmp(s, "gpt2", 4))
        return hy_err_set(err, HY_E_UNSUPPORTED, "tokenizer.ggml.model '%.*s' is not supported "
                          "(only gpt2, byte-level BPE)", (int)(len > 40 ? 40 : len), s);
    if ((st = hy_gguf_get_str(g, "tokenizer.ggml.pre", true, &s, &len, err)))
        return st;
    snprintf(pre, sizeof pre, "%.*s", (int)(len < sizeof pre ? len : sizeof pre - 1), s);
    json_t *norm = NULL, *pipe = NULL;
    if (len >= sizeof pre || hy_tok_gguf_pipeline(pre, &norm, &pipe))
        return hy_err_set(err, HY_E_UNSUPPORTED, "tokenizer.ggml.pre '%s' is not supported "
                          "(hunyuan, hunyuan-dense)", pre);
    json_object_set_new(root, "normalizer", norm);
    json_object_set_new(root, "pre_tokenizer", pipe);
    json_object_set_new(root, "decoder", bytelevel(true));
    const struct hy_gguf_kv *toks = NULL;
    if ((st = hy_gguf_get_arr(g, "tokenizer.ggml.tokens", true, HY_GGUF_STRING, &toks, err)))
        return st;
    if (toks->arr_n == 0 || toks->arr_n > TOK_MAX_ID)
        return hy_err_set(err, HY_E_FORMAT, "tokenizer.ggml.tokens has %llu entries (1..%d)",
                          (unsigned long long)toks->arr_n, TOK_MAX_ID);
    struct vocab_build b = {json_object(), json_array(), NULL, (size_t)toks->arr_n};
    json_t *merges = json_array();
    json_t *model = json_pack("{s:s, s:o, s:o, s:b}", "type", "BPE", "vocab", b.vocab, "merges",
                              merges, "ignore_merges", 0);
    b.types = malloc(b.n * sizeof *b.types);
    if (!model || !b.types || !b.added) {
        free(b.types);
        json_decref(model);
        json_decref(b.added);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    json_object_set_new(root, "model", model);
    json_object_set_new(root, "added_tokens", b.added);
    st = read_types(g, b.n, b.types, err);
    if (!st)
        st = build_vocab(&b, toks, err);
    if (!st)
        st = build_merges(g, merges, err);
    free(b.types);
    return st;
}

hy_status hy_tok_load_gguf(struct hy_tok **out, const struct hy_gguf *g, struct hy_err *err)
{
    *out = NULL;
    json_t *root = json_pack("{s:s}", "version", "1.0");
    if (!root)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status st = build_root(g, root, err);
    if (st) {
        hy_err_prefix(err, "%s", hy_gguf_path(g));
        json_decref(root);
        return st;
    }
    st = hy_tok_from_json(out, root, hy_gguf_path(g), err);
    json_decref(root);
    return st;
}
