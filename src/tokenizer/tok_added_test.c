/* tok_added_test.c: added tokens as HF tokenizers treats them (tokenizer/added_vocabulary.rs):
 * leftmost-longest matching, special tokens matched only when allowed (and then left as
 * text, the scan going on after them: HF's encode_special_tokens), non-special ones always,
 * lstrip/rstrip, single_word, normalized tokens matched after NFC, ids of contents that are
 * in the vocab, and decoding with skip_special. Expectations with special tokens allowed
 * were confirmed with HF tokenizers 0.23.2 (tests/tokenizer/oracle.js); the others follow
 * find_matches step by step, and the corpus-wide ones are in tests/tokenizer (extra.json). */
#include "tokenizer/tok_test_util.h"

static const char *const extra[] = {"he", "ll", "llo", "ĠĠ", NULL}; /* 256..259 */
static const char *const merges[] = {"h e", "l l", "ll o", "Ġ Ġ", NULL};

#define ADDED(id, content, special, lstrip, rstrip, single, normalized)                            \
    "{\"id\": " #id ", \"content\": \"" content "\", \"single_word\": " #single                    \
    ", \"lstrip\": " #lstrip ", \"rstrip\": " #rstrip ", \"normalized\": " #normalized             \
    ", \"special\": " #special "}"

static const char added[] = "[" ADDED(260, "<|end|>", true, false, false, false, false) ",\n" /**/
    ADDED(261, "<|start|>", true, false, false, false, false) ",\n"                           /**/
    ADDED(262, "<think>", false, false, false, false, false) ",\n"                            /**/
    ADDED(263, "end", false, false, false, false, false) ",\n"                                /**/
    ADDED(264, "[M]", false, true, true, false, false) ",\n"                                  /**/
    ADDED(265, "cat", false, false, false, true, false) ",\n"                                 /**/
    ADDED(266, "cafe\\u0301", false, false, false, false, true) ",\n"      /* NFC: café */
    ADDED(267, "<|end|><|start|>", true, false, false, false, false) ",\n" /**/
    ADDED(268, "<｜x｜>", true, false, false, false, false) ",\n"          /**/
    ADDED(999, "he", false, false, false, false, false) "]";               /* in the vocab: 256 */

static struct tt_tok make(struct tt *t)
{
    struct tt_str v = {0}, m = {0};
    tt_byte_vocab(&v, extra);
    tt_merges(&m, merges, true);
    char *json = tt_tokenizer("{\"type\": \"NFC\"}",
                              "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                              "\"trim_offsets\": true, \"use_regex\": true}",
                              added, NULL, v.s, m.s);
    struct tt_tok k = tt_load(t, json);
    free(json);
    free(v.s);
    free(m.s);
    return k;
}

static void check_matching(const struct tt_tok *k)
{
    tt_expect(k, "hi<|end|>there", true, "104 105 260 116 256 114 101");
    /* not allowed: the special match is skipped whole, so "end" inside is not matched */
    tt_expect(k, "hi<|end|>there", false, "104 105 60 124 101 110 100 124 62 116 256 114 101");
    tt_expect(k, "<|end|><|start|>", true, "267"); /* longest at the leftmost position */
    tt_expect(k, "<|end|><|start", true, "260 60 124 115 116 97 114 116");
    tt_expect(k, "<think>x", true, "262 120");
    tt_expect(k, "<think>x", false, "262 120"); /* non-special: matched either way */
    tt_expect(k, "the end", true, "116 256 32 263");
    tt_expect(k, "she", true, "115 256");
    tt_expect(k, "<｜x｜>", true, "268");
}

static void check_flags(const struct tt_tok *k)
{
    tt_expect(k, "a  [M]  b", true, "97 264 98"); /* lstrip and rstrip take the spaces */
    tt_expect(k, "[M] [M]", true, "264 264");     /* lstrip stops at the previous token */
    tt_expect(k, "a cat.", true, "97 32 265 46");
    tt_expect(k, "concat", true, "99 111 110 99 97 116"); /* single_word: inside a word */
    tt_expect(k, "cats", true, "99 97 116 115");
    tt_expect(k, "café!", true, "266 33");         /* normalized token, composed text */
    tt_expect(k, "cafe\xCC\x81!", true, "266 33"); /* decomposed text, NFC first */
}

static void check_ids_and_decode(const struct tt_tok *k)
{
    CHECK(hy_tok_vocab_size(k->tok) == 269);
    CHECK(hy_tok_find(k->tok, "<|end|>") == 260);
    CHECK(hy_tok_find(k->tok, "he") == 256); /* the vocab's id, not the file's 999 */
    CHECK(hy_tok_find(k->tok, "<｜x｜>") == 268);
    CHECK(hy_tok_is_special(k->tok, 260) && hy_tok_is_special(k->tok, 268));
    CHECK(!hy_tok_is_special(k->tok, 262) && !hy_tok_is_special(k->tok, 256));
    int32_t ids[] = {104, 105, 260, 262, 267, 268};
    tt_decode(k, ids, false, "hi<|end|><think><|end|><|start|><｜x｜>");
    tt_decode(k, ids, true, "hi<think>");
    int32_t cafe[] = {266};
    /* HF decodes an added token from its normalized form, "café", whose chars are all
     * byte-level chars: é stands for the byte E9, so the text is "caf" + U+FFFD. */
    tt_decode(k, cafe, false, "caf\xEF\xBF\xBD");
}

int main(void)
{
    struct tt t;
    tt_init(&t);
    struct tt_tok k = make(&t);
    if (k.tok) {
        check_matching(&k);
        check_flags(&k);
        check_ids_and_decode(&k);
    }
    hy_tok_destroy(k.tok);
    tt_cleanup(&t);
    return test_result();
}
