/* cpu_impl.h: internals shared by the files of the CPU backend; nothing outside
 * src/backend/cpu/ includes it. The SIMD level is picked once, when the backend is
 * created, by filling a struct hy_cpu_kernels that lives in the backend's context; the
 * ops then call through it (no global dispatch state). All kernels read weights with
 * unaligned loads: weight data points into an mmapped file. */
#ifndef HY_BACKEND_CPU_IMPL_H
#define HY_BACKEND_CPU_IMPL_H

#include "backend/cpu/cpu.h"
#include "core/quant.h"
#include "core/threads.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Activations quantized to int8 for the integer-dot kernels: per block of 32 or 128
 * consecutive values of one token (the kernel's xq_block), d = max|x|/127 and
 * q = rint(x * (1/d)) (d = 0: q = 0). The arrays are per 32-value chunk either way (a
 * 128-block's d repeated in its four chunks), so every reader indexes them alike.
 * Pointers may be advanced together by a multiple of 32 values (hy_cpu_xq_at). */
#define HY_CPU_XQ_BLOCK 32
struct hy_cpu_xq {
    const int8_t *q;  /* [n] */
    const float *d;   /* [n/32] the scale of each chunk's block */
    const float *s;   /* [n/32] d * (sum of the chunk's q): its sum, for weight offsets */
    const float *d8;  /* [n/4] each d repeated 8 times: the scale of each int32 lane of a
                       * 4-byte dot product (vpdpbusd), loadable as a vector */
    /* (optional) The same activations rearranged by the weight dtype's q_prep, that
     * dtype's q_dot reads them instead (HY_CPU_AUX_PER_128 bytes a 128 values); NULL:
     * none. Only the matmul of that dtype sets it. */
    const unsigned char *aux;
};

#define HY_CPU_AUX_PER_128 256

static inline struct hy_cpu_xq hy_cpu_xq_at(const struct hy_cpu_xq *x, int64_t c)
{
    const unsigned char *aux = x->aux && c % 128 == 0 ? x->aux + c / 128 * HY_CPU_AUX_PER_128 : NULL;
    return (struct hy_cpu_xq){x->q + c, x->d + c / 32, x->s + c / 32, x->d8 + c / 4, aux};
}

/* Chunk b (32 values) of a row of a block dtype, values sc[i/16]*q[i] + mn[i/16] exactly as
 * the dtype's dequantizer computes them (kernels_scalar.c; the specification that the
 * integer kernels are tested against). Q8_0, Q4_0, Q4_K, Q6_K and Q4_G128. */
void hy_cpu_unpack32(enum hy_dtype dt, const void *row, int64_t b, int8_t q[32], float sc[2],
                     float mn[2]);

/* Element i of weight data w of type dt, as float32 (a memcpy load: w may be unaligned). */
static inline float hy_cpu_weight_load(const void *w, int64_t i, enum hy_dtype dt)
{
    const unsigned char *p = w;
    uint16_t h;
    float f;
    if (dt == HY_DTYPE_F32) {
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    if (dt == HY_DTYPE_Q8_0) { /* w starts on a block boundary */
        const unsigned char *b = p + (i / HY_Q8_0_BLOCK) * sizeof(struct hy_q8_0_block);
        int8_t q;
        memcpy(&h, b, 2);
        memcpy(&q, b + 2 + i % HY_Q8_0_BLOCK, 1);
        return hy_f16_to_f32(h) * (float)q;
    }
    if (dt != HY_DTYPE_F16 && dt != HY_DTYPE_BF16) { /* the other block types */
        int8_t q[32];
        float sc[2], mn[2];
        int k = (int)(i % 32);
        hy_cpu_unpack32(dt, w, i / 32, q, sc, mn);
        return sc[k / 16] * (float)q[k] + mn[k / 16];
    }
    memcpy(&h, p + i * 2, 2);
    return dt == HY_DTYPE_BF16 ? hy_bf16_to_f32(h) : hy_f16_to_f32(h);
}

/* Dot-product micro kernels for one weight dtype; activations and results are float32,
 * accumulation is float32. w points at weight row(s) of `cols` elements. For Q8_0, w is on
 * a block boundary and cols (n) is a multiple of 32; each weight element is d*q in float32
 * (exactly the reference's value), then multiplied into the sum. */
struct hy_cpu_mm_kernels {
    /* y[i] = x · (row i of w), i < 4, consecutive rows `stride` bytes apart (decode). */
    void (*rows4)(float *y, const float *x, const void *w, size_t stride, int64_t cols);
    /* y[t*ys] = (x + t*xs) · w, t < 4: one weight row against 4 tokens (prefill rows left
     * over by the 4x4 tiles). */
    void (*toks4)(float *y, int64_t ys, const float *x, int64_t xs, const void *w, int64_t cols);
    /* x · w for one row. */
    float (*dot)(const float *x, const void *w, int64_t cols);
    /* y[t*ys + i] (+)= (x + t*xs) · (row i of w) over n columns, for t < 4 tokens and i < 4
     * rows `stride` bytes apart: the register tile of prefill. Adds to y if `add`, else
     * overwrites it. */
    void (*tile4x4)(float *y, int64_t ys, const float *x, int64_t xs, const void *w,
                    size_t stride, int64_t n, bool add);
    /* (optional) The same against int8 activations (struct hy_cpu_xq), integer dot products
     * per block scaled in float32; matmul uses them when set (cols a multiple of 32). */
    void (*q_rows4)(float *y, const struct hy_cpu_xq *x, const void *w, size_t stride,
                    int64_t cols);
    float (*q_dot)(const struct hy_cpu_xq *x, const void *w, int64_t cols);
    /* x[t] is token t's activations at the chunk's first column. */
    void (*q_tile4x4)(float *y, int64_t ys, const struct hy_cpu_xq x[4], const void *w,
                      size_t stride, int64_t n, bool add);
    /* Values per activation scale the q_ kernels need (32 or 128; 0 means 32). */
    int xq_block;
    /* (optional) Rearranges one token's quantized activations x, its cols/128 whole
     * 128-value groups, into aux (cols/128 * HY_CPU_AUX_PER_128 bytes) for this dtype's
     * q_dot: decode reads each token's activations once per weight row, so work on them
     * that does not depend on the row is done here once. q_dot with x->aux set reads the
     * groups from aux and any tail from x's arrays; the integers are the same as without,
     * only the float summation order differs. */
    void (*q_prep)(unsigned char *aux, const struct hy_cpu_xq *x, int64_t cols);
    /* (optional, with the q_ kernels) Prefill through packed weights. q_pack converts rows
     * [0, nr) of w (1 <= nr <= HY_CPU_PANEL, consecutive rows `stride` bytes apart; n
     * columns from a block boundary, n a multiple of 128) into buf (n/128 *
     * pack_group_bytes bytes, 64-byte aligned) in the kernel's own layout, rows past nr as
     * zeros. q_gemm then sets (add: adds to) y[t*ys + i] = x[t] · row i for t < nt
     * (1 <= nt <= HY_CPU_GEMM_TOKENS) and i < nr; x[t] at the packed columns' first one.
     * Each output's arithmetic does not depend on nt, nr or the other rows and tokens. */
    void (*q_pack)(void *buf, const void *w, size_t stride, int nr, int64_t n);
    void (*q_gemm)(float *y, int64_t ys, const struct hy_cpu_xq *x, int nt, const void *buf,
                   int nr, int64_t n, bool add);
    size_t pack_group_bytes; /* bytes of 128 packed columns of a panel */
    /* (optional, with xq_block 128) A few tokens against one row, the row read once:
     * y[t*ys] = x[t] · w for t < nt (1 <= nt <= HY_CPU_ROW_TOKENS); gs[t*gstride + g] is
     * hy_cpu_xq_half_sums' value for token t's group g. */
    void (*q_row_tokens)(float *y, int64_t ys, const struct hy_cpu_xq *x, const float *gs,
                         int64_t gstride, int nt, const void *w, int64_t cols);
};

#define HY_CPU_ROW_TOKENS 8

/* gs[g] = half the sum of 128-value group g's four chunk sums (x->s), g < cols/128: the
 * nibble offset's share per int32 lane (8 * sum / 16 lanes) in q_row_tokens. */
static inline void hy_cpu_xq_half_sums(float *gs, const struct hy_cpu_xq *x, int64_t cols)
{
    for (int64_t g = 0; g < cols / 128; g++) {
        const float *s = x->s + 4 * g;
        gs[g] = 0.5f * ((s[0] + s[1]) + (s[2] + s[3]));
    }
}

/* Rows of a packed panel, tokens of one q_gemm call. */
#define HY_CPU_PANEL 32
#define HY_CPU_GEMM_TOKENS 4

struct hy_cpu_kernels {
    enum hy_cpu_isa isa;
    const char *name;
    struct hy_cpu_mm_kernels mm[HY_DTYPE_COUNT]; /* indexed by weight dtype */
    /* s[j] = scale · (q · k_j) for j < n, k_j = k + j*stride (attention scores). */
    void (*scores)(float *s, const float *q, const float *k, int64_t stride, int n, int hd,
                   float scale);
    /* acc = acc·c + Σ_j p[j]·v_j for j < n, v_j = v + j*stride (attention weighted sum). */
    void (*accum)(float *acc, float c, const float *p, const float *v, int64_t stride, int n,
                  int hd);
    /* Quantizes n values (n a multiple of block, 32 or 128) into the struct hy_cpu_xq arrays;
     * every ISA gives the same bytes (one multiply and a round-to-nearest-even a value). */
    void (*quantize_x)(int8_t *q, float *d, float *s, float *d8, const float *x, int64_t n,
                       int block);
};

/* The int8 reference (scalar, exact integer block sums): x · row for any block dtype. The
 * int8 kernels of every ISA are tested against it. */
float hy_cpu_q_dot_ref(enum hy_dtype dt, const struct hy_cpu_xq *x, const void *w, int64_t cols);
void hy_cpu_quantize_x_ref(int8_t *q, float *d, float *s, float *d8, const float *x, int64_t n,
                           int block);

/* The float-weight kernel rows of a kernel set, from the file's static functions of these
 * names (rows4_f32, toks4_f32, dot_f32, tile_f32, and the same for f16, bf16, q8_0): each
 * ISA file (kernels_{scalar,avx2,avx512}.c) defines them all. */
#define HY_CPU_SET_DENSE_KERNELS(k)                                                         \
    do {                                                                                    \
        (k)->mm[HY_DTYPE_F32] = (struct hy_cpu_mm_kernels){                                 \
            .rows4 = rows4_f32, .toks4 = toks4_f32, .dot = dot_f32, .tile4x4 = tile_f32};   \
        (k)->mm[HY_DTYPE_F16] = (struct hy_cpu_mm_kernels){                                 \
            .rows4 = rows4_f16, .toks4 = toks4_f16, .dot = dot_f16, .tile4x4 = tile_f16};   \
        (k)->mm[HY_DTYPE_BF16] = (struct hy_cpu_mm_kernels){                                \
            .rows4 = rows4_bf16, .toks4 = toks4_bf16, .dot = dot_bf16, .tile4x4 = tile_bf16}; \
        (k)->mm[HY_DTYPE_Q8_0] = (struct hy_cpu_mm_kernels){                                \
            .rows4 = rows4_q8_0, .toks4 = toks4_q8_0, .dot = dot_q8_0, .tile4x4 = tile_q8_0}; \
    } while (0)

/* Fill k with one SIMD level; false if the CPU (or this build) cannot run it. */
void hy_cpu_kernels_scalar(struct hy_cpu_kernels *k);
bool hy_cpu_kernels_avx2(struct hy_cpu_kernels *k);
bool hy_cpu_kernels_avx512(struct hy_cpu_kernels *k);
/* Adds the packed prefill kernels (gemm_avx512.c: Q4_G128; gemm_gguf_avx512.c: Q4_0, Q8_0,
 * Q4_K, Q6_K) to an AVX-512 VNNI kernel set. */
void hy_cpu_gemm_avx512(struct hy_cpu_kernels *k);
void hy_cpu_gemm_gguf_avx512(struct hy_cpu_kernels *k);
/* Adds the GGUF block types' int8 kernels (kernels_gguf_avx512.c, with their packed GEMM)
 * to an AVX-512 VNNI kernel set. */
void hy_cpu_kernels_gguf_avx512(struct hy_cpu_kernels *k);
/* The same on AVX2 (kernels_gguf_avx2.c; vpmaddubsw), for CPUs without AVX-512 VNNI. */
void hy_cpu_kernels_gguf_avx2(struct hy_cpu_kernels *k);

/* Values of quantized activations one matmul call holds at once: matmul quantizes up to
 * this many (a slab of tokens) and runs the slab; larger calls take several slabs. */
#define HY_CPU_XQ_ELEMS (1024 * 1024) /* 64 tokens of the 7B's down projection (14336) */

/* Bytes of q_prep's activations a matmul call holds: 16 tokens of a 14336-column input. */
#define HY_CPU_AUX_BYTES (16 * 14336 / 128 * HY_CPU_AUX_PER_128)

/* Columns of a weight panel packed at once (its bytes stay in L1/L2 while every token of
 * the call passes), and the size of each thread's pack buffer. */
#define HY_CPU_PACK_COLS 2048
#define HY_CPU_PACK_GROUP_MAX (48 * 4 * HY_CPU_PANEL) /* largest pack_group_bytes (Q6_K) */
#define HY_CPU_PACK_BYTES ((HY_CPU_PACK_COLS / 128) * (size_t)HY_CPU_PACK_GROUP_MAX)
/* Bytes of each thread's pack buffer: two panels side by side (the MoE ops pack an
 * expert's gate and up panels together). */
#define HY_CPU_PACK_BUF_BYTES (2 * HY_CPU_PACK_BYTES)

/* Private state of both CPU backends. */
struct hy_cpu_ctx {
    struct hy_pool *pool; /* NULL for the reference backend */
    int n_threads;
    bool ref;
    struct hy_cpu_kernels k; /* unused by the reference backend */
    /* quantized activations of the running matmul (engine thread; read by the pool) */
    /* per pool thread (tid): packed weight panels, HY_CPU_PACK_BUF_BYTES (NULL: no q_pack) */
    unsigned char *pack[HY_POOL_MAX_THREADS];
    float xq_g[HY_CPU_XQ_ELEMS / 128]; /* hy_cpu_xq_half_sums of each token (q_row_tokens) */
    int8_t xq_q[HY_CPU_XQ_ELEMS];
    /* q_prep's form of the slab's tokens, when they fit (decode and small batches) */
    unsigned char xq_aux[HY_CPU_AUX_BYTES];
    float xq_d[HY_CPU_XQ_ELEMS / 32], xq_s[HY_CPU_XQ_ELEMS / 32], xq_d8[HY_CPU_XQ_ELEMS / 4];
};

/* The threaded, SIMD ops of the fast backend (matmul.c, attention.c). */
void hy_cpu_matmul(struct hy_cpu_ctx *c, float *out, const float *x, const struct hy_weight *w,
                   int T);
/* out[i] = x · w[i]ᵀ for i < n (n <= HY_CPU_MULTI_MAX, every w[i]->cols alike): the same
 * results as n hy_cpu_matmul calls, bit for bit; decode-sized calls (T < the packed
 * GEMM's) quantize x once and run all the weights' rows in one pool call, others run the
 * n calls. */
#define HY_CPU_MULTI_MAX 4
void hy_cpu_matmul_multi(struct hy_cpu_ctx *c, int n, float *const out[], const float *x,
                         const struct hy_weight *const w[], int T);
/* Helpers of matmul.c that the MoE ops (moe_ops.c) share.
 * hy_cpu_quantize_rows: rows [0, n) of x ([n, cols], n * cols <= HY_CPU_XQ_ELEMS) quantized
 * per `block` values into c's xq_* arrays, on the pool.
 * hy_cpu_xq_row: row t of those from column col; aux (or NULL) holds q_prep's form of the
 * rows, cols / 128 * HY_CPU_AUX_PER_128 bytes a row.
 * hy_cpu_pool_for_balanced: fn over [0, n) on the pool in pieces of at least min_grab items
 * (and at most max_grab, when > 0), each thread its own contiguous range first, then what
 * the others left (matmul.c). */
void hy_cpu_quantize_rows(struct hy_cpu_ctx *c, const float *x, int n, int64_t cols, int block);
struct hy_cpu_xq hy_cpu_xq_row(const struct hy_cpu_ctx *c, const unsigned char *aux,
                               int64_t cols, int64_t t, int64_t col);
void hy_cpu_pool_for_balanced(struct hy_pool *pool, int64_t n, int64_t min_grab,
                              int64_t max_grab, hy_pool_fn fn, void *job);

/* The fast backend's mixture-of-experts ops (moe_ops.c; backend.h has the contracts). */
void hy_cpu_moe_route(struct hy_cpu_ctx *c, const struct hy_moe_route *r, const float *logits,
                      const float *bias, int T, int E, int k, float scale);
void hy_cpu_moe_gate_up(struct hy_cpu_ctx *c, float *act, const float *x,
                        const struct hy_weight *gate, const struct hy_weight *up, int E,
                        const struct hy_moe_route *r, int T, int k);
void hy_cpu_moe_down(struct hy_cpu_ctx *c, float *y, const float *act,
                     const struct hy_weight *down, int E, const struct hy_moe_route *r, int T,
                     int k);
void hy_cpu_moe_combine(struct hy_cpu_ctx *c, float *out, const float *acc, const float *y,
                        const struct hy_moe_route *r, int T, int k, int64_t d);
bool hy_cpu_moe_takes(enum hy_dtype dt);

/* F16C through cpuid: clang before 16 has no __builtin_cpu_supports("f16c"). */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
static inline bool hy_cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

void hy_cpu_attention(struct hy_cpu_ctx *c, float *out, const float *q, const float *k_pool,
                      const float *v_pool, int bs, const struct hy_attn_seq *seqs, int n_seqs,
                      int n_head, int n_kv, int hd, float scale);

#endif
