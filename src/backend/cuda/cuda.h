/* cuda.h: the CUDA backend. hy_cuda_backend_create() makes a backend whose ops run on one
 * NVIDIA GPU, on one stream, in device memory: activations are float32, the KV pool bf16
 * (hy_cuda_opts.kv_f32: float32; kv_store and rope_norm_store round to nearest even,
 * attention widens exactly and computes in float32);
 * weights are copied to the device once at load by the weight_upload op (matrices as bf16,
 * f16/f32 checkpoints rounded to nearest even; one-row weights, i.e. norm vectors, as
 * float32, exact). Quantized matrices: Q8_0, Q4_0, Q4_G128, Q4_K and Q6_K stay in their
 * dtype (in the backend's own byte layout, qmatmul.h: w->data is then only for this
 * backend's ops). fp8 weights
 * handed to the weight_upload_fp8 op stay fp8 (codes, a float32 scale a row: fp8mm.h, which
 * says how matmul runs them and how precise it is); an F8_E4M3 hy_weight given to the plain
 * weight_upload becomes bf16. Block-scaled fp8 (HY_DTYPE_F8_B128, which weight_keeps
 * names) stays fp8 through weight_upload and weight_upload_n, copied from the host form
 * (the mapped file) without a host copy: fp8b.h has its layout, matmul and the grouped
 * expert ops' precision.
 * Matmul with those five types: up to 8 input rows dequantize in registers and sum in
 * float32 with float32 x; larger inputs dequantize a chunk of weight rows at a time into a
 * bf16 scratch and multiply by cuBLAS as bf16 weights (a chunked dequantize, not a fused
 * kernel); embed also takes the five types (GGUF token tables).
 * Precision: matmul of decode-sized inputs (up to 2 rows, or up to 8 for matrices of at
 * most 4096 x 4096; cols a multiple of 8) multiplies the
 * bf16 weights with the float32 input and sums in float32 (a weight-streaming kernel);
 * larger inputs are rounded to bf16 and multiplied by cuBLAS (bf16 x bf16, float32
 * accumulation, CUBLAS_COMPUTE_32F): relative error about 2^-9 per term, within 1e-2 of
 * the float32 reference normwise. A row's logits therefore depend slightly on whether it
 * ran in a decode-sized or a prefill-sized call (measured up to 6e-3 of max |logit| on
 * the tiny checkpoints, greedy ids unchanged). A float32 one-row weight uses SGEMM. Every other op computes in float32 (no
 * fast-math): attention (online softmax in float32), rmsnorm, rope, silu_mul within a few
 * float32 ulps of the reference; embed, kv_store, copy_rows and add are exact.
 * Index arrays the ops take in host memory (ids, positions, slots, block tables) are
 * staged through a pinned ring of HY_CUDA_STAGE_INTS int32 (default); one op may stage at
 * most that many (HY_ASSERT). Ops are asynchronous; download() waits for the stream.
 * CUDA or cuBLAS errors inside ops are bugs or a lost device: they abort with file:line
 * (HY_CUDA_CHECK). Creation failures return HY_E_UNSUPPORTED (no device) or HY_E_NOMEM.
 * Engine thread only, like every backend. Destroy with be->i->destroy(be). */
#ifndef HY_BACKEND_CUDA_H
#define HY_BACKEND_CUDA_H

#include "backend/backend.h"

#include <stdbool.h>
#include <stddef.h>

/* Largest head_dim the attention kernel takes (8 values per lane of a warp). */
#define HY_CUDA_MAX_HEAD_DIM 256
/* Default capacity of the index staging ring, in int32 (4 MiB pinned + 4 MiB device):
 * one attention call stages 3 per query row plus every sequence's block table. */
#define HY_CUDA_STAGE_INTS ((size_t)1 << 20)
/* Default bf16 activation scratch of matmul, in elements (64 MiB): larger inputs are
 * multiplied in chunks of whole rows. */
#define HY_CUDA_MATMUL_SCRATCH ((size_t)32 << 20)
/* Default bf16 scratch of quantized matmuls with more than 8 input rows, in elements
 * (32 MiB), allocated at the first quantized weight_upload: weights are dequantized into
 * it a chunk of rows at a time (at least 8 rows: >= 8 * cols elements). */
#define HY_CUDA_QMATMUL_SCRATCH ((size_t)16 << 20)

/* Sizes of the backend's fixed buffers; 0 takes the default. Tests shrink them to
 * exercise the ring's wrap-around and matmul's chunking. */
struct hy_cuda_opts {
    size_t stage_ints;     /* index staging ring, int32 entries (>= 1024) */
    size_t matmul_scratch; /* bf16 activation scratch, elements */
    /* fp8 weights, inputs of more than 8 rows: 0 (default) bf16 activations against
     * weights dequantized in chunks; 1 fp8 activations through cuBLASLt's fp8 GEMM where
     * the device (sm_89+) and shape allow (faster, less precise: fp8mm.h) */
    int fp8_act;
    /* 1: the KV pool in float32; 0 (default): bf16, half the bytes a token (kv_dtype op) */
    int kv_f32;
};

/* True when the CUDA runtime sees at least one device. */
bool hy_cuda_available(void);

hy_status hy_cuda_backend_create(struct hy_backend **out, int device, struct hy_err *err);
hy_status hy_cuda_backend_create_opts(struct hy_backend **out, int device,
                                      const struct hy_cuda_opts *opts, struct hy_err *err);
/* The device's name, e.g. "NVIDIA H200" (for logs). */
const char *hy_cuda_backend_device_name(const struct hy_backend *be);

#endif
