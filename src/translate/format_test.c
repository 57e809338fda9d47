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
    test_text_and_names();
    test_cuts();
    test_random();
    return test_result();
}
