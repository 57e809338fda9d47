/* fuzz_segment.c: hy_seg_split and hy_seg_join on any bytes. Byte 0 chooses max_tokens
 * (1..64) and keep_lines; the rest is the text. Checks the contract of segment.h: segments
 * tile the text in order, each content is non-empty, and joining the originals gives back
 * the text byte for byte. */
#include "fuzz/fuzz_util.h"
#include "translate/segment.h"

#define CAP 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static struct hy_seg segs[CAP];
    static char out[1 << 17];
    struct hy_seg_opts o = {.max_tokens = (size_t)(data[0] & 63) + 1, .keep_lines = data[0] & 64};
    const char *text = (const char *)data + 1;
    size_t len = size - 1, n = 0, trail = 0, n_out = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_seg_split(text, len, &o, segs, CAP, &n, &trail, &err);
    if (st == HY_E_NOSPACE)
        return 0;
    FZ_ASSERT(st == HY_OK, "split: %s", err.msg);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const struct hy_seg *s = &segs[i];
        FZ_ASSERT(s->sep_off == at && s->off == s->sep_off + s->sep_len && s->len >= 1,
                  "segment %zu does not tile the text", i);
        at = s->off + s->len;
    }
    FZ_ASSERT(trail == (n ? at : trail) && trail <= len, "trailing whitespace offset");
    if (len > sizeof out)
        return 0;
    st = hy_seg_join(text, len, segs, n, trail, NULL, NULL, out, sizeof out, &n_out, &err);
    FZ_ASSERT(st == HY_OK && n_out == len && !memcmp(out, text, len), "join: %s",
              st ? err.msg : "text differs");
    return 0;
}
