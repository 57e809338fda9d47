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
        !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c"))
        return false;
    k->isa = HY_CPU_ISA_AVX512;
    k->name = "avx512";
    k->mm[HY_DTYPE_F32] = (struct hy_cpu_mm_kernels){rows4_f32, toks4_f32, dot_f32, tile_f32};
    k->mm[HY_DTYPE_F16] = (struct hy_cpu_mm_kernels){rows4_f16, toks4_f16, dot_f16, tile_f16};
    k->mm[HY_DTYPE_BF16] = (struct hy_cpu_mm_kernels){rows4_bf16, toks4_bf16, dot_bf16, tile_bf16};
    k->mm[HY_DTYPE_Q8_0] = (struct hy_cpu_mm_kernels){rows4_q8_0, toks4_q8_0, dot_q8_0, tile_q8_0};
    k->scores = scores;
    k->accum = accum;
    return true;
}

#else

bool hy_cpu_kernels_avx512(struct hy_cpu_kernels *k)
{
    (void)k;
    return false;
}

#endif
