/* fuzz_format.c: the document formats' splitters and reassembly (translate/format.h) on any
 * bytes. Byte 0 chooses the format (text, markdown, srt, vtt, html) and whether HTML runs
 * keep their inline tags; the rest is the document. Checks format.h's contract: runs lie
 * within the text, ascending, never overlapping, non-empty, trimmed, without a blank line;
 * joining with every run kept gives the text back byte for byte, and with every run
 * replaced the markup around them is exactly what was outside the runs; the prepared plain
 * document, handed back as its own translation, reassembles without a crash (HY_OK or
 * HY_E_FORMAT); a run's inline tags encoded as <sN> markers decode back to the run. */
#include "fuzz/fuzz_util.h"
#include "translate/format.h"

#include <stdbool.h>

static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void check_runs(const char *text, size_t len, const struct hy_format_run *r, size_t n)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        FZ_ASSERT(r[i].len > 0 && r[i].off >= at && r[i].off + r[i].len <= len,
                  "run %zu [%zu, +%zu) not ascending within %zu", i, r[i].off, r[i].len, len);
        const char *s = text + r[i].off;
        FZ_ASSERT(!space(s[0]) && !space(s[r[i].len - 1]), "run %zu is not trimmed", i);
        at = r[i].off + r[i].len;
    }
}

/* Every run replaced by "#": the output is the markup outside the runs with a '#' each. */
static void check_replaced(const char *text, size_t len, const struct hy_format_run *r,
                           size_t n)
{
    const char **outs = malloc((n + 1) * sizeof *outs);
    size_t *lens = malloc((n + 1) * sizeof *lens);
    FZ_ASSERT(outs && lens, "out of memory");
    for (size_t i = 0; i < n; i++)
        outs[i] = "#", lens[i] = 1;
    char *out = NULL;
    size_t out_len = 0, at = 0, o = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_format_join(text, len, r, n, outs, lens, &out, &out_len, &err);
    FZ_ASSERT(st == HY_OK, "join replaced: %s", err.msg);
    for (size_t i = 0; i <= n; i++) {
        size_t end = i < n ? r[i].off : len;
        FZ_ASSERT(o + (end - at) <= out_len && !memcmp(out + o, text + at, end - at),
                  "markup before run %zu changed", i);
        o += end - at;
        if (i < n) {
            FZ_ASSERT(o < out_len && out[o] == '#', "run %zu not replaced", i);
            o++;
            at = r[i].off + r[i].len;
        }
    }
    FZ_ASSERT(o == out_len, "join replaced: %zu bytes, expected %zu", out_len, o);
    free(out);
    free(outs);
    free(lens);
}

static void check_tags(const char *text, const struct hy_format_run *r, size_t n)
{
    for (size_t i = 0; i < n && i < 16; i++) {
        struct hy_format_tags *tags = NULL;
        char *enc = NULL, *dec = NULL;
        size_t enc_len = 0, dec_len = 0;
        bool moved = true;
        struct hy_err err = {{0}};
        if (hy_format_tags_encode(text + r[i].off, r[i].len, &tags, &enc, &enc_len, &err))
            continue; /* tags that do not pair: the run goes without markers */
        hy_status st = hy_format_tags_decode(tags, enc, enc_len, &dec, &dec_len, &moved, &err);
        FZ_ASSERT(st == HY_OK && !moved && dec_len == r[i].len &&
                      !memcmp(dec, text + r[i].off, dec_len),
                  "run %zu: its own markers do not decode back to it", i);
        free(dec);
        free(enc);
        hy_format_tags_free(tags);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum hy_format f = (enum hy_format)(data[0] % 5);
    bool inline_tags = data[0] & 8;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct hy_format_run *runs = NULL;
    size_t n = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_format_split(f, text, len, &runs, &n, &err);
    FZ_ASSERT(st == HY_OK, "split: %s", err.msg);
    check_runs(text, len, runs, n);
    char *out = NULL;
    size_t out_len = 0;
    st = hy_format_join(text, len, runs, n, NULL, NULL, &out, &out_len, &err);
    FZ_ASSERT(st == HY_OK && out_len == len && !memcmp(out, text, len), "join kept: %s",
              st ? err.msg : "text differs");
    free(out);
    check_replaced(text, len, runs, n);
    if (f == HY_FORMAT_HTML)
        check_tags(text, runs, n);
    free(runs);

    struct hy_format_doc *fd = NULL;
    const char *plain = NULL;
    size_t plain_len = 0;
    st = hy_format_doc_prepare_tags(f, text, len, inline_tags, &fd, &plain, &plain_len, &err);
    if (st == HY_OK) {
        out = NULL;
        st = hy_format_doc_finish(fd, plain, plain_len, &out, &out_len, &err);
        FZ_ASSERT(st == HY_OK || st == HY_E_FORMAT, "finish: %s", err.msg);
        free(out);
        hy_format_doc_free(fd);
    } else {
        FZ_ASSERT(st == HY_E_NOMEM || st == HY_E_INVAL, "prepare: %s", err.msg);
    }
    return 0;
}
