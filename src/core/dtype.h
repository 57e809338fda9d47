/* dtype.h: element types of weights and their conversion to and from float32.
 * bf16 -> f32 is exact; f32 -> bf16 rounds to nearest even (as PyTorch does), NaN stays NaN.
 * f16 <-> f32 follows IEEE 754 binary16 (subnormals, inf, NaN), rounding to nearest even.
 * Pure functions; thread-safe. */
#ifndef HY_CORE_DTYPE_H
#define HY_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum hy_dtype {
    HY_DTYPE_F32 = 0,
    HY_DTYPE_F16 = 1,
    HY_DTYPE_BF16 = 2,
    /* Weight-only int8 in the GGUF Q8_0 layout: blocks of HY_Q8_0_BLOCK consecutive
     * elements of a row, each an fp16 scale d and 32 int8 q; value = d * q. Never read from
     * or written to safetensors; made at load (hy_q8_0_quantize_row). */
    HY_DTYPE_Q8_0 = 3,
    /* float8 e4m3fn (safetensors "F8_E4M3"): 1 byte, bias 7, no inf, NaN 0x7f/0xff, max 448
     * (core/fp8.h). Read from fp8 checkpoints and dequantized at load; no matmul kernel. */
    HY_DTYPE_F8_E4M3 = 4,
    /* The 4/6-bit block types of core/quant.h: Q4_0, Q4_K and Q6_K in GGUF's layouts
     * (exchanged with llama.cpp), Q4_G128 hymt's own (made by --quant q4, never stored). */
    HY_DTYPE_Q4_0 = 5,
    HY_DTYPE_Q4_K = 6,
    HY_DTYPE_Q6_K = 7,
    HY_DTYPE_Q4_G128 = 8,
    /* Block-scaled fp8 kept as fp8 by a device backend (transformers' FineGrainedFP8 with
     * weight_block_size [128, 128]): e4m3fn codes [rows, cols] (1 byte each) and float32
     * scales [ceil(rows/128), ceil(cols/128)]; w[r][c] = e4m3(code) * scale[r/128][c/128];
     * cols a multiple of HY_F8_B128_COLS (the device rows' 16-byte loads). On the host a
     * weight's data is a descriptor of both (backend.h struct hy_f8b_src), not elements:
     * made by the loader only for a backend that keeps the type (weight_keeps), no host
     * conversion (hy_dtype_to_f32 asserts), never stored. */
    HY_DTYPE_F8_B128 = 9,
    HY_DTYPE_COUNT
};

#define HY_F8_B128_BLOCK 128 /* rows and columns a scale of HY_DTYPE_F8_B128 covers */
#define HY_F8_B128_COLS 16   /* its column count is a multiple of this */

#define HY_Q8_0_BLOCK 32
struct hy_q8_0_block {
    uint16_t d;                 /* fp16 scale */
    int8_t q[HY_Q8_0_BLOCK];
};
_Static_assert(sizeof(struct hy_q8_0_block) == 34, "Q8_0 block must be 34 bytes (GGUF layout)");

/* Bytes per block of hy_dtype_block_elems(t) elements: the element size for F32/F16/BF16/
 * F8_E4M3/F8_B128 (blocks of 1; F8_B128: its codes on a device), 34 for Q8_0 and 18 for
 * Q4_0 (blocks of 32), 144 for Q4_K and 210 for Q6_K (blocks of 256), 66 for Q4_G128
 * (blocks of 128). */
size_t hy_dtype_size(enum hy_dtype t);
/* Elements per block: 1 for the plain types, else the block size above. */
int64_t hy_dtype_block_elems(enum hy_dtype t);
/* Bytes of a row of `cols` elements; cols must be a multiple of hy_dtype_block_elems(t)
 * (asserted: callers check and refuse first). */
size_t hy_dtype_row_bytes(enum hy_dtype t, int64_t cols);
/* Spelling: the safetensors one ("F32", "F16", "BF16", "F8_E4M3"), or "Q8_0", "Q4_0",
 * "Q4_K", "Q6_K", "Q4_G128", "F8_B128". */
const char *hy_dtype_name(enum hy_dtype t);
/* Parses the safetensors spelling; returns -1 for anything else (also "Q8_0", which no
 * safetensors file holds). */
int hy_dtype_parse(const char *s);

/* Quantizes n float32 values (n a multiple of 32) to n/32 Q8_0 blocks at dst (which may be
 * unaligned): per block d = fp16(max|x|/127), q = round-to-nearest(x/d) (ties away from
 * zero), clamped to [-127, 127]; d = 0 gives q = 0. |x - d*q| <= d/2 while d is a normal
 * fp16 (max|x| >= 2^-7); below that the scale loses precision (as in GGUF). */
void hy_q8_0_quantize_row(void *dst, const float *src, int64_t n);
/* Dequantizes n/32 Q8_0 blocks at src (may be unaligned) to n float32 values. */
void hy_q8_0_dequantize_row(float *dst, const void *src, int64_t n);

static inline float hy_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t hy_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float hy_f16_to_f32(uint16_t h);
uint16_t hy_f32_to_f16(float f);

/* Converts n elements of type t at src to float32 at dst (n a multiple of the block). */
void hy_dtype_to_f32(float *dst, const void *src, enum hy_dtype t, size_t n);
/* Converts n float32 values to type t at dst (F8_E4M3: saturating, see core/fp8.h). */
void hy_dtype_from_f32(void *dst, const float *src, enum hy_dtype t, size_t n);

#endif
