/* fp8_test.c: float8 e4m3fn decode of all 256 codes against the format's definition, and
 * encode against a brute-force nearest search (ties to the even code) over every finite
 * code, plus saturation, NaN, signed zero and a few values whose PyTorch codes are known. */
#include "core/dtype.h"
#include "core/fp8.h"

#include "test.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The definition, independently of fp8.c: double arithmetic with pow. */
static double def_value(int b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v = e == 0 ? m / 8.0 * pow(2.0, -6) : (1.0 + m / 8.0) * pow(2.0, e - 7);
    return s ? -v : v;
}

static void test_decode(void)
{
    for (int b = 0; b < 256; b++) {
        float f = hy_fp8_e4m3_to_f32((uint8_t)b);
        if ((b & 0x7f) == 0x7f) {
            CHECKF(isnan(f), "code 0x%02x must be NaN, got %g", b, f);
            continue;
        }
        CHECKF((double)f == def_value(b), "code 0x%02x: %.9g, expected %.9g", b, f, def_value(b));
        CHECKF(!!signbit(f) == !!(b & 0x80), "code 0x%02x: sign", b);
    }
    CHECK(hy_fp8_e4m3_to_f32(0x7e) == 448.0f && hy_fp8_e4m3_to_f32(0xfe) == -448.0f);
    CHECK(hy_fp8_e4m3_to_f32(0x01) == ldexpf(1.0f, -9));  /* smallest subnormal */
    CHECK(hy_fp8_e4m3_to_f32(0x07) == ldexpf(7.0f, -9));  /* largest subnormal */
    CHECK(hy_fp8_e4m3_to_f32(0x08) == ldexpf(1.0f, -6));  /* smallest normal */
    CHECK(hy_fp8_e4m3_to_f32(0x38) == 1.0f);
    float lut[256], v[256];
    hy_fp8_e4m3_table(lut);
    unsigned char codes[256];
    for (int b = 0; b < 256; b++)
        codes[b] = (unsigned char)b;
    hy_fp8_e4m3_to_f32_n(v, codes, 256);
    hy_dtype_to_f32(v, codes, HY_DTYPE_F8_E4M3, 256);
    for (int b = 0; b < 256; b++)
        CHECK(memcmp(&lut[b], &v[b], 4) == 0);
}

/* Nearest finite code to x by search; ties go to the code with an even mantissa. */
static uint8_t brute_encode(float x)
{
    if (isnan(x))
        return signbit(x) ? 0xff : 0x7f;
    double ax = fabs((double)x);
    if (ax >= 448.0)
        return signbit(x) ? 0xfe : 0x7e;
    int best = 0;
    double bd = INFINITY;
    for (int b = 0; b <= 0x7e; b++) {
        double d = fabs(def_value(b) - ax);
        if (d < bd || (d == bd && (b & 1) == 0 && (best & 1))) {
            bd = d;
            best = b;
        }
    }
    return (uint8_t)(best | (signbit(x) ? 0x80 : 0));
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void test_encode(void)
{
    /* every code round-trips (except NaN's payload, which is the one code) */
    for (int b = 0; b < 256; b++) {
        uint8_t c = hy_fp8_e4m3_from_f32(hy_fp8_e4m3_to_f32((uint8_t)b));
        CHECKF(c == b, "round trip of 0x%02x gave 0x%02x", b, c);
    }
    /* midpoints between neighbours, and one float either side of each */
    int bad = 0;
    for (int b = 0; b < 0x7e; b++) {
        float lo = hy_fp8_e4m3_to_f32((uint8_t)b), hi = hy_fp8_e4m3_to_f32((uint8_t)(b + 1));
        float mid = (float)(((double)lo + hi) / 2);
        float xs[3] = {nextafterf(mid, 0.0f), mid, nextafterf(mid, INFINITY)};
        uint8_t want[3] = {(uint8_t)b, (uint8_t)((b & 1) ? b + 1 : b), (uint8_t)(b + 1)};
        for (int k = 0; k < 3; k++) {
            bad += hy_fp8_e4m3_from_f32(xs[k]) != want[k];
            bad += hy_fp8_e4m3_from_f32(-xs[k]) != (want[k] | 0x80);
            bad += brute_encode(xs[k]) != want[k]; /* the search agrees with the rule */
        }
    }
    CHECKF(bad == 0, "%d midpoint encodings wrong", bad);
    /* random floats over the whole range, against the search */
    bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = next32();
        /* exponents spread from 2^-14 to 2^10 so every regime is hit */
        u = (u & 0x807fffffu) | ((113u + (u >> 23) % 24u) << 23);
        float x;
        memcpy(&x, &u, 4);
        uint8_t c = hy_fp8_e4m3_from_f32(x), w = brute_encode(x);
        if (c != w && bad++ < 5)
            fprintf(stderr, "encode(%.9g) = 0x%02x, expected 0x%02x\n", x, c, w);
    }
    CHECKF(bad == 0, "%d random encodings wrong", bad);
    /* saturation and specials */
    float sat[] = {448.0f, 449.0f, 463.9f, 464.0f, 480.0f, 1e6f, 3e38f, INFINITY};
    for (size_t i = 0; i < sizeof sat / sizeof sat[0]; i++) {
        CHECKF(hy_fp8_e4m3_from_f32(sat[i]) == 0x7e, "%g must saturate to 448", sat[i]);
        CHECKF(hy_fp8_e4m3_from_f32(-sat[i]) == 0xfe, "%g must saturate to -448", -sat[i]);
    }
    CHECK(hy_fp8_e4m3_from_f32(NAN) == 0x7f && hy_fp8_e4m3_from_f32(-NAN) == 0xff);
    CHECK(hy_fp8_e4m3_from_f32(0.0f) == 0x00 && hy_fp8_e4m3_from_f32(-0.0f) == 0x80);
    CHECK(hy_fp8_e4m3_from_f32(ldexpf(1.0f, -10)) == 0x00);              /* tie to even 0 */
    CHECK(hy_fp8_e4m3_from_f32(nextafterf(ldexpf(1.0f, -10), 1)) == 0x01);
    CHECK(hy_fp8_e4m3_from_f32(ldexpf(3.0f, -10)) == 0x02);              /* 1.5 * 2^-9: tie to 2 */
    CHECK(hy_fp8_e4m3_from_f32(ldexpf(15.0f, -10)) == 0x08);             /* 7.5 * 2^-9 -> 2^-6 */
    CHECK(hy_fp8_e4m3_from_f32(1e-30f) == 0x00 && hy_fp8_e4m3_from_f32(-1e-45f) == 0x80);
    /* values whose torch.float8_e4m3fn codes are known */
    CHECK(hy_fp8_e4m3_from_f32(0.1f) == 0x1d);   /* 0.1015625 */
    CHECK(hy_fp8_e4m3_from_f32(1.0f) == 0x38);
    CHECK(hy_fp8_e4m3_from_f32(-2.5f) == 0xc2);  /* -(1.25 * 2) */
    CHECK(hy_fp8_e4m3_from_f32(240.0f) == 0x77); /* 1.875 * 128 */
    CHECK(hy_fp8_e4m3_from_f32(300.0f) == 0x79); /* 288 (256 + 32) is nearer than 320 */
    /* the _n and dtype forms agree with the scalar one */
    float xs[64];
    unsigned char a[64], b2[64];
    for (int i = 0; i < 64; i++)
        xs[i] = (float)(i - 32) * 7.3f;
    hy_fp8_e4m3_from_f32_n(a, xs, 64);
    hy_dtype_from_f32(b2, xs, HY_DTYPE_F8_E4M3, 64);
    for (int i = 0; i < 64; i++)
        CHECK(a[i] == hy_fp8_e4m3_from_f32(xs[i]) && b2[i] == a[i]);
}

static void test_dtype(void)
{
    CHECK(hy_dtype_size(HY_DTYPE_F8_E4M3) == 1);
    CHECK(hy_dtype_block_elems(HY_DTYPE_F8_E4M3) == 1);
    CHECK(hy_dtype_row_bytes(HY_DTYPE_F8_E4M3, 96) == 96);
    CHECK(strcmp(hy_dtype_name(HY_DTYPE_F8_E4M3), "F8_E4M3") == 0);
    CHECK(hy_dtype_parse("F8_E4M3") == HY_DTYPE_F8_E4M3);
    CHECK(hy_dtype_parse("F8_E5M2") == -1);
}

int main(void)
{
    test_decode();
    test_encode();
    test_dtype();
    return test_result();
}
