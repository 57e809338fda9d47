/* tok_test_util.h: helpers for the tokenizer unit tests. They build small tokenizer.json
 * files from parts, write them to a temporary folder (removed at the end, kept when
 * HYMT_TOK_KEEP is set), load them and compare encodings with expected id lists.
 * With HYMT_TOK_ORACLE set, every expectation checked with special tokens allowed is also
 * printed to stdout as "ORACLE <file> <text as JSON> <ids>", one per line, so that
 * tests/tokenizer/oracle.js can confirm them with HF tokenizers (npm package "tokenizers"). */
#ifndef HY_TOKENIZER_TOK_TEST_UTIL_H
#define HY_TOKENIZER_TOK_TEST_UTIL_H

#include "test.h"
#include "tokenizer/tokenizer.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a growable string ---- */
struct tt_str {
    char *s;
    size_t n, cap;
};

static inline void tt_add(struct tt_str *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        HY_ASSERT(b->s);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

__attribute__((format(printf, 2, 3))) static inline void tt_addf(struct tt_str *b, const char *fmt,
                                                                 ...)
{
    char tmp[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    HY_ASSERT(n >= 0 && (size_t)n < sizeof tmp);
    tt_add(b, tmp, (size_t)n);
}

/* Appends s as a JSON string literal. */
static inline void tt_add_json_str(struct tt_str *b, const char *s, size_t n)
{
    tt_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            tt_addf(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7F)
            tt_addf(b, "\\u%04x", c);
        else
            tt_add(b, (const char *)&c, 1);
    }
    tt_add(b, "\"", 1);
}

/* ---- byte-level spelling ---- */

/* GPT-2 bytes_to_unicode, UTF-8 encoded into out (1 or 2 bytes); returns the length. */
static inline int tt_byte_char(int b, char *out)
{
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    int cp = b;
    if (!printable) {
        cp = 256;
        for (int k = 0; k < b; k++)
            if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE))
                cp++;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* A vocab object: the 256 byte-level chars with id = byte value, then `extra` (NULL
 * terminated, spelled in byte-level chars) from id 256 on. */
static inline void tt_byte_vocab(struct tt_str *b, const char *const *extra)
{
    tt_add(b, "{", 1);
    for (int i = 0; i < 256; i++) {
        char c[2];
        int n = tt_byte_char(i, c);
        tt_add(b, i ? ", " : "", i ? 2 : 0);
        tt_add_json_str(b, c, (size_t)n);
        tt_addf(b, ": %d", i);
    }
    for (int i = 0; extra && extra[i]; i++) {
        tt_add(b, ", ", 2);
        tt_add_json_str(b, extra[i], strlen(extra[i]));
        tt_addf(b, ": %d", 256 + i);
    }
    tt_add(b, "}", 1);
}

/* Merges as a JSON array of "a b" strings (pairs = false) or ["a","b"] pairs. */
static inline void tt_merges(struct tt_str *b, const char *const *merges, bool pairs)
{
    tt_add(b, "[", 1);
    for (int i = 0; merges && merges[i]; i++) {
        tt_add(b, i ? ", " : "", i ? 2 : 0);
        if (!pairs) {
            tt_add_json_str(b, merges[i], strlen(merges[i]));
            continue;
        }
        const char *sp = strchr(merges[i], ' ');
        HY_ASSERT(sp);
        tt_add(b, "[", 1);
        tt_add_json_str(b, merges[i], (size_t)(sp - merges[i]));
        tt_add(b, ", ", 2);
        tt_add_json_str(b, sp + 1, strlen(sp + 1));
        tt_add(b, "]", 1);
    }
    tt_add(b, "]", 1);
}

/* A whole tokenizer.json; NULL parts become null. model_opts, when given, is the model's
 * fields before vocab (e.g. "\"ignore_merges\": true, "); NULL gives HF's defaults. */
static inline char *tt_tokenizer(const char *normalizer, const char *pre_tokenizer,
                                 const char *added, const char *model_opts, const char *vocab,
                                 const char *merges)
{
    struct tt_str b = {0};
    tt_addf(&b, "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n");
    tt_add(&b, "\"added_tokens\": ", 16);
    tt_add(&b, added ? added : "[]", strlen(added ? added : "[]"));
    tt_add(&b, ",\n\"normalizer\": ", 16);
    tt_add(&b, normalizer ? normalizer : "null", strlen(normalizer ? normalizer : "null"));
    tt_add(&b, ",\n\"pre_tokenizer\": ", 19);
    tt_add(&b, pre_tokenizer ? pre_tokenizer : "null",
           strlen(pre_tokenizer ? pre_tokenizer : "null"));
    tt_addf(&b, ",\n\"post_processor\": null,\n\"decoder\": {\"type\": \"ByteLevel\", "
                "\"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n");
    tt_addf(&b, "\"model\": {\"type\": \"BPE\", ");
    if (!model_opts)
        model_opts = "\"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": "
                     "null, \"end_of_word_suffix\": null, \"fuse_unk\": false, "
                     "\"byte_fallback\": false, ";
    tt_add(&b, model_opts, strlen(model_opts));
    tt_add(&b, "\"vocab\": ", 9);
    tt_add(&b, vocab, strlen(vocab));
    tt_add(&b, ",\n\"merges\": ", 12);
    tt_add(&b, merges, strlen(merges));
    tt_add(&b, "}}\n", 3);
    return b.s;
}

/* ---- files ---- */
struct tt {
    char dir[64];
    int n_files;
};

static inline void tt_init(struct tt *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/hymt-tok-XXXXXX");
    HY_ASSERT(mkdtemp(t->dir));
    t->n_files = 0;
}

static inline void tt_path(const struct tt *t, int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/t%03d.json", t->dir, i);
}

static inline void tt_cleanup(struct tt *t)
{
    if (getenv("HYMT_TOK_KEEP") || getenv("HYMT_TOK_ORACLE"))
        return;
    char p[128];
    for (int i = 0; i < t->n_files; i++) {
        tt_path(t, i, p, sizeof p);
        unlink(p);
    }
    rmdir(t->dir);
}

/* A loaded tokenizer and the file it came from. */
struct tt_tok {
    struct hy_tok *tok;
    char path[128];
};

/* Writes json to a new file and loads it; st/err receive the result (tok NULL on error). */
static inline struct tt_tok tt_try(struct tt *t, const char *json, hy_status *st,
                                   struct hy_err *err)
{
    struct tt_tok r = {0};
    tt_path(t, t->n_files++, r.path, sizeof r.path);
    FILE *f = fopen(r.path, "wb");
    HY_ASSERT(f && fwrite(json, 1, strlen(json), f) == strlen(json) && fclose(f) == 0);
    *st = hy_tok_load(&r.tok, r.path, err);
    return r;
}

static inline struct tt_tok tt_load(struct tt *t, const char *json)
{
    struct hy_err err = {{0}};
    hy_status st;
    struct tt_tok r = tt_try(t, json, &st, &err);
    CHECKF(st == HY_OK, "load %s: %s", r.path, err.msg);
    return r;
}

/* Encodes text and compares the ids with want ("1 2 3"). */
static inline void tt_expect_at(const struct tt_tok *k, const char *text, size_t len, bool special,
                                const char *want, const char *file, int line)
{
    if (!k->tok) {
        CHECKF(k->tok, "%s:%d: no tokenizer", file, line);
        return;
    }
    int32_t ids[4096];
    size_t n = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_tok_encode(k->tok, text, len, special, ids, 4096, &n, &err);
    struct tt_str got = {0};
    tt_add(&got, "", 0);
    for (size_t i = 0; st == HY_OK && i < n; i++)
        tt_addf(&got, i ? " %d" : "%d", ids[i]);
    CHECKF(st == HY_OK && !strcmp(got.s, want), "%s:%d: \"%s\" (special %d): got [%s] want [%s] %s",
           file, line, text, special, got.s, want, err.msg);
    if (special && getenv("HYMT_TOK_ORACLE")) {
        struct tt_str j = {0};
        tt_add_json_str(&j, text, len);
        printf("ORACLE\t%s\t%s\t%s\n", k->path, j.s, want);
        free(j.s);
    }
    free(got.s);
}
#define tt_expect(k, text, special, want)                                                          \
    tt_expect_at(k, text, strlen(text), special, want, __FILE__, __LINE__)

/* Decodes ids (want is the exact text). */
static inline void tt_decode_at(const struct tt_tok *k, const int32_t *ids, size_t n, bool skip,
                                const char *want, size_t want_len, const char *file, int line)
{
    char out[4096];
    size_t m = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_tok_decode(k->tok, ids, n, skip, out, sizeof out, &m, &err);
    CHECKF(st == HY_OK && m == want_len && !memcmp(out, want, m), "%s:%d: decode: %s", file, line,
           err.msg);
}
#define tt_decode(k, ids, skip, want)                                                              \
    tt_decode_at(k, ids, sizeof ids / sizeof ids[0], skip, want, strlen(want), __FILE__, __LINE__)

#endif
