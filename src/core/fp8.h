/* fp8.h: float8 e4m3fn (the "float8_e4m3fn" of PyTorch, safetensors "F8_E4M3") <-> float32.
 * Layout: 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits; no infinities; the codes
 * 0x7f and 0xff are NaN; the largest finite value is 448 (0x7e); subnormals are m * 2^-9
 * (exponent field 0), the smallest 2^-9.
 * Decoding is exact for all 256 codes. Encoding rounds to nearest, ties to even, and
 * saturates: |x| >= 448 (including infinity) gives +-448, which is what PyTorch's
 * `x.clamp(-448, 448).to(torch.float8_e4m3fn)` gives (a plain `.to()` turns |x| >= 464 into
 * NaN). NaN stays NaN (sign kept); -0 stays -0; |x| <= 2^-10 rounds to (signed) zero.
 * Pure functions; thread-safe. */
#ifndef HY_CORE_FP8_H
#define HY_CORE_FP8_H

#include <stddef.h>
#include <stdint.h>

#define HY_FP8_E4M3_MAX 448.0f

float hy_fp8_e4m3_to_f32(uint8_t b);
uint8_t hy_fp8_e4m3_from_f32(float f);

/* n codes at src (any alignment) to float32. */
void hy_fp8_e4m3_to_f32_n(float *dst, const void *src, size_t n);
/* n float32 values to codes at dst, saturating as hy_fp8_e4m3_from_f32. */
void hy_fp8_e4m3_from_f32_n(void *dst, const float *src, size_t n);

/* The 256 decoded values, for table-driven loops: lut[b] = hy_fp8_e4m3_to_f32(b). */
void hy_fp8_e4m3_table(float lut[256]);

#endif
