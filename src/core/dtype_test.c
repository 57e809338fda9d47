/* dtype_test.c: bf16 and f16 conversions against IEEE 754 rules. */
#include "core/dtype.h"

#include "test.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int f16_is_nan(uint16_t h)
{
    return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
}

static void test_names(void)
{
    CHECK(hy_dtype_size(HY_DTYPE_F32) == 4);
    CHECK(hy_dtype_size(HY_DTYPE_F16) == 2);
    CHECK(hy_dtype_size(HY_DTYPE_BF16) == 2);
    for (int t = 0; t <= HY_DTYPE_BF16; t++)
        CHECK(hy_dtype_parse(hy_dtype_name((enum hy_dtype)t)) == t);
    CHECK(hy_dtype_parse("Q8_0") == -1); /* no safetensors file holds it */
    CHECK(hy_dtype_parse(hy_dtype_name(HY_DTYPE_F8_B128)) == -1); /* nor this one */
    CHECK(hy_dtype_size(HY_DTYPE_F8_B128) == 1 && hy_dtype_row_bytes(HY_DTYPE_F8_B128, 7) == 7);
    CHECK(hy_dtype_size(HY_DTYPE_Q8_0) == 34 && hy_dtype_block_elems(HY_DTYPE_Q8_0) == 32);
    CHECK(hy_dtype_row_bytes(HY_DTYPE_Q8_0, 4096) == 128 * 34);
    CHECK(hy_dtype_row_bytes(HY_DTYPE_BF16, 7) == 14);
    CHECK(hy_dtype_parse("I64") == -1);
    CHECK(hy_dtype_parse("bf16") == -1);
    CHECK(hy_dtype_parse("") == -1);
}

/* Every non-NaN bf16 survives bf16 -> f32 -> bf16; NaN stays NaN. */
static void test_bf16_round_trip(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = hy_bf16_to_f32((uint16_t)h);
        CHECK(f32_bits(f) == h << 16); /* exact widening */
        uint16_t back = hy_f32_to_bf16(f);
        if (isnan(f))
            bad += !isnan(hy_bf16_to_f32(back));
        else
            bad += back != h;
    }
    CHECKF(bad == 0, "%d bf16 values did not round-trip", bad);
}

static void test_bf16_rounding(void)
{
    /* bf16 keeps 7 mantissa bits: the ulp at 1.0 is 2^-7. */
    CHECK(hy_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(hy_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80); /* tie -> even (down) */
    CHECK(hy_f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f) == 0x3f82); /* tie -> even (up) */
    CHECK(hy_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81); /* above the tie */
    CHECK(hy_f32_to_bf16(1.0f + 0x1p-8f - 0x1p-20f) == 0x3f80); /* below the tie */
    CHECK(hy_f32_to_bf16(-1.0f - 0x1p-7f - 0x1p-8f) == 0xbf82);
    CHECK(hy_f32_to_bf16(-0.0f) == 0x8000);
    CHECK(hy_f32_to_bf16(INFINITY) == 0x7f80);
    CHECK(hy_f32_to_bf16(-INFINITY) == 0xff80);
    CHECK(hy_f32_to_bf16(FLT_MAX) == 0x7f80); /* rounds past the largest bf16, as PyTorch */
    CHECK(hy_f32_to_bf16(bits_f32(0x00000001u)) == 0x0000); /* tiny subnormal rounds to 0 */
    CHECK(hy_f32_to_bf16(bits_f32(0x00018000u)) == 0x0002); /* subnormal tie -> even */
    /* A NaN whose payload sits only in the low bits must not truncate to infinity. */
    uint16_t n = hy_f32_to_bf16(bits_f32(0x7f800001u));
    CHECK(isnan(hy_bf16_to_f32(n)));
    n = hy_f32_to_bf16(bits_f32(0xff800001u));
    CHECK(isnan(hy_bf16_to_f32(n)) && (n & 0x8000u));
    CHECK(isnan(hy_bf16_to_f32(hy_f32_to_bf16(NAN))));
}

/* All 65536 halves: f32 -> f16 inverts f16 -> f32 exactly for non-NaN. */
static void test_f16_exhaustive(void)
{
    int bad = 0, bad_nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = hy_f16_to_f32((uint16_t)h);
        if (f16_is_nan((uint16_t)h)) {
            bad_nan += !isnan(f) || !f16_is_nan(hy_f32_to_f16(f));
            continue;
        }
        bad += hy_f32_to_f16(f) != h;
    }
    CHECKF(bad == 0, "%d halves did not round-trip", bad);
    CHECKF(bad_nan == 0, "%d NaN halves did not stay NaN", bad_nan);
}

/* Between each pair of adjacent finite positive halves, the midpoint (exact in f32) goes to
 * the even one, and one f32 ulp either side of it goes to the nearer one. */
static void test_f16_midpoints(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 0x7bff; h++) {
        float lo = hy_f16_to_f32((uint16_t)h), hi = hy_f16_to_f32((uint16_t)(h + 1));
        float mid = (lo + hi) / 2;
        uint16_t even = (h & 1u) ? (uint16_t)(h + 1) : (uint16_t)h;
        bad += hy_f32_to_f16(mid) != even;
        bad += hy_f32_to_f16(nextafterf(mid, 0.0f)) != h;
        bad += hy_f32_to_f16(nextafterf(mid, INFINITY)) != h + 1;
        bad += hy_f32_to_f16(-mid) != (even | 0x8000u);
    }
    CHECKF(bad == 0, "%d midpoint roundings wrong", bad);
}

static void test_f16_special(void)
{
    CHECK(hy_f32_to_f16(1.0f) == 0x3c00);
    CHECK(hy_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00); /* tie -> even */
    CHECK(hy_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02); /* tie -> even (up) */
    CHECK(hy_f32_to_f16(65504.0f) == 0x7bff); /* largest half */
    CHECK(hy_f32_to_f16(65519.99f) == 0x7bff);
    CHECK(hy_f32_to_f16(65520.0f) == 0x7c00); /* tie rounds to inf */
    CHECK(hy_f32_to_f16(1e10f) == 0x7c00);
    CHECK(hy_f32_to_f16(-1e10f) == 0xfc00);
    CHECK(hy_f32_to_f16(INFINITY) == 0x7c00);
    CHECK(hy_f32_to_f16(-INFINITY) == 0xfc00);
    CHECK(f16_is_nan(hy_f32_to_f16(NAN)));
    CHECK(f16_is_nan(hy_f32_to_f16(bits_f32(0x7f800001u)))); /* low-payload NaN */
    CHECK(hy_f32_to_f16(-0.0f) == 0x8000);
    /* Subnormals: smallest 2^-24, largest 1023 * 2^-24, smallest normal 2^-14. */
    CHECK(hy_f32_to_f16(0x1p-24f) == 0x0001);
    CHECK(hy_f32_to_f16(0x1p-25f) == 0x0000); /* tie -> even (0) */
    CHECK(hy_f32_to_f16(0x1p-25f + 0x1p-40f) == 0x0001);
    CHECK(hy_f32_to_f16(3 * 0x1p-25f) == 0x0002); /* tie -> even (2) */
    CHECK(hy_f32_to_f16(1023 * 0x1p-24f) == 0x03ff);
    CHECK(hy_f32_to_f16(1023.5f * 0x1p-24f) == 0x0400); /* tie into the normals */
    CHECK(hy_f32_to_f16(0x1p-14f) == 0x0400);
    CHECK(hy_f32_to_f16(1e-30f) == 0x0000);
    CHECK(hy_f32_to_f16(-1e-30f) == 0x8000);
    CHECK(hy_f16_to_f32(0x0001) == 0x1p-24f);
    CHECK(hy_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    CHECK(hy_f16_to_f32(0xc000) == -2.0f);
    CHECK(isinf(hy_f16_to_f32(0x7c00)) && hy_f16_to_f32(0xfc00) < 0);
}

static void test_arrays(void)
{
    float src[7] = {1.5f, -2.25f, 3.0e-5f, 65504.0f, -0.0f, 1024.75f, 0.1f};
    for (int t = 0; t <= HY_DTYPE_BF16; t++) {
        unsigned char buf[7 * 4];
        float back[7];
        hy_dtype_from_f32(buf, src, (enum hy_dtype)t, 7);
        hy_dtype_to_f32(back, buf, (enum hy_dtype)t, 7);
        for (int i = 0; i < 7; i++) {
            float want = src[i];
            if (t == HY_DTYPE_F16)
                want = hy_f16_to_f32(hy_f32_to_f16(src[i]));
            else if (t == HY_DTYPE_BF16)
                want = hy_bf16_to_f32(hy_f32_to_bf16(src[i]));
            CHECKF(f32_bits(back[i]) == f32_bits(want), "dtype %d item %d", t, i);
        }
    }
    uint16_t b[2];
    hy_dtype_from_f32(b, src, HY_DTYPE_BF16, 2);
    CHECK(b[0] == 0x3fc0 && b[1] == 0xc010);
}

/* Q8_0 round trip on random data at several magnitudes: |x - deq(q(x))| <= d/2 per element
 * (d the block's stored scale; a little float32 slack for x/d's rounding), q in [-127, 127],
 * the block's largest |x| maps to |q| = 127, and an all-zero block stays zero. */
static void test_q8_0(void)
{
    enum { N = 32 * 64 };
    static float x[N], back[N];
    static unsigned char q[N / 32 * 34 + 1];
    uint32_t s = 12345;
    double worst = 0;
    for (int amp = -6; amp <= 12; amp += 3) { /* max|x| >= 2^-7: d a normal fp16 */
        for (int i = 0; i < N; i++) {
            s = s * 1664525u + 1013904223u;
            x[i] = ldexpf(((float)(s >> 8) / 16777216.0f - 0.5f) * 2.0f, amp);
        }
        for (int i = 0; i < 32; i++)
            x[i] = 0.0f;
        hy_q8_0_quantize_row(q + 1, x, N); /* odd address */
        hy_q8_0_dequantize_row(back, q + 1, N);
        for (int b = 0; b < N / 32; b++) {
            struct hy_q8_0_block blk;
            memcpy(&blk, q + 1 + b * 34, 34);
            float d = hy_f16_to_f32(blk.d);
            int maxq = 0;
            for (int i = 0; i < 32; i++) {
                int k = b * 32 + i;
                double err = fabs((double)x[k] - back[k]);
                double bound = d / 2.0 + fabs(x[k]) * 0x1p-22;
                CHECKF(err <= bound, "amp 2^%d elem %d err %g bound %g", amp, k, err, bound);
                if (d > 0)
                    worst = err / (d / 2.0) > worst ? err / (d / 2.0) : worst;
                CHECK(blk.q[i] >= -127 && blk.q[i] <= 127);
                maxq = abs(blk.q[i]) > maxq ? abs(blk.q[i]) : maxq;
            }
            CHECK(b == 0 ? (blk.d == 0 && maxq == 0) : maxq == 127);
        }
    }
    printf("q8_0 round trip: worst |x - deq(q(x))| / (d/2) = %.4f\n", worst);
}

int main(void)
{
    test_q8_0();
    test_names();
    test_bf16_round_trip();
    test_bf16_rounding();
    test_f16_exhaustive();
    test_f16_midpoints();
    test_f16_special();
    test_arrays();
    return test_result();
}
