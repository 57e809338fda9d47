/* fp8.c: float8 e4m3fn conversions (contract in fp8.h). */
#include "core/fp8.h"

#include <math.h>
#include <string.h>

float hy_fp8_e4m3_to_f32(uint8_t b)
{
    uint32_t e = (b >> 3) & 0xfu, m = b & 7u;
    float v;
    if (e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexpf((float)m, -9); /* subnormal: m/8 * 2^-6 */
    else
        v = ldexpf((float)(8 + m), (int)e - 10); /* (1 + m/8) * 2^(e-7) */
    return (b & 0x80u) ? -v : v;
}

uint8_t hy_fp8_e4m3_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return sign | 0x7fu;
    if (a >= 0x43e00000u) /* >= 448, or infinity: saturate */
        return sign | 0x7eu;
    if (a < 0x3c800000u) { /* below 2^-6, the smallest normal: a multiple of 2^-9 */
        if (a <= 0x3a800000u) /* <= 2^-10, half the smallest subnormal (the tie goes to 0) */
            return sign;
        /* a's exponent field is 117..120 here: value = man * 2^(e-150), in units of 2^-9
         * that is man >> (141 - e), rounded to nearest even */
        uint32_t e = a >> 23, man = (a & 0x7fffffu) | 0x800000u;
        int shift = 141 - (int)e; /* 21..24 */
        uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++; /* q == 8 is the smallest normal, whose code is 0x08 too */
        return sign | (uint8_t)q;
    }
    /* normal: keep 3 of the 23 mantissa bits, round to nearest even; a carry into the
     * exponent is the right result. Rebias the exponent from 127 to 7. */
    uint32_t r = (a + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
    return sign | (uint8_t)(r - ((127u - 7u) << 3));
}

void hy_fp8_e4m3_table(float lut[256])
{
    for (int b = 0; b < 256; b++)
        lut[b] = hy_fp8_e4m3_to_f32((uint8_t)b);
}

void hy_fp8_e4m3_to_f32_n(float *dst, const void *src, size_t n)
{
    float lut[256];
    hy_fp8_e4m3_table(lut);
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = lut[s[i]];
}

void hy_fp8_e4m3_from_f32_n(void *dst, const float *src, size_t n)
{
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i++)
        d[i] = hy_fp8_e4m3_from_f32(src[i]);
}
