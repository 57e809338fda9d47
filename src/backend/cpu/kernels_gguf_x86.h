/* kernels_gguf_x86.h: inline helpers that the x86 GGUF kernels share
 * (kernels_gguf_avx2.c, kernels_gguf_avx512.c). Written with AVX2 instructions only, so an
 * AVX-512 function inlines them too (a callee's target must be a subset of its caller's).
 * Included by those two files alone, on x86-64 with GCC or clang. */
#ifndef HY_BACKEND_CPU_KERNELS_GGUF_X86_H
#define HY_BACKEND_CPU_KERNELS_GGUF_X86_H

#include <immintrin.h>

#define GGUF_X86_INL static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* The 8 six-bit scales (bytes 0-7) and mins (bytes 8-15) of a Q4_K block's 12 packed bytes
 * (hy_q4_k_scale_min for all eight at once) in vector registers: the 12 bytes read as words
 * u0..u2 (one 16-byte load that runs 4 bytes into the quants), out lanes u0 & m6,
 * (u2 & m4) | ((u0 >> 6) & m2) << 4, u1 & m6, ((u2 >> 4) & m4) | ((u1 >> 6) & m2) << 4 (no
 * scalar stores and reloads: a wide load of narrow stores stalls). */
GGUF_X86_INL __m128i q4k_scales_mins_v(const unsigned char *s)
{
    __m128i u = _mm_loadu_si128((const void *)s);
    __m128i a = _mm_srlv_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4));
    __m128i b = _mm_shuffle_epi32(u, _MM_SHUFFLE(1, 0, 0, 0));
    __m128i lo = _mm_and_si128(a, _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    __m128i hi = _mm_and_si128(_mm_srli_epi32(b, 6), _mm_setr_epi32(0, 0x03030303, 0, 0x03030303));
    return _mm_or_si128(lo, _mm_slli_epi32(hi, 4));
}

#endif
