/* cuda_matmul.cu: times the CUDA backend's bf16 matmuls on the 7B shapes: the default path
 * (hy_cuda_matmul_bf16: weight-streaming GEMV up to 8 rows, cuBLAS above) against the
 * batch-invariant one (hy_cuda_bimm), at several token counts, and cuBLAS alone (a copy of
 * matmul.cu without its GEMV); and the same shapes with block-scaled fp8 weights
 * (hy_cuda_matmul_fp8b: fp8b.h, 1 byte a weight). Prints microseconds a call,
 * the weight bytes a second and the TFLOP/s. Not a test: built with the CUDA backend as
 * build/bench/cuda_matmul, run by hand or by bench/gpu_*.sh on the GPU machine. */
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/fp8b.h"

/* a second copy of the default matmul that never takes the GEMV: cuBLAS at every T */
#define GEMV_MAX_T 0
#define hy_cuda_matmul_bf16 bench_matmul_cublas
#define hy_cuda_matmul_f32 bench_matmul_f32_unused
#define hy_cuda_matmul_bf16_fused bench_matmul_fused_unused
#include "../src/backend/cuda/matmul.cu"
#undef hy_cuda_matmul_bf16
#undef hy_cuda_matmul_f32
#undef hy_cuda_matmul_bf16_fused

#include <stdio.h>
#include <stdlib.h>

#define REPS 20

static float time_it(cudaStream_t st, void (*fn)(void *), void *arg)
{
    cudaEvent_t a, b;
    HY_CUDA_CHECK(cudaEventCreate(&a));
    HY_CUDA_CHECK(cudaEventCreate(&b));
    fn(arg); /* warm-up */
    HY_CUDA_CHECK(cudaEventRecord(a, st));
    for (int i = 0; i < REPS; i++)
        fn(arg);
    HY_CUDA_CHECK(cudaEventRecord(b, st));
    HY_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    HY_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    HY_CUDA_CHECK(cudaEventDestroy(a));
    HY_CUDA_CHECK(cudaEventDestroy(b));
    return ms * 1000.0f / REPS;
}

struct call {
    cudaStream_t st;
    cublasHandle_t blas;
    float *out, *x, *cbuf, *part;
    uint16_t *w, *xbf;
    unsigned char *w8; /* fp8b.h's layout of rows x cols (any shape: every byte is valid) */
    size_t xbf_cap, cbuf_cap, part_cap;
    int64_t rows, cols;
    int T;
};

static void run_default(void *p)
{
    struct call *c = (struct call *)p;
    const struct hy_cuda_mm_scratch s = {c->xbf, c->xbf_cap, NULL, 0, c->cbuf, c->cbuf_cap};
    hy_cuda_matmul_bf16(c->st, c->blas, c->out, c->x, c->w, c->rows, c->cols, c->T, true, false,
                        &s);
}

static void run_cublas(void *p)
{
    struct call *c = (struct call *)p;
    const struct hy_cuda_mm_scratch s = {c->xbf, c->xbf_cap, NULL, 0, c->cbuf, c->cbuf_cap};
    bench_matmul_cublas(c->st, c->blas, c->out, c->x, c->w, c->rows, c->cols, c->T, true, false,
                        &s);
}

static void run_bimm(void *p)
{
    struct call *c = (struct call *)p;
    hy_cuda_bimm(c->st, c->out, c->x, c->w, c->rows, c->cols, c->T, c->xbf,
                 c->xbf_cap * sizeof(uint16_t), c->part, c->part_cap);
}

static void run_fp8b(void *p)
{
    struct call *c = (struct call *)p;
    const struct hy_cuda_mm_scratch s = {c->xbf, c->xbf_cap, NULL, 0, c->cbuf, c->cbuf_cap};
    hy_cuda_matmul_fp8b(c->st, c->blas, c->out, c->x, c->w8, c->rows, c->cols, c->T, false, &s);
}

/* Bytes that are e4m3 codes of +-[0.5, 2) and, read 4 at a time, finite float32
 * scales: so the fp8 layout of any shape can lie over the same buffer. */
__global__ void fill8(unsigned char *w, int64_t n, uint32_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        w[i] = (unsigned char)(0x30u + (h >> 20 & 0xfu)) | (unsigned char)(h >> 24 & 0x80u);
    }
}

__global__ void fill(uint16_t *w, int64_t n, uint32_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        w[i] = (uint16_t)(0x3c00u + (h >> 20 & 0x3ff)) ^ (uint16_t)(h & 0x8000u); /* +-[2^-7, 2^-6) */
    }
}

int main(void)
{
    static const int64_t shapes[][2] = {
        {4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}, {128168, 4096},
        {6144, 4096}, {28672, 4096}};
    static const char *names[] = {"q/o", "k/v", "gate/up", "down", "head", "q+k+v fused",
                                  "gate+up fused"};
    static const int Ts[] = {1, 2, 4, 5, 8, 16, 64, 256, 2048};
    struct call c;
    const int64_t maxw = 128168 * 4096, maxx = 2048 * 14336, maxo = 2048 * (int64_t)128168;
    HY_CUDA_CHECK(cudaStreamCreate(&c.st));
    HY_CUBLAS_CHECK(cublasCreate(&c.blas));
    HY_CUBLAS_CHECK(cublasSetStream(c.blas, c.st));
    c.xbf_cap = (size_t)32 << 20;
    c.cbuf_cap = (size_t)16 << 20;
    c.part_cap = HY_CUDA_BIMM_PART_FLOATS;
    HY_CUDA_CHECK(cudaMalloc(&c.w, maxw * 2));
    HY_CUDA_CHECK(cudaMalloc(&c.w8, hy_cuda_fp8b_bytes(128168, 4096)));
    HY_CUDA_CHECK(cudaMalloc(&c.x, maxx * 4));
    HY_CUDA_CHECK(cudaMalloc(&c.out, maxo * 4));
    HY_CUDA_CHECK(cudaMalloc(&c.xbf, c.xbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc(&c.cbuf, c.cbuf_cap * 4));
    HY_CUDA_CHECK(cudaMalloc(&c.part, c.part_cap * 4));
    fill<<<4096, 256, 0, c.st>>>(c.w, maxw, 1);
    fill8<<<4096, 256, 0, c.st>>>(c.w8, (int64_t)hy_cuda_fp8b_bytes(128168, 4096), 3);
    fill<<<4096, 256, 0, c.st>>>((uint16_t *)c.x, maxx * 2, 2); /* x: any finite floats */
    HY_CUDA_CHECK(cudaStreamSynchronize(c.st));
    printf("| shape | rows x cols | T | default us | cuBLAS us | bimm us | fp8b us | default GB/s "
           "| bimm GB/s | fp8b GB/s | default TFLOP/s | bimm TFLOP/s | fp8b TFLOP/s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < 7; s++)
        for (int ti = 0; ti < 9; ti++) {
            c.rows = shapes[s][0];
            c.cols = shapes[s][1];
            c.T = Ts[ti];
            if (s == 4 && c.T > 256)
                continue;
            float d = time_it(c.st, run_default, &c), b = time_it(c.st, run_bimm, &c);
            float cb = time_it(c.st, run_cublas, &c), f8 = time_it(c.st, run_fp8b, &c);
            double bytes = (double)c.rows * c.cols * 2, fl = 2.0 * c.rows * c.cols * c.T;
            printf("| %s | %lldx%lld | %d | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | "
                   "%.1f | %.1f | %.1f |\n", names[s], (long long)c.rows, (long long)c.cols, c.T,
                   d, cb, b, f8, bytes / d / 1e3, bytes / b / 1e3, bytes / 2 / f8 / 1e3,
                   fl / d / 1e6, fl / b / 1e6, fl / f8 / 1e6);
        }
    return 0;
}
