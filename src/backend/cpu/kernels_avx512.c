/* kernels_avx512.c: AVX-512F kernels, 16 floats per vector. Compiled with a target
 * attribute (not -march), so one binary runs everywhere; hy_cpu_kernels_avx512() asks the
 * CPU before handing them out. bf16 widens to f32 by a 16-bit shift, f16 through
 * vcvtph2ps, f32 loads directly; all loads are unaligned. Column tails (cols % 16) are
 * finished in scalar code. On other architectures the file only reports "unsupported". */
#include "backend/cpu/cpu_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) TARGET

INL __m512 load16(const unsigned char *w, int64_t c, enum hy_dtype dt)
{
    if (dt == HY_DTYPE_F32)
        return _mm512_loadu_ps(w + 4 * c);
    if (dt == HY_DTYPE_Q8_0) { /* c % 16 == 0: 16 int8 of one block, times its fp16 scale */
        const unsigned char *b = w + (c / HY_Q8_0_BLOCK) * sizeof(struct hy_q8_0_block);
        uint16_t d;
        memcpy(&d, b, 2);
        __m128i q = _mm_loadu_si128((const void *)(b + 2 + c % HY_Q8_0_BLOCK));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)),
                             _mm512_set1_ps(_cvtsh_ss(d)));
    }
    __m256i h = _mm256_loadu_si256((const void *)(w + 2 * c));
    if (dt == HY_DTYPE_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

INL void rows4_gen(float *y, const float *x, const void *w, size_t stride, int64_t cols,
                   enum hy_dtype dt)
{
    const unsigned char *w0 = w, *w1 = w0 + stride, *w2 = w1 + stride, *w3 = w2 + stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    const int step = dt == HY_DTYPE_Q8_0 ? 32 : 16; /* Q8_0: a block a step (see tile_gen) */
    for (; c + step <= cols; c += step) {
#pragma GCC unroll 2
        for (int h = 0; h < step; h += 16) {
            __m512 xv = _mm512_loadu_ps(x + c + h);
            a0 = _mm512_fmadd_ps(load16(w0, c + h, dt), xv, a0);
            a1 = _mm512_fmadd_ps(load16(w1, c + h, dt), xv, a1);
            a2 = _mm512_fmadd_ps(load16(w2, c + h, dt), xv, a2);
            a3 = _mm512_fmadd_ps(load16(w3, c + h, dt), xv, a3);
        }
    }
    float s0 = _mm512_reduce_add_ps(a0), s1 = _mm512_reduce_add_ps(a1);
    float s2 = _mm512_reduce_add_ps(a2), s3 = _mm512_reduce_add_ps(a3);
    for (; c < cols; c++) {
        s0 += x[c] * hy_cpu_weight_load(w0, c, dt);
        s1 += x[c] * hy_cpu_weight_load(w1, c, dt);
        s2 += x[c] * hy_cpu_weight_load(w2, c, dt);
        s3 += x[c] * hy_cpu_weight_load(w3, c, dt);
    }
    y[0] = s0;
    y[1] = s1;
    y[2] = s2;
    y[3] = s3;
}

INL void toks4_gen(float *y, int64_t ys, const float *x, int64_t xs, const void *w, int64_t cols,
                   enum hy_dtype dt)
{
    const float *x0 = x, *x1 = x0 + xs, *x2 = x1 + xs, *x3 = x2 + xs;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m512 wv = load16(w, c, dt);
        a0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x0 + c), a0);
        a1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x1 + c), a1);
        a2 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x2 + c), a2);
        a3 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x3 + c), a3);
    }
    float s0 = _mm512_reduce_add_ps(a0), s1 = _mm512_reduce_add_ps(a1);
    float s2 = _mm512_reduce_add_ps(a2), s3 = _mm512_reduce_add_ps(a3);
    for (; c < cols; c++) {
        float wc = hy_cpu_weight_load(w, c, dt);
        s0 += x0[c] * wc;
        s1 += x1[c] * wc;
        s2 += x2[c] * wc;
        s3 += x3[c] * wc;
    }
    y[0] = s0;
    y[ys] = s1;
    y[2 * ys] = s2;
    y[3 * ys] = s3;
}

INL float dot_gen(const float *x, const void *w, int64_t cols, enum hy_dtype dt)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) {
        a0 = _mm512_fmadd_ps(load16(w, c, dt), _mm512_loadu_ps(x + c), a0);
        a1 = _mm512_fmadd_ps(load16(w, c + 16, dt), _mm512_loadu_ps(x + c + 16), a1);
    }
    if (c + 16 <= cols) {
        a0 = _mm512_fmadd_ps(load16(w, c, dt), _mm512_loadu_ps(x + c), a0);
        c += 16;
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    for (; c < cols; c++)
        s += x[c] * hy_cpu_weight_load(w, c, dt);
    return s;
}

/* {sum(a), sum(b), sum(c), sum(d)}: halves added, then three horizontal-add steps. */
INL __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d)
{
#define HALVES(v) \
    _mm256_add_ps(_mm512_castps512_ps256(v), \
                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))
    __m256 ab = _mm256_hadd_ps(HALVES(a), HALVES(b));
    __m256 cd = _mm256_hadd_ps(HALVES(c), HALVES(d));
#undef HALVES
    __m256 abcd = _mm256_hadd_ps(ab, cd);
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

/* 4 tokens x 4 rows: 16 accumulators, 4 converted weight vectors and one activation
 * vector in registers (21 of the 32), so each weight load feeds four FMAs and each
 * activation load four more. */
INL void tile_gen(float *y, int64_t ys, const float *x, int64_t xs, const void *w, size_t stride,
                  int64_t n, bool add, enum hy_dtype dt)
{
    const unsigned char *wr[4] = {w, (const unsigned char *)w + stride,
                                  (const unsigned char *)w + 2 * stride,
                                  (const unsigned char *)w + 3 * stride};
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++)
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            acc[t][i] = _mm512_setzero_ps();
    int64_t c = 0;
    /* Q8_0: a whole block (two vectors) a step, so that the compiler converts each row's
     * block scale once, not once a vector */
    const int step = dt == HY_DTYPE_Q8_0 ? 32 : 16;
    for (; c + step <= n; c += step) {
#pragma GCC unroll 2
        for (int h = 0; h < step; h += 16) {
            __m512 wv[4];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
                wv[i] = load16(wr[i], c + h, dt);
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) {
                __m512 xv = _mm512_loadu_ps(x + t * xs + c + h);
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++)
                    acc[t][i] = _mm512_fmadd_ps(wv[i], xv, acc[t][i]);
            }
        }
    }
    for (int t = 0; t < 4; t++) {
        float s[4];
        _mm_storeu_ps(s, hsum4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]));
        for (int i = 0; i < 4; i++) {
            for (int64_t k = c; k < n; k++)
                s[i] += x[t * xs + k] * hy_cpu_weight_load(wr[i], k, dt);
            y[t * ys + i] = add ? y[t * ys + i] + s[i] : s[i];
        }
    }
}

#define MM_KERNELS(sfx, DT)                                                                     \
    TARGET static void rows4_##sfx(float *y, const float *x, const void *w, size_t stride,      \
                                   int64_t n)                                                   \
    {                                                                                           \
        rows4_gen(y, x, w, stride, n, DT);                                                      \
    }                                                                                           \
    TARGET static void toks4_##sfx(float *y, int64_t ys, const float *x, int64_t xs,            \
                                   const void *w, int64_t n)                                    \
    {                                                                                           \
        toks4_gen(y, ys, x, xs, w, n, DT);                                                      \
    }                                                                                           \
    TARGET static float dot_##sfx(const float *x, const void *w, int64_t n)                     \
    {                                                                                           \
        return dot_gen(x, w, n, DT);                                                            \
    }                                                                                           \
    TARGET static void tile_##sfx(float *y, int64_t ys, const float *x, int64_t xs,             \
                                  const void *w, size_t stride, int64_t n, bool add)            \
    {                                                                                           \
        tile_gen(y, ys, x, xs, w, stride, n, add, DT);                                          \
    }

MM_KERNELS(f32, HY_DTYPE_F32)
MM_KERNELS(f16, HY_DTYPE_F16)
MM_KERNELS(bf16, HY_DTYPE_BF16)
MM_KERNELS(q8_0, HY_DTYPE_Q8_0)

/* ---- int8 activations (AVX-512 VNNI + BW): Q4_G128 and the activation quantizer ---- */

#define TARGETQ __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma,f16c")))
#define INLQ static inline __attribute__((always_inline)) TARGETQ

/* The Q4_G128 kernels take activations quantized per 128 values (xq_block 128), one scale a
 * weight group: a group's integer dot is then two vpdpbusd into one int32 vector (unsigned
 * nibbles 0..15 times signed activations, exact), converted once and scaled once by
 * d_w * d_x. With per-32 activation scales each group needed two conversions and three
 * float operations per token: prefill was bound by the multiply pipes (per-128 scales
 * about double the MACs a cycle: bench/RESULTS.md). The nibbles' offset of 8 is applied
 * through the activation sums (x->s): value = d_w*(nibble - 8). */
INLQ __m512i g128_idot(const __m512i lo, const __m512i hi, const int8_t *aq)
{
    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512((const void *)aq));
    return _mm512_dpbusd_epi32(p, hi, _mm512_loadu_si512((const void *)(aq + 64)));
}

INLQ void g128_nibbles(const unsigned char *g, __m512i *lo, __m512i *hi)
{
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i v = _mm512_loadu_si512((const void *)(g + 2));
    *lo = _mm512_and_si512(v, m4);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
}

INLQ float g128_scale(const unsigned char *g)
{
    uint16_t h;
    memcpy(&h, g, 2);
    return _cvtsh_ss(h);
}

/* The sum of group g's four activation chunk sums (d_x * sum q): times 8*d_w, the offset. */
INLQ float g128_asum(const struct hy_cpu_xq *x, int64_t g)
{
    const float *s = x->s + 4 * g;
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* Decode: rows are read one after the other, each a single sequential stream (with a
 * software prefetch PF_BYTES ahead), two accumulators for even and odd groups. Reading four
 * rows side by side (sharing the activation loads) reads at about half the DRAM bandwidth:
 * a row of a 2048-column Q4_G128 weight is only 1056 bytes, and four such short interleaved
 * streams are followed too late by the hardware prefetcher (figures in bench/RESULTS.md);
 * the activations come from L1 either way. */
#define PF_BYTES 4096
INLQ float g128_dot(const struct hy_cpu_xq *x, const unsigned char *w, int64_t cols)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    float c0 = 0.0f, c1 = 0.0f;
    const int64_t G = cols / 128;
    const size_t gb = sizeof(struct hy_q4_g128_block);
    int64_t g = 0;
    __m512i lo, hi;
    for (; g + 2 <= G; g += 2) {
        const unsigned char *b0 = w + g * gb, *b1 = b0 + gb;
        _mm_prefetch((const char *)b0 + PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)b0 + PF_BYTES + 64, _MM_HINT_T0);
        float d0 = g128_scale(b0), d1 = g128_scale(b1);
        g128_nibbles(b0, &lo, &hi);
        a0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(g128_idot(lo, hi, x->q + 128 * g)),
                             _mm512_set1_ps(d0 * x->d[4 * g]), a0);
        g128_nibbles(b1, &lo, &hi);
        a1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(g128_idot(lo, hi, x->q + 128 * g + 128)),
                             _mm512_set1_ps(d1 * x->d[4 * g + 4]), a1);
        c0 += d0 * g128_asum(x, g);
        c1 += d1 * g128_asum(x, g + 1);
    }
    if (g < G) {
        const unsigned char *b0 = w + g * gb;
        float d0 = g128_scale(b0);
        g128_nibbles(b0, &lo, &hi);
        a0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(g128_idot(lo, hi, x->q + 128 * g)),
                             _mm512_set1_ps(d0 * x->d[4 * g]), a0);
        c0 += d0 * g128_asum(x, g);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) - 8.0f * (c0 + c1);
}

TARGETQ static void q_rows4_g128(float *y, const struct hy_cpu_xq *x, const void *w,
                                 size_t stride, int64_t cols)
{
    for (int i = 0; i < 4; i++)
        y[i] = g128_dot(x, (const unsigned char *)w + i * stride, cols);
}

TARGETQ static float q_dot_g128(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    return g128_dot(x, w, cols);
}

/* Up to 8 tokens against one row (small decode batches): the row read once as one stream,
 * each group's nibbles unpacked once for every token; per token and group two vpdpbusd, a
 * conversion and two FMAs: lanes hold d_w * (d_x * I - 8 * S / 16). */
INLQ void g128_row_tokens(float *y, int64_t ys, const struct hy_cpu_xq *x, const float *gs,
                          int64_t gstride, const unsigned char *w, int64_t cols, const int M)
{
    __m512 acc[HY_CPU_ROW_TOKENS];
#pragma GCC unroll 8
    for (int t = 0; t < M; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t g = 0; g < cols / 128; g++) {
        const unsigned char *blk = w + g * sizeof(struct hy_q4_g128_block);
        _mm_prefetch((const char *)blk + PF_BYTES, _MM_HINT_T0);
        __m512 dw = _mm512_set1_ps(g128_scale(blk));
        __m512i lo, hi;
        g128_nibbles(blk, &lo, &hi);
#pragma GCC unroll 8
        for (int t = 0; t < M; t++) {
            __m512 u = _mm512_fmsub_ps(_mm512_cvtepi32_ps(g128_idot(lo, hi, x[t].q + 128 * g)),
                                       _mm512_set1_ps(x[t].d[4 * g]),
                                       _mm512_set1_ps(gs[t * gstride + g]));
            acc[t] = _mm512_fmadd_ps(u, dw, acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < M; t++)
        y[t * ys] = _mm512_reduce_add_ps(acc[t]);
}

TARGETQ static void q_row_tokens_g128(float *y, int64_t ys, const struct hy_cpu_xq *x,
                                      const float *gs, int64_t gstride, int nt, const void *w,
                                      int64_t cols)
{
    HY_ASSERT(nt >= 1 && nt <= HY_CPU_ROW_TOKENS);
    switch (nt) {
    case 1: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 1); break;
    case 2: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 2); break;
    case 3: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 3); break;
    case 4: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 4); break;
    case 5: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 5); break;
    case 6: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 6); break;
    case 7: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 7); break;
    default: g128_row_tokens(y, ys, x, gs, gstride, w, cols, 8); break;
    }
}

/* 4 tokens x 4 rows over n columns: each row's nibbles are unpacked once for four tokens
 * (activation vectors are memory operands, from L1). 16 vector accumulators; the offset
 * terms d_w * S_t of the 4 rows go four at a time into one xmm a token. */
TARGETQ static void q_tile_g128(float *y, int64_t ys, const struct hy_cpu_xq x[4], const void *w,
                                size_t stride, int64_t n, bool add)
{
    const unsigned char *w0 = w;
    __m512 acc[4][4];
    __m128 corr[4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        corr[t] = _mm_setzero_ps();
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            acc[t][i] = _mm512_setzero_ps();
    }
    for (int64_t g = 0; g < n / 128; g++) {
        float dw[4], dx[4];
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++)
            dx[t] = x[t].d[4 * g];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            const unsigned char *blk = w0 + i * stride + g * sizeof(struct hy_q4_g128_block);
            __m512i lo, hi;
            dw[i] = g128_scale(blk);
            g128_nibbles(blk, &lo, &hi);
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++)
                acc[t][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(g128_idot(lo, hi, x[t].q + 128 * g)),
                                            _mm512_set1_ps(dw[i] * dx[t]), acc[t][i]);
        }
        __m128 dw4 = _mm_loadu_ps(dw);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++)
            corr[t] = _mm_fmadd_ps(dw4, _mm_set1_ps(g128_asum(&x[t], g)), corr[t]);
    }
    for (int t = 0; t < 4; t++) {
        float s[4], c[4];
        _mm_storeu_ps(s, hsum4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]));
        _mm_storeu_ps(c, corr[t]);
        for (int i = 0; i < 4; i++) {
            float v = s[i] - 8.0f * c[i];
            y[t * ys + i] = add ? y[t * ys + i] + v : v;
        }
    }
}

/* The scalar reference's arithmetic (max over the block, one multiply by 1/d, round to
 * nearest even through the default MXCSR mode), so the bytes are the same. */
TARGETQ static void quantize_x(int8_t *q, float *d, float *s, float *d8, const float *x, int64_t n,
                               int block)
{
    for (int64_t b = 0; b < n / block; b++) {
        const float *xb = x + block * b;
        __m512 m = _mm512_setzero_ps();
        for (int i = 0; i < block; i += 16)
            m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
        float amax = _mm512_reduce_max_ps(m);
        float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
        __m512 iv = _mm512_set1_ps(id);
        for (int c = 0; c < block / 32; c++) {
            int64_t k = b * (block / 32) + c;
            __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * k), iv));
            __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * k + 16), iv));
            _mm_storeu_si128((void *)(q + 32 * k), _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128((void *)(q + 32 * k + 16), _mm512_cvtepi32_epi8(q1));
            d[k] = db;
            s[k] = db * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
            _mm256_storeu_ps(d8 + 8 * k, _mm256_set1_ps(db));
        }
    }
}

TARGET static void scores(float *s, const float *q, const float *k, int64_t stride, int n, int hd,
                          float scale)
{
    for (int j = 0; j < n; j++)
        s[j] = dot_gen(q, k + j * stride, hd, HY_DTYPE_F32) * scale;
}

TARGET static void accum(float *acc, float c, const float *p, const float *v, int64_t stride,
                         int n, int hd)
{
    int i = 0;
    __m512 cv = _mm512_set1_ps(c);
    for (; i + 16 <= hd; i += 16)
        _mm512_storeu_ps(acc + i, _mm512_mul_ps(_mm512_loadu_ps(acc + i), cv));
    for (; i < hd; i++)
        acc[i] *= c;
    for (int j = 0; j < n; j++) {
        const float *vj = v + j * stride;
        __m512 pv = _mm512_set1_ps(p[j]);
        for (i = 0; i + 16 <= hd; i += 16)
            _mm512_storeu_ps(acc + i,
                             _mm512_fmadd_ps(pv, _mm512_loadu_ps(vj + i), _mm512_loadu_ps(acc + i)));
        for (; i < hd; i++)
            acc[i] += p[j] * vj[i];
    }
}

bool hy_cpu_kernels_avx512(struct hy_cpu_kernels *k)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("fma") || !hy_cpu_has_f16c())
        return false;
    hy_cpu_kernels_scalar(k); /* the dtypes without kernels here keep the scalar ones */
    k->isa = HY_CPU_ISA_AVX512;
    k->name = "avx512";
    HY_CPU_SET_DENSE_KERNELS(k);
    k->scores = scores;
    k->accum = accum;
    if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni")) {
        k->mm[HY_DTYPE_Q4_G128].q_rows4 = q_rows4_g128;
        k->mm[HY_DTYPE_Q4_G128].q_dot = q_dot_g128;
        k->mm[HY_DTYPE_Q4_G128].q_tile4x4 = q_tile_g128;
        k->mm[HY_DTYPE_Q4_G128].xq_block = 128;
        k->mm[HY_DTYPE_Q4_G128].q_row_tokens = q_row_tokens_g128;
        hy_cpu_gemm_avx512(k);
        hy_cpu_kernels_gguf_avx512(k); /* Q4_0, Q8_0, Q4_K, Q6_K */
        k->quantize_x = quantize_x;
    } else {
        hy_cpu_kernels_gguf_avx2(k); /* AVX-512 without VNNI: the AVX2 integer kernels */
    }
    return true;
}

#else

bool hy_cpu_kernels_avx512(struct hy_cpu_kernels *k)
{
    (void)k;
    return false;
}

#endif
