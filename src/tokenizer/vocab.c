/* vocab.c: the lookup structures of a loaded tokenizer: string -> id (vocab, added
 * tokens), (id, id) -> merge, and the byte trie that finds added tokens in text.
 * All are filled at load and read-only afterwards. Open addressing, load factor <= 1/2. */
#include "tokenizer/tok_impl.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    return (uint32_t)h ^ (uint32_t)(h >> 32);
}

static uint32_t pow2_at_least(uint64_t n)
{
    uint32_t c = 16;
    while (c < n && c < (1u << 31))
        c <<= 1;
    return c;
}

hy_status hy_tok_strmap_init(struct hy_tok_strmap *m, uint32_t expect)
{
    memset(m, 0, sizeof *m);
    uint32_t slots = pow2_at_least((uint64_t)expect * 2 + 2);
    m->slot = calloc(slots, sizeof *m->slot);
    m->cap_ent = expect > 8 ? expect : 8;
    m->ent = malloc(m->cap_ent * sizeof *m->ent);
    m->pool_cap = (size_t)m->cap_ent * 8;
    m->pool = malloc(m->pool_cap);
    m->mask = slots - 1;
    if (!m->slot || !m->ent || !m->pool) {
        hy_tok_strmap_deinit(m);
        return HY_E_NOMEM;
    }
    return HY_OK;
}

void hy_tok_strmap_deinit(struct hy_tok_strmap *m)
{
    free(m->pool);
    free(m->ent);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

static hy_status strmap_grow_slots(struct hy_tok_strmap *m)
{
    uint32_t ns = (m->mask + 1) * 2;
    uint32_t *slot = calloc(ns, sizeof *slot);
    if (!slot)
        return HY_E_NOMEM;
    for (uint32_t e = 0; e < m->n_ent; e++) {
        uint32_t i = m->ent[e].hash & (ns - 1);
        while (slot[i])
            i = (i + 1) & (ns - 1);
        slot[i] = e + 1;
    }
    free(m->slot);
    m->slot = slot;
    m->mask = ns - 1;
    return HY_OK;
}

static hy_status strmap_reserve(struct hy_tok_strmap *m, size_t len)
{
    if (m->n_ent == m->cap_ent) {
        uint32_t nc = m->cap_ent * 2;
        void *p = realloc(m->ent, (size_t)nc * sizeof *m->ent);
        if (!p)
            return HY_E_NOMEM;
        m->ent = p;
        m->cap_ent = nc;
    }
    if (m->pool_len + len > m->pool_cap) {
        size_t nc = m->pool_cap * 2 > m->pool_len + len ? m->pool_cap * 2 : m->pool_len + len;
        void *p = realloc(m->pool, nc);
        if (!p)
            return HY_E_NOMEM;
        m->pool = p;
        m->pool_cap = nc;
    }
    if ((uint64_t)(m->n_ent + 1) * 2 > (uint64_t)m->mask + 1)
        return strmap_grow_slots(m);
    return HY_OK;
}

hy_status hy_tok_strmap_put(struct hy_tok_strmap *m, const char *s, size_t len, int32_t val,
                            int64_t *dup)
{
    if (dup)
        *dup = -1;
    if (len > UINT32_MAX || m->pool_len + len > UINT32_MAX || m->n_ent == UINT32_MAX - 1)
        return HY_E_RANGE;
    hy_status st = strmap_reserve(m, len);
    if (st)
        return st;
    uint32_t h = hash_bytes(s, len);
    uint32_t i = h & m->mask;
    for (; m->slot[i]; i = (i + 1) & m->mask) {
        const struct hy_tok_strent *e = &m->ent[m->slot[i] - 1];
        if (e->hash == h && e->len == len && !memcmp(m->pool + e->off, s, len)) {
            if (dup)
                *dup = m->slot[i] - 1;
            return HY_OK;
        }
    }
    struct hy_tok_strent *e = &m->ent[m->n_ent];
    e->off = (uint32_t)m->pool_len;
    e->len = (uint32_t)len;
    e->val = val;
    e->hash = h;
    memcpy(m->pool + m->pool_len, s, len);
    m->pool_len += len;
    m->slot[i] = ++m->n_ent;
    return HY_OK;
}

int32_t hy_tok_strmap_get(const struct hy_tok_strmap *m, const char *s, size_t len)
{
    if (!m->slot)
        return -1;
    uint32_t h = hash_bytes(s, len);
    for (uint32_t i = h & m->mask; m->slot[i]; i = (i + 1) & m->mask) {
        const struct hy_tok_strent *e = &m->ent[m->slot[i] - 1];
        if (e->hash == h && e->len == len && !memcmp(m->pool + e->off, s, len))
            return e->val;
    }
    return -1;
}

hy_status hy_tok_pairmap_init(struct hy_tok_pairmap *m, uint32_t expect)
{
    memset(m, 0, sizeof *m);
    uint32_t slots = pow2_at_least((uint64_t)expect * 2 + 2);
    m->key = malloc((size_t)slots * sizeof *m->key);
    m->rank = malloc((size_t)slots * sizeof *m->rank);
    m->new_id = malloc((size_t)slots * sizeof *m->new_id);
    if (!m->key || !m->rank || !m->new_id) {
        hy_tok_pairmap_deinit(m);
        return HY_E_NOMEM;
    }
    memset(m->key, 0xFF, (size_t)slots * sizeof *m->key);
    m->mask = slots - 1;
    return HY_OK;
}

void hy_tok_pairmap_deinit(struct hy_tok_pairmap *m)
{
    free(m->key);
    free(m->rank);
    free(m->new_id);
    memset(m, 0, sizeof *m);
}

/* The map is sized for all merges at init (expect), so it never needs to grow. */
void hy_tok_pairmap_put(struct hy_tok_pairmap *m, int32_t a, int32_t b, uint32_t rank,
                        int32_t new_id)
{
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint64_t h = k * 0x9E3779B97F4A7C15ull;
    uint32_t i = (uint32_t)(h >> 32) & m->mask;
    while (m->key[i] != UINT64_MAX && m->key[i] != k)
        i = (i + 1) & m->mask;
    if (m->key[i] == UINT64_MAX) {
        HY_ASSERT((uint64_t)(m->n + 1) * 2 <= (uint64_t)m->mask + 1);
        m->n++;
    }
    m->key[i] = k;
    m->rank[i] = rank;
    m->new_id[i] = new_id;
}

static hy_status trie_new_node(struct hy_tok_trie *t, unsigned char byte, uint32_t *out)
{
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 64;
        void *p = realloc(t->node, (size_t)nc * sizeof *t->node);
        if (!p)
            return HY_E_NOMEM;
        t->node = p;
        t->cap = nc;
    }
    t->node[t->n] = (struct hy_tok_trie_node){0, 0, -1, byte};
    *out = t->n++;
    return HY_OK;
}

hy_status hy_tok_trie_add(struct hy_tok_trie *t, const char *s, size_t len, int32_t tok)
{
    uint32_t cur;
    if (t->n == 0 && trie_new_node(t, 0, &cur))
        return HY_E_NOMEM;
    cur = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)s[i];
        uint32_t c = t->node[cur].child;
        while (c && t->node[c].byte != b)
            c = t->node[c].sibling;
        if (!c) {
            if (trie_new_node(t, b, &c))
                return HY_E_NOMEM;
            t->node[c].sibling = t->node[cur].child;
            t->node[cur].child = c;
        }
        cur = c;
    }
    if (len)
        t->first[(unsigned char)s[0]] = true;
    t->node[cur].tok = tok; /* a later token with the same string replaces the earlier */
    return HY_OK;
}

void hy_tok_trie_deinit(struct hy_tok_trie *t)
{
    free(t->node);
    memset(t, 0, sizeof *t);
}
