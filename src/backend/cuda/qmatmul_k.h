/* qmatmul_k.h: the launchers of qmatmul_k.cu, GGUF's Q4_K and Q6_K matrices kept
 * quantized on the device in the layouts of qlayout_k.h. Internal to the CUDA backend:
 * qmatmul.cu calls them for HY_CUDA_Q4_K / HY_CUDA_Q6_K from hy_cuda_matmul_q and
 * hy_cuda_embed_q, whose contract (qmatmul.h) covers precision. Device pointers only;
 * each enqueues on st and checks the launch. C linkage. */
#ifndef HY_BACKEND_CUDA_QMATMUL_K_H
#define HY_BACKEND_CUDA_QMATMUL_K_H

#include "backend/cuda/qmatmul.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[T, rows] = x[T, cols] · Wᵀ for 1 <= T <= 8, x 16-byte aligned (cols % 256 == 0):
 * the register-dequantizing GEMV. */
void hy_cuda_qk_gemv(cudaStream_t st, float *out, const float *x, const void *w, int qt,
                     int64_t rows, int64_t cols, int T);
/* dst[0 .. nr_pad*cols) = rows r0 .. r0+nr-1 of W dequantized (float32, as the host) and
 * rounded to bf16 (nearest even); rows nr .. nr_pad-1 are zeros. nr_pad % 8 == 0. */
void hy_cuda_qk_dequant_bf16(cudaStream_t st, uint16_t *dst, const void *w, int qt,
                             int64_t rows, int64_t cols, int64_t r0, int64_t nr,
                             int64_t nr_pad);
/* out[t, :] = row ids[t] of the table, float32, bit for bit the host dequantizer's. */
void hy_cuda_qk_embed(cudaStream_t st, float *out, const void *table, int qt, int64_t rows,
                      int64_t cols, const int32_t *ids, int T);

#ifdef __cplusplus
}
#endif

#endif
