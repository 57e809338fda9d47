/* cuda.c: the CUDA backend object (cuda.h has the contract): device selection, the stream,
 * the cuBLAS handle and its workspace, memory, weight upload, and the op table, which
 * stages index arrays (stage.c) and calls the launchers of the .cu files. */
#include "backend/cuda/cuda_ctx.h"
#include "backend/cuda/fp8b.h"
#include "backend/cuda/fp8mm.h"
#include "backend/cuda/moe_ops.h"
#include "backend/cuda/qmatmul.h"
#include "backend/cuda/qmmvq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hy_cuda_fail(const char *file, int line, const char *expr, const char *what)
{
    fprintf(stderr, "%s:%d: CUDA error: %s (%s)\n", file, line, what, expr);
    abort();
}

static struct cuda_ctx *ctx_of(struct hy_backend *be)
{
    return hy_cuda_ctx(be);
}

/* ctx_of for every op but matmul: the op may write where a matmul input lay. */
static struct cuda_ctx *ctx_op(struct hy_backend *be)
{
    struct cuda_ctx *c = ctx_of(be);
    c->xbf_x = NULL;
    c->xq_x = NULL;
    return c;
}


static void *cuda_alloc(struct hy_backend *be, size_t bytes)
{
    ctx_op(be);
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory is reported as NULL, not left pending */
        return NULL;
    }
    return p;
}

static void cuda_free(struct hy_backend *be, void *p)
{
    struct cuda_ctx *c = ctx_op(be);
    for (int i = 0; i < c->n_padded; i++) /* the address may come back unpadded */
        if (c->padded[i] == p)
            c->padded[i--] = c->padded[--c->n_padded];
    if (p && !hy_cuda_fused_free(c, p))
        HY_CUDA_CHECK(cudaFree(p));
}

static void cuda_upload(struct hy_backend *be, void *dst, const void *src, size_t bytes)
{
    struct cuda_ctx *c = ctx_op(be);
    HY_ASSERT(c->mode == STEP_NONE);
    HY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream));
    HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
}

static void cuda_download(struct hy_backend *be, void *dst, const void *src, size_t bytes)
{
    struct cuda_ctx *c = ctx_op(be);
    HY_ASSERT(c->mode == STEP_NONE);
    HY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
}

/* qmatmul: the qmatmul.h code of a weight dtype kept quantized on the device, or -1. */
static int qtype_of(enum hy_dtype t)
{
    switch (t) {
    case HY_DTYPE_Q8_0: return HY_CUDA_Q8_0;
    case HY_DTYPE_Q4_0: return HY_CUDA_Q4_0;
    case HY_DTYPE_Q4_G128: return HY_CUDA_Q4_G128;
    case HY_DTYPE_Q4_K: return HY_CUDA_Q4_K;
    case HY_DTYPE_Q6_K: return HY_CUDA_Q6_K;
    default: return -1;
    }
}

/* The dequantize scratch of quantized and fp8 matmuls and the int8 activations of qmmvq,
 * allocated by the first such weight. */
static hy_status wbf_alloc(struct cuda_ctx *c, struct hy_err *err)
{
    if (!c->wbf && cudaMalloc((void **)&c->wbf, c->wbf_cap * sizeof(uint16_t)) != cudaSuccess) {
        (void)cudaGetLastError();
        c->wbf = NULL;
        return hy_err_set(err, HY_E_NOMEM, "out of device memory for the quantized "
                          "matmul scratch (%zu MiB)", c->wbf_cap * 2 >> 20);
    }
    const size_t xq = hy_cuda_mmvq_x_bytes(HY_CUDA_MMVQ_MAX_T, HY_CUDA_MMVQ_MAX_COLS);
    if (!c->xq && cudaMalloc(&c->xq, xq) != cudaSuccess) {
        (void)cudaGetLastError();
        c->xq = NULL;
        return hy_err_set(err, HY_E_NOMEM, "out of device memory for the quantized "
                          "matmul activations (%zu KiB)", xq >> 10);
    }
    return HY_OK;
}

/* qmatmul: a Q8_0 / Q4_0 / Q4_G128 / Q4_K / Q6_K matrix is kept in its dtype, repacked on
 * the host into its device layout (qmatmul.h) and copied; the first one allocates the dequantize
 * scratch wbf. */
static hy_status upload_quantized(struct hy_backend *be, struct cuda_ctx *c, struct hy_weight *w,
                                  int qt, struct hy_err *err)
{
    HY_ASSERT(hy_dtype_size(w->dtype) == (size_t)hy_cuda_q_block_bytes(qt) &&
              hy_dtype_block_elems(w->dtype) == hy_cuda_q_block(qt) &&
              w->cols % hy_cuda_q_block(qt) == 0);
    if (wbf_alloc(c, err))
        return HY_E_NOMEM;
    const size_t bytes = hy_cuda_q_bytes(qt, w->rows, w->cols);
    void *host = malloc(bytes), *dev = host ? cuda_alloc(be, bytes) : NULL;
    if (!dev) {
        free(host);
        return hy_err_set(err, HY_E_NOMEM, "out of %s memory for a %lldx%lld %s weight",
                          host ? "device" : "host", (long long)w->rows, (long long)w->cols,
                          hy_dtype_name(w->dtype));
    }
    hy_cuda_q_repack(host, w->data, qt, w->rows, w->cols);
    HY_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, c->stream));
    HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    free(host);
    w->data = dev;
    return HY_OK;
}

/* fp8mm: an fp8 matrix stays fp8 (codes, float32 row scales, the input scale: the layout of
 * fp8mm.h), packed on the host and copied; the first one makes the fp8 matmul state. */
static hy_status cuda_weight_upload_fp8(struct hy_backend *be, struct hy_weight *w,
                                        const uint8_t *codes, const float *scale,
                                        int64_t n_scale, float input_scale, struct hy_err *err)
{
    struct cuda_ctx *c = ctx_of(be);
    HY_ASSERT(w->rows >= 1 && w->cols >= 1 && (n_scale == 1 || n_scale == w->rows));
    if (wbf_alloc(c, err))
        return HY_E_NOMEM;
    if (!c->fp8 && !(c->fp8 = hy_cuda_fp8_create(c->device, c->blas_ws, CUBLAS_WORKSPACE)))
        return hy_err_set(err, HY_E_NOMEM, "cuda: cannot set up the fp8 matmul (cuBLASLt)");
    const size_t bytes = hy_cuda_fp8_bytes(w->rows, w->cols);
    void *host = malloc(bytes), *dev = host ? cuda_alloc(be, bytes) : NULL;
    if (!dev) {
        free(host);
        return hy_err_set(err, HY_E_NOMEM, "out of %s memory for a %lldx%lld fp8 weight",
                          host ? "device" : "host", (long long)w->rows, (long long)w->cols);
    }
    hy_cuda_fp8_pack(host, codes, scale, n_scale, input_scale, w->rows, w->cols);
    HY_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, c->stream));
    HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    free(host);
    w->data = dev;
    w->dtype = HY_DTYPE_F8_E4M3;
    return HY_OK;
}

/* fp8b: a block-scaled fp8 matrix stays fp8 (codes and block scales: the layout of fp8b.h),
 * copied from where the loader left it (the mapped file; no host copy). */
static hy_status upload_fp8b(struct hy_backend *be, struct cuda_ctx *c, struct hy_weight *w,
                             struct hy_err *err)
{
    const struct hy_f8b_src *src = w->data;
    HY_ASSERT(w->rows >= 1 && w->cols >= HY_F8_B128_COLS && w->cols % HY_F8_B128_COLS == 0 &&
              src && src->codes && src->scale);
    if (wbf_alloc(c, err)) /* the dequantize scratch of T > 8 */
        return HY_E_NOMEM;
    void *dev = cuda_alloc(be, hy_cuda_fp8b_bytes(w->rows, w->cols));
    if (!dev)
        return hy_err_set(err, HY_E_NOMEM, "out of device memory for a %lldx%lld fp8 weight",
                          (long long)w->rows, (long long)w->cols);
    hy_cuda_fp8b_upload(c->stream, dev, src->codes, src->scale, w->rows, w->cols);
    w->data = dev;
    return HY_OK;
}

static bool cuda_weight_keeps(enum hy_dtype dt)
{
    return dt == HY_DTYPE_F8_B128;
}

/* Matrices become bf16 (bf16 data is copied as it is; f16/f32 and the block types
 * other than those below rounded to nearest even on the host, a chunk at a time); vectors
 * (rows == 1: norm weights) become float32, exact. Q8_0, Q4_0, Q4_G128, Q4_K and Q6_K
 * matrices stay quantized (upload_quantized). */
static hy_status cuda_weight_upload(struct hy_backend *be, struct hy_weight *w,
                                    struct hy_err *err)
{
    struct cuda_ctx *c = ctx_of(be);
    if (w->rows > 1 && qtype_of(w->dtype) >= 0) /* qmatmul */
        return upload_quantized(be, c, w, qtype_of(w->dtype), err);
    if (w->dtype == HY_DTYPE_F8_B128)
        return upload_fp8b(be, c, w, err);
    const int64_t n = w->rows * w->cols;
    const enum hy_dtype to = w->rows == 1 ? HY_DTYPE_F32 : HY_DTYPE_BF16;
    const size_t esz = hy_dtype_size(to);
    /* a matrix with a row count off a multiple of 8 (the vocabulary) gets zero rows up to
     * one, so cuBLAS can take its aligned kernels (matmul.cu) */
    const bool pad = w->rows > 1 && w->rows % 8 != 0 && c->n_padded < MAX_PADDED;
    const int64_t alloc_rows = pad ? (w->rows + 7) & ~(int64_t)7 : w->rows;
    void *dev = cuda_alloc(be, (size_t)(alloc_rows * w->cols) * esz);
    if (!dev)
        return hy_err_set(err, HY_E_NOMEM, "out of device memory for a %lldx%lld weight",
                          (long long)w->rows, (long long)w->cols);
    if (pad) {
        HY_CUDA_CHECK(cudaMemsetAsync((char *)dev + (size_t)n * esz, 0,
                                      (size_t)((alloc_rows - w->rows) * w->cols) * esz,
                                      c->stream));
        c->padded[c->n_padded++] = dev;
    }
    /* Copies go on the backend's stream and are waited for: a plain cudaMemcpy from
     * pageable memory may return before its DMA lands, and it runs on the legacy stream,
     * which our non-blocking stream does not wait for (seen: a matmul read a half-copied
     * weight). */
    if (w->dtype == to) {
        HY_CUDA_CHECK(cudaMemcpyAsync(dev, w->data, (size_t)n * esz, cudaMemcpyHostToDevice,
                                      c->stream));
        HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    } else {
        size_t chunk = (size_t)n < UPLOAD_CHUNK ? (size_t)n : UPLOAD_CHUNK;
        float *f = malloc(chunk * sizeof *f);
        void *t = malloc(chunk * esz);
        if (!f || !t) {
            free(f);
            free(t);
            cuda_free(be, dev);
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        }
        const unsigned char *src = w->data;
        /* block types: hy_dtype_size is a block's bytes; chunk is a multiple of a block */
        const size_t isz = hy_dtype_size(w->dtype), ibe = (size_t)hy_dtype_block_elems(w->dtype);
        HY_ASSERT(chunk % ibe == 0);
        for (size_t i = 0; i < (size_t)n; i += chunk) {
            size_t k = (size_t)n - i < chunk ? (size_t)n - i : chunk;
            hy_dtype_to_f32(f, src + i / ibe * isz, w->dtype, k);
            hy_dtype_from_f32(t, f, to, k);
            HY_CUDA_CHECK(cudaMemcpyAsync((char *)dev + i * esz, t, k * esz,
                                          cudaMemcpyHostToDevice, c->stream));
            HY_CUDA_CHECK(cudaStreamSynchronize(c->stream)); /* before t is refilled */
        }
        free(f);
        free(t);
    }
    w->data = dev;
    w->dtype = to;
    return HY_OK;
}

static void cuda_embed(struct hy_backend *be, float *out, const struct hy_weight *table,
                       const int32_t *ids, int T)
{
    struct cuda_ctx *c = ctx_op(be);
    const int qt = table->rows > 1 ? qtype_of(table->dtype) : -1; /* qmatmul: GGUF tables */
    HY_ASSERT((table->dtype == HY_DTYPE_BF16 || table->dtype == HY_DTYPE_F32 || qt >= 0) &&
              T >= 0);
    for (int t = 0; t < T; t++)
        HY_ASSERT(ids[t] >= 0 && ids[t] < table->rows);
    const int32_t *d_ids = hy_cuda_stage(c, ids, (size_t)T);
    if (hy_cuda_replaying(c))
        return;
    if (qt >= 0)
        hy_cuda_embed_q(c->stream, out, table->data, qt, table->rows, table->cols, d_ids, T);
    else if (table->dtype == HY_DTYPE_F32) /* a one-row table (weight_upload keeps it float32) */
        hy_cuda_gather_rows(c->stream, out, table->data, d_ids, T, table->cols);
    else
        hy_cuda_embed_bf16(c->stream, out, table->data, table->cols, d_ids, T);
}

static void cuda_matmul(struct hy_backend *be, float *out, const float *x,
                        const struct hy_weight *w, int T)
{
    struct cuda_ctx *c = ctx_of(be);
    HY_ASSERT(w->rows <= INT32_MAX && w->cols <= INT32_MAX);
    const int qt = w->rows > 1 ? qtype_of(w->dtype) : -1;
    const bool f8 = w->dtype == HY_DTYPE_F8_E4M3; /* fp8mm (weight_upload_fp8) */
    const bool f8b = w->dtype == HY_DTYPE_F8_B128; /* fp8b.h */
    HY_ASSERT(w->dtype == HY_DTYPE_BF16 || w->dtype == HY_DTYPE_F32 || qt >= 0 || (f8 && c->fp8) ||
              f8b);
    if (T <= 0)
        return;
    if (hy_cuda_replaying(c)) { /* the recording made the same choices */
        c->xbf_x = NULL;
        c->xq_x = NULL;
        return;
    }
    const struct hy_cuda_mm_scratch s = {c->xbf, c->xbf_cap, c->wbf, c->wbf_cap, c->cbuf,
                                         c->cbuf_cap};
    if (f8 || f8b) { /* fp8mm, fp8b; batch-invariant: GEMVs of <= 8 rows (sums alone) */
        HY_ASSERT(!c->invariant || (w->cols % 16 == 0 && ((uintptr_t)x & 15) == 0));
        bool ready = !c->invariant && c->xbf_x == x && c->xbf_T == T && c->xbf_cols == w->cols;
        const int step = c->invariant ? 8 : T;
        for (int t0 = 0; t0 < T; t0 += step) {
            float *o = out + (int64_t)t0 * w->rows;
            const float *xt = x + (int64_t)t0 * w->cols;
            const int n = T - t0 < step ? T - t0 : step;
            ready = (f8b ? hy_cuda_matmul_fp8b(c->stream, c->blas, o, xt, w->data, w->rows,
                                               w->cols, n, ready, &s)
                         : hy_cuda_matmul_fp8(c->fp8, c->stream, c->blas, o, xt, w->data,
                                              w->rows, w->cols, n,
                                              (enum hy_cuda_fp8_mode)c->fp8_mode, ready, &s)) &&
                    !c->invariant;
        }
        c->xbf_x = ready ? x : NULL; /* else xbf may hold a chunk of x, or x's fp8 codes */
        c->xbf_T = T, c->xbf_cols = w->cols;
        return; /* out never overlaps x (the op's contract) */
    }
    if (c->invariant && w->dtype == HY_DTYPE_BF16) {
        hy_cuda_bimm(c->stream, out, x, w->data, w->rows, w->cols, T, c->xbf,
                     c->xbf_cap * sizeof(uint16_t), c->bi_part, HY_CUDA_BIMM_PART_FLOATS);
        c->xbf_x = NULL;
        return;
    }
    if (c->invariant && qt >= 0) { /* GEMVs: a row's sums do not depend on the others */
        HY_ASSERT(w->cols % 4 == 0 && ((uintptr_t)x & 15) == 0);
        for (int t0 = 0; t0 < T; t0 += 8)
            hy_cuda_matmul_q(c->stream, c->blas, out + (int64_t)t0 * w->rows,
                             x + (int64_t)t0 * w->cols, w->data, qt, w->rows, w->cols,
                             T - t0 < 8 ? T - t0 : 8, false, &s);
        c->xbf_x = NULL;
        return;
    }
    if (qt >= 0 && c->xq && hy_cuda_mmvq_fits(qt, w->rows, w->cols, T, w->data)) {
        if (!(c->xq_x == x && c->xq_T == T && c->xq_cols == w->cols)) {
            hy_cuda_mmvq_quantize(c->stream, c->xq, x, T, w->cols);
            c->xq_x = x, c->xq_T = T, c->xq_cols = w->cols;
        }
        hy_cuda_mmvq(c->stream, out, c->xq, w->data, qt, w->rows, w->cols, T, 0);
    } else if (qt >= 0) { /* qmatmul */
        bool ready = c->xbf_x == x && c->xbf_T == T && c->xbf_cols == w->cols;
        if (hy_cuda_matmul_q(c->stream, c->blas, out, x, w->data, qt, w->rows, w->cols, T, ready,
                             &s))
            c->xbf_x = x, c->xbf_T = T, c->xbf_cols = w->cols;
        else
            c->xbf_x = NULL; /* xbf may hold a chunk of x only */
    } else if (w->dtype == HY_DTYPE_F32) {
        hy_cuda_matmul_f32(c->stream, c->blas, out, x, w->data, w->rows, w->cols, T);
    } else {
        bool padded = false;
        for (int i = 0; i < c->n_padded; i++)
            padded |= c->padded[i] == w->data;
        bool ready = c->xbf_x == x && c->xbf_T == T && c->xbf_cols == w->cols;
        if (hy_cuda_matmul_bf16(c->stream, c->blas, out, x, w->data, w->rows, w->cols, T, padded,
                                ready, &s))
            c->xbf_x = x, c->xbf_T = T, c->xbf_cols = w->cols;
        else
            c->xbf_x = NULL; /* chunks of x may have gone through xbf */
    }
    if (c->xbf_x && out < c->xbf_x + (int64_t)c->xbf_T * c->xbf_cols &&
        c->xbf_x < out + (int64_t)T * w->rows)
        c->xbf_x = NULL; /* this product overwrote the input xbf holds */
    if (c->xq_x && out < c->xq_x + (int64_t)c->xq_T * c->xq_cols &&
        c->xq_x < out + (int64_t)T * w->rows)
        c->xq_x = NULL; /* likewise for xq */
}

static void cuda_rope(struct hy_backend *be, float *x, const int32_t *pos, int T, int n_heads,
                      int hd, const float *inv_freq)
{
    struct cuda_ctx *c = ctx_op(be);
    HY_ASSERT(hd % 2 == 0 && T >= 0);
    const int32_t *d_pos = hy_cuda_stage(c, pos, (size_t)T);
    if (!hy_cuda_replaying(c))
        hy_cuda_rope(c->stream, x, d_pos, T, n_heads, hd, inv_freq);
}

/* New tokens of a sequence from which its rows go to the tensor-core kernel
 * (attention_tc.cu; bf16 operands) rather than the float32 one: prefill chunks. */
#define ATT_TC_MIN 16

/* Stages, per tile of query rows (one decode row, or up to rows_per_tile prefill rows of
 * one sequence), (first row, rows, keys its first row sees, offset of its block table),
 * then every sequence's block table (the blocks covering positions 0 .. pos0+n_tokens-1).
 * Inside a step every table takes step_max_blocks entries, so the staged size depends on
 * the row count alone, and the staging is done once per step (every layer passes the same
 * seqs). */
static void cuda_attention(struct hy_backend *be, float *out, const float *q,
                           const void *k_pool, const void *v_pool, int bs,
                           const struct hy_attn_seq *seqs, int n_seqs, int n_head, int n_kv,
                           int hd, float scale)
{
    struct cuda_ctx *c = ctx_op(be);
    HY_ASSERT(n_kv > 0 && n_head % n_kv == 0 && bs > 0);
    HY_ASSERT(hd > 0 && hd <= HY_CUDA_MAX_HEAD_DIM);
    const bool in_step = c->mode != STEP_NONE;
    bool rows = false;
    for (int i = 0; i < n_seqs; i++) {
        HY_ASSERT(seqs[i].pos0 >= 0 && seqs[i].n_tokens >= 0 && seqs[i].row >= 0);
        rows |= seqs[i].n_tokens > 1;
    }
    rows = rows && !c->invariant; /* invariant: a tile a row, no split-K (below) */
    /* sequences of at least ATT_TC_MIN new tokens go to the tensor-core kernel */
    const bool tc_ok = !c->invariant && hy_cuda_attention_tc_ok(hd);
    if (tc_ok) { /* rows: a sequence left to the other kernel has several */
        rows = false;
        for (int i = 0; i < n_seqs; i++)
            rows |= seqs[i].n_tokens > 1 && seqs[i].n_tokens < ATT_TC_MIN;
    }
    const int rt = rows ? hy_cuda_attention_rows_per_tile(n_head, n_kv, hd) : 1;
    const int trt = hy_cuda_attention_tc_rows();
    size_t tiles = 0, tct = 0, nb = 0;
    for (int i = 0; i < n_seqs; i++) {
        int n = (seqs[i].pos0 + seqs[i].n_tokens + bs - 1) / bs;
        HY_ASSERT(!in_step || n <= c->step_max_blocks);
        if (tc_ok && seqs[i].n_tokens >= ATT_TC_MIN)
            tct += (size_t)((seqs[i].n_tokens + trt - 1) / trt);
        else
            tiles += (size_t)((seqs[i].n_tokens + rt - 1) / rt);
        nb += in_step ? (size_t)c->step_max_blocks : (size_t)n;
    }
    if (tiles + tct == 0)
        return;
    const size_t need = 4 * (tiles + tct) + nb;
    const int32_t *dev =
        in_step ? hy_cuda_stage_find(c, (const int32_t *)(const void *)seqs, need) : NULL;
    if (!dev) {
        int32_t *h = hy_cuda_stage_reserve(c, need, &dev);
        int32_t *bt = h + 4 * (tiles + tct), off = 0;
        size_t t = 0, u = tiles; /* tensor-core tiles after the others */
        for (int i = 0; i < n_seqs; i++) {
            const struct hy_attn_seq *s = &seqs[i];
            int n = (s->pos0 + s->n_tokens + bs - 1) / bs;
            const bool tc = tc_ok && s->n_tokens >= ATT_TC_MIN;
            const int step = tc ? trt : rt;
            memcpy(bt + off, s->blocks, (size_t)n * sizeof *bt);
            for (int r = 0; r < s->n_tokens; r += step) {
                size_t *k = tc ? &u : &t;
                h[4 * *k] = s->row + r;
                h[4 * *k + 1] = s->n_tokens - r < step ? s->n_tokens - r : step;
                h[4 * *k + 2] = s->pos0 + r + 1;
                h[4 * *k + 3] = off;
                (*k)++;
            }
            off += in_step ? c->step_max_blocks : n;
        }
        const int32_t *again = in_step ? NULL : hy_cuda_stage_find(c, h, need);
        if (again) { /* every layer after the first */
            c->stage_head = (size_t)(h - c->stage_h); /* give the slot just reserved back */
            dev = again;
        } else {
            hy_cuda_stage_send(c, h, need, seqs);
        }
    }
    if (hy_cuda_replaying(c))
        return;
    int smax = rows || c->invariant || tiles == 0
                   ? 1
                   : hy_cuda_attention_smax((int)tiles, n_head, n_kv, hd, c->n_sm,
                                             c->att_part_floats);
    const int32_t *tables = dev + 4 * (tiles + tct);
    if (!rows && !c->invariant && hy_cuda_attention_dec_ok(n_head, n_kv, hd))
        hy_cuda_attention_dec(c->stream, out, q, k_pool, v_pool, c->kv_bf16, bs, dev, tables,
                              (int)tiles, smax, c->att_part, n_head, n_kv, hd, scale);
    else
        hy_cuda_attention(c->stream, out, q, k_pool, v_pool, c->kv_bf16, bs, dev, tables,
                          (int)tiles, rows, smax, c->att_part, n_head, n_kv, hd, scale);
    hy_cuda_attention_tc(c->stream, out, q, k_pool, v_pool, c->kv_bf16, bs, dev + 4 * tiles,
                         tables, (int)tct, n_head, n_kv, hd, scale);
}

static void cuda_rope_norm_store(struct hy_backend *be, float *q, const float *k, const float *v,
                                 const int32_t *pos, const int32_t *slots, int T, int n_head,
                                 int n_kv, int hd, const float *inv_freq,
                                 const struct hy_weight *qn, const struct hy_weight *kn,
                                 float eps, bool norm_first, void *k_pool, void *v_pool)
{
    struct cuda_ctx *c = be->ctx; /* not hy_cuda_ctx: a q/k/v product left unsplit is ours */
    HY_CUDA_CHECK(cudaSetDevice(c->device));
    struct hy_cuda_qkv_src a;
    const bool src = hy_cuda_split_take(c, &a, q, k, v, T, (int64_t)n_head * hd,
                                        (int64_t)n_kv * hd);
    ctx_op(be);
    HY_ASSERT(hd % 2 == 0 && hd / 2 <= 4 * 32 && T >= 0 && !qn == !kn);
    HY_ASSERT(!qn || (qn->dtype == HY_DTYPE_F32 && kn->dtype == HY_DTYPE_F32 &&
                      qn->rows * qn->cols == hd && kn->rows * kn->cols == hd));
    const int32_t *d_pos = hy_cuda_stage(c, pos, (size_t)T);
    const int32_t *d_slots = hy_cuda_stage(c, slots, (size_t)T);
    if (hy_cuda_replaying(c))
        return;
    if (src)
        hy_cuda_rope_norm_store_src(c->stream, q, &a, d_pos, d_slots, T, n_head, n_kv, hd,
                                    inv_freq, qn ? qn->data : NULL, kn ? kn->data : NULL, eps,
                                    norm_first, k_pool, v_pool, c->kv_bf16);
    else
        hy_cuda_rope_norm_store(c->stream, q, k, v, d_pos, d_slots, T, n_head, n_kv, hd,
                                inv_freq, qn ? qn->data : NULL, kn ? kn->data : NULL, eps,
                                norm_first, k_pool, v_pool, c->kv_bf16);
}

static void cuda_kv_store(struct hy_backend *be, void *pool, const float *rows,
                          const int32_t *slots, int T, int64_t cols)
{
    struct cuda_ctx *c = ctx_op(be);
    HY_ASSERT(T >= 0);
    const int32_t *d_slots = hy_cuda_stage(c, slots, (size_t)T);
    if (hy_cuda_replaying(c))
        return;
    if (c->kv_bf16)
        hy_cuda_scatter_rows_bf16(c->stream, pool, rows, d_slots, T, cols);
    else
        hy_cuda_scatter_rows(c->stream, pool, rows, d_slots, T, cols);
}

static enum hy_dtype cuda_kv_dtype(const struct hy_backend *be)
{
    return ((const struct cuda_ctx *)be->ctx)->kv_bf16 ? HY_DTYPE_BF16 : HY_DTYPE_F32;
}

static void cuda_copy_rows(struct hy_backend *be, float *dst, const float *src,
                           const int32_t *idx, int n, int64_t cols)
{
    struct cuda_ctx *c = ctx_op(be);
    HY_ASSERT(n >= 0);
    int32_t hi = 0;
    for (int i = 0; i < n; i++)
        hi = idx[i] > hi ? idx[i] : hi;
    /* rows are copied in parallel: source and destination must not overlap */
    HY_ASSERT(n == 0 || dst + (int64_t)n * cols <= src || src + ((int64_t)hi + 1) * cols <= dst);
    const int32_t *d_idx = hy_cuda_stage(c, idx, (size_t)n);
    if (!hy_cuda_replaying(c))
        hy_cuda_gather_rows(c->stream, dst, src, d_idx, n, cols);
}

static void cuda_silu_mul(struct hy_backend *be, float *out, const float *gate, const float *up,
                          int64_t n)
{
    struct cuda_ctx *c = ctx_op(be);
    if (!hy_cuda_replaying(c))
        hy_cuda_silu_mul(c->stream, out, gate, up, n);
}

static void cuda_add(struct hy_backend *be, float *x, const float *y, int64_t n)
{
    struct cuda_ctx *c = ctx_op(be);
    if (!hy_cuda_replaying(c))
        hy_cuda_add(c->stream, x, y, n);
}

static void cuda_topk(struct hy_backend *be, struct hy_cand *cand, const float *logits, int rows,
                      int64_t vocab, int k, void *scratch)
{
    struct cuda_ctx *c = ctx_op(be);
    HY_ASSERT(rows >= 0 && k >= 1 && k <= hy_cuda_topk_max_k(vocab));
    if (!hy_cuda_replaying(c))
        hy_cuda_topk(c->stream, (uint32_t *)cand, logits, rows, vocab, k, scratch);
}

static int cuda_max_topk(int64_t vocab)
{
    return hy_cuda_topk_max_k(vocab);
}

static size_t cuda_topk_scratch_bytes(int64_t vocab, int rows, int k)
{
    return hy_cuda_topk_scratch_bytes(vocab, rows, k);
}


static void cuda_destroy(struct hy_backend *be)
{
    if (!be)
        return;
    struct cuda_ctx *c = be->ctx;
    if (c) {
        cudaSetDevice(c->device);
        if (c->stream)
            HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
        for (int i = 0; i < c->n_graphs; i++)
            HY_CUDA_CHECK(cudaGraphExecDestroy(c->graphs[i].exec));
        if (c->blas)
            HY_CUBLAS_CHECK(cublasDestroy(c->blas));
        if (c->blas_ws)
            HY_CUDA_CHECK(cudaFree(c->blas_ws));
        if (c->xbf)
            HY_CUDA_CHECK(cudaFree(c->xbf));
        if (c->wbf)
            HY_CUDA_CHECK(cudaFree(c->wbf));
        if (c->xq)
            HY_CUDA_CHECK(cudaFree(c->xq));
        hy_cuda_fp8_destroy(c->fp8);
        if (c->att_part)
            HY_CUDA_CHECK(cudaFree(c->att_part));
        if (c->cbuf)
            HY_CUDA_CHECK(cudaFree(c->cbuf));
        if (c->bi_part)
            HY_CUDA_CHECK(cudaFree(c->bi_part));
        if (c->stage_d)
            HY_CUDA_CHECK(cudaFree(c->stage_d));
        if (c->stage_h)
            HY_CUDA_CHECK(cudaFreeHost(c->stage_h));
        if (c->stream)
            HY_CUDA_CHECK(cudaStreamDestroy(c->stream));
        free(c->fused); /* the weights' owners free the allocations */
        free(c);
    }
    free(be);
}

static hy_status cuda_set_batch_invariant(struct hy_backend *be, bool on, struct hy_err *err)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    HY_ASSERT(c->mode == STEP_NONE && c->n_graphs == 0); /* before any recorded step */
    if (on && !c->bi_part &&
        cudaMalloc((void **)&c->bi_part, HY_CUDA_BIMM_PART_FLOATS * sizeof(float)) != cudaSuccess) {
        (void)cudaGetLastError();
        c->bi_part = NULL;
        return hy_err_set(err, HY_E_NOMEM, "cuda: no device memory for the batch-invariant "
                          "matmul's %zu MiB of partial sums",
                          HY_CUDA_BIMM_PART_FLOATS * sizeof(float) >> 20);
    }
    c->invariant = on;
    return HY_OK;
}

/* cudaMemGetInfo of the backend's device; zeros if the call fails (it only reads). */
static void cuda_mem_info(struct hy_backend *be, uint64_t *used, uint64_t *total)
{
    size_t free_b = 0, total_b = 0;
    (void)be;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        free_b = total_b = 0;
    }
    *used = (uint64_t)(total_b - free_b);
    *total = (uint64_t)total_b;
}

static const struct hy_backend_i cuda_iface = {
    .name = "cuda",
    .destroy = cuda_destroy,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .embed = cuda_embed,
    .rmsnorm = hy_cuda_op_rmsnorm,
    .add_rmsnorm = hy_cuda_op_add_rmsnorm,
    .matmul = cuda_matmul,
    .rope = cuda_rope,
    .rope_norm_store = cuda_rope_norm_store,
    .attention = cuda_attention,
    .kv_store = cuda_kv_store,
    .kv_dtype = cuda_kv_dtype,
    .copy_rows = cuda_copy_rows,
    .silu_mul = cuda_silu_mul,
    .add = cuda_add,
    .weight_upload = cuda_weight_upload,
    .weight_keeps = cuda_weight_keeps,
    .weight_upload_fp8 = cuda_weight_upload_fp8,
    .topk = cuda_topk,
    .max_topk = cuda_max_topk,
    .topk_scratch_bytes = cuda_topk_scratch_bytes,
    .step_begin = hy_cuda_step_begin,
    .step_end = hy_cuda_step_end,
    .step_forget = hy_cuda_step_forget,
    .mem_info = cuda_mem_info,
    .set_batch_invariant = cuda_set_batch_invariant,
    .weight_upload_n = hy_cuda_weight_upload_n,
    .moe_route = hy_cuda_op_moe_route,
    .moe_gate_up = hy_cuda_op_moe_gate_up,
    .moe_down = hy_cuda_op_moe_down,
    .moe_combine = hy_cuda_op_moe_combine,
    .moe_takes = hy_cuda_moe_takes,
    .weight_fuse = hy_cuda_weight_fuse,
    .matmul_n = hy_cuda_matmul_n,
    .matmul_glu = hy_cuda_matmul_glu,
};

/* Memory is decided at start-up, but the CUDA runtime loads a kernel's code into device
 * memory when the kernel is first launched (lazy loading, the default since CUDA 12.2): a
 * kernel first used by some later request (a prompt length, a batch shape) then takes a
 * new 2 MiB of code memory after start-up (cuda_memory_test saw it). Eager loading puts all
 * of it in place when the runtime starts. Set before the runtime's first call; a value the
 * user set is kept. */
static void eager_modules(void)
{
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

bool hy_cuda_available(void)
{
    int n = 0;
    eager_modules();
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return n > 0;
}

/* A failed CUDA call during creation: a status, not an abort (no device, no memory). */
#define TRY(call, st, what)                                                                   \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            (void)cudaGetLastError();                                                         \
            s = hy_err_set(err, st, "CUDA device %d: %s: %s", device, what,                   \
                           cudaGetErrorString(e_));                                           \
            goto fail;                                                                        \
        }                                                                                     \
    } while (0)

hy_status hy_cuda_backend_create_opts(struct hy_backend **out, int device,
                                      const struct hy_cuda_opts *opts, struct hy_err *err)
{
    *out = NULL;
    hy_status s = HY_OK;
    int n_dev = 0;
    eager_modules();
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || device < 0 || device >= n_dev) {
        (void)cudaGetLastError();
        return hy_err_set(err, HY_E_UNSUPPORTED, "no CUDA device %d (%d found)", device, n_dev);
    }
    struct hy_backend *be = calloc(1, sizeof *be);
    struct cuda_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    be->i = &cuda_iface;
    be->ctx = c;
    c->device = device;
    c->stage_cap = opts && opts->stage_ints ? opts->stage_ints : HY_CUDA_STAGE_INTS;
    c->xbf_cap = opts && opts->matmul_scratch ? opts->matmul_scratch : HY_CUDA_MATMUL_SCRATCH;
    c->wbf_cap = HY_CUDA_QMATMUL_SCRATCH; /* qmatmul */
    c->fp8_mode = opts && opts->fp8_act == 1 ? HY_CUDA_FP8_GEMM : HY_CUDA_FP8_DEQUANT;
    c->kv_bf16 = !(opts && opts->kv_f32);
    HY_ASSERT(c->stage_cap >= 1024);
    struct cudaDeviceProp prop;
    TRY(cudaSetDevice(device), HY_E_UNSUPPORTED, "select");
    TRY(cudaGetDeviceProperties(&prop, device), HY_E_UNSUPPORTED, "properties");
    snprintf(c->name, sizeof c->name, "%s", prop.name);
    c->n_sm = prop.multiProcessorCount;
    TRY(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), HY_E_UNSUPPORTED,
        "stream");
    TRY(hy_cuda_attention_tc_setup(), HY_E_UNSUPPORTED, "attention kernel shared memory");
    TRY(cudaMallocHost((void **)&c->stage_h, c->stage_cap * sizeof(int32_t)), HY_E_NOMEM,
        "pinned staging");
    TRY(cudaMalloc((void **)&c->stage_d, c->stage_cap * sizeof(int32_t)), HY_E_NOMEM, "staging");
    TRY(cudaMalloc((void **)&c->xbf, c->xbf_cap * sizeof(uint16_t)), HY_E_NOMEM,
        "matmul scratch");
    TRY(cudaMalloc(&c->blas_ws, CUBLAS_WORKSPACE), HY_E_NOMEM, "cuBLAS workspace");
    c->att_part_floats = ATT_PART_FLOATS;
    TRY(cudaMalloc((void **)&c->att_part, c->att_part_floats * sizeof(float)), HY_E_NOMEM,
        "attention scratch");
    c->cbuf_cap = MATMUL_CBUF_FLOATS;
    TRY(cudaMalloc((void **)&c->cbuf, c->cbuf_cap * sizeof(float)), HY_E_NOMEM,
        "matmul output scratch");
    cublasStatus_t bs = cublasCreate(&c->blas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        c->blas = NULL;
        s = hy_err_set(err, HY_E_UNSUPPORTED, "CUDA device %d: cuBLAS: %s", device,
                       cublasGetStatusString(bs));
        goto fail;
    }
    HY_CUBLAS_CHECK(cublasSetStream(c->blas, c->stream));
    HY_CUBLAS_CHECK(cublasSetWorkspace(c->blas, c->blas_ws, CUBLAS_WORKSPACE));
    HY_CUBLAS_CHECK(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH));
    *out = be;
    return HY_OK;
fail:
    cuda_destroy(be);
    return s;
}

hy_status hy_cuda_backend_create(struct hy_backend **out, int device, struct hy_err *err)
{
    return hy_cuda_backend_create_opts(out, device, NULL, err);
}

const char *hy_cuda_backend_device_name(const struct hy_backend *be)
{
    return ((const struct cuda_ctx *)be->ctx)->name;
}
