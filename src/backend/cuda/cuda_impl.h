/* cuda_impl.h: internals shared by the CUDA backend's files: the error checks and the
 * kernel launchers, one .cu file per op family (norm, rope, attention, elementwise,
 * matmul). Included by C (cuda.c) and CUDA C++; launchers have C linkage, take device
 * pointers only (index arrays already staged), enqueue on `st` and check the launch. */
#ifndef HY_BACKEND_CUDA_IMPL_H
#define HY_BACKEND_CUDA_IMPL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Prints "file:line: CUDA error: what (expr)" to stderr and aborts. */
void hy_cuda_fail(const char *file, int line, const char *expr, const char *what);

#define HY_CUDA_CHECK(call)                                                             \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            hy_cuda_fail(__FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
    } while (0)
#define HY_CUBLAS_CHECK(call)                                                           \
    do {                                                                                \
        cublasStatus_t s_ = (call);                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                \
            hy_cuda_fail(__FILE__, __LINE__, #call, cublasGetStatusString(s_));         \
    } while (0)
/* After every kernel launch: a bad configuration shows up here, not ops later. */
#define HY_CUDA_CHECK_LAUNCH() HY_CUDA_CHECK(cudaGetLastError())

/* elementwise.cu. bf16 is passed as its uint16_t bits. */
void hy_cuda_embed_bf16(cudaStream_t st, float *out, const uint16_t *table, int64_t cols,
                        const int32_t *ids, int T);
void hy_cuda_scatter_rows(cudaStream_t st, float *pool, const float *rows, const int32_t *slots,
                          int T, int64_t cols);
/* The same into a bf16 pool, each value rounded to nearest even. */
void hy_cuda_scatter_rows_bf16(cudaStream_t st, void *pool, const float *rows,
                               const int32_t *slots, int T, int64_t cols);
void hy_cuda_gather_rows(cudaStream_t st, float *dst, const float *src, const int32_t *idx, int n,
                         int64_t cols);
void hy_cuda_silu_mul(cudaStream_t st, float *out, const float *gate, const float *up, int64_t n);
void hy_cuda_add(cudaStream_t st, float *x, const float *y, int64_t n);
void hy_cuda_f32_to_bf16(cudaStream_t st, uint16_t *dst, const float *src, int64_t n);

/* topk.cu: the k best of each logits row into cand [rows, k] (value bits, id) pairs, value
 * descending then id ascending, NaN as -inf; k <= hy_cuda_topk_max_k(vocab); scratch of
 * hy_cuda_topk_scratch_bytes(vocab, rows, k) bytes. */
void hy_cuda_topk(cudaStream_t st, uint32_t *cand, const float *logits, int rows, int64_t vocab,
                  int k, void *scratch);
int hy_cuda_topk_max_k(int64_t vocab);
size_t hy_cuda_topk_scratch_bytes(int64_t vocab, int rows, int k);

/* Inputs of up to this many rows may multiply by GEMVs that read x in float32 (matmul.cu's
 * GEMV_MAX_T, qmmvq, fp8mm); larger ones always read a bf16 copy of x from the scratch. */
#define HY_CUDA_GEMV_ROWS 8

/* norm.cu: w is float32 [d]. What a norm may write beside out, where the shape allows: bf
 * (NULL, or bf16 [rows, d], 8-byte aligned) out rounded to bf16 (nearest even, as
 * hy_cuda_f32_to_bf16); xq (NULL, or hy_cuda_mmvq_x_bytes(rows, d) bytes, 16-byte aligned,
 * d % 32 == 0) out quantized to int8 as hy_cuda_mmvq_quantize would (the same bits). The
 * norms return which of them they wrote (HY_CUDA_NORM_BF | HY_CUDA_NORM_XQ). */
struct hy_cuda_norm_out {
    uint16_t *bf;
    void *xq;
};
#define HY_CUDA_NORM_BF 1
#define HY_CUDA_NORM_XQ 2
int hy_cuda_rmsnorm(cudaStream_t st, float *out, struct hy_cuda_norm_out o, const float *x,
                    const float *w, int64_t rows, int64_t d, float eps);
/* x += y, then out = rmsnorm(x) * w; out may equal y; o as above. */
int hy_cuda_add_rmsnorm(cudaStream_t st, float *out, struct hy_cuda_norm_out o, float *x,
                        const float *y, const float *w, int64_t rows, int64_t d, float eps);

/* rope.cu. rope_norm_store: backend.h's op of that name (qn, kn: float32 [hd] or NULL;
 * pos and slots staged; the pools' elements bf16 when bf16, else float; norm_first: the
 * norm before RoPE). */
void hy_cuda_rope(cudaStream_t st, float *x, const int32_t *pos, int T, int n_heads, int hd,
                  const float *inv_freq);
void hy_cuda_rope_norm_store(cudaStream_t st, float *q, const float *k, const float *v,
                             const int32_t *pos, const int32_t *slots, int T, int n_head,
                             int n_kv, int hd, const float *inv_freq, const float *qn,
                             const float *kn, float eps, bool norm_first, void *k_pool,
                             void *v_pool, bool bf16);
/* The same reading q, k, v from rows of q_ld, k_ld, v_ld floats (a fused product's output:
 * q, k, v then point into its rows) and writing q [T, n_head*hd] to q (not the source);
 * kc, vc (or NULL): the raw k and v rows also go there ([T, n_kv*hd] each). */
struct hy_cuda_qkv_src {
    const float *q, *k, *v;
    int64_t q_ld, k_ld, v_ld;
    float *kc, *vc;
};
void hy_cuda_rope_norm_store_src(cudaStream_t st, float *q, const struct hy_cuda_qkv_src *a,
                                 const int32_t *pos, const int32_t *slots, int T, int n_head,
                                 int n_kv, int hd, const float *inv_freq, const float *qn,
                                 const float *kn, float eps, bool norm_first, void *k_pool,
                                 void *v_pool, bool bf16);

/* attention.cu: `tiles` tiles of query rows; info[4*t .. 4*t+3] = (first row of q/out, rows
 * (consecutive rows of one sequence; 1 unless `rows`), keys its first row attends (row i
 * attends one more per i), offset of its block table in `blocks`). With !rows, a row of
 * n keys is split over min(smax, ceil(n/64)) shares merged through part (tiles * n_head *
 * smax * (hd + 2) floats); smax from hy_cuda_attention_smax (shares enough to give each
 * of the n_sm SMs about four blocks, within part_floats). rows_per_tile: how many
 * rows a prefill tile should take. K/V pool elements: bf16 when bf16, else float. */
void hy_cuda_attention(cudaStream_t st, float *out, const float *q, const void *k_pool,
                       const void *v_pool, bool bf16, int bs, const int32_t *info, const int32_t *blocks,
                       int tiles, bool rows, int smax, float *part, int n_head, int n_kv, int hd,
                       float scale);
int hy_cuda_attention_rows_per_tile(int n_head, int n_kv, int hd);
/* attention.cu: merges the split-K shares (part) of the tiles' rows, as hy_cuda_attention
 * does after its kernel. */
void hy_cuda_attention_merge(cudaStream_t st, float *out, const float *part,
                             const int32_t *info, int tiles, int n_head, int smax, int hd);
/* attention_dec.cu: hy_cuda_attention for tiles of one row each (decode rows; !rows), with
 * the same split-K shares and part layout, where hy_cuda_attention_dec_ok (head size 64 or
 * 128, 1, 2, 4 or 8 query heads a KV head): a block takes the whole query group. */
bool hy_cuda_attention_dec_ok(int n_head, int n_kv, int hd);
void hy_cuda_attention_dec(cudaStream_t st, float *out, const float *q, const void *k_pool,
                           const void *v_pool, bool bf16, int bs, const int32_t *info,
                           const int32_t *blocks, int tiles, int smax, float *part, int n_head,
                           int n_kv, int hd, float scale);
/* attention_tc.cu: the same for prefill tiles of up to hy_cuda_attention_tc_rows() rows
 * (info as above, every tile's rows consecutive rows of one sequence), on the tensor cores
 * (bf16 operands, float32 softmax and sums), for head sizes where hy_cuda_attention_tc_ok;
 * hy_cuda_attention_tc_setup() once per device before the first call (shared memory). */
void hy_cuda_attention_tc(cudaStream_t st, float *out, const float *q, const void *k_pool,
                          const void *v_pool, bool bf16, int bs, const int32_t *info, const int32_t *blocks,
                          int tiles, int n_head, int n_kv, int hd, float scale);
bool hy_cuda_attention_tc_ok(int hd);
int hy_cuda_attention_tc_rows(void);
cudaError_t hy_cuda_attention_tc_setup(void);
int hy_cuda_attention_smax(int tiles, int n_head, int n_kv, int hd, int n_sm,
                           size_t part_floats);

/* The device scratch of one matmul call (the backend's; capacities in elements): xbf holds
 * x rounded to bf16, wbf a chunk of weight rows dequantized to bf16, cbuf float32 outputs
 * of a chunk whose row count is padded to a multiple of 8 (or the tensor-core kernel's
 * K-split parts). Each launcher uses what its path needs; the rest may be NULL / 0. */
struct hy_cuda_mm_scratch {
    uint16_t *xbf;
    size_t xbf_cap;
    uint16_t *wbf;
    size_t wbf_cap;
    float *cbuf;
    size_t cbuf_cap;
};

/* matmul.cu: out[T, rows] = x[T, cols] · W[rows, cols]ᵀ with W bf16 on the device; x is
 * rounded to bf16 into s->xbf in chunks of whole rows, unless x_ready (xbf holds all of x
 * already); s->cbuf for the padded rows. w_padded: W's allocation has zero rows up to a
 * multiple of 8. Returns true when xbf holds all of x afterwards. */
bool hy_cuda_matmul_bf16(cudaStream_t st, cublasHandle_t blas, float *out, const float *x,
                         const uint16_t *w, int64_t rows, int64_t cols, int T, bool w_padded,
                         bool x_ready, const struct hy_cuda_mm_scratch *s);

/* matmul.cu: the products of x[T, cols] with n (2..4) bf16 weights lying one after another
 * on the device (w: the first; rows[i] rows each, R = Σ rows[i]) as one GEMM of R rows per
 * chunk of x's rows (as many as s->cbuf holds at R floats a row) into s->cbuf, then one
 * kernel that splits the chunk into outs[i] ([T, rows[i]]), or with glu (n == 2, equal rows)
 * writes outs[0] = silu(first) * second (as silu_mul). Enqueues nothing and returns false
 * when it does not apply: T in the decode GEMV's range (separate GEMVs are faster there and
 * keep those rows' results as they were), or cbuf smaller than a row. Else returns true,
 * with *xbf_holds_x as hy_cuda_matmul_bf16's result (x_ready likewise), or, for glu in one
 * chunk whose output fits s->xbf, *xbf_holds_out: xbf then holds outs[0] rounded to bf16
 * (as hy_cuda_matmul_bf16 would round it), not x. */
bool hy_cuda_matmul_bf16_fused(cudaStream_t st, cublasHandle_t blas, float *const *outs,
                               const float *x, const uint16_t *w, const int64_t *rows, int n,
                               int64_t cols, int T, bool glu, bool x_ready, bool *xbf_holds_x,
                               bool *xbf_holds_out, const struct hy_cuda_mm_scratch *s);

/* Enqueues rows r0 .. r0+nr-1 of the weight w (the launcher's own description of it),
 * dequantized to bf16, into dst [nr_pad, cols]; rows nr .. nr_pad-1 zero. */
typedef void (*hy_cuda_dequant_fn)(cudaStream_t st, uint16_t *dst, const void *w, int64_t r0,
                                   int64_t nr, int64_t nr_pad);
/* dequant_mm.cu: out[T, rows] = x[T, cols] · Wᵀ for a weight that `dequant` reads: x
 * rounded to bf16 into s->xbf in chunks of whole rows (unless x_ready: xbf holds all of x),
 * W dequantized into s->wbf a chunk of rows (a multiple of 8) at a time, each pair
 * multiplied by cuBLAS (bf16 x bf16, float32 accumulation); when rows % 8 != 0 the chunks'
 * outputs go through s->cbuf. Fails (hy_cuda_fail, message `what`) when the scratch cannot
 * hold a row of x and 8 rows of W. Returns true when xbf holds all of x afterwards. */
bool hy_cuda_dequant_mm(cudaStream_t st, cublasHandle_t blas, float *out, const float *x,
                        int64_t rows, int64_t cols, int T, bool x_ready,
                        const struct hy_cuda_mm_scratch *s, hy_cuda_dequant_fn dequant,
                        const void *w, const char *what);
/* bimm.cu: the batch-invariant matmul (the rule in bimm.cu): out[T, rows] = x · Wᵀ, W bf16,
 * x split into bf16 high and low parts, tensor-core products in float32, a token's result
 * the same bits whatever else the call holds. xs: scratch of xs_bytes for the split x
 * (ceil(cols/32) x 128 bytes a token; at least 64 tokens' worth, or T's; more tokens go in
 * chunks). part: float32 scratch of part_cap >= hy_cuda_bimm_part_floats(rows, cols)
 * (S x 64 x rows, at most HY_CUDA_BIMM_PART_FLOATS for any shape) for the partial sums of
 * calls with T <= 64. */
#define HY_CUDA_BIMM_PART_FLOATS ((size_t)64 * 2048 * 16)
void hy_cuda_bimm(cudaStream_t st, float *out, const float *x, const uint16_t *w, int64_t rows,
                  int64_t cols, int T, void *xs, size_t xs_bytes, float *part, size_t part_cap);
int hy_cuda_bimm_segments(int64_t rows, int64_t cols);
size_t hy_cuda_bimm_part_floats(int64_t rows, int64_t cols);

/* Same with a float32 W (one-row weights), no rounding. */
void hy_cuda_matmul_f32(cudaStream_t st, cublasHandle_t blas, float *out, const float *x,
                        const float *w, int64_t rows, int64_t cols, int T);

#ifdef __cplusplus
}
#endif

#endif
