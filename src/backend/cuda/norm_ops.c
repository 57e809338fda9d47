/* norm_ops.c: the CUDA backend's rmsnorm and add_rmsnorm ops (norm.cu has the kernels), and
 * the holds they leave for the next product (cuda_ctx.h). */
#include "backend/cuda/cuda_ctx.h"
#include "backend/cuda/qmmvq.h"

#include <stdint.h>

/* The context, with the matmul inputs it held forgotten (the norm writes out). */
static struct cuda_ctx *ctx_forget(struct hy_backend *be)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    c->xbf_x = NULL;
    c->xq_x = NULL;
    return c;
}

/* A norm's output is most often the next matmul's input (q/k/v, gate/up, the experts, the
 * head): past the GEMV rows (which read float32 x) the norm also writes it rounded to bf16
 * into xbf, and at up to HY_CUDA_MMVQ_MAX_T rows, once quantized weights made the int8
 * scratch, quantized into xq; it records the hold, so that matmul (and the MoE ops) skip
 * their conversion kernel (the same bits). bf16: not in batch-invariant mode (bimm splits
 * x itself) nor when out does not fit xbf in one piece. */
static struct hy_cuda_norm_out norm_out(const struct cuda_ctx *c, int64_t rows, int64_t d)
{
    struct hy_cuda_norm_out o = {NULL, NULL};
    if (!c->invariant && rows > HY_CUDA_GEMV_ROWS && rows <= INT32_MAX &&
        (size_t)rows * (size_t)d <= c->xbf_cap)
        o.bf = c->xbf;
    if (c->xq && rows <= HY_CUDA_MMVQ_MAX_T && d <= HY_CUDA_MMVQ_MAX_COLS && d % 32 == 0)
        o.xq = c->xq;
    return o;
}

static void norm_hold(struct cuda_ctx *c, int held, const float *out, int64_t rows, int64_t d)
{
    if (held & HY_CUDA_NORM_BF)
        c->xbf_x = out, c->xbf_T = (int)rows, c->xbf_cols = d;
    if (held & HY_CUDA_NORM_XQ)
        c->xq_x = out, c->xq_T = (int)rows, c->xq_cols = d;
}

void hy_cuda_op_rmsnorm(struct hy_backend *be, float *out, const float *x,
                         const struct hy_weight *w, int64_t rows, int64_t d, float eps)
{
    struct cuda_ctx *c = ctx_forget(be);
    HY_ASSERT(w->dtype == HY_DTYPE_F32 && w->rows * w->cols == d);
    if (hy_cuda_replaying(c))
        return;
    norm_hold(c, hy_cuda_rmsnorm(c->stream, out, norm_out(c, rows, d), x, w->data, rows, d, eps),
              out, rows, d);
}

void hy_cuda_op_add_rmsnorm(struct hy_backend *be, float *out, float *x, const float *y,
                             const struct hy_weight *w, int64_t rows, int64_t d, float eps)
{
    struct cuda_ctx *c = ctx_forget(be);
    HY_ASSERT(w->dtype == HY_DTYPE_F32 && w->rows * w->cols == d);
    if (!hy_cuda_replaying(c))
        norm_hold(c, hy_cuda_add_rmsnorm(c->stream, out, norm_out(c, rows, d), x, y, w->data,
                                         rows, d, eps),
                  out, rows, d);
}

