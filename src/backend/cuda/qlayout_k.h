/* qlayout_k.h: the CUDA backend's device layouts of GGUF's Q4_K and Q6_K matrices
 * (core/quant.h has the blocks; qmatmul_k.cu the kernels; qmatmul.h the contract of all
 * quantized types): sizes, offsets and the host repack. Plain C with no CUDA header, so
 * the unit test qlayout_k_test.c checks the repack in every build. Pure; thread-safe.
 *
 * A rows x cols matrix (cols % 256 == 0) has nb = rows * cols/256 super-blocks in
 * row-major order (row r's at r * cols/256).
 *   Q4_K: the 144-byte super-blocks exactly as GGUF stores them, one after the other.
 *     144 = 9 x 16 and each block is a 16-byte header (fp16 d, fp16 dmin, 12 bytes of
 *     packed 6-bit scales and mins) then 128 quant bytes, so from a 16-byte aligned base
 *     every header and every 16 quant bytes is a 16-byte aligned load: nothing to gain
 *     from moving the bytes (and a GGUF tensor is uploaded with one memcpy).
 *   Q6_K ("split": 210 is not a multiple of 16): three arrays, no gaps,
 *     [0, 192 nb)          each block's ql[128] then qh[64], as in the block;
 *     [192 nb, 208 nb)     each block's 16 int8 scales;
 *     [208 nb, 210 nb)     each block's fp16 d.
 *     Every array starts on a multiple of 16 bytes; a block's quants are 12 aligned
 *     16-byte pieces, its scales one. */
#ifndef HY_BACKEND_CUDA_QLAYOUT_K_H
#define HY_BACKEND_CUDA_QLAYOUT_K_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HY_QK_SUPER 256      /* elements a super-block */
#define HY_QK_Q4K_BYTES 144  /* a Q4_K super-block (GGUF) */
#define HY_QK_Q4K_HEAD 16    /* its d, dmin and scales, before the 128 quant bytes */
#define HY_QK_Q6K_BYTES 210  /* a Q6_K super-block (GGUF): ql, qh, scales, d */
#define HY_QK_Q6K_QBYTES 192 /* ql[128] and qh[64] */
#define HY_QK_Q6K_NSC 16     /* int8 scales */

/* The size and offset helpers serve the kernels too. */
#ifdef __CUDACC__
#define HY_QK_HD __host__ __device__
#else
#define HY_QK_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Super-blocks of a rows x cols matrix. */
static inline HY_QK_HD size_t hy_qk_blocks(int64_t rows, int64_t cols)
{
    return (size_t)rows * (size_t)(cols / HY_QK_SUPER);
}

/* Q6_K: offsets of the scales and of the d arrays for nb super-blocks. */
static inline HY_QK_HD size_t hy_qk_q6k_scales_at(size_t nb)
{
    return nb * HY_QK_Q6K_QBYTES;
}
static inline HY_QK_HD size_t hy_qk_q6k_d_at(size_t nb)
{
    return nb * (HY_QK_Q6K_QBYTES + HY_QK_Q6K_NSC);
}

/* Device bytes of a rows x cols matrix (q6k: Q6_K, else Q4_K): the blocks' own bytes. */
static inline HY_QK_HD size_t hy_qk_bytes(bool q6k, int64_t rows, int64_t cols)
{
    return hy_qk_blocks(rows, cols) * (q6k ? HY_QK_Q6K_BYTES : HY_QK_Q4K_BYTES);
}

/* Repacks the rows x cols matrix at src (host, GGUF blocks, may be unaligned) into its
 * device layout at dst (host, hy_qk_bytes bytes). */
static inline void hy_qk_repack(void *dst, const void *src, bool q6k, int64_t rows, int64_t cols)
{
    const size_t nb = hy_qk_blocks(rows, cols);
    unsigned char *out = (unsigned char *)dst;
    const unsigned char *in = (const unsigned char *)src;
    if (!q6k) {
        memcpy(out, in, nb * HY_QK_Q4K_BYTES);
        return;
    }
    unsigned char *sc = out + hy_qk_q6k_scales_at(nb), *d = out + hy_qk_q6k_d_at(nb);
    for (size_t i = 0; i < nb; i++) {
        const unsigned char *b = in + i * HY_QK_Q6K_BYTES;
        memcpy(out + i * HY_QK_Q6K_QBYTES, b, HY_QK_Q6K_QBYTES);
        memcpy(sc + i * HY_QK_Q6K_NSC, b + HY_QK_Q6K_QBYTES, HY_QK_Q6K_NSC);
        memcpy(d + i * 2, b + HY_QK_Q6K_QBYTES + HY_QK_Q6K_NSC, 2);
    }
}

#ifdef __cplusplus
}
#endif

#endif
