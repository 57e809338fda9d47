/* attention.cu: causal GQA attention over the paged KV pool, in float32.
 * Work unit: a tile of up to RT consecutive query rows of one sequence (prefill rows share
 * a tile; a decode row is a tile alone) x a group of up to GM query heads that share one
 * KV head. A block of ATT_WARPS warps takes one unit (and, with split-K, one share of its
 * keys): each warp takes every ATT_WARPS-th key, loads its K and V rows once (lane i holds
 * elements i, i+32, ...; LV per lane) and updates the RT x GM online softmaxes (running max
 * m, denominator l, weighted sum of V) of the unit's query vectors, so a key is read once
 * per unit instead of once per (row, head). The warps' states are merged through shared
 * memory. Row i of a tile sees keys 0 .. n0+i-1 (n0: the keys of its first row).
 * Split-K (decode calls: one row per tile): a row with n keys is cut into
 * S = min(smax, ceil(n / ATT_SPLIT_KEYS)) shares, smax chosen from the call's size (a row
 * in a small batch is split more than in a large one: results differ by float rounding);
 * grid.z = smax, blocks past S return at once; each share writes its (m, l, acc) and a
 * second kernel merges them. smax = 1 turns it off.
 * Key j lives in pool row blocks[j/bs]*bs + j%bs; no other pool row is read. The pool's
 * elements are float or bf16 (template KV: kv_elem.cuh), widened to float32 as loaded. */
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/kv_elem.cuh"

#include <math.h>

#define ATT_WARPS 8
#define ATT_REGS 16 /* RT * GM * LV: query and accumulator floats per lane */
#define ATT_SPLIT_KEYS 64 /* keys per split-K share: short contexts split too (latency) */

struct att_args {
    float *out;
    const float *q;
    const void *k_pool, *v_pool;  /* KV elements */
    const int32_t *info, *blocks; /* info: 4 per tile (row0, rows, n0, table offset) */
    float *part;                  /* split-K partials: [tiles * n_head][smax][hd + 2] */
    int bs, n_head, n_kv, hd, G, ngc, smax;
    float scale;
};

template <int GM, int LV, int RT, typename KV>
__global__ void __launch_bounds__(ATT_WARPS * 32) attention_kernel(struct att_args a)
{
    __shared__ float sm_m[ATT_WARPS][RT * GM], sm_l[ATT_WARPS][RT * GM];
    __shared__ float sm_acc[ATT_WARPS][RT * GM][LV * 32];
    const int tile = blockIdx.x, kvh = blockIdx.y / a.ngc, split = blockIdx.z;
    const int h0 = kvh * a.G + (blockIdx.y % a.ngc) * GM;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int row0 = a.info[4 * tile], nr = a.info[4 * tile + 1], n0 = a.info[4 * tile + 2];
    const int32_t *bt = a.blocks + a.info[4 * tile + 3];
    const int64_t kv_stride = (int64_t)a.n_kv * a.hd, ko = (int64_t)kvh * a.hd;
    int nh = kvh * a.G + a.G - h0; /* heads of this chunk in the group */
    nh = nh < GM ? nh : GM;

    float qv[RT][GM][LV], acc[RT][GM][LV], m[RT][GM], l[RT][GM];
#pragma unroll
    for (int i = 0; i < RT; i++)
#pragma unroll
        for (int g = 0; g < GM; g++) {
            m[i][g] = -INFINITY;
            l[i][g] = 0.0f;
#pragma unroll
            for (int c = 0; c < LV; c++) {
                int d = c * 32 + lane;
                bool ok = i < nr && g < nh && d < a.hd;
                qv[i][g][c] = ok ? a.q[((int64_t)(row0 + i) * a.n_head + h0 + g) * a.hd + d] : 0.0f;
                acc[i][g][c] = 0.0f;
            }
        }
    const int n_all = n0 + nr - 1; /* keys the tile's last row sees */
    int S = (n_all + ATT_SPLIT_KEYS - 1) / ATT_SPLIT_KEYS;
    S = S < 1 ? 1 : S > a.smax ? a.smax : S;
    if (split >= S) /* the whole block: before any barrier */
        return;
    const int j0 = (int)((int64_t)n_all * split / S), j1 = (int)((int64_t)n_all * (split + 1) / S);
    for (int j = j0 + warp; j < j1; j += ATT_WARPS) {
        int64_t row = ((int64_t)bt[j / a.bs] * a.bs + j % a.bs) * kv_stride + ko;
        const KV *kr = (const KV *)a.k_pool + row, *vr = (const KV *)a.v_pool + row;
        float kx[LV], vx[LV];
#pragma unroll
        for (int c = 0; c < LV; c++) {
            int d = c * 32 + lane;
            kx[c] = d < a.hd ? kv_ld(kr + d) : 0.0f;
            vx[c] = d < a.hd ? kv_ld(vr + d) : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < RT; i++) {
            if (i >= nr || j >= n0 + i) /* causal: row i sees keys < n0 + i */
                continue;
#pragma unroll
            for (int g = 0; g < GM; g++) {
                float s = 0.0f;
#pragma unroll
                for (int c = 0; c < LV; c++)
                    s += qv[i][g][c] * kx[c];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1)
                    s += __shfl_xor_sync(0xffffffffu, s, o);
                s *= a.scale;
                float mn = fmaxf(m[i][g], s);
                float corr = expf(m[i][g] - mn), p = expf(s - mn); /* corr = 0 on the first key */
                l[i][g] = l[i][g] * corr + p;
#pragma unroll
                for (int c = 0; c < LV; c++)
                    acc[i][g][c] = acc[i][g][c] * corr + p * vx[c];
                m[i][g] = mn;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < RT; i++)
#pragma unroll
        for (int g = 0; g < GM; g++) {
            if (lane == 0) {
                sm_m[warp][i * GM + g] = m[i][g];
                sm_l[warp][i * GM + g] = l[i][g];
            }
#pragma unroll
            for (int c = 0; c < LV; c++)
                sm_acc[warp][i * GM + g][c * 32 + lane] = acc[i][g][c];
        }
    __syncthreads();
    /* merge the warps: thread t takes (query vector, element) pairs */
    for (int x = threadIdx.x; x < RT * GM * a.hd; x += ATT_WARPS * 32) {
        const int qi = x / a.hd, d = x % a.hd, i = qi / GM, g = qi % GM;
        if (i >= nr || g >= nh)
            continue;
        float M = -INFINITY;
        for (int w = 0; w < ATT_WARPS; w++)
            M = fmaxf(M, sm_m[w][qi]);
        float L = 0.0f, o = 0.0f;
        for (int w = 0; w < ATT_WARPS; w++) {
            float f = sm_l[w][qi] > 0.0f ? expf(sm_m[w][qi] - M) : 0.0f; /* no key: nothing */
            L += sm_l[w][qi] * f;
            o += sm_acc[w][qi][d] * f;
        }
        const int64_t qrow = (int64_t)(row0 + i) * a.n_head + h0 + g;
        if (S == 1) {
            a.out[qrow * a.hd + d] = o / L;
        } else { /* this share's (m, l, unnormalized acc); split calls have one row a tile */
            float *p = a.part + (((int64_t)tile * a.n_head + h0 + g) * a.smax + split) * (a.hd + 2);
            p[2 + d] = o;
            if (d == 0) {
                p[0] = M;
                p[1] = L;
            }
        }
    }
}

/* Merges the shares of each (tile, head) that was split: grid = tiles * n_head. */
__global__ void attention_merge_kernel(float *out, const float *part, const int32_t *info,
                                       int n_head, int smax, int hd)
{
    const int tile = blockIdx.x / n_head, h = blockIdx.x % n_head;
    const int n = info[4 * tile + 2];
    int S = (n + ATT_SPLIT_KEYS - 1) / ATT_SPLIT_KEYS;
    S = S < 1 ? 1 : S > smax ? smax : S;
    if (S == 1) /* written by the attention kernel itself */
        return;
    const int64_t qrow = (int64_t)info[4 * tile] * n_head + h;
    const float *p = part + (int64_t)blockIdx.x * smax * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < S; s++)
        if (p[s * (hd + 2) + 1] > 0.0f)
            M = fmaxf(M, p[s * (hd + 2)]);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float L = 0.0f, o = 0.0f;
        for (int s = 0; s < S; s++) {
            const float *ps = p + s * (hd + 2);
            float f = ps[1] > 0.0f ? expf(ps[0] - M) : 0.0f;
            L += ps[1] * f;
            o += ps[2 + d] * f;
        }
        out[qrow * hd + d] = o / L;
    }
}

extern "C" void hy_cuda_attention_merge(cudaStream_t st, float *out, const float *part,
                                        const int32_t *info, int tiles, int n_head, int smax,
                                        int hd)
{
    attention_merge_kernel<<<(unsigned)tiles * (unsigned)n_head, 128, 0, st>>>(
        out, part, info, n_head, smax, hd);
    HY_CUDA_CHECK_LAUNCH();
}

template <int GM, int LV, int RT>
static void launch(cudaStream_t st, const struct att_args *a, int tiles, bool bf16)
{
    dim3 grid((unsigned)tiles, (unsigned)(a->n_kv * a->ngc), (unsigned)a->smax);
    if (bf16)
        attention_kernel<GM, LV, RT, __nv_bfloat16><<<grid, ATT_WARPS * 32, 0, st>>>(*a);
    else
        attention_kernel<GM, LV, RT, float><<<grid, ATT_WARPS * 32, 0, st>>>(*a);
    HY_CUDA_CHECK_LAUNCH();
}

/* RT = rows per tile: 1 for decode tiles, else as many as the registers allow (<= 4). */
template <int GM, int LV>
static void launch_rt(cudaStream_t st, const struct att_args *a, int tiles, bool rows, bool bf16)
{
    constexpr int RTMAX = ATT_REGS / (GM * LV) > 4 ? 4 : ATT_REGS / (GM * LV);
    if (rows && RTMAX > 1)
        launch<GM, LV, (RTMAX > 1 ? RTMAX : 1)>(st, a, tiles, bf16);
    else
        launch<GM, LV, 1>(st, a, tiles, bf16);
}

extern "C" int hy_cuda_attention_rows_per_tile(int n_head, int n_kv, int hd)
{
    int lv = hd <= 64 ? 2 : hd <= 128 ? 4 : 8, G = n_head / n_kv, gm = 1;
    while (gm < G && gm * 2 * lv <= ATT_REGS)
        gm *= 2;
    int rt = ATT_REGS / (gm * lv);
    return rt > 4 ? 4 : rt;
}

extern "C" int hy_cuda_attention_smax(int tiles, int n_head, int n_kv, int hd, int n_sm,
                                      size_t part_floats)
{
    /* enough shares for about four blocks per SM, at most 32 */
    const int G = n_head / n_kv, lv = hd <= 64 ? 2 : hd <= 128 ? 4 : 8;
    int gm = 1;
    while (gm < G && gm * 2 * lv <= ATT_REGS)
        gm *= 2;
    const int64_t units = (int64_t)tiles * n_kv * ((G + gm - 1) / gm);
    int64_t want = (4 * (int64_t)n_sm + units - 1) / units;
    int smax = 1;
    while (smax < 32 && smax < want)
        smax *= 2;
    while (smax > 1 && (size_t)tiles * (size_t)n_head * (size_t)smax * (size_t)(hd + 2) > part_floats)
        smax /= 2;
    return smax;
}

extern "C" void hy_cuda_attention(cudaStream_t st, float *out, const float *q,
                                  const void *k_pool, const void *v_pool, bool bf16, int bs,
                                  const int32_t *info, const int32_t *blocks, int tiles,
                                  bool rows, int smax, float *part, int n_head, int n_kv, int hd,
                                  float scale)
{
    if (tiles <= 0)
        return;
    const int lv = hd <= 64 ? 2 : hd <= 128 ? 4 : 8, G = n_head / n_kv;
    int gm = 1;
    while (gm < G && gm * 2 * lv <= ATT_REGS)
        gm *= 2;
    struct att_args a = {out, q, k_pool, v_pool, info, blocks, part, bs, n_head, n_kv, hd, G,
                         (G + gm - 1) / gm, rows ? 1 : smax, scale};
    switch (lv * 16 + gm) {
    case 2 * 16 + 1: launch_rt<1, 2>(st, &a, tiles, rows, bf16); break;
    case 2 * 16 + 2: launch_rt<2, 2>(st, &a, tiles, rows, bf16); break;
    case 2 * 16 + 4: launch_rt<4, 2>(st, &a, tiles, rows, bf16); break;
    case 2 * 16 + 8: launch_rt<8, 2>(st, &a, tiles, rows, bf16); break;
    case 4 * 16 + 1: launch_rt<1, 4>(st, &a, tiles, rows, bf16); break;
    case 4 * 16 + 2: launch_rt<2, 4>(st, &a, tiles, rows, bf16); break;
    case 4 * 16 + 4: launch_rt<4, 4>(st, &a, tiles, rows, bf16); break;
    case 8 * 16 + 1: launch_rt<1, 8>(st, &a, tiles, rows, bf16); break;
    default: launch_rt<2, 8>(st, &a, tiles, rows, bf16); break;
    }
    if (a.smax > 1)
        hy_cuda_attention_merge(st, out, part, info, tiles, n_head, a.smax, hd);
}
