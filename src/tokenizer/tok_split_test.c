/* tok_split_test.c: the Split pre-tokenizer, every behavior with and without invert, Regex
 * and String patterns, empty matches, and regex context at piece boundaries.
 * Each case builds a char-level tokenizer whose vocab holds every substring of the text and
 * whose model has ignore_merges: every piece then comes out as exactly one id, and the test
 * reads the pieces back by decoding each id. Expected pieces follow HF tokenizers' source
 * (tokenizer/normalizer.rs NormalizedString::split, onig::FindMatches) and were confirmed with
 * HF tokenizers 0.23.2 (tests/tokenizer/oracle.js). */
#include "core/utf8.h"
#include "tokenizer/tok_test_util.h"

static const char *const behaviors[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};

static char *split_json(const char *kind, const char *pattern, const char *behavior, bool invert)
{
    struct tt_str b = {0};
    tt_addf(&b, "{\"type\": \"Split\", \"pattern\": {\"%s\": ", kind);
    tt_add_json_str(&b, pattern, strlen(pattern));
    tt_addf(&b, "}, \"behavior\": \"%s\", \"invert\": %s}", behavior, invert ? "true" : "false");
    return b.s;
}

/* A vocab of every substring of text (char boundaries), ids in order of appearance. */
static char *substring_vocab(const char *text)
{
    struct tt_str b = {0};
    tt_add(&b, "{", 1);
    int id = 0;
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i += (size_t)hy_utf8_seq_len((const unsigned char *)text + i, n - i))
        for (size_t j = i; j < n;) {
            j += (size_t)hy_utf8_seq_len((const unsigned char *)text + j, n - j);
            bool seen = false; /* the same substring may occur twice */
            for (size_t k = 0; k < i && !seen; k++)
                seen = !strncmp(text + k, text + i, j - i);
            if (seen)
                continue;
            tt_add(&b, id ? ", " : "", id ? 2 : 0);
            tt_add_json_str(&b, text + i, j - i);
            tt_addf(&b, ": %d", id++);
        }
    tt_add(&b, "}", 1);
    return b.s;
}

/* Encodes text with pre_tokenizer pre and checks the pieces ("a|b|c"). */
static void pieces_at(struct tt *t, const char *pre, const char *text, const char *want,
                      const char *file, int line)
{
    char *vocab = substring_vocab(text);
    char *json = tt_tokenizer(NULL, pre, NULL,
                              "\"dropout\": null, \"unk_token\": null, \"ignore_merges\": true, ",
                              vocab, "[]");
    struct tt_tok k = tt_load(t, json);
    int32_t ids[256];
    size_t n = 0;
    struct tt_str got = {0}, id_list = {0};
    tt_add(&got, "", 0);
    tt_add(&id_list, "", 0);
    if (k.tok && hy_tok_encode(k.tok, text, strlen(text), true, ids, 256, &n, NULL) == HY_OK) {
        for (size_t i = 0; i < n; i++) {
            char s[256];
            size_t m = 0;
            HY_ASSERT(!hy_tok_decode(k.tok, &ids[i], 1, false, s, sizeof s, &m, NULL));
            tt_add(&got, i ? "|" : "", i ? 1 : 0);
            tt_add(&got, s, m);
            tt_addf(&id_list, i ? " %d" : "%d", ids[i]);
        }
    }
    CHECKF(!strcmp(got.s, want), "%s:%d: %s on \"%s\": got [%s] want [%s]", file, line, pre, text,
           got.s, want);
    if (getenv("HYMT_TOK_ORACLE") && !strcmp(got.s, want)) {
        struct tt_str j = {0};
        tt_add_json_str(&j, text, strlen(text));
        printf("ORACLE\t%s\t%s\t%s\n", k.path, j.s, id_list.s);
        free(j.s);
    }
    hy_tok_destroy(k.tok);
    free(got.s);
    free(id_list.s);
    free(json);
    free(vocab);
}
#define pieces(t, pre, text, want) pieces_at(t, pre, text, want, __FILE__, __LINE__)

/* One pattern, one text, all five behaviors; want[invert][behavior]. */
static void all_behaviors(struct tt *t, const char *kind, const char *pattern, const char *text,
                          const char *const want[2][5], int line)
{
    for (int inv = 0; inv < 2; inv++)
        for (int b = 0; b < 5; b++) {
            char *pre = split_json(kind, pattern, behaviors[b], inv);
            pieces_at(t, pre, text, want[inv][b], __FILE__, line);
            free(pre);
        }
}

static void check_behaviors(struct tt *t)
{
    /* matches: a [-] b [-][-] c  (two adjacent matches) */
    static const char *const dash[2][5] = {
        {"a|b|c", "a|-|b|-|-|c", "a-|b-|-|c", "a|-b|-|-c", "a|-|b|--|c"},
        {"-|-|-", "a|-|b|-|-|c", "a|-b|-|-c", "a-|b-|-|c", "a|-|b|--|c"},
    };
    all_behaviors(t, "String", "-", "a-b--c", dash, __LINE__);
    all_behaviors(t, "Regex", "-", "a-b--c", dash, __LINE__);

    /* empty matches: x* finds (0,0) (1,3) (4,4) in "axxb" */
    static const char *const empty[2][5] = {
        {"a|b", "a|xx|b", "axx|b", "a|xxb", "a|xx|b"},
        {"xx", "a|xx|b", "a|xxb", "axx|b", "a|xx|b"},
    };
    all_behaviors(t, "Regex", "x*", "axxb", empty, __LINE__);

    /* matches at both ends */
    static const char *const ends[2][5] = {
        {"b", "a|b|a", "a|ba", "ab|a", "a|b|a"},
        {"a|a", "a|b|a", "ab|a", "a|ba", "a|b|a"},
    };
    all_behaviors(t, "Regex", "a", "aba", ends, __LINE__);

    /* nothing matches */
    static const char *const none[2][5] = {
        {"abc", "abc", "abc", "abc", "abc"},
        {"", "abc", "abc", "abc", "abc"},
    };
    all_behaviors(t, "Regex", "z", "abc", none, __LINE__);
}

static void check_patterns(struct tt *t)
{
    const char *iso = "Isolated";
    char *p = split_json("String", ".+", iso, false); /* a literal, not a regex */
    pieces(t, p, "a.+b.+", "a|.+|b|.+");
    free(p);
    p = split_json("String", "#&-~(", iso, false); /* regex::escape's extra metachars */
    pieces(t, p, "1#&-~(2", "1|#&-~(|2");
    free(p);
    p = split_json("Regex", "[一-龥]+", iso, false);
    pieces(t, p, "ab中文cd", "ab|中文|cd");
    free(p);
    p = split_json("Regex", "\\p{N}{1,3}", iso, false);
    pieces(t, p, "a12345b", "a|123|45|b");
    free(p);
    /* Unicode 16.0 properties, as HF's Oniguruma: U+31350 (CJK Ext H, Unicode 15.0) is a
     * letter, U+1CCF0 (Unicode 16.0) a digit, whatever the spelling of the property */
    static const char *const letter[] = {"\\p{L}", "\\p{Letter}", "[\\p{L}]"};
    for (int i = 0; i < 3; i++) {
        p = split_json("Regex", letter[i], "Removed", false);
        pieces(t, p,
               "1\xF0\xB1\x8D\x90"
               "2",
               "1|2");
        free(p);
    }
    p = split_json("Regex", "[^\\s\\p{L}\\p{N}]+|\\P{N}", "Removed", false);
    pieces(t, p, "a\xF0\x9C\xB3\xB0!\xF0\xB1\x8D\x90", "\xF0\x9C\xB3\xB0");
    free(p);
    p = split_json("Regex", "\\pL", "Removed", false); /* the text "pL" to both engines */
    pieces(t, p, "apL1", "a|1");
    free(p);
    p = split_json("Regex", "\\p{^L}", "Removed", false);
    pieces(t, p,
           "1\xF0\xB1\x8D\x90"
           "2",
           "\xF0\xB1\x8D\x90");
    free(p);
    /* lookbehind sees the text before the search start (the whole piece is searched) */
    p = split_json("Regex", "(?<=a)b", iso, false);
    pieces(t, p, "abab", "a|b|a|b");
    free(p);
    /* (?i:...) and Unicode case folding as Oniguruma does it */
    p = split_json("Regex", "(?i:'s)", iso, false);
    pieces(t, p, "x'Sy's", "x|'S|y|'s");
    free(p);
}

/* Each stage sees only its piece: "x(?!\|)" cannot see the "|" removed before it. */
static void check_sequence(struct tt *t)
{
    char *a = split_json("String", "|", "Removed", false);
    char *b = split_json("Regex", "x(?!\\|)", "Isolated", false);
    struct tt_str seq = {0};
    tt_addf(&seq, "{\"type\": \"Sequence\", \"pretokenizers\": [%s, %s]}", a, b);
    pieces(t, seq.s, "ax|yb", "a|x|yb");
    pieces(t, b, "ax|yb", "ax|yb");
    free(seq.s);
    free(a);
    free(b);
}

int main(void)
{
    struct tt t;
    tt_init(&t);
    check_behaviors(&t);
    check_patterns(&t);
    check_sequence(&t);
    tt_cleanup(&t);
    return test_result();
}
