/* moe_ops.h: the CUDA backend's mixture-of-experts ops (moe_ops.c), as cuda.c puts them in
 * its table; backend.h has their contract, moe.h how the kernels do it. C only; internal to
 * backend/cuda. */
#ifndef HY_BACKEND_CUDA_MOE_OPS_H
#define HY_BACKEND_CUDA_MOE_OPS_H

#include "backend/backend.h"

hy_status hy_cuda_weight_upload_n(struct hy_backend *be, struct hy_weight *ws, int n,
                                  struct hy_err *err);
void hy_cuda_op_moe_route(struct hy_backend *be, const struct hy_moe_route *r,
                          const float *logits, const float *bias, int T, int E, int k,
                          float scale);
void hy_cuda_op_moe_gate_up(struct hy_backend *be, float *act, const float *x,
                            const struct hy_weight *gate, const struct hy_weight *up, int E,
                            const struct hy_moe_route *r, int T, int k);
void hy_cuda_op_moe_down(struct hy_backend *be, float *y, const float *act,
                         const struct hy_weight *down, int E, const struct hy_moe_route *r,
                         int T, int k);
void hy_cuda_op_moe_combine(struct hy_backend *be, float *out, const float *acc, const float *y,
                            const struct hy_moe_route *r, int T, int k, int64_t d);
bool hy_cuda_moe_takes(enum hy_dtype dt);


#endif
