/* cpu_impl.h: internals shared by the files of the CPU backend; nothing outside
 * src/backend/cpu/ includes it. The SIMD level is picked once, when the backend is
 * created, by filling a struct hy_cpu_kernels that lives in the backend's context; the
 * ops then call through it (no global dispatch state). All kernels read weights with
 * unaligned loads: weight data points into an mmapped file. */
#ifndef HY_BACKEND_CPU_IMPL_H
#define HY_BACKEND_CPU_IMPL_H

#include "backend/cpu/cpu.h"
#include "core/threads.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Element i of weight data w of type dt, as float32 (a memcpy load: w may be unaligned). */
static inline float hy_cpu_weight_load(const void *w, int64_t i, enum hy_dtype dt)
{
    const unsigned char *p = w;
    uint16_t h;
    float f;
    if (dt == HY_DTYPE_F32) {
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    if (dt == HY_DTYPE_Q8_0) { /* w starts on a block boundary */
        const unsigned char *b = p + (i / HY_Q8_0_BLOCK) * sizeof(struct hy_q8_0_block);
        int8_t q;
        memcpy(&h, b, 2);
        memcpy(&q, b + 2 + i % HY_Q8_0_BLOCK, 1);
        return hy_f16_to_f32(h) * (float)q;
    }
    memcpy(&h, p + i * 2, 2);
    return dt == HY_DTYPE_BF16 ? hy_bf16_to_f32(h) : hy_f16_to_f32(h);
}

/* Dot-product micro kernels for one weight dtype; activations and results are float32,
 * accumulation is float32. w points at weight row(s) of `cols` elements. For Q8_0, w is on
 * a block boundary and cols (n) is a multiple of 32; each weight element is d*q in float32
 * (exactly the reference's value), then multiplied into the sum. */
struct hy_cpu_mm_kernels {
    /* y[i] = x · (row i of w), i < 4, consecutive rows `stride` bytes apart (decode). */
    void (*rows4)(float *y, const float *x, const void *w, size_t stride, int64_t cols);
    /* y[t*ys] = (x + t*xs) · w, t < 4: one weight row against 4 tokens (prefill rows left
     * over by the 4x4 tiles). */
    void (*toks4)(float *y, int64_t ys, const float *x, int64_t xs, const void *w, int64_t cols);
    /* x · w for one row. */
    float (*dot)(const float *x, const void *w, int64_t cols);
    /* y[t*ys + i] (+)= (x + t*xs) · (row i of w) over n columns, for t < 4 tokens and i < 4
     * rows `stride` bytes apart: the register tile of prefill. Adds to y if `add`, else
     * overwrites it. */
    void (*tile4x4)(float *y, int64_t ys, const float *x, int64_t xs, const void *w,
                    size_t stride, int64_t n, bool add);
};

struct hy_cpu_kernels {
    enum hy_cpu_isa isa;
    const char *name;
    struct hy_cpu_mm_kernels mm[HY_DTYPE_COUNT]; /* indexed by weight dtype */
    /* s[j] = scale · (q · k_j) for j < n, k_j = k + j*stride (attention scores). */
    void (*scores)(float *s, const float *q, const float *k, int64_t stride, int n, int hd,
                   float scale);
    /* acc = acc·c + Σ_j p[j]·v_j for j < n, v_j = v + j*stride (attention weighted sum). */
    void (*accum)(float *acc, float c, const float *p, const float *v, int64_t stride, int n,
                  int hd);
};

/* Fill k with one SIMD level; false if the CPU (or this build) cannot run it. */
void hy_cpu_kernels_scalar(struct hy_cpu_kernels *k);
bool hy_cpu_kernels_avx2(struct hy_cpu_kernels *k);
bool hy_cpu_kernels_avx512(struct hy_cpu_kernels *k);

/* Private state of both CPU backends. */
struct hy_cpu_ctx {
    struct hy_pool *pool; /* NULL for the reference backend */
    int n_threads;
    bool ref;
    struct hy_cpu_kernels k; /* unused by the reference backend */
};

/* The threaded, SIMD ops of the fast backend (matmul.c, attention.c). */
void hy_cpu_matmul(struct hy_cpu_ctx *c, float *out, const float *x, const struct hy_weight *w,
                   int T);
void hy_cpu_attention(struct hy_cpu_ctx *c, float *out, const float *q, const float *k_pool,
                      const float *v_pool, int bs, const struct hy_attn_seq *seqs, int n_seqs,
                      int n_head, int n_kv, int hd, float scale);

#endif
