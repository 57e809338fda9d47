/* kernels_gguf_avx2.c: the GGUF block types (Q4_0, Q8_0, Q4_K, Q6_K) against int8
 * activations per 32 values on AVX2 (machines without AVX-512 VNNI): the decode dot
 * products and the 4x4 tiles built on them, as kernels_gguf_avx512.c.
 *
 * AVX2 has no 4-byte dot product; vpmaddubsw multiplies unsigned weight bytes by signed
 * activation bytes and adds pairs into int16, vpmaddwd (by ones, or by Q6_K's int8 scales)
 * adds pairs of those into int32. No sum saturates: a pair is at most 2 * 128 * 127 =
 * 32512 (Q8_0 takes |q| against the activations with q's sign), and offsets (Q4_0's 8,
 * Q6_K's 32) are subtracted in int16 before the widening. The integer sums are exact;
 * each 32-value block's is scaled in float32. Q6_K's offset products do not depend on the
 * row: decode makes them once a token (q_prep, x->aux).
 *
 * Decode reads rows one after the other, each a single stream with a software prefetch
 * PF_BYTES ahead (one per 64 bytes read, as kernels_gguf_avx512.c): the hardware
 * prefetchers stop at 4 KiB page boundaries, so without it every page of a row starts
 * with misses to memory. */
#include "backend/cpu/cpu_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include "backend/cpu/kernels_gguf_x86.h"

#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) TARGET
#define PF_BYTES 4096

/* The cache lines of [p, p + n) PF_BYTES on, into L1 (n <= 256: unrolled by the compiler). */
INL void prefetch_ahead(const unsigned char *p, size_t n)
{
    for (size_t o = 0; o < n; o += 64)
        _mm_prefetch((const char *)p + PF_BYTES + o, _MM_HINT_T0);
}

INL float f16_at(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

INL float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INL __m256i widen(__m256i s16)
{
    return _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
}

/* Q4_0: per block, the nibbles (low: values 0-15, high: 16-31) against the activations,
 * minus 8 times the activations, in int16. */
INL float dot_q4_0(const struct hy_cpu_xq *x, const void *w, int64_t cols, bool pf)
{
    const unsigned char *w0 = w;
    const __m128i m4 = _mm_set1_epi8(15);
    const __m256i eight = _mm256_set1_epi8(8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        const unsigned char *blk = w0 + b * sizeof(struct hy_q4_0_block);
        if (pf && !(b & 3)) /* 72 bytes every four blocks: two lines */
            prefetch_ahead(blk, 128);
        __m128i v = _mm_loadu_si128((const void *)(blk + 2));
        __m256i n = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
        __m256i a = _mm256_loadu_si256((const void *)(x->q + 32 * b));
        __m256i p = widen(_mm256_sub_epi16(_mm256_maddubs_epi16(n, a), _mm256_maddubs_epi16(eight, a)));
        __m256 sc = _mm256_set1_ps(f16_at(blk) * x->d[b]);
        if (b & 1)
            acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc1);
        else
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc0);
    }
    return hsum8(_mm256_add_ps(acc0, acc1));
}

INL float dot_q8_0(const struct hy_cpu_xq *x, const void *w, int64_t cols, bool pf)
{
    const unsigned char *w0 = w;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        const unsigned char *blk = w0 + b * sizeof(struct hy_q8_0_block);
        if (pf && !(b & 1)) /* 68 bytes every two blocks: two lines */
            prefetch_ahead(blk, 128);
        __m256i q = _mm256_loadu_si256((const void *)(blk + 2));
        __m256i a = _mm256_loadu_si256((const void *)(x->q + 32 * b));
        __m256i p = widen(_mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(a, q)));
        __m256 sc = _mm256_set1_ps(f16_at(blk) * x->d[b]);
        if (b & 1)
            acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc1);
        else
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc0);
    }
    return hsum8(_mm256_add_ps(acc0, acc1));
}


/* Q4_K: sub-block pairs (32 bytes: low nibbles sub-block 2i, high 2i+1); the eight scales
 * and mins of a super-block unpacked in registers and multiplied by the weight's and the
 * activations' scales as one vector, each sub-block's lane spread by a permutation; the mins
 * through the activation sums (x->s). Two accumulators: the sub-blocks' fmadds do not wait
 * on each other. */
INL float dot_q4_k(const struct hy_cpu_xq *x, const void *w, int64_t cols, bool pf)
{
    const unsigned char *w0 = w;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), corr = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < cols / HY_QK_K; sb++) {
        const unsigned char *blk = w0 + sb * sizeof(struct hy_q4_k_block);
        if (pf) /* 144 bytes: up to three lines */
            prefetch_ahead(blk, 192);
        __m128i sm = q4k_scales_mins_v(blk + 4);
        int32_t dw;
        memcpy(&dw, blk, 4); /* d and dmin */
        __m256 dd = _mm256_cvtph_ps(_mm_set1_epi32(dw));
        __m256 d = _mm256_moveldup_ps(dd), dmin = _mm256_movehdup_ps(dd);
        __m256 sd = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)), d),
                                  _mm256_loadu_ps(x->d + 8 * sb));
        __m256 mn = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))), dmin);
        corr = _mm256_fmadd_ps(mn, _mm256_loadu_ps(x->s + 8 * sb), corr);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            int64_t c = sb * HY_QK_K + 64 * i;
            __m256i v = _mm256_loadu_si256((const void *)(blk + 16 + 32 * i));
            __m256i p0 = widen(_mm256_maddubs_epi16(_mm256_and_si256(v, m4),
                                                    _mm256_loadu_si256((const void *)(x->q + c))));
            __m256i p1 = widen(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                                                    _mm256_loadu_si256((const void *)(x->q + c + 32))));
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0),
                                   _mm256_permutevar8x32_ps(sd, _mm256_set1_epi32(2 * i)), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1),
                                   _mm256_permutevar8x32_ps(sd, _mm256_set1_epi32(2 * i + 1)), acc1);
        }
    }
    return hsum8(_mm256_add_ps(acc0, acc1)) - hsum8(corr);
}

/* Half h of a Q6_K super-block (128 values) as four 32-byte vectors of q (0..63) in value
 * order: the low nibbles of ql with two bits of qh each. */
INL void q6k_half(const unsigned char *blk, int h, __m256i p[4])
{
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m256i ql0 = _mm256_loadu_si256((const void *)(blk + 64 * h));
    __m256i ql1 = _mm256_loadu_si256((const void *)(blk + 64 * h + 32));
    __m256i qh = _mm256_loadu_si256((const void *)(blk + 128 + 32 * h));
    p[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
    p[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
    p[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
    p[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
}

/* Q6_K: each half of a super-block (128 values) rebuilt as four 32-byte vectors of q
 * (0..63) in value order; (q - 32) * a in int16 pairs, then vpmaddwd by the two int8 scales
 * of the vector's sub-blocks of 16 (lanes 0-3 and 4-7 of the int32 result). */
INL float dot_q6_k(const struct hy_cpu_xq *x, const void *w, int64_t cols, bool pf)
{
    const unsigned char *w0 = w;
    const __m256i c32 = _mm256_set1_epi8(32);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < cols / HY_QK_K; sb++) {
        const unsigned char *blk = w0 + sb * sizeof(struct hy_q6_k_block);
        if (pf) /* 210 bytes: up to four lines */
            prefetch_ahead(blk, 256);
        const int8_t *scales = (const int8_t *)(blk + 192);
        float d = f16_at(blk + 208);
        for (int h = 0; h < 2; h++) {
            __m256i p[4];
            q6k_half(blk, h, p);
            for (int k = 0; k < 4; k++) {
                int64_t c = sb * HY_QK_K + 128 * h + 32 * k;
                __m256i a = _mm256_loadu_si256((const void *)(x->q + c));
                __m256i s16 = _mm256_sub_epi16(_mm256_maddubs_epi16(p[k], a), _mm256_maddubs_epi16(c32, a));
                const int8_t *sk = scales + 8 * h + 2 * k;
                __m256i scl = _mm256_set_m128i(_mm_set1_epi16(sk[1]), _mm_set1_epi16(sk[0]));
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(s16, scl)),
                                      _mm256_set1_ps(d * x->d[c / 32]), acc);
            }
        }
    }
    return hsum8(acc);
}

/* q_prep of Q6_K: each 32 values' offset products in int16 pairs, 32 * (a[2i] + a[2i+1])
 * (vpmaddubsw of the constant 32 with the activations), 32 bytes a 32 values: the half of
 * each block's integer work that does not depend on the row, done once a token instead of
 * once a row. */
TARGET static void q_prep_q6_k(unsigned char *aux, const struct hy_cpu_xq *x, int64_t cols)
{
    const __m256i c32 = _mm256_set1_epi8(32);
    for (int64_t c = 0; c < cols / 128 * 128; c += 32) {
        __m256i a = _mm256_loadu_si256((const void *)(x->q + c));
        _mm256_storeu_si256((void *)(aux + c / 128 * HY_CPU_AUX_PER_128 + c % 128),
                            _mm256_maddubs_epi16(c32, a));
    }
}

/* Q6_K against q_prep's offsets: as dot_q6_k with 32 * (a pair's sum) read from aux
 * instead of a second vpmaddubsw, the two int8 scales of each 32 values spread by a byte
 * shuffle and a sign extension, the float scales (d times the activations') made once a
 * super-block, two accumulators. */
INL float dot_q6_k_aux(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    const unsigned char *w0 = w;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < cols / HY_QK_K; sb++) {
        const unsigned char *blk = w0 + sb * sizeof(struct hy_q6_k_block);
        const unsigned char *a = x->aux + 2 * sb * HY_CPU_AUX_PER_128;
        prefetch_ahead(blk, 256); /* 210 bytes: up to four lines */
        __m128i scales = _mm_loadu_si128((const void *)(blk + 192));
        __m256 dx = _mm256_mul_ps(_mm256_set1_ps(f16_at(blk + 208)), _mm256_loadu_ps(x->d + 8 * sb));
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const unsigned char *ah = a + h * HY_CPU_AUX_PER_128;
            __m256i p[4];
            q6k_half(blk, h, p);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                int j = 4 * h + k; /* the 32 values' index in the super-block */
                int64_t c = sb * HY_QK_K + 32 * j;
                __m256i q = _mm256_loadu_si256((const void *)(x->q + c));
                __m256i s16 = _mm256_sub_epi16(_mm256_maddubs_epi16(p[k], q),
                                               _mm256_loadu_si256((const void *)(ah + 32 * k)));
                /* bytes 2j (lanes 0-3) and 2j+1 (lanes 4-7) of the scales, as int16 */
                __m128i si = _mm_set_epi64x((long long)(0x0101010101010101ull * (unsigned)(2 * j + 1)),
                                            (long long)(0x0101010101010101ull * (unsigned)(2 * j)));
                __m256i scl = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, si));
                __m256 f = _mm256_cvtepi32_ps(_mm256_madd_epi16(s16, scl));
                __m256 ds = _mm256_permutevar8x32_ps(dx, _mm256_set1_epi32(j));
                if (k & 1)
                    acc1 = _mm256_fmadd_ps(f, ds, acc1);
                else
                    acc0 = _mm256_fmadd_ps(f, ds, acc0);
            }
        }
    }
    return hsum8(_mm256_add_ps(acc0, acc1));
}

/* q_dot (decode: one row after the other) prefetches; the tiles and rows4 (prompts, read
 * in column chunks that stay in cache for several tokens) do not. */
#define ROWS_AND_TILE(sfx)                                                                      \
    TARGET static void q_rows4_##sfx(float *y, const struct hy_cpu_xq *x, const void *w,        \
                                     size_t stride, int64_t cols)                               \
    {                                                                                           \
        for (int i = 0; i < 4; i++)                                                             \
            y[i] = dot_##sfx(x, (const unsigned char *)w + i * stride, cols, false);            \
    }                                                                                           \
    TARGET static void q_tile_##sfx(float *y, int64_t ys, const struct hy_cpu_xq x[4],          \
                                    const void *w, size_t stride, int64_t n, bool add)          \
    {                                                                                           \
        for (int t = 0; t < 4; t++)                                                             \
            for (int i = 0; i < 4; i++) {                                                       \
                float v = dot_##sfx(&x[t], (const unsigned char *)w + i * stride, n, false);    \
                y[t * ys + i] = add ? y[t * ys + i] + v : v;                                    \
            }                                                                                   \
    }

/* q_dot with q_prep's activations (x->aux, set by matmul only where q_prep is) for Q6_K.
 * Q4_K has nothing to prepare (its nibbles pair with the activations in order); Q4_0's
 * offset products prepared the same way made its decode slower, not faster. */
TARGET static float q_dot_q4_0(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    return dot_q4_0(x, w, cols, true);
}

TARGET static float q_dot_q8_0(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    return dot_q8_0(x, w, cols, true);
}

TARGET static float q_dot_q4_k(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    return dot_q4_k(x, w, cols, true);
}

TARGET static float q_dot_q6_k(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    return x->aux ? dot_q6_k_aux(x, w, cols) : dot_q6_k(x, w, cols, true);
}

ROWS_AND_TILE(q4_0)
ROWS_AND_TILE(q8_0)
ROWS_AND_TILE(q4_k)
ROWS_AND_TILE(q6_k)

void hy_cpu_kernels_gguf_avx2(struct hy_cpu_kernels *k)
{
    struct hy_cpu_mm_kernels *m = k->mm;
    m[HY_DTYPE_Q4_0].q_rows4 = q_rows4_q4_0;
    m[HY_DTYPE_Q4_0].q_dot = q_dot_q4_0;
    m[HY_DTYPE_Q4_0].q_tile4x4 = q_tile_q4_0;
    m[HY_DTYPE_Q8_0].q_rows4 = q_rows4_q8_0;
    m[HY_DTYPE_Q8_0].q_dot = q_dot_q8_0;
    m[HY_DTYPE_Q8_0].q_tile4x4 = q_tile_q8_0;
    m[HY_DTYPE_Q4_K].q_rows4 = q_rows4_q4_k;
    m[HY_DTYPE_Q4_K].q_dot = q_dot_q4_k;
    m[HY_DTYPE_Q4_K].q_tile4x4 = q_tile_q4_k;
    m[HY_DTYPE_Q6_K].q_rows4 = q_rows4_q6_k;
    m[HY_DTYPE_Q6_K].q_dot = q_dot_q6_k;
    m[HY_DTYPE_Q6_K].q_tile4x4 = q_tile_q6_k;
    m[HY_DTYPE_Q6_K].q_prep = q_prep_q6_k;
}

#else

void hy_cpu_kernels_gguf_avx2(struct hy_cpu_kernels *k)
{
    (void)k;
}

#endif
