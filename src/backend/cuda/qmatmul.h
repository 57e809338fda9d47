/* qmatmul.h: weight-only quantized matrices on the CUDA backend (qmatmul.cu): their device
 * layout, the host repack into it, matmul and embedding lookup. C linkage; included by
 * cuda.c and the .cu (which cannot include core/dtype.h: C11 _Static_assert), so the types
 * have codes of their own here, mapped from enum hy_dtype by cuda.c.
 *
 * Types: the three whose block is an fp16 scale d followed by the quants of `B` elements,
 * value = d * q:
 *   HY_CUDA_Q8_0    B = 32,  32 bytes: int8 q                (GGUF Q8_0, 34-byte blocks)
 *   HY_CUDA_Q4_0    B = 32,  16 bytes: byte j holds element j (low nibble) and j+16 (high),
 *                   q = nibble - 8                           (GGUF Q4_0, 18-byte blocks)
 *   HY_CUDA_Q4_G128 B = 128, 64 bytes: byte j holds element j (low) and j+64 (high),
 *                   q = nibble - 8                           (hymt, 66-byte blocks)
 * Device layout ("split"): a matrix of rows x cols (cols % B == 0) with nb = rows*cols/B
 * blocks, in row-major block order, is stored as the quant bytes of every block one after
 * the other (row r's at r * (cols/B) * QB), then, from the next multiple of 16 bytes, the
 * nb fp16 scales (row r's at index r * (cols/B)). The quant bytes are kept exactly as in
 * the block (same nibble order), so a row's quants are 16-byte aligned (QB*cols/B is a
 * multiple of 16) and every 16 bytes of them belong to one block: the GEMV reads them with
 * 16-byte loads. hy_cuda_q_bytes <= the blocks' own bytes + 16.
 * GGUF's super-block types (B = 256; qlayout_k.h has their layouts, qmatmul_k.cu the
 * kernels; values exactly llama.cpp's):
 *   HY_CUDA_Q4_K    144-byte blocks kept as GGUF stores them (a 16-byte header: fp16 d,
 *                   fp16 dmin, 12 bytes of 6-bit scales sc and mins m of 8 sub-blocks of
 *                   32; then 128 bytes of nibbles q), value d*sc*q - dmin*m;
 *   HY_CUDA_Q6_K    210-byte blocks split into all ql/qh (192 bytes a block), then all
 *                   int8 scales (16 a block), then all fp16 d; value d*sc*(q - 32).
 *   Both: hy_cuda_q_bytes == the blocks' own bytes, every 16-byte load aligned.
 *
 * Precision: T <= 8 input rows (and x 16-byte aligned): the quants and scales are
 * dequantized in registers and multiplied with float32 x, float32 sums (per 4 or 8
 * weights sum(q*x), times d, added to the row's sum): within a few float32 ulps per term of
 * the exact product with the dequantized weights (Q4_K: of the terms d*sc*q*x and
 * dmin*m*x, as the min is taken off per sub-block: sum over 16 x, times dmin*m; Q6_K: per
 * 4 weights sum(q*x) times d*sc). Larger T: Q8_0, Q4_0 and Q4_G128 with cols % 128 == 0
 * (W 16-byte aligned) go through the tensor-core kernel of qmma.h, which dequantizes W in
 * registers with the roundings below (so its results are within the same bound); other
 * shapes and types through a chunked dequantize: rows of W are dequantized (d*q in
 * float32, then rounded to bf16, nearest even) into the bf16 scratch `wbf` a chunk of rows
 * at a time, and each chunk is multiplied by cuBLAS with x rounded to bf16 (as
 * matmul.cu), float32 accumulation. */
#ifndef HY_BACKEND_CUDA_QMATMUL_H
#define HY_BACKEND_CUDA_QMATMUL_H

#include "backend/cuda/cuda_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hy_cuda_qtype {
    HY_CUDA_Q8_0 = 0,
    HY_CUDA_Q4_0 = 1,
    HY_CUDA_Q4_G128 = 2,
    HY_CUDA_Q4_K = 3,
    HY_CUDA_Q6_K = 4
};

/* Elements a block (B), quant bytes a block (QB; Q4_K 128, Q6_K 192) and bytes of a block
 * in its host (GGUF) layout (hy_dtype_size of the matching dtype) of a type. */
int hy_cuda_q_block(int qt);
int hy_cuda_q_block_qbytes(int qt);
int hy_cuda_q_block_bytes(int qt);
/* Device bytes of a rows x cols matrix in its device layout. */
size_t hy_cuda_q_bytes(int qt, int64_t rows, int64_t cols);
/* Repacks rows*cols/B blocks at src (host, the block layout, may be unaligned) into the
 * device layout at dst (host, hy_cuda_q_bytes bytes; the alignment gap is zeroed). */
void hy_cuda_q_repack(void *dst, const void *src, int qt, int64_t rows, int64_t cols);

/* out[T, rows] = x[T, cols] · Wᵀ, W in the split layout on the device. x_ready and the
 * return value as hy_cuda_matmul_bf16 (s->xbf holds x rounded to bf16 when it returns
 * true); s (cuda_impl.h): s->wbf >= 8 rows of W, s->cbuf the outputs of a chunk when
 * rows % 8 != 0 and the tensor-core kernel's K-split parts. */
bool hy_cuda_matmul_q(cudaStream_t st, cublasHandle_t blas, float *out, const float *x,
                      const void *w, int qt, int64_t rows, int64_t cols, int T, bool x_ready,
                      const struct hy_cuda_mm_scratch *s);
/* The chunked dequantize + cuBLAS path alone (hy_cuda_dequant_mm), for any T (the fallback
 * of the above; tests and benchmarks compare the tensor-core kernel with it). Same
 * arguments. */
bool hy_cuda_matmul_q_chunked(cudaStream_t st, cublasHandle_t blas, float *out, const float *x,
                              const void *w, int qt, int64_t rows, int64_t cols, int T,
                              bool x_ready, const struct hy_cuda_mm_scratch *s);
/* out[t, :] = the dequantized row ids[t] of table (split layout, rows x cols), float32
 * d * q exactly as the host dequantizers; ids on the device, in range. */
void hy_cuda_embed_q(cudaStream_t st, float *out, const void *table, int qt, int64_t rows,
                     int64_t cols, const int32_t *ids, int T);

#ifdef __cplusplus
}
#endif

#endif
