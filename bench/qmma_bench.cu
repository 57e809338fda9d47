/* qmma_bench.cu: times the tensor-core kernel for quantized weights (qmma.h) against the
 * chunked dequantize + cuBLAS path it replaces (hy_cuda_matmul_q_chunked), and the bf16
 * cuBLAS GEMM of the same shape (what the bf16 engine runs), on the 7B shapes (q/o
 * 4096x4096, k/v 1024x4096, gate/up 14336x4096, down 4096x14336) for Q8_0, Q4_0 and
 * Q4_G128. For each: microseconds a call (x already in bf16 for the kernel and cuBLAS bf16;
 * the chunked path converts x itself), the quantized weight bytes a second, and the kernel
 * with 1, 2, 4 and 8 K splits beside the automatic choice (to tune hy_cuda_qmma_splits).
 * Weights cycle through copies larger than L2, as in a forward pass. Built and run by hand
 * on the GPU machine, from the repository root:
 *   nvcc -O3 -arch=sm_90 -Isrc bench/qmma_bench.cu src/backend/cuda/qmma.cu \
 *       src/backend/cuda/qmatmul.cu src/backend/cuda/qmatmul_k.cu \
 *       src/backend/cuda/dequant_mm.cu src/backend/cuda/elementwise.cu -lcublas \
 *       -o /tmp/qmma_bench && /tmp/qmma_bench [T...]
 * (default T = 64). */
#include <stdio.h>
#include <stdlib.h>
#include "backend/cuda/qmatmul.h"
#include "backend/cuda/qmma.h"

extern "C" void hy_cuda_fail(const char *file, int line, const char *expr, const char *what)
{
    fprintf(stderr, "%s:%d: CUDA error: %s (%s)\n", file, line, what, expr);
    abort();
}

struct ctx {
    cudaStream_t st;
    cublasHandle_t blas;
    cudaEvent_t e0, e1;
    unsigned char *w;
    size_t wmax;
    float *x, *out, *cbuf;
    uint16_t *xbf, *wbf;
    size_t xbf_cap, wbf_cap, cbuf_cap;
};

/* what: 0 kernel (splits; 0 = automatic), 1 chunked, 2 cuBLAS bf16 (W read as bf16). */
static void call(struct ctx *c, int what, int qt, int64_t rows, int64_t cols, int T, int splits,
                 const unsigned char *w, int n_sm)
{
    const float one = 1.0f, zero = 0.0f;
    if (what == 0)
        hy_cuda_qmma(c->st, c->out, c->xbf, w, qt, rows, cols, T,
                     splits ? splits : hy_cuda_qmma_splits(rows, cols, T, c->cbuf_cap, n_sm),
                     c->cbuf);
    else if (what == 1) {
        const struct hy_cuda_mm_scratch s = {c->xbf, c->xbf_cap, c->wbf, c->wbf_cap, c->cbuf,
                                             c->cbuf_cap};
        hy_cuda_matmul_q_chunked(c->st, c->blas, c->out, c->x, w, qt, rows, cols, T, false, &s);
    } else
        HY_CUBLAS_CHECK(cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, T, (int)cols,
                                     &one, w, CUDA_R_16BF, (int)cols, c->xbf, CUDA_R_16BF,
                                     (int)cols, &zero, c->out, CUDA_R_32F, (int)rows,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static double time_us(struct ctx *c, int what, int qt, int64_t rows, int64_t cols, int T,
                      int splits, size_t bytes, int n_sm)
{
    const size_t stride = (bytes + 255) & ~(size_t)255, ncopies = c->wmax / stride;
    const int iters = 20;
    for (int i = 0; i < 3; i++)
        call(c, what, qt, rows, cols, T, splits, c->w + (i % ncopies) * stride, n_sm);
    HY_CUDA_CHECK(cudaEventRecord(c->e0, c->st));
    for (int i = 0; i < iters; i++)
        call(c, what, qt, rows, cols, T, splits, c->w + (i % ncopies) * stride, n_sm);
    HY_CUDA_CHECK(cudaEventRecord(c->e1, c->st));
    HY_CUDA_CHECK(cudaEventSynchronize(c->e1));
    float ms;
    HY_CUDA_CHECK(cudaEventElapsedTime(&ms, c->e0, c->e1));
    return ms * 1e3 / iters;
}

int main(int argc, char **argv)
{
    static const int64_t shapes[][2] = {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}};
    static const struct {
        const char *name;
        int qt;
    } types[] = {{"Q8_0", HY_CUDA_Q8_0}, {"Q4_0", HY_CUDA_Q4_0}, {"Q4_G128", HY_CUDA_Q4_G128}};
    struct ctx c;
    int dev = 0, n_sm = 0;
    HY_CUDA_CHECK(cudaGetDevice(&dev));
    HY_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
    c.wmax = (size_t)14336 * 4096 * 2 * 4; /* 4 bf16 copies of the largest: > L2 */
    c.xbf_cap = (size_t)32 << 20;
    c.wbf_cap = (size_t)16 << 20;
    c.cbuf_cap = (size_t)16 << 20;
    HY_CUDA_CHECK(cudaMalloc((void **)&c.w, c.wmax));
    HY_CUDA_CHECK(cudaMalloc((void **)&c.x, (size_t)2048 * 14336 * 4));
    HY_CUDA_CHECK(cudaMalloc((void **)&c.out, (size_t)2048 * 14336 * 4));
    HY_CUDA_CHECK(cudaMalloc((void **)&c.xbf, c.xbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc((void **)&c.wbf, c.wbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc((void **)&c.cbuf, c.cbuf_cap * 4));
    HY_CUDA_CHECK(cudaMemset(c.w, 0x3a, c.wmax)); /* fp16 scales 0x3a3a ~ 0.78; bf16 ~ 7e-4 */
    HY_CUDA_CHECK(cudaMemset(c.x, 0x3f, (size_t)2048 * 14336 * 4));
    HY_CUDA_CHECK(cudaMemset(c.xbf, 0x3f, c.xbf_cap * 2));
    HY_CUDA_CHECK(cudaStreamCreate(&c.st));
    HY_CUBLAS_CHECK(cublasCreate(&c.blas));
    HY_CUBLAS_CHECK(cublasSetStream(c.blas, c.st));
    HY_CUDA_CHECK(cudaEventCreate(&c.e0));
    HY_CUDA_CHECK(cudaEventCreate(&c.e1));
    printf("%d SMs; us a call (GB/s of quantized weights); kernel columns: auto splits, then "
           "splits 1 2 4 8\n",
           n_sm);
    for (int a = 1; a < argc || a == 1; a++) {
        const int T = argc > 1 ? atoi(argv[a]) : 64;
        if (T < 1 || T > 2048)
            continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int64_t rows = shapes[s][0], cols = shapes[s][1];
            double bf = time_us(&c, 2, 0, rows, cols, T, 0, (size_t)(rows * cols * 2), n_sm);
            printf("T=%4d %5lldx%5lld  cuBLAS bf16 %8.1f us\n", T, (long long)rows, (long long)cols,
                   bf);
            for (size_t ty = 0; ty < sizeof types / sizeof types[0]; ty++) {
                const int qt = types[ty].qt;
                const size_t n = hy_cuda_q_bytes(qt, rows, cols);
                double ch = time_us(&c, 1, qt, rows, cols, T, 0, n, n_sm);
                double k = time_us(&c, 0, qt, rows, cols, T, 0, n, n_sm);
                printf("  %-7s chunked %8.1f us (%5.0f GB/s)  kernel %8.1f us (%5.0f GB/s, %d "
                       "splits) |",
                       types[ty].name, ch, n / (ch * 1e3), k, n / (k * 1e3),
                       hy_cuda_qmma_splits(rows, cols, T, c.cbuf_cap, n_sm));
                for (int sp = 1; sp <= 8; sp *= 2)
                    printf(" %7.1f", time_us(&c, 0, qt, rows, cols, T, sp, n, n_sm));
                printf("\n");
            }
        }
    }
    return 0;
}
