#include "core/dtype.h"

#include "core/fp8.h"
#include "core/quant.h"
#include "core/status.h"

#include <math.h>

size_t hy_dtype_size(enum hy_dtype t)
{
    switch (t) {
    case HY_DTYPE_F32: return 4;
    case HY_DTYPE_F16: return 2;
    case HY_DTYPE_BF16: return 2;
    case HY_DTYPE_Q8_0: return sizeof(struct hy_q8_0_block);
    case HY_DTYPE_F8_E4M3: return 1;
    case HY_DTYPE_F8_B128: return 1;
    case HY_DTYPE_Q4_0: return sizeof(struct hy_q4_0_block);
    case HY_DTYPE_Q4_K: return sizeof(struct hy_q4_k_block);
    case HY_DTYPE_Q6_K: return sizeof(struct hy_q6_k_block);
    case HY_DTYPE_Q4_G128: return sizeof(struct hy_q4_g128_block);
    default: break;
    }
    HY_ASSERT(!"unknown dtype");
    return 0;
}

int64_t hy_dtype_block_elems(enum hy_dtype t)
{
    switch (t) {
    case HY_DTYPE_Q8_0: return HY_Q8_0_BLOCK;
    case HY_DTYPE_Q4_0: return HY_Q4_0_BLOCK;
    case HY_DTYPE_Q4_K: return HY_QK_K;
    case HY_DTYPE_Q6_K: return HY_QK_K;
    case HY_DTYPE_Q4_G128: return HY_Q4_G128_BLOCK;
    default: return 1;
    }
}

size_t hy_dtype_row_bytes(enum hy_dtype t, int64_t cols)
{
    int64_t b = hy_dtype_block_elems(t);
    HY_ASSERT(cols >= 0 && cols % b == 0);
    return (size_t)(cols / b) * hy_dtype_size(t);
}

void hy_q8_0_quantize_row(void *dst, const float *src, int64_t n)
{
    HY_ASSERT(n % HY_Q8_0_BLOCK == 0);
    unsigned char *out = dst;
    for (int64_t b = 0; b < n / HY_Q8_0_BLOCK; b++) {
        const float *x = src + b * HY_Q8_0_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < HY_Q8_0_BLOCK; i++)
            amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
        struct hy_q8_0_block blk;
        /* q is computed against the stored (fp16-rounded) scale, so that every element is
         * within d/2 of its dequantized value: d16 >= d*(1 - 2^-11) keeps max|x|/d16 below
         * 127.5, so the clamp never costs more than half a step. */
        blk.d = hy_f32_to_f16(amax / 127.0f);
        float d = hy_f16_to_f32(blk.d);
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < HY_Q8_0_BLOCK; i++) {
            float v = roundf(x[i] * id);
            blk.q[i] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
        }
        memcpy(out + (size_t)b * sizeof blk, &blk, sizeof blk);
    }
}

void hy_q8_0_dequantize_row(float *dst, const void *src, int64_t n)
{
    HY_ASSERT(n % HY_Q8_0_BLOCK == 0);
    const unsigned char *in = src;
    for (int64_t b = 0; b < n / HY_Q8_0_BLOCK; b++) {
        struct hy_q8_0_block blk;
        memcpy(&blk, in + (size_t)b * sizeof blk, sizeof blk);
        float d = hy_f16_to_f32(blk.d);
        for (int i = 0; i < HY_Q8_0_BLOCK; i++)
            dst[b * HY_Q8_0_BLOCK + i] = d * (float)blk.q[i];
    }
}

const char *hy_dtype_name(enum hy_dtype t)
{
    switch (t) {
    case HY_DTYPE_F32: return "F32";
    case HY_DTYPE_F16: return "F16";
    case HY_DTYPE_BF16: return "BF16";
    case HY_DTYPE_Q8_0: return "Q8_0";
    case HY_DTYPE_F8_E4M3: return "F8_E4M3";
    case HY_DTYPE_Q4_0: return "Q4_0";
    case HY_DTYPE_Q4_K: return "Q4_K";
    case HY_DTYPE_Q6_K: return "Q6_K";
    case HY_DTYPE_Q4_G128: return "Q4_G128";
    case HY_DTYPE_F8_B128: return "F8_B128";
    default: break;
    }
    return "?";
}

int hy_dtype_parse(const char *s)
{
    if (!strcmp(s, "F32"))
        return HY_DTYPE_F32;
    if (!strcmp(s, "F16"))
        return HY_DTYPE_F16;
    if (!strcmp(s, "BF16"))
        return HY_DTYPE_BF16;
    if (!strcmp(s, "F8_E4M3"))
        return HY_DTYPE_F8_E4M3;
    return -1;
}

float hy_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t hy_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return sign | 0x7e00u;
    if (a >= 0x477ff000u) /* rounds to >= 65520: inf */
        return sign | 0x7c00u;
    if (a < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (a < 0x33000000u) /* below half the smallest subnormal */
            return sign;
        uint32_t man = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23); /* 14..24 */
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;
        return sign | (uint16_t)half;
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u); /* round to nearest even */
    return sign | (uint16_t)(((r >> 13) - (112u << 10)) & 0x7fffu);
}

void hy_dtype_to_f32(float *dst, const void *src, enum hy_dtype t, size_t n)
{
    switch (t) {
    case HY_DTYPE_F32:
        memcpy(dst, src, n * 4);
        return;
    /* src may be unaligned (tensor data inside a safetensors file): read through memcpy */
    case HY_DTYPE_F16: {
        const unsigned char *s = src;
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = hy_f16_to_f32(h);
        }
        return;
    }
    case HY_DTYPE_BF16: {
        const unsigned char *s = src;
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = hy_bf16_to_f32(h);
        }
        return;
    }
    case HY_DTYPE_Q8_0:
        hy_q8_0_dequantize_row(dst, src, (int64_t)n);
        return;
    case HY_DTYPE_F8_E4M3:
        hy_fp8_e4m3_to_f32_n(dst, src, n);
        return;
    case HY_DTYPE_Q4_0: hy_q4_0_dequantize_row(dst, src, (int64_t)n); return;
    case HY_DTYPE_Q4_K: hy_q4_k_dequantize_row(dst, src, (int64_t)n); return;
    case HY_DTYPE_Q6_K: hy_q6_k_dequantize_row(dst, src, (int64_t)n); return;
    case HY_DTYPE_Q4_G128: hy_q4_g128_dequantize_row(dst, src, (int64_t)n); return;
    default: break;
    }
    HY_ASSERT(!"unknown dtype");
}

void hy_dtype_from_f32(void *dst, const float *src, enum hy_dtype t, size_t n)
{
    switch (t) {
    case HY_DTYPE_F32:
        memcpy(dst, src, n * 4);
        return;
    case HY_DTYPE_F16: {
        unsigned char *d = dst;
        for (size_t i = 0; i < n; i++) {
            uint16_t h = hy_f32_to_f16(src[i]);
            memcpy(d + 2 * i, &h, 2);
        }
        return;
    }
    case HY_DTYPE_BF16: {
        unsigned char *d = dst;
        for (size_t i = 0; i < n; i++) {
            uint16_t h = hy_f32_to_bf16(src[i]);
            memcpy(d + 2 * i, &h, 2);
        }
        return;
    }
    case HY_DTYPE_Q8_0:
        hy_q8_0_quantize_row(dst, src, (int64_t)n);
        return;
    case HY_DTYPE_F8_E4M3:
        hy_fp8_e4m3_from_f32_n(dst, src, n);
        return;
    case HY_DTYPE_Q4_0: hy_q4_0_quantize_row(dst, src, (int64_t)n); return;
    case HY_DTYPE_Q4_K: hy_q4_k_quantize_row(dst, src, (int64_t)n); return;
    case HY_DTYPE_Q6_K: hy_q6_k_quantize_row(dst, src, (int64_t)n); return;
    case HY_DTYPE_Q4_G128: hy_q4_g128_quantize_row(dst, src, (int64_t)n); return;
    default: break;
    }
    HY_ASSERT(!"unknown dtype");
}
