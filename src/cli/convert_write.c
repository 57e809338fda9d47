/* convert_write.c: streaming a GGUF file's tensors from their sources (convert.h). Each
 * tensor goes out in chunks of whole rows of at most HY_CONVERT_CHUNK output bytes; the rows
 * of a chunk are made (read and converted, or generated) and quantized on a thread pool of
 * every CPU, each thread writing its own rows of the chunk buffer, then the chunk is written
 * in order. Memory: the chunk plus a row of floats and of the rounded dtype per thread. */
#include "cli/convert.h"

#include "core/clock.h"
#include "core/globals.h"
#include "core/log.h"
#include "core/threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct job {
    const struct hy_convert_item *it;
    int64_t row0;     /* first row of the chunk, counted over all parts */
    unsigned char *out;
    size_t row_bytes; /* of the item's type */
    float **f;        /* [thread] cols floats */
    void **raw;       /* [thread] a row in the part's dtype */
};

/* Row r (of the stacked parts) as float32 into f; the generated values rounded to the
 * part's dtype through raw, as a checkpoint stores them. */
static void make_row(const struct hy_convert_part *p, int64_t r, float *f, void *raw)
{
    const size_t cols = (size_t)p->cols;
    if (p->data) {
        hy_dtype_to_f32(f, (const char *)p->data + (size_t)r * hy_dtype_row_bytes(p->dtype,
                                                                                   p->cols),
                        p->dtype, cols);
        return;
    }
    cli_mk_gen_values(&p->gen, (uint64_t)r * cols, f, cols);
    if (p->dtype != HY_DTYPE_F32) {
        hy_dtype_from_f32(raw, f, p->dtype, cols);
        hy_dtype_to_f32(f, raw, p->dtype, cols);
    }
}

static void rows_fn(void *ctx, int64_t b, int64_t e, int tid)
{
    const struct job *j = ctx;
    const struct hy_convert_item *it = j->it;
    const int dt = hy_ggml_to_dtype(it->type);
    for (int64_t i = b; i < e; i++) {
        const int64_t r = j->row0 + i;
        const struct hy_convert_part *p = &it->parts[r / it->parts[0].rows];
        const int64_t pr = r % it->parts[0].rows;
        unsigned char *dst = j->out + (size_t)i * j->row_bytes;
        if (p->data && p->dtype == (enum hy_dtype)dt) { /* same type: the bytes as stored */
            memcpy(dst, (const char *)p->data + (size_t)pr * j->row_bytes, j->row_bytes);
            continue;
        }
        make_row(p, pr, j->f[tid], j->raw[tid]);
        hy_dtype_from_f32(dst, j->f[tid], (enum hy_dtype)dt, (size_t)p->cols);
    }
}

struct progress {
    const char *who;
    bool tty;
    uint64_t done, total; /* output bytes */
    double t0;
};

static int layer_of(const char *name)
{
    int layer = -1;
    return sscanf(name, "blk.%d.", &layer) == 1 ? layer : -1;
}

/* After item i: on a terminal a redrawn line; else a line when a layer (or the tensors
 * before the layers) is complete. */
static void report(const struct progress *pg, const struct hy_convert_item *it, int i, int n)
{
    if (hy_log_level < HY_LOG_INFO)
        return;
    const double s = hy_clock_now() - pg->t0, gb = (double)pg->done / 1e9;
    if (pg->tty) {
        fprintf(stderr, "\r%s: [%d/%d] %-28s %-5s %6.2f GB %5.1f s", pg->who, i + 1, n,
                it[i].name, hy_ggml_type_name(it[i].type), gb, s);
        return;
    }
    const int layer = layer_of(it[i].name);
    if (i + 1 < n && layer_of(it[i + 1].name) == layer)
        return;
    char what[32];
    snprintf(what, sizeof what, layer < 0 ? "outside the layers" : "blk.%d", layer);
    fprintf(stderr, "%s: %s written: %.2f of %.2f GB (%.0f%%) in %.1f s, %.2f GB/s\n", pg->who,
            what, gb, (double)pg->total / 1e9,
            100.0 * (double)pg->done / (double)(pg->total ? pg->total : 1), s,
            s > 0 ? gb / s : 0.0);
}

static hy_status write_item(struct hy_gguf_w *w, struct hy_pool *pool, struct job *j,
                            struct hy_err *err)
{
    const struct hy_convert_item *it = j->it;
    const int64_t rows = it->parts[0].rows * it->n_parts;
    int64_t per = (int64_t)(HY_CONVERT_CHUNK / j->row_bytes);
    per = per < 1 ? 1 : per;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        const int64_t m = rows - r0 < per ? rows - r0 : per;
        j->row0 = r0;
        hy_pool_for(pool, m, 16, rows_fn, j);
        hy_status s = hy_gguf_w_data(w, j->out, (size_t)m * j->row_bytes, err);
        if (s)
            return s;
    }
    return HY_OK;
}

static hy_status declare(struct hy_gguf_w *w, const struct hy_convert_item *it, int n,
                         uint64_t *total, int64_t *maxc, struct hy_err *err)
{
    hy_status s = HY_OK;
    for (int i = 0; i < n && !s; i++) {
        HY_ASSERT(it[i].n_parts >= 1 && hy_ggml_to_dtype(it[i].type) >= 0);
        *maxc = (int64_t)it[i].ne[0] > *maxc ? (int64_t)it[i].ne[0] : *maxc;
        uint64_t e = it[i].ne[0] * it[i].ne[1] * (it[i].n_dims == 3 ? it[i].ne[2] : 1);
        *total += hy_ggml_nbytes(it[i].type, e);
        s = hy_gguf_w_tensor(w, it[i].name, it[i].type, it[i].n_dims, it[i].ne, err);
    }
    return s ? s : hy_gguf_w_begin_data(w, err);
}

hy_status hy_convert_write_items(struct hy_gguf_w *w, const struct hy_convert_item *it, int n,
                                 const char *who, struct hy_err *err)
{
    struct progress pg = {who, isatty(STDERR_FILENO) != 0, 0, 0, hy_clock_now()};
    int64_t maxc = 1;
    hy_status s = declare(w, it, n, &pg.total, &maxc, err);
    struct hy_pool *pool = NULL;
    if (!s)
        s = hy_pool_create(&pool, 0, err);
    const int nt = hy_pool_size(pool);
    struct job j = {0};
    j.f = calloc((size_t)nt, sizeof *j.f);
    j.raw = calloc((size_t)nt, sizeof *j.raw);
    size_t max_rb = 0;
    for (int i = 0; i < n; i++) {
        size_t rb = hy_ggml_nbytes(it[i].type, it[i].ne[0]);
        max_rb = rb > max_rb ? rb : max_rb;
    }
    j.out = malloc(HY_CONVERT_CHUNK > max_rb ? HY_CONVERT_CHUNK : max_rb);
    bool ok = j.f && j.raw && j.out;
    for (int t = 0; ok && t < nt; t++)
        ok = (j.f[t] = malloc((size_t)maxc * sizeof(float))) &&
             (j.raw[t] = malloc((size_t)maxc * sizeof(float)));
    if (!s && !ok)
        s = hy_err_set(err, HY_E_NOMEM, "out of memory for the conversion buffers");
    for (int i = 0; i < n && !s; i++) {
        j.it = &it[i];
        j.row_bytes = hy_ggml_nbytes(it[i].type, it[i].ne[0]);
        s = write_item(w, pool, &j, err);
        pg.done += j.row_bytes * (size_t)(it[i].parts[0].rows * it[i].n_parts);
        if (!s)
            report(&pg, it, i, n);
    }
    if (pg.tty && hy_log_level >= HY_LOG_INFO)
        fprintf(stderr, "\n");
    for (int t = 0; t < nt && j.f && j.raw; t++) {
        free(j.f[t]);
        free(j.raw[t]);
    }
    free(j.f);
    free(j.raw);
    free(j.out);
    hy_pool_destroy(pool);
    return s;
}

hy_status hy_convert_write_file(const char *path, hy_convert_meta_fn meta, const char *name,
                                const struct hy_convert_src *src, const struct hy_tok *tok,
                                enum hy_convert_type type, const struct hy_convert_item *it,
                                int n, const char *who, struct hy_err *err)
{
    struct hy_gguf_w *w = NULL;
    hy_status s = hy_gguf_w_open(&w, path, err);
    if (s)
        return s;
    s = meta(w, src->cfg, name, type, err);
    if (!s && tok)
        s = hy_convert_tokenizer_meta(w, src, tok, err);
    if (!s)
        s = hy_convert_write_items(w, it, n, who, err);
    if (s) {
        hy_gguf_w_abort(w);
        return s;
    }
    return hy_gguf_w_finish(w, err);
}
