/* matmul.c: out[t, r] = x[t, :] · W[r, :] on the thread pool.
 * Threads split the output rows into contiguous ranges (each weight byte is read by one
 * thread). Within a range, rows are walked in blocks small enough to stay in L2; for each
 * block, tokens go four at a time through the toks4 kernel (one weight row against four
 * activations, so at prefill each weight row is converted once per four tokens and the
 * block is fetched from DRAM once for all T tokens); leftover tokens, and decode (T = 1),
 * use rows4 (four rows against one activation: four independent weight streams per
 * thread, which is what keeps a memory-bound decode at full bandwidth). */
#include "backend/cpu/cpu_impl.h"

/* Bytes of weight rows per block: fits L2 with room for the activations. */
#define BLOCK_BYTES (192 * 1024)
/* Fewest rows a thread gets; below this the call runs on fewer threads. */
#define MIN_ROWS_PER_THREAD 8

struct mm_job {
    const struct hy_cpu_mm_kernels *k;
    float *out;             /* [T, rows] */
    const float *x;         /* [T, cols] */
    const unsigned char *w; /* [rows, cols] of the weight's dtype */
    size_t row_bytes;
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

static void mm_range(void *ctx, int64_t r0, int64_t r1, int tid)
{
    const struct mm_job *j = ctx;
    (void)tid;
    if (j->T == 1) { /* decode: one straight pass, nothing to reuse */
        rows_one_token(j, 0, r0, r1);
        return;
    }
    for (int64_t b0 = r0; b0 < r1; b0 += j->block_rows) {
        int64_t b1 = b0 + j->block_rows < r1 ? b0 + j->block_rows : r1;
        int t = 0;
        for (; t + 4 <= j->T; t += 4)
            rows_four_tokens(j, t, b0, b1);
        for (; t < j->T; t++)
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
        .row_bytes = (size_t)w->cols * hy_dtype_size(w->dtype),
        .rows = w->rows,
        .cols = w->cols,
        .T = T,
    };
    j.block_rows = j.row_bytes ? (int64_t)(BLOCK_BYTES / j.row_bytes) & ~(int64_t)3 : 0;
    if (j.block_rows < 4)
        j.block_rows = 4;
    if (T == 0 || w->rows == 0)
        return;
    hy_pool_for(c->pool, w->rows, MIN_ROWS_PER_THREAD, mm_range, &j);
}
