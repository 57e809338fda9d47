/* fuzz_terms.c: the term and memory files a user uploads (glossary.h: CSV, TSV and TBX;
 * tm.h: TMX) on any bytes. Byte 0 chooses the format; the rest is the file. Checks the
 * contract beyond the sanitizers: a parsed glossary's every entry is non-empty, trimmed,
 * valid UTF-8 without control characters and at most HY_GLOSSARY_MAX_TERM bytes a side,
 * and matching the file's own text against it succeeds; a TMX import stores no more pairs
 * than it reports and its export writes back as many rows as the memory holds. */
#include "core/utf8.h"
#include "fuzz/fuzz_util.h"
#include "translate/glossary.h"
#include "translate/tm.h"

#include <stdbool.h>

static void check_side(const char *s, size_t n, size_t i)
{
    FZ_ASSERT(n > 0 && n <= HY_GLOSSARY_MAX_TERM && s[n] == '\0', "entry %zu: length %zu", i, n);
    FZ_ASSERT(hy_utf8_validate(s, n) == n, "entry %zu: invalid UTF-8", i);
    for (size_t k = 0; k < n; k++)
        FZ_ASSERT((unsigned char)s[k] >= 0x20 && s[k] != 0x7f, "entry %zu: a control character",
                  i);
    FZ_ASSERT(s[0] != ' ' && s[n - 1] != ' ', "entry %zu: not trimmed", i);
}

static void glossary(int fmt, const char *text, size_t len)
{
    struct hy_glossary *g = NULL;
    struct hy_err err = {{0}};
    FZ_ASSERT(hy_glossary_create(&g, &err) == HY_OK, "create: %s", err.msg);
    hy_status st;
    size_t skipped = 0;
    if (fmt == 2)
        st = hy_glossary_parse_tbx(g, text, len, "en", "de", &skipped, &err);
    else
        st = hy_glossary_parse(g, text, len, fmt ? HY_GLOSSARY_TSV : HY_GLOSSARY_CSV, &err);
    FZ_ASSERT(st == HY_OK || st == HY_E_INVAL || st == HY_E_FORMAT || st == HY_E_UNSUPPORTED,
              "parse: status %d: %s", (int)st, err.msg);
    FZ_ASSERT(st == HY_OK || err.msg[0], "an error without a message");
    size_t n = hy_glossary_size(g);
    for (size_t i = 0; i < n; i++) {
        struct hy_glossary_term t;
        hy_glossary_get(g, i, &t);
        check_side(t.src, t.src_len, i);
        check_side(t.tgt, t.tgt_len, i);
    }
    struct hy_glossary_term hits[HY_GLOSSARY_MAX_HITS];
    size_t found = 0;
    if (n && hy_utf8_validate(text, len) == len) {
        st = hy_glossary_match(g, text, len, hits, HY_GLOSSARY_MAX_HITS, &found, &err);
        FZ_ASSERT(st == HY_OK, "match: %s", err.msg);
        for (size_t i = 0; i < found && i < HY_GLOSSARY_MAX_HITS; i++)
            FZ_ASSERT(hits[i].src_len && hits[i].tgt_len, "match %zu is empty", i);
    }
    hy_glossary_destroy(g);
}

static void tmx(const char *text, size_t len)
{
    struct hy_tm *tm = NULL;
    struct hy_err err = {{0}};
    hy_status st = hy_tm_open(&tm, ":memory:", &err);
    if (st == HY_E_UNSUPPORTED) /* a build without SQLite and expat */
        return;
    FZ_ASSERT(st == HY_OK, "open: %s", err.msg);
    size_t n = 0, skipped = 0;
    st = hy_tm_import_tmx(tm, text, len, &n, &skipped, &err);
    FZ_ASSERT(st == HY_OK || st == HY_E_INVAL || st == HY_E_FORMAT || st == HY_E_UNSUPPORTED,
              "import: status %d: %s", (int)st, err.msg);
    int64_t rows = -1;
    FZ_ASSERT(hy_tm_count(tm, &rows, &err) == HY_OK, "count: %s", err.msg);
    FZ_ASSERT(rows >= 0 && (size_t)rows <= (st == HY_OK ? n : 0),
              "%lld rows stored, %zu reported", (long long)rows, st == HY_OK ? n : 0);
    FILE *f = fopen("/dev/null", "w");
    FZ_ASSERT(f, "/dev/null");
    size_t out = 0, out_skipped = 0;
    FZ_ASSERT(hy_tm_export_tmx(tm, f, &out, &out_skipped, &err) == HY_OK, "export: %s", err.msg);
    FZ_ASSERT(out + out_skipped == (size_t)rows, "export: %zu + %zu of %lld rows", out,
              out_skipped, (long long)rows);
    fclose(f);
    hy_tm_close(tm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int fmt = data[0] % 4;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (fmt == 3)
        tmx(text, len);
    else
        glossary(fmt, text, len);
    return 0;
}
