#include "core/quant.h"

#include "core/dtype.h"
#include "core/status.h"

#include <math.h>
#include <string.h>

/* Round to nearest, ties away from zero, inline (lrintf may be a library call). */
static int iround(float x) { return (int)(x >= 0.0f ? x + 0.5f : x - 0.5f); }

/* x rounded to the nearest integer (ties to even) and clamped to [lo, hi], in float: two
 * adds of 1.5*2^23 round any |x| < 2^22 without a library call or a branch. */
static float round_clamp(float x, float lo, float hi)
{
    float r = (x + 12582912.0f) - 12582912.0f;
    return r < lo ? lo : r > hi ? hi : r;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- Q4_0 ---- */

void hy_q4_0_quantize_row(void *dst, const float *src, int64_t n)
{
    HY_ASSERT(n % HY_Q4_0_BLOCK == 0);
    unsigned char *out = dst;
    for (int64_t b = 0; b < n / HY_Q4_0_BLOCK; b++) {
        const float *x = src + b * HY_Q4_0_BLOCK;
        float amax = 0.0f, m = 0.0f;
        for (int i = 0; i < HY_Q4_0_BLOCK; i++)
            if (fabsf(x[i]) > amax) {
                amax = fabsf(x[i]);
                m = x[i];
            }
        float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        struct hy_q4_0_block blk;
        blk.d = hy_f32_to_f16(d);
        for (int j = 0; j < HY_Q4_0_BLOCK / 2; j++) {
            int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[j + 16] * id + 8.5f);
            q0 = clampi(q0, 0, 15);
            q1 = clampi(q1, 0, 15);
            blk.qs[j] = (uint8_t)(q0 | q1 << 4);
        }
        memcpy(out + (size_t)b * sizeof blk, &blk, sizeof blk);
    }
}

/* A block of n 4-bit values d*(q-8) with element j in the low nibble of qs[j] and element
 * j + n/2 in the high one (Q4_0 and Q4_G128 share this layout). */
static void nibbles_to_f32(float *y, float d, const uint8_t *qs, int n)
{
    for (int j = 0; j < n / 2; j++) {
        y[j] = d * (float)((qs[j] & 15) - 8);
        y[j + n / 2] = d * (float)((qs[j] >> 4) - 8);
    }
}

void hy_q4_0_dequantize_row(float *dst, const void *src, int64_t n)
{
    HY_ASSERT(n % HY_Q4_0_BLOCK == 0);
    const unsigned char *in = src;
    for (int64_t b = 0; b < n / HY_Q4_0_BLOCK; b++) {
        struct hy_q4_0_block blk;
        memcpy(&blk, in + (size_t)b * sizeof blk, sizeof blk);
        nibbles_to_f32(dst + b * HY_Q4_0_BLOCK, hy_f16_to_f32(blk.d), blk.qs, HY_Q4_0_BLOCK);
    }
}

/* ---- Q4_K ---- */

/* Fits x[i] ~ scale*L[i] - mn with L in [0, nmax] by weighted least squares, trying
 * candidate inverse scales around nmax/(max-min); returns scale, *mn >= 0. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L,
                           float *mn)
{
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    if (lo > 0.0f)
        lo = 0.0f;
    if (hi == lo) {
        memset(L, 0, (size_t)n);
        *mn = -lo;
        return 0.0f;
    }
    float best_scale = (hi - lo) / (float)nmax, best_min = lo, best_err = INFINITY;
    uint8_t aux[32];
    for (int step = -1; step <= 20; step++) {
        /* step -1: the plain min-max fit; then candidates iscale = (nmax - 1 + 0.1 step)/range */
        float iscale = step < 0 ? (float)nmax / (hi - lo) : ((float)nmax - 1.0f + 0.1f * (float)step) / (hi - lo);
        float sw = 0, sx = 0, sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(iround(iscale * (x[i] - lo)), 0, nmax);
            aux[i] = (uint8_t)l;
            sw += w[i];
            sx += w[i] * x[i];
            sl += w[i] * (float)l;
            sl2 += w[i] * (float)l * (float)l;
            sxl += w[i] * (float)l * x[i];
        }
        float scale, mnv;
        float det = sw * sl2 - sl * sl;
        if (step < 0 || det <= 0.0f) {
            scale = 1.0f / iscale;
            mnv = lo;
        } else {
            scale = (sw * sxl - sx * sl) / det;
            mnv = (sl2 * sx - sl * sxl) / det;
            if (mnv > 0.0f) { /* the offset must stay <= 0: refit the scale alone */
                mnv = 0.0f;
                scale = sl2 > 0.0f ? sxl / sl2 : 0.0f;
            }
        }
        float err = 0.0f;
        for (int i = 0; i < n; i++) {
            float e = scale * (float)aux[i] + mnv - x[i];
            err += w[i] * e * e;
        }
        if (err < best_err) {
            best_err = err;
            best_scale = scale;
            best_min = mnv;
            memcpy(L, aux, (size_t)n);
        }
    }
    *mn = -best_min;
    return best_scale;
}

void hy_q4_k_quantize_row(void *dst, const float *src, int64_t n)
{
    HY_ASSERT(n % HY_QK_K == 0);
    unsigned char *out = dst;
    for (int64_t b = 0; b < n / HY_QK_K; b++) {
        const float *x = src + b * HY_QK_K;
        uint8_t L[HY_QK_K];
        float scales[8], mins[8], w[32], max_sc = 0.0f, max_mn = 0.0f;
        for (int j = 0; j < 8; j++) {
            const float *xs = x + 32 * j;
            float s2 = 0.0f;
            for (int i = 0; i < 32; i++)
                s2 += xs[i] * xs[i];
            float av = sqrtf(s2 / 32.0f);
            for (int i = 0; i < 32; i++)
                w[i] = av + fabsf(xs[i]);
            scales[j] = fit_scale_min(32, 15, xs, w, L + 32 * j, &mins[j]);
            max_sc = scales[j] > max_sc ? scales[j] : max_sc;
            max_mn = mins[j] > max_mn ? mins[j] : max_mn;
        }
        struct hy_q4_k_block blk;
        memset(&blk, 0, sizeof blk);
        float isc = max_sc > 0.0f ? 63.0f / max_sc : 0.0f;
        float imn = max_mn > 0.0f ? 63.0f / max_mn : 0.0f;
        for (int j = 0; j < 8; j++) {
            int ls = clampi(iround(isc * scales[j]), 0, 63);
            int lm = clampi(iround(imn * mins[j]), 0, 63);
            if (j < 4) {
                blk.scales[j] = (uint8_t)ls;
                blk.scales[j + 4] = (uint8_t)lm;
            } else {
                blk.scales[j + 4] = (uint8_t)((ls & 15) | (lm & 15) << 4);
                blk.scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
                blk.scales[j] |= (uint8_t)((lm >> 4) << 6);
            }
        }
        blk.d = hy_f32_to_f16(max_sc / 63.0f);
        blk.dmin = hy_f32_to_f16(max_mn / 63.0f);
        float d = hy_f16_to_f32(blk.d), dmin = hy_f16_to_f32(blk.dmin);
        for (int j = 0; j < 8; j++) { /* requantize against the stored scale and min */
            int sc, m;
            hy_q4_k_scale_min(j, blk.scales, &sc, &m);
            float ds = d * (float)sc, dm = dmin * (float)m;
            for (int i = 0; i < 32; i++)
                L[32 * j + i] = ds != 0.0f ? (uint8_t)clampi(iround((x[32 * j + i] + dm) / ds), 0, 15) : 0;
        }
        for (int j = 0; j < 4; j++) /* sub-blocks 2j (low) and 2j+1 (high) share 32 bytes */
            for (int l = 0; l < 32; l++)
                blk.qs[32 * j + l] = (uint8_t)(L[64 * j + l] | L[64 * j + 32 + l] << 4);
        memcpy(out + (size_t)b * sizeof blk, &blk, sizeof blk);
    }
}

void hy_q4_k_dequantize_row(float *dst, const void *src, int64_t n)
{
    HY_ASSERT(n % HY_QK_K == 0);
    const unsigned char *in = src;
    for (int64_t b = 0; b < n / HY_QK_K; b++) {
        struct hy_q4_k_block blk;
        memcpy(&blk, in + (size_t)b * sizeof blk, sizeof blk);
        float d = hy_f16_to_f32(blk.d), dmin = hy_f16_to_f32(blk.dmin);
        float *y = dst + b * HY_QK_K;
        for (int j = 0; j < 8; j++) {
            int sc, m;
            hy_q4_k_scale_min(j, blk.scales, &sc, &m);
            float ds = d * (float)sc, dm = dmin * (float)m;
            const uint8_t *q = blk.qs + 32 * (j / 2);
            int shift = (j & 1) * 4;
            for (int l = 0; l < 32; l++)
                y[32 * j + l] = ds * (float)((q[l] >> shift) & 15) - dm;
        }
    }
}

/* ---- Q6_K and Q4_G128: symmetric scales ---- */

/* The scale s minimizing sum w (x - s*L)^2 (w NULL: all ones) with L = clamp(round(x*iscale), lo, hi), over
 * the 2*ncand+1 candidate iscales (nmax + step*k)/|m|, |k| <= ncand (m: element of largest
 * magnitude, mapped to -nmax so that the asymmetric range [-nmax, nmax-1] is used fully).
 * Returns 0 for an all-zero block. */
static float fit_scale_sym(int n, int nmax, const float *x, const float *w, int ncand, float step)
{
    float amax = 0.0f, m = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            m = x[i];
        }
    if (amax == 0.0f)
        return 0.0f;
    /* With the least-squares scale s = sxl/sl2 for given levels, the weighted error is
     * sum w x^2 - sxl^2/sl2: the best candidate has the largest sxl^2/sl2 (one pass each). */
    float best = m / -(float)nmax, best_gain = -1.0f;
    for (int k = -ncand; k <= ncand; k++) {
        float iscale = -((float)nmax + step * (float)k) / m;
        float sxl = 0.0f, sl2 = 0.0f;
        const float lo = (float)-nmax, hi = (float)(nmax - 1);
        if (w) {
            for (int i = 0; i < n; i++) {
                float l = round_clamp(x[i] * iscale, lo, hi);
                sxl += w[i] * x[i] * l;
                sl2 += w[i] * l * l;
            }
        } else { /* unweighted; four partial sums so the loop is not one long chain */
            float a[4] = {0}, b[4] = {0};
            for (int i = 0; i < n; i += 4)
                for (int u = 0; u < 4; u++) {
                    float l = round_clamp(x[i + u] * iscale, lo, hi);
                    a[u] += x[i + u] * l;
                    b[u] += l * l;
                }
            sxl = (a[0] + a[1]) + (a[2] + a[3]);
            sl2 = (b[0] + b[1]) + (b[2] + b[3]);
        }
        if (sl2 > 0.0f && sxl * sxl / sl2 > best_gain) {
            best_gain = sxl * sxl / sl2;
            best = sxl / sl2;
        }
    }
    return best;
}

void hy_q6_k_quantize_row(void *dst, const float *src, int64_t n)
{
    HY_ASSERT(n % HY_QK_K == 0);
    unsigned char *out = dst;
    for (int64_t b = 0; b < n / HY_QK_K; b++) {
        const float *x = src + b * HY_QK_K;
        float scales[16], w[16], max_abs = 0.0f, max_sc = 0.0f;
        for (int j = 0; j < 16; j++) {
            for (int i = 0; i < 16; i++)
                w[i] = x[16 * j + i] * x[16 * j + i];
            scales[j] = fit_scale_sym(16, 32, x + 16 * j, w, 9, 0.1f);
            if (fabsf(scales[j]) > max_abs) {
                max_abs = fabsf(scales[j]);
                max_sc = scales[j];
            }
        }
        struct hy_q6_k_block blk;
        memset(&blk, 0, sizeof blk);
        uint8_t L[HY_QK_K] = {0};
        if (max_abs > 0.0f) {
            float isc = -128.0f / max_sc;
            blk.d = hy_f32_to_f16(1.0f / isc);
            for (int j = 0; j < 16; j++)
                blk.scales[j] = (int8_t)clampi(iround(isc * scales[j]), -128, 127);
            float d = hy_f16_to_f32(blk.d);
            for (int j = 0; j < 16; j++) {
                float ds = d * (float)blk.scales[j];
                for (int i = 0; i < 16; i++) {
                    int l = ds != 0.0f ? clampi(iround(x[16 * j + i] / ds), -32, 31) : 0;
                    L[16 * j + i] = (uint8_t)(l + 32);
                }
            }
        } else {
            memset(L, 32, sizeof L); /* q = 0 */
        }
        for (int h = 0; h < 2; h++) {
            uint8_t *ql = blk.ql + 64 * h, *qh = blk.qh + 32 * h;
            const uint8_t *Lh = L + 128 * h;
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((Lh[l] & 15) | (Lh[l + 64] & 15) << 4);
                ql[l + 32] = (uint8_t)((Lh[l + 32] & 15) | (Lh[l + 96] & 15) << 4);
                qh[l] = (uint8_t)((Lh[l] >> 4) | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 |
                                  (Lh[l + 96] >> 4) << 6);
            }
        }
        memcpy(out + (size_t)b * sizeof blk, &blk, sizeof blk);
    }
}

void hy_q6_k_dequantize_row(float *dst, const void *src, int64_t n)
{
    HY_ASSERT(n % HY_QK_K == 0);
    const unsigned char *in = src;
    for (int64_t b = 0; b < n / HY_QK_K; b++) {
        struct hy_q6_k_block blk;
        memcpy(&blk, in + (size_t)b * sizeof blk, sizeof blk);
        float d = hy_f16_to_f32(blk.d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = blk.ql + 64 * h, *qh = blk.qh + 32 * h;
            const int8_t *sc = blk.scales + 8 * h;
            float *y = dst + b * HY_QK_K + 128 * h;
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32;
                int q2 = ((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32;
                int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

void hy_q4_g128_quantize_row(void *dst, const float *src, int64_t n)
{
    HY_ASSERT(n % HY_Q4_G128_BLOCK == 0);
    unsigned char *out = dst;
    for (int64_t b = 0; b < n / HY_Q4_G128_BLOCK; b++) {
        const float *x = src + b * HY_Q4_G128_BLOCK;
        struct hy_q4_g128_block blk;
        const float *w = NULL; /* plain squared error: what a dot with any activation sees */
        blk.d = hy_f32_to_f16(fit_scale_sym(HY_Q4_G128_BLOCK, 8, x, w, 3, 0.25f));
        float d = hy_f16_to_f32(blk.d), id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < HY_Q4_G128_BLOCK / 2; j++) {
            int q0 = (int)round_clamp(x[j] * id, -8.0f, 7.0f) + 8;
            int q1 = (int)round_clamp(x[j + 64] * id, -8.0f, 7.0f) + 8;
            blk.qs[j] = (uint8_t)(q0 | q1 << 4);
        }
        memcpy(out + (size_t)b * sizeof blk, &blk, sizeof blk);
    }
}

void hy_q4_g128_dequantize_row(float *dst, const void *src, int64_t n)
{
    HY_ASSERT(n % HY_Q4_G128_BLOCK == 0);
    const unsigned char *in = src;
    for (int64_t b = 0; b < n / HY_Q4_G128_BLOCK; b++) {
        struct hy_q4_g128_block blk;
        memcpy(&blk, in + (size_t)b * sizeof blk, sizeof blk);
        nibbles_to_f32(dst + b * HY_Q4_G128_BLOCK, hy_f16_to_f32(blk.d), blk.qs,
                       HY_Q4_G128_BLOCK);
    }
}
