/* matmul.c: out[t, r] = x[t, :] · W[r, :] on the thread pool.
 * Threads split the output rows into ranges of whole 4-row groups (or 32-row panels); each
 * weight byte is read by one thread, and every row goes through the same kernel whichever
 * thread runs it, so results are the same bit for bit for any thread count.
 * Decode (T = 1) is memory-bound: each thread reads its rows one after the other with the
 * dot kernel, its range one sequential stream, in pieces that a thread done early takes
 * over from a slower one (pool_for_balanced). (Not four rows side by side, the rows4
 * kernel: four short interleaved streams that the hardware prefetcher follows late read
 * well below one stream's bandwidth; figures in bench/RESULTS.md.)
 * Prefill (T > 1) is compute-bound: rows are walked in blocks and columns in chunks small
 * enough that a block's chunk of weights stays in L2 and four tokens' chunk of activations
 * in L1; every (4 tokens x 4 rows) tile of the block runs in registers (tile4x4), each
 * converted weight vector feeding four tokens. The weights are fetched from memory once
 * for all T tokens. Leftover rows (block % 4) go through toks4 (one row, four tokens),
 * leftover tokens (T % 4) through rows4.
 * Dtypes with integer kernels (q_*) take int8 activations instead: the caller's thread
 * quantizes a slab of tokens (as many as HY_CPU_XQ_ELEMS values hold) into the context once,
 * then the pool runs the same schedule over the slab with the q_ kernels; a call with more
 * tokens runs slab after slab (each re-reads the weights: ~HY_CPU_XQ_ELEMS/cols tokens a
 * pass). Quantization is per token, so results still do not depend on the thread count.
 * Where the kernels pack weights (q_pack, q_gemm: Q4_G128 on AVX-512 VNNI), calls of
 * PACK_MIN_TOKENS tokens or more go panel by panel instead (packed_range): 32 rows x 2048
 * columns unpacked into the thread's buffer, then every 4 tokens of the slab against them;
 * fewer tokens (small decode batches) go row by row through q_row_tokens, each row read
 * once for all of them (row_tokens_range). */
#include "backend/cpu/cpu_impl.h"

#include <stdatomic.h>

/* Columns per chunk: four tokens' activations (16 KiB) stay in L1. */
#define CHUNK_COLS 1024
/* Weight bytes of one block's column chunk: stays in L2 while every token passes. */
#define BLOCK_BYTES (128 * 1024)
/* Fewest 4-row groups a thread gets; below this the call runs on fewer threads. */
#define MIN_GROUPS_PER_THREAD 2
/* Fewest 4-row groups a piece of the balanced split holds (decode). */
#define MIN_GROUPS_DYN 16
/* Pieces a thread's range is cut into in the balanced split (pool_for_balanced). */
#define DYN_PIECES 4
/* Fewest tokens for which packing weight panels (q_pack) pays; fewer (from 2) go through
 * q_row_tokens where the kernels have it. 1.8B shapes, 2 threads, all 32 layers' matmuls
 * (ms, packed vs row_tokens): T=2 90 vs 42, 4 96 vs 60, 8 107 vs 89-106, 12 120-149 vs
 * 149, 16 126 vs 225. */
#define PACK_MIN_TOKENS 12
_Static_assert(CHUNK_COLS % HY_QK_K == 0, "a column chunk must start on a block of every dtype");

struct mm_job {
    const struct hy_cpu_mm_kernels *k;
    float *out;             /* [T, rows] */
    const float *x;         /* [T, cols] */
    const struct hy_cpu_ctx *xq; /* int8 activations [T, cols] in xq_*, or NULL: x */
    const unsigned char *w; /* [rows, cols] of the weight's dtype */
    size_t row_bytes, chunk_bytes; /* bytes of a row, of CHUNK_COLS columns of a row */
    size_t pack_bytes;             /* bytes of HY_CPU_PACK_COLS columns of a row */
    int64_t rows, cols;
    enum hy_dtype dtype;
    const float *gs; /* [T, cols/128] hy_cpu_xq_half_sums (q_row_tokens) */
    unsigned char *aux; /* q_prep's form of the slab's tokens (in xq_aux), or NULL */
    int T;
    int64_t block_rows;
};

struct hy_cpu_xq hy_cpu_xq_row(const struct hy_cpu_ctx *c, const unsigned char *aux,
                               int64_t cols, int64_t t, int64_t col)
{
    /* hy_cpu_xq_at advances aux with the values: row t's groups start at t * cols / 128
     * (whole 128-value groups: cols is a multiple of 128 where aux is set) */
    struct hy_cpu_xq v = {c->xq_q, c->xq_d, c->xq_s, c->xq_d8, aux};
    return hy_cpu_xq_at(&v, t * cols + col);
}

/* Token t's quantized activations from column c. */
static struct hy_cpu_xq xq_token(const struct mm_job *j, int t, int64_t c)
{
    return hy_cpu_xq_row(j->xq, j->aux, j->cols, t, c);
}

/* out[t, r] for r in [r0, r1) and one token t. */
static void rows_one_token(const struct mm_job *j, int t, int64_t r0, int64_t r1)
{
    float *ot = j->out + (int64_t)t * j->rows;
    if (j->xq) {
        struct hy_cpu_xq xt = xq_token(j, t, 0);
        for (int64_t r = r0; r < r1; r++)
            ot[r] = j->k->q_dot(&xt, j->w + (size_t)r * j->row_bytes, j->cols);
        return;
    }
    const float *xt = j->x + (int64_t)t * j->cols;
    for (int64_t r = r0; r < r1; r++)
        ot[r] = j->k->dot(xt, j->w + (size_t)r * j->row_bytes, j->cols);
}

/* out[t0..t0+3, r] for r in [r0, r1). */
static void rows_four_tokens(const struct mm_job *j, int t0, int64_t r0, int64_t r1)
{
    if (j->xq) {
        for (int t = t0; t < t0 + 4; t++) {
            struct hy_cpu_xq xt = xq_token(j, t, 0);
            for (int64_t r = r0; r < r1; r++)
                j->out[(int64_t)t * j->rows + r] =
                    j->k->q_dot(&xt, j->w + (size_t)r * j->row_bytes, j->cols);
        }
        return;
    }
    const float *xt = j->x + (int64_t)t0 * j->cols;
    for (int64_t r = r0; r < r1; r++)
        j->k->toks4(j->out + (int64_t)t0 * j->rows + r, j->rows, xt, j->cols,
                    j->w + (size_t)r * j->row_bytes, j->cols);
}

/* Tokens [0, t4) x rows [b0, b1), both multiples of 4, in 4x4 tiles, chunk by chunk;
 * the first chunk stores, later ones add. */
static void tiles(const struct mm_job *j, int t4, int64_t b0, int64_t b1)
{
    for (int64_t k0 = 0; k0 < j->cols; k0 += CHUNK_COLS) {
        int64_t kn = j->cols - k0 < CHUNK_COLS ? j->cols - k0 : CHUNK_COLS;
        /* k0 is a multiple of CHUNK_COLS, so of the Q8_0 block too */
        const unsigned char *wk = j->w + (size_t)(k0 / CHUNK_COLS) * j->chunk_bytes;
        for (int t = 0; t < t4; t += 4) {
            float *ot = j->out + (int64_t)t * j->rows;
            if (j->xq) {
                struct hy_cpu_xq xt[4];
                for (int u = 0; u < 4; u++)
                    xt[u] = xq_token(j, t + u, k0);
                for (int64_t r = b0; r < b1; r += 4)
                    j->k->q_tile4x4(ot + r, j->rows, xt, wk + (size_t)r * j->row_bytes,
                                    j->row_bytes, kn, k0 > 0);
                continue;
            }
            const float *xt = j->x + (int64_t)t * j->cols + k0;
            for (int64_t r = b0; r < b1; r += 4)
                j->k->tile4x4(ot + r, j->rows, xt, j->cols, wk + (size_t)r * j->row_bytes,
                              j->row_bytes, kn, k0 > 0);
        }
    }
}

/* The pool hands out 4-row groups, so that every thread's range starts on a multiple of 4
 * and each row goes through the same kernel whatever the thread count: the result does
 * not depend on the number of threads, bit for bit. */
static void mm_range(void *ctx, int64_t g0, int64_t g1, int tid)
{
    const struct mm_job *j = ctx;
    (void)tid;
    int64_t r0 = 4 * g0, r1 = 4 * g1 < j->rows ? 4 * g1 : j->rows;
    if (j->T == 1) {
        rows_one_token(j, 0, r0, r1);
        return;
    }
    int t4 = j->T & ~3;
    for (int64_t b0 = r0; b0 < r1; b0 += j->block_rows) {
        int64_t b1 = b0 + j->block_rows < r1 ? b0 + j->block_rows : r1;
        int64_t b4 = b0 + ((b1 - b0) & ~(int64_t)3);
        tiles(j, t4, b0, b4);
        for (int t = 0; t < t4; t += 4)
            rows_four_tokens(j, t, b4, b1);
        for (int t = t4; t < j->T; t++)
            rows_one_token(j, t, b0, b1);
    }
}

/* Rows of 4-row groups [g0, g1) against the slab's tokens through q_row_tokens: each row
 * read from memory once, against up to HY_CPU_ROW_TOKENS tokens at a time. */
static void row_tokens_range(void *ctx, int64_t g0, int64_t g1, int tid)
{
    const struct mm_job *j = ctx;
    int64_t r1 = 4 * g1 < j->rows ? 4 * g1 : j->rows, G = j->cols / 128;
    (void)tid;
    if (!j->k->q_row_tokens) { /* a row's bytes stay in L1 while the tokens pass */
        for (int64_t r = 4 * g0; r < r1; r++)
            for (int t = 0; t < j->T; t++) {
                struct hy_cpu_xq xt = xq_token(j, t, 0);
                j->out[(int64_t)t * j->rows + r] = j->k->q_dot(&xt, j->w + (size_t)r * j->row_bytes, j->cols);
            }
        return;
    }
    for (int64_t r = 4 * g0; r < r1; r++)
        for (int t = 0; t < j->T; t += HY_CPU_ROW_TOKENS) {
            int nt = j->T - t < HY_CPU_ROW_TOKENS ? j->T - t : HY_CPU_ROW_TOKENS;
            struct hy_cpu_xq xt[HY_CPU_ROW_TOKENS];
            for (int u = 0; u < nt; u++)
                xt[u] = xq_token(j, t + u, 0);
            j->k->q_row_tokens(j->out + (int64_t)t * j->rows + r, j->rows, xt, j->gs + t * G, G,
                               nt, j->w + (size_t)r * j->row_bytes, j->cols);
        }
}

/* The weight bytes packed next: `bytes` bytes of each of n rows, `stride` bytes apart. */
struct pf_span {
    const unsigned char *w;
    size_t stride, bytes;
    int n;
};

/* GCC counts prefetches as no effect at all: a static function that only prefetches is
 * found pure by its interprocedural analysis, and its calls are deleted. */
#if defined(__GNUC__) && !defined(__clang__)
#define KEEP_CALLS __attribute__((noipa))
#else
#define KEEP_CALLS
#endif

/* Rows [n*i/parts, n*(i+1)/parts) of span s, prefetched into L2. Packing reads 32 rows side
 * by side, more streams than the hardware prefetcher follows; the next chunk's rows are
 * requested a slice per token group, so that their memory reads overlap the arithmetic
 * (1 thread, T=64: packing 38% -> 18% of the GEMM's time; into L1 instead: 20%). */
KEEP_CALLS static void prefetch_part(const struct pf_span *s, int i, int parts)
{
    for (int r = s->n * i / parts; r < s->n * (i + 1) / parts; r++) {
        const unsigned char *row = s->w + (size_t)r * s->stride;
        for (size_t b = 0; b < s->bytes; b += 64)
            __builtin_prefetch(row + b, 0, 2);
        __builtin_prefetch(row + s->bytes - 1, 0, 2); /* the line a misaligned row ends in */
    }
}

/* Panels [p0, p1) of HY_CPU_PANEL rows (the last one may be short) through the packed
 * kernels: a panel's columns are packed HY_CPU_PACK_COLS at a time into this thread's
 * buffer, then every 4-token group of the slab runs over them (the first column chunk
 * stores, later ones add). Every row goes through the same arithmetic whichever thread
 * and panel it falls in. */
static void packed_range(void *ctx, int64_t p0, int64_t p1, int tid)
{
    const struct mm_job *j = ctx;
    unsigned char *buf = j->xq->pack[tid];
    HY_ASSERT(buf);
    int tiles = (j->T + HY_CPU_GEMM_TOKENS - 1) / HY_CPU_GEMM_TOKENS;
    for (int64_t p = p0; p < p1; p++) {
        int64_t r0 = p * HY_CPU_PANEL;
        int nr = (int)(j->rows - r0 < HY_CPU_PANEL ? j->rows - r0 : HY_CPU_PANEL);
        const unsigned char *wp = j->w + (size_t)r0 * j->row_bytes;
        for (int64_t k0 = 0; k0 < j->cols; k0 += HY_CPU_PACK_COLS) {
            int64_t kn = j->cols - k0 < HY_CPU_PACK_COLS ? j->cols - k0 : HY_CPU_PACK_COLS;
            const unsigned char *wk = wp + (size_t)(k0 / HY_CPU_PACK_COLS) * j->pack_bytes;
            j->k->q_pack(buf, wk, j->row_bytes, nr, kn);
            struct pf_span next = {wk + j->pack_bytes, j->row_bytes, 0, 0}; /* next chunk */
            if (k0 + kn < j->cols) {
                int64_t c = j->cols - k0 - kn;
                next.n = nr;
                next.bytes = hy_dtype_row_bytes(j->dtype, c < HY_CPU_PACK_COLS ? c : HY_CPU_PACK_COLS);
            } else if (p + 1 < p1) { /* the next panel's first chunk */
                int64_t n = j->rows - r0 - HY_CPU_PANEL;
                next.w = wp + HY_CPU_PANEL * j->row_bytes;
                next.n = (int)(n < HY_CPU_PANEL ? n : HY_CPU_PANEL);
                next.bytes = j->pack_bytes < j->row_bytes ? j->pack_bytes : j->row_bytes;
            }
            for (int t = 0; t < j->T; t += HY_CPU_GEMM_TOKENS) {
                int nt = j->T - t < HY_CPU_GEMM_TOKENS ? j->T - t : HY_CPU_GEMM_TOKENS;
                struct hy_cpu_xq xt[HY_CPU_GEMM_TOKENS];
                for (int u = 0; u < nt; u++)
                    xt[u] = xq_token(j, t + u, k0);
                prefetch_part(&next, t / HY_CPU_GEMM_TOKENS, tiles);
                j->k->q_gemm(j->out + (int64_t)t * j->rows + r0, j->rows, xt, nt, buf, nr, kn,
                             k0 > 0);
            }
        }
    }
}

/* Balanced split: [0, n) is cut into one contiguous range a thread, as hy_pool_for would,
 * and each thread takes its range's pieces in order (one sequential stream when nothing
 * interferes); a thread that is done takes the remaining pieces of the others' ranges, so
 * that a thread slowed down (by a neighbour on its core, or by a smaller share of the
 * memory bandwidth) leaves work to the others instead of making them wait at the end of
 * the call. Which thread runs a piece never changes its arithmetic. */
#define DYN_MAX_THREADS 64
struct dyn_job {
    hy_pool_fn fn;
    void *job;
    int64_t n, grab, tail; /* items: most a piece takes, fewest */
    int k;                              /* ranges (threads) */
    _Atomic int64_t next[DYN_MAX_THREADS]; /* next item of each range */
};

static int64_t range_end(const struct dyn_job *d, int r)
{
    return d->n * (r + 1) / d->k;
}

static void dyn_run(void *ctx, int64_t a, int64_t b, int tid)
{
    struct dyn_job *d = ctx;
    (void)b;
    for (int v = 0; v < d->k; v++) { /* own range first, then the others' */
        int r = (int)((a + v) % d->k);
        int64_t end = range_end(d, r);
        int64_t i = atomic_load_explicit(&d->next[r], memory_order_relaxed);
        while (i < end) {
            /* pieces shrink towards the range's end (half of what is left, down to
             * d->tail), so that the threads' last pieces end close together */
            int64_t g = (end - i) / 2;
            g = g < d->grab ? g : d->grab;
            g = g > d->tail ? g : d->tail;
            if (!atomic_compare_exchange_weak_explicit(&d->next[r], &i, i + g, memory_order_relaxed,
                                                       memory_order_relaxed))
                continue; /* i now holds the range's next item */
            d->fn(d->job, i, i + g < end ? i + g : end, tid);
            i = atomic_load_explicit(&d->next[r], memory_order_relaxed);
        }
    }
}

/* fn over [0, n) in pieces of about n / (DYN_PIECES * threads) items (at least min_grab,
 * at most max_grab when that is > 0), smaller near the end of each thread's range (down to
 * min_grab / 4). */
void hy_cpu_pool_for_balanced(struct hy_pool *pool, int64_t n, int64_t min_grab,
                              int64_t max_grab, hy_pool_fn fn, void *job)
{
    int threads = hy_pool_size(pool);
    if (threads > DYN_MAX_THREADS)
        threads = DYN_MAX_THREADS;
    struct dyn_job d = {.fn = fn, .job = job, .n = n};
    d.grab = n / ((int64_t)DYN_PIECES * threads);
    d.grab = max_grab > 0 && d.grab > max_grab ? max_grab : d.grab;
    d.grab = d.grab > min_grab ? d.grab : min_grab;
    d.tail = min_grab / 4 > 1 ? min_grab / 4 : 1;
    int64_t pieces = (n + d.grab - 1) / d.grab;
    d.k = (int)(pieces < threads ? pieces : threads);
    for (int r = 0; r < d.k; r++)
        atomic_init(&d.next[r], r == 0 ? 0 : range_end(&d, r - 1));
    if (d.k <= 1) {
        fn(job, 0, n, 0);
        return;
    }
    hy_pool_for(pool, d.k, 1, dyn_run, &d);
}

struct xq_job {
    struct hy_cpu_ctx *c;
    const float *x;
    int64_t cols;
    int block;
};

static void quantize_tokens(void *ctx, int64_t t0, int64_t t1, int tid)
{
    const struct xq_job *j = ctx;
    struct hy_cpu_ctx *c = j->c;
    (void)tid;
    for (int64_t t = t0; t < t1; t++) {
        int64_t o = t * j->cols;
        c->k.quantize_x(c->xq_q + o, c->xq_d + o / 32, c->xq_s + o / 32, c->xq_d8 + o / 4,
                        j->x + o, j->cols, j->block);
    }
}

void hy_cpu_quantize_rows(struct hy_cpu_ctx *c, const float *x, int n, int64_t cols, int block)
{
    struct xq_job q = {c, x, cols, block};
    hy_pool_for(c->pool, n, 4, quantize_tokens, &q);
}

/* Bytes of q_prep's form of n tokens of `cols` values for kernels k (0: none to make). */
static size_t aux_bytes(const struct hy_cpu_mm_kernels *k, int64_t cols, int n)
{
    if (!k->q_prep || cols % 128 != 0)
        return 0;
    return (size_t)n * (size_t)(cols / 128) * HY_CPU_AUX_PER_128;
}

/* q_prep of the job's slab into aux (the engine thread: a few microseconds a token). */
static void prep_tokens(struct mm_job *j, unsigned char *aux)
{
    if (!aux_bytes(j->k, j->cols, j->T))
        return;
    j->aux = aux;
    for (int t = 0; t < j->T; t++) {
        struct hy_cpu_xq xt = xq_token(j, t, 0);
        j->k->q_prep((unsigned char *)xt.aux, &xt, j->cols);
    }
}

void hy_cpu_matmul(struct hy_cpu_ctx *c, float *out, const float *x, const struct hy_weight *w,
                   int T)
{
    HY_ASSERT(w->dtype >= 0 && w->dtype < HY_DTYPE_COUNT && T >= 0);
    const struct hy_cpu_mm_kernels *k = &c->k.mm[w->dtype];
    int xb = k->xq_block ? k->xq_block : HY_CPU_XQ_BLOCK;
    if (k->q_dot && w->cols % xb == 0 && w->cols <= HY_CPU_XQ_ELEMS && T > 0 && w->rows > 0) {
        int slab = (int)(HY_CPU_XQ_ELEMS / w->cols);
        if (slab > 4)
            slab &= ~3; /* whole 4-token tiles in every slab but the last */
        for (int t0 = 0; t0 < T; t0 += slab) {
            int n = T - t0 < slab ? T - t0 : slab;
            hy_cpu_quantize_rows(c, x + (int64_t)t0 * w->cols, n, w->cols, xb);
            struct mm_job j = {
                .k = k,
                .out = out + (int64_t)t0 * w->rows,
                .xq = c,
                .w = w->data,
                .row_bytes = hy_dtype_row_bytes(w->dtype, w->cols),
                .chunk_bytes = hy_dtype_row_bytes(w->dtype, CHUNK_COLS),
                .rows = w->rows,
                .cols = w->cols,
                .T = n,
            };
            j.block_rows = (int64_t)(BLOCK_BYTES / j.chunk_bytes) & ~(int64_t)3;
            bool packed = k->q_pack && T >= PACK_MIN_TOKENS && w->cols % 128 == 0;
            if (!packed && aux_bytes(k, w->cols, n) <= HY_CPU_AUX_BYTES)
                prep_tokens(&j, c->xq_aux);
            if (packed) {
                HY_ASSERT(k->pack_group_bytes <= HY_CPU_PACK_GROUP_MAX);
                j.pack_bytes = hy_dtype_row_bytes(w->dtype, HY_CPU_PACK_COLS);
                j.dtype = w->dtype;
                hy_cpu_pool_for_balanced(c->pool, (w->rows + HY_CPU_PANEL - 1) / HY_CPU_PANEL,
                                         1, 0, packed_range, &j);
                continue;
            }
            if (k->q_pack && n > 1 && T < PACK_MIN_TOKENS) {
                for (int t = 0; t < n && k->q_row_tokens; t++) {
                    struct hy_cpu_xq xt = xq_token(&j, t, 0);
                    hy_cpu_xq_half_sums(c->xq_g + t * (w->cols / 128), &xt, w->cols);
                }
                j.gs = c->xq_g;
                hy_cpu_pool_for_balanced(c->pool, (w->rows + 3) / 4, MIN_GROUPS_DYN, 0,
                                         row_tokens_range, &j);
                continue;
            }
            if (n == 1)
                hy_cpu_pool_for_balanced(c->pool, (w->rows + 3) / 4, MIN_GROUPS_DYN, 0, mm_range,
                                         &j);
            else
                hy_pool_for(c->pool, (w->rows + 3) / 4, MIN_GROUPS_PER_THREAD, mm_range, &j);
        }
        return;
    }
    struct mm_job j = {
        .k = &c->k.mm[w->dtype],
        .out = out,
        .x = x,
        .w = w->data,
        .row_bytes = hy_dtype_row_bytes(w->dtype, w->cols),
        .chunk_bytes = hy_dtype_row_bytes(w->dtype, CHUNK_COLS),
        .rows = w->rows,
        .cols = w->cols,
        .T = T,
    };
    j.block_rows = (int64_t)(BLOCK_BYTES / j.chunk_bytes) & ~(int64_t)3;
    if (T == 0 || w->rows == 0)
        return;
    if (T == 1)
        hy_cpu_pool_for_balanced(c->pool, (w->rows + 3) / 4, MIN_GROUPS_DYN, 0, mm_range, &j);
    else
        hy_pool_for(c->pool, (w->rows + 3) / 4, MIN_GROUPS_PER_THREAD, mm_range, &j);
}

/* Several weights of one input in one pool call: the groups of all of them form one range
 * that the balanced split cuts; each piece runs the range function its weight's own
 * matmul would (so every row's arithmetic is the same as there). */
struct multi_job {
    int n;
    struct mm_job j[HY_CPU_MULTI_MAX];
    hy_pool_fn fn[HY_CPU_MULTI_MAX];
    int64_t g0[HY_CPU_MULTI_MAX + 1]; /* first 4-row group of each weight in the range */
};

static void multi_range(void *ctx, int64_t a, int64_t b, int tid)
{
    const struct multi_job *m = ctx;
    for (int i = 0; i < m->n; i++) {
        int64_t lo = a > m->g0[i] ? a : m->g0[i], hi = b < m->g0[i + 1] ? b : m->g0[i + 1];
        if (lo < hi)
            m->fn[i]((void *)&m->j[i], lo - m->g0[i], hi - m->g0[i], tid);
    }
}

/* Whether hy_cpu_matmul_multi can run the n weights together: the decode paths (q_dot,
 * q_row_tokens) of one activation format, one slab, and every weight's prepared
 * activations fitting xq_aux beside the others'. */
static bool multi_fits(const struct hy_cpu_ctx *c, int n, const struct hy_weight *const w[], int T)
{
    if (n < 1 || n > HY_CPU_MULTI_MAX || T < 1 || T >= PACK_MIN_TOKENS)
        return false;
    int64_t cols = w[0]->cols;
    const struct hy_cpu_mm_kernels *k0 = &c->k.mm[w[0]->dtype];
    size_t aux = 0;
    for (int i = 0; i < n; i++) {
        HY_ASSERT(w[i]->dtype >= 0 && w[i]->dtype < HY_DTYPE_COUNT);
        const struct hy_cpu_mm_kernels *k = &c->k.mm[w[i]->dtype];
        int xb = k->xq_block ? k->xq_block : HY_CPU_XQ_BLOCK;
        if (!k->q_dot || w[i]->cols != cols || w[i]->rows < 1 || cols % xb != 0 ||
            xb != (k0->xq_block ? k0->xq_block : HY_CPU_XQ_BLOCK))
            return false;
        aux += aux_bytes(k, cols, T);
    }
    return (int64_t)T * cols <= HY_CPU_XQ_ELEMS && aux <= HY_CPU_AUX_BYTES;
}

void hy_cpu_matmul_multi(struct hy_cpu_ctx *c, int n, float *const out[], const float *x,
                         const struct hy_weight *const w[], int T)
{
    if (!multi_fits(c, n, w, T)) {
        for (int i = 0; i < n; i++)
            hy_cpu_matmul(c, out[i], x, w[i], T);
        return;
    }
    int64_t cols = w[0]->cols;
    const struct hy_cpu_mm_kernels *k0 = &c->k.mm[w[0]->dtype];
    hy_cpu_quantize_rows(c, x, T, cols, k0->xq_block ? k0->xq_block : HY_CPU_XQ_BLOCK);
    struct multi_job m = {.n = n};
    unsigned char *aux = c->xq_aux;
    bool half_sums = false;
    for (int i = 0; i < n; i++) {
        const struct hy_cpu_mm_kernels *k = &c->k.mm[w[i]->dtype];
        struct mm_job *j = &m.j[i];
        *j = (struct mm_job){
            .k = k,
            .out = out[i],
            .xq = c,
            .w = w[i]->data,
            .row_bytes = hy_dtype_row_bytes(w[i]->dtype, cols),
            .chunk_bytes = hy_dtype_row_bytes(w[i]->dtype, CHUNK_COLS),
            .rows = w[i]->rows,
            .cols = cols,
            .T = T,
            .gs = c->xq_g,
        };
        j->block_rows = (int64_t)(BLOCK_BYTES / j->chunk_bytes) & ~(int64_t)3;
        for (int p = 0; p < i && !j->aux; p++) /* a dtype's form made once */
            if (w[p]->dtype == w[i]->dtype)
                j->aux = m.j[p].aux;
        if (!j->aux) {
            prep_tokens(j, aux);
            aux += aux_bytes(k, cols, T);
        }
        m.fn[i] = k->q_pack && T > 1 ? row_tokens_range : mm_range; /* as hy_cpu_matmul */
        half_sums |= k->q_pack && T > 1 && k->q_row_tokens;
        m.g0[i + 1] = m.g0[i] + (w[i]->rows + 3) / 4;
    }
    for (int t = 0; t < T && half_sums; t++) {
        struct hy_cpu_xq xt = xq_token(&m.j[0], t, 0);
        hy_cpu_xq_half_sums(c->xq_g + t * (cols / 128), &xt, cols);
    }
    hy_cpu_pool_for_balanced(c->pool, m.g0[n], MIN_GROUPS_DYN, 0, multi_range, &m);
}
