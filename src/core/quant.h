/* quant.h: the 4- and 6-bit block weight types: their byte layouts, quantizers and
 * dequantizers. Q4_0, Q4_K and Q6_K are GGUF's (llama.cpp ggml-common.h): dequantization is
 * exactly llama.cpp's, so GGUF files are exchanged with it; the quantizers follow the same
 * ideas (Q4_K/Q6_K search each sub-block's scale) but need not be bit-identical to
 * llama.cpp's. Q4_G128 is hymt's own (never in a file): what `--quant q4` makes.
 * Blocks may sit unaligned in memory (mmapped files): everything reads through memcpy.
 * n (elements) must be a multiple of the type's block (asserted). Pure; thread-safe. */
#ifndef HY_CORE_QUANT_H
#define HY_CORE_QUANT_H

#include <stdint.h>

/* Q4_0: 32 elements, fp16 d and 16 bytes; element j (j < 16) in the low nibble of byte j,
 * element j+16 in its high nibble; value = d * (nibble - 8). */
#define HY_Q4_0_BLOCK 32
struct hy_q4_0_block {
    uint16_t d;
    uint8_t qs[HY_Q4_0_BLOCK / 2];
};
_Static_assert(sizeof(struct hy_q4_0_block) == 18, "Q4_0 block must be 18 bytes (GGUF layout)");

/* Q4_K: super-blocks of 256 = 8 sub-blocks of 32. fp16 d, fp16 dmin, 12 bytes holding
 * eight 6-bit scales sc[j] and mins m[j] (j < 4: sc = s[j] & 63, m = s[j+4] & 63; j >= 4:
 * sc = (s[j+4] & 15) | (s[j-4] >> 6) << 4, m = (s[j+4] >> 4) | (s[j] >> 6) << 4), then 128
 * bytes: sub-blocks 2i and 2i+1 share bytes 32i..32i+31, low nibble for 2i, high for 2i+1.
 * value = d*sc[j]*q - dmin*m[j]. */
#define HY_QK_K 256
struct hy_q4_k_block {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[HY_QK_K / 2];
};
_Static_assert(sizeof(struct hy_q4_k_block) == 144, "Q4_K block must be 144 bytes (GGUF layout)");

/* Q6_K: super-blocks of 256, 16 sub-blocks of 16 with int8 scales. ql[128] (low 4 bits),
 * qh[64] (high 2 bits), scales[16], fp16 d. In each half of 128 elements (ql advancing
 * by 64, qh by 32), for l < 32: element l is ql[l] low | qh[l] bits 0-1, l+32 is ql[l+32]
 * low | bits 2-3, l+64 is ql[l] high | bits 4-5, l+96 is ql[l+32] high | bits 6-7;
 * value = d * scales[element/16] * (q - 32). */
struct hy_q6_k_block {
    uint8_t ql[HY_QK_K / 2];
    uint8_t qh[HY_QK_K / 4];
    int8_t scales[HY_QK_K / 16];
    uint16_t d;
};
_Static_assert(sizeof(struct hy_q6_k_block) == 210, "Q6_K block must be 210 bytes (GGUF layout)");

/* Q4_G128 (hymt only): 128 elements, fp16 d and 64 bytes; element j (j < 64) in the low
 * nibble of byte j, element j+64 in its high nibble; value = d * (nibble - 8). 4.125 bits a
 * weight (Q4_0: 4.5), the split matching one 64-byte vector of low and one of high nibbles. */
#define HY_Q4_G128_BLOCK 128
struct hy_q4_g128_block {
    uint16_t d;
    uint8_t qs[HY_Q4_G128_BLOCK / 2];
};
_Static_assert(sizeof(struct hy_q4_g128_block) == 66, "Q4_G128 block must be 66 bytes");

/* Q4_0 as llama.cpp's reference: d = m/-8 where m is the element of largest magnitude, so
 * that it maps to nibble 0 exactly; q = min(15, trunc(x/d + 8.5)). */
void hy_q4_0_quantize_row(void *dst, const float *src, int64_t n);
void hy_q4_0_dequantize_row(float *dst, const void *src, int64_t n);

/* Q4_K: per sub-block, a weighted least-squares search over candidate scales for the
 * (scale, min) pair (weights |x| + rms of the sub-block), then 6-bit scales and mins relative
 * to the largest, and the nibbles requantized against the stored values. */
void hy_q4_k_quantize_row(void *dst, const float *src, int64_t n);
void hy_q4_k_dequantize_row(float *dst, const void *src, int64_t n);

/* Q6_K: per sub-block of 16 a searched symmetric scale, int8 scales relative to the largest,
 * q in [-32, 31] requantized against the stored scales. */
void hy_q6_k_quantize_row(void *dst, const float *src, int64_t n);
void hy_q6_k_dequantize_row(float *dst, const void *src, int64_t n);

/* Q4_G128: per group a search over candidate scales for the least squared error, q
 * requantized against the stored fp16 d (|x - value| <= d/2 inside the representable
 * range [-8d, 7d]). */
void hy_q4_g128_quantize_row(void *dst, const float *src, int64_t n);
void hy_q4_g128_dequantize_row(float *dst, const void *src, int64_t n);

/* The 6-bit scale and min of sub-block j < 8 of a Q4_K block's 12 packed bytes. */
static inline void hy_q4_k_scale_min(int j, const uint8_t *s, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

#endif
