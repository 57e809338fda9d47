/* gemm_avx512.c: the prefill GEMM of Q4_G128 weights against int8 activations (AVX-512
 * VNNI + BW), through a packed copy of a 32-row panel of weights.
 *
 * The 4x4 tile kernel (kernels_avx512.c) keeps 16 columns of one row in a vector and needs,
 * per 128-value group, token and row, two vpdpbusd, a conversion, a broadcast scale product
 * and an FMA: half of the multiply pipes' work was bookkeeping. Here a vector's 16 int32
 * lanes are 16 rows instead: the panel is unpacked once per call into nibble bytes in the
 * VNNI order [group][quad of 4 columns][32 rows][4 bytes] (+ the rows' 32 float scales a
 * group), and each vpdpbusd multiplies 4 columns of 16 rows by the same 4 activation bytes
 * of one token, broadcast from memory. The 4 tokens x 32 rows register tile holds 8 int32
 * and 8 float accumulators: 256 vpdpbusd a group, then per token and half-panel one
 * conversion and two FMAs. Rows end up in lanes, so no horizontal sums, and y's 32 outputs
 * of a token are one masked vector store.
 *
 * Each output (row r, token t) is computed in its own lane with the same operations
 * whatever the other rows and tokens of the tile are (rows past nr are zeros): a token's
 * results do not depend on the batch it came in, nor a row's on the thread that ran it. */
#include "backend/cpu/cpu_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TARGETG __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma,f16c")))
#define INLG static inline __attribute__((always_inline)) TARGETG

#define GB sizeof(struct hy_q4_g128_block) /* 66 */
/* Bytes of one group of a packed panel: 32 quads x 32 rows x 4 nibble bytes, 32 scales. */
#define PACK_GROUP (32 * HY_CPU_PANEL * 4 + HY_CPU_PANEL * 4)
_Static_assert(HY_CPU_PANEL == 32, "the kernels below hold a panel in two vectors");
_Static_assert(PACK_GROUP % 64 == 0, "packed groups stay 64-byte aligned");
_Static_assert(PACK_GROUP <= HY_CPU_PACK_GROUP_MAX, "the pack buffers hold a packed group");

/* Transposes 16 rows of 16 dwords in place (r[i][j] -> r[j][i]): 32-bit, then 64-bit
 * interleaves within 128-bit lanes, then two rounds of lane shuffles. */
INLG void transpose16(__m512i r[16])
{
    __m512i b[16], c[16];
    for (int i = 0; i < 16; i += 2) {
        b[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        b[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* c[4m + k], lane L: rows 4m..4m+3 of column 4L + k */
    for (int m = 0; m < 16; m += 4) {
        c[m] = _mm512_unpacklo_epi64(b[m], b[m + 2]);
        c[m + 1] = _mm512_unpackhi_epi64(b[m], b[m + 2]);
        c[m + 2] = _mm512_unpacklo_epi64(b[m + 1], b[m + 3]);
        c[m + 3] = _mm512_unpackhi_epi64(b[m + 1], b[m + 3]);
    }
    for (int k = 0; k < 4; k++) {
        __m512i e0 = _mm512_shuffle_i32x4(c[k], c[4 + k], 0x44);
        __m512i e1 = _mm512_shuffle_i32x4(c[k], c[4 + k], 0xEE);
        __m512i f0 = _mm512_shuffle_i32x4(c[8 + k], c[12 + k], 0x44);
        __m512i f1 = _mm512_shuffle_i32x4(c[8 + k], c[12 + k], 0xEE);
        r[k] = _mm512_shuffle_i32x4(e0, f0, 0x88);
        r[4 + k] = _mm512_shuffle_i32x4(e0, f0, 0xDD);
        r[8 + k] = _mm512_shuffle_i32x4(e1, f1, 0x88);
        r[12 + k] = _mm512_shuffle_i32x4(e1, f1, 0xDD);
    }
}

/* Rows h*16 .. h*16+15 of group g: the 64 nibble bytes of each row transposed as 16
 * dwords (dword j: bytes 4j..4j+3 of each row), then split: low nibbles are columns
 * 4j..4j+3 (quad j), high nibbles columns 64+4j.. (quad 16+j). */
INLG void pack_half(unsigned char *pg, const unsigned char *w, size_t stride, int nr, int64_t g,
                    int h)
{
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i v[16];
    uint16_t d[16]; /* the fp16 scales, converted together */
    for (int i = 0; i < 16; i++) {
        int r = 16 * h + i;
        if (r < nr) {
            const unsigned char *blk = w + (size_t)r * stride + (size_t)g * GB;
            memcpy(&d[i], blk, 2);
            v[i] = _mm512_loadu_si512((const void *)(blk + 2));
        } else {
            d[i] = 0;
            v[i] = _mm512_setzero_si512();
        }
    }
    _mm512_store_ps(pg + 32 * HY_CPU_PANEL * 4 + 64 * h,
                    _mm512_cvtph_ps(_mm256_loadu_si256((const void *)d)));
    transpose16(v);
    for (int q = 0; q < 16; q++) {
        _mm512_store_si512((void *)(pg + q * 128 + 64 * h), _mm512_and_si512(v[q], m4));
        _mm512_store_si512((void *)(pg + (16 + q) * 128 + 64 * h),
                           _mm512_and_si512(_mm512_srli_epi16(v[q], 4), m4));
    }
}

TARGETG static void pack_g128(void *buf, const void *w, size_t stride, int nr, int64_t n)
{
    HY_ASSERT(nr >= 1 && nr <= HY_CPU_PANEL && n % 128 == 0);
    for (int64_t g = 0; g < n / 128; g++) {
        unsigned char *pg = (unsigned char *)buf + g * PACK_GROUP;
        pack_half(pg, w, stride, nr, g, 0);
        pack_half(pg, w, stride, nr, g, 1);
    }
}

/* The sum of group g's four activation chunk sums (d_x * sum q), as in kernels_avx512.c. */
INLG float asum128(const struct hy_cpu_xq *x, int64_t g)
{
    const float *s = x->s + 4 * g;
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* M tokens (a compile-time constant after inlining) x the panel. Per group and lane:
 * f += d_w * (d_x * I - 8 * S), I the exact integer dot of nibbles and activations, S the
 * group's activation sum (the nibbles' offset of 8). */
INLG void gemm_tile(float *y, int64_t ys, const struct hy_cpu_xq *x, const unsigned char *buf,
                    int nr, int64_t n, bool add, const int M)
{
    __m512 f[4][2];
#pragma GCC unroll 4
    for (int t = 0; t < M; t++)
        f[t][0] = f[t][1] = _mm512_setzero_ps();
    for (int64_t g = 0; g < n / 128; g++) {
        const unsigned char *pg = buf + g * PACK_GROUP;
        const int8_t *xq[4];
        __m512i a[4][2];
#pragma GCC unroll 4
        for (int t = 0; t < M; t++) {
            xq[t] = x[t].q + 128 * g;
            a[t][0] = a[t][1] = _mm512_setzero_si512();
        }
#pragma GCC unroll 4
        for (int q = 0; q < 32; q++) {
            __m512i w0 = _mm512_load_si512((const void *)(pg + q * 128));
            __m512i w1 = _mm512_load_si512((const void *)(pg + q * 128 + 64));
#pragma GCC unroll 4
            for (int t = 0; t < M; t++) {
                int32_t v;
                memcpy(&v, xq[t] + 4 * q, 4);
                __m512i xb = _mm512_set1_epi32(v);
                a[t][0] = _mm512_dpbusd_epi32(a[t][0], w0, xb);
                a[t][1] = _mm512_dpbusd_epi32(a[t][1], w1, xb);
            }
        }
        const float *dwp = (const float *)(pg + 32 * HY_CPU_PANEL * 4);
        __m512 dw0 = _mm512_load_ps(dwp), dw1 = _mm512_load_ps(dwp + 16);
#pragma GCC unroll 4
        for (int t = 0; t < M; t++) {
            __m512 dx = _mm512_set1_ps(x[t].d[4 * g]);
            __m512 s8 = _mm512_set1_ps(8.0f * asum128(&x[t], g));
            f[t][0] = _mm512_fmadd_ps(_mm512_fmsub_ps(_mm512_cvtepi32_ps(a[t][0]), dx, s8), dw0,
                                      f[t][0]);
            f[t][1] = _mm512_fmadd_ps(_mm512_fmsub_ps(_mm512_cvtepi32_ps(a[t][1]), dx, s8), dw1,
                                      f[t][1]);
        }
    }
    __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xFFFF : (1u << nr) - 1);
    __mmask16 m1 = (__mmask16)(nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (1u << (nr - 16)) - 1);
#pragma GCC unroll 4
    for (int t = 0; t < M; t++) {
        float *yt = y + t * ys;
        __m512 v0 = f[t][0], v1 = f[t][1];
        if (add) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, yt));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, yt + 16));
        }
        _mm512_mask_storeu_ps(yt, m0, v0);
        _mm512_mask_storeu_ps(yt + 16, m1, v1);
    }
}

TARGETG static void gemm_g128(float *y, int64_t ys, const struct hy_cpu_xq *x, int nt,
                              const void *buf, int nr, int64_t n, bool add)
{
    HY_ASSERT(nt >= 1 && nt <= HY_CPU_GEMM_TOKENS && nr >= 1 && nr <= HY_CPU_PANEL);
    switch (nt) {
    case 1: gemm_tile(y, ys, x, buf, nr, n, add, 1); break;
    case 2: gemm_tile(y, ys, x, buf, nr, n, add, 2); break;
    case 3: gemm_tile(y, ys, x, buf, nr, n, add, 3); break;
    default: gemm_tile(y, ys, x, buf, nr, n, add, 4); break;
    }
}

void hy_cpu_gemm_avx512(struct hy_cpu_kernels *k)
{
    k->mm[HY_DTYPE_Q4_G128].q_pack = pack_g128;
    k->mm[HY_DTYPE_Q4_G128].q_gemm = gemm_g128;
    k->mm[HY_DTYPE_Q4_G128].pack_group_bytes = PACK_GROUP;
}

#else

void hy_cpu_gemm_avx512(struct hy_cpu_kernels *k)
{
    (void)k;
}

#endif
