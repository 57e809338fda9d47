/* tok_impl.h: internals shared by the tokenizer's .c files (not a public API).
 * A struct hy_tok is built once by load.c and never written afterwards; every encode or
 * decode call keeps its mutable state (scratch strings, regex regions, BPE heap) in a
 * per-call struct, so any number of threads may use one hy_tok at once.
 *
 * The encode pipeline, as HF tokenizers runs it (tokenizer/mod.rs encode_single_sequence):
 *   1. split the text on added tokens whose "normalized" is false (added.c);
 *   2. each remaining piece: normalizer (NFC), then split on the normalized added tokens;
 *   3. each remaining piece goes through the pre-tokenizer stages in order (encode.c);
 *   4. each final piece is a BPE "word" (bpe.c).
 * Every stage maps one piece to a list of pieces independently of the other pieces, so the
 * pipeline runs depth first: no piece lists are materialised. */
#ifndef HY_TOKENIZER_TOK_IMPL_H
#define HY_TOKENIZER_TOK_IMPL_H

#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <oniguruma.h>

#define TOK_MAX_ID (1 << 24)   /* larger ids are rejected at load (tables are per id) */
#define TOK_MAX_STAGES 16      /* pre-tokenizer stages, nested Sequences flattened */
#define TOK_DIRECT_CHARS 0x800 /* single chars below this have a direct id table */
/* Longest decoded token: the detokenizer's output for one push is at most 3 bytes per
 * input byte (U+FFFD for each), input = up to 3 pending bytes + the token. */
#define TOK_MAX_TOKEN_BYTES (HY_DETOK_MAX_OUT / 3 - 3)

/* ---- string -> int32 map over a byte pool (vocab.c) ---- */
struct hy_tok_strent {
    uint32_t off, len; /* key bytes in pool */
    int32_t val;
    uint32_t hash;
};
struct hy_tok_strmap {
    char *pool;
    size_t pool_len, pool_cap;
    struct hy_tok_strent *ent;
    uint32_t n_ent, cap_ent;
    uint32_t *slot; /* entry index + 1, 0 = empty; power-of-two size */
    uint32_t mask;
};
hy_status hy_tok_strmap_init(struct hy_tok_strmap *m, uint32_t expect);
void hy_tok_strmap_deinit(struct hy_tok_strmap *m);
/* Inserts key -> val. When the key is present already, nothing changes and *dup (if
 * non-NULL) is set to the existing entry's index; otherwise *dup = -1. */
hy_status hy_tok_strmap_put(struct hy_tok_strmap *m, const char *s, size_t len, int32_t val,
                            int64_t *dup);
int32_t hy_tok_strmap_get(const struct hy_tok_strmap *m, const char *s, size_t len); /* -1 */
static inline const char *hy_tok_strmap_key(const struct hy_tok_strmap *m, uint32_t i, size_t *len)
{
    *len = m->ent[i].len;
    return m->pool + m->ent[i].off;
}

/* ---- (id, id) -> (rank, new id) map for the merges (vocab.c) ---- */
struct hy_tok_pairmap {
    uint64_t *key; /* (a << 32 | b); UINT64_MAX = empty */
    uint32_t *rank;
    int32_t *new_id;
    uint32_t mask, n;
};
hy_status hy_tok_pairmap_init(struct hy_tok_pairmap *m, uint32_t expect);
void hy_tok_pairmap_deinit(struct hy_tok_pairmap *m);
/* Inserts or overwrites (a later merge of the same pair wins, as in HF's HashMap collect). */
void hy_tok_pairmap_put(struct hy_tok_pairmap *m, int32_t a, int32_t b, uint32_t rank,
                        int32_t new_id);
static inline bool hy_tok_pairmap_get(const struct hy_tok_pairmap *m, int32_t a, int32_t b,
                                      uint32_t *rank, int32_t *new_id)
{
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint64_t h = k * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = (uint32_t)(h >> 32) & m->mask;; i = (i + 1) & m->mask) {
        if (m->key[i] == k) {
            *rank = m->rank[i];
            *new_id = m->new_id[i];
            return true;
        }
        if (m->key[i] == UINT64_MAX)
            return false;
    }
}

/* ---- added tokens (added.c) ---- */
struct hy_tok_added {
    int32_t id;
    uint32_t off, len;             /* content, in hy_tok.added_pool */
    uint32_t match_off, match_len; /* the string matched in text: content, or for
                                      normalized tokens its normalized form */
    bool special, single_word, lstrip, rstrip, normalized;
};
/* Byte trie over the matched strings; leftmost-longest search. */
struct hy_tok_trie_node {
    uint32_t child;   /* first child, 0 = none (node 0 is the root, never a child) */
    uint32_t sibling; /* next sibling, 0 = none */
    int32_t tok;      /* index into hy_tok.added ending here, or -1 */
    unsigned char byte;
};
struct hy_tok_trie {
    struct hy_tok_trie_node *node;
    uint32_t n, cap;
    bool first[256]; /* bytes that start some string: the fast skip */
};
hy_status hy_tok_trie_add(struct hy_tok_trie *t, const char *s, size_t len, int32_t tok);
void hy_tok_trie_deinit(struct hy_tok_trie *t);

/* ---- pre-tokenizer stages ---- */
enum hy_tok_stage_kind { TOK_STAGE_SPLIT, TOK_STAGE_BYTELEVEL };
enum hy_tok_behavior {
    TOK_REMOVED,
    TOK_ISOLATED,
    TOK_MERGED_PREV,
    TOK_MERGED_NEXT,
    TOK_CONTIGUOUS,
};
struct hy_tok_stage {
    enum hy_tok_stage_kind kind;
    OnigRegex re; /* Split: its pattern; ByteLevel: hy_tok.bytelevel_re or NULL */
    enum hy_tok_behavior behavior;
    bool invert;           /* Split */
    bool add_prefix_space; /* ByteLevel */
};

struct hy_tok {
    /* BPE model */
    struct hy_tok_strmap vocab; /* token spelling (byte-level chars) -> id */
    struct hy_tok_pairmap merges;
    int32_t char_id[TOK_DIRECT_CHARS]; /* vocab id of each single char, -1 if absent */
    bool ignore_merges, fuse_unk;
    int32_t unk_id; /* -1: none (unknown chars are dropped, as HF does) */

    /* added tokens */
    struct hy_tok_added *added;
    int32_t n_added;
    char *added_pool;
    struct hy_tok_strmap added_map;         /* content -> index in added */
    struct hy_tok_trie trie_raw, trie_norm; /* normalized false / true */
    OnigRegex word_re;                      /* \w, for single_word tokens (else NULL) */

    /* normalizer and pre-tokenizer */
    bool nfc;
    struct hy_tok_stage stage[TOK_MAX_STAGES];
    int n_stage;
    OnigRegex bytelevel_re;    /* the GPT-2 regex, when a ByteLevel stage uses it */
    unsigned char b2u[256][2]; /* byte -> its byte-level char, UTF-8 (1 or 2 bytes) */
    unsigned char b2u_len[256];

    /* decoding, per id in [0, n_ids) */
    int32_t n_ids;
    uint32_t *dec_off, *dec_len; /* decoded bytes in dec_pool */
    uint8_t *id_flags;           /* TOK_ID_* */
    char *dec_pool;
};
enum {
    TOK_ID_PRESENT = 1, /* the id exists (vocab or added) */
    TOK_ID_SKIP = 2,    /* dropped by skip_special (its string is a special token's) */
    TOK_ID_SPECIAL = 4, /* an added token marked special */
};

/* ---- per-call scratch (encode.c, bpe.c) ---- */
struct hy_tok_sink {
    int32_t *ids;
    size_t cap, n; /* n counts past cap: the size needed */
};
static inline void hy_tok_sink_put(struct hy_tok_sink *s, int32_t id)
{
    if (s->n < s->cap)
        s->ids[s->n] = id;
    s->n++;
}
struct hy_tok_bpe_sym;
struct hy_tok_bpe_item;
struct hy_tok_bpe_scratch {
    struct hy_tok_bpe_sym *sym;
    struct hy_tok_bpe_item *heap;
    size_t sym_cap, heap_cap;
};
/* BPE of one pre-token (valid UTF-8, n > 0) into out. HY_E_NOMEM only. */
hy_status hy_tok_bpe(const struct hy_tok *t, const char *s, size_t n, struct hy_tok_bpe_scratch *sc,
                     struct hy_tok_sink *out, struct hy_err *err);
void hy_tok_bpe_scratch_free(struct hy_tok_bpe_scratch *sc);

/* Splits s[0..n) on the added tokens of trie (HF AddedVocabulary::find_matches): calls
 * piece(ctx, id, NULL, 0) for a token and piece(ctx, -1, text, len) for the text between
 * (non-empty). Special tokens are skipped (left in the text) unless allow_special. */
typedef hy_status (*hy_tok_piece_fn)(void *ctx, int32_t id, const char *s, size_t n);
hy_status hy_tok_split_added(const struct hy_tok *t, const struct hy_tok_trie *trie, const char *s,
                             size_t n, bool allow_special, hy_tok_piece_fn piece, void *ctx);

/* ---- regexes (regex.c) ---- */
/* Compiles pattern[0..len) as HF does; `what` names it in errors (HY_E_FORMAT). */
hy_status hy_tok_regex_compile(OnigRegex *out, const char *pattern, size_t len, const char *what,
                               struct hy_err *err);
/* Compiles a String pattern: the text escaped as Rust's regex::escape does, then as above. */
hy_status hy_tok_regex_compile_literal(OnigRegex *out, const char *text, size_t len,
                                       const char *what, struct hy_err *err);
void hy_tok_regex_free(OnigRegex re); /* accepts NULL */
/* onig::FindMatches (the iterator HF's SysRegex::find_iter returns). */
struct hy_tok_finditer {
    OnigRegex re;
    const unsigned char *s;
    size_t n, last_end;
    int64_t last_match_end; /* -1: none yet */
    OnigRegion *region;     /* caller-owned */
};
/* 1: a match [*start, *end); 0: no more; -1: Oniguruma error (err filled). */
int hy_tok_finditer_next(struct hy_tok_finditer *it, size_t *start, size_t *end,
                         struct hy_err *err);
/* True when the char at s[0..n) is a \w character (Unicode word). */
bool hy_tok_regex_is_word(OnigRegex word_re, const char *s, size_t n);

/* ---- Unicode data (unicode_tables.c, generated by gen_unicode_tables.sh) ---- */
struct hy_tok_range {
    uint32_t lo, hi; /* inclusive */
};
/* What HF's Oniguruma (Unicode 16.0) matches with \p{X} beyond this libonig (14.0). */
extern const struct hy_tok_range hy_tok_prop_extra_L[], hy_tok_prop_extra_N[],
    hy_tok_prop_extra_M[], hy_tok_prop_extra_P[], hy_tok_prop_extra_S[];
extern const int hy_tok_prop_extra_L_n, hy_tok_prop_extra_N_n, hy_tok_prop_extra_M_n,
    hy_tok_prop_extra_P_n, hy_tok_prop_extra_S_n;
/* Chars HF's NFC (Unicode 9.0 tables) leaves alone but utf8proc would not. */
extern const struct hy_tok_range hy_tok_nfc_keep[];
extern const int hy_tok_nfc_keep_n;
bool hy_tok_in_ranges(const struct hy_tok_range *r, int n, uint32_t cp);

/* ---- loading helpers (load.c, load_pipeline.c, decode.c, load_gguf.c) ---- */
/* A tokenizer from a parsed tokenizer.json document (what names it in errors). */
hy_status hy_tok_from_json(struct hy_tok **out, const json_t *root, const char *what,
                           struct hy_err *err);
/* The normalizer and pre_tokenizer JSON of a tokenizer.ggml.pre name (new references);
 * HY_E_UNSUPPORTED for other names. */
hy_status hy_tok_gguf_pipeline(const char *pre, json_t **normalizer, json_t **pre_tokenizer);
/* A required field that is missing is a malformed file: HY_E_FORMAT, not HY_E_NOTFOUND. */
static inline hy_status hy_tok_format_status(hy_status st)
{
    return st == HY_E_NOTFOUND ? HY_E_FORMAT : st;
}
hy_status hy_tok_load_normalizer(struct hy_tok *t, const json_t *j, struct hy_err *err);
hy_status hy_tok_load_pre_tokenizer(struct hy_tok *t, const json_t *j, struct hy_err *err);
hy_status hy_tok_load_decoder(const json_t *j, struct hy_err *err);
hy_status hy_tok_load_added(struct hy_tok *t, const json_t *j, struct hy_err *err);
hy_status hy_tok_build_decode(struct hy_tok *t, struct hy_err *err);
/* NFC of s[0..n) into a malloc'd buffer (*out, *out_n); *out = NULL when s is unchanged. */
hy_status hy_tok_nfc(const char *s, size_t n, char **out, size_t *out_n, struct hy_err *err);
void hy_tok_byte_level_tables(struct hy_tok *t);
/* Byte a byte-level char stands for, or -1 when cp is not one. */
int hy_tok_byte_of_char(uint32_t cp);

#endif
