/* topk.cu: the K best logits of each row, so that sampling needs K candidates per row from
 * the device instead of the whole vocabulary.
 * Order: by value descending, then by id ascending; NaN counts as -inf (the sampler's
 * rules). A candidate is one 64-bit key: the value mapped to an order-preserving uint32
 * in the high half and (UINT32_MAX - id) in the low half, so "larger key" is exactly
 * "better candidate" and the result is deterministic (no ties left to chance).
 * Stage 1: one block per (row, chunk of TOPK_CHUNK ids) sorts its chunk's keys in shared
 * memory (bitonic, descending) and writes the best K. Stage 2: one block per row sorts the
 * chunks' K-lists together and writes the best K as (value, id) pairs of 32-bit words
 * (struct hy_cand), best first. */
#include "backend/cuda/cuda_impl.h"

#include <math.h>

#define TOPK_CHUNK 2048 /* ids per stage-1 block (keys in 16 KiB of shared memory) */
#define TOPK_THREADS 512

__device__ __forceinline__ uint64_t make_key(float v, int32_t id)
{
    if (v != v)
        v = -INFINITY;
    uint32_t u = __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* order-preserving */
    return ((uint64_t)u << 32) | (uint64_t)(0xffffffffu - (uint32_t)id);
}

__device__ __forceinline__ void key_split(uint64_t k, float *v, int32_t *id)
{
    uint32_t u = (uint32_t)(k >> 32);
    u = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
    *v = __uint_as_float(u);
    *id = (int32_t)(0xffffffffu - (uint32_t)k);
}

/* Sorts key[0..n) descending, n a power of two, all threads of the block taking part. */
__device__ void bitonic_desc(uint64_t *key, int n)
{
    for (int size = 2; size <= n; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            __syncthreads();
            for (int i = threadIdx.x; i < n / 2; i += blockDim.x) {
                int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
                bool desc = (lo & size) == 0;
                uint64_t a = key[lo], b = key[hi];
                if ((a < b) == desc) {
                    key[lo] = b;
                    key[hi] = a;
                }
            }
        }
    }
    __syncthreads();
}

/* Stage 1: grid (n_chunks, rows). part[row][chunk][K] keys. Ids past the vocabulary get key
 * 0, which is below every real key. */
__global__ void __launch_bounds__(TOPK_THREADS)
    topk_chunk_kernel(uint64_t *part, const float *logits, int64_t vocab, int k)
{
    __shared__ uint64_t key[TOPK_CHUNK];
    const int64_t row = blockIdx.y, c0 = (int64_t)blockIdx.x * TOPK_CHUNK;
    const float *lr = logits + row * vocab;
    for (int i = threadIdx.x; i < TOPK_CHUNK; i += TOPK_THREADS) {
        int64_t id = c0 + i;
        key[i] = id < vocab ? make_key(lr[id], (int32_t)id) : 0;
    }
    bitonic_desc(key, TOPK_CHUNK);
    uint64_t *dst = part + (row * gridDim.x + blockIdx.x) * (int64_t)k;
    for (int i = threadIdx.x; i < k; i += TOPK_THREADS)
        dst[i] = key[i];
}

/* Stage 2: one block per row over n_part = n_chunks * k keys (padded to a power of two,
 * at most TOPK_CHUNK: the launcher checks). */
__global__ void __launch_bounds__(TOPK_THREADS)
    topk_merge_kernel(uint32_t *cand, const uint64_t *part, int n_part, int k)
{
    __shared__ uint64_t key[TOPK_CHUNK];
    const int64_t row = blockIdx.x;
    int n = 1;
    while (n < n_part)
        n <<= 1;
    for (int i = threadIdx.x; i < n; i += TOPK_THREADS)
        key[i] = i < n_part ? part[row * n_part + i] : 0;
    bitonic_desc(key, n);
    for (int i = threadIdx.x; i < k; i += TOPK_THREADS) {
        float v;
        int32_t id;
        key_split(key[i], &v, &id);
        cand[2 * (row * k + i)] = __float_as_uint(v);
        cand[2 * (row * k + i) + 1] = (uint32_t)id;
    }
}

extern "C" size_t hy_cuda_topk_scratch_bytes(int64_t vocab, int rows, int k)
{
    int64_t chunks = (vocab + TOPK_CHUNK - 1) / TOPK_CHUNK;
    return (size_t)rows * (size_t)chunks * (size_t)k * sizeof(uint64_t);
}

extern "C" int hy_cuda_topk_max_k(int64_t vocab)
{
    int64_t chunks = (vocab + TOPK_CHUNK - 1) / TOPK_CHUNK;
    int64_t k = TOPK_CHUNK / chunks; /* the merge sorts chunks * k keys in one block */
    return (int)(k < vocab ? k : vocab);
}

extern "C" void hy_cuda_topk(cudaStream_t st, uint32_t *cand, const float *logits, int rows,
                             int64_t vocab, int k, void *scratch)
{
    if (rows <= 0)
        return;
    unsigned chunks = (unsigned)((vocab + TOPK_CHUNK - 1) / TOPK_CHUNK);
    uint64_t *part = (uint64_t *)scratch;
    topk_chunk_kernel<<<dim3(chunks, (unsigned)rows), TOPK_THREADS, 0, st>>>(part, logits, vocab,
                                                                              k);
    HY_CUDA_CHECK_LAUNCH();
    topk_merge_kernel<<<(unsigned)rows, TOPK_THREADS, 0, st>>>(cand, part, (int)chunks * k, k);
    HY_CUDA_CHECK_LAUNCH();
}
