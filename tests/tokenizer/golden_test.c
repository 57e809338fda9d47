/* golden_test.c TOKENIZER_JSON CORPUS_JSON GOLDEN_JSON: hy_tok_encode against HF tokenizers.
 * CORPUS_JSON is an array of strings; GOLDEN_JSON an array (or {"ids": array}) of id arrays,
 * HF's tokenizer.encode(text, add_special_tokens=False).ids, which matches special tokens
 * written in the text: we encode with allow_special = true. Every line must give identical
 * ids; the first mismatch of each line is printed with its context. When the tokenizer has
 * no normalizer, decode(ids) must also give the text back. Exit 77 (skip) when the
 * tokenizer file is absent. */
#include "core/json.h"
#include "tokenizer/tokenizer.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prints s[0..n) with control characters and non-ASCII escaped, at most max bytes. */
static void print_escaped(const char *s, size_t n, size_t max)
{
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c < 0x20 || c == 0x7F)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    if (n > max)
        fputs("...", stderr);
}

static void print_ids(const char *what, const int32_t *ids, size_t n, size_t from, size_t to)
{
    fprintf(stderr, "  %s [%zu..%zu):", what, from, to < n ? to : n);
    for (size_t i = from; i < to && i < n; i++)
        fprintf(stderr, " %d", ids[i]);
    fputc('\n', stderr);
}

static void print_token_texts(const struct hy_tok *tok, const int32_t *ids, size_t n, size_t from,
                              size_t to)
{
    for (size_t i = from; i < to && i < n; i++) {
        char buf[HY_DETOK_MAX_OUT];
        size_t m = 0;
        if (hy_tok_decode(tok, &ids[i], 1, false, buf, sizeof buf, &m, NULL) == HY_OK) {
            fprintf(stderr, "    %d = \"", ids[i]);
            print_escaped(buf, m, 80);
            fputs("\"\n", stderr);
        }
    }
}

static void report(const struct hy_tok *tok, size_t line, const char *text, size_t len,
                   const int32_t *want, size_t n_want, const int32_t *got, size_t n_got)
{
    size_t k = 0;
    while (k < n_want && k < n_got && want[k] == got[k])
        k++;
    size_t from = k > 4 ? k - 4 : 0;
    fprintf(stderr, "line %zu: first difference at id %zu (want %zu ids, got %zu): \"", line, k,
            n_want, n_got);
    print_escaped(text, len, 300);
    fputs("\"\n", stderr);
    print_ids("want", want, n_want, from, k + 6);
    print_token_texts(tok, want, n_want, k, k + 3);
    print_ids("got ", got, n_got, from, k + 6);
    print_token_texts(tok, got, n_got, k, k + 3);
}

static const json_t *golden_lines(const json_t *g)
{
    return json_is_object(g) ? json_object_get(g, "ids") : g;
}

static bool has_normalizer(const char *path)
{
    json_t *j = NULL;
    if (hy_json_load_file(&j, path, HY_TOK_MAX_FILE, NULL))
        return true;
    const json_t *n = json_object_get(j, "normalizer");
    bool has = n && !json_is_null(n);
    json_decref(j);
    return has;
}

static void check_line(const struct hy_tok *tok, size_t i, const json_t *text, const json_t *gold,
                       bool check_decode, int32_t *got, size_t cap, char *dec, size_t dec_cap)
{
    const char *s = json_string_value(text);
    size_t len = json_string_length(text), n_want = json_array_size(gold), n_got = 0;
    int32_t *want = malloc((n_want + 1) * sizeof *want);
    HY_ASSERT(want);
    for (size_t k = 0; k < n_want; k++)
        want[k] = (int32_t)json_integer_value(json_array_get(gold, k));
    struct hy_err err = {{0}};
    hy_status st = hy_tok_encode(tok, s, len, true, got, cap, &n_got, &err);
    CHECKF(st == HY_OK, "line %zu: encode failed: %s", i, err.msg);
    bool same = st == HY_OK && n_got == n_want && !memcmp(got, want, n_got * sizeof *got);
    CHECKF(same, "line %zu: ids differ", i);
    if (st == HY_OK && !same)
        report(tok, i, s, len, want, n_want, got, n_got);
    size_t m = 0;
    if (same && check_decode) {
        st = hy_tok_decode(tok, want, n_want, false, dec, dec_cap, &m, &err);
        CHECKF(st == HY_OK && m == len && !memcmp(dec, s, len), "line %zu: decode(ids) != text", i);
    }
    free(want);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: golden_test TOKENIZER_JSON CORPUS_JSON GOLDEN_JSON\n");
        return 2;
    }
    if (access(argv[1], R_OK) != 0) {
        fprintf(stderr, "skip: %s is absent\n", argv[1]);
        return 77;
    }
    struct hy_err err = {{0}};
    struct hy_tok *tok = NULL;
    json_t *corpus = NULL, *golden = NULL;
    if (hy_tok_load(&tok, argv[1], &err) || hy_json_load_file(&corpus, argv[2], 64u << 20, &err) ||
        hy_json_load_file(&golden, argv[3], 256u << 20, &err)) {
        fprintf(stderr, "golden_test: %s\n", err.msg);
        return 1;
    }
    const json_t *gl = golden_lines(golden);
    CHECKF(json_is_array(corpus) && json_is_array(gl) &&
               json_array_size(corpus) == json_array_size(gl),
           "corpus (%zu lines) and golden (%zu lines) must be arrays of equal length",
           json_array_size(corpus), json_array_size(gl));
    bool check_decode = !has_normalizer(argv[1]);
    size_t cap = 1 << 20;
    int32_t *got = malloc(cap * sizeof *got);
    char *dec = malloc(cap);
    HY_ASSERT(got && dec);
    for (size_t i = 0; i < json_array_size(corpus) && i < json_array_size(gl); i++)
        check_line(tok, i, json_array_get(corpus, i), json_array_get(gl, i), check_decode, got, cap,
                   dec, cap);
    fprintf(stderr, "%s: %zu lines%s\n", argv[1], json_array_size(corpus),
            check_decode ? ", decode checked" : "");
    free(got);
    free(dec);
    json_decref(corpus);
    json_decref(golden);
    hy_tok_destroy(tok);
    return test_result();
}
