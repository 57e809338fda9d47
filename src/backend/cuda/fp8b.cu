/* fp8b.cu: the layout, upload and dense matmul of block-scaled fp8 matrices (fp8b.h has the
 * contract; fp8_gemv.cuh the GEMV and the decoding). */
#include "backend/cuda/fp8_gemv.cuh"
#include "backend/cuda/fp8b.h"
#include "backend/cuda/qmma.h"

#include <cuda_bf16.h>

static_assert(HY_CUDA_FP8B_BLOCK == F8_BLOCK, "one block size for the layout and the GEMV");

extern "C" size_t hy_cuda_fp8b_bytes(int64_t rows, int64_t cols)
{
    const size_t n = (size_t)((rows + F8_BLOCK - 1) / F8_BLOCK * f8b_nbc(cols));
    return (f8b_scales_at(rows, cols) + n * sizeof(float) + 15) & ~(size_t)15;
}

extern "C" void hy_cuda_fp8b_upload(cudaStream_t st, void *dst, const uint8_t *codes,
                                    const float *scale, int64_t rows, int64_t cols)
{
    unsigned char *d = (unsigned char *)dst;
    const size_t at = f8b_scales_at(rows, cols), n = (size_t)(rows * cols);
    const size_t ns = (size_t)((rows + F8_BLOCK - 1) / F8_BLOCK * f8b_nbc(cols));
    HY_CUDA_CHECK(cudaMemsetAsync(d + n, 0, hy_cuda_fp8b_bytes(rows, cols) - n, st));
    HY_CUDA_CHECK(cudaMemcpyAsync(d, codes, n, cudaMemcpyHostToDevice, st));
    HY_CUDA_CHECK(cudaMemcpyAsync(d + at, scale, ns * sizeof(float), cudaMemcpyHostToDevice, st));
    HY_CUDA_CHECK(cudaStreamSynchronize(st)); /* pageable sources: done before they go */
}

/* dst[0 .. nr_pad*cols) = rows r0 .. r0+nr-1 of W as bf16 (rows past nr: 0), 8 elements a
 * thread (cols % 16 == 0: one 8-byte load, one scale). */
__global__ void f8b_dequant_kernel(uint16_t *dst, const unsigned char *wq, const float *ws,
                                   int64_t r0, int64_t nr, int64_t nv, int64_t cols)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= nv)
        return;
    const int64_t e = i * 8, r = e / cols, c = e % cols;
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (r < nr) {
        const uint2 q = __ldg((const uint2 *)(wq + (r0 + r) * cols + c));
        const float s = __ldg(ws + (r0 + r) / F8_BLOCK * f8b_nbc(cols) + c / F8_BLOCK) *
                        f8_dec_scale();
        f8_word(q.x, v);
        f8_word(q.y, v + 4);
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] *= s; /* exact but for this one rounding (a power-of-two dec_scale) */
    }
    uint32_t o[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
        o[j] = *reinterpret_cast<uint32_t *>(&h);
    }
    *(uint4 *)(dst + e) = make_uint4(o[0], o[1], o[2], o[3]);
}

/* hy_cuda_dequant_fn for block-scaled fp8. */
static void f8b_dequant(cudaStream_t st, uint16_t *dst, const void *w, int64_t r0, int64_t nr,
                        int64_t nr_pad)
{
    const struct f8_weight *fw = (const struct f8_weight *)w;
    const int64_t nv = nr_pad * fw->cols / 8;
    f8b_dequant_kernel<<<(unsigned)((nv + 255) / 256), 256, 0, st>>>(dst, fw->wq, fw->ws, r0, nr,
                                                                     nv, fw->cols);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" bool hy_cuda_matmul_fp8b(cudaStream_t st, cublasHandle_t blas, float *out,
                                    const float *x, const void *w, int64_t rows, int64_t cols,
                                    int T, bool x_ready, const struct hy_cuda_mm_scratch *s)
{
    if (rows < 1 || cols < HY_CUDA_FP8B_COLS || cols % HY_CUDA_FP8B_COLS || T < 1 ||
        ((uintptr_t)w & 15))
        hy_cuda_fail(__FILE__, __LINE__, "rows, T >= 1, cols % 16 == 0", "bad fp8b matmul call");
    const unsigned char *wq = (const unsigned char *)w;
    const float *ws = (const float *)(wq + f8b_scales_at(rows, cols));
    if (T <= F8_MAX_T && !((uintptr_t)x & 15)) {
        f8_gemv_t<F8_BLK>(st, out, x, wq, ws, rows, cols, T);
        return false;
    }
    if (hy_cuda_qmma_fits(HY_CUDA_MOE_FP8B, rows, cols, w))
        return hy_cuda_matmul_qmma(st, out, x, w, HY_CUDA_MOE_FP8B, rows, cols, T, x_ready, s);
    const struct f8_weight fw = {wq, ws, cols};
    return hy_cuda_dequant_mm(st, blas, out, x, rows, cols, T, x_ready, s, f8b_dequant, &fw,
                              "fp8b matmul scratch too small");
}
