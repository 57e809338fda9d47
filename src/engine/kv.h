/* kv.h: paged KV-cache bookkeeping: block tables and prefix caching (storage is the backend's).
 * Blocks are indices 0..n_blocks-1 of block_size token slots each; sequences are small-int
 * handles 0..max_seqs-1 owning a block table of up to max_blocks_per_seq blocks. A block whose
 * every slot has its K/V computed is registered under the chain hash of the whole prefix it
 * completes and can then be shared by any sequence with the same prefix (exact: tokens and
 * parent block are compared too). Unreferenced registered blocks stay cached, evicted LRU first.
 * All memory is allocated in hy_kv_create; nothing after. Engine thread only (not thread-safe).
 * Errors: HY_E_INVAL / HY_E_RANGE for bad arguments, HY_E_NOSPACE when blocks or sequence
 * handles run out; after any failure the pool is bit-identical to before (hy_kv_snapshot). */
#ifndef HY_ENGINE_KV_H
#define HY_ENGINE_KV_H

#include "core/status.h"

#include <stddef.h>
#include <stdint.h>

#define HY_KV_BLOCK_SIZE_DEFAULT 16
#define HY_KV_MAX_BLOCKS (1 << 28) /* keeps every slot count inside int32 positions */

struct hy_kv;

struct hy_kv_stats {
    int n_blocks;           /* pool size */
    int n_free;             /* neither referenced nor cached */
    int n_cached;           /* unreferenced but kept for prefix reuse (evictable, LRU) */
    int n_used;             /* referenced by at least one sequence */
    int n_seqs;             /* live sequences */
    int64_t lookups;        /* sequence starts (prefix lookups) */
    int64_t hits;           /* ... that reused at least one cached block */
    int64_t tokens_queried; /* prompt tokens looked up */
    int64_t tokens_hit;     /* ... found already computed */
    int64_t evictions;      /* cached blocks reclaimed for new allocations */
};

/* One sequence, borrowed from the pool: valid until the next call that changes this sequence.
 * blocks[i] holds positions [i*block_size, (i+1)*block_size). */
struct hy_kv_seq_info {
    int n_tokens;          /* tokens with a slot (their ids are known) */
    int n_computed;        /* leading tokens whose K/V is in the cache */
    int n_blocks;          /* ceil(n_tokens / block_size) */
    const int32_t *blocks; /* [n_blocks] block table */
};

/* block_size <= 0 means HY_KV_BLOCK_SIZE_DEFAULT. HY_E_INVAL / HY_E_RANGE for sizes out of
 * range, HY_E_NOMEM if the tables cannot be allocated. */
hy_status hy_kv_create(struct hy_kv **out, int n_blocks, int block_size, int max_seqs,
                       int max_blocks_per_seq, struct hy_err *err);
void hy_kv_destroy(struct hy_kv *kv); /* accepts NULL */

int hy_kv_block_size(const struct hy_kv *kv);
/* Blocks a sequence of n tokens occupies: ceil(n / block_size). */
int hy_kv_blocks_for(const struct hy_kv *kv, int64_t n_tokens);

/* Starts a sequence holding tokens[0..n): references the longest chain of cached full blocks
 * matching a prefix of tokens, capped so at least one token is left to compute, and allocates
 * private blocks for the rest (free blocks first, then evicting cached ones, LRU first).
 * *seq receives the handle, *n_cached the tokens already computed (a multiple of block_size).
 * HY_E_INVAL if n < 1, HY_E_RANGE if n does not fit in max_blocks_per_seq blocks,
 * HY_E_NOSPACE if no handle or too few blocks are left; the pool is then unchanged. */
hy_status hy_kv_seq_start(struct hy_kv *kv, const int32_t *tokens, int n, int *seq, int *n_cached,
                          struct hy_err *err);

/* Gives tokens[0..n) slots at the end of seq, allocating blocks as the last one fills.
 * HY_E_RANGE past max_blocks_per_seq, HY_E_NOSPACE without enough blocks; then unchanged. */
hy_status hy_kv_seq_append(struct hy_kv *kv, int seq, const int32_t *tokens, int n,
                           struct hy_err *err);

/* Records that the K/V of the next n tokens of seq are now in the cache (call after the
 * forward pass wrote them). Every block this completes is registered for prefix reuse; when
 * an identical block is already registered, the table switches to it and the private copy is
 * freed, so the block table may change. Never fails: n beyond the slotted tokens is a bug. */
void hy_kv_seq_computed(struct hy_kv *kv, int seq, int n);

/* Ends seq: drops its references (last block first, so deeper blocks are evicted before the
 * prefixes they extend). Registered blocks nobody references go to the LRU cache, others to
 * the free list. The handle becomes free. */
void hy_kv_seq_free(struct hy_kv *kv, int seq);

/* Borrowed view of a live sequence (asserts seq is live). */
struct hy_kv_seq_info hy_kv_seq_get(const struct hy_kv *kv, int seq);

/* The block_size token ids a block holds (borrowed; meaningful up to its filled slots). */
const int32_t *hy_kv_block_tokens(const struct hy_kv *kv, int block);
/* References to a block (0 for free and cached blocks). */
int hy_kv_block_refs(const struct hy_kv *kv, int block);

void hy_kv_stats(const struct hy_kv *kv, struct hy_kv_stats *out);

/* Checks every invariant (lists partition the blocks, reference counts match the tables, hash
 * table entries are exact and reachable, shared blocks are full and registered, ...).
 * HY_OK, or HY_E_FORMAT with the first violation in err. For tests; O(pool + tables). */
hy_status hy_kv_check(const struct hy_kv *kv, struct hy_err *err);

/* Copies the whole mutable state (every counter, list link, table and token slot) into buf
 * if cap allows; returns the size it needs. For tests: a failed call must leave it equal. */
size_t hy_kv_snapshot(const struct hy_kv *kv, void *buf, size_t cap);

#endif
