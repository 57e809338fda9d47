/* extra_test.c EXTRA_JSON CORPUS_JSON NAME TOKENIZER_JSON: the per-tokenizer extras that
 * HF tokenizers produced (tests/tokenizer/golden/extra.json, see README.md there):
 *   vocab_size and added_tokens   hy_tok_vocab_size, hy_tok_find, hy_tok_is_special
 *   literal_lines                 corpus lines encoded with allow_special = false
 *   special_cases                 both modes on chosen strings
 *   decode                        hy_tok_decode with and without skip_special, and the
 *                                 streaming detokenizer giving the same text
 *   roundtrip_differs             exactly these corpus lines do not survive decode(encode())
 * Exit 77 (skip) when the tokenizer file is absent. */
#include "core/json.h"
#include "tokenizer/tokenizer.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAP (1 << 20)

static int32_t ids_buf[CAP];
static int32_t want_buf[CAP];
static char text_buf[4 * CAP];

static size_t to_ids(const json_t *a, int32_t *out)
{
    size_t n = json_array_size(a);
    for (size_t i = 0; i < n && i < CAP; i++)
        out[i] = (int32_t)json_integer_value(json_array_get(a, i));
    return n;
}

static bool encode_is(const struct hy_tok *tok, const char *s, size_t len, bool special,
                      const json_t *want)
{
    size_t n = 0, nw = to_ids(want, want_buf);
    struct hy_err err = {{0}};
    if (hy_tok_encode(tok, s, len, special, ids_buf, CAP, &n, &err)) {
        fprintf(stderr, "encode failed: %s\n", err.msg);
        return false;
    }
    return n == nw && !memcmp(ids_buf, want_buf, n * sizeof *ids_buf);
}

static void check_vocab(const struct hy_tok *tok, const json_t *x)
{
    CHECKF(hy_tok_vocab_size(tok) == json_integer_value(json_object_get(x, "vocab_size")),
           "vocab size %d", hy_tok_vocab_size(tok));
    const json_t *added = json_object_get(x, "added_tokens");
    for (size_t i = 0; i < json_array_size(added); i++) {
        const json_t *a = json_array_get(added, i);
        const char *content = json_string_value(json_object_get(a, "content"));
        int32_t id = (int32_t)json_integer_value(json_object_get(a, "id"));
        CHECKF(hy_tok_find(tok, content) == id, "find(%s)", content);
        CHECKF(hy_tok_is_special(tok, id) == json_is_true(json_object_get(a, "special")),
               "is_special(%d)", id);
    }
    CHECK(hy_tok_find(tok, "no such token, surely") == -1);
}

static void check_literal_lines(const struct hy_tok *tok, const json_t *x, const json_t *corpus)
{
    const char *key;
    json_t *ids;
    json_object_foreach((json_t *)json_object_get(x, "literal_lines"), key, ids)
    {
        const json_t *line = json_array_get(corpus, (size_t)atoi(key));
        CHECKF(encode_is(tok, json_string_value(line), json_string_length(line), false, ids),
               "literal line %s", key);
    }
}

static void check_special_cases(const struct hy_tok *tok, const json_t *x)
{
    const json_t *cases = json_object_get(x, "special_cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i), *t = json_object_get(c, "text");
        const char *s = json_string_value(t);
        size_t len = json_string_length(t);
        CHECKF(encode_is(tok, s, len, true, json_object_get(c, "ids_allow_special")),
               "special case %zu allowed: %s", i, s);
        CHECKF(encode_is(tok, s, len, false, json_object_get(c, "ids_literal")),
               "special case %zu literal: %s", i, s);
    }
}

/* The detokenizer fed one id at a time gives what decode gives. */
static bool detok_is(const struct hy_tok *tok, const int32_t *ids, size_t n, bool skip,
                     const char *want, size_t want_len)
{
    struct hy_detok d;
    hy_detok_init(&d, tok, skip);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int r = hy_detok_push(&d, ids[i], text_buf + o, HY_DETOK_MAX_OUT);
        if (r < 0)
            return false;
        o += (size_t)r;
    }
    int r = hy_detok_flush(&d, text_buf + o, HY_DETOK_MAX_OUT);
    o += r > 0 ? (size_t)r : 0;
    return r >= 0 && o == want_len && !memcmp(text_buf, want, o);
}

static void check_decode(const struct hy_tok *tok, const json_t *x)
{
    const json_t *cases = json_object_get(x, "decode");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        size_t n = to_ids(json_object_get(c, "ids"), want_buf);
        for (int skip = 0; skip < 2; skip++) {
            const json_t *w = json_object_get(c, skip ? "text_skip_special" : "text");
            size_t m = 0;
            struct hy_err err = {{0}};
            hy_status st =
                hy_tok_decode(tok, want_buf, n, skip, text_buf, sizeof text_buf, &m, &err);
            CHECKF(st == HY_OK && m == json_string_length(w) &&
                       !memcmp(text_buf, json_string_value(w), m),
                   "decode case %zu (skip_special %d): %s", i, skip, err.msg);
            CHECKF(detok_is(tok, want_buf, n, skip, json_string_value(w), json_string_length(w)),
                   "detokenizer case %zu (skip_special %d)", i, skip);
        }
    }
}

static void check_roundtrip(const struct hy_tok *tok, const json_t *x, const json_t *corpus)
{
    const json_t *differs = json_object_get(x, "roundtrip_differs");
    for (size_t i = 0; i < json_array_size(corpus); i++) {
        bool listed = false;
        for (size_t k = 0; k < json_array_size(differs); k++)
            listed |= (size_t)json_integer_value(json_array_get(differs, k)) == i;
        const json_t *line = json_array_get(corpus, i);
        size_t len = json_string_length(line), n = 0, m = 0;
        hy_status st =
            hy_tok_encode(tok, json_string_value(line), len, true, ids_buf, CAP, &n, NULL);
        if (!st)
            st = hy_tok_decode(tok, ids_buf, n, false, text_buf, sizeof text_buf, &m, NULL);
        bool same = !st && m == len && !memcmp(text_buf, json_string_value(line), len);
        CHECKF(st == HY_OK && same != listed, "round trip of line %zu: %s", i,
               listed ? "expected to differ" : "differs");
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: extra_test EXTRA_JSON CORPUS_JSON NAME TOKENIZER_JSON\n");
        return 2;
    }
    if (access(argv[4], R_OK) != 0) {
        fprintf(stderr, "skip: %s is absent\n", argv[4]);
        return 77;
    }
    struct hy_err err = {{0}};
    json_t *extra = NULL, *corpus = NULL;
    struct hy_tok *tok = NULL;
    if (hy_json_load_file(&extra, argv[1], 64u << 20, &err) ||
        hy_json_load_file(&corpus, argv[2], 64u << 20, &err) || hy_tok_load(&tok, argv[4], &err)) {
        fprintf(stderr, "extra_test: %s\n", err.msg);
        return 1;
    }
    const json_t *x = json_object_get(json_object_get(extra, "tokenizers"), argv[3]);
    CHECKF(json_is_object(x), "%s: no entry for %s", argv[1], argv[3]);
    if (x) {
        check_vocab(tok, x);
        check_literal_lines(tok, x, corpus);
        check_special_cases(tok, x);
        check_decode(tok, x);
        check_roundtrip(tok, x, corpus);
    }
    hy_tok_destroy(tok);
    json_decref(extra);
    json_decref(corpus);
    return test_result();
}
