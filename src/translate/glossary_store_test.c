/* glossary_store_test.c: the glossary store (ids, list order, limits, a reference that
 * outlives a delete, persistence through the SQLite file and a second store on the same
 * file) and TBX import (TBX-Basic and 2019 forms, language codes, skipped entries, errors,
 * a glossary left as it was after a failure). */
#include "translate/glossary_store.h"

#include "test.h"

#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static struct hy_glossary *make(const char *tsv)
{
    struct hy_glossary *g = NULL;
    CHECK(hy_glossary_create(&g, NULL) == HY_OK);
    CHECK(hy_glossary_parse(g, tsv, strlen(tsv), HY_GLOSSARY_TSV, NULL) == HY_OK);
    return g;
}

static bool uuid_like(const char *s)
{
    if (strlen(s) != HY_GSTORE_ID_LEN || s[14] != '4' || !strchr("89ab", s[19]))
        return false;
    for (int i = 0; i < HY_GSTORE_ID_LEN; i++)
        if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
            return false;
    return true;
}

static void test_memory(void)
{
    struct hy_gstore *s = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_gstore_create(&s, NULL, 2, 3, &err) == HY_OK);
    struct hy_gstore_info a, b, c;
    CHECK(hy_gstore_add(s, "one", "en", "German", make("cat\tKatze\n"), &a, &err) == HY_OK);
    CHECK(uuid_like(a.id) && !strcmp(a.tgt, "de") && a.entries == 1);
    /* entries in all: 1 + 3 > 3 */
    CHECK(hy_gstore_add(s, "big", "en", "de", make("a\tb\nc\td\ne\tf\n"), &b, &err) ==
          HY_E_NOSPACE);
    CHECK(hy_gstore_add(s, "two", "en", "fr", make("cat\tchat\ndog\tchien\n"), &b, &err) == HY_OK);
    CHECK(strcmp(a.id, b.id) != 0);
    CHECK(hy_gstore_add(s, "three", "en", "fr", make("x\ty\n"), &c, &err) == HY_E_NOSPACE);
    CHECK(hy_gstore_add(s, "", "en", "fr", make("x\ty\n"), &c, &err) == HY_E_INVAL);
    CHECK(hy_gstore_add(s, "bad\nname", "en", "fr", make("x\ty\n"), &c, &err) == HY_E_INVAL);
    CHECK(hy_gstore_add(s, "x", "en", "klingon", make("x\ty\n"), &c, &err) == HY_E_INVAL);
    struct hy_gstore_info list[4];
    size_t n = 0;
    hy_gstore_list(s, list, 4, &n);
    CHECK(n == 2 && !strcmp(list[0].name, "one") && !strcmp(list[1].name, "two"));
    /* a reference stays valid after the delete */
    struct hy_gstore_ref *r = NULL, *r2 = NULL;
    CHECK(hy_gstore_acquire(s, b.id, &r, &err) == HY_OK);
    CHECK(hy_gstore_delete(s, b.id, &err) == HY_OK);
    CHECK(hy_gstore_acquire(s, b.id, &r2, &err) == HY_E_NOTFOUND && r2 == NULL);
    CHECK(hy_gstore_delete(s, b.id, &err) == HY_E_NOTFOUND);
    hy_gstore_list(s, list, 4, &n);
    CHECK(n == 1);
    CHECK(r && hy_gstore_info(r)->entries == 2);
    hy_gstore_release(r);
    hy_gstore_destroy(s);
}

static void test_ref_after_delete(void)
{
    struct hy_gstore *s = NULL;
    struct hy_gstore_info a;
    struct hy_gstore_ref *r = NULL;
    CHECK(hy_gstore_create(&s, NULL, 0, 0, NULL) == HY_OK);
    CHECK(hy_gstore_add(s, "g", "en", "de", make("cat\tKatze\n"), &a, NULL) == HY_OK);
    CHECK(hy_gstore_acquire(s, a.id, &r, NULL) == HY_OK);
    CHECK(hy_gstore_delete(s, a.id, NULL) == HY_OK);
    hy_gstore_destroy(s);
    struct hy_glossary_term t;
    hy_glossary_get(hy_gstore_glossary(r), 0, &t);
    CHECK(!strcmp(t.tgt, "Katze") && !strcmp(hy_gstore_info(r)->name, "g"));
    hy_gstore_release(r); /* the last reference frees it (ASan checks) */
}

static void test_db(void)
{
#ifdef HYMT_TM
    char path[] = "/tmp/hymt-gstore-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    struct hy_gstore *s = NULL, *s2 = NULL;
    struct hy_err err = {{0}};
    struct hy_gstore_info a, b;
    CHECK(hy_gstore_create(&s, path, 0, 0, &err) == HY_OK);
    CHECK(hy_gstore_add(s, "Fachbegriffe", "en", "de", make("cat\tKatze\nmachine learning\t"
                                                             "maschinelles Lernen\n"), &a,
                        &err) == HY_OK);
    CHECK(hy_gstore_add(s, "gone", "en", "de", make("x\ty\n"), &b, &err) == HY_OK);
    CHECK(hy_gstore_create(&s2, path, 0, 0, &err) == HY_OK); /* a second server on the file */
    CHECK(hy_gstore_delete(s, b.id, &err) == HY_OK);
    struct hy_gstore_info c;
    CHECK(hy_gstore_add(s, "later", "de", "en", make("Katze\tcat\n"), &c, &err) == HY_OK);
    struct hy_gstore_ref *r = NULL;
    CHECK(hy_gstore_acquire(s2, c.id, &r, &err) == HY_OK); /* found in the file */
    CHECK(r && hy_gstore_info(r)->entries == 1 && !strcmp(hy_gstore_info(r)->src, "de"));
    hy_gstore_release(r);
    hy_gstore_destroy(s2);
    hy_gstore_destroy(s);
    CHECK(hy_gstore_create(&s, path, 0, 0, &err) == HY_OK); /* a restart */
    struct hy_gstore_info list[4];
    size_t n = 0;
    hy_gstore_list(s, list, 4, &n);
    CHECKF(n == 2, "%zu", n);
    CHECK(n == 2 && !strcmp(list[0].id, a.id) && list[0].entries == 2 &&
          list[0].created == a.created && !strcmp(list[1].name, "later"));
    CHECK(hy_gstore_acquire(s, a.id, &r, &err) == HY_OK);
    struct hy_glossary_term t;
    hy_glossary_get(hy_gstore_glossary(r), 1, &t);
    CHECK(!strcmp(t.src, "machine learning") && !strcmp(t.tgt, "maschinelles Lernen"));
    hy_gstore_release(r);
    hy_gstore_destroy(s);
    CHECK(hy_gstore_create(&s, path, 1, 0, &err) == HY_E_NOSPACE); /* over the limit */
    char p2[sizeof path + 8];
    snprintf(p2, sizeof p2, "%s-wal", path);
    unlink(p2);
    snprintf(p2, sizeof p2, "%s-shm", path);
    unlink(p2);
    unlink(path);
    CHECK(hy_gstore_create(&s, "/nonexistent/dir/g.db", 0, 0, &err) == HY_E_IO);
#endif
}

static size_t tbx(struct hy_glossary *g, const char *xml, const char *src, const char *tgt,
                  hy_status want)
{
    size_t skipped = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_glossary_parse_tbx(g, xml, strlen(xml), src, tgt, &skipped, &err);
    CHECKF(st == want, "status %d (%s), want %d", st, err.msg, want);
    return skipped;
}

static void test_tbx(void)
{
#ifdef HYMT_TM
    struct hy_glossary *g = NULL;
    CHECK(hy_glossary_create(&g, NULL) == HY_OK);
    const char *basic =
        "<?xml version='1.0'?><martif type='TBX-Basic'><text><body>"
        "<termEntry><langSet xml:lang='EN-gb'><tig><term> graphics\n card </term></tig></langSet>"
        "<langSet xml:lang='zh-TW'><tig><term>顯示卡</term></tig></langSet></termEntry>"
        "<termEntry><langSet xml:lang='en'><ntig><termGrp><term>GPU</term></termGrp></ntig>"
        "</langSet></termEntry>"
        "</body></text></martif>";
    CHECK(tbx(g, basic, "en", "zh-Hant", HY_OK) == 1);
    CHECK(hy_glossary_size(g) == 1);
    struct hy_glossary_term t;
    hy_glossary_get(g, 0, &t);
    CHECKF(!strcmp(t.src, "graphics card") && !strcmp(t.tgt, "顯示卡"), "[%s] [%s]", t.src, t.tgt);
    /* the same source again: the glossary is left as it was */
    CHECK(tbx(g, basic, "en", "zh-Hant", HY_E_INVAL) == 1);
    CHECK(hy_glossary_size(g) == 1);
    const char *v2019 = "<tbx xmlns='urn:iso:std:iso:30042:ed-2'><text><body><conceptEntry>"
                        "<langSec xml:lang='de'><termSec><term>Grafikkarte</term></termSec>"
                        "</langSec><langSec xml:lang='en'><termSec><term>video card</term>"
                        "</termSec></langSec></conceptEntry></body></text></tbx>";
    CHECK(tbx(g, v2019, "en", "de", HY_OK) == 0);
    hy_glossary_get(g, 1, &t);
    CHECK(!strcmp(t.src, "video card") && !strcmp(t.tgt, "Grafikkarte"));
    CHECK(tbx(g, "<tbx><body><termEntry>", "en", "de", HY_E_FORMAT) == 0);
    CHECK(tbx(g, "<glossary/>", "en", "de", HY_E_FORMAT) == 0);
    CHECK(tbx(g, "not xml", "en", "de", HY_E_FORMAT) == 0);
    CHECK(tbx(g, v2019, "en", "xx", HY_E_INVAL) == 0);
    char big[600] = "<tbx><termEntry><langSet xml:lang='en'><term>";
    memset(big + strlen(big), 'a', 300);
    strcat(big, "</term></langSet></termEntry></tbx>");
    tbx(g, big, "en", "de", HY_E_INVAL);
    CHECK(hy_glossary_size(g) == 2);
    hy_glossary_destroy(g);
#endif
}

int main(void)
{
    test_memory();
    test_ref_after_delete();
    test_db();
    test_tbx();
    return test_result();
}
