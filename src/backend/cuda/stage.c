/* stage.c: the CUDA backend's pinned staging ring, which carries the small host index
 * arrays the ops take (ids, positions, pool slots, block tables) to the device, and its
 * recorded steps (CUDA graphs); cuda_ctx.h has the state and backend.h the step ops'
 * contract. */
#include "backend/cuda/cuda_ctx.h"

#include <string.h>

/* Room for n int32 in the ring; returns the host slot to fill, *dev its device twin. When
 * the ring is full, waits for the stream: every earlier copy and kernel that reads the
 * ring is then done, so the whole ring is free again. */
int32_t *hy_cuda_stage_reserve(struct cuda_ctx *c, size_t n, const int32_t **dev)
{
    HY_ASSERT(n <= c->stage_cap);
    if (c->stage_head + n > c->stage_cap) {
        HY_ASSERT(c->mode == STEP_NONE); /* a recorded step must fit the ring */
        HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
        c->stage_head = 0;
        c->n_sent = c->sent_next = 0; /* the slots will be overwritten */
    }
    size_t at = c->stage_head;
    c->stage_head += (n + 31) & ~(size_t)31; /* keep slots 128-byte aligned */
    if (c->stage_head > c->stage_cap)
        c->stage_head = c->stage_cap;
    *dev = c->stage_d + at;
    return c->stage_h + at;
}

/* Enqueues the copy of a filled slot to the device (a replayed step's graph holds it
 * already), and remembers the slot, filled from src, for reuse. */
void hy_cuda_stage_send(struct cuda_ctx *c, const int32_t *host, size_t n, const void *src)
{
    size_t at = (size_t)(host - c->stage_h);
    if (!n)
        return;
    if (c->mode != STEP_REPLAY)
        HY_CUDA_CHECK(cudaMemcpyAsync(c->stage_d + at, host, n * sizeof(int32_t),
                                      cudaMemcpyHostToDevice, c->stream));
    c->sent[c->sent_next].at = at;
    c->sent[c->sent_next].n = n;
    c->sent[c->sent_next].src = src;
    c->sent_next = (c->sent_next + 1) % STAGE_REUSE;
    if (c->n_sent < STAGE_REUSE)
        c->n_sent++;
}

/* A slot sent this lap holding exactly a[0..n-1], as its device copy, or NULL. The device
 * copy is only ever read by kernels, and it was enqueued before anything enqueued now. */
const int32_t *hy_cuda_stage_find(const struct cuda_ctx *c, const int32_t *a, size_t n)
{
    for (int i = 0; i < c->n_sent; i++) {
        const int32_t *h = c->stage_h + c->sent[i].at;
        if (c->mode != STEP_NONE) { /* inside a step, the same host array is the same */
            if (c->sent[i].src == a && c->sent[i].n == n)
                return c->stage_d + c->sent[i].at;
            continue;
        }
        if (c->sent[i].n == n && h != a && memcmp(h, a, n * sizeof *a) == 0)
            return c->stage_d + c->sent[i].at;
    }
    return NULL;
}

/* Stages a host array; returns its device copy (valid for ops enqueued from now on). */
const int32_t *hy_cuda_stage(struct cuda_ctx *c, const int32_t *a, size_t n)
{
    const int32_t *dev = n ? hy_cuda_stage_find(c, a, n) : NULL;
    if (dev)
        return dev;
    int32_t *h = hy_cuda_stage_reserve(c, n, &dev);
    memcpy(h, a, n * sizeof *a);
    hy_cuda_stage_send(c, h, n, a);
    return dev;
}

/* Waits for the stream, rewinds the ring and either replays key's graph or records one
 * (thread-local capture: other threads may still query the device, e.g. /metrics). */
bool hy_cuda_step_begin(struct hy_backend *be, const void *owner, int key, int max_blocks)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    HY_ASSERT(c->mode == STEP_NONE && max_blocks > 0);
    c->graph_at = -1;
    for (int i = 0; i < c->n_graphs; i++)
        if (c->graphs[i].owner == owner && c->graphs[i].key == key)
            c->graph_at = i;
    if (c->graph_at < 0 && c->n_graphs == MAX_GRAPHS)
        return false;
    HY_CUDA_CHECK(cudaStreamSynchronize(c->stream)); /* the ring is free from 0 */
    c->stage_head = 0;
    c->n_sent = c->sent_next = 0;
    c->step_max_blocks = max_blocks;
    c->xbf_x = NULL; /* a recording starts with no converted input at hand */
    c->xq_x = NULL;
    if (c->graph_at >= 0) {
        c->mode = STEP_REPLAY;
        return true;
    }
    if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    c->mode = STEP_RECORD;
    c->graphs[c->n_graphs].owner = owner;
    c->graphs[c->n_graphs].key = key;
    return true;
}

void hy_cuda_step_forget(struct hy_backend *be, const void *owner)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    HY_ASSERT(c->mode == STEP_NONE);
    int n = 0;
    for (int i = 0; i < c->n_graphs; i++) {
        if (c->graphs[i].owner == owner)
            HY_CUDA_CHECK(cudaGraphExecDestroy(c->graphs[i].exec));
        else
            c->graphs[n++] = c->graphs[i];
    }
    c->n_graphs = n;
}

void hy_cuda_step_end(struct hy_backend *be)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    HY_ASSERT(c->mode != STEP_NONE);
    if (c->mode == STEP_RECORD) {
        cudaGraph_t g = NULL;
        HY_CUDA_CHECK(cudaStreamEndCapture(c->stream, &g));
        HY_CUDA_CHECK(cudaGraphInstantiate(&c->graphs[c->n_graphs].exec, g, 0));
        HY_CUDA_CHECK(cudaGraphDestroy(g));
        c->graph_at = c->n_graphs++;
    }
    c->mode = STEP_NONE;
    HY_CUDA_CHECK(cudaGraphLaunch(c->graphs[c->graph_at].exec, c->stream));
}
