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
    HY_DTYPE_COUNT
};

/* Bytes per element. */
size_t hy_dtype_size(enum hy_dtype t);
/* safetensors spelling: "F32", "F16", "BF16". */
const char *hy_dtype_name(enum hy_dtype t);
/* Parses the safetensors spelling; returns -1 for anything else. */
int hy_dtype_parse(const char *s);

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

/* Converts n elements of type t at src to float32 at dst. */
void hy_dtype_to_f32(float *dst, const void *src, enum hy_dtype t, size_t n);
/* Converts n float32 values to type t at dst. */
void hy_dtype_from_f32(void *dst, const float *src, enum hy_dtype t, size_t n);

#endif
