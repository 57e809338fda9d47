/* cpu.h: the CPU backend. hy_cpu_backend_create() makes a backend whose ops run on a
 * thread pool of n_threads (<= 0: all online CPUs); hy_cpu_backend_create_ref() makes one
 * that runs the plain single-threaded C reference ops, the specification every faster
 * kernel (threaded, SIMD, CUDA) is tested against. Destroy with be->i->destroy(be).
 * The reference ops are also exported one by one (hy_ref_*) for tests. */
#ifndef HY_BACKEND_CPU_H
#define HY_BACKEND_CPU_H

#include "backend/backend.h"

hy_status hy_cpu_backend_create(struct hy_backend **out, int n_threads, struct hy_err *err);
hy_status hy_cpu_backend_create_ref(struct hy_backend **out, struct hy_err *err);
/* Threads the backend runs ops on (1 for the reference backend). */
int hy_cpu_backend_threads(const struct hy_backend *be);

/* Plain C reference ops: same contracts as struct hy_backend_i, no backend argument. */
void hy_ref_embed(float *out, const struct hy_weight *table, const int32_t *ids, int T);
void hy_ref_rmsnorm(float *out, const float *x, const struct hy_weight *w, int64_t rows, int64_t d,
                    float eps);
void hy_ref_matmul(float *out, const float *x, const struct hy_weight *w, int T);
void hy_ref_rope(float *x, const int32_t *pos, int T, int n_heads, int hd, const float *inv_freq);
void hy_ref_attention(float *out, const float *q, const float *kc, const float *vc, int pos0, int T,
                      int n_head, int n_kv, int hd, float scale);
void hy_ref_silu_mul(float *out, const float *gate, const float *up, int64_t n);
void hy_ref_add(float *x, const float *y, int64_t n);

#endif
