/* elementwise.cu: the memory-bound ops that touch each element once: embedding lookup,
 * row scatter (kv_store) and gather (copy_rows), SiLU-multiply, add, and the float32 ->
 * bf16 rounding of matmul inputs. Grid-stride loops; rows get one block each. */
#include "backend/cuda/cuda_impl.h"

#include <cuda_bf16.h>

#define EW_THREADS 256
#define EW_MAX_BLOCKS 65536

static int ew_blocks(int64_t n)
{
    int64_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (int)(b < 1 ? 1 : b > EW_MAX_BLOCKS ? EW_MAX_BLOCKS : b);
}

__global__ void embed_kernel(float *out, const uint16_t *table, int64_t cols, const int32_t *ids)
{
    const uint16_t *row = table + (int64_t)ids[blockIdx.x] * cols;
    float *o = out + (int64_t)blockIdx.x * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        o[c] = __uint_as_float((uint32_t)row[c] << 16); /* bf16 -> f32 is exact */
}

/* dst[dst_idx(i)] = src[src_idx(i)] row by row: scatter when sidx is NULL, gather when
 * didx is NULL. */
__global__ void rows_kernel(float *dst, const float *src, const int32_t *didx,
                            const int32_t *sidx, int64_t cols)
{
    int64_t d = didx ? didx[blockIdx.x] : blockIdx.x;
    int64_t s = sidx ? sidx[blockIdx.x] : blockIdx.x;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        dst[d * cols + c] = src[s * cols + c];
}

/* pool[slots[r], :] = rows[r, :] rounded to bf16 (nearest even): kv_store into a bf16 pool. */
__global__ void scatter_bf16_kernel(__nv_bfloat16 *pool, const float *rows, const int32_t *slots,
                                    int64_t cols)
{
    __nv_bfloat16 *d = pool + (int64_t)slots[blockIdx.x] * cols;
    const float *s = rows + (int64_t)blockIdx.x * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        d[c] = __float2bfloat16_rn(s[c]);
}

__global__ void silu_mul_kernel(float *out, const float *gate, const float *up, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

__global__ void add_kernel(float *x, const float *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] += y[i];
}

__global__ void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

extern "C" void hy_cuda_embed_bf16(cudaStream_t st, float *out, const uint16_t *table,
                                   int64_t cols, const int32_t *ids, int T)
{
    if (T <= 0)
        return;
    embed_kernel<<<T, EW_THREADS, 0, st>>>(out, table, cols, ids);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_scatter_rows(cudaStream_t st, float *pool, const float *rows,
                                     const int32_t *slots, int T, int64_t cols)
{
    if (T <= 0)
        return;
    rows_kernel<<<T, EW_THREADS, 0, st>>>(pool, rows, slots, NULL, cols);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_scatter_rows_bf16(cudaStream_t st, void *pool, const float *rows,
                                          const int32_t *slots, int T, int64_t cols)
{
    if (T <= 0)
        return;
    scatter_bf16_kernel<<<T, EW_THREADS, 0, st>>>((__nv_bfloat16 *)pool, rows, slots, cols);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_gather_rows(cudaStream_t st, float *dst, const float *src,
                                    const int32_t *idx, int n, int64_t cols)
{
    if (n <= 0)
        return;
    rows_kernel<<<n, EW_THREADS, 0, st>>>(dst, src, NULL, idx, cols);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_silu_mul(cudaStream_t st, float *out, const float *gate, const float *up,
                                 int64_t n)
{
    if (n <= 0)
        return;
    silu_mul_kernel<<<ew_blocks(n), EW_THREADS, 0, st>>>(out, gate, up, n);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_add(cudaStream_t st, float *x, const float *y, int64_t n)
{
    if (n <= 0)
        return;
    add_kernel<<<ew_blocks(n), EW_THREADS, 0, st>>>(x, y, n);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_f32_to_bf16(cudaStream_t st, uint16_t *dst, const float *src, int64_t n)
{
    if (n <= 0)
        return;
    to_bf16_kernel<<<ew_blocks(n), EW_THREADS, 0, st>>>((__nv_bfloat16 *)dst, src, n);
    HY_CUDA_CHECK_LAUNCH();
}
