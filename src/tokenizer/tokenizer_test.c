/* tokenizer_test.c: the BPE model, the ByteLevel pre-tokenizer, the normalizer and decoding
 * on hand-made tokenizer.json files. Expected ids are derived from HF tokenizers' source
 * (see tok_impl.h) and were confirmed with HF tokenizers 0.23.2 (tests/tokenizer/oracle.js).
 *
 * The byte-level vocab gives every byte its own value as id; the extra tokens and merges
 * (ranks in list order) are below. */
#include "tokenizer/tok_test_util.h"

static const char *const extra[] = {
    "Ġt", "he", "Ġthe", "ll", "llo", "oĠ", "Ġw",  "or",
    "ld", "aa", "Ġh",   "ĠĠ", "Ã©",  "'s", "wor", NULL,
};
/* ids:  256   257   258    259   260    261   262   263   264   265   266   267   268   269
 *       270 */
static const char *const merges[] = {
    "Ġ t", "h e", "Ġt he", "l l", "ll o", "o Ġ", "Ġ w", "o r",
    "l d", "a a", "Ġ h",   "Ġ Ġ", "Ã ©",  "' s", NULL,
};

#define BL_REGEX "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true}"
#define BL_PLAIN                                                                                   \
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, "             \
    "\"use_regex\": false}"
#define BL_PREFIX                                                                                  \
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, "               \
    "\"use_regex\": true}"
#define NFC "{\"type\": \"NFC\"}"
#define IGNORE_MERGES                                                                              \
    "\"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\", "                \
    "\"end_of_word_suffix\": \"\", \"fuse_unk\": false, \"byte_fallback\": false, "                \
    "\"ignore_merges\": true, "

static struct tt_tok make(struct tt *t, const char *norm, const char *pre, const char *opts,
                          bool pair_merges)
{
    struct tt_str v = {0}, m = {0};
    tt_byte_vocab(&v, extra);
    tt_merges(&m, merges, pair_merges);
    char *json = tt_tokenizer(norm, pre, NULL, opts, v.s, m.s);
    struct tt_tok k = tt_load(t, json);
    free(json);
    free(v.s);
    free(m.s);
    return k;
}

/* The GPT-2 regex pieces and merges by rank, identical for both merge encodings. */
static void check_byte_level_regex(struct tt *t)
{
    for (int pairs = 0; pairs < 2; pairs++) {
        struct tt_tok k = make(t, NULL, BL_REGEX, NULL, pairs);
        tt_expect(&k, "hello world", true, "257 260 262 263 264");
        tt_expect(&k, "go world", true, "103 111 262 263 264"); /* "o Ġ" never crosses pieces */
        tt_expect(&k, "the", true, "116 257");
        tt_expect(&k, " the", true, "258");
        tt_expect(&k, "aaa", true, "265 97"); /* equal ranks: leftmost first */
        tt_expect(&k, "aaaa", true, "265 265");
        tt_expect(&k, "it's", true, "105 116 269");
        tt_expect(&k, "café", true, "99 97 102 268");
        tt_expect(&k, "  x", true, "32 32 120"); /* \s+(?!\S) keeps one space */
        tt_expect(&k, "hello\n\nworld", true, "257 260 10 10 119 263 264");
        tt_expect(&k, "", true, "");
        tt_expect(&k, "wor", true, "119 263");
        hy_tok_destroy(k.tok);
    }
}

static void check_byte_level_options(struct tt *t)
{
    struct tt_tok k = make(t, NULL, BL_PLAIN, NULL, false);
    tt_expect(&k, "go world", true, "103 261 119 263 264"); /* one piece: "o Ġ" merges */
    tt_expect(&k, "  x", true, "267 120");
    tt_expect(&k, "hello", true, "257 260");
    hy_tok_destroy(k.tok);

    k = make(t, NULL, BL_PREFIX, NULL, false);
    tt_expect(&k, "hi", true, "266 105");
    tt_expect(&k, " hi", true, "266 105"); /* already starts with a space */
    tt_expect(&k, "hello world", true, "32 257 260 262 263 264");
    hy_tok_destroy(k.tok);

    /* nested Sequences flatten to the same stages */
    k = make(t, NULL,
             "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Sequence\", "
             "\"pretokenizers\": [" BL_REGEX "]}]}",
             NULL, false);
    tt_expect(&k, "hello world", true, "257 260 262 263 264");
    hy_tok_destroy(k.tok);
}

static void check_model_options(struct tt *t)
{
    /* ignore_merges: a piece spelled like a vocab entry is that entry */
    struct tt_tok k = make(t, NULL, BL_REGEX, IGNORE_MERGES, false);
    tt_expect(&k, "wor", true, "270");
    tt_expect(&k, "hello", true, "257 260"); /* not in the vocab whole: merges as usual */
    tt_expect(&k, " the", true, "258");
    hy_tok_destroy(k.tok);

    /* unk_token, fuse_unk, and dropped chars (char-level: no pre-tokenizer) */
    const char *vocab = "{\"a\": 0, \"b\": 1, \"<unk>\": 2, \"ab\": 3}";
    const char *m = "[\"a b\"]";
    const char *unk = "\"unk_token\": \"<unk>\", \"fuse_unk\": false, ";
    const char *fused = "\"unk_token\": \"<unk>\", \"fuse_unk\": true, ";
    char *json = tt_tokenizer(NULL, NULL, NULL, unk, vocab, m);
    k = tt_load(t, json);
    tt_expect(&k, "axyb", true, "0 2 2 1");
    tt_expect(&k, "ab", true, "3");
    hy_tok_destroy(k.tok);
    free(json);
    json = tt_tokenizer(NULL, NULL, NULL, fused, vocab, m);
    k = tt_load(t, json);
    tt_expect(&k, "axyb", true, "0 2 1");
    tt_expect(&k, "xay", true, "2 0 2");
    hy_tok_destroy(k.tok);
    free(json);
    json = tt_tokenizer(NULL, NULL, NULL, NULL, vocab, m);
    k = tt_load(t, json);
    tt_expect(&k, "axyb", true, "3"); /* x, y dropped; a and b then merge */
    tt_expect(&k, "xyz", true, "");
    hy_tok_destroy(k.tok);
    free(json);
}

static void check_normalizer(struct tt *t)
{
    struct tt_tok k = make(t, NFC, BL_REGEX, NULL, false);
    tt_expect(&k, "cafe\xCC\x81", true, "99 97 102 268"); /* e + U+0301 -> é */
    tt_expect(&k, "café", true, "99 97 102 268");
    tt_expect(&k, "\xE2\x84\xAB", true, "195 133"); /* U+212B ANGSTROM SIGN -> U+00C5 */
    /* HF's NFC has Unicode 9.0 tables: U+08CF (Unicode 14, ccc 220) is a plain starter to it,
     * so U+1E011 (ccc 230) is not moved after it; U+0301 stays too. */
    tt_expect(&k, "x\xF0\x9E\x80\x91\xE0\xA3\x8F\xCC\x81", true,
              "120 240 158 128 145 224 163 143 204 129");
    tt_expect(&k, "\xE0\xA3\x8F\xE0\xA3\x8F\xCC\x81", true, "224 163 143 224 163 143 204 129");
    hy_tok_destroy(k.tok);
    k = make(t, "{\"type\": \"Sequence\", \"normalizers\": [" NFC ", " NFC "]}", BL_REGEX, NULL,
             false);
    tt_expect(&k, "cafe\xCC\x81", true, "99 97 102 268");
    hy_tok_destroy(k.tok);
    k = make(t, NULL, BL_REGEX, NULL, false);
    /* U+0301 is \p{M}, not \p{L}: a piece of its own */
    tt_expect(&k, "cafe\xCC\x81", true, "99 97 102 101 204 129");
    hy_tok_destroy(k.tok);
}

static void check_decode(struct tt *t)
{
    struct tt_tok k = make(t, NULL, BL_REGEX, NULL, false);
    CHECK(hy_tok_vocab_size(k.tok) == 271);
    CHECK(hy_tok_find(k.tok, "Ġthe") == 258);
    CHECK(hy_tok_find(k.tok, "the") == -1);
    CHECK(!hy_tok_is_special(k.tok, 258) && !hy_tok_is_special(k.tok, 9999));
    int32_t hello[] = {257, 260, 262, 263, 264}, e_acute[] = {195, 169}, lone[] = {195},
            cut[] = {228, 184}, overlong[] = {192, 128}, mixed[] = {228, 184, 97};
    tt_decode(&k, hello, false, "hello world");
    tt_decode(&k, e_acute, false, "é");
    tt_decode(&k, lone, false, "\xEF\xBF\xBD");
    tt_decode(&k, cut, false, "\xEF\xBF\xBD");
    tt_decode(&k, overlong, false, "\xEF\xBF\xBD\xEF\xBF\xBD");
    tt_decode(&k, mixed, false,
              "\xEF\xBF\xBD"
              "a");
    int32_t bad[] = {271};
    size_t n = 0;
    char out[16];
    CHECK(hy_tok_decode(k.tok, bad, 1, false, out, sizeof out, &n, NULL) == HY_E_RANGE);
    CHECK(hy_tok_decode(k.tok, hello, 5, false, out, 4, &n, NULL) == HY_E_NOSPACE && n == 11);
    int32_t ids[8];
    CHECK(hy_tok_encode(k.tok, "hello world", 11, true, ids, 2, &n, NULL) == HY_E_NOSPACE &&
          n == 5);
    CHECK(hy_tok_encode(k.tok, "a\xFF", 2, true, ids, 8, &n, NULL) == HY_E_INVAL);
    hy_tok_destroy(k.tok);
}

/* The detokenizer holds back an unfinished character and never splits one. */
static void check_detok(struct tt *t)
{
    struct tt_tok k = make(t, NULL, BL_REGEX, NULL, false);
    struct hy_detok d;
    char out[HY_DETOK_MAX_OUT];
    hy_detok_init(&d, k.tok, false);
    CHECK(hy_detok_push(&d, 228, out, sizeof out) == 0); /* E4 */
    CHECK(hy_detok_push(&d, 184, out, sizeof out) == 0); /* B8 */
    CHECK(hy_detok_push(&d, 173, out, 2) == -1);         /* 中 needs 3 bytes: state kept */
    CHECK(hy_detok_push(&d, 173, out, sizeof out) == 3 && !memcmp(out, "中", 3));
    CHECK(hy_detok_push(&d, 240, out, sizeof out) == 0); /* F0: start of an emoji */
    CHECK(hy_detok_push(&d, 97, out, sizeof out) == 4 && !memcmp(out,
                                                                 "\xEF\xBF\xBD"
                                                                 "a",
                                                                 4));
    CHECK(hy_detok_push(&d, 226, out, sizeof out) == 0);
    CHECK(hy_detok_flush(&d, out, 2) == -1);
    CHECK(hy_detok_flush(&d, out, sizeof out) == 3 && !memcmp(out, "\xEF\xBF\xBD", 3));
    CHECK(hy_detok_flush(&d, out, sizeof out) == 0);
    CHECK(hy_detok_push(&d, 9999, out, sizeof out) == 0); /* unknown id: skipped, as HF */
    hy_tok_destroy(k.tok);
}

int main(void)
{
    struct tt t;
    tt_init(&t);
    check_byte_level_regex(&t);
    check_byte_level_options(&t);
    check_model_options(&t);
    check_normalizer(&t);
    check_decode(&t);
    check_detok(&t);
    tt_cleanup(&t);
    return test_result();
}
