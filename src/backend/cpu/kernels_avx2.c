/* kernels_avx2.c: AVX2 + FMA + F16C kernels, 8 floats per vector; the same structure as
 * kernels_avx512.c. Compiled with a target attribute (not -march), so one binary runs
 * everywhere; hy_cpu_kernels_avx2() asks the CPU before handing them out. bf16 widens to
 * f32 by a 16-bit shift, f16 through vcvtph2ps; all loads are unaligned. Column tails
 * (cols % 8) are finished in scalar code. Elsewhere the file only reports "unsupported". */
#include "backend/cpu/cpu_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) TARGET

/* The si128/si256 loads take a pointer to an unaligned vector type, so no misaligned float
 * pointer is ever formed from weight data. */
INL __m256 load8(const unsigned char *w, int64_t c, enum hy_dtype dt)
{
    if (dt == HY_DTYPE_F32)
        return _mm256_castsi256_ps(_mm256_loadu_si256((const void *)(w + 4 * c)));
    if (dt == HY_DTYPE_Q8_0) { /* c % 8 == 0: 8 int8 of one block, times its fp16 scale */
        const unsigned char *b = w + (c / HY_Q8_0_BLOCK) * sizeof(struct hy_q8_0_block);
        uint16_t d;
        memcpy(&d, b, 2);
        __m128i q = _mm_loadl_epi64((const void *)(b + 2 + c % HY_Q8_0_BLOCK));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)),
                             _mm256_set1_ps(_cvtsh_ss(d)));
    }
    __m128i h = _mm_loadu_si128((const void *)(w + 2 * c));
    if (dt == HY_DTYPE_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

INL float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INL void rows4_gen(float *y, const float *x, const void *w, size_t stride, int64_t cols,
                   enum hy_dtype dt)
{
    const unsigned char *w0 = w, *w1 = w0 + stride, *w2 = w1 + stride, *w3 = w2 + stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
        __m256 xv = _mm256_loadu_ps(x + c);
        a0 = _mm256_fmadd_ps(load8(w0, c, dt), xv, a0);
        a1 = _mm256_fmadd_ps(load8(w1, c, dt), xv, a1);
        a2 = _mm256_fmadd_ps(load8(w2, c, dt), xv, a2);
        a3 = _mm256_fmadd_ps(load8(w3, c, dt), xv, a3);
    }
    float s0 = hsum8(a0), s1 = hsum8(a1);
    float s2 = hsum8(a2), s3 = hsum8(a3);
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
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
        __m256 wv = load8(w, c, dt);
        a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x0 + c), a0);
        a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x1 + c), a1);
        a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x2 + c), a2);
        a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x3 + c), a3);
    }
    float s0 = hsum8(a0), s1 = hsum8(a1);
    float s2 = hsum8(a2), s3 = hsum8(a3);
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
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        a0 = _mm256_fmadd_ps(load8(w, c, dt), _mm256_loadu_ps(x + c), a0);
        a1 = _mm256_fmadd_ps(load8(w, c + 8, dt), _mm256_loadu_ps(x + c + 8), a1);
    }
    if (c + 8 <= cols) {
        a0 = _mm256_fmadd_ps(load8(w, c, dt), _mm256_loadu_ps(x + c), a0);
        c += 8;
    }
    float s = hsum8(_mm256_add_ps(a0, a1));
    for (; c < cols; c++)
        s += x[c] * hy_cpu_weight_load(w, c, dt);
    return s;
}

/* {sum(a), sum(b), sum(c), sum(d)}: two horizontal-add steps, then the halves added. */
INL __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

/* s[t][i] = (x + t*xs) · w_i over n columns, t < 4, i < 2: 8 accumulators, 2 weight and
 * 1 activation vectors (11 of the 16 registers). */
INL void tile2_gen(float s[4][2], const float *x, int64_t xs, const unsigned char *w0,
                   const unsigned char *w1, int64_t n, enum hy_dtype dt)
{
    __m256 acc[4][2];
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++)
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    int64_t c = 0;
    /* Q8_0: a whole block (four vectors) a step, so that the compiler converts each row's
     * block scale once, not once a vector */
    const int step = dt == HY_DTYPE_Q8_0 ? 32 : 8;
    for (; c + step <= n; c += step) {
#pragma GCC unroll 4
        for (int h = 0; h < step; h += 8) {
            __m256 v0 = load8(w0, c + h, dt), v1 = load8(w1, c + h, dt);
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) {
                __m256 xv = _mm256_loadu_ps(x + t * xs + c + h);
                acc[t][0] = _mm256_fmadd_ps(v0, xv, acc[t][0]);
                acc[t][1] = _mm256_fmadd_ps(v1, xv, acc[t][1]);
            }
        }
    }
    float h[8];
    _mm_storeu_ps(h, hsum4(acc[0][0], acc[0][1], acc[1][0], acc[1][1]));
    _mm_storeu_ps(h + 4, hsum4(acc[2][0], acc[2][1], acc[3][0], acc[3][1]));
    for (int t = 0; t < 4; t++) {
        s[t][0] = h[2 * t];
        s[t][1] = h[2 * t + 1];
        for (int64_t k = c; k < n; k++) {
            s[t][0] += x[t * xs + k] * hy_cpu_weight_load(w0, k, dt);
            s[t][1] += x[t * xs + k] * hy_cpu_weight_load(w1, k, dt);
        }
    }
}

/* 4 tokens x 4 rows as two 4x2 passes over the same (L1-resident) activations. */
INL void tile_gen(float *y, int64_t ys, const float *x, int64_t xs, const void *w, size_t stride,
                  int64_t n, bool add, enum hy_dtype dt)
{
    const unsigned char *w0 = w;
    float lo[4][2], hi[4][2];
    tile2_gen(lo, x, xs, w0, w0 + stride, n, dt);
    tile2_gen(hi, x, xs, w0 + 2 * stride, w0 + 3 * stride, n, dt);
    for (int t = 0; t < 4; t++) {
        float s[4] = {lo[t][0], lo[t][1], hi[t][0], hi[t][1]};
        for (int i = 0; i < 4; i++)
            y[t * ys + i] = add ? y[t * ys + i] + s[i] : s[i];
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

/* ---- int8 activations: Q4_G128 (activations per 128 values, as in kernels_avx512.c) ---- */

/* The integer dot of a Q4_G128 group (at g) with 128 int8 activations, in 8 int32 lanes:
 * vpmaddubsw multiplies unsigned nibbles by signed activations into 16-bit pair sums
 * (|sum| <= 2*15*128 = 3840), four of them add without overflow (<= 15360), and one
 * vpmaddwd by ones widens to int32. The low nibbles of bytes 0-31/32-63 are values 0-31/
 * 32-63, the high ones 64-95/96-127. */
INL __m256i g128_idot(const unsigned char *g, const int8_t *aq)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i v0 = _mm256_loadu_si256((const void *)(g + 2));
    __m256i v1 = _mm256_loadu_si256((const void *)(g + 34));
    __m256i s = _mm256_maddubs_epi16(_mm256_and_si256(v0, m4), _mm256_loadu_si256((const void *)aq));
    s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(v1, m4),
                                                 _mm256_loadu_si256((const void *)(aq + 32))));
    s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v0, 4), m4),
                                                 _mm256_loadu_si256((const void *)(aq + 64))));
    s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v1, 4), m4),
                                                 _mm256_loadu_si256((const void *)(aq + 96))));
    return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}

INL float g128_scale(const unsigned char *g)
{
    uint16_t h;
    memcpy(&h, g, 2);
    return _cvtsh_ss(h);
}

INL float g128_asum(const struct hy_cpu_xq *x, int64_t g)
{
    const float *s = x->s + 4 * g;
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* One row against NT (1 or 4) tokens: the row's groups are read once, each token's sum in
 * its own accumulator; value = d_w * (nibble - 8), the 8 through the activation sums. */
INL void g128_row(float *y, int64_t ys, const struct hy_cpu_xq *x, const unsigned char *w,
                  int64_t cols, int NT)
{
    __m256 acc[4];
    float corr[4] = {0};
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t g = 0; g < cols / 128; g++) {
        const unsigned char *blk = w + g * sizeof(struct hy_q4_g128_block);
        float d = g128_scale(blk);
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(g128_idot(blk, x[t].q + 128 * g)),
                                     _mm256_set1_ps(d * x[t].d[4 * g]), acc[t]);
            corr[t] += d * g128_asum(&x[t], g);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
        y[t * ys] = hsum8(acc[t]) - 8.0f * corr[t];
}

TARGET static float q_dot_g128(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    float y;
    g128_row(&y, 0, x, w, cols, 1);
    return y;
}

TARGET static void q_rows4_g128(float *y, const struct hy_cpu_xq *x, const void *w,
                                size_t stride, int64_t cols)
{
    for (int i = 0; i < 4; i++)
        g128_row(y + i, 0, x, (const unsigned char *)w + i * stride, cols, 1);
}

/* 4 tokens x 4 rows: row by row, each against the four tokens (16 ymm registers do not hold
 * a 4x4 tile of accumulators besides the unpacked nibbles). */
TARGET static void q_tile_g128(float *y, int64_t ys, const struct hy_cpu_xq x[4], const void *w,
                               size_t stride, int64_t n, bool add)
{
    for (int i = 0; i < 4; i++) {
        float v[4];
        g128_row(v, 1, x, (const unsigned char *)w + i * stride, n, 4);
        for (int t = 0; t < 4; t++)
            y[t * ys + i] = add ? y[t * ys + i] + v[t] : v[t];
    }
}

/* The scalar reference's arithmetic, so the bytes are the same. */
TARGET static void quantize_x(int8_t *q, float *d, float *s, float *d8, const float *x, int64_t n,
                              int block)
{
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t b = 0; b < n / block; b++) {
        const float *xb = x + block * b;
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < block; i += 8)
            m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(xb + i), absmask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        float amax = _mm_cvtss_f32(m4);
        float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
        __m256 iv = _mm256_set1_ps(id);
        for (int c = 0; c < block / 32; c++) {
            int64_t k = b * (block / 32) + c;
            __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k), iv));
            __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8), iv));
            __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 16), iv));
            __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 24), iv));
            __m256i sum = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
            /* packs interleave the 128-bit lanes; the permute puts the 32 bytes in order */
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
            p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((void *)(q + 32 * k), p);
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
            d[k] = db;
            s[k] = db * (float)_mm_cvtsi128_si32(s4);
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
    __m256 cv = _mm256_set1_ps(c);
    for (; i + 8 <= hd; i += 8)
        _mm256_storeu_ps(acc + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), cv));
    for (; i < hd; i++)
        acc[i] *= c;
    for (int j = 0; j < n; j++) {
        const float *vj = v + j * stride;
        __m256 pv = _mm256_set1_ps(p[j]);
        for (i = 0; i + 8 <= hd; i += 8)
            _mm256_storeu_ps(acc + i,
                             _mm256_fmadd_ps(pv, _mm256_loadu_ps(vj + i), _mm256_loadu_ps(acc + i)));
        for (; i < hd; i++)
            acc[i] += p[j] * vj[i];
    }
}

bool hy_cpu_kernels_avx2(struct hy_cpu_kernels *k)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
        !hy_cpu_has_f16c())
        return false;
    hy_cpu_kernels_scalar(k); /* the dtypes without kernels here keep the scalar ones */
    k->isa = HY_CPU_ISA_AVX2;
    k->name = "avx2";
    HY_CPU_SET_DENSE_KERNELS(k);
    k->scores = scores;
    k->accum = accum;
    k->mm[HY_DTYPE_Q4_G128].q_rows4 = q_rows4_g128;
    k->mm[HY_DTYPE_Q4_G128].q_dot = q_dot_g128;
    k->mm[HY_DTYPE_Q4_G128].q_tile4x4 = q_tile_g128;
    k->mm[HY_DTYPE_Q4_G128].xq_block = 128;
    hy_cpu_kernels_gguf_avx2(k); /* Q4_0, Q8_0, Q4_K, Q6_K */
    k->quantize_x = quantize_x;
    return true;
}

#else

bool hy_cpu_kernels_avx2(struct hy_cpu_kernels *k)
{
    (void)k;
    return false;
}

#endif
