/* glossary_test.c: CSV/TSV rows, the matching rule of glossary.h (folding, word
 * boundaries, scripts without spaces, longest match, order, cap), errors, limits. */
#include "translate/glossary.h"

#include "test.h"

#include <stdint.h>
#include <string.h>

static struct hy_glossary *load(const char *text, enum hy_glossary_format fmt)
{
    struct hy_glossary *g = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_glossary_create(&g, &err) == HY_OK);
    hy_status st = hy_glossary_parse(g, text, strlen(text), fmt, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    return g;
}

/* The terms found in text, as "src=tgt;" pairs. */
static void found(const struct hy_glossary *g, const char *text, const char *want)
{
    struct hy_glossary_term t[8];
    size_t n = 0;
    char got[512] = "";
    CHECK(hy_glossary_match(g, text, strlen(text), t, 8, &n, NULL) == HY_OK);
    for (size_t i = 0; i < n && i < 8; i++) {
        size_t at = strlen(got);
        snprintf(got + at, sizeof got - at, "%s=%s;", t[i].src, t[i].tgt);
    }
    CHECKF(!strcmp(got, want), "in [%s]: got [%s], want [%s]", text, got, want);
}

static void test_match(void)
{
    struct hy_glossary *g = load("\xEF\xBB\xBF" "cat,Katze\n"
                                 "machine learning,maschinelles Lernen\n"
                                 "learning,Lernen\n"
                                 "混元珠,Chaos Pearl\n"
                                 "서울,Seoul\n"
                                 "\"Straße\",street\n"
                                 "C++,C plus plus\n"
                                 "\"New \"\"York\"\"\",NYC\r\n"
                                 "\n"
                                 "ＡＢＣ,abc-fullwidth\n",
                                 HY_GLOSSARY_AUTO);
    CHECK(hy_glossary_size(g) == 9);
    found(g, "The cat sat.", "cat=Katze;");
    found(g, "THE CAT SAT", "cat=Katze;");                     /* case folding */
    found(g, "A category of cats.", "");                        /* word boundaries */
    found(g, "cat-like", "cat=Katze;");                         /* '-' is a boundary */
    found(g, "Deep machine learning and learning.",
          "machine learning=maschinelles Lernen;learning=Lernen;"); /* longest, then order */
    found(g, "machine\n  learning", "machine learning=maschinelles Lernen;"); /* whitespace */
    found(g, "孕育出一颗混元珠", "混元珠=Chaos Pearl;");          /* no spaces in Han */
    found(g, "서울에서 만나요", "서울=Seoul;");                   /* Hangul particles */
    found(g, "STRASSE und Straße", "Straße=street;");            /* full case folding */
    found(g, "I like C++.", "C++=C plus plus;");
    found(g, "new \"york\" city", "New \"York\"=NYC;");
    found(g, "abc and ＡＢＣ", "ＡＢＣ=abc-fullwidth;");           /* NFKC */
    found(g, "learning cat learning cat", "learning=Lernen;cat=Katze;"); /* each once */
    /* the cap: all found are counted, the first cap written */
    struct hy_glossary_term t[1];
    size_t n = 0;
    const char *s = "cat learning 混元珠";
    CHECK(hy_glossary_match(g, s, strlen(s), t, 1, &n, NULL) == HY_OK);
    CHECK(n == 3 && !strcmp(t[0].src, "cat"));
    hy_glossary_destroy(g);
}

static void test_tsv_and_langs(void)
{
    struct hy_glossary *g = load("cat\tKatze\ten\tde\ndog\tHund\ten\tde\n", HY_GLOSSARY_AUTO);
    const char *a, *b;
    hy_glossary_langs(g, &a, &b);
    CHECK(!strcmp(a, "en") && !strcmp(b, "de"));
    found(g, "a dog", "dog=Hund;");
    /* a TSV field keeps commas and quotes as they are */
    struct hy_err err = {{0}};
    const char *t = "a, b\t\"x\"\n";
    CHECK(hy_glossary_parse(g, t, strlen(t), HY_GLOSSARY_TSV, &err) == HY_OK);
    found(g, "say a, b now", "a, b=\"x\";");
    /* add after a parse keeps the index sorted */
    CHECK(hy_glossary_add(g, " bird ", 6, "Vogel", 5, &err) == HY_OK);
    found(g, "bird dog", "bird=Vogel;dog=Hund;");
    CHECK(hy_glossary_add(g, "BIRD", 4, "x", 1, &err) == HY_E_INVAL);
    CHECK(strstr(err.msg, "already") != NULL);
    CHECK(hy_glossary_size(g) == 4);
    hy_glossary_destroy(g);
}

static void bad(const char *text, const char *msg_part)
{
    struct hy_glossary *g = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_glossary_create(&g, &err) == HY_OK);
    CHECK(hy_glossary_add(g, "keep", 4, "me", 2, &err) == HY_OK);
    hy_status st = hy_glossary_parse(g, text, strlen(text), HY_GLOSSARY_AUTO, &err);
    CHECKF(st != HY_OK && strstr(err.msg, msg_part), "[%s]: %s", text, err.msg);
    CHECK(hy_glossary_size(g) == 1); /* as it was */
    found(g, "keep", "keep=me;");
    hy_glossary_destroy(g);
}

static void test_errors(void)
{
    bad("a,b\nc\n", "row 2: 1 columns");
    bad("a,b,c\n", "row 1: 3 columns");
    bad(",b\n", "row 1: empty source");
    bad("a,  \n", "row 1: empty target");
    bad("a,b\n\"c,d\n", "row 2: unterminated quote");
    bad("\"a\"x,b\n", "text after a closing quote");
    bad("a,b\nA,c\n", "rows 1 and 2: the same source term");
    bad("keep,again\n", "the same source term");
    bad("a,\"b\nc\"\n", "control character");
    bad("a,\xff\n", "not UTF-8");
    bad("a,b,en,de\nc,d,en,fr\n", "differs");
    bad("a,b\rc,d\n", "lone carriage return");
    char longterm[300];
    memset(longterm, 'x', 299);
    longterm[299] = '\0';
    char row[320];
    snprintf(row, sizeof row, "%s,y\n", longterm);
    bad(row, "longer than 256 bytes");
    /* an empty glossary or text finds nothing */
    struct hy_glossary *g = load("", HY_GLOSSARY_CSV);
    found(g, "anything", "");
    hy_glossary_destroy(g);
}

/* Many entries: the sorted index finds each one, and a text of all of them finds all. */
static void test_many(void)
{
    struct hy_glossary *g = NULL;
    CHECK(hy_glossary_create(&g, NULL) == HY_OK);
    static char csv[5000 * 24];
    size_t at = 0;
    for (int i = 0; i < 5000; i++)
        at += (size_t)snprintf(csv + at, sizeof csv - at, "term%d,t%d\n", (i * 7919) % 5000, i);
    CHECK(hy_glossary_parse(g, csv, at, HY_GLOSSARY_CSV, NULL) == HY_OK);
    CHECK(hy_glossary_size(g) == 5000);
    int misses = 0;
    for (int i = 0; i < 5000; i += 97) {
        char text[64], want[64];
        snprintf(text, sizeof text, "see term%d here", i);
        struct hy_glossary_term t[2];
        size_t n = 0;
        hy_glossary_match(g, text, strlen(text), t, 2, &n, NULL);
        snprintf(want, sizeof want, "term%d", i);
        misses += !(n == 1 && !strcmp(t[0].src, want));
    }
    CHECK(misses == 0);
    hy_glossary_destroy(g);
}

/* Random CSV/TSV bytes: a parse either succeeds or fails leaving the glossary as it was;
 * matching any text afterwards finds only terms that are there. */
static void test_random(void)
{
    static const char alpha[] = ",\"\t\n\r ab\xC3\xA9\xff";
    uint64_t seed = 7;
    int bad = 0;
    char text[200];
    for (int r = 0; r < 3000; r++) {
        struct hy_glossary *g = NULL;
        hy_glossary_create(&g, NULL);
        hy_glossary_add(g, "keep", 4, "me", 2, NULL);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = (size_t)(seed >> 33) % sizeof text;
        for (size_t i = 0; i < len; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            text[i] = alpha[(seed >> 33) % (sizeof alpha - 1)];
        }
        hy_status st = hy_glossary_parse(g, text, len, (enum hy_glossary_format)(r % 3), NULL);
        bad += st != HY_OK && hy_glossary_size(g) != 1;
        struct hy_glossary_term t[4];
        size_t n = 0;
        bad += hy_glossary_match(g, text, len < 100 ? len : 100, t, 4, &n, NULL) == HY_E_NOMEM;
        bad += hy_glossary_match(g, "keep", 4, t, 4, &n, NULL) != HY_OK || n != 1;
        hy_glossary_destroy(g);
    }
    CHECKF(bad == 0, "%d random glossaries broke an invariant", bad);
}

int main(void)
{
    test_match();
    test_tsv_and_langs();
    test_errors();
    test_many();
    test_random();
    return test_result();
}
