/* kv_test.c: the paged KV pool by hand (every path: prefix hits, shared prefixes, the cap on
 * a full match, twin blocks, LRU eviction order, failures leaving the pool bit-identical) and
 * a randomized run against a shadow KV memory: each computed slot records (token, position),
 * and every cached prefix a sequence is given must read back as its own tokens.
 * kv_collide_test.c runs this whole file again with hashes cut to 2 bits. */
#include "engine/kv.h"
#include "test.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define KV_CHECK(kv)                                                                               \
    do {                                                                                           \
        struct hy_err e_ = {{0}};                                                                  \
        hy_status st_ = hy_kv_check(kv, &e_);                                                      \
        CHECKF(st_ == HY_OK, "%s", e_.msg);                                                        \
    } while (0)

static struct hy_kv *make_kv(int n_blocks, int bs, int max_seqs, int bps)
{
    struct hy_kv *kv = NULL;
    struct hy_err err = {{0}};
    hy_status st = hy_kv_create(&kv, n_blocks, bs, max_seqs, bps, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    if (!kv)
        abort();
    return kv;
}

/* tokens base, base+1, ... */
static void seq_of(int32_t *t, int n, int32_t base)
{
    for (int i = 0; i < n; i++)
        t[i] = base + i;
}

static int start(struct hy_kv *kv, const int32_t *t, int n, int *n_cached)
{
    int seq = -1, cached = -1;
    struct hy_err err = {{0}};
    hy_status st = hy_kv_seq_start(kv, t, n, &seq, &cached, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    if (n_cached)
        *n_cached = cached;
    return seq;
}

static struct hy_kv_stats stats(const struct hy_kv *kv)
{
    struct hy_kv_stats s;
    hy_kv_stats(kv, &s);
    return s;
}

/* The tokens the pool holds for positions [0, n) of seq equal t. */
static bool holds(const struct hy_kv *kv, int seq, const int32_t *t, int n)
{
    struct hy_kv_seq_info si = hy_kv_seq_get(kv, seq);
    int bs = hy_kv_block_size(kv);
    for (int p = 0; p < n; p++)
        if (hy_kv_block_tokens(kv, si.blocks[p / bs])[p % bs] != t[p])
            return false;
    return true;
}

static void test_create_errors(void)
{
    struct hy_kv *kv = NULL;
    CHECK(hy_kv_create(&kv, 0, 16, 1, 1, NULL) == HY_E_RANGE && !kv);
    CHECK(hy_kv_create(&kv, 8, 5000, 1, 1, NULL) == HY_E_RANGE);
    CHECK(hy_kv_create(&kv, 8, 16, 0, 1, NULL) == HY_E_RANGE);
    CHECK(hy_kv_create(&kv, 8, 16, 9, 1, NULL) == HY_E_RANGE);
    CHECK(hy_kv_create(&kv, 8, 16, 2, 0, NULL) == HY_E_RANGE);
    CHECK(hy_kv_create(&kv, 8, 0, 2, 4, NULL) == HY_OK && kv);
    CHECK(hy_kv_block_size(kv) == HY_KV_BLOCK_SIZE_DEFAULT);
    CHECK(hy_kv_blocks_for(kv, 0) == 0 && hy_kv_blocks_for(kv, 16) == 1);
    CHECK(hy_kv_blocks_for(kv, 17) == 2);
    KV_CHECK(kv);
    hy_kv_destroy(kv);
    hy_kv_destroy(NULL);
}

/* Start, compute, free; then the identical prompt hits both full blocks. */
static void test_prefix_hit_identical(void)
{
    struct hy_kv *kv = make_kv(8, 4, 4, 8);
    int32_t t[10];
    seq_of(t, 10, 100);
    int cached;
    int a = start(kv, t, 10, &cached);
    struct hy_kv_seq_info ai = hy_kv_seq_get(kv, a);
    CHECK(cached == 0 && ai.n_tokens == 10 && ai.n_computed == 0 && ai.n_blocks == 3);
    CHECK(holds(kv, a, t, 10));
    CHECK(stats(kv).n_used == 3 && stats(kv).n_free == 5);
    hy_kv_seq_computed(kv, a, 10);
    KV_CHECK(kv);
    int32_t b0 = ai.blocks[0], b1 = ai.blocks[1], b2 = ai.blocks[2];
    hy_kv_seq_free(kv, a);
    KV_CHECK(kv);
    struct hy_kv_stats s = stats(kv);
    CHECK(s.n_cached == 2 && s.n_free == 6 && s.n_used == 0 && s.n_seqs == 0);

    int b = start(kv, t, 10, &cached);
    struct hy_kv_seq_info bi = hy_kv_seq_get(kv, b);
    CHECK(cached == 8 && bi.n_computed == 8);
    CHECK(bi.blocks[0] == b0 && bi.blocks[1] == b1 && bi.blocks[2] != b0 && bi.blocks[2] != b1);
    CHECK(hy_kv_block_refs(kv, b0) == 1 && hy_kv_block_refs(kv, b1) == 1);
    CHECK(bi.blocks[2] == b2); /* the freed partial block was on top of the free stack */
    s = stats(kv);
    CHECK(s.lookups == 2 && s.hits == 1 && s.tokens_queried == 20 && s.tokens_hit == 8);
    CHECK(s.n_cached == 0 && s.n_used == 3);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, b);
    hy_kv_destroy(kv);
}

/* A prompt made only of cached full blocks keeps its last block to compute; computing it
 * again swaps in the registered twin and frees the private copy. */
static void test_full_match_cap(void)
{
    struct hy_kv *kv = make_kv(8, 4, 4, 8);
    int32_t t[8];
    seq_of(t, 8, 7);
    int cached;
    int a = start(kv, t, 8, &cached);
    hy_kv_seq_computed(kv, a, 8);
    int32_t b1 = hy_kv_seq_get(kv, a).blocks[1];
    hy_kv_seq_free(kv, a);
    int b = start(kv, t, 8, &cached);
    CHECK(cached == 4);
    int32_t priv = hy_kv_seq_get(kv, b).blocks[1];
    CHECK(priv != b1 && hy_kv_block_refs(kv, priv) == 1 && hy_kv_block_refs(kv, b1) == 0);
    KV_CHECK(kv);
    hy_kv_seq_computed(kv, b, 4);
    CHECK(hy_kv_seq_get(kv, b).blocks[1] == b1);
    CHECK(hy_kv_block_refs(kv, b1) == 1 && hy_kv_block_refs(kv, priv) == 0);
    CHECK(stats(kv).n_used == 2 && stats(kv).n_cached == 0 && stats(kv).n_free == 6);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, b);
    /* one token: nothing can be cached */
    b = start(kv, t, 1, &cached);
    CHECK(cached == 0);
    hy_kv_seq_free(kv, b);
    KV_CHECK(kv);
    hy_kv_destroy(kv);
}

/* Two prompts with the same 8-token instruction share its two blocks while both run. */
static void test_shared_instruction(void)
{
    struct hy_kv *kv = make_kv(16, 4, 4, 8);
    int32_t ta[13], tb[11];
    seq_of(ta, 8, 1000);
    seq_of(tb, 8, 1000);
    seq_of(ta + 8, 5, 50);
    seq_of(tb + 8, 3, 70);
    int ca, cb;
    int a = start(kv, ta, 13, &ca);
    hy_kv_seq_computed(kv, a, 13);
    int b = start(kv, tb, 11, &cb);
    struct hy_kv_seq_info ai = hy_kv_seq_get(kv, a), bi = hy_kv_seq_get(kv, b);
    CHECK(ca == 0 && cb == 8);
    CHECK(ai.blocks[0] == bi.blocks[0] && ai.blocks[1] == bi.blocks[1]);
    CHECK(ai.blocks[2] != bi.blocks[2]);
    CHECK(hy_kv_block_refs(kv, ai.blocks[0]) == 2 && hy_kv_block_refs(kv, ai.blocks[1]) == 2);
    CHECK(holds(kv, a, ta, 13) && holds(kv, b, tb, 11));
    CHECK(stats(kv).n_used == 5);
    KV_CHECK(kv);
    /* a prompt sharing only the first block */
    int32_t tc[9];
    seq_of(tc, 4, 1000);
    seq_of(tc + 4, 5, 9000);
    int cc;
    int c = start(kv, tc, 9, &cc);
    CHECK(cc == 4);
    hy_kv_seq_computed(kv, c, 5);
    CHECK(hy_kv_seq_get(kv, c).blocks[1] != ai.blocks[1]);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, a);
    CHECK(hy_kv_block_refs(kv, bi.blocks[0]) == 2 && hy_kv_block_refs(kv, bi.blocks[1]) == 1);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, b);
    hy_kv_seq_free(kv, c);
    struct hy_kv_stats s = stats(kv);
    CHECK(s.n_used == 0 && s.n_cached == 4 && s.n_free == 12); /* a's 3 full blocks, c's 2nd */
    KV_CHECK(kv);
    hy_kv_destroy(kv);
}

/* Same parent, same tokens: not shared when the parent differs (exact prefix identity). */
static void test_parent_identity(void)
{
    struct hy_kv *kv = make_kv(16, 4, 4, 8);
    int32_t ta[9], tb[9];
    seq_of(ta, 4, 1);
    seq_of(tb, 4, 2);
    seq_of(ta + 4, 5, 500);
    seq_of(tb + 4, 5, 500);
    int ca, cb;
    int a = start(kv, ta, 9, &ca), b = start(kv, tb, 9, &cb);
    hy_kv_seq_computed(kv, a, 9);
    hy_kv_seq_computed(kv, b, 9);
    struct hy_kv_seq_info ai = hy_kv_seq_get(kv, a), bi = hy_kv_seq_get(kv, b);
    CHECK(ai.blocks[1] != bi.blocks[1]);
    CHECK(hy_kv_block_refs(kv, ai.blocks[1]) == 1 && hy_kv_block_refs(kv, bi.blocks[1]) == 1);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, a);
    hy_kv_seq_free(kv, b);
    hy_kv_destroy(kv);
}

/* Identical prompts started together both compute; the second switches to the first's blocks. */
static void test_concurrent_twins(void)
{
    struct hy_kv *kv = make_kv(16, 4, 4, 8);
    int32_t t[12];
    seq_of(t, 12, 300);
    int ca, cb;
    int a = start(kv, t, 12, &ca), b = start(kv, t, 12, &cb);
    CHECK(ca == 0 && cb == 0 && stats(kv).n_used == 6);
    hy_kv_seq_computed(kv, a, 12);
    hy_kv_seq_computed(kv, b, 5); /* completes b's block 0 only */
    struct hy_kv_seq_info ai = hy_kv_seq_get(kv, a), bi = hy_kv_seq_get(kv, b);
    CHECK(bi.blocks[0] == ai.blocks[0] && bi.blocks[1] != ai.blocks[1]);
    CHECK(stats(kv).n_used == 5);
    KV_CHECK(kv);
    hy_kv_seq_computed(kv, b, 7);
    bi = hy_kv_seq_get(kv, b);
    CHECK(memcmp(ai.blocks, bi.blocks, 3 * sizeof *ai.blocks) == 0);
    CHECK(stats(kv).n_used == 3 && hy_kv_block_refs(kv, ai.blocks[2]) == 2);
    CHECK(holds(kv, b, t, 12));
    KV_CHECK(kv);
    /* appending after a shared last block starts a private block */
    int32_t more[2] = {1, 2};
    CHECK(hy_kv_seq_append(kv, b, more, 2, NULL) == HY_OK);
    bi = hy_kv_seq_get(kv, b);
    CHECK(bi.n_blocks == 4 && hy_kv_block_refs(kv, bi.blocks[3]) == 1);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, a);
    hy_kv_seq_free(kv, b);
    KV_CHECK(kv);
    hy_kv_destroy(kv);
}

/* Freed sequences release their last block first; eviction takes the oldest release first. */
static void test_lru_order(void)
{
    struct hy_kv *kv = make_kv(6, 4, 3, 8);
    int32_t ta[12], tb[8], tc[12];
    seq_of(ta, 12, 10);
    seq_of(tb, 8, 40);
    seq_of(tc, 12, 80);
    int cached;
    int a = start(kv, ta, 12, &cached);
    hy_kv_seq_computed(kv, a, 12);
    int32_t ab[3];
    memcpy(ab, hy_kv_seq_get(kv, a).blocks, sizeof ab);
    hy_kv_seq_free(kv, a);
    int b = start(kv, tb, 8, &cached);
    hy_kv_seq_computed(kv, b, 8);
    int32_t bb[2];
    memcpy(bb, hy_kv_seq_get(kv, b).blocks, sizeof bb);
    hy_kv_seq_free(kv, b);
    CHECK(stats(kv).n_cached == 5 && stats(kv).n_free == 1);
    /* LRU now a2 a1 a0 b1 b0: c takes the free block, then evicts a2 and a1 */
    int c = start(kv, tc, 12, &cached);
    struct hy_kv_seq_info ci = hy_kv_seq_get(kv, c);
    CHECK(cached == 0 && ci.blocks[1] == ab[2] && ci.blocks[2] == ab[1]);
    CHECK(stats(kv).evictions == 2 && stats(kv).n_cached == 3);
    KV_CHECK(kv);
    /* a again: only a0 survives; b1 then b0 are evicted for the rest */
    a = start(kv, ta, 12, &cached);
    struct hy_kv_seq_info ai = hy_kv_seq_get(kv, a);
    CHECK(cached == 4 && ai.blocks[0] == ab[0] && ai.blocks[1] == bb[1] && ai.blocks[2] == bb[0]);
    CHECK(stats(kv).evictions == 4 && stats(kv).n_used == 6);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, c);
    b = start(kv, tb, 8, &cached);
    CHECK(cached == 0);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, a);
    hy_kv_seq_free(kv, b);
    hy_kv_destroy(kv);
}

/* A prefix hit makes the block most recently used again. */
static void test_lru_touch(void)
{
    struct hy_kv *kv = make_kv(4, 4, 2, 4);
    int32_t tp[5], tq[5], tr[12];
    seq_of(tp, 5, 1);
    seq_of(tq, 5, 20);
    seq_of(tr, 12, 60);
    int cached, s;
    s = start(kv, tp, 5, &cached);
    hy_kv_seq_computed(kv, s, 5);
    int32_t p0 = hy_kv_seq_get(kv, s).blocks[0];
    hy_kv_seq_free(kv, s);
    s = start(kv, tq, 5, &cached);
    hy_kv_seq_computed(kv, s, 5);
    int32_t q0 = hy_kv_seq_get(kv, s).blocks[0];
    hy_kv_seq_free(kv, s);
    s = start(kv, tp, 5, &cached); /* LRU p0 q0 -> q0 p0 */
    CHECK(cached == 4);
    hy_kv_seq_free(kv, s);
    s = start(kv, tr, 12, &cached); /* two free blocks and one eviction: q0 */
    struct hy_kv_seq_info ri = hy_kv_seq_get(kv, s);
    CHECK(ri.blocks[2] == q0 && hy_kv_block_refs(kv, p0) == 0);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, s);
    s = start(kv, tp, 5, &cached);
    CHECK(cached == 4 && hy_kv_seq_get(kv, s).blocks[0] == p0);
    hy_kv_seq_free(kv, s);
    KV_CHECK(kv);
    hy_kv_destroy(kv);
}

struct snap {
    unsigned char *buf;
    size_t size;
};

static struct snap snap_take(const struct hy_kv *kv)
{
    struct snap s;
    s.size = hy_kv_snapshot(kv, NULL, 0);
    s.buf = malloc(s.size);
    if (!s.buf)
        abort();
    CHECK(hy_kv_snapshot(kv, s.buf, s.size) == s.size);
    return s;
}

static bool snap_same(const struct hy_kv *kv, struct snap *s)
{
    struct snap now = snap_take(kv);
    bool same = now.size == s->size && memcmp(now.buf, s->buf, s->size) == 0;
    free(now.buf);
    free(s->buf);
    s->buf = NULL;
    return same;
}

static void test_append(void)
{
    struct hy_kv *kv = make_kv(8, 4, 2, 3);
    int32_t t[12];
    seq_of(t, 12, 5);
    int cached;
    int s = start(kv, t, 3, &cached);
    CHECK(hy_kv_seq_append(kv, s, t + 3, 1, NULL) == HY_OK && hy_kv_seq_get(kv, s).n_blocks == 1);
    CHECK(hy_kv_seq_append(kv, s, t + 4, 1, NULL) == HY_OK && hy_kv_seq_get(kv, s).n_blocks == 2);
    hy_kv_seq_computed(kv, s, 5);
    CHECK(hy_kv_seq_append(kv, s, t + 5, 0, NULL) == HY_OK);
    CHECK(hy_kv_seq_append(kv, s, t + 5, 7, NULL) == HY_OK && hy_kv_seq_get(kv, s).n_blocks == 3);
    CHECK(holds(kv, s, t, 12));
    KV_CHECK(kv);
    struct snap sn = snap_take(kv);
    struct hy_err err = {{0}};
    CHECK(hy_kv_seq_append(kv, s, t, 1, &err) == HY_E_RANGE && err.msg[0]);
    CHECK(hy_kv_seq_append(kv, s, t, -1, NULL) == HY_E_INVAL);
    CHECK(snap_same(kv, &sn));
    hy_kv_seq_computed(kv, s, 7);
    KV_CHECK(kv);
    hy_kv_seq_free(kv, s);
    CHECK(stats(kv).n_cached == 3 && stats(kv).n_free == 5);
    hy_kv_destroy(kv);
}

/* Every failing call leaves the pool bit-identical, including a start whose own cached
 * matches must not count as evictable space. */
static void test_failures_leave_pool_unchanged(void)
{
    struct hy_kv *kv = make_kv(8, 4, 3, 8);
    int32_t ta[20], tb[16], one = 9;
    seq_of(ta, 20, 100);
    seq_of(tb, 16, 500);
    int cached;
    int a = start(kv, ta, 12, &cached);
    hy_kv_seq_computed(kv, a, 12);
    hy_kv_seq_free(kv, a);
    int b = start(kv, tb, 16, &cached);
    CHECK(stats(kv).n_cached == 3 && stats(kv).n_free == 1 && stats(kv).n_used == 4);
    struct snap sn = snap_take(kv);
    int seq = -7, nc = -7;
    struct hy_err err = {{0}};
    /* 5 blocks: 3 matched (cached), 2 new, but only 1 block is free and the rest are ours */
    CHECK(hy_kv_seq_start(kv, ta, 20, &seq, &nc, &err) == HY_E_NOSPACE && err.msg[0]);
    CHECK(hy_kv_seq_start(kv, ta, 0, &seq, &nc, NULL) == HY_E_INVAL);
    CHECK(hy_kv_seq_start(kv, ta, 33, &seq, &nc, NULL) == HY_E_RANGE);
    CHECK(seq == -7 && nc == -7);
    CHECK(snap_same(kv, &sn));
    int c = start(kv, ta, 16, &cached); /* 3 matched + the free block */
    CHECK(cached == 12 && stats(kv).n_free == 0 && stats(kv).n_cached == 0);
    sn = snap_take(kv);
    CHECK(hy_kv_seq_append(kv, b, &one, 1, NULL) == HY_E_NOSPACE);
    CHECK(hy_kv_seq_start(kv, &one, 1, &seq, &nc, NULL) == HY_E_NOSPACE);
    CHECK(snap_same(kv, &sn));
    KV_CHECK(kv);
    hy_kv_seq_free(kv, c);
    int d = start(kv, &one, 1, &cached), e = start(kv, &one, 1, &cached);
    CHECK(stats(kv).n_seqs == 3 && stats(kv).n_free + stats(kv).n_cached > 0);
    sn = snap_take(kv);
    CHECK(hy_kv_seq_start(kv, &one, 1, &seq, &nc, NULL) == HY_E_NOSPACE); /* no handle */
    CHECK(snap_same(kv, &sn));
    KV_CHECK(kv);
    hy_kv_seq_free(kv, b);
    hy_kv_seq_free(kv, d);
    hy_kv_seq_free(kv, e);
    CHECK(stats(kv).n_used == 0 && stats(kv).n_seqs == 0);
    KV_CHECK(kv);
    hy_kv_destroy(kv);
}

/* ---- randomized run against a shadow KV memory ---- */

#define R_BLOCKS 40
#define R_BS 4
#define R_SEQS 8
#define R_BPS 12
#define R_MAXTOK (R_BPS * R_BS)
#define R_VOCAB 6 /* few ids, so equal blocks under different prefixes are common */
#define R_OPS 30000

struct slot_val {
    int32_t tok, pos; /* what the "forward pass" wrote; tok -1 = never written */
};

struct rstate {
    struct hy_kv *kv;
    uint64_t rng;
    struct slot_val shadow[R_BLOCKS][R_BS];
    int32_t prefix[4][R_MAXTOK];
    int32_t tok[R_SEQS][R_MAXTOK]; /* expected tokens per live handle */
    bool live[R_SEQS];
    int64_t n_hit_tokens, n_nospace;
};

static uint32_t rnd(struct rstate *r, uint32_t n)
{
    r->rng = r->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(r->rng >> 33) % n;
}

/* Blocks from index `first` on are new to seq: nothing valid is in them yet. */
static void shadow_clear_from(struct rstate *r, int seq, int first)
{
    struct hy_kv_seq_info si = hy_kv_seq_get(r->kv, seq);
    for (int i = first; i < si.n_blocks; i++)
        for (int j = 0; j < R_BS; j++)
            r->shadow[si.blocks[i]][j].tok = -1;
}

/* The computed positions of seq read back as its own tokens through its table. */
static bool shadow_ok(struct rstate *r, int seq)
{
    struct hy_kv_seq_info si = hy_kv_seq_get(r->kv, seq);
    for (int p = 0; p < si.n_computed; p++) {
        struct slot_val v = r->shadow[si.blocks[p / R_BS]][p % R_BS];
        if (v.tok != r->tok[seq][p] || v.pos != p)
            return false;
    }
    return holds(r->kv, seq, r->tok[seq], si.n_tokens);
}

static void r_start(struct rstate *r)
{
    int32_t t[R_MAXTOK];
    int n = 1 + (int)rnd(r, 40), shared = (int)rnd(r, (uint32_t)n + 1);
    memcpy(t, r->prefix[rnd(r, 4)], (size_t)shared * sizeof *t);
    for (int i = shared; i < n; i++)
        t[i] = (int32_t)rnd(r, R_VOCAB);
    struct snap sn = snap_take(r->kv);
    int seq, cached;
    hy_status st = hy_kv_seq_start(r->kv, t, n, &seq, &cached, NULL);
    if (st != HY_OK) {
        CHECK(st == HY_E_NOSPACE && snap_same(r->kv, &sn));
        r->n_nospace++;
        return;
    }
    free(sn.buf);
    CHECK(!r->live[seq] && cached % R_BS == 0 && cached < n);
    r->live[seq] = true;
    memcpy(r->tok[seq], t, (size_t)n * sizeof *t);
    r->n_hit_tokens += cached;
    shadow_clear_from(r, seq, cached / R_BS);
    CHECKF(shadow_ok(r, seq), "cached prefix of %d tokens reads back wrong", cached);
}

static void r_append(struct rstate *r, int seq)
{
    struct hy_kv_seq_info si = hy_kv_seq_get(r->kv, seq);
    int n = 1 + (int)rnd(r, 6), old_blocks = si.n_blocks;
    int32_t t[6];
    for (int i = 0; i < n; i++)
        t[i] = (int32_t)rnd(r, R_VOCAB);
    struct snap sn = snap_take(r->kv);
    hy_status st = hy_kv_seq_append(r->kv, seq, t, n, NULL);
    if (st != HY_OK) {
        CHECK((st == HY_E_NOSPACE || (st == HY_E_RANGE && si.n_tokens + n > R_MAXTOK)) &&
              snap_same(r->kv, &sn));
        r->n_nospace += st == HY_E_NOSPACE;
        return;
    }
    free(sn.buf);
    memcpy(r->tok[seq] + si.n_tokens, t, (size_t)n * sizeof *t);
    shadow_clear_from(r, seq, old_blocks);
}

/* The "forward pass": writes K/V of the next k tokens, then reports them computed. */
static void r_compute(struct rstate *r, int seq)
{
    struct hy_kv_seq_info si = hy_kv_seq_get(r->kv, seq);
    if (si.n_computed == si.n_tokens)
        return;
    int k = 1 + (int)rnd(r, (uint32_t)(si.n_tokens - si.n_computed));
    for (int p = si.n_computed; p < si.n_computed + k; p++)
        r->shadow[si.blocks[p / R_BS]][p % R_BS] = (struct slot_val){r->tok[seq][p], p};
    hy_kv_seq_computed(r->kv, seq, k);
}

static void test_random(void)
{
    struct rstate *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    r->kv = make_kv(R_BLOCKS, R_BS, R_SEQS, R_BPS);
    r->rng = 12345;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < R_MAXTOK; i++)
            r->prefix[k][i] = (int32_t)rnd(r, R_VOCAB);
    int bad = 0;
    for (int op = 0; op < R_OPS && bad < 5; op++) {
        int seq = (int)rnd(r, R_SEQS), what = (int)rnd(r, 10);
        if (what < 2)
            r_start(r);
        else if (!r->live[seq])
            continue;
        else if (what < 4)
            r_append(r, seq);
        else if (what < 9)
            r_compute(r, seq);
        else {
            hy_kv_seq_free(r->kv, seq);
            r->live[seq] = false;
        }
        struct hy_err err = {{0}};
        bool ok = hy_kv_check(r->kv, &err) == HY_OK;
        CHECKF(ok, "op %d: %s", op, err.msg);
        for (int s = 0; s < R_SEQS; s++)
            if (r->live[s] && !shadow_ok(r, s)) {
                CHECKF(false, "op %d: seq %d reads back wrong", op, s);
                ok = false;
            }
        bad += !ok;
    }
    for (int s = 0; s < R_SEQS; s++)
        if (r->live[s])
            hy_kv_seq_free(r->kv, s);
    struct hy_kv_stats st = stats(r->kv);
    KV_CHECK(r->kv);
    CHECK(st.n_used == 0 && st.n_seqs == 0 && st.n_free + st.n_cached == R_BLOCKS);
    CHECKF(r->n_hit_tokens > 1000 && r->n_nospace > 100 && st.evictions > 100,
           "the run should hit, run out and evict: %lld hit tokens, %lld no-space, %lld evictions",
           (long long)r->n_hit_tokens, (long long)r->n_nospace, (long long)st.evictions);
    fprintf(stderr, "random: %d ops, %lld tokens hit, %lld no-space, %lld evictions\n", R_OPS,
            (long long)r->n_hit_tokens, (long long)r->n_nospace, (long long)st.evictions);
    hy_kv_destroy(r->kv);
    free(r);
}

int main(void)
{
    test_create_errors();
    test_prefix_hit_identical();
    test_full_match_cap();
    test_shared_instruction();
    test_parent_identity();
    test_concurrent_twins();
    test_lru_order();
    test_lru_touch();
    test_append();
    test_failures_leave_pool_unchanged();
    test_random();
    return test_result();
}
