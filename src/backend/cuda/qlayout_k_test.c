/* qlayout_k_test.c: the CUDA backend's Q4_K / Q6_K device layouts (qlayout_k.h) on the CPU,
 * in every build (no CUDA needed): the repack against the GGUF blocks it came from (from an
 * unaligned source), the sizes and 16-byte alignment of every array, and a C model of the
 * index math of qmatmul_k.cu's kernels, read from the repacked bytes:
 *  - the GEMV's work units (Q4_K: 16 quant bytes; Q6_K: 64 weights from three 16-byte
 *    pieces), taken apart with the same 32-bit masks and shifts as the kernel, must cover
 *    each column of a row exactly once, with the scale/min the host uses there, so that
 *    d*sc*q - dmin*m (Q4_K) or d*sc*(q-32) (Q6_K) equals hy_q{4,6}_k_dequantize_row's value;
 *  - k_elems8 (row dequantization and embedding) must give the host's values bit for bit.
 * The kernels themselves run in cuda_kquant_test (label cuda). */
#include "backend/cuda/qlayout_k.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float urand(void) /* [-1, 1), never 0 */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) + 0.5) / (float)(1 << 23) - 1.0f;
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* As the kernel's q4k_scale_min, from the header words y, z, w (bytes 4..15). */
static void dev_scale_min(const uint32_t h[4], int j, int *sc, int *m)
{
    if (j < 4) {
        int s = 8 * j;
        *sc = (int)((h[1] >> s) & 63u);
        *m = (int)((h[2] >> s) & 63u);
    } else {
        int s = 8 * (j - 4);
        *sc = (int)(((h[3] >> s) & 15u) | ((h[1] >> (s + 6)) & 3u) << 4);
        *m = (int)(((h[3] >> (s + 4)) & 15u) | ((h[2] >> (s + 6)) & 3u) << 4);
    }
}

static float dev_q6k_sc(uint32_t s, int byte)
{
    int v = (int)((s >> (8 * byte)) & 0xffu);
    return (float)(v - ((v & 0x80) << 1));
}

/* Records column c's value; counts a column seen twice or a value unlike the host's. */
static void put(float *got, int *seen, int64_t c, float v, const float *want, int *bad)
{
    if (seen[c]++ || memcmp(&v, &want[c], sizeof v) != 0)
        if ((*bad)++ < 5)
            fprintf(stderr, "  column %lld: value %.9g want %.9g (seen %d)\n", (long long)c, v,
                    want[c], seen[c]);
    got[c] = v;
}

/* The GEMV's units of row r of a Q4_K matrix in the device layout. */
static int gemv_units_q4k(const unsigned char *dev, int64_t cols, int64_t r, const float *want)
{
    const int nsb = (int)(cols / HY_QK_SUPER);
    const unsigned char *wr = dev + (size_t)r * (size_t)nsb * HY_QK_Q4K_BYTES;
    float *got = calloc((size_t)cols, sizeof *got);
    int *seen = calloc((size_t)cols, sizeof *seen), bad = 0;
    for (int k = 0; k < nsb * 8; k++) {
        const int sb = k >> 3, p = k & 7, i = p >> 1;
        const unsigned char *piece = wr + sb * HY_QK_Q4K_BYTES + HY_QK_Q4K_HEAD + 16 * p;
        const unsigned char *head = wr + sb * HY_QK_Q4K_BYTES;
        CHECK(((uintptr_t)piece - (uintptr_t)dev) % 16 == 0 && ((uintptr_t)head - (uintptr_t)dev) % 16 == 0);
        uint32_t h[4] = {rd32(head), rd32(head + 4), rd32(head + 8), rd32(head + 12)};
        const float d = hy_f16_to_f32((uint16_t)(h[0] & 0xffff)), dmin = hy_f16_to_f32((uint16_t)(h[0] >> 16));
        int sc0, m0, sc1, m1;
        dev_scale_min(h, 2 * i, &sc0, &m0);
        dev_scale_min(h, 2 * i + 1, &sc1, &m1);
        const float ds0 = d * (float)sc0, dm0 = dmin * (float)m0;
        const float ds1 = d * (float)sc1, dm1 = dmin * (float)m1;
        const int64_t c0 = (int64_t)sb * HY_QK_SUPER + 64 * i + 16 * (p & 1);
        for (int wd = 0; wd < 4; wd++) {
            const uint32_t u = rd32(piece + 4 * wd);
            const uint32_t lo = u & 0x0F0F0F0Fu, hi = (u >> 4) & 0x0F0F0F0Fu;
            for (int n = 0; n < 4; n++) {
                put(got, seen, c0 + 4 * wd + n, ds0 * (float)((lo >> (8 * n)) & 0xff) - dm0, want, &bad);
                put(got, seen, c0 + 32 + 4 * wd + n, ds1 * (float)((hi >> (8 * n)) & 0xff) - dm1, want, &bad);
            }
        }
    }
    for (int64_t c = 0; c < cols; c++)
        bad += seen[c] != 1;
    free(got);
    free(seen);
    return bad;
}

/* The GEMV's units of row r of a Q6_K matrix (rows x cols) in the device layout. */
static int gemv_units_q6k(const unsigned char *dev, int64_t rows, int64_t cols, int64_t r,
                          const float *want)
{
    const int nsb = (int)(cols / HY_QK_SUPER);
    const size_t nb = hy_qk_blocks(rows, cols);
    const unsigned char *scales = dev + hy_qk_q6k_scales_at(nb), *dd = dev + hy_qk_q6k_d_at(nb);
    const int64_t rb = r * nsb;
    float *got = calloc((size_t)cols, sizeof *got);
    int *seen = calloc((size_t)cols, sizeof *seen), bad = 0;
    for (int k = 0; k < nsb * 4; k++) {
        const int sb = k >> 2, h = (k >> 1) & 1, o = k & 1, l0 = 16 * o;
        const unsigned char *q = dev + (size_t)(rb + sb) * HY_QK_Q6K_QBYTES;
        const unsigned char *pa = q + 64 * h + l0, *pb = q + 64 * h + 32 + l0, *ph = q + 128 + 32 * h + l0;
        const unsigned char *ps = scales + (size_t)(rb + sb) * HY_QK_Q6K_NSC + 8 * h;
        CHECK((size_t)(pa - dev) % 16 == 0 && (size_t)(pb - dev) % 16 == 0 &&
              (size_t)(ph - dev) % 16 == 0 && (size_t)(ps - dev) % 8 == 0);
        const uint32_t sx = rd32(ps), sy = rd32(ps + 4);
        const float d = hy_f16_to_f32((uint16_t)(dd[2 * (rb + sb)] | dd[2 * (rb + sb) + 1] << 8));
        const float ds[4] = {d * dev_q6k_sc(sx, o), d * dev_q6k_sc(sx, o + 2),
                             d * dev_q6k_sc(sy, o), d * dev_q6k_sc(sy, o + 2)};
        const int64_t cb = (int64_t)sb * HY_QK_SUPER + 128 * h + l0;
        for (int wd = 0; wd < 4; wd++)
            for (int g = 0; g < 2; g++) {
                const uint32_t a = rd32(pa + 4 * wd), b = rd32(pb + 4 * wd), hq = rd32(ph + 4 * wd);
                uint32_t q0, q1;
                if (g == 0) {
                    q0 = (a & 0x0F0F0F0Fu) | ((hq << 4) & 0x30303030u);
                    q1 = (b & 0x0F0F0F0Fu) | ((hq << 2) & 0x30303030u);
                } else {
                    q0 = ((a >> 4) & 0x0F0F0F0Fu) | (hq & 0x30303030u);
                    q1 = ((b >> 4) & 0x0F0F0F0Fu) | ((hq >> 2) & 0x30303030u);
                }
                for (int n = 0; n < 4; n++) {
                    const int64_t c = cb + 64 * g + 4 * wd + n;
                    put(got, seen, c, ds[2 * g] * (float)((int)((q0 >> (8 * n)) & 0xff) - 32), want, &bad);
                    put(got, seen, c + 32, ds[2 * g + 1] * (float)((int)((q1 >> (8 * n)) & 0xff) - 32), want, &bad);
                }
            }
    }
    for (int64_t c = 0; c < cols; c++)
        bad += seen[c] != 1;
    free(got);
    free(seen);
    return bad;
}

/* k_elems8: elements c .. c+7 of row r from the device layout, as the kernel computes them. */
static void elems8(const unsigned char *w, bool q6, int64_t rows, int64_t cols, int64_t r, int c,
                   float *y)
{
    const int64_t b = r * (cols / HY_QK_SUPER) + c / HY_QK_SUPER;
    const int e = c % HY_QK_SUPER;
    if (!q6) {
        const unsigned char *blk = w + b * HY_QK_Q4K_BYTES;
        uint32_t h[4] = {rd32(blk), rd32(blk + 4), rd32(blk + 8), rd32(blk + 12)};
        const int j = e / 32;
        int sc, m;
        dev_scale_min(h, j, &sc, &m);
        const float ds = hy_f16_to_f32((uint16_t)(h[0] & 0xffff)) * (float)sc;
        const float dm = hy_f16_to_f32((uint16_t)(h[0] >> 16)) * (float)m;
        const unsigned char *q = blk + HY_QK_Q4K_HEAD + 32 * (j >> 1) + e % 32;
        const uint32_t qx = rd32(q), qy = rd32(q + 4);
        for (int n = 0; n < 8; n++) {
            uint32_t byte = ((n < 4 ? qx : qy) >> (8 * (n & 3))) & 0xffu;
            y[n] = ds * (float)((byte >> (4 * (j & 1))) & 15u) - dm;
        }
    } else {
        const size_t nb = hy_qk_blocks(rows, cols);
        const int h = e >> 7, k = (e & 127) >> 5, l = e & 31;
        const unsigned char *q = w + b * HY_QK_Q6K_QBYTES;
        const unsigned char *pl = q + 64 * h + 32 * (k & 1) + l, *ph = q + 128 + 32 * h + l;
        const uint32_t lx = rd32(pl), ly = rd32(pl + 4), hx = rd32(ph), hy = rd32(ph + 4);
        const int sc = (int)(signed char)w[hy_qk_q6k_scales_at(nb) + (size_t)b * HY_QK_Q6K_NSC + 8 * h + l / 16 + 2 * k];
        const unsigned char *pd = w + hy_qk_q6k_d_at(nb) + 2 * b;
        const float ds = hy_f16_to_f32((uint16_t)(pd[0] | pd[1] << 8)) * (float)sc;
        for (int n = 0; n < 8; n++) {
            const int s = 8 * (n & 3);
            const uint32_t lo = ((n < 4 ? lx : ly) >> s >> (4 * (k >> 1))) & 15u;
            const uint32_t hi = ((n < 4 ? hx : hy) >> s >> (2 * k)) & 3u;
            y[n] = ds * (float)((int)(lo | hi << 4) - 32);
        }
    }
}

static void layout_case(bool q6, int64_t rows, int64_t cols)
{
    const char *name = q6 ? "Q6_K" : "Q4_K";
    const enum hy_dtype dt = q6 ? HY_DTYPE_Q6_K : HY_DTYPE_Q4_K;
    const size_t rb = hy_dtype_row_bytes(dt, cols), nb = hy_qk_blocks(rows, cols);
    const size_t bytes = hy_qk_bytes(q6, rows, cols);
    CHECKF(bytes == rb * (size_t)rows, "%s %lldx%lld: %zu device bytes, blocks %zu", name,
           (long long)rows, (long long)cols, bytes, rb * (size_t)rows);
    CHECK(hy_qk_q6k_scales_at(nb) % 16 == 0 && hy_qk_q6k_d_at(nb) % 16 == 0);
    unsigned char *host = malloc(rb * (size_t)rows + 1), *src = host + 1; /* unaligned */
    unsigned char *dev = malloc(bytes);
    float *row = malloc((size_t)cols * sizeof *row), *want = malloc((size_t)cols * sizeof *want);
    for (int64_t r = 0; r < rows; r++) {
        const float s = ldexpf(1.0f, (int)(r % 5) - 2);
        for (int64_t c = 0; c < cols; c++)
            row[c] = s * urand();
        if (q6)
            hy_q6_k_quantize_row(src + (size_t)r * rb, row, cols);
        else
            hy_q4_k_quantize_row(src + (size_t)r * rb, row, cols);
    }
    memset(dev, 0xA5, bytes);
    hy_qk_repack(dev, src, q6, rows, cols);
    /* the bytes: every block's parts where the layout says */
    int moved = 0;
    for (size_t i = 0; i < nb; i++) {
        const unsigned char *b = src + i * (q6 ? HY_QK_Q6K_BYTES : HY_QK_Q4K_BYTES);
        if (!q6) {
            moved += memcmp(dev + i * HY_QK_Q4K_BYTES, b, HY_QK_Q4K_BYTES) != 0;
            continue;
        }
        moved += memcmp(dev + i * HY_QK_Q6K_QBYTES, b, HY_QK_Q6K_QBYTES) != 0;
        moved += memcmp(dev + hy_qk_q6k_scales_at(nb) + i * HY_QK_Q6K_NSC, b + 192, 16) != 0;
        moved += memcmp(dev + hy_qk_q6k_d_at(nb) + 2 * i, b + 208, 2) != 0;
    }
    CHECKF(moved == 0, "%s %lldx%lld: %d block parts misplaced", name, (long long)rows,
           (long long)cols, moved);
    int bad_units = 0, bad_elems = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (q6)
            hy_q6_k_dequantize_row(want, src + (size_t)r * rb, cols);
        else
            hy_q4_k_dequantize_row(want, src + (size_t)r * rb, cols);
        bad_units += q6 ? gemv_units_q6k(dev, rows, cols, r, want)
                        : gemv_units_q4k(dev, cols, r, want);
        for (int c = 0; c < cols; c += 8) {
            float y[8];
            elems8(dev, q6, rows, cols, r, c, y);
            bad_elems += memcmp(y, want + c, sizeof y) != 0;
        }
    }
    CHECKF(bad_units == 0, "%s %lldx%lld: the GEMV's units: %d columns wrong", name,
           (long long)rows, (long long)cols, bad_units);
    CHECKF(bad_elems == 0, "%s %lldx%lld: k_elems8: %d groups of 8 differ from the host", name,
           (long long)rows, (long long)cols, bad_elems);
    free(host);
    free(dev);
    free(row);
    free(want);
}

int main(void)
{
    static const int64_t shapes[][2] = {{1, 256}, {3, 512}, {7, 1024}, {13, 768}, {2, 4096}};
    for (int q6 = 0; q6 < 2; q6++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            layout_case(q6 != 0, shapes[s][0], shapes[s][1]);
    return test_result();
}
