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
        !__builtin_cpu_supports("f16c"))
        return false;
    hy_cpu_kernels_scalar(k); /* the dtypes without kernels here keep the scalar ones */
    k->isa = HY_CPU_ISA_AVX2;
    k->name = "avx2";
    k->mm[HY_DTYPE_F32] = (struct hy_cpu_mm_kernels){
        .rows4 = rows4_f32, .toks4 = toks4_f32, .dot = dot_f32, .tile4x4 = tile_f32};
    k->mm[HY_DTYPE_F16] = (struct hy_cpu_mm_kernels){
        .rows4 = rows4_f16, .toks4 = toks4_f16, .dot = dot_f16, .tile4x4 = tile_f16};
    k->mm[HY_DTYPE_BF16] = (struct hy_cpu_mm_kernels){
        .rows4 = rows4_bf16, .toks4 = toks4_bf16, .dot = dot_bf16, .tile4x4 = tile_bf16};
    k->mm[HY_DTYPE_Q8_0] = (struct hy_cpu_mm_kernels){
        .rows4 = rows4_q8_0, .toks4 = toks4_q8_0, .dot = dot_q8_0, .tile4x4 = tile_q8_0};
    k->scores = scores;
    k->accum = accum;
    return true;
}

#else

bool hy_cpu_kernels_avx2(struct hy_cpu_kernels *k)
{
    (void)k;
    return false;
}

#endif
