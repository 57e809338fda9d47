/* kernels_scalar.c: the portable kernels, used when the CPU has no supported SIMD level
 * (and as the baseline in tests). Float32 accumulation like the SIMD kernels; each body is
 * written once with the dtype as a parameter and specialised by always_inline wrappers. */
#include "backend/cpu/cpu_impl.h"

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
    k->mm[HY_DTYPE_F32] = (struct hy_cpu_mm_kernels){rows4_f32, toks4_f32, dot_f32, tile_f32};
    k->mm[HY_DTYPE_F16] = (struct hy_cpu_mm_kernels){rows4_f16, toks4_f16, dot_f16, tile_f16};
    k->mm[HY_DTYPE_BF16] = (struct hy_cpu_mm_kernels){rows4_bf16, toks4_bf16, dot_bf16, tile_bf16};
    k->mm[HY_DTYPE_Q8_0] = (struct hy_cpu_mm_kernels){rows4_q8_0, toks4_q8_0, dot_q8_0, tile_q8_0};
    k->scores = scores;
    k->accum = accum;
}
