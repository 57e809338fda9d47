/* tm_test.c: the translation memory: lookups by every part of the key, the first
 * translation staying, imported entries winning over the model's, TMX import (source by
 * srclang, language mapping, inline codes, entities, unknown languages, malformed XML
 * rolled back), export -> import -> export byte-identical, a text XML cannot carry. */
#include "translate/tm.h"

#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HYMT_TM

static char dir[] = "/tmp/hymt-tm-XXXXXX";

static struct hy_tm *open_tm(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct hy_tm *tm = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_tm_open(&tm, path, &err) == HY_OK, "%s", err.msg);
    return tm;
}

/* The stored translation for the key, or "-" for none. */
static void get(struct hy_tm *tm, const char *src, const char *tgt, const char *model,
                const char *settings, const char *source, const char *want)
{
    struct hy_tm_key k = {src, tgt, model, settings, source, strlen(source)};
    char *t = NULL;
    size_t n = 0;
    hy_status st = hy_tm_get(tm, &k, &t, &n, NULL);
    const char *got = st == HY_OK ? t : st == HY_E_NOTFOUND ? "-" : "(error)";
    CHECKF(!strcmp(got, want), "%s/%s/%s/[%s] %s: got [%s], want [%s]", src, tgt, model,
           settings, source, got, want);
    free(t);
}

static void put(struct hy_tm *tm, const char *src, const char *tgt, const char *model,
                const char *settings, const char *source, const char *text)
{
    struct hy_tm_key k = {src, tgt, model, settings, source, strlen(source)};
    CHECK(hy_tm_put(tm, &k, text, strlen(text), NULL) == HY_OK);
}

static void test_keys(void)
{
    struct hy_tm *tm = open_tm("a.db");
    put(tm, "en", "de", "m1", "", "Hello.", "Hallo.");
    put(tm, "en", "de", "m1", "", "Hello.", "Servus."); /* the first stays */
    put(tm, "en", "de", "m1", "context 00000000000000ff", "Hello.", "Hallo (ctx).");
    put(tm, "", "de", "m1", "", "Hello.", "Hallo (auto).");
    get(tm, "en", "de", "m1", "", "Hello.", "Hallo.");
    get(tm, "en", "de", "m1", "context 00000000000000ff", "Hello.", "Hallo (ctx).");
    get(tm, "", "de", "m1", "", "Hello.", "Hallo (auto).");
    get(tm, "en", "fr", "m1", "", "Hello.", "-");
    get(tm, "en", "de", "m2", "", "Hello.", "-");
    get(tm, "en", "de", "m1", "", "Hello", "-");
    get(tm, "en", "de", "m1", "terms\na\tb\n", "Hello.", "-");
    put(tm, "en", "de", "", "", "Hello.", "Grüß Gott."); /* a person's: wins for any model */
    get(tm, "en", "de", "m1", "", "Hello.", "Grüß Gott.");
    get(tm, "en", "de", "m2", "", "Hello.", "Grüß Gott.");
    int64_t n = 0;
    CHECK(hy_tm_count(tm, &n, NULL) == HY_OK && n == 4);
    hy_tm_close(tm);
    tm = open_tm("a.db"); /* persisted */
    get(tm, "en", "de", "m1", "context 00000000000000ff", "Hello.", "Hallo (ctx).");
    hy_tm_close(tm);
    char a[64], b[64];
    hy_tm_settings_context("abc", 3, a, sizeof a);
    hy_tm_settings_context("abd", 3, b, sizeof b);
    CHECK(!strncmp(a, "context ", 8) && strlen(a) == 24 && strcmp(a, b));
}

static const char TMX[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<tmx version=\"1.4\"><header srclang=\"en-US\" datatype=\"plaintext\" segtype=\"sentence\" "
    "adminlang=\"en\" o-tmf=\"x\" creationtool=\"x\" creationtoolversion=\"1\"/><body>\n"
    "<tu creationdate=\"20240102T030405Z\">"
    "<tuv xml:lang=\"de-DE\"><seg>Drücken Sie <bpt i=\"1\">&lt;b&gt;</bpt>OK<ept i=\"1\">"
    "&lt;/b&gt;</ept> &amp; fertig.</seg></tuv>"
    "<tuv xml:lang=\"en-US\"><seg>Press <bpt i=\"1\">&lt;b&gt;</bpt>OK<ept i=\"1\">&lt;/b&gt;"
    "</ept> &amp; done.</seg></tuv>"
    "<tuv xml:lang=\"zh-TW\"><seg>按<hi>確定</hi>即可。</seg></tuv>"
    "<tuv xml:lang=\"tlh\"><seg>Klingon</seg></tuv></tu>\n"
    "<tu><tuv lang=\"EN\"><seg>Only one side</seg></tuv></tu>\n"
    "</body></tmx>\n";

static void test_import(void)
{
    struct hy_tm *tm = open_tm("b.db");
    size_t n = 0, skipped = 0;
    struct hy_err err = {{0}};
    CHECKF(hy_tm_import_tmx(tm, TMX, strlen(TMX), &n, &skipped, &err) == HY_OK, "%s", err.msg);
    CHECK(n == 2 && skipped == 1);
    get(tm, "en", "de", "any", "", "Press OK & done.", "Drücken Sie OK & fertig.");
    get(tm, "en", "zh-Hant", "any", "", "Press OK & done.", "按確定即可。");
    /* malformed XML: an error naming the line, nothing stored */
    const char *bad = "<tmx><body>\n<tu><tuv xml:lang=\"en\"><seg>x</seg></tuv>"
                      "<tuv xml:lang=\"fr\"><seg>y</seg></tuv></tu>\n<tu></body></tmx>";
    CHECK(hy_tm_import_tmx(tm, bad, strlen(bad), &n, &skipped, &err) == HY_E_FORMAT);
    CHECKF(strstr(err.msg, "line 3") != NULL, "%s", err.msg);
    get(tm, "en", "fr", "any", "", "x", "-");
    CHECK(hy_tm_import_tmx(tm, "<html/>", 7, &n, &skipped, &err) == HY_E_FORMAT);
    hy_tm_close(tm);
}

static char *export(struct hy_tm *tm, size_t *n, size_t *skipped)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(hy_tm_export_tmx(tm, f, n, skipped, NULL) == HY_OK);
    fclose(f);
    return buf;
}

static void test_round_trip(void)
{
    struct hy_tm *tm = open_tm("c.db");
    put(tm, "en", "de", "m1", "", "a < b & \"c\"\r\nd", "x\ty");
    put(tm, "en", "ja", "m1", "terms\ncat\t猫\n", "The cat.", "猫。");
    put(tm, "", "de", "", "context 0123456789abcdef", "Auto.", "Automatisch.");
    put(tm, "en", "de", "m1", "", "bell \a here", "Glocke"); /* XML cannot carry \a */
    size_t n1 = 0, s1 = 0, n2 = 0, s2 = 0, imp = 0, skipped = 0;
    char *first = export(tm, &n1, &s1);
    CHECK(n1 == 3 && s1 == 1);
    struct hy_tm *t2 = open_tm("d.db");
    CHECK(hy_tm_import_tmx(t2, first, strlen(first), &imp, &skipped, NULL) == HY_OK);
    CHECK(imp == 3 && skipped == 0);
    char *second = export(t2, &n2, &s2);
    CHECKF(!strcmp(first, second), "export -> import -> export differs:\n%s\n---\n%s", first,
           second);
    get(t2, "en", "de", "m1", "", "a < b & \"c\"\r\nd", "x\ty");
    get(t2, "en", "ja", "m9", "terms\ncat\t猫\n", "The cat.", "-");
    get(t2, "en", "ja", "m1", "terms\ncat\t猫\n", "The cat.", "猫。");
    free(first);
    free(second);
    hy_tm_close(tm);
    hy_tm_close(t2);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    test_keys();
    test_import();
    test_round_trip();
    test_rmtree(dir);
    return test_result();
}

#else

int main(void)
{
    struct hy_tm *tm = NULL;
    struct hy_err err = {{0}};
    if (hy_tm_open(&tm, "/tmp/x.db", &err) != HY_E_UNSUPPORTED || !strstr(err.msg, "SQLite"))
        return 1;
    fprintf(stderr, "built without SQLite and expat: skipped\n");
    return 77;
}

#endif
