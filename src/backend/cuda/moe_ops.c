/* moe_ops.c: the CUDA backend's mixture-of-experts ops (moe_ops.h; backend.h has the
 * contract, moe.h the kernels). */
#include "backend/cuda/moe_ops.h"

#include "backend/cuda/cuda_ctx.h"
#include "backend/cuda/moe.h"
#include "backend/cuda/qmatmul.h"
#include "backend/cuda/qmmvq.h"

#include <limits.h>

/* The kernels' code of a matrix dtype as weight_upload leaves it, or -2 (not taken). */
static int code_of(enum hy_dtype dt)
{
    switch (dt) {
    case HY_DTYPE_BF16: return HY_CUDA_MOE_BF16;
    case HY_DTYPE_Q8_0: return HY_CUDA_Q8_0;
    case HY_DTYPE_Q4_0: return HY_CUDA_Q4_0;
    case HY_DTYPE_Q4_G128: return HY_CUDA_Q4_G128;
    default: return -2;
    }
}

/* The qmatmul.h type weight_upload keeps a matrix of dtype dt in, or -1 (bf16). */
static int qtype_kept(enum hy_dtype dt)
{
    switch (dt) {
    case HY_DTYPE_Q8_0: return HY_CUDA_Q8_0;
    case HY_DTYPE_Q4_0: return HY_CUDA_Q4_0;
    case HY_DTYPE_Q4_G128: return HY_CUDA_Q4_G128;
    case HY_DTYPE_Q4_K: return HY_CUDA_Q4_K;
    case HY_DTYPE_Q6_K: return HY_CUDA_Q6_K;
    default: return -1;
    }
}

/* The stride of weight_upload_n's matrices: a device matrix's bytes, aligned. */
static size_t stride_of(int qt, int64_t rows, int64_t cols)
{
    size_t b = qt >= 0 ? hy_cuda_q_bytes(qt, rows, cols) : (size_t)(rows * cols) * 2;
    return (b + HY_CUDA_MOE_ALIGN - 1) / HY_CUDA_MOE_ALIGN * HY_CUDA_MOE_ALIGN;
}

bool hy_cuda_moe_takes(enum hy_dtype dt)
{
    return code_of(dt) >= -1;
}

/* Each matrix goes through weight_upload (its conversion or repack) into a buffer of its
 * own, then into its place in the stack: the device holds one matrix more than the stack
 * at most. */
hy_status hy_cuda_weight_upload_n(struct hy_backend *be, struct hy_weight *ws, int n,
                                  struct hy_err *err)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    HY_ASSERT(n >= 1 && ws[0].rows > 1);
    for (int i = 1; i < n; i++)
        HY_ASSERT(ws[i].dtype == ws[0].dtype && ws[i].rows == ws[0].rows &&
                  ws[i].cols == ws[0].cols);
    const int qt = qtype_kept(ws[0].dtype);
    const size_t stride = stride_of(qt, ws[0].rows, ws[0].cols);
    const size_t bytes = qt >= 0 ? hy_cuda_q_bytes(qt, ws[0].rows, ws[0].cols)
                                 : (size_t)(ws[0].rows * ws[0].cols) * 2;
    unsigned char *base = be->i->alloc(be, stride * (size_t)n);
    if (!base)
        return hy_err_set(err, HY_E_NOMEM, "out of device memory for %d %lldx%lld %s "
                          "matrices (%.2f GiB)", n, (long long)ws[0].rows,
                          (long long)ws[0].cols, hy_dtype_name(ws[0].dtype),
                          (double)(stride * (size_t)n) / (1 << 30));
    enum hy_dtype to = ws[0].dtype;
    for (int i = 0; i < n; i++) {
        struct hy_weight one = ws[i];
        hy_status s = be->i->weight_upload(be, &one, err);
        if (s) {
            be->i->free(be, base);
            return s;
        }
        HY_CUDA_CHECK(cudaMemcpyAsync(base + (size_t)i * stride, one.data, bytes,
                                      cudaMemcpyDeviceToDevice, c->stream));
        be->i->free(be, (void *)one.data); /* cudaFree waits for the copy */
        to = one.dtype;
    }
    for (int i = 0; i < n; i++) {
        ws[i].data = base + (size_t)i * stride;
        ws[i].dtype = to;
    }
    return HY_OK;
}

/* The context for an op that writes backend memory: matmul's cached inputs forgotten. */
static struct cuda_ctx *ctx_w(struct hy_backend *be)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    c->xbf_x = NULL;
    c->xq_x = NULL;
    return c;
}

void hy_cuda_op_moe_route(struct hy_backend *be, const struct hy_moe_route *r,
                          const float *logits, const float *bias, int T, int E, int k,
                          float scale)
{
    struct cuda_ctx *c = ctx_w(be);
    HY_ASSERT(T >= 0 && k >= 1 && k <= E && k <= HY_CUDA_MOE_MAX_K && E <= HY_CUDA_MOE_MAX_E);
    if (hy_cuda_replaying(c) || T == 0)
        return;
    hy_cuda_moe_route(c->stream, r->ids, r->w, logits, bias, T, E, k, scale, r->off, r->rows,
                      r->sel, r->act);
}

/* Launch slots: at most one an expert, at most one a routed pair. */
static int slots(int E, int T, int k)
{
    return T * k < E ? T * k : E;
}

/* Whether the grouped GEMM takes the experts with more than HY_CUDA_MOE_GEMV_MAX places:
 * only when an expert can have that many (at most T: a token picks an expert once), and
 * not in the batch-invariant mode (a place's sums would depend on its group's size). */
static bool use_mma(const struct cuda_ctx *c, const struct hy_weight *w, int T)
{
    return !c->invariant && T > HY_CUDA_MOE_GEMV_MAX && hy_cuda_moe_mma_fits(w->rows, w->cols);
}

/* The GEMVs of the experts with at most max_n places, outside the batch-invariant mode by
 * moe_mmvq.cu (quantized experts from int8 activations quantized here into r->xq, where the
 * routing has that scratch; bf16 from x), else the float32 GEMV of moe.cu, whose
 * quantized products keep float32 activations as the invariant matmul's do. n_in input rows
 * x of cols; in_row the rows of the places (NULL: the place). */
static void grouped_gemv(struct cuda_ctx *c, float *out, const float *x, int n_in,
                         const int32_t *in_row, const struct hy_weight *w0, const void *w1,
                         const struct hy_moe_route *r, int E, int T, int k, int max_n)
{
    const int code = code_of(w0->dtype), qt = code >= 0 ? code : -1;
    const size_t stride = stride_of(qt, w0->rows, w0->cols);
    HY_ASSERT(!r->shared || T <= HY_MOE_SHARED_MAX_T);
    const struct hy_cuda_moe_sh sh = {r->shared ? E : -1, T * k, T};
    if (!c->invariant && hy_cuda_moe_mmvq_fits(code, w0->cols, stride) &&
        (code < 0 ? !((uintptr_t)x & 15) : r->xq != NULL)) {
        if (code >= 0)
            hy_cuda_mmvq_quantize(c->stream, r->xq, x, n_in, w0->cols);
        hy_cuda_moe_mmvq(c->stream, out, code >= 0 ? r->xq : (const void *)x, n_in, in_row,
                         w0->data, w1, stride, code, w0->rows, w0->cols, r->off, r->act,
                         slots(E, T, k), max_n, T, sh);
        return;
    }
    hy_cuda_moe_gemv(c->stream, out, x, w0->data, w1, stride, code, w0->rows, w0->cols,
                     w1 != NULL, r->off, r->rows, r->act, slots(E, T, k), max_n, sh);
}

void hy_cuda_op_moe_gate_up(struct hy_backend *be, float *act, const float *x,
                            const struct hy_weight *gate, const struct hy_weight *up, int E,
                            const struct hy_moe_route *r, int T, int k)
{
    struct cuda_ctx *c = ctx_w(be);
    const int code = code_of(gate->dtype);
    HY_ASSERT(code >= -1 && up->dtype == gate->dtype && up->rows == gate->rows &&
              up->cols == gate->cols && T >= 0 && gate->cols % 8 == 0 &&
              ((uintptr_t)x & 15) == 0);
    if (hy_cuda_replaying(c))
        return;
    const int qt = code >= 0 ? code : -1;
    const size_t stride = stride_of(qt, gate->rows, gate->cols);
    const bool mm = use_mma(c, gate, T);
    grouped_gemv(c, act, x, T, r->rows, gate, up->data, r, E, T, k,
                 mm ? HY_CUDA_MOE_GEMV_MAX : INT_MAX);
    if (mm)
        hy_cuda_moe_mma(c->stream, act, x, gate->data, up->data, stride, code, gate->rows,
                        gate->cols, true, r->off, r->rows, r->act, slots(E, T, k), T,
                        HY_CUDA_MOE_GEMV_MAX + 1);
}

void hy_cuda_op_moe_down(struct hy_backend *be, float *y, const float *act,
                         const struct hy_weight *down, int E, const struct hy_moe_route *r,
                         int T, int k)
{
    struct cuda_ctx *c = ctx_w(be);
    const int code = code_of(down->dtype);
    HY_ASSERT(code >= -1 && T >= 0 && down->cols % 8 == 0 && ((uintptr_t)act & 15) == 0);
    if (hy_cuda_replaying(c))
        return;
    const int qt = code >= 0 ? code : -1;
    const size_t stride = stride_of(qt, down->rows, down->cols);
    const bool mm = use_mma(c, down, T);
    grouped_gemv(c, y, act, T * k + (r->shared ? T : 0), NULL, down, NULL, r, E, T, k,
                 mm ? HY_CUDA_MOE_GEMV_MAX : INT_MAX);
    if (mm)
        hy_cuda_moe_mma(c->stream, y, act, down->data, NULL, stride, code, down->rows,
                        down->cols, false, r->off, r->rows, r->act, slots(E, T, k), T,
                        HY_CUDA_MOE_GEMV_MAX + 1);
}

void hy_cuda_op_moe_combine(struct hy_backend *be, float *out, const float *acc, const float *y,
                            const struct hy_moe_route *r, int T, int k, int64_t d)
{
    struct cuda_ctx *c = ctx_w(be);
    HY_ASSERT(T >= 0 && k >= 1 && k <= HY_CUDA_MOE_MAX_K);
    if (!hy_cuda_replaying(c))
        hy_cuda_moe_combine(c->stream, out, acc, y, r->sel, r->w, T, k, d);
}
