/* cpu_matmul.c: the CPU backend's matmul alone, per weight dtype, at the 1.8B model's
 * shapes: one layer's seven projections (q 2048x2048, k/v 512x2048, o 2048x2048, gate/up
 * 6144x2048, down 2048x6144) times `layers`, plus the head (120818x2048), as one decode
 * token (T=1) or a prompt of T tokens reads them (the head for the prompt's last token
 * only, as the engine computes logits). Prints the weight bytes a token reads,
 * the time, the bandwidth it amounts to and the tokens/s of the matmuls alone.
 * usage: cpu_matmul [dtype=Q4_G128] [T=1] [threads=all] [layers=4] [reps=5]
 * dtype: BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q4_G128. Weights are random (quantized once). */
#include "backend/cpu/cpu.h"
#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of all the process's threads: on a shared machine, the work done apart from
 * the time other processes held the cores (for comparing kernels; spinning counts). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_dtype(const char *s)
{
    static const struct {
        const char *n;
        enum hy_dtype t;
    } names[] = {{"BF16", HY_DTYPE_BF16}, {"Q8_0", HY_DTYPE_Q8_0}, {"Q4_0", HY_DTYPE_Q4_0},
                 {"Q4_K", HY_DTYPE_Q4_K}, {"Q6_K", HY_DTYPE_Q6_K}, {"Q4_G128", HY_DTYPE_Q4_G128}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].n))
            return (int)names[i].t;
    return -1;
}

int main(int argc, char **argv)
{
    int dt = parse_dtype(argc > 1 ? argv[1] : "Q4_G128");
    int T = argc > 2 ? atoi(argv[2]) : 1, threads = argc > 3 ? atoi(argv[3]) : 0;
    int layers = argc > 4 ? atoi(argv[4]) : 4, reps = argc > 5 ? atoi(argv[5]) : 5;
    if (dt < 0 || T < 1 || T > 512 || layers < 1 || layers > 64 || reps < 1) {
        fprintf(stderr, "usage: cpu_matmul [dtype=Q4_G128] [T=1] [threads=all] [layers=4] [reps=5]\n");
        return 2;
    }
    static const int64_t shapes[8][2] = {{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048},
                                         {6144, 2048}, {6144, 2048}, {2048, 6144}, {120818, 2048}};
    int nw = 7 * layers + 1;
    struct hy_weight *w = calloc((size_t)nw, sizeof *w);
    struct hy_backend *be;
    if (!w || hy_cpu_backend_create(&be, threads, NULL) != HY_OK)
        return 1;
    size_t bytes = 0;
    float *row = malloc(6144 * sizeof *row);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < nw; i++) {
        const int64_t *sh = shapes[i == nw - 1 ? 7 : i % 7];
        size_t rb = hy_dtype_row_bytes((enum hy_dtype)dt, sh[1]);
        unsigned char *d = be->i->alloc(be, rb * (size_t)sh[0]); /* as the loader's */
        if (!d)
            return 1;
        for (int64_t r = 0; r < sh[0]; r++) {
            for (int64_t c = 0; c < sh[1]; c++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                row[c] = (float)((int64_t)(s >> 40) - (1 << 23)) / (float)(1 << 23);
            }
            hy_dtype_from_f32(d + r * rb, row, (enum hy_dtype)dt, (size_t)sh[1]);
        }
        w[i] = (struct hy_weight){(enum hy_dtype)dt, sh[0], sh[1], d};
        bytes += rb * (size_t)sh[0];
    }
    float *x = malloc((size_t)T * 6144 * sizeof *x), *out = malloc((size_t)T * 120818 * sizeof *out);
    for (int64_t i = 0; i < (int64_t)T * 6144; i++)
        x[i] = (float)(i % 97) / 97.0f - 0.5f;
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps + 1; r++) { /* the first pass warms up */
        double t0 = now(), c0 = cpu_now();
        for (int i = 0; i < nw; i++)
            be->i->matmul(be, out, x, &w[i], i == nw - 1 ? 1 : T);
        double t = now() - t0, c = cpu_now() - c0;
        if (r > 0 && t < best)
            best = t;
        if (r > 0 && c < best_cpu)
            best_cpu = c;
    }
    printf("%s T=%d threads=%d layers=%d: %.1f MB of weights in %.2f ms: %.2f GB/s, %.1f tok/s "
           "(matmuls alone; process CPU time %.2f ms)\n",
           hy_dtype_name((enum hy_dtype)dt), T, hy_cpu_backend_threads(be), layers, bytes / 1e6,
           best * 1e3, bytes / best / 1e9, T / best, best_cpu * 1e3);
    for (int i = 0; i < nw; i++)
        be->i->free(be, (void *)w[i].data);
    free(w);
    free(row);
    free(x);
    free(out);
    be->i->destroy(be);
    return 0;
}
