/* load.c: tokenizer.json -> struct hy_tok: the top level and the BPE model section.
 * Top-level rules follow HF's deserializer (tokenizer/serialization.rs): "version" must be
 * "1.0"; unknown keys are ignored; post_processor is accepted and ignored (it only adds
 * special tokens when encoding with add_special_tokens, which hy_tok_encode never does);
 * truncation must be null and padding null or BatchLongest without pad_to_multiple_of (the
 * others change the ids of a single encode). The model is BPE (models/bpe/serialization.rs):
 * vocab object, merges as "a b" strings ("#version" lines skipped, not ranked) or ["a","b"]
 * pairs, every merge's parts and concatenation in the vocab (else a load error, as in HF). */
#include "core/json.h"
#include "core/log.h"
#include "formats/gguf.h"
#include "tokenizer/tok_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static hy_status opt_bool(const json_t *m, const char *key, bool *out, struct hy_err *err)
{
    hy_status st = hy_json_get_bool(m, key, false, out, err);
    if (st)
        hy_err_prefix(err, "model");
    return st;
}

/* continuing_subword_prefix / end_of_word_suffix: null and "" change nothing. */
static hy_status empty_or_null(const json_t *m, const char *key, struct hy_err *err)
{
    const json_t *v = json_object_get(m, key);
    if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
        return HY_OK;
    if (!json_is_string(v))
        return hy_err_set(err, HY_E_FORMAT, "model.%s: expected a string, got %s", key,
                          hy_json_type_name(v));
    return hy_err_set(err, HY_E_UNSUPPORTED,
                      "model.%s \"%s\" is not supported (only null or "
                      "\"\")",
                      key, json_string_value(v));
}

static hy_status model_options(struct hy_tok *t, const json_t *m, struct hy_err *err)
{
    const json_t *d = json_object_get(m, "dropout");
    if (d && !json_is_null(d)) {
        if (!json_is_number(d))
            return hy_err_set(err, HY_E_FORMAT, "model.dropout: expected a number");
        if (json_number_value(d) != 0.0)
            return hy_err_set(err, HY_E_UNSUPPORTED,
                              "model.dropout %g is not supported (only null or 0)",
                              json_number_value(d));
    }
    bool byte_fallback = false;
    hy_status st = empty_or_null(m, "continuing_subword_prefix", err);
    if (!st)
        st = empty_or_null(m, "end_of_word_suffix", err);
    if (!st)
        st = opt_bool(m, "fuse_unk", &t->fuse_unk, err);
    if (!st)
        st = opt_bool(m, "ignore_merges", &t->ignore_merges, err);
    if (!st)
        st = opt_bool(m, "byte_fallback", &byte_fallback, err);
    if (!st && byte_fallback)
        st = hy_err_set(err, HY_E_UNSUPPORTED, "model.byte_fallback true is not supported");
    return st;
}

static hy_status load_vocab(struct hy_tok *t, const json_t *v, struct hy_err *err)
{
    if (!json_is_object(v))
        return hy_err_set(err, HY_E_FORMAT, "model.vocab: expected an object, got %s",
                          hy_json_type_name(v));
    if (hy_tok_strmap_init(&t->vocab, (uint32_t)json_object_size(v)))
        return hy_err_set(err, HY_E_NOMEM, "model.vocab: out of memory");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) >= TOK_MAX_ID)
            return hy_err_set(err, HY_E_FORMAT,
                              "model.vocab[\"%.40s\"]: id must be an integer in [0, %d)", key,
                              TOK_MAX_ID);
        hy_status st =
            hy_tok_strmap_put(&t->vocab, key, strlen(key), (int32_t)json_integer_value(val), NULL);
        if (st)
            return hy_err_set(err, st, "model.vocab: out of memory");
    }
    return HY_OK;
}

/* The two halves of merges[i]; false when the entry is malformed. "#version" lines: *skip. */
static bool merge_parts(const json_t *e, bool legacy, const char **a, size_t *na, const char **b,
                        size_t *nb, bool *skip)
{
    *skip = false;
    if (legacy) {
        if (!json_is_string(e))
            return false;
        const char *s = json_string_value(e);
        if (!strncmp(s, "#version", 8)) {
            *skip = true;
            return true;
        }
        const char *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' '))
            return false; /* HF: line.split(' ') must give exactly two parts */
        *a = s;
        *na = (size_t)(sp - s);
        *b = sp + 1;
        *nb = strlen(sp + 1);
        return true;
    }
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(json_array_get(e, 0)) ||
        !json_is_string(json_array_get(e, 1)))
        return false;
    *a = json_string_value(json_array_get(e, 0));
    *na = json_string_length(json_array_get(e, 0));
    *b = json_string_value(json_array_get(e, 1));
    *nb = json_string_length(json_array_get(e, 1));
    return true;
}

static hy_status merge_ids(const struct hy_tok *t, size_t i, const char *a, size_t na,
                           const char *b, size_t nb, char **buf, size_t *cap, int32_t ids[3],
                           struct hy_err *err)
{
    /* +1: the buffer exists even for two empty halves (memcpy into NULL is undefined) */
    if (na + nb + 1 > *cap) {
        char *p = realloc(*buf, (na + nb + 1) * 2);
        if (!p)
            return hy_err_set(err, HY_E_NOMEM, "model.merges: out of memory");
        *buf = p;
        *cap = (na + nb + 1) * 2;
    }
    memcpy(*buf, a, na);
    memcpy(*buf + na, b, nb);
    const char *what[3] = {a, b, *buf};
    size_t len[3] = {na, nb, na + nb};
    for (int k = 0; k < 3; k++)
        if ((ids[k] = hy_tok_strmap_get(&t->vocab, what[k], len[k])) < 0)
            return hy_err_set(err, HY_E_FORMAT, "model.merges[%zu]: \"%.*s\" is not in the vocab",
                              i, (int)(len[k] > 60 ? 60 : len[k]), what[k]);
    return HY_OK;
}

static hy_status load_merges(struct hy_tok *t, const json_t *m, struct hy_err *err)
{
    if (!json_is_array(m))
        return hy_err_set(err, HY_E_FORMAT, "model.merges: expected an array, got %s",
                          hy_json_type_name(m));
    size_t n = json_array_size(m);
    if (n >= (1u << 30) || hy_tok_pairmap_init(&t->merges, (uint32_t)n))
        return hy_err_set(err, HY_E_NOMEM, "model.merges: out of memory");
    bool legacy = n > 0 && json_is_string(json_array_get(m, 0));
    char *buf = NULL;
    size_t cap = 0;
    uint32_t rank = 0;
    hy_status st = HY_OK;
    for (size_t i = 0; i < n && !st; i++) {
        const char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        bool skip;
        int32_t ids[3];
        if (!merge_parts(json_array_get(m, i), legacy, &a, &na, &b, &nb, &skip))
            st = hy_err_set(err, HY_E_FORMAT,
                            legacy ? "model.merges[%zu]: expected \"a b\" (one space)"
                                   : "model.merges[%zu]: expected [\"a\", \"b\"]",
                            i);
        else if (!skip && !(st = merge_ids(t, i, a, na, b, nb, &buf, &cap, ids, err)))
            hy_tok_pairmap_put(&t->merges, ids[0], ids[1], rank++, ids[2]);
    }
    free(buf);
    return st;
}

static hy_status load_model(struct hy_tok *t, const json_t *m, struct hy_err *err)
{
    if (!json_is_object(m))
        return hy_err_set(err, HY_E_FORMAT, "model: expected an object, got %s",
                          hy_json_type_name(m));
    const json_t *ty = json_object_get(m, "type");
    if (ty && !(json_is_string(ty) && !strcmp(json_string_value(ty), "BPE")))
        return hy_err_set(err, HY_E_UNSUPPORTED, "model type \"%s\" is not supported (only BPE)",
                          json_is_string(ty) ? json_string_value(ty) : "?");
    const json_t *vocab = json_object_get(m, "vocab"), *merges = json_object_get(m, "merges");
    if (!vocab || !merges)
        return hy_err_set(err, HY_E_FORMAT, "model: missing vocab or merges");
    hy_status st = model_options(t, m, err);
    if (!st)
        st = load_vocab(t, vocab, err);
    if (!st)
        st = load_merges(t, merges, err);
    if (st)
        return st;
    t->unk_id = -1;
    const json_t *unk = json_object_get(m, "unk_token");
    if (unk && !json_is_null(unk)) {
        if (!json_is_string(unk))
            return hy_err_set(err, HY_E_FORMAT, "model.unk_token: expected a string");
        t->unk_id = hy_tok_strmap_get(&t->vocab, json_string_value(unk), json_string_length(unk));
        if (t->unk_id < 0)
            return hy_err_set(err, HY_E_FORMAT, "model.unk_token \"%s\" is not in the vocab",
                              json_string_value(unk));
    }
    return HY_OK;
}

static hy_status check_top(const json_t *root, struct hy_err *err)
{
    if (!json_is_object(root))
        return hy_err_set(err, HY_E_FORMAT, "expected a JSON object, got %s",
                          hy_json_type_name(root));
    const json_t *v = json_object_get(root, "version");
    if (v && !(json_is_string(v) && !strcmp(json_string_value(v), "1.0")))
        return hy_err_set(err, HY_E_UNSUPPORTED, "unknown tokenizer version (expected \"1.0\")");
    const json_t *tr = json_object_get(root, "truncation");
    if (tr && !json_is_null(tr))
        return hy_err_set(err, HY_E_UNSUPPORTED, "truncation is not supported (must be null)");
    const json_t *pad = json_object_get(root, "padding");
    if (pad && !json_is_null(pad)) {
        const json_t *s = json_object_get(pad, "strategy");
        const json_t *mult = json_object_get(pad, "pad_to_multiple_of");
        if (!(json_is_string(s) && !strcmp(json_string_value(s), "BatchLongest")) ||
            (mult && !json_is_null(mult)))
            return hy_err_set(err, HY_E_UNSUPPORTED,
                              "padding is not supported (only null, or BatchLongest without "
                              "pad_to_multiple_of)");
    }
    return HY_OK;
}

/* Direct ids for single chars below U+0800 (all byte-level chars are). */
static void char_table(struct hy_tok *t)
{
    for (uint32_t cp = 0; cp < TOK_DIRECT_CHARS; cp++) {
        char u[2];
        size_t n = 1;
        if (cp < 0x80) {
            u[0] = (char)cp;
        } else {
            u[0] = (char)(0xC0 | (cp >> 6));
            u[1] = (char)(0x80 | (cp & 0x3F));
            n = 2;
        }
        t->char_id[cp] = hy_tok_strmap_get(&t->vocab, u, n);
    }
}

static hy_status load_root(struct hy_tok *t, const json_t *root, struct hy_err *err)
{
    hy_status st = check_top(root, err);
    if (!st)
        st = load_model(t, json_object_get(root, "model"), err);
    if (!st)
        st = hy_tok_load_normalizer(t, json_object_get(root, "normalizer"), err);
    if (!st)
        st = hy_tok_load_added(t, json_object_get(root, "added_tokens"), err);
    if (!st)
        st = hy_tok_load_pre_tokenizer(t, json_object_get(root, "pre_tokenizer"), err);
    if (!st)
        st = hy_tok_load_decoder(json_object_get(root, "decoder"), err);
    if (st)
        return st;
    hy_tok_byte_level_tables(t);
    char_table(t);
    return hy_tok_build_decode(t, err);
}

hy_status hy_tok_from_json(struct hy_tok **out, const json_t *root, const char *what,
                           struct hy_err *err)
{
    *out = NULL;
    struct hy_tok *t = calloc(1, sizeof *t);
    if (!t)
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", what);
    hy_status st = load_root(t, root, err);
    if (st) {
        hy_err_prefix(err, "%s", what);
        hy_tok_destroy(t);
        return st;
    }
    HY_LOGD("tokenizer %s: %d ids, %u merges, %d added tokens, %d pre-tokenizer stages%s", what,
            t->n_ids, t->merges.n, t->n_added, t->n_stage, t->nfc ? ", NFC" : "");
    *out = t;
    return HY_OK;
}

hy_status hy_tok_load(struct hy_tok **out, const char *path, struct hy_err *err)
{
    *out = NULL;
    char file[4096];
    struct stat sb;
    bool dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!dir && hy_gguf_is_gguf(path)) {
        struct hy_gguf *g = NULL;
        hy_status st = hy_gguf_open(&g, path, err);
        if (!st)
            st = hy_tok_load_gguf(out, g, err);
        hy_gguf_close(g);
        return st;
    }
    int n = dir ? snprintf(file, sizeof file, "%s/tokenizer.json", path)
                : snprintf(file, sizeof file, "%s", path);
    if (n < 0 || (size_t)n >= sizeof file)
        return hy_err_set(err, HY_E_INVAL, "tokenizer path is too long");
    json_t *root = NULL;
    hy_status st = hy_json_load_file(&root, file, HY_TOK_MAX_FILE, err);
    if (st)
        return st;
    st = hy_tok_from_json(out, root, file, err);
    json_decref(root);
    return st;
}

void hy_tok_destroy(struct hy_tok *t)
{
    if (!t)
        return;
    hy_tok_strmap_deinit(&t->vocab);
    hy_tok_pairmap_deinit(&t->merges);
    free(t->added);
    free(t->added_pool);
    hy_tok_strmap_deinit(&t->added_map);
    hy_tok_trie_deinit(&t->trie_raw);
    hy_tok_trie_deinit(&t->trie_norm);
    hy_tok_regex_free(t->word_re);
    for (int i = 0; i < t->n_stage; i++)
        if (t->stage[i].kind == TOK_STAGE_SPLIT)
            hy_tok_regex_free(t->stage[i].re);
    hy_tok_regex_free(t->bytelevel_re);
    free(t->dec_off);
    free(t->dec_len);
    free(t->id_flags);
    free(t->dec_pool);
    free(t);
}

int32_t hy_tok_vocab_size(const struct hy_tok *t)
{
    return t->n_ids;
}

int32_t hy_tok_find(const struct hy_tok *t, const char *s)
{
    size_t n = strlen(s);
    int32_t i = hy_tok_strmap_get(&t->added_map, s, n);
    return i >= 0 ? t->added[i].id : hy_tok_strmap_get(&t->vocab, s, n);
}

bool hy_tok_is_special(const struct hy_tok *t, int32_t id)
{
    return id >= 0 && id < t->n_ids && (t->id_flags[id] & TOK_ID_SPECIAL);
}
