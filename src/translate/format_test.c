/* format_test.c: the format splitters and reassembly without a model. Per format: an
 * identity "translation" gives back the input byte for byte; a marking one (each run
 * wrapped in ⟦ ⟧) gives exactly the expected document, written out by hand here, so every
 * piece of markup that must be kept and every text that must be translated is checked;
 * removing the marks gives back the input. Then names, extensions, errors. */
#include "translate/format.h"

#include "test.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static hy_status identity(void *ctx, const char *const *texts, const size_t *lens, size_t n,
                          char **outs, size_t *out_lens, struct hy_err *err)
{
    (void)ctx;
    (void)err;
    for (size_t i = 0; i < n; i++) {
        outs[i] = malloc(lens[i] + 1);
        memcpy(outs[i], texts[i], lens[i]);
        out_lens[i] = lens[i];
    }
    return HY_OK;
}

#define OPEN "\xE2\x9F\xA6"  /* ⟦ */
#define CLOSE "\xE2\x9F\xA7" /* ⟧ */

static hy_status mark(void *ctx, const char *const *texts, const size_t *lens, size_t n,
                      char **outs, size_t *out_lens, struct hy_err *err)
{
    (void)ctx;
    (void)err;
    for (size_t i = 0; i < n; i++) {
        outs[i] = malloc(lens[i] + 6);
        memcpy(outs[i], OPEN, 3);
        memcpy(outs[i] + 3, texts[i], lens[i]);
        memcpy(outs[i] + 3 + lens[i], CLOSE, 3);
        out_lens[i] = lens[i] + 6;
    }
    return HY_OK;
}

/* s without the marks. */
static char *unmark(const char *s, size_t n, size_t *out)
{
    char *r = malloc(n + 1);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 3 <= n && (!memcmp(s + i, OPEN, 3) || !memcmp(s + i, CLOSE, 3))) {
            i += 2;
            continue;
        }
        r[w++] = s[i];
    }
    *out = w;
    return r;
}

static void round_trip(enum hy_format f, const char *in, const char *want)
{
    char *out = NULL;
    size_t n = 0, len = strlen(in);
    struct hy_err err = {{0}};
    CHECKF(hy_format_translate(f, in, len, identity, NULL, &out, &n, &err) == HY_OK, "%s", err.msg);
    CHECKF(n == len && out && !memcmp(out, in, n), "%s identity changed the text",
           hy_format_name(f));
    free(out);
    CHECK(hy_format_translate(f, in, len, mark, NULL, &out, &n, &err) == HY_OK);
    CHECKF(n == strlen(want) && !memcmp(out, want, n), "%s marked:\n%.*s\nwant:\n%s",
           hy_format_name(f), (int)n, out, want);
    size_t m = 0;
    char *back = unmark(out, n, &m);
    CHECKF(m == len && !memcmp(back, in, m), "%s: the marks changed more than the text",
           hy_format_name(f));
    free(back);
    free(out);
}

static void test_markdown(void)
{
    round_trip(HY_FORMAT_MARKDOWN,
               "---\ntitle: Front matter\n---\n"
               "# Getting started #\n"
               "\n"
               "Run `make test` to check, see [the guide](https://x.org/a_(b) \"T\") or "
               "https://example.com/docs.\n"
               "An ![logo image](img/logo.png) and a [ref link][ref], footnote[^1].\n"
               "\n"
               "- first item\n"
               "- [x] done item\n"
               "  1. nested *emphasis* item\n"
               "\n"
               "> A quote with <b>inline</b> html.\n"
               "\n"
               "| Name | Value |\n"
               "|:-----|------:|\n"
               "| speed | `fast` |\n"
               "| 42 | size \\| big |\n"
               "\n"
               "```c\n"
               "int main(void) { return 0; } // not text\n"
               "```\n"
               "\n"
               "    indented code stays\n"
               "\n"
               "<div align=\"center\">\n"
               "HTML block text stays\n"
               "</div>\n"
               "\n"
               "<!-- a comment\n"
               "over lines -->\n"
               "[ref]: https://example.com \"Title\"\n"
               "[^1]: The footnote text.\n"
               "Setext heading\n"
               "==============\n"
               "Last line without a newline, see <https://auto.link>",
               "---\ntitle: Front matter\n---\n"
               "# " OPEN "Getting started" CLOSE " #\n"
               "\n"
               OPEN "Run" CLOSE " `make test` " OPEN "to check, see" CLOSE " [" OPEN "the guide"
               CLOSE "](https://x.org/a_(b) \"T\") " OPEN "or" CLOSE " https://example.com/docs" OPEN ".\n"
               "An" CLOSE " ![" OPEN "logo image" CLOSE "](img/logo.png) " OPEN "and a"
               CLOSE " [" OPEN "ref link" CLOSE "][ref]" OPEN ", footnote" CLOSE "[^1].\n"
               "\n"
               "- " OPEN "first item" CLOSE "\n"
               "- [x] " OPEN "done item" CLOSE "\n"
               "  1. " OPEN "nested *emphasis* item" CLOSE "\n"
               "\n"
               "> " OPEN "A quote with" CLOSE " <b>" OPEN "inline" CLOSE "</b> " OPEN "html."
               CLOSE "\n"
               "\n"
               "| " OPEN "Name" CLOSE " | " OPEN "Value" CLOSE " |\n"
               "|:-----|------:|\n"
               "| " OPEN "speed" CLOSE " | `fast` |\n"
               "| 42 | " OPEN "size \\| big" CLOSE " |\n"
               "\n"
               "```c\n"
               "int main(void) { return 0; } // not text\n"
               "```\n"
               "\n"
               "    indented code stays\n"
               "\n"
               "<div align=\"center\">\n"
               "HTML block text stays\n"
               "</div>\n"
               "\n"
               "<!-- a comment\n"
               "over lines -->\n"
               "[ref]: https://example.com \"Title\"\n"
               "[^1]: " OPEN "The footnote text." CLOSE "\n"
               OPEN "Setext heading" CLOSE "\n"
               "==============\n"
               OPEN "Last line without a newline, see" CLOSE " <https://auto.link>");
    /* soft-wrapped lines make one run (a list item's too); quoted lines and hard breaks
     * do not join */
    round_trip(HY_FORMAT_MARKDOWN,
               "A paragraph that\nwraps over\n  three lines.\n- item that\n  continues\n"
               "> quote one\n> quote two\nhard break  \nnext line\\\nlast\n",
               OPEN "A paragraph that\nwraps over\n  three lines." CLOSE "\n- " OPEN
               "item that\n  continues" CLOSE "\n> " OPEN "quote one" CLOSE "\n> " OPEN
               "quote two" CLOSE "\n" OPEN "hard break" CLOSE "  \n" OPEN "next line\\" CLOSE
               "\n" OPEN "last" CLOSE "\n");
    /* CRLF lines and a fence inside a list item */
    round_trip(HY_FORMAT_MARKDOWN,
               "1. Step one:\r\n\r\n   ```sh\r\n   echo hi\r\n   ```\r\n2. Step two\r\n",
               "1. " OPEN "Step one:" CLOSE "\r\n\r\n   ```sh\r\n   echo hi\r\n   ```\r\n2. " OPEN
               "Step two" CLOSE "\r\n");
}

static void test_srt(void)
{
    round_trip(HY_FORMAT_SRT,
               "\xEF\xBB\xBF" "1\n"
               "00:00:01,000 --> 00:00:04,000\n"
               "Hello there.\n"
               "How are you?\n"
               "\n"
               "2\r\n"
               "00:00:05,000 --> 00:00:06,500\r\n"
               "{\\an8}<i>Fine,</i> thanks!\r\n"
               "\r\n"
               "3\n"
               "00:00:07,000 --> 00:00:08,000\n"
               "123 456\n"
               "\n\n"
               "not a cue block\n",
               "\xEF\xBB\xBF" "1\n"
               "00:00:01,000 --> 00:00:04,000\n"
               OPEN "Hello there.\nHow are you?" CLOSE "\n"
               "\n"
               "2\r\n"
               "00:00:05,000 --> 00:00:06,500\r\n"
               "{\\an8}<i>" OPEN "Fine," CLOSE "</i> " OPEN "thanks!" CLOSE "\r\n"
               "\r\n"
               "3\n"
               "00:00:07,000 --> 00:00:08,000\n"
               "123 456\n"
               "\n\n"
               "not a cue block\n");
}

static void test_vtt(void)
{
    round_trip(HY_FORMAT_VTT,
               "WEBVTT - Some title\n"
               "Kind: captions\n"
               "\n"
               "NOTE This note stays\n"
               "over two lines\n"
               "\n"
               "STYLE\n"
               "::cue { color: red }\n"
               "\n"
               "intro\n"
               "00:00.000 --> 00:02.000 align:start position:10%\n"
               "<v Roger>Good morning,</v>\n"
               "<c.loud>everyone</c> <00:01.500>here.\n"
               "\n"
               "00:03.000 --> 00:04.000\n"
               "Second cue.",
               "WEBVTT - Some title\n"
               "Kind: captions\n"
               "\n"
               "NOTE This note stays\n"
               "over two lines\n"
               "\n"
               "STYLE\n"
               "::cue { color: red }\n"
               "\n"
               "intro\n"
               "00:00.000 --> 00:02.000 align:start position:10%\n"
               "<v Roger>" OPEN "Good morning," CLOSE "</v>\n"
               "<c.loud>" OPEN "everyone" CLOSE "</c> <00:01.500>" OPEN "here." CLOSE "\n"
               "\n"
               "00:03.000 --> 00:04.000\n"
               OPEN "Second cue." CLOSE);
}

static void test_html(void)
{
    round_trip(HY_FORMAT_HTML,
               "<!DOCTYPE html>\n"
               "<html lang=\"en\"><head><title>Page title</title>\n"
               "<style>p { color: red } /* words */</style>\n"
               "<script>var s = \"<p>not text</p>\";</script></head>\n"
               "<body>\n"
               "<!-- a comment with words -->\n"
               "<p class=intro>Hello <b>bold</b> world &amp; more.</p>\n"
               "<img src=\"a.png\" alt=\"A cat\" title='On a mat'><br/>\n"
               "<input type=\"text\" placeholder=\"Your name\" value=\"kept value\">\n"
               "<pre>  code   stays</pre><code>x = 1</code>\n"
               "<div translate=\"no\">Brand <span>Name</span></div>\n"
               "<p>First paragraph line\n"
               "\n"
               "after a blank line</p>\n"
               "<p>3 &lt; 4</p></body></html>\n",
               "<!DOCTYPE html>\n"
               "<html lang=\"en\"><head><title>" OPEN "Page title" CLOSE "</title>\n"
               "<style>p { color: red } /* words */</style>\n"
               "<script>var s = \"<p>not text</p>\";</script></head>\n"
               "<body>\n"
               "<!-- a comment with words -->\n"
               "<p class=intro>" OPEN "Hello" CLOSE " <b>" OPEN "bold" CLOSE "</b> " OPEN
               "world &amp; more." CLOSE "</p>\n"
               "<img src=\"a.png\" alt=\"" OPEN "A cat" CLOSE "\" title='" OPEN "On a mat" CLOSE
               "'><br/>\n"
               "<input type=\"text\" placeholder=\"" OPEN "Your name" CLOSE "\" value=\"kept "
               "value\">\n"
               "<pre>  code   stays</pre><code>x = 1</code>\n"
               "<div translate=\"no\">Brand <span>Name</span></div>\n"
               "<p>" OPEN "First paragraph line" CLOSE "\n"
               "\n"
               OPEN "after a blank line" CLOSE "</p>\n"
               "<p>3 &lt; 4</p></body></html>\n");
}

/* The document the tags path sends, and the output of finish for a "translation" that
 * edits that document with fn (identity, <target> wrappers, markers dropped). */
static void tags_case(const char *in, const char *want_plain, char *(*fn)(const char *, size_t),
                      const char *want_out, size_t want_tagged, size_t want_moved)
{
    struct hy_format_doc *fd = NULL;
    const char *plain = NULL;
    size_t n = 0, len = strlen(in), tagged = 0, moved = 0;
    struct hy_err err = {{0}};
    CHECKF(hy_format_doc_prepare_tags(HY_FORMAT_HTML, in, len, true, &fd, &plain, &n, &err) ==
               HY_OK, "%s", err.msg);
    if (!fd)
        return;
    CHECKF(n == strlen(want_plain) && !memcmp(plain, want_plain, n), "plain:\n%.*s\nwant:\n%s",
           (int)n, plain, want_plain);
    char *tr = fn(plain, n), *out = NULL;
    size_t out_n = 0;
    CHECKF(hy_format_doc_finish(fd, tr, strlen(tr), &out, &out_n, &err) == HY_OK, "%s", err.msg);
    CHECKF(out && out_n == strlen(want_out) && !memcmp(out, want_out, out_n),
           "out:\n%.*s\nwant:\n%s", (int)out_n, out ? out : "", want_out);
    hy_format_doc_tag_counts(fd, &tagged, &moved);
    CHECKF(tagged == want_tagged && moved == want_moved, "tagged %zu moved %zu", tagged, moved);
    free(out);
    free(tr);
    hy_format_doc_free(fd);
}

static char *same(const char *s, size_t n)
{
    return strndup(s, n);
}

/* Each run with markers (blank-line separated) wrapped in <target>...</target>, as the
 * model answers the formatted-text prompt. */
static char *wrapped(const char *s, size_t n)
{
    char *r = malloc(2 * n + 64), *w = r;
    for (size_t a = 0; a <= n;) {
        const char *e = a < n ? strstr(s + a, "\n\n") : NULL;
        size_t b = e ? (size_t)(e - s) : n;
        bool tagged = memmem(s + a, b - a, "<s", 2) != NULL;
        w += sprintf(w, "%s%.*s%s%s", tagged ? "<target>" : "", (int)(b - a), s + a,
                     tagged ? "</target>" : "", e ? "\n\n" : "");
        a = b + 2;
    }
    return r;
}

/* The markers dropped (a model that lost them), the rest upper-cased as a "translation". */
static char *lost(const char *s, size_t n)
{
    char *r = malloc(n + 1), *w = r;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<') {
            const char *e = memchr(s + i, '>', n - i);
            i = (size_t)(e - s);
            continue;
        }
        *w++ = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]);
    }
    *w = '\0';
    return r;
}

static void test_html_tags(void)
{
    const char *in = "<p class=x>Hello <b>bold <i>and</i></b> a <a href=\"u.html\">link</a>.</p>\n"
                     "<p>Broken <b>tag</p><p>No tags.</p><p><span></span></p>\n"
                     "<p><em>Only</em></p><img alt=\"A cat\"><p>x <a title=\"T\">y</a> z</p>";
    const char *plain = "Hello <s1>bold <s2>and</s2></s1> a <s3>link</s3>.\n\n"
                        "Broken\n\ntag\n\nNo tags.\n\n<s1>Only</s1>\n\nA cat\n\nx\n\nT\n\ny\n\nz";
    tags_case(in, plain, same, in, 2, 0); /* identity: the input byte for byte */
    tags_case(in, plain, wrapped, in, 2, 0);
    tags_case(in, plain, lost,
              "<p class=x><b><i><a href=\"u.html\">HELLO BOLD AND A LINK.</a></i></b></p>\n"
              "<p>BROKEN <b>TAG</p><p>NO TAGS.</p><p><span></span></p>\n"
              "<p><em>ONLY</em></p><img alt=\"A CAT\"><p>X <a title=\"T\">Y</a> Z</p>",
              2, 2);
    /* markers out of order or repeated count as lost; unknown numbers are text */
    struct hy_format_tags *t = NULL;
    char *m = NULL, *o = NULL;
    size_t mn = 0, on = 0;
    bool moved = false;
    const char *run = "a <b>b</b> <i>c</i>";
    CHECK(hy_format_tags_encode(run, strlen(run), &t, &m, &mn, NULL) == HY_OK);
    CHECK(!strcmp(m, "a <s1>b</s1> <s2>c</s2>") && hy_format_tags_count(t) == 2);
    const char *swapped = "<s2>C</s2> A <s1>B</s1> <s9>";
    CHECK(hy_format_tags_decode(t, swapped, strlen(swapped), &o, &on, &moved, NULL) == HY_OK);
    CHECKF(!moved && !strcmp(o, "<i>C</i> A <b>B</b> <s9>"), "%s", o); /* reordered: fine */
    free(o);
    const char *twice = "<s1>B</s1><s1>B</s1> <s2>C</s2>";
    CHECK(hy_format_tags_decode(t, twice, strlen(twice), &o, &on, &moved, NULL) == HY_OK);
    CHECKF(moved && !strcmp(o, "<b><i>BB C</i></b>"), "%s", o);
    free(o);
    const char *crossed = "<s1>B <s2>C</s1></s2>";
    CHECK(hy_format_tags_decode(t, crossed, strlen(crossed), &o, &on, &moved, NULL) == HY_OK);
    CHECK(moved);
    free(o);
    free(m);
    hy_format_tags_free(t);
    CHECK(hy_format_tags_encode("<b>x</i>", 8, &t, &m, &mn, NULL) == HY_E_FORMAT && !t);
    CHECK(hy_format_tags_encode("<b>x", 4, &t, &m, &mn, NULL) == HY_E_FORMAT && !t);
}

static void test_text_and_names(void)
{
    round_trip(HY_FORMAT_TEXT, "  One.\n\nTwo.\n", "  " OPEN "One.\n\nTwo." CLOSE "\n");
    round_trip(HY_FORMAT_TEXT, " \n 42 \n", " \n 42 \n");
    enum hy_format f;
    CHECK(hy_format_from_name("md", &f, NULL) == HY_OK && f == HY_FORMAT_MARKDOWN);
    CHECK(hy_format_from_name("WebVTT", &f, NULL) == HY_OK && f == HY_FORMAT_VTT);
    struct hy_err err = {{0}};
    CHECK(hy_format_from_name("docx", &f, &err) == HY_E_INVAL && strstr(err.msg, "markdown"));
    CHECK(hy_format_from_path("a/b/README.MD") == HY_FORMAT_MARKDOWN);
    CHECK(hy_format_from_path("x.markdown") == HY_FORMAT_MARKDOWN);
    CHECK(hy_format_from_path("movie.srt") == HY_FORMAT_SRT);
    CHECK(hy_format_from_path("movie.en.vtt") == HY_FORMAT_VTT);
    CHECK(hy_format_from_path("index.htm") == HY_FORMAT_HTML);
    CHECK(hy_format_from_path("notes.txt") == HY_FORMAT_TEXT);
    CHECK(hy_format_from_path("dir.md/file") == HY_FORMAT_TEXT);
    CHECK(hy_format_from_path("-") == HY_FORMAT_TEXT);
    /* runs that do not tile the text are refused */
    struct hy_format_run bad[2] = {{5, 3}, {4, 1}};
    char *out = NULL;
    size_t n = 0;
    CHECK(hy_format_join("0123456789", 10, bad, 2, NULL, NULL, &out, &n, NULL) == HY_E_INVAL);
    struct hy_format_run past[1] = {{8, 3}};
    CHECK(hy_format_join("0123456789", 10, past, 1, NULL, NULL, &out, &n, NULL) == HY_E_INVAL);
}

/* Every prefix of the documents (cut anywhere, even inside a tag or character) splits
 * into runs that tile the text: no read past the end, identity still exact. */
static void test_cuts(void)
{
    const char *docs[] = {"# T\n`a` [b](c) <d e=\"f\">g</d> http://h.i\n| j | k |\n|-|-|\n",
                          "1\n00:00:01,000 --> 00:00:02,000\n<i>x</i> {\\y}z\n",
                          "WEBVTT\n\nNOTE n\n\n00:01.000 --> 00:02.000\n<v A>b</v>\n",
                          "<p title=\"t\">a<!-- c -->b<script>d</script><x alt=e>f</p>"};
    enum hy_format fs[] = {HY_FORMAT_MARKDOWN, HY_FORMAT_SRT, HY_FORMAT_VTT, HY_FORMAT_HTML};
    int bad = 0;
    for (int d = 0; d < 4; d++) {
        size_t len = strlen(docs[d]);
        for (size_t cut = 0; cut <= len; cut++) {
            char *copy = malloc(cut ? cut : 1); /* exactly cut bytes: ASan sees overreads */
            memcpy(copy, docs[d], cut);
            char *out = NULL;
            size_t n = 0;
            if (hy_format_translate(fs[d], copy, cut, identity, NULL, &out, &n, NULL) != HY_OK ||
                n != cut || (cut && memcmp(out, copy, cut)))
                bad++;
            free(out);
            free(copy);
        }
    }
    CHECK(bad == 0);
}

/* Random documents over the characters the splitters look at: for every format the runs
 * tile the text in order, hold no blank line (hy_format_doc_translate splits at them) and
 * have no surrounding whitespace; identity and mark-then-unmark give the input back. */
static void test_random(void)
{
    static const char alpha[] = "ab c#|`[]()<>!*-_\n\n\r\t{}\\\"'=&;:/19.Tx\xC3\xA9";
    uint64_t seed = 12345;
    int bad = 0;
    char doc[400];
    for (int f = 0; f < 5; f++) {
        for (int r = 0; r < 3000; r++) {
            size_t len = 0;
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t want = (size_t)(seed >> 33) % sizeof doc;
            if (r % 7 == 0 && f == HY_FORMAT_VTT)
                len = (size_t)snprintf(doc, sizeof doc, "WEBVTT\n\n");
            while (len < want) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                doc[len++] = alpha[(seed >> 33) % (sizeof alpha - 1)];
            }
            struct hy_format_run *runs = NULL;
            size_t n = 0, at = 0;
            if (hy_format_split((enum hy_format)f, doc, len, &runs, &n, NULL) != HY_OK) {
                bad++;
                continue;
            }
            for (size_t i = 0; i < n; i++) {
                const struct hy_format_run *u = &runs[i];
                bool blank_inside = false;
                for (size_t k = u->off; k + 1 < u->off + u->len; k++)
                    blank_inside |= doc[k] == '\n' && doc[k + 1] == '\n';
                bad += u->off < at || u->len == 0 || u->off + u->len > len ||
                       (f != HY_FORMAT_TEXT && blank_inside) || doc[u->off] == ' ' ||
                       doc[u->off + u->len - 1] == ' ' || doc[u->off + u->len - 1] == '\n';
                at = u->off + u->len;
            }
            free(runs);
            char *out = NULL, *back;
            size_t m = 0, k = 0;
            if (hy_format_translate((enum hy_format)f, doc, len, mark, NULL, &out, &m, NULL)) {
                bad++;
                continue;
            }
            back = unmark(out, m, &k);
            bad += k != len || memcmp(back, doc, len);
            free(back);
            free(out);
        }
    }
    CHECKF(bad == 0, "%d random documents broke an invariant", bad);
}

int main(void)
{
    test_markdown();
    test_srt();
    test_vtt();
    test_html();
    test_html_tags();
    test_text_and_names();
    test_cuts();
    test_random();
    return test_result();
}
