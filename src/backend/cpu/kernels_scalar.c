/* kernels_scalar.c: the portable kernels, used when the CPU has no supported SIMD level
 * (and as the baseline in tests). Float32 accumulation like the SIMD kernels; each body is
 * written once with the dtype as a parameter and specialised by always_inline wrappers. */
#include "backend/cpu/cpu_impl.h"

#include <math.h>

#define INL static inline __attribute__((always_inline))

INL void rows4_gen(float *y, const float *x, const void *w, size_t stride, int64_t cols,
                   enum hy_dtype dt)
{
    const unsigned char *w0 = w;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int64_t c = 0; c < cols; c++) {
        float xc = x[c];
        s0 += xc * hy_cpu_weight_load(w0, c, dt);
        s1 += xc * hy_cpu_weight_load(w0 + stride, c, dt);
        s2 += xc * hy_cpu_weight_load(w0 + 2 * stride, c, dt);
        s3 += xc * hy_cpu_weight_load(w0 + 3 * stride, c, dt);
    }
    y[0] = s0;
    y[1] = s1;
    y[2] = s2;
    y[3] = s3;
}

INL void toks4_gen(float *y, int64_t ys, const float *x, int64_t xs, const void *w, int64_t cols,
                   enum hy_dtype dt)
{
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int64_t c = 0; c < cols; c++) {
        float wc = hy_cpu_weight_load(w, c, dt);
        s0 += x[c] * wc;
        s1 += x[xs + c] * wc;
        s2 += x[2 * xs + c] * wc;
        s3 += x[3 * xs + c] * wc;
    }
    y[0] = s0;
    y[ys] = s1;
    y[2 * ys] = s2;
    y[3 * ys] = s3;
}

INL float dot_gen(const float *x, const void *w, int64_t cols, enum hy_dtype dt)
{
    float s = 0.0f;
    for (int64_t c = 0; c < cols; c++)
        s += x[c] * hy_cpu_weight_load(w, c, dt);
    return s;
}

INL void tile_gen(float *y, int64_t ys, const float *x, int64_t xs, const void *w, size_t stride,
                  int64_t n, bool add, enum hy_dtype dt)
{
    float s[4][4] = {{0}};
    for (int64_t c = 0; c < n; c++)
        for (int i = 0; i < 4; i++) {
            float wc = hy_cpu_weight_load((const unsigned char *)w + i * stride, c, dt);
            for (int t = 0; t < 4; t++)
                s[t][i] += x[t * xs + c] * wc;
        }
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 4; i++)
            y[t * ys + i] = add ? y[t * ys + i] + s[t][i] : s[t][i];
}

#define MM_KERNELS(sfx, DT)                                                                     \
    static void rows4_##sfx(float *y, const float *x, const void *w, size_t stride, int64_t n) \
    {                                                                                           \
        rows4_gen(y, x, w, stride, n, DT);                                                      \
    }                                                                                           \
    static void toks4_##sfx(float *y, int64_t ys, const float *x, int64_t xs, const void *w,   \
                            int64_t n)                                                          \
    {                                                                                           \
        toks4_gen(y, ys, x, xs, w, n, DT);                                                      \
    }                                                                                           \
    static float dot_##sfx(const float *x, const void *w, int64_t n)                            \
    {                                                                                           \
        return dot_gen(x, w, n, DT);                                                            \
    }                                                                                           \
    static void tile_##sfx(float *y, int64_t ys, const float *x, int64_t xs, const void *w,    \
                           size_t stride, int64_t n, bool add)                                  \
    {                                                                                           \
        tile_gen(y, ys, x, xs, w, stride, n, add, DT);                                          \
    }

MM_KERNELS(f32, HY_DTYPE_F32)
MM_KERNELS(f16, HY_DTYPE_F16)
MM_KERNELS(bf16, HY_DTYPE_BF16)
MM_KERNELS(q8_0, HY_DTYPE_Q8_0)

/* ---- block dtypes: 32-value chunks (hy_cpu_unpack32) ---- */

static void unpack_q4_0(const unsigned char *row, int64_t b, int8_t q[32], float sc[2])
{
    struct hy_q4_0_block blk;
    memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((blk.qs[j] & 15) - 8);
        q[j + 16] = (int8_t)((blk.qs[j] >> 4) - 8);
    }
    sc[0] = sc[1] = hy_f16_to_f32(blk.d);
}

static void unpack_q4_g128(const unsigned char *row, int64_t b, int8_t q[32], float sc[2])
{
    const unsigned char *blk = row + (size_t)(b / 4) * sizeof(struct hy_q4_g128_block);
    uint16_t d;
    memcpy(&d, blk, 2);
    int part = (int)(b % 4); /* 0,1: low nibbles of bytes 0-31, 32-63; 2,3: high nibbles */
    const unsigned char *qs = blk + 2 + 32 * (part & 1);
    for (int j = 0; j < 32; j++)
        q[j] = (int8_t)(((qs[j] >> (part & 2 ? 4 : 0)) & 15) - 8);
    sc[0] = sc[1] = hy_f16_to_f32(d);
}

static void unpack_q4_k(const unsigned char *row, int64_t b, int8_t q[32], float sc[2],
                        float mn[2])
{
    const unsigned char *blk = row + (size_t)(b / 8) * sizeof(struct hy_q4_k_block);
    uint16_t d, dmin;
    memcpy(&d, blk, 2);
    memcpy(&dmin, blk + 2, 2);
    int j = (int)(b % 8), s, m;
    hy_q4_k_scale_min(j, blk + 4, &s, &m);
    const unsigned char *qs = blk + 16 + 32 * (j / 2);
    for (int l = 0; l < 32; l++)
        q[l] = (int8_t)((qs[l] >> (4 * (j & 1))) & 15);
    sc[0] = sc[1] = hy_f16_to_f32(d) * (float)s;
    mn[0] = mn[1] = -(hy_f16_to_f32(dmin) * (float)m);
}

static void unpack_q6_k(const unsigned char *row, int64_t b, int8_t q[32], float sc[2])
{
    const unsigned char *blk = row + (size_t)(b / 8) * sizeof(struct hy_q6_k_block);
    int j = (int)(b % 8), h = j / 4, part = j % 4;
    const unsigned char *ql = blk + 64 * h + 32 * (part & 1), *qh = blk + 128 + 32 * h;
    const int8_t *scales = (const int8_t *)(blk + 192) + 8 * h + 2 * part;
    uint16_t d16;
    memcpy(&d16, blk + 208, 2);
    float d = hy_f16_to_f32(d16);
    for (int l = 0; l < 32; l++) {
        int lo = (ql[l] >> (part & 2 ? 4 : 0)) & 15, hi = (qh[l] >> (2 * part)) & 3;
        q[l] = (int8_t)((lo | hi << 4) - 32);
    }
    sc[0] = d * (float)scales[0];
    sc[1] = d * (float)scales[1];
}

void hy_cpu_unpack32(enum hy_dtype dt, const void *row, int64_t b, int8_t q[32], float sc[2],
                     float mn[2])
{
    const unsigned char *r = row;
    mn[0] = mn[1] = 0.0f;
    switch (dt) {
    case HY_DTYPE_Q8_0: {
        uint16_t d;
        memcpy(&d, r + (size_t)b * sizeof(struct hy_q8_0_block), 2);
        memcpy(q, r + (size_t)b * sizeof(struct hy_q8_0_block) + 2, 32);
        sc[0] = sc[1] = hy_f16_to_f32(d);
        return;
    }
    case HY_DTYPE_Q4_0: unpack_q4_0(r, b, q, sc); return;
    case HY_DTYPE_Q4_G128: unpack_q4_g128(r, b, q, sc); return;
    case HY_DTYPE_Q4_K: unpack_q4_k(r, b, q, sc, mn); return;
    case HY_DTYPE_Q6_K: unpack_q6_k(r, b, q, sc); return;
    default: break;
    }
    HY_ASSERT(!"not a block dtype");
}

/* Float activations against a block dtype: each chunk unpacked once, then the values
 * sc*q + mn (the dequantizer's) multiplied in. */
static float chunk_dot(const float *x, const int8_t *q, const float *sc, const float *mn)
{
    float s = 0.0f;
    for (int i = 0; i < 32; i++)
        s += x[i] * (sc[i / 16] * (float)q[i] + mn[i / 16]);
    return s;
}

INL float bdot_gen(const float *x, const void *w, int64_t cols, enum hy_dtype dt)
{
    float s = 0.0f, sc[2], mn[2];
    int8_t q[32];
    for (int64_t b = 0; b < cols / 32; b++) {
        hy_cpu_unpack32(dt, w, b, q, sc, mn);
        s += chunk_dot(x + 32 * b, q, sc, mn);
    }
    return s;
}

#define BLOCK_KERNELS(sfx, DT)                                                                   \
    static float bdot_##sfx(const float *x, const void *w, int64_t n)                           \
    {                                                                                           \
        return bdot_gen(x, w, n, DT);                                                           \
    }                                                                                           \
    static void brows4_##sfx(float *y, const float *x, const void *w, size_t stride, int64_t n) \
    {                                                                                           \
        for (int i = 0; i < 4; i++)                                                             \
            y[i] = bdot_gen(x, (const unsigned char *)w + i * stride, n, DT);                   \
    }                                                                                           \
    static void btoks4_##sfx(float *y, int64_t ys, const float *x, int64_t xs, const void *w,  \
                             int64_t n)                                                         \
    {                                                                                           \
        for (int t = 0; t < 4; t++)                                                             \
            y[t * ys] = bdot_gen(x + t * xs, w, n, DT);                                         \
    }                                                                                           \
    static void btile_##sfx(float *y, int64_t ys, const float *x, int64_t xs, const void *w,   \
                            size_t stride, int64_t n, bool add)                                 \
    {                                                                                           \
        for (int t = 0; t < 4; t++)                                                             \
            for (int i = 0; i < 4; i++) {                                                       \
                float v = bdot_gen(x + t * xs, (const unsigned char *)w + i * stride, n, DT);   \
                y[t * ys + i] = add ? y[t * ys + i] + v : v;                                    \
            }                                                                                   \
    }                                                                                           \
    static float qdot_##sfx(const struct hy_cpu_xq *x, const void *w, int64_t n)               \
    {                                                                                           \
        return hy_cpu_q_dot_ref(DT, x, w, n);                                                   \
    }                                                                                           \
    static void qrows4_##sfx(float *y, const struct hy_cpu_xq *x, const void *w, size_t stride, \
                             int64_t n)                                                         \
    {                                                                                           \
        for (int i = 0; i < 4; i++)                                                             \
            y[i] = hy_cpu_q_dot_ref(DT, x, (const unsigned char *)w + i * stride, n);           \
    }                                                                                           \
    static void qtile_##sfx(float *y, int64_t ys, const struct hy_cpu_xq x[4], const void *w,  \
                            size_t stride, int64_t n, bool add)                                 \
    {                                                                                           \
        for (int t = 0; t < 4; t++)                                                             \
            for (int i = 0; i < 4; i++) {                                                       \
                float v = hy_cpu_q_dot_ref(DT, &x[t], (const unsigned char *)w + i * stride, n); \
                y[t * ys + i] = add ? y[t * ys + i] + v : v;                                    \
            }                                                                                   \
    }                                                                                           \
    static const struct hy_cpu_mm_kernels block_##sfx = {                                       \
        .rows4 = brows4_##sfx, .toks4 = btoks4_##sfx, .dot = bdot_##sfx, .tile4x4 = btile_##sfx,  \
        .q_rows4 = qrows4_##sfx, .q_dot = qdot_##sfx, .q_tile4x4 = qtile_##sfx, .xq_block = 32};

BLOCK_KERNELS(q4_0, HY_DTYPE_Q4_0)
BLOCK_KERNELS(q4_k, HY_DTYPE_Q4_K)
BLOCK_KERNELS(q6_k, HY_DTYPE_Q6_K)
BLOCK_KERNELS(q4_g128, HY_DTYPE_Q4_G128)

/* Per 32-value chunk b: d_b * (sc0*Σ_{i<16} q_i a_i + sc1*Σ_{i>=16} q_i a_i) + mn0*s_b
 * (mn is the same for both halves in every dtype that has one: Q4_K), the integer sums
 * exact, the chunks added in order. */
float hy_cpu_q_dot_ref(enum hy_dtype dt, const struct hy_cpu_xq *x, const void *w, int64_t cols)
{
    HY_ASSERT(cols % 32 == 0);
    float s = 0.0f, sc[2], mn[2];
    int8_t q[32];
    for (int64_t b = 0; b < cols / 32; b++) {
        hy_cpu_unpack32(dt, w, b, q, sc, mn);
        int32_t i0 = 0, i1 = 0;
        for (int i = 0; i < 16; i++) {
            i0 += (int32_t)q[i] * x->q[32 * b + i];
            i1 += (int32_t)q[i + 16] * x->q[32 * b + i + 16];
        }
        s += x->d[b] * (sc[0] * (float)i0 + sc[1] * (float)i1) + mn[0] * x->s[b];
    }
    return s;
}

void hy_cpu_quantize_x_ref(int8_t *q, float *d, float *s, float *d8, const float *x, int64_t n,
                           int block)
{
    HY_ASSERT((block == 32 || block == 128) && n % block == 0);
    for (int64_t b = 0; b < n / block; b++) {
        const float *xb = x + block * b;
        float amax = 0.0f;
        for (int i = 0; i < block; i++)
            amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
        float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
        for (int c = 0; c < block / 32; c++) { /* per 32-value chunk */
            int64_t k = b * (block / 32) + c;
            int32_t sum = 0;
            for (int i = 0; i < 32; i++) {
                int v = (int)rintf(x[32 * k + i] * id);
                q[32 * k + i] = (int8_t)v;
                sum += v;
            }
            d[k] = db;
            s[k] = db * (float)sum;
            for (int i = 0; i < 8; i++)
                d8[8 * k + i] = db;
        }
    }
}

static void scores(float *s, const float *q, const float *k, int64_t stride, int n, int hd,
                   float scale)
{
    for (int j = 0; j < n; j++) {
        const float *kj = k + j * stride;
        float d = 0.0f;
        for (int i = 0; i < hd; i++)
            d += q[i] * kj[i];
        s[j] = d * scale;
    }
}

static void accum(float *acc, float c, const float *p, const float *v, int64_t stride, int n,
                  int hd)
{
    for (int i = 0; i < hd; i++)
        acc[i] *= c;
    for (int j = 0; j < n; j++) {
        const float *vj = v + j * stride;
        for (int i = 0; i < hd; i++)
            acc[i] += p[j] * vj[i];
    }
}

void hy_cpu_kernels_scalar(struct hy_cpu_kernels *k)
{
    k->isa = HY_CPU_ISA_SCALAR;
    k->name = "scalar";
    HY_CPU_SET_DENSE_KERNELS(k);
    k->mm[HY_DTYPE_Q4_0] = block_q4_0;
    k->mm[HY_DTYPE_Q4_K] = block_q4_k;
    k->mm[HY_DTYPE_Q6_K] = block_q6_k;
    k->mm[HY_DTYPE_Q4_G128] = block_q4_g128;
    k->scores = scores;
    k->accum = accum;
    k->quantize_x = hy_cpu_quantize_x_ref;
}
