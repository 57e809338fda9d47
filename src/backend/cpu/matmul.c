/* matmul.c: out[t, r] = x[t, :] · W[r, :] on the thread pool.
 * Threads split the output rows into contiguous ranges of whole 4-row groups (each weight
 * byte is read by one thread; results are the same bit for bit for any thread count).
 * Decode (T = 1) is memory-bound: one straight pass with the rows4 kernel, four rows
 * against one activation, four independent weight streams per thread.
 * Prefill (T > 1) is compute-bound: rows are walked in blocks and columns in chunks small
 * enough that a block's chunk of weights stays in L2 and four tokens' chunk of activations
 * in L1; every (4 tokens x 4 rows) tile of the block runs in registers (tile4x4), each
 * converted weight vector feeding four tokens. The weights are fetched from memory once
 * for all T tokens. Leftover rows (block % 4) go through toks4 (one row, four tokens),
 * leftover tokens (T % 4) through rows4. */
#include "backend/cpu/cpu_impl.h"

/* Columns per chunk: four tokens' activations (16 KiB) stay in L1. */
#define CHUNK_COLS 1024
/* Weight bytes of one block's column chunk: stays in L2 while every token passes. */
#define BLOCK_BYTES (128 * 1024)
/* Fewest 4-row groups a thread gets; below this the call runs on fewer threads. */
#define MIN_GROUPS_PER_THREAD 2
_Static_assert(CHUNK_COLS % HY_Q8_0_BLOCK == 0, "a column chunk must start on a Q8_0 block");

struct mm_job {
    const struct hy_cpu_mm_kernels *k;
    float *out;             /* [T, rows] */
    const float *x;         /* [T, cols] */
    const unsigned char *w; /* [rows, cols] of the weight's dtype */
    size_t row_bytes, chunk_bytes; /* bytes of a row, of CHUNK_COLS columns of a row */
    int64_t rows, cols;
    int T;
    int64_t block_rows;
};

/* out[t, r] for r in [r0, r1) and one token t. */
static void rows_one_token(const struct mm_job *j, int t, int64_t r0, int64_t r1)
{
    const float *xt = j->x + (int64_t)t * j->cols;
    float *ot = j->out + (int64_t)t * j->rows;
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4)
        j->k->rows4(ot + r, xt, j->w + (size_t)r * j->row_bytes, j->row_bytes, j->cols);
    for (; r < r1; r++)
        ot[r] = j->k->dot(xt, j->w + (size_t)r * j->row_bytes, j->cols);
}

/* out[t0..t0+3, r] for r in [r0, r1). */
static void rows_four_tokens(const struct mm_job *j, int t0, int64_t r0, int64_t r1)
{
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
            const float *xt = j->x + (int64_t)t * j->cols + k0;
            float *ot = j->out + (int64_t)t * j->rows;
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

void hy_cpu_matmul(struct hy_cpu_ctx *c, float *out, const float *x, const struct hy_weight *w,
                   int T)
{
    HY_ASSERT(w->dtype >= 0 && w->dtype < HY_DTYPE_COUNT && T >= 0);
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
    hy_pool_for(c->pool, (w->rows + 3) / 4, MIN_GROUPS_PER_THREAD, mm_range, &j);
}
