/* topk.cu: the K best logits of each row, so that sampling needs K candidates per row from
 * the device instead of the whole vocabulary.
 * Order: by value descending, then by id ascending; NaN counts as -inf (the sampler's
 * rules). A candidate is one 64-bit key: the value mapped to an order-preserving uint32
 * in the high half and (UINT32_MAX - id) in the low half, so "larger key" is exactly
 * "better candidate" and the result is deterministic (no ties left to chance).
 * Stage 1: one block per (row, chunk of TOPK_CHUNK ids): each warp keeps its 32 best keys
 * in registers (warp bitonic sort and merge), the warps' lists are merged and the best K
 * written (cheaper than a full sort of each chunk: most groups of 32 ids are skipped after
 * one vote; bench/RESULTS.md). Stage 2: one block per row sorts the
 * chunks' K-lists together and writes the best K as (value, id) pairs of 32-bit words
 * (struct hy_cand), best first. */
#include "backend/cuda/cuda_impl.h"

#include <math.h>

#define TOPK_WARPS 8
#define TOPK_CHUNK 4096  /* ids per stage-1 block: 16 groups of 32 a warp */
#define TOPK_MERGE 2048  /* keys the stage-2 sort holds (16 KiB of shared memory) */
#define TOPK_THREADS 512 /* stage 2 */

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

/* The compare-exchange of a bitonic network across the lanes of a warp: lane keeps the
 * larger key when it is the lower lane of a descending pair. */
__device__ __forceinline__ uint64_t cx(uint64_t v, int lane, int stride, bool desc)
{
    uint64_t o = __shfl_xor_sync(0xffffffffu, v, stride);
    bool keep_max = ((lane & stride) == 0) == desc;
    return keep_max ? (v > o ? v : o) : (v < o ? v : o);
}

/* 32 keys, one a lane, sorted descending across the warp (lane 0 the largest). */
__device__ __forceinline__ uint64_t warp_sort(uint64_t v, int lane)
{
    for (int size = 2; size <= 32; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1)
            v = cx(v, lane, stride, (lane & size) == 0 || size == 32);
    return v;
}

/* The 32 largest of two descending lists a and b (one key a lane), descending: lane i's
 * max(a_i, b_{31-i}) is a bitonic sequence holding them, which the last merge steps sort. */
__device__ __forceinline__ uint64_t warp_merge(uint64_t a, uint64_t b, int lane)
{
    uint64_t r = __shfl_sync(0xffffffffu, b, 31 - lane);
    uint64_t v = a > r ? a : r;
    for (int stride = 16; stride > 0; stride >>= 1)
        v = cx(v, lane, stride, true);
    return v;
}

/* Stage 1: grid (n_chunks, rows), TOPK_WARPS warps of 32. Each warp keeps the 32 best keys
 * of its share of the chunk (32 ids at a time; a group with no key above the warp's 32nd
 * best is skipped after one vote, so most groups cost one load), the warps' lists are
 * merged, and the best k go to part[row][chunk][k]. Ids past the vocabulary are key 0,
 * below every real key. */
__global__ void __launch_bounds__(TOPK_WARPS * 32)
    topk_chunk_kernel(uint64_t *part, const float *logits, int64_t vocab, int k)
{
    __shared__ uint64_t best[TOPK_WARPS][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t row = blockIdx.y, c0 = (int64_t)blockIdx.x * TOPK_CHUNK;
    const float *lr = logits + row * vocab;
    uint64_t cur = 0;
    for (int g = warp; g < TOPK_CHUNK / 32; g += TOPK_WARPS) {
        int64_t id = c0 + g * 32 + lane;
        uint64_t key = id < vocab ? make_key(lr[id], (int32_t)id) : 0;
        uint64_t thr = __shfl_sync(0xffffffffu, cur, 31);
        if (!__ballot_sync(0xffffffffu, key > thr))
            continue;
        cur = warp_merge(cur, warp_sort(key, lane), lane);
    }
    best[warp][lane] = cur;
    __syncthreads();
    if (warp == 0) {
        for (int w = 1; w < TOPK_WARPS; w++)
            cur = warp_merge(cur, best[w][lane], lane);
        if (lane < k)
            part[(row * gridDim.x + blockIdx.x) * (int64_t)k + lane] = cur;
    }
}

/* Stage 2: one block per row over n_part = n_chunks * k keys (padded to a power of two,
 * at most TOPK_MERGE: hy_cuda_topk_max_k sees to it). */
__global__ void __launch_bounds__(TOPK_THREADS)
    topk_merge_kernel(uint32_t *cand, const uint64_t *part, int n_part, int k)
{
    __shared__ uint64_t key[TOPK_MERGE];
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
    int64_t k = TOPK_MERGE / chunks; /* the merge sorts chunks * k keys in one block */
    k = k < 32 ? k : 32;              /* a warp holds a stage-1 list */
    return (int)(k < vocab ? k : vocab);
}

extern "C" void hy_cuda_topk(cudaStream_t st, uint32_t *cand, const float *logits, int rows,
                             int64_t vocab, int k, void *scratch)
{
    if (rows <= 0)
        return;
    unsigned chunks = (unsigned)((vocab + TOPK_CHUNK - 1) / TOPK_CHUNK);
    uint64_t *part = (uint64_t *)scratch;
    topk_chunk_kernel<<<dim3(chunks, (unsigned)rows), TOPK_WARPS * 32, 0, st>>>(part, logits,
                                                                                 vocab, k);
    HY_CUDA_CHECK_LAUNCH();
    topk_merge_kernel<<<(unsigned)rows, TOPK_THREADS, 0, st>>>(cand, part, (int)chunks * k, k);
    HY_CUDA_CHECK_LAUNCH();
}
