/* docx_test.c: .docx paragraphs translated in place (docx.h). A small package is built
 * here with libzip from XML written below (document.xml with a heading, a paragraph of
 * three differently formatted runs, a table and a picture's run; styles.xml; a PNG's
 * bytes): an identity "translation" gives back document.xml byte for byte (it is written
 * as libxml2 writes) and every other part unchanged; a marking one changes only the text
 * of w:t elements (the XML with every w:t emptied is the same), each paragraph's runs then
 * hold exactly "[" + its text + "]" and keep their count and properties, cut at spaces.
 * Untrusted input: not a zip, no word/document.xml, a DTD (XXE), malformed XML, a part
 * that inflates past the limit, a file over the size limit: each one line, no crash. */
#include "translate/docx.h"

#include "test.h"

#include <string.h>

#ifdef HYMT_DOCX
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <zip.h>

#define W "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\""

static const char doc_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<w:document " W "><w:body>"
    "<w:p><w:pPr><w:pStyle w:val=\"Heading1\"/></w:pPr><w:r><w:t>Quarterly report</w:t></w:r></w:p>"
    "<w:p><w:r><w:rPr><w:b/></w:rPr><w:t xml:space=\"preserve\">The results </w:t></w:r>"
    "<w:r><w:rPr><w:i/></w:rPr><w:t xml:space=\"preserve\">were better than expected</w:t></w:r>"
    "<w:r><w:t xml:space=\"preserve\"> in every region &amp; market.</w:t></w:r></w:p>"
    "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Revenue</w:t></w:r></w:p></w:tc>"
    "<w:tc><w:p><w:r><w:t>12.5</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    "<w:p><w:r><w:drawing><w:inline>picture</w:inline></w:drawing></w:r></w:p>"
    "<w:sectPr><w:pgSz w:w=\"12240\" w:h=\"15840\"/></w:sectPr>"
    "</w:body></w:document>\n";
static const char styles_xml[] = "<?xml version=\"1.0\"?>\n<w:styles " W "/>\n";
static const char types_xml[] = "<?xml version=\"1.0\"?><Types/>";

struct part {
    const char *name;
    const void *data;
    size_t len;
};

/* A zip archive of parts[0..n), malloc'd into *out. */
static void make_zip(const struct part *parts, int n, void **out, size_t *len)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &ze);
    HY_ASSERT(src);
    zip_source_keep(src);
    zip_t *z = zip_open_from_source(src, ZIP_TRUNCATE, &ze);
    HY_ASSERT(z);
    for (int i = 0; i < n; i++) {
        zip_source_t *s = zip_source_buffer(z, parts[i].data, parts[i].len, 0);
        HY_ASSERT(s && zip_file_add(z, parts[i].name, s, 0) >= 0);
    }
    HY_ASSERT(zip_close(z) == 0);
    zip_stat_t sb;
    HY_ASSERT(zip_source_stat(src, &sb) == 0 && zip_source_open(src) == 0);
    *out = malloc(sb.size);
    *len = (size_t)zip_source_read(src, *out, sb.size);
    zip_source_close(src);
    zip_source_free(src);
    zip_error_fini(&ze);
}

/* Part `name` of the archive data, malloc'd (NUL added); NULL if absent. */
static char *part_of(const void *data, size_t len, const char *name, size_t *n)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &ze);
    zip_t *z = src ? zip_open_from_source(src, ZIP_RDONLY, &ze) : NULL;
    char *buf = NULL;
    zip_stat_t sb;
    if (z && zip_stat(z, name, 0, &sb) == 0) {
        zip_file_t *f = zip_fopen(z, name, 0);
        buf = malloc(sb.size + 1);
        *n = (size_t)zip_fread(f, buf, sb.size);
        buf[*n] = 0;
        zip_fclose(f);
    }
    if (z)
        zip_close(z);
    else if (src)
        zip_source_free(src);
    zip_error_fini(&ze);
    return buf;
}

static int calls;

static hy_status identity(void *ctx, const char *const *texts, const size_t *lens, size_t n,
                          char **outs, size_t *out_lens, struct hy_err *err)
{
    (void)ctx, (void)err;
    calls++;
    for (size_t i = 0; i < n; i++) {
        outs[i] = malloc(lens[i] + 1);
        memcpy(outs[i], texts[i], lens[i]);
        out_lens[i] = lens[i];
    }
    return HY_OK;
}

static hy_status mark(void *ctx, const char *const *texts, const size_t *lens, size_t n,
                      char **outs, size_t *out_lens, struct hy_err *err)
{
    (void)ctx, (void)err;
    CHECK(n == 3); /* heading, paragraph, "Revenue"; not "12.5" (no letter), not the picture */
    for (size_t i = 0; i < n; i++) {
        outs[i] = malloc(lens[i] + 2);
        outs[i][0] = '[';
        memcpy(outs[i] + 1, texts[i], lens[i]);
        outs[i][lens[i] + 1] = ']';
        out_lens[i] = lens[i] + 2;
    }
    return HY_OK;
}

/* The XML with the content of every <w:t ...>...</w:t> removed. */
static char *without_text(const char *x)
{
    char *o = malloc(strlen(x) + 1), *p = o;
    while (*x) {
        if (!strncmp(x, "<w:t>", 5) || !strncmp(x, "<w:t ", 5)) {
            const char *gt = strchr(x, '>'), *end = strstr(x, "</w:t>");
            memcpy(p, x, (size_t)(gt + 1 - x));
            p += gt + 1 - x;
            x = end;
            continue;
        }
        *p++ = *x++;
    }
    *p = 0;
    return o;
}

/* Each w:p's w:t texts of xml, "|" between runs, one paragraph a line. */
static void runs_of(const char *xml, char *out, size_t cap)
{
    xmlDoc *d = xmlReadMemory(xml, (int)strlen(xml), "d.xml", NULL, XML_PARSE_NONET);
    HY_ASSERT(d);
    size_t at = 0;
    out[0] = 0;
    for (xmlNode *n = xmlDocGetRootElement(d); n;) {
        if (n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, "p"))
            at += (size_t)snprintf(out + at, cap - at, "\n");
        if (n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, "t")) {
            xmlChar *c = xmlNodeGetContent(n);
            at += (size_t)snprintf(out + at, cap - at, "%s|", (const char *)c);
            xmlFree(c);
        }
        if (n->children && n->type == XML_ELEMENT_NODE) {
            n = n->children;
            continue;
        }
        while (n && !n->next)
            n = n->parent && n->parent->type == XML_ELEMENT_NODE ? n->parent : NULL;
        n = n ? n->next : NULL;
    }
    xmlFreeDoc(d);
}

static void test_roundtrip(void)
{
    unsigned char png[300];
    for (size_t i = 0; i < sizeof png; i++)
        png[i] = (unsigned char)(i * 37 + 11);
    const struct part parts[] = {{"[Content_Types].xml", types_xml, sizeof types_xml - 1},
                                 {"word/document.xml", doc_xml, sizeof doc_xml - 1},
                                 {"word/styles.xml", styles_xml, sizeof styles_xml - 1},
                                 {"word/media/image1.png", png, sizeof png}};
    void *in = NULL, *out = NULL;
    size_t in_len = 0, out_len = 0, n = 0;
    make_zip(parts, 4, &in, &in_len);
    struct hy_err err = {{0}};
    CHECKF(hy_docx_translate(in, in_len, identity, NULL, &out, &out_len, &err) == HY_OK, "%s",
           err.msg);
    char *x = out ? part_of(out, out_len, "word/document.xml", &n) : NULL;
    CHECKF(x && n == sizeof doc_xml - 1 && !memcmp(x, doc_xml, n), "identity changed the XML:\n%s",
           x ? x : "(none)");
    free(x);
    for (int i = 2; i < 4 && out; i++) {
        char *p = part_of(out, out_len, parts[i].name, &n);
        CHECK(p && n == parts[i].len && !memcmp(p, parts[i].data, n));
        free(p);
    }
    free(out);

    CHECKF(hy_docx_translate(in, in_len, mark, NULL, &out, &out_len, &err) == HY_OK, "%s",
           err.msg);
    x = out ? part_of(out, out_len, "word/document.xml", &n) : NULL;
    if (x) {
        char *a = without_text(doc_xml), *b = without_text(x);
        CHECKF(!strcmp(a, b), "more than text changed:\n%s\n%s", a, b);
        free(a);
        free(b);
        char runs[2048];
        runs_of(x, runs, sizeof runs);
        /* the paragraph's three runs: 12, 25 and 30 characters of 67; "[...]" is 69,
         * cut near 12.4 and 38.1 at the spaces there */
        const char *want = "\n[Quarterly report]|"
                           "\n[The results |were better than expected |in every region & market.]|"
                           "\n[Revenue]|\n12.5|\n";
        CHECKF(!strcmp(runs, want), "runs:%s\nwant:%s", runs, want);
        CHECK(strstr(x, "<w:b/>") && strstr(x, "<w:i/>") && strstr(x, "Heading1"));
    }
    free(x);
    free(out);
    free(in);
}

static void expect_fail(const struct part *parts, int n, hy_status want, const char *msg)
{
    void *in = NULL, *out = NULL;
    size_t len = 0, out_len = 0;
    make_zip(parts, n, &in, &len);
    struct hy_err err = {{0}};
    calls = 0;
    hy_status st = hy_docx_translate(in, len, identity, NULL, &out, &out_len, &err);
    CHECKF(st == want && strstr(err.msg, msg) && !strchr(err.msg, '\n') && !out && calls == 0,
           "status %d: %s (want %d, '%s')", (int)st, err.msg, (int)want, msg);
    free(in);
}

static void test_untrusted(void)
{
    struct hy_err err = {{0}};
    void *out = NULL;
    size_t out_len = 0;
    const char junk[] = "this is not a zip archive at all";
    CHECK(hy_docx_translate(junk, sizeof junk, identity, NULL, &out, &out_len, &err) ==
              HY_E_FORMAT && strstr(err.msg, "zip"));
    CHECK(hy_docx_translate(junk, (size_t)HY_DOCX_MAX_BYTES + 1, identity, NULL, &out, &out_len,
                            &err) == HY_E_RANGE);
    const struct part nodoc[] = {{"word/styles.xml", styles_xml, sizeof styles_xml - 1}};
    expect_fail(nodoc, 1, HY_E_FORMAT, "no word/document.xml");
    static const char xxe[] =
        "<?xml version=\"1.0\"?>\n<!DOCTYPE w:document [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
        "<w:document " W "><w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p></w:body></w:document>";
    const struct part p1[] = {{"word/document.xml", xxe, sizeof xxe - 1}};
    expect_fail(p1, 1, HY_E_FORMAT, "DTD");
    static const char bad[] = "<w:document " W "><w:body><w:p></w:body>";
    const struct part p2[] = {{"word/document.xml", bad, sizeof bad - 1}};
    expect_fail(p2, 1, HY_E_FORMAT, "not well-formed");
    /* a bomb: 65 MiB of spaces deflate to a few hundred KiB */
    size_t big = (size_t)HY_DOCX_MAX_XML + (1 << 20);
    char *spaces = malloc(big);
    memset(spaces, ' ', big);
    const struct part p3[] = {{"word/document.xml", spaces, big}};
    expect_fail(p3, 1, HY_E_RANGE, "the limit");
    free(spaces);
}

int main(void)
{
    CHECK(hy_docx_available());
    test_roundtrip();
    test_untrusted();
    return test_result();
}

#else

int main(void)
{
    void *out = NULL;
    size_t n = 0;
    struct hy_err err = {{0}};
    CHECK(!hy_docx_available());
    CHECK(hy_docx_translate("x", 1, NULL, NULL, &out, &n, &err) == HY_E_UNSUPPORTED &&
          strstr(err.msg, "libzip"));
    return test_result();
}

#endif
