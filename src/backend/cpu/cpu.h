/* cpu.h: the CPU backend. hy_cpu_backend_create() makes a backend whose ops run on a
 * thread pool of n_threads (<= 0: all online CPUs); hy_cpu_backend_create_ref() makes one
 * that runs the plain single-threaded C reference ops, the specification every faster
 * kernel (threaded, SIMD, CUDA) is tested against. Destroy with be->i->destroy(be).
 * The fast backend's results do not depend on n_threads (bit for bit); they do depend on
 * the SIMD level (float32 sums in another order). The reference ops are also exported one
 * by one (hy_ref_*) for tests. */
#ifndef HY_BACKEND_CPU_H
#define HY_BACKEND_CPU_H

#include "backend/backend.h"

/* Largest head_dim the attention and rope ops accept (their scratch lives on the stack). */
#define HY_CPU_MAX_HEAD_DIM 512

/* SIMD level of the fast kernels, chosen at run time from what the CPU reports. */
enum hy_cpu_isa {
    HY_CPU_ISA_AUTO = 0, /* the best one this CPU supports */
    HY_CPU_ISA_SCALAR,   /* portable C */
    HY_CPU_ISA_AVX2,     /* x86-64 AVX2 + FMA + F16C */
    HY_CPU_ISA_AVX512,   /* x86-64 AVX-512F (+ AVX2, FMA, F16C) */
};

hy_status hy_cpu_backend_create(struct hy_backend **out, int n_threads, struct hy_err *err);
/* Same, with a fixed SIMD level (tests, benchmarks); HY_E_UNSUPPORTED if this CPU or build
 * lacks it. */
hy_status hy_cpu_backend_create_isa(struct hy_backend **out, int n_threads, enum hy_cpu_isa isa,
                                    struct hy_err *err);
hy_status hy_cpu_backend_create_ref(struct hy_backend **out, struct hy_err *err);
/* Threads the backend runs ops on (1 for the reference backend). */
int hy_cpu_backend_threads(const struct hy_backend *be);
/* Name of the kernels in use: "ref", "scalar", "avx2" or "avx512" (for logs). */
const char *hy_cpu_backend_isa(const struct hy_backend *be);

/* Plain C reference ops: same contracts as struct hy_backend_i, no backend argument. */
void hy_ref_embed(float *out, const struct hy_weight *table, const int32_t *ids, int T);
void hy_ref_rmsnorm(float *out, const float *x, const struct hy_weight *w, int64_t rows, int64_t d,
                    float eps);
void hy_ref_matmul(float *out, const float *x, const struct hy_weight *w, int T);
void hy_ref_rope(float *x, const int32_t *pos, int T, int n_heads, int hd, const float *inv_freq);
void hy_ref_attention(float *out, const float *q, const float *k_pool, const float *v_pool, int bs,
                      const struct hy_attn_seq *seqs, int n_seqs, int n_head, int n_kv, int hd,
                      float scale);
void hy_ref_kv_store(float *pool, const float *rows, const int32_t *slots, int T, int64_t cols);
void hy_ref_copy_rows(float *dst, const float *src, const int32_t *idx, int n, int64_t cols);
void hy_ref_silu_mul(float *out, const float *gate, const float *up, int64_t n);
void hy_ref_add(float *x, const float *y, int64_t n);

#endif
