/* ops_test_util.h: helpers shared by the CPU op tests (ops_test.c, fast_ops_test.c):
 * a seeded xorshift generator, test weights stored at a deliberately misaligned address
 * (as weights in an mmapped safetensors file may be), and the comparison helper.
 * Header-only, static functions: each test is one executable. */
#ifndef HY_BACKEND_CPU_OPS_TEST_UTIL_H
#define HY_BACKEND_CPU_OPS_TEST_UTIL_H

#include "backend/cpu/cpu.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unit roundoff of float32 (half an ulp of 1). */
#define U32 (1.0 / 16777216.0)

struct rng {
    uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* Uniform in [-amp, amp], never zero (and never tinier than amp/1000). */
static inline float rng_float(struct rng *r, float amp)
{
    for (;;) {
        double u = (double)(rng_next(r) >> 11) / 9007199254740992.0; /* [0, 1) */
        double v = (2.0 * u - 1.0) * amp;
        if (fabs(v) >= amp * 1e-3)
            return (float)v;
    }
}

static inline void rng_fill(struct rng *r, float *x, int64_t n, float amp)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = rng_float(r, amp);
}

static inline float *fmalloc(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p)
        abort();
    return p;
}

static inline double *dmalloc(int64_t n)
{
    double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p)
        abort();
    return p;
}

/* A test weight: data at an odd address inside buf; val[i] is element i as float. */
struct tweight {
    struct hy_weight w;
    unsigned char *buf;
    float *val;
};

/* Writes element i (value v rounded to the dtype) and records its exact float value. */
static inline void tweight_set(struct tweight *tw, int64_t i, float v)
{
    unsigned char *p = (unsigned char *)tw->w.data;
    if (tw->w.dtype == HY_DTYPE_F32) {
        memcpy(p + i * 4, &v, 4);
        tw->val[i] = v;
        return;
    }
    uint16_t h = tw->w.dtype == HY_DTYPE_BF16 ? hy_f32_to_bf16(v) : hy_f32_to_f16(v);
    memcpy(p + i * 2, &h, 2);
    tw->val[i] = tw->w.dtype == HY_DTYPE_BF16 ? hy_bf16_to_f32(h) : hy_f16_to_f32(h);
}

static inline void tweight_make(struct tweight *tw, struct rng *r, enum hy_dtype dt, int64_t rows,
                                int64_t cols, float amp)
{
    int64_t n = rows * cols;
    tw->buf = malloc((size_t)rows * hy_dtype_row_bytes(dt, cols) + 8);
    tw->val = fmalloc(n);
    if (!tw->buf)
        abort();
    tw->w = (struct hy_weight){dt, rows, cols, tw->buf + 1};
    if (dt != HY_DTYPE_F32 && dt != HY_DTYPE_F16 && dt != HY_DTYPE_BF16) {
        /* block types: random rows, quantized; val holds the dequantized values */
        size_t rb = hy_dtype_row_bytes(dt, cols);
        for (int64_t i = 0; i < n; i++)
            tw->val[i] = rng_float(r, amp);
        for (int64_t o = 0; o < rows; o++) {
            hy_dtype_from_f32(tw->buf + 1 + o * rb, tw->val + o * cols, dt, (size_t)cols);
            hy_dtype_to_f32(tw->val + o * cols, tw->buf + 1 + o * rb, dt, (size_t)cols);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++)
        tweight_set(tw, i, rng_float(r, amp));
}

static inline void tweight_free(struct tweight *tw)
{
    free(tw->buf);
    free(tw->val);
}

/* True if |got[i] - want[i]| <= bound[i] for every i (NaN fails). Unless quiet, reports
 * the worst element. Also tracks the worst ratio error/bound in *worst (if non-NULL). */
static inline bool close_all(const char *what, const float *got, const double *want,
                             const double *bound, int64_t n, bool quiet, double *worst)
{
    bool ok = true;
    int64_t wi = -1;
    double wr = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        double ratio = bound[i] > 0 ? e / bound[i] : (e > 0 ? INFINITY : 0.0);
        if (!(e <= bound[i]))
            ok = false;
        if (!(ratio <= wr)) {
            wr = ratio;
            wi = i;
        }
    }
    if (!ok && !quiet && wi >= 0)
        fprintf(stderr, "  %s: element %lld: got %.9g want %.9g (bound %.3g)\n", what,
                (long long)wi, got[wi], want[wi], bound[wi]);
    if (worst && wr > *worst)
        *worst = wr;
    return ok;
}

/* Same with want given as float and one relative-or-absolute bound per element:
 * |got - want| <= rel*|want| + abs_. */
static inline bool close_f(const char *what, const float *got, const float *want, int64_t n,
                           double rel, double abs_)
{
    double *w = dmalloc(n), *b = dmalloc(n);
    for (int64_t i = 0; i < n; i++) {
        w[i] = want[i];
        b[i] = rel * fabs((double)want[i]) + abs_;
    }
    bool ok = close_all(what, got, w, b, n, false, NULL);
    free(w);
    free(b);
    return ok;
}

/* A paged copy of contiguous KV rows kc [n, kvd] (and vc): block size bs, blocks placed
 * in a shuffled order among as many unused blocks filled with NaN, so attention that
 * ignores the block table, or reads a block it should not, gives wrong or NaN output.
 * blocks receives the table (ceil(n/bs) entries); the pools are malloc'ed [2*nb*bs, kvd]. */
static inline void paged_from_contig(struct rng *r, const float *kc, const float *vc, int n,
                                     int64_t kvd, int bs, float **kp, float **vp, int32_t *blocks)
{
    int nb = (n + bs - 1) / bs, total = 2 * nb;
    *kp = fmalloc((int64_t)total * bs * kvd);
    *vp = fmalloc((int64_t)total * bs * kvd);
    for (int64_t i = 0; i < (int64_t)total * bs * kvd; i++)
        (*kp)[i] = (*vp)[i] = NAN;
    int32_t perm[4096];
    for (int i = 0; i < total && i < 4096; i++)
        perm[i] = i;
    for (int i = total - 1; i > 0; i--) {
        int j = (int)(rng_next(r) % (uint64_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int b = 0; b < nb; b++) {
        blocks[b] = perm[b];
        int rows = n - b * bs < bs ? n - b * bs : bs;
        memcpy(*kp + (int64_t)perm[b] * bs * kvd, kc + (int64_t)b * bs * kvd,
               (size_t)(rows * kvd) * sizeof(float));
        memcpy(*vp + (int64_t)perm[b] * bs * kvd, vc + (int64_t)b * bs * kvd,
               (size_t)(rows * kvd) * sizeof(float));
    }
}

/* A backend's memory: alloc returns `align`-byte aligned blocks for any size (0 too),
 * and upload/download copy bytes both ways. Shared by the CPU and CUDA op tests. */
static inline void check_backend_memory(struct hy_backend *be, uintptr_t align)
{
    static const size_t sizes[] = {0, 1, 63, 64, 100, 1 << 20};
    for (int s = 0; s < 6; s++) {
        unsigned char *p = be->i->alloc(be, sizes[s]);
        CHECK(p != NULL && ((uintptr_t)p & (align - 1)) == 0);
        if (p && sizes[s] >= 4) {
            const char src[4] = "abc";
            char dst[4];
            be->i->upload(be, p, src, 4);
            be->i->download(be, dst, p, 4);
            CHECK(memcmp(dst, "abc", 4) == 0);
        }
        be->i->free(be, p);
    }
}

#endif
