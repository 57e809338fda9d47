/* kernels_gguf_avx512.c: the GGUF block types (Q4_0, Q8_0, Q4_K, Q6_K) against int8
 * activations per 32 values (struct hy_cpu_xq) on AVX-512 VNNI + BW: the decode dot
 * products (one row, one token) that matmul runs for T = 1 and, row by row, for small
 * batches (each row read from memory once for all of them), and the 4x4 tiles built on
 * them. Prompts go through the packed GEMM (gemm_gguf_avx512.c).
 *
 * Decode streams the weights once, so the work per weight byte must stay below what the
 * memory delivers: the integer dot products are exact (vpdpbusd), and each step's scales
 * are built from whole vectors (one load of the block headers, a word permutation, one
 * conversion) instead of scalar fp16 conversions; what does not depend on the row (the
 * activations' order, their offset sums) is made once per token by q_prep, and the q_dot
 * kernels read it when x->aux is set (the *_aux variants). Rows are read one after the
 * other, each a single stream with a software prefetch PF_BYTES ahead (as kernels_avx512.c's
 * Q4_G128). */
#include "backend/cpu/cpu_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include "backend/cpu/kernels_gguf_x86.h"

#include <immintrin.h>

#define TARGETQ __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma,f16c")))
/* the byte permutation of the Q4_0 gather (Ice Lake and later; checked at run time) */
#define TARGETV __attribute__((target("avx512f,avx512bw,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define INLQ static inline __attribute__((always_inline)) TARGETQ
#define PF_BYTES 4096

INLQ float f16_at(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* 16 floats: the fp16 words at word offsets idx[0..15] of the 64 bytes at p (block scales
 * that one load covers), each lane its own. */
INLQ __m512 f16_words(const unsigned char *p, __m256i idx)
{
    __m512i h = _mm512_loadu_si512((const void *)p);
    return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(_mm512_zextsi256_si512(idx), h)));
}

/* Q4_0 (value d*(nibble-8)): four blocks a step; lane 4k..4k+3 of the integer sums belong
 * to block k (the low nibbles of the four blocks against activations 0-15 of each, the high
 * ones against 16-31); the offset of 8 is subtracted in integers (vpdpbusd of the constant
 * 8). The four scales sit at words 0, 9, 18, 27 of the step's first 64 bytes. */
TARGETV static float q_dot_q4_0_aux(const struct hy_cpu_xq *x, const void *w, int64_t cols);

TARGETQ static float q_dot_q4_0(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    if (x->aux)
        return q_dot_q4_0_aux(x, w, cols);
    const unsigned char *w0 = w;
    const size_t bb = sizeof(struct hy_q4_0_block);
    const __m512i m4 = _mm512_set1_epi8(15), eight = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
    const __m256i didx = _mm256_setr_epi16(0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27);
    const __m512i xidx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 acc = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= cols / 32; b += 4) {
        const unsigned char *blk = w0 + b * bb;
        _mm_prefetch((const char *)blk + PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + PF_BYTES + 64, _MM_HINT_T0);
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const void *)(blk + 2)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)(blk + bb + 2)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)(blk + 2 * bb + 2)), 2);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)(blk + 3 * bb + 2)), 3);
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        __m512i a0 = _mm512_loadu_si512((const void *)(x->q + 32 * b));
        __m512i a1 = _mm512_loadu_si512((const void *)(x->q + 32 * b + 64));
        __m512i xlo = _mm512_shuffle_i64x2(a0, a1, 0x88), xhi = _mm512_shuffle_i64x2(a0, a1, 0xDD);
        __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, xlo), hi, xhi);
        __m512i c = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, eight, xlo), eight, xhi);
        __m512 dx = _mm512_permutexvar_ps(xidx, _mm512_castps128_ps512(_mm_loadu_ps(x->d + b)));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(p, c)),
                              _mm512_mul_ps(f16_words(blk, didx), dx), acc);
    }
    float s = _mm512_reduce_add_ps(acc);
    if (b < cols / 32) {
        struct hy_cpu_xq xt = hy_cpu_xq_at(x, 32 * b);
        s += hy_cpu_q_dot_ref(HY_DTYPE_Q4_0, &xt, w0 + b * bb, cols - 32 * b);
    }
    return s;
}

/* q_prep of Q4_0: for each 128 values (four blocks), the activations in the order of the
 * nibbles that q_dot_q4_0_aux gathers (bytes 16k..16k+15 of the first vector: values 0-15
 * of block k; of the second: values 16-31), each int32 lane's -8 * (sum of its eight
 * activations) (the nibble offset, so that the row's loop starts its sums there), and each
 * lane's activation scale: the work q_dot_q4_0 repeats for every row, done once. */
TARGETV static void q_prep_q4_0(unsigned char *aux, const struct hy_cpu_xq *x, int64_t cols)
{
    const __m512i xidx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i one = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    for (int64_t g = 0; g < cols / 128; g++) {
        unsigned char *o = aux + g * HY_CPU_AUX_PER_128;
        __m512i a0 = _mm512_loadu_si512((const void *)(x->q + 128 * g));
        __m512i a1 = _mm512_loadu_si512((const void *)(x->q + 128 * g + 64));
        __m512i xlo = _mm512_shuffle_i64x2(a0, a1, 0x88), xhi = _mm512_shuffle_i64x2(a0, a1, 0xDD);
        /* the signed activations summed against 1 (vpdpbusd's unsigned operand) */
        __m512i sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, one, xlo), one, xhi);
        _mm512_storeu_si512((void *)o, xlo);
        _mm512_storeu_si512((void *)(o + 64), xhi);
        _mm512_storeu_si512((void *)(o + 128), _mm512_sub_epi32(zero, _mm512_slli_epi32(sum, 3)));
        _mm512_storeu_ps(o + 192, _mm512_permutexvar_ps(xidx, _mm512_castps128_ps512(_mm_loadu_ps(x->d + 4 * g))));
    }
}

/* Q4_0 against q_prep's activations: the four blocks' quants gathered by one byte
 * permutation of two overlapping loads, the nibble offset already in the sums' start. */
TARGETV static float q_dot_q4_0_aux(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    const unsigned char *w0 = w;
    const size_t bb = sizeof(struct hy_q4_0_block);
    const __m512i m4 = _mm512_set1_epi8(15);
    const __m512i didx = _mm512_zextsi256_si512(
        _mm256_setr_epi16(0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27));
    /* byte j of the gather: quant byte j%16 of block j/16, at 18*(j/16) + 2 + j%16 of the
     * step; below 64 from the first load, else (bit 6) from the second, 8 bytes on */
    static const unsigned char gsrc[64] = {
#define G(k, i) (18 * (k) + 2 + (i) < 64 ? 18 * (k) + 2 + (i) : 64 + 18 * (k) + 2 + (i) - 8)
#define G4(k, i) G(k, i), G(k, i + 1), G(k, i + 2), G(k, i + 3)
#define G16(k) G4(k, 0), G4(k, 4), G4(k, 8), G4(k, 12)
        G16(0), G16(1), G16(2), G16(3)
#undef G16
#undef G4
#undef G
    };
    const __m512i gidx = _mm512_loadu_si512((const void *)gsrc);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t g = 0;
    for (; g < cols / 128; g++) {
        const unsigned char *blk = w0 + 4 * g * bb, *a = x->aux + g * HY_CPU_AUX_PER_128;
        _mm_prefetch((const char *)blk + PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + PF_BYTES + 64, _MM_HINT_T0);
        __m512i v0 = _mm512_loadu_si512((const void *)blk);
        __m512i v = _mm512_permutex2var_epi8(v0, gidx, _mm512_loadu_si512((const void *)(blk + 8)));
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        __m512i p = _mm512_loadu_si512((const void *)(a + 128));
        p = _mm512_dpbusd_epi32(p, lo, _mm512_loadu_si512((const void *)a));
        p = _mm512_dpbusd_epi32(p, hi, _mm512_loadu_si512((const void *)(a + 64)));
        __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(didx, v0)));
        __m512 sc = _mm512_mul_ps(dw, _mm512_loadu_ps(a + 192));
        if (g & 1)
            acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), sc, acc1);
        else
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), sc, acc0);
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    if (4 * g < cols / 32) {
        struct hy_cpu_xq xt = hy_cpu_xq_at(x, 128 * g);
        s += hy_cpu_q_dot_ref(HY_DTYPE_Q4_0, &xt, w0 + 4 * g * bb, cols - 128 * g);
    }
    return s;
}

/* Q8_0 (value d*q, q signed): two blocks a step, lanes 0-7 the first; vpdpbusd multiplies
 * unsigned by signed bytes, so it takes |q| against the activations carrying q's sign
 * (exact). The two scales are words 0 and 17 of the step's first 64 bytes. */
TARGETQ static float q_dot_q8_0(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    const unsigned char *w0 = w;
    const size_t bb = sizeof(struct hy_q8_0_block);
    const __m512i zero = _mm512_setzero_si512();
    const __m256i didx = _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 17, 17, 17, 17, 17, 17, 17, 17);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= cols / 32; b += 2) {
        const unsigned char *blk = w0 + b * bb;
        _mm_prefetch((const char *)blk + PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + PF_BYTES + 64, _MM_HINT_T0);
        __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)(blk + 2))),
                                       _mm256_loadu_si256((const void *)(blk + bb + 2)), 1);
        __m512i a = _mm512_loadu_si512((const void *)(x->q + 32 * b));
        __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(q), zero, a);
        __m512i p = _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(q), sa);
        __m512 sc = _mm512_mul_ps(f16_words(blk, didx), _mm512_loadu_ps(x->d8 + 8 * b));
        if (b & 2)
            acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), sc, acc1);
        else
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), sc, acc0);
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    if (b < cols / 32) {
        struct hy_cpu_xq xt = hy_cpu_xq_at(x, 32 * b);
        s += hy_cpu_q_dot_ref(HY_DTYPE_Q8_0, &xt, w0 + b * bb, 32);
    }
    return s;
}

/* The 8 six-bit scales (bytes 0-7) and mins (bytes 8-15) of a Q4_K block's 12 packed bytes
 * (hy_q4_k_scale_min for all eight at once, in 32-bit words). */
INLQ __m128i q4k_scales_mins(const unsigned char *s)
{
    uint32_t u[4];
    memcpy(u, s, 12);
    const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    u[3] = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);
    uint32_t mins_lo = u[1] & m6;
    u[1] = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);
    u[2] = mins_lo;
    u[0] &= m6;
    return _mm_loadu_si128((const void *)u);
}


/* q_prep of Q4_K: each half super-block's activations in the order of the nibbles of one
 * 64-byte load of its quants: sub-blocks 0, 2 (the low nibbles) then 1, 3 (the high). */
TARGETQ static void q_prep_q4_k(unsigned char *aux, const struct hy_cpu_xq *x, int64_t cols)
{
    for (int64_t g = 0; g < cols / 128; g++) {
        unsigned char *o = aux + g * HY_CPU_AUX_PER_128;
        __m512i a0 = _mm512_loadu_si512((const void *)(x->q + 128 * g));
        __m512i a1 = _mm512_loadu_si512((const void *)(x->q + 128 * g + 64));
        _mm512_storeu_si512((void *)o, _mm512_shuffle_i64x2(a0, a1, 0x44));       /* 0, 2 */
        _mm512_storeu_si512((void *)(o + 64), _mm512_shuffle_i64x2(a0, a1, 0xEE)); /* 1, 3 */
    }
}

/* Q4_K against q_prep's activations: a half super-block a step (one 64-byte load, two
 * vpdpbusd); each sub-block's weight and activation scales multiplied once a super-block. */
TARGETQ static float q_dot_q4_k_aux(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    const unsigned char *w0 = w;
    const __m512i m4 = _mm512_set1_epi8(15), zero = _mm512_setzero_si512();
    const __m512i i02 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i i13 = _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m512i four = _mm512_set1_epi32(4);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m256 corr = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < cols / HY_QK_K; sb++) {
        const unsigned char *blk = w0 + sb * sizeof(struct hy_q4_k_block);
        const unsigned char *a = x->aux + 2 * sb * HY_CPU_AUX_PER_128;
        _mm_prefetch((const char *)blk + PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + PF_BYTES + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + PF_BYTES + 128, _MM_HINT_T0);
        __m128i sm = q4k_scales_mins_v(blk + 4);
        int32_t dw;
        memcpy(&dw, blk, 4); /* d and dmin */
        __m256 dd = _mm256_cvtph_ps(_mm_set1_epi32(dw));
        __m256 d = _mm256_moveldup_ps(dd), dmin = _mm256_movehdup_ps(dd);
        __m512 sd = _mm512_castps256_ps512(_mm256_mul_ps(
            _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)), d), _mm256_loadu_ps(x->d + 8 * sb)));
        __m256 mn = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))), dmin);
        corr = _mm256_fmadd_ps(mn, _mm256_loadu_ps(x->s + 8 * sb), corr);
        __m512i v0 = _mm512_loadu_si512((const void *)(blk + 16)), v1 = _mm512_loadu_si512((const void *)(blk + 80));
        __m512i p0 = _mm512_dpbusd_epi32(zero, _mm512_and_si512(v0, m4), _mm512_loadu_si512((const void *)a));
        __m512i p1 = _mm512_dpbusd_epi32(zero, _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4),
                                         _mm512_loadu_si512((const void *)(a + 64)));
        __m512i p2 = _mm512_dpbusd_epi32(zero, _mm512_and_si512(v1, m4),
                                         _mm512_loadu_si512((const void *)(a + HY_CPU_AUX_PER_128)));
        __m512i p3 = _mm512_dpbusd_epi32(zero, _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4),
                                         _mm512_loadu_si512((const void *)(a + HY_CPU_AUX_PER_128 + 64)));
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), _mm512_permutexvar_ps(i02, sd), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), _mm512_permutexvar_ps(i13, sd), acc1);
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p2), _mm512_permutexvar_ps(_mm512_add_epi32(i02, four), sd), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p3), _mm512_permutexvar_ps(_mm512_add_epi32(i13, four), sd), acc1);
    }
    __m128 c4 = _mm_add_ps(_mm256_castps256_ps128(corr), _mm256_extractf128_ps(corr, 1));
    c4 = _mm_add_ps(c4, _mm_movehl_ps(c4, c4));
    c4 = _mm_add_ss(c4, _mm_movehdup_ps(c4));
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) - _mm_cvtss_f32(c4);
}

/* Q4_K (value d*sc_j*q - dmin*m_j per sub-block j of 32): a sub-block pair (32 bytes, low
 * nibbles sub-block 2i, high 2i+1) a step, lanes 0-7 and 8-15; the eight scales converted
 * once a super-block; the mins through the activation sums (x->s), eight at a time. */
TARGETQ static float q_dot_q4_k(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    if (x->aux)
        return q_dot_q4_k_aux(x, w, cols);
    const unsigned char *w0 = w;
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m512i zero = _mm512_setzero_si512();
    __m512 acc = _mm512_setzero_ps();
    __m256 corr = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < cols / HY_QK_K; sb++) {
        const unsigned char *blk = w0 + sb * sizeof(struct hy_q4_k_block);
        _mm_prefetch((const char *)blk + PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + PF_BYTES + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + PF_BYTES + 128, _MM_HINT_T0);
        __m128i sm = q4k_scales_mins(blk + 4);
        __m512 sc = _mm512_castps256_ps512(
            _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)), _mm256_set1_ps(f16_at(blk))));
        __m256 mn = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))),
                                  _mm256_set1_ps(f16_at(blk + 2)));
        corr = _mm256_fmadd_ps(mn, _mm256_loadu_ps(x->s + 8 * sb), corr);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            int64_t c = sb * HY_QK_K + 64 * i; /* first value of the pair */
            __m256i v = _mm256_loadu_si256((const void *)(blk + 16 + 32 * i));
            __m512i n = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, m4)),
                                           _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), 1);
            __m512i p = _mm512_dpbusd_epi32(zero, n, _mm512_loadu_si512((const void *)(x->q + c)));
            __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * i), _mm256_set1_epi32(2 * i + 1), 1);
            __m512 ls = _mm512_mul_ps(_mm512_permutexvar_ps(idx, sc), _mm512_loadu_ps(x->d8 + c / 4));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), ls, acc);
        }
    }
    __m128 c4 = _mm_add_ps(_mm256_castps256_ps128(corr), _mm256_extractf128_ps(corr, 1));
    c4 = _mm_add_ps(c4, _mm_movehl_ps(c4, c4));
    c4 = _mm_add_ss(c4, _mm_movehdup_ps(c4));
    return _mm512_reduce_add_ps(acc) - _mm_cvtss_f32(c4);
}

/* Q6_K (value d*sc[e/16]*(q-32), q = 4 low bits from ql | 2 high bits from qh): each half
 * of a super-block (128 values) is rebuilt as two 64-byte vectors of q (0..63) in value
 * order; vpdpbusd of q and of the constant 32 with the activations give the exact integer
 * dot of (q - 32); lanes hold 4 values, so each group of 4 lanes shares one of the 16
 * scales, converted once a super-block and spread by a permutation. */
TARGETQ static float q_dot_q6_k_aux(const struct hy_cpu_xq *x, const void *w, int64_t cols);

TARGETQ static float q_dot_q6_k(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    if (x->aux)
        return q_dot_q6_k_aux(x, w, cols);
    const unsigned char *w0 = w;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    const __m512i c32 = _mm512_set1_epi8(32), zero = _mm512_setzero_si512();
    const __m512i lane4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < cols / HY_QK_K; sb++) {
        const unsigned char *blk = w0 + sb * sizeof(struct hy_q6_k_block);
        for (int k = 0; k < 4; k++)
            _mm_prefetch((const char *)blk + PF_BYTES + 64 * k, _MM_HINT_T0);
        __m512 sc = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const void *)(blk + 192)))),
                                  _mm512_set1_ps(f16_at(blk + 208)));
        for (int h = 0; h < 2; h++) {
            __m256i ql0 = _mm256_loadu_si256((const void *)(blk + 64 * h));
            __m256i ql1 = _mm256_loadu_si256((const void *)(blk + 64 * h + 32));
            __m256i qh = _mm256_loadu_si256((const void *)(blk + 128 + 32 * h));
            __m256i p0 = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            __m256i p1 = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
            __m256i p2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
            __m256i p3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
            int64_t c = sb * HY_QK_K + 128 * h;
            for (int v = 0; v < 2; v++) {
                __m512i q = v ? _mm512_inserti64x4(_mm512_castsi256_si512(p2), p3, 1)
                              : _mm512_inserti64x4(_mm512_castsi256_si512(p0), p1, 1);
                __m512i a = _mm512_loadu_si512((const void *)(x->q + c + 64 * v));
                __m512i dq = _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, q, a), _mm512_dpbusd_epi32(zero, c32, a));
                __m512 ls = _mm512_permutexvar_ps(_mm512_add_epi32(lane4, _mm512_set1_epi32(8 * h + 4 * v)), sc);
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dq),
                                      _mm512_mul_ps(ls, _mm512_loadu_ps(x->d8 + (c + 64 * v) / 4)), acc);
            }
        }
    }
    return _mm512_reduce_add_ps(acc);
}

/* q_prep of Q6_K: each int32 lane's -32 * (sum of its four activations), in value order:
 * the offset of the six-bit quants, so that the row's sums start there. */
TARGETQ static void q_prep_q6_k(unsigned char *aux, const struct hy_cpu_xq *x, int64_t cols)
{
    const __m512i one = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    for (int64_t c = 0; c < cols / 128 * 128; c += 64) {
        __m512i sum = _mm512_dpbusd_epi32(zero, one, _mm512_loadu_si512((const void *)(x->q + c)));
        unsigned char *o = aux + c / 128 * HY_CPU_AUX_PER_128 + c % 128; /* 64 bytes of 256 a 128 */
        _mm512_storeu_si512((void *)o, _mm512_sub_epi32(zero, _mm512_slli_epi32(sum, 5)));
    }
}

/* Q6_K against q_prep's sums: a half super-block's quants rebuilt in two 64-byte vectors
 * (the low bits of 64 bytes, the two high bits from 32 bytes loaded twice and shifted per
 * half), each sub-block's weight and activation scales multiplied once a super-block. */
TARGETQ static float q_dot_q6_k_aux(const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    const unsigned char *w0 = w;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
    const __m512i qhsh = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i lane4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i half = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < cols / HY_QK_K; sb++) {
        const unsigned char *blk = w0 + sb * sizeof(struct hy_q6_k_block);
        const unsigned char *a = x->aux + 2 * sb * HY_CPU_AUX_PER_128;
        for (int k = 0; k < 4; k++)
            _mm_prefetch((const char *)blk + PF_BYTES + 64 * k, _MM_HINT_T0);
        __m512 dx = _mm512_permutexvar_ps(half, _mm512_castps256_ps512(_mm256_loadu_ps(x->d + 8 * sb)));
        __m512 sc = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const void *)(blk + 192)))),
                                  _mm512_mul_ps(_mm512_set1_ps(f16_at(blk + 208)), dx));
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m512i ql = _mm512_loadu_si512((const void *)(blk + 64 * h));
            __m512i qh = _mm512_srlv_epi16(
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const void *)(blk + 128 + 32 * h))), qhsh);
            __m512i q01 = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(qh, m2), 4));
            __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                          _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 4), m2), 4));
            const unsigned char *ah = a + h * HY_CPU_AUX_PER_128;
            int64_t c = sb * HY_QK_K + 128 * h;
            __m512i p0 = _mm512_dpbusd_epi32(_mm512_loadu_si512((const void *)ah), q01,
                                             _mm512_loadu_si512((const void *)(x->q + c)));
            __m512i p1 = _mm512_dpbusd_epi32(_mm512_loadu_si512((const void *)(ah + 64)), q23,
                                             _mm512_loadu_si512((const void *)(x->q + c + 64)));
            __m512i i0 = _mm512_add_epi32(lane4, _mm512_set1_epi32(8 * h));
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), _mm512_permutexvar_ps(i0, sc), acc0);
            acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1),
                                   _mm512_permutexvar_ps(_mm512_add_epi32(i0, _mm512_set1_epi32(4)), sc), acc1);
        }
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

#define ROWS_AND_TILE(sfx)                                                                      \
    TARGETQ static void q_rows4_##sfx(float *y, const struct hy_cpu_xq *x, const void *w,       \
                                      size_t stride, int64_t cols)                              \
    {                                                                                           \
        for (int i = 0; i < 4; i++)                                                             \
            y[i] = q_dot_##sfx(x, (const unsigned char *)w + i * stride, cols);                 \
    }                                                                                           \
    /* the 4 rows' chunk stays in L1 while the 4 tokens pass */                                 \
    TARGETQ static void q_tile_##sfx(float *y, int64_t ys, const struct hy_cpu_xq x[4],         \
                                     const void *w, size_t stride, int64_t n, bool add)         \
    {                                                                                           \
        for (int t = 0; t < 4; t++)                                                             \
            for (int i = 0; i < 4; i++) {                                                       \
                float v = q_dot_##sfx(&x[t], (const unsigned char *)w + i * stride, n);         \
                y[t * ys + i] = add ? y[t * ys + i] + v : v;                                    \
            }                                                                                   \
    }

ROWS_AND_TILE(q4_0)
ROWS_AND_TILE(q8_0)
ROWS_AND_TILE(q4_k)
ROWS_AND_TILE(q6_k)

void hy_cpu_kernels_gguf_avx512(struct hy_cpu_kernels *k)
{
    struct hy_cpu_mm_kernels *m = k->mm;
    m[HY_DTYPE_Q4_0].q_rows4 = q_rows4_q4_0;
    m[HY_DTYPE_Q4_0].q_dot = q_dot_q4_0;
    m[HY_DTYPE_Q4_0].q_tile4x4 = q_tile_q4_0;
    if (__builtin_cpu_supports("avx512vbmi")) /* x->aux is set only where q_prep is */
        m[HY_DTYPE_Q4_0].q_prep = q_prep_q4_0;
    m[HY_DTYPE_Q8_0].q_rows4 = q_rows4_q8_0;
    m[HY_DTYPE_Q8_0].q_dot = q_dot_q8_0;
    m[HY_DTYPE_Q8_0].q_tile4x4 = q_tile_q8_0;
    m[HY_DTYPE_Q4_K].q_rows4 = q_rows4_q4_k;
    m[HY_DTYPE_Q4_K].q_dot = q_dot_q4_k;
    m[HY_DTYPE_Q4_K].q_tile4x4 = q_tile_q4_k;
    m[HY_DTYPE_Q4_K].q_prep = q_prep_q4_k;
    m[HY_DTYPE_Q6_K].q_rows4 = q_rows4_q6_k;
    m[HY_DTYPE_Q6_K].q_dot = q_dot_q6_k;
    m[HY_DTYPE_Q6_K].q_tile4x4 = q_tile_q6_k;
    m[HY_DTYPE_Q6_K].q_prep = q_prep_q6_k;
    hy_cpu_gemm_gguf_avx512(k);
}

#else

void hy_cpu_kernels_gguf_avx512(struct hy_cpu_kernels *k)
{
    (void)k;
}

#endif
