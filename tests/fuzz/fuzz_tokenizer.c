/* fuzz_tokenizer.c: the tokenizer on any bytes, two ways by the first byte.
 * '{': the input is a tokenizer.json (hy_tok_load through a file): it loads or fails with
 * a message naming the file; a loaded one encodes a fixed sample and the input itself, and
 * decodes the ids again (decode accepts every id encode gives).
 * Otherwise the input is text for the tiny checkpoint's tokenizer (tests/data/tiny-mqa):
 * encode succeeds exactly when the text is valid UTF-8, with and without special tokens;
 * decode and the incremental detokenizer accept the ids and agree on the bytes. */
#include "core/utf8.h"
#include "fuzz/fuzz_util.h"
#include "tokenizer/tokenizer.h"

#define MAX_IDS 8192

static struct hy_tok *tiny;
static int32_t ids[MAX_IDS];
static char out[MAX_IDS * HY_DETOK_MAX_OUT], inc[MAX_IDS * HY_DETOK_MAX_OUT];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct hy_err err = {{0}};
    if (hy_tok_load(&tiny, HYMT_SRC_DIR "/tests/data/tiny-mqa/tokenizer.json", &err)) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    return 0;
}

static void round_trip(const struct hy_tok *t, const char *s, size_t n, bool special)
{
    size_t n_ids = 0, n_out = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_tok_encode(t, s, n, special, ids, MAX_IDS, &n_ids, &err);
    if (st == HY_E_NOSPACE)
        return;
    FZ_ASSERT((st == HY_OK) == (hy_utf8_validate(s, n) == n), "encode: %s", hy_status_str(st));
    if (st)
        return;
    st = hy_tok_decode(t, ids, n_ids, false, out, sizeof out, &n_out, &err);
    FZ_ASSERT(st == HY_OK, "decode of encoded ids: %s", err.msg);
    struct hy_detok d;
    hy_detok_init(&d, t, false);
    size_t at = 0;
    for (size_t i = 0; i < n_ids; i++) {
        int k = hy_detok_push(&d, ids[i], inc + at, sizeof inc - at);
        FZ_ASSERT(k >= 0, "detok push");
        at += (size_t)k;
    }
    int k = hy_detok_flush(&d, inc + at, sizeof inc - at);
    FZ_ASSERT(k >= 0, "detok flush");
    at += (size_t)k;
    FZ_ASSERT(at == n_out && !memcmp(inc, out, at), "detokenizer and decode disagree");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size && data[0] == '{') {
        struct hy_tok *t = NULL;
        struct hy_err err = {{0}};
        const char *path = fz_file(data, size);
        if (hy_tok_load(&t, path, &err) != HY_OK) {
            FZ_ERR_NAMES(err, path);
            return 0;
        }
        static const char sample[] = "Hello, world! 今天天气很好。 <|startoftext|> 123\n\n x";
        round_trip(t, sample, sizeof sample - 1, true);
        round_trip(t, (const char *)data, size < 2048 ? size : 2048, false);
        hy_tok_destroy(t);
        return 0;
    }
    round_trip(tiny, (const char *)data, size, true);
    round_trip(tiny, (const char *)data, size, false);
    return 0;
}
