/* gemm_gguf_avx512.c: the prefill GEMM of the GGUF block types (Q4_0, Q8_0, Q4_K, Q6_K)
 * against int8 activations per 32 values (AVX-512 VNNI + BW), through a packed copy of a
 * 32-row panel, as gemm_avx512.c does for Q4_G128: a vector's 16 int32 lanes are 16 rows,
 * each vpdpbusd multiplies 4 columns of 16 rows by the same 4 activation bytes of one
 * token, and the 4 tokens x 32 rows tile stays in registers.
 *
 * The panel is unpacked once per call into signed weight bytes, per sub-block of C columns
 * (C = 32; Q6_K, whose scales cover 16 values, 16): [C/4 quads][32 rows][4 bytes], then the
 * rows' 32 float scales, 32 int32 biases and (Q4_K) 32 float mins. vpdpbusd multiplies
 * unsigned by signed bytes, so the activations go in as unsigned, q + 128 (q ^ 0x80, made
 * per call in a small buffer), and each sub-block's integer accumulator starts at the
 * row's bias, -128 * (sum of its weights): it ends at the exact signed dot product. Per
 * sub-block, token and half-panel: one conversion, one product of the row scales with the
 * token's scale, one FMA; Q4_K adds its mins times the activation sum (x->s), one FMA.
 *
 * Each output (row r, token t) is computed in its own lane with the same operations
 * whatever the other rows and tokens of the tile are (rows past nr are zeros): a token's
 * results do not depend on the batch it came in, nor a row's on the thread that ran it. */
#include "backend/cpu/cpu_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TARGETG __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma,f16c")))
#define INLG static inline __attribute__((always_inline)) TARGETG

_Static_assert(HY_CPU_PANEL == 32, "the kernels below hold a panel in two vectors");

/* Bytes of a packed sub-block of C columns: weights, scales, biases (and mins). */
#define SUB_BYTES(C, MIN) ((size_t)(C) * HY_CPU_PANEL + 2 * 4 * HY_CPU_PANEL + ((MIN) ? 4 * HY_CPU_PANEL : 0))
#define GROUP_BYTES(C, MIN) ((128 / (C)) * SUB_BYTES(C, MIN))
_Static_assert(GROUP_BYTES(16, 0) <= HY_CPU_PACK_GROUP_MAX && GROUP_BYTES(32, 1) <= HY_CPU_PACK_GROUP_MAX,
               "the pack buffers hold a packed group");
_Static_assert(SUB_BYTES(16, 0) % 64 == 0 && SUB_BYTES(32, 1) % 64 == 0 && SUB_BYTES(32, 0) % 64 == 0,
               "packed sub-blocks stay 64-byte aligned");

/* Activation columns made unsigned at a time (4 tokens: 2 KiB of stack). */
#define XU_COLS 512

INLG float f16_at(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* Transposes 16 rows of 16 dwords in place (as gemm_avx512.c). */
INLG void transpose16(__m512i r[16])
{
    __m512i b[16], c[16];
    for (int i = 0; i < 16; i += 2) {
        b[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        b[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
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

/* Columns [c, c+64) of one row (c a multiple of 64) as 64 signed bytes in column order, the
 * scales of its sub-blocks (2 of 32 columns, or Q6_K's 4 of 16) and Q4_K's mins (as the
 * dequantizer's value: value = sc * q + mn). */
INLG __m512i row64(enum hy_dtype dt, const unsigned char *row, int64_t c, float sc[4], float mn[2])
{
    if (dt == HY_DTYPE_Q4_0) { /* [lo0 hi0 lo1 hi1]: nibbles of the two blocks, minus 8 */
        const unsigned char *b0 = row + (size_t)(c / 32) * sizeof(struct hy_q4_0_block);
        const unsigned char *b1 = b0 + sizeof(struct hy_q4_0_block);
        __m128i v0 = _mm_loadu_si128((const void *)(b0 + 2)), v1 = _mm_loadu_si128((const void *)(b1 + 2));
        __m512i v = _mm512_inserti32x4(_mm512_castsi128_si512(v0), v0, 1);
        v = _mm512_inserti32x4(_mm512_inserti32x4(v, v1, 2), v1, 3);
        v = _mm512_mask_blend_epi64(0xCC, v, _mm512_srli_epi16(v, 4));
        sc[0] = f16_at(b0);
        sc[1] = f16_at(b1);
        return _mm512_sub_epi8(_mm512_and_si512(v, _mm512_set1_epi8(15)), _mm512_set1_epi8(8));
    }
    if (dt == HY_DTYPE_Q8_0) {
        const unsigned char *b0 = row + (size_t)(c / 32) * sizeof(struct hy_q8_0_block);
        const unsigned char *b1 = b0 + sizeof(struct hy_q8_0_block);
        sc[0] = f16_at(b0);
        sc[1] = f16_at(b1);
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)(b0 + 2))),
                                  _mm256_loadu_si256((const void *)(b1 + 2)), 1);
    }
    const __m256i m4 = _mm256_set1_epi8(15);
    if (dt == HY_DTYPE_Q4_K) { /* sub-block pair i: low nibbles sub-block 2i, high 2i+1 */
        const unsigned char *blk = row + (size_t)(c / HY_QK_K) * sizeof(struct hy_q4_k_block);
        int i = (int)(c % HY_QK_K) / 64, s0, m0, s1, m1;
        float d = f16_at(blk), dmin = f16_at(blk + 2);
        hy_q4_k_scale_min(2 * i, blk + 4, &s0, &m0);
        hy_q4_k_scale_min(2 * i + 1, blk + 4, &s1, &m1);
        sc[0] = d * (float)s0;
        sc[1] = d * (float)s1;
        mn[0] = -(dmin * (float)m0);
        mn[1] = -(dmin * (float)m1);
        __m256i v = _mm256_loadu_si256((const void *)(blk + 16 + 32 * i));
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, m4)),
                                  _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), 1);
    }
    /* Q6_K: half h of the super-block, quarter pair v (values 64v..64v+63 of the half) */
    const unsigned char *blk = row + (size_t)(c / HY_QK_K) * sizeof(struct hy_q6_k_block);
    int h = (int)(c % HY_QK_K) / 128, v = (int)(c % 128) / 64;
    __m256i ql0 = _mm256_loadu_si256((const void *)(blk + 64 * h));
    __m256i ql1 = _mm256_loadu_si256((const void *)(blk + 64 * h + 32));
    __m256i qh = _mm256_srli_epi16(_mm256_loadu_si256((const void *)(blk + 128 + 32 * h)), 4 * v);
    if (v) {
        ql0 = _mm256_srli_epi16(ql0, 4);
        ql1 = _mm256_srli_epi16(ql1, 4);
    }
    const __m256i m2 = _mm256_set1_epi8(3);
    __m256i p0 = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
    __m256i p1 = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
    float d = f16_at(blk + 208);
    const int8_t *s8 = (const int8_t *)(blk + 192) + 8 * h + 4 * v;
    for (int k = 0; k < 4; k++)
        sc[k] = d * (float)s8[k];
    return _mm512_sub_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(p0), p1, 1), _mm512_set1_epi8(32));
}

/* Rows 16h..16h+15 of columns [c, c+64) into the packed panel buf (whose column 0 is the
 * packed call's first column, c relative to it): transposed into quads, stored per
 * sub-block with the scales, the biases and (MIN) the mins. */
INLG void pack64(unsigned char *buf, enum hy_dtype dt, const unsigned char *w, size_t stride,
                 int nr, int64_t c, int h, const int C, const bool MIN)
{
    __m512i v[16];
    float sc[4][16] = {{0}}, mn[2][16] = {{0}};
    for (int i = 0; i < 16; i++) {
        int r = 16 * h + i;
        float s[4] = {0}, m[2] = {0};
        v[i] = r < nr ? row64(dt, w + (size_t)r * stride, c, s, m) : _mm512_setzero_si512();
        for (int k = 0; k < 64 / C; k++)
            sc[k][i] = s[k];
        mn[0][i] = m[0];
        mn[1][i] = m[1];
    }
    transpose16(v);
    const __m512i ones = _mm512_set1_epi8(1);
    for (int k = 0; k < 64 / C; k++) {
        unsigned char *ps = buf + (size_t)(c / C + k) * SUB_BYTES(C, MIN);
        __m512i sum = _mm512_setzero_si512();
        for (int q = 0; q < C / 4; q++) {
            __m512i wq = v[k * (C / 4) + q];
            _mm512_store_si512((void *)(ps + q * 128 + 64 * h), wq);
            sum = _mm512_dpbusd_epi32(sum, ones, wq);
        }
        unsigned char *tail = ps + C * HY_CPU_PANEL;
        _mm512_store_ps(tail + 64 * h, _mm512_loadu_ps(sc[k]));
        _mm512_store_si512((void *)(tail + 128 + 64 * h),
                           _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
        if (MIN)
            _mm512_store_ps(tail + 256 + 64 * h, _mm512_loadu_ps(mn[k]));
    }
}

INLG void pack_gen(void *buf, const void *w, size_t stride, int nr, int64_t n, enum hy_dtype dt,
                   const int C, const bool MIN)
{
    HY_ASSERT(nr >= 1 && nr <= HY_CPU_PANEL && n % 128 == 0);
    for (int64_t c = 0; c < n; c += 64) {
        pack64(buf, dt, w, stride, nr, c, 0, C, MIN);
        pack64(buf, dt, w, stride, nr, c, 1, C, MIN);
    }
}

/* M tokens (a compile-time constant after inlining) x the panel; see the file comment. */
INLG void gemm_tile(float *y, int64_t ys, const struct hy_cpu_xq *x, const unsigned char *buf,
                    int nr, int64_t n, bool add, const int M, const int C, const bool MIN)
{
    __m512 f[4][2];
    _Alignas(64) uint8_t xu[4][XU_COLS];
#pragma GCC unroll 4
    for (int t = 0; t < M; t++)
        f[t][0] = f[t][1] = _mm512_setzero_ps();
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int64_t c0 = 0; c0 < n; c0 += XU_COLS) {
        int64_t cn = n - c0 < XU_COLS ? n - c0 : XU_COLS;
        for (int t = 0; t < M; t++)
            for (int64_t i = 0; i < cn; i += 64)
                _mm512_store_si512((void *)(xu[t] + i),
                                   _mm512_xor_si512(_mm512_loadu_si512((const void *)(x[t].q + c0 + i)), flip));
        for (int64_t s = 0; s < cn / C; s++) {
            const unsigned char *ps = buf + (size_t)((c0 + s * C) / C) * SUB_BYTES(C, MIN);
            const unsigned char *tail = ps + C * HY_CPU_PANEL;
            __m512i a[4][2];
            const __m512i b0 = _mm512_load_si512((const void *)(tail + 128));
            const __m512i b1 = _mm512_load_si512((const void *)(tail + 192));
#pragma GCC unroll 4
            for (int t = 0; t < M; t++) {
                a[t][0] = b0;
                a[t][1] = b1;
            }
#pragma GCC unroll 8
            for (int q = 0; q < C / 4; q++) {
                __m512i w0 = _mm512_load_si512((const void *)(ps + q * 128));
                __m512i w1 = _mm512_load_si512((const void *)(ps + q * 128 + 64));
#pragma GCC unroll 4
                for (int t = 0; t < M; t++) {
                    int32_t v;
                    memcpy(&v, xu[t] + s * C + 4 * q, 4);
                    __m512i xb = _mm512_set1_epi32(v);
                    a[t][0] = _mm512_dpbusd_epi32(a[t][0], xb, w0);
                    a[t][1] = _mm512_dpbusd_epi32(a[t][1], xb, w1);
                }
            }
            __m512 dw0 = _mm512_load_ps(tail), dw1 = _mm512_load_ps(tail + 64);
            int64_t xb32 = (c0 + s * C) / 32;
#pragma GCC unroll 4
            for (int t = 0; t < M; t++) {
                __m512 dx = _mm512_set1_ps(x[t].d[xb32]);
                f[t][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a[t][0]), _mm512_mul_ps(dw0, dx), f[t][0]);
                f[t][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a[t][1]), _mm512_mul_ps(dw1, dx), f[t][1]);
            }
            if (MIN) {
                __m512 m0 = _mm512_load_ps(tail + 256), m1 = _mm512_load_ps(tail + 320);
#pragma GCC unroll 4
                for (int t = 0; t < M; t++) {
                    __m512 sx = _mm512_set1_ps(x[t].s[xb32]);
                    f[t][0] = _mm512_fmadd_ps(m0, sx, f[t][0]);
                    f[t][1] = _mm512_fmadd_ps(m1, sx, f[t][1]);
                }
            }
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

#define GGUF_GEMM(sfx, DT, C, MIN)                                                              \
    TARGETG static void pack_##sfx(void *buf, const void *w, size_t stride, int nr, int64_t n) \
    {                                                                                           \
        pack_gen(buf, w, stride, nr, n, DT, C, MIN);                                            \
    }                                                                                           \
    TARGETG static void gemm_##sfx(float *y, int64_t ys, const struct hy_cpu_xq *x, int nt,    \
                                   const void *buf, int nr, int64_t n, bool add)                \
    {                                                                                           \
        HY_ASSERT(nt >= 1 && nt <= HY_CPU_GEMM_TOKENS && nr >= 1 && nr <= HY_CPU_PANEL);       \
        switch (nt) {                                                                           \
        case 1: gemm_tile(y, ys, x, buf, nr, n, add, 1, C, MIN); break;                         \
        case 2: gemm_tile(y, ys, x, buf, nr, n, add, 2, C, MIN); break;                         \
        case 3: gemm_tile(y, ys, x, buf, nr, n, add, 3, C, MIN); break;                         \
        default: gemm_tile(y, ys, x, buf, nr, n, add, 4, C, MIN); break;                        \
        }                                                                                       \
    }

GGUF_GEMM(q4_0, HY_DTYPE_Q4_0, 32, false)
GGUF_GEMM(q8_0, HY_DTYPE_Q8_0, 32, false)
GGUF_GEMM(q4_k, HY_DTYPE_Q4_K, 32, true)
GGUF_GEMM(q6_k, HY_DTYPE_Q6_K, 16, false)

void hy_cpu_gemm_gguf_avx512(struct hy_cpu_kernels *k)
{
    struct hy_cpu_mm_kernels *m = k->mm;
    m[HY_DTYPE_Q4_0].q_pack = pack_q4_0;
    m[HY_DTYPE_Q4_0].q_gemm = gemm_q4_0;
    m[HY_DTYPE_Q4_0].pack_group_bytes = GROUP_BYTES(32, 0);
    m[HY_DTYPE_Q8_0].q_pack = pack_q8_0;
    m[HY_DTYPE_Q8_0].q_gemm = gemm_q8_0;
    m[HY_DTYPE_Q8_0].pack_group_bytes = GROUP_BYTES(32, 0);
    m[HY_DTYPE_Q4_K].q_pack = pack_q4_k;
    m[HY_DTYPE_Q4_K].q_gemm = gemm_q4_k;
    m[HY_DTYPE_Q4_K].pack_group_bytes = GROUP_BYTES(32, 1);
    m[HY_DTYPE_Q6_K].q_pack = pack_q6_k;
    m[HY_DTYPE_Q6_K].q_gemm = gemm_q6_k;
    m[HY_DTYPE_Q6_K].pack_group_bytes = GROUP_BYTES(16, 0);
}

#else

void hy_cpu_gemm_gguf_avx512(struct hy_cpu_kernels *k)
{
    (void)k;
}

#endif
