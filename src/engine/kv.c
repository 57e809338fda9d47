/* kv.c: the paged KV block pool (bookkeeping only).
 * Block states, derived from two fields: refs > 0 is "used" (in at least one block table);
 * refs == 0 with gen != 0 is "cached" (registered, on the LRU list, evictable); refs == 0 with
 * gen == 0 is "free" (on the free stack). A block is registered (gen != 0, in the hash table)
 * exactly when it is full, its K/V is computed, and it is the unique block holding that
 * prefix: a second block computing the same prefix is swapped for the registered one.
 * Prefix identity is exact: a registered block records its tokens and its parent block with
 * the parent's registration serial (gen), so a lookup matches block i only after matching
 * block i-1 itself; hashes only pick the bucket. The hash table is linear probing with
 * backward-shift deletion (no tombstones), at most half full. */
#include "engine/kv.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HASH_SEED 0x68796d744b564231ULL /* hash of the empty prefix */
#define MAX_BLOCK_SIZE 4096
#define MAX_SEQ_SLOTS (1 << 30) /* max_blocks_per_seq * block_size: positions fit an int */

/* Every mutable scalar, all int64 so that a memcpy of the struct has no padding bytes. */
struct kv_counts {
    int64_t n_free, n_cached; /* lengths of the free stack and the LRU list */
    int64_t free_head;        /* top of the free stack (linked through next[]), -1 if empty */
    int64_t lru_head;         /* least recently released cached block, -1 if empty */
    int64_t lru_tail;         /* most recently released */
    int64_t n_seq_free;       /* entries in seq_free[] */
    int64_t next_gen;         /* next registration serial (starts at 1; 0 = unregistered) */
    int64_t lookups, hits, tokens_queried, tokens_hit, evictions;
};

struct hy_kv {
    int n_blocks, block_size, max_seqs, max_bps;
    int64_t ht_cap; /* power of two >= 2 * n_blocks, so probes always meet an empty slot */
    struct kv_counts c;
    /* One allocation holds every array; [0, state_size) is the mutable state (snapshotted),
     * the rest is scratch that carries no state between calls. */
    unsigned char *arena;
    size_t state_size;
    uint64_t *hash;        /* [n_blocks] chain hash of the prefix the block completes */
    uint64_t *parent_hash; /* [n_blocks] chain hash of the prefix before it */
    uint64_t *gen;         /* [n_blocks] registration serial, 0 when not registered */
    uint64_t *parent_gen;  /* [n_blocks] gen of the parent when this block was registered */
    int32_t *parent;       /* [n_blocks] previous block of the prefix, -1 for the first */
    int32_t *refs;         /* [n_blocks] block tables holding the block */
    int32_t *prev, *next;  /* [n_blocks] LRU links; next also links the free stack */
    int32_t *tokens;       /* [n_blocks, block_size] token id of each slot */
    int32_t *ht;           /* [ht_cap] registered block, or -1 for an empty slot */
    int32_t *tables;       /* [max_seqs, max_bps] block tables */
    int32_t *seq_ntok;     /* [max_seqs] tokens with slots; -1 for a free handle */
    int32_t *seq_ncomp;    /* [max_seqs] tokens computed */
    int32_t *seq_free;     /* [max_seqs] stack of free handles */
    int32_t *match;        /* scratch [max_bps]: blocks matched by a lookup */
    int32_t *mark;         /* scratch [n_blocks]: for hy_kv_check */
};

/* ---- hashing ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    x ^= x >> 33;
    return x;
}

/* Tests that include this file may define KV_HASH_MASK to force collisions. */
#ifndef KV_HASH_MASK
#define KV_HASH_MASK UINT64_MAX
#endif

/* h_i = H(h_{i-1}, tokens of block i). */
static uint64_t chain_hash(uint64_t parent, const int32_t *t, int n)
{
    uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < n; i++)
        h = mix64(h + (uint32_t)t[i] * 0xd6e8feb86659fd93ULL);
    return h & KV_HASH_MASK;
}

static int32_t *blk_tokens(const struct hy_kv *kv, int32_t b)
{
    return kv->tokens + (size_t)b * (size_t)kv->block_size;
}

static int32_t *seq_table(const struct hy_kv *kv, int seq)
{
    return kv->tables + (size_t)seq * (size_t)kv->max_bps;
}

int hy_kv_block_size(const struct hy_kv *kv)
{
    return kv->block_size;
}

int hy_kv_blocks_for(const struct hy_kv *kv, int64_t n_tokens)
{
    int64_t nb = (n_tokens + kv->block_size - 1) / kv->block_size;
    return nb > INT32_MAX ? INT32_MAX : (int)nb;
}

/* ---- hash table ---- */

static int64_t ht_home(const struct hy_kv *kv, uint64_t h)
{
    return (int64_t)(h & (uint64_t)(kv->ht_cap - 1));
}

/* The registered block completing prefix hash h with these tokens after parent block pb
 * (registered as serial pg), or -1. */
static int32_t ht_find(const struct hy_kv *kv, uint64_t h, const int32_t *toks, int32_t pb,
                       uint64_t pg)
{
    size_t nbytes = (size_t)kv->block_size * sizeof *toks;
    for (int64_t i = ht_home(kv, h);; i = (i + 1) & (kv->ht_cap - 1)) {
        int32_t b = kv->ht[i];
        if (b < 0)
            return -1;
        if (kv->hash[b] == h && kv->parent[b] == pb && kv->parent_gen[b] == pg &&
            memcmp(blk_tokens(kv, b), toks, nbytes) == 0)
            return b;
    }
}

static void ht_insert(struct hy_kv *kv, int32_t b)
{
    int64_t i = ht_home(kv, kv->hash[b]);
    while (kv->ht[i] >= 0)
        i = (i + 1) & (kv->ht_cap - 1);
    kv->ht[i] = b;
}

/* Removes b and shifts later entries of its probe run back, so no tombstones are needed. */
static void ht_delete(struct hy_kv *kv, int32_t b)
{
    int64_t mask = kv->ht_cap - 1, i = ht_home(kv, kv->hash[b]);
    while (kv->ht[i] != b) {
        HY_ASSERT(kv->ht[i] >= 0);
        i = (i + 1) & mask;
    }
    for (int64_t j = (i + 1) & mask; kv->ht[j] >= 0; j = (j + 1) & mask) {
        int64_t k = ht_home(kv, kv->hash[kv->ht[j]]);
        /* entry j may move to the hole at i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            kv->ht[i] = kv->ht[j];
            i = j;
        }
    }
    kv->ht[i] = -1;
}

/* ---- block lists ---- */

static void lru_remove(struct hy_kv *kv, int32_t b)
{
    int32_t p = kv->prev[b], n = kv->next[b];
    if (p >= 0)
        kv->next[p] = n;
    else
        kv->c.lru_head = n;
    if (n >= 0)
        kv->prev[n] = p;
    else
        kv->c.lru_tail = p;
    kv->prev[b] = kv->next[b] = -1;
    kv->c.n_cached--;
}

static void lru_push_tail(struct hy_kv *kv, int32_t b)
{
    kv->prev[b] = (int32_t)kv->c.lru_tail;
    kv->next[b] = -1;
    if (kv->c.lru_tail >= 0)
        kv->next[kv->c.lru_tail] = b;
    else
        kv->c.lru_head = b;
    kv->c.lru_tail = b;
    kv->c.n_cached++;
}

static void free_push(struct hy_kv *kv, int32_t b)
{
    kv->next[b] = (int32_t)kv->c.free_head;
    kv->prev[b] = -1;
    kv->c.free_head = b;
    kv->c.n_free++;
}

static void unregister(struct hy_kv *kv, int32_t b)
{
    ht_delete(kv, b);
    kv->hash[b] = kv->parent_hash[b] = kv->gen[b] = kv->parent_gen[b] = 0;
    kv->parent[b] = -1;
}

/* A block for exclusive use: the free stack first, else the least recently used cached one. */
static int32_t alloc_block(struct hy_kv *kv)
{
    int32_t b;
    if (kv->c.n_free > 0) {
        b = (int32_t)kv->c.free_head;
        kv->c.free_head = kv->next[b];
        kv->c.n_free--;
    } else {
        HY_ASSERT(kv->c.n_cached > 0);
        b = (int32_t)kv->c.lru_head;
        lru_remove(kv, b);
        unregister(kv, b);
        kv->c.evictions++;
    }
    kv->prev[b] = kv->next[b] = -1;
    kv->refs[b] = 1;
    return b;
}

static void ref_block(struct hy_kv *kv, int32_t b)
{
    if (kv->refs[b]++ == 0)
        lru_remove(kv, b); /* only registered blocks are ever shared, so b was cached */
}

static void release_block(struct hy_kv *kv, int32_t b)
{
    HY_ASSERT(kv->refs[b] > 0);
    if (--kv->refs[b] > 0)
        return;
    if (kv->gen[b])
        lru_push_tail(kv, b);
    else
        free_push(kv, b);
}

/* ---- create / destroy ---- */

/* Lays out the arena: with base NULL only sums the size. Arrays are 8-byte aligned. */
static size_t layout(struct hy_kv *kv, unsigned char *base)
{
    size_t nb = (size_t)kv->n_blocks, ms = (size_t)kv->max_seqs, off = 0;
#define CARVE(field, count)                                                                        \
    do {                                                                                           \
        if (base)                                                                                  \
            kv->field = (void *)(base + off);                                                      \
        off += ((count) * sizeof *kv->field + 7) & ~(size_t)7;                                     \
    } while (0)
    CARVE(hash, nb);
    CARVE(parent_hash, nb);
    CARVE(gen, nb);
    CARVE(parent_gen, nb);
    CARVE(parent, nb);
    CARVE(refs, nb);
    CARVE(prev, nb);
    CARVE(next, nb);
    CARVE(tokens, nb * (size_t)kv->block_size);
    CARVE(ht, (size_t)kv->ht_cap);
    CARVE(tables, ms * (size_t)kv->max_bps);
    CARVE(seq_ntok, ms);
    CARVE(seq_ncomp, ms);
    CARVE(seq_free, ms);
    kv->state_size = off;
    CARVE(match, (size_t)kv->max_bps);
    CARVE(mark, nb);
#undef CARVE
    return off;
}

static hy_status check_sizes(int n_blocks, int block_size, int max_seqs, int max_bps,
                             struct hy_err *err)
{
    if (n_blocks < 1 || n_blocks > HY_KV_MAX_BLOCKS)
        return hy_err_set(err, HY_E_RANGE, "kv: n_blocks %d outside [1, %d]", n_blocks,
                          HY_KV_MAX_BLOCKS);
    if (block_size < 1 || block_size > MAX_BLOCK_SIZE)
        return hy_err_set(err, HY_E_RANGE, "kv: block size %d outside [1, %d]", block_size,
                          MAX_BLOCK_SIZE);
    if (max_seqs < 1 || max_seqs > n_blocks)
        return hy_err_set(err, HY_E_RANGE, "kv: max_seqs %d outside [1, n_blocks=%d]", max_seqs,
                          n_blocks);
    if (max_bps < 1 || (int64_t)max_bps * block_size > MAX_SEQ_SLOTS)
        return hy_err_set(err, HY_E_RANGE, "kv: %d blocks of %d tokens per sequence is too many",
                          max_bps, block_size);
    return HY_OK;
}

hy_status hy_kv_create(struct hy_kv **out, int n_blocks, int block_size, int max_seqs,
                       int max_blocks_per_seq, struct hy_err *err)
{
    *out = NULL;
    if (block_size <= 0)
        block_size = HY_KV_BLOCK_SIZE_DEFAULT;
    hy_status st = check_sizes(n_blocks, block_size, max_seqs, max_blocks_per_seq, err);
    if (st != HY_OK)
        return st;
    struct hy_kv *kv = calloc(1, sizeof *kv);
    if (!kv)
        return hy_err_set(err, HY_E_NOMEM, "kv: out of memory");
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->max_seqs = max_seqs;
    kv->max_bps = max_blocks_per_seq;
    kv->ht_cap = 2;
    while (kv->ht_cap < 2 * (int64_t)n_blocks)
        kv->ht_cap *= 2;
    /* All the pool's memory: per block 52 + 4*block_size bytes plus 8-16 bytes of hash
     * table, per sequence 12 + 4*max_blocks_per_seq bytes. Nothing is allocated after this. */
    size_t size = layout(kv, NULL);
    kv->arena = calloc(1, size);
    if (!kv->arena) {
        free(kv);
        return hy_err_set(err, HY_E_NOMEM, "kv: out of memory for %zu bytes of tables", size);
    }
    layout(kv, kv->arena);
    memset(kv->ht, 0xff, (size_t)kv->ht_cap * sizeof *kv->ht);
    kv->c = (struct kv_counts){.free_head = -1, .lru_head = -1, .lru_tail = -1, .next_gen = 1};
    for (int32_t b = n_blocks - 1; b >= 0; b--) {
        kv->parent[b] = -1;
        free_push(kv, b); /* block 0 ends on top */
    }
    for (int s = 0; s < max_seqs; s++) {
        kv->seq_ntok[s] = -1;
        kv->seq_free[max_seqs - 1 - s] = s; /* handle 0 ends on top */
    }
    kv->c.n_seq_free = max_seqs;
    *out = kv;
    return HY_OK;
}

void hy_kv_destroy(struct hy_kv *kv)
{
    if (!kv)
        return;
    free(kv->arena);
    free(kv);
}

/* ---- sequences ---- */

static void check_live(const struct hy_kv *kv, int seq)
{
    HY_ASSERT(seq >= 0 && seq < kv->max_seqs && kv->seq_ntok[seq] >= 0);
}

/* Fills kv->match with the longest chain of registered blocks equal to whole blocks of
 * tokens[0..n), at most (n-1)/block_size of them, and returns its length. */
static int match_prefix(const struct hy_kv *kv, const int32_t *tokens, int n)
{
    int bs = kv->block_size, max_full = (n - 1) / bs, m = 0;
    uint64_t h = HASH_SEED, pg = 0;
    int32_t pb = -1;
    for (; m < max_full; m++) {
        const int32_t *t = tokens + (size_t)m * bs;
        h = chain_hash(h, t, bs);
        int32_t b = ht_find(kv, h, t, pb, pg);
        if (b < 0)
            break;
        kv->match[m] = b;
        pb = b;
        pg = kv->gen[b];
    }
    return m;
}

/* Gives tokens[0..n) the slots from position `pos` of seq, allocating blocks as needed. */
static void fill_slots(struct hy_kv *kv, int seq, int pos, const int32_t *tokens, int n)
{
    int32_t *tab = seq_table(kv, seq);
    int bs = kv->block_size;
    for (int j = 0; j < n; j++, pos++) {
        if (pos % bs == 0)
            tab[pos / bs] = alloc_block(kv);
        blk_tokens(kv, tab[pos / bs])[pos % bs] = tokens[j];
    }
}

hy_status hy_kv_seq_start(struct hy_kv *kv, const int32_t *tokens, int n, int *seq, int *n_cached,
                          struct hy_err *err)
{
    if (n < 1)
        return hy_err_set(err, HY_E_INVAL, "kv: a sequence needs at least one token");
    int nb = hy_kv_blocks_for(kv, n);
    if (nb > kv->max_bps)
        return hy_err_set(err, HY_E_RANGE, "kv: %d tokens need %d blocks, more than %d", n, nb,
                          kv->max_bps);
    if (kv->c.n_seq_free == 0)
        return hy_err_set(err, HY_E_NOSPACE, "kv: all %d sequences in use", kv->max_seqs);
    /* plan: matched blocks that sit in the LRU list cannot also be evicted for the rest */
    int m = match_prefix(kv, tokens, n), m_cached = 0;
    for (int i = 0; i < m; i++)
        m_cached += kv->refs[kv->match[i]] == 0;
    int64_t avail = kv->c.n_free + kv->c.n_cached - m_cached;
    if (nb - m > avail)
        return hy_err_set(err, HY_E_NOSPACE, "kv: %d blocks needed, %lld available", nb - m,
                          (long long)avail);
    /* commit */
    int s = kv->seq_free[--kv->c.n_seq_free];
    int32_t *tab = seq_table(kv, s);
    for (int i = 0; i < m; i++) {
        tab[i] = kv->match[i];
        ref_block(kv, tab[i]);
    }
    int done = m * kv->block_size;
    fill_slots(kv, s, done, tokens + done, n - done);
    kv->seq_ntok[s] = n;
    kv->seq_ncomp[s] = done;
    kv->c.lookups++;
    kv->c.hits += m > 0;
    kv->c.tokens_queried += n;
    kv->c.tokens_hit += done;
    *seq = s;
    *n_cached = done;
    return HY_OK;
}

hy_status hy_kv_seq_append(struct hy_kv *kv, int seq, const int32_t *tokens, int n,
                           struct hy_err *err)
{
    check_live(kv, seq);
    if (n < 0)
        return hy_err_set(err, HY_E_INVAL, "kv: negative token count %d", n);
    int ntok = kv->seq_ntok[seq];
    int64_t total = (int64_t)ntok + n;
    int nb_new = hy_kv_blocks_for(kv, total);
    if (nb_new > kv->max_bps)
        return hy_err_set(err, HY_E_RANGE, "kv: %lld tokens need more than %d blocks",
                          (long long)total, kv->max_bps);
    int need = nb_new - hy_kv_blocks_for(kv, ntok);
    if (need > kv->c.n_free + kv->c.n_cached)
        return hy_err_set(err, HY_E_NOSPACE, "kv: %d blocks needed, %lld available", need,
                          (long long)(kv->c.n_free + kv->c.n_cached));
    fill_slots(kv, seq, ntok, tokens, n);
    kv->seq_ntok[seq] = (int32_t)total;
    return HY_OK;
}

/* Block i of seq just became full and computed: share the registered twin if there is one,
 * else register it. Block i-1 is registered already (blocks complete in order). */
static void complete_block(struct hy_kv *kv, int seq, int i)
{
    int32_t *tab = seq_table(kv, seq), b = tab[i];
    HY_ASSERT(kv->gen[b] == 0 && kv->refs[b] == 1);
    int32_t pb = i > 0 ? tab[i - 1] : -1;
    uint64_t ph = pb >= 0 ? kv->hash[pb] : HASH_SEED, pg = pb >= 0 ? kv->gen[pb] : 0;
    uint64_t h = chain_hash(ph, blk_tokens(kv, b), kv->block_size);
    int32_t twin = ht_find(kv, h, blk_tokens(kv, b), pb, pg);
    if (twin >= 0) {
        ref_block(kv, twin);
        tab[i] = twin;
        release_block(kv, b); /* unregistered, so back to the free stack */
        return;
    }
    kv->hash[b] = h;
    kv->parent_hash[b] = ph;
    kv->parent[b] = pb;
    kv->parent_gen[b] = pg;
    kv->gen[b] = (uint64_t)kv->c.next_gen++;
    ht_insert(kv, b);
}

void hy_kv_seq_computed(struct hy_kv *kv, int seq, int n)
{
    check_live(kv, seq);
    HY_ASSERT(n >= 0 && (int64_t)kv->seq_ncomp[seq] + n <= kv->seq_ntok[seq]);
    int first = kv->seq_ncomp[seq] / kv->block_size;
    kv->seq_ncomp[seq] += n;
    int last = kv->seq_ncomp[seq] / kv->block_size;
    for (int i = first; i < last; i++)
        complete_block(kv, seq, i);
}

void hy_kv_seq_free(struct hy_kv *kv, int seq)
{
    check_live(kv, seq);
    int32_t *tab = seq_table(kv, seq);
    for (int i = hy_kv_blocks_for(kv, kv->seq_ntok[seq]) - 1; i >= 0; i--)
        release_block(kv, tab[i]);
    kv->seq_ntok[seq] = -1;
    kv->seq_ncomp[seq] = 0;
    kv->seq_free[kv->c.n_seq_free++] = seq;
}

struct hy_kv_seq_info hy_kv_seq_get(const struct hy_kv *kv, int seq)
{
    check_live(kv, seq);
    return (struct hy_kv_seq_info){
        .n_tokens = kv->seq_ntok[seq],
        .n_computed = kv->seq_ncomp[seq],
        .n_blocks = hy_kv_blocks_for(kv, kv->seq_ntok[seq]),
        .blocks = seq_table(kv, seq),
    };
}

const int32_t *hy_kv_block_tokens(const struct hy_kv *kv, int block)
{
    HY_ASSERT(block >= 0 && block < kv->n_blocks);
    return blk_tokens(kv, block);
}

int hy_kv_block_refs(const struct hy_kv *kv, int block)
{
    HY_ASSERT(block >= 0 && block < kv->n_blocks);
    return kv->refs[block];
}

void hy_kv_stats(const struct hy_kv *kv, struct hy_kv_stats *out)
{
    *out = (struct hy_kv_stats){
        .n_blocks = kv->n_blocks,
        .n_free = (int)kv->c.n_free,
        .n_cached = (int)kv->c.n_cached,
        .n_used = kv->n_blocks - (int)(kv->c.n_free + kv->c.n_cached),
        .n_seqs = kv->max_seqs - (int)kv->c.n_seq_free,
        .lookups = kv->c.lookups,
        .hits = kv->c.hits,
        .tokens_queried = kv->c.tokens_queried,
        .tokens_hit = kv->c.tokens_hit,
        .evictions = kv->c.evictions,
    };
}

size_t hy_kv_snapshot(const struct hy_kv *kv, void *buf, size_t cap)
{
    size_t need = sizeof kv->c + kv->state_size;
    if (buf && cap >= need) {
        memcpy(buf, &kv->c, sizeof kv->c);
        memcpy((unsigned char *)buf + sizeof kv->c, kv->arena, kv->state_size);
    }
    return need;
}

/* ---- invariants ---- */

#define FAIL(...) return hy_err_set(err, HY_E_FORMAT, "kv check: " __VA_ARGS__)

enum { MARK_FREE = 1, MARK_LRU = 2, MARK_HT = 4 };

/* Handles: the free stack holds exactly the handles with seq_ntok == -1, once each. */
static hy_status check_handles(const struct hy_kv *kv, struct hy_err *err)
{
    int live = 0;
    for (int s = 0; s < kv->max_seqs; s++)
        live += kv->seq_ntok[s] >= 0;
    if (kv->c.n_seq_free < 0 || live + kv->c.n_seq_free != kv->max_seqs)
        FAIL("%d live sequences + %lld free handles != %d", live, (long long)kv->c.n_seq_free,
             kv->max_seqs);
    for (int64_t i = 0; i < kv->c.n_seq_free; i++) {
        int s = kv->seq_free[i];
        if (s < 0 || s >= kv->max_seqs || kv->seq_ntok[s] != -1)
            FAIL("free handle entry %lld = %d is not a free handle", (long long)i, s);
        for (int64_t j = 0; j < i; j++)
            if (kv->seq_free[j] == s)
                FAIL("handle %d twice on the free stack", s);
    }
    return HY_OK;
}

/* One live table: the fully computed prefix is a chain of registered blocks, each naming the
 * previous one as parent; every other block is private (refs 1, unregistered). Counts refs
 * into kv->mark. */
static hy_status check_table(const struct hy_kv *kv, int s, struct hy_err *err)
{
    int ntok = kv->seq_ntok[s], ncomp = kv->seq_ncomp[s], bs = kv->block_size;
    int nb = hy_kv_blocks_for(kv, ntok);
    if (ncomp < 0 || ncomp > ntok || nb > kv->max_bps)
        FAIL("seq %d: %d computed of %d tokens (%d blocks)", s, ncomp, ntok, nb);
    const int32_t *tab = seq_table(kv, s);
    for (int i = 0; i < nb; i++) {
        int32_t b = tab[i];
        if (b < 0 || b >= kv->n_blocks)
            FAIL("seq %d: block %d of the table is %d", s, i, b);
        kv->mark[b]++;
        if (i < ncomp / bs) {
            int32_t pb = i > 0 ? tab[i - 1] : -1;
            if (!kv->gen[b] || kv->parent[b] != pb ||
                kv->parent_gen[b] != (pb >= 0 ? kv->gen[pb] : 0))
                FAIL("seq %d: computed block %d (%d) is not registered after block %d", s, i, b,
                     pb);
        } else if (kv->gen[b] || kv->refs[b] != 1) {
            FAIL("seq %d: unfinished block %d (%d) is shared or registered (refs %d)", s, i, b,
                 kv->refs[b]);
        }
    }
    return HY_OK;
}

/* Walks the free stack and the LRU list, marking members; checks links, states, lengths. */
static hy_status check_lists(const struct hy_kv *kv, struct hy_err *err)
{
    int64_t n = 0;
    for (int64_t b = kv->c.free_head; b >= 0; b = kv->next[b], n++) {
        if (b >= kv->n_blocks || n >= kv->n_blocks || (kv->mark[b] & MARK_FREE))
            FAIL("free stack is corrupt at block %lld", (long long)b);
        if (kv->refs[b] || kv->gen[b] || kv->parent[b] != -1 || kv->prev[b] != -1)
            FAIL("free block %lld has refs %d gen %llu", (long long)b, kv->refs[b],
                 (unsigned long long)kv->gen[b]);
        kv->mark[b] |= MARK_FREE;
    }
    if (n != kv->c.n_free)
        FAIL("free stack holds %lld blocks, counter says %lld", (long long)n,
             (long long)kv->c.n_free);
    int64_t prev = -1;
    n = 0;
    for (int64_t b = kv->c.lru_head; b >= 0; prev = b, b = kv->next[b], n++) {
        if (b >= kv->n_blocks || n >= kv->n_blocks || kv->mark[b] || kv->prev[b] != prev)
            FAIL("LRU list is corrupt at block %lld", (long long)b);
        if (kv->refs[b] || !kv->gen[b])
            FAIL("cached block %lld has refs %d gen %llu", (long long)b, kv->refs[b],
                 (unsigned long long)kv->gen[b]);
        int32_t p = kv->parent[b];
        if (p >= 0 && p < kv->n_blocks && (kv->mark[p] & MARK_LRU))
            FAIL("cached block %lld would be evicted after its parent %d", (long long)b, p);
        kv->mark[b] |= MARK_LRU;
    }
    if (n != kv->c.n_cached || prev != kv->c.lru_tail)
        FAIL("LRU list holds %lld blocks ending at %lld, counters say %lld ending at %lld",
             (long long)n, (long long)prev, (long long)kv->c.n_cached, (long long)kv->c.lru_tail);
    return HY_OK;
}

/* Every entry is a registered block reachable from its home slot (no empty slot between),
 * the first exact match for itself (so no duplicates), and hashes its parent's hash with its
 * tokens; every registered block is in the table once. */
static hy_status check_hash_table(const struct hy_kv *kv, struct hy_err *err)
{
    int64_t mask = kv->ht_cap - 1, entries = 0;
    for (int64_t i = 0; i < kv->ht_cap; i++) {
        int32_t b = kv->ht[i];
        if (b < 0)
            continue;
        if (b >= kv->n_blocks || !kv->gen[b] || (kv->mark[b] & MARK_HT))
            FAIL("hash slot %lld holds block %d, unregistered or twice", (long long)i, b);
        kv->mark[b] |= MARK_HT;
        entries++;
        for (int64_t j = ht_home(kv, kv->hash[b]); j != i; j = (j + 1) & mask)
            if (kv->ht[j] < 0)
                FAIL("block %d in hash slot %lld is unreachable from slot %lld", b, (long long)i,
                     (long long)j);
        if (ht_find(kv, kv->hash[b], blk_tokens(kv, b), kv->parent[b], kv->parent_gen[b]) != b)
            FAIL("block %d has a registered duplicate", b);
        if (kv->hash[b] != chain_hash(kv->parent_hash[b], blk_tokens(kv, b), kv->block_size))
            FAIL("block %d: hash does not match its tokens", b);
        int32_t p = kv->parent[b];
        if (p < 0 && (kv->parent_hash[b] != HASH_SEED || kv->parent_gen[b] != 0))
            FAIL("block %d: a first block must follow the empty prefix", b);
        if (p >= kv->n_blocks)
            FAIL("block %d: parent %d out of range", b, p);
        /* every table holding b holds its parent, and b leaves the LRU list first, so a
         * parent outlives its registered children */
        if (p >= 0 && (kv->gen[p] != kv->parent_gen[b] || kv->hash[p] != kv->parent_hash[b]))
            FAIL("block %d: parent %d was evicted or has another hash", b, p);
        if (kv->gen[b] >= (uint64_t)kv->c.next_gen || kv->parent_gen[b] >= kv->gen[b])
            FAIL("block %d: registration serial %llu out of order", b,
                 (unsigned long long)kv->gen[b]);
    }
    int64_t registered = 0;
    for (int b = 0; b < kv->n_blocks; b++)
        registered += kv->gen[b] != 0;
    if (entries != registered)
        FAIL("%lld hash entries for %lld registered blocks", (long long)entries,
             (long long)registered);
    return HY_OK;
}

hy_status hy_kv_check(const struct hy_kv *kv, struct hy_err *err)
{
    hy_status st = check_handles(kv, err);
    if (st != HY_OK)
        return st;
    memset(kv->mark, 0, (size_t)kv->n_blocks * sizeof *kv->mark);
    for (int s = 0; s < kv->max_seqs && st == HY_OK; s++)
        if (kv->seq_ntok[s] >= 0)
            st = check_table(kv, s, err);
    if (st != HY_OK)
        return st;
    for (int b = 0; b < kv->n_blocks; b++)
        if (kv->refs[b] != kv->mark[b])
            FAIL("block %d has refs %d but %d table entries", b, kv->refs[b], kv->mark[b]);
    memset(kv->mark, 0, (size_t)kv->n_blocks * sizeof *kv->mark);
    if ((st = check_lists(kv, err)) != HY_OK || (st = check_hash_table(kv, err)) != HY_OK)
        return st;
    for (int b = 0; b < kv->n_blocks; b++) {
        int want = kv->refs[b] > 0 ? 0 : kv->gen[b] ? MARK_LRU : MARK_FREE;
        if ((kv->mark[b] & (MARK_FREE | MARK_LRU)) != want || kv->refs[b] < 0)
            FAIL("block %d (refs %d, gen %llu) is on the wrong list", b, kv->refs[b],
                 (unsigned long long)kv->gen[b]);
        if (kv->refs[b] > 0 && (kv->prev[b] != -1 || kv->next[b] != -1))
            FAIL("used block %d is still linked", b);
    }
    return HY_OK;
}
