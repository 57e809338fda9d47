/* decode.c: ids -> text, as HF tokenizers' TokenizerImpl::decode with the ByteLevel decoder:
 *   - each id's string: the added token's (its normalized form when it has one, as
 *     simple_id_to_token gives), else the vocab's;
 *   - skip_special drops ids whose string is a special added token's content;
 *   - ByteLevel decode_chain: a token whose chars are all byte-level chars becomes those
 *     bytes, any other token its own UTF-8 bytes; the bytes of all tokens are joined and
 *     decoded with from_utf8_lossy (invalid sequences -> U+FFFD, as Python's "replace").
 * Each id's bytes are computed once at load (dec_pool). */
#include "core/utf8.h"
#include "tokenizer/tok_impl.h"

#include <stdlib.h>
#include <string.h>

/* GPT-2 bytes_to_unicode: printable bytes stand for themselves, the other 68 bytes map to
 * U+0100.. in increasing byte order (pre_tokenizers/byte_level.rs bytes_char). */
static bool byte_is_printable(int b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

void hy_tok_byte_level_tables(struct hy_tok *t)
{
    int n = 0;
    for (int b = 0; b < 256; b++) {
        uint32_t cp = byte_is_printable(b) ? (uint32_t)b : 256u + (uint32_t)n++;
        if (cp < 0x80) {
            t->b2u[b][0] = (unsigned char)cp;
            t->b2u_len[b] = 1;
        } else {
            t->b2u[b][0] = (unsigned char)(0xC0 | (cp >> 6));
            t->b2u[b][1] = (unsigned char)(0x80 | (cp & 0x3F));
            t->b2u_len[b] = 2;
        }
    }
}

int hy_tok_byte_of_char(uint32_t cp)
{
    if (cp < 256)
        return byte_is_printable((int)cp) ? (int)cp : -1;
    if (cp >= 256 + 68)
        return -1;
    /* the n-th non-printable byte: 0x00-0x20 (33), 0x7F-0xA0 (34), 0xAD */
    int n = (int)cp - 256;
    return n < 33 ? n : n < 67 ? 0x7F + (n - 33) : 0xAD;
}

/* ByteLevel decode of one token string into out (room for len bytes); returns its length. */
static size_t byte_level_decode(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        int cl;
        int b = hy_tok_byte_of_char(hy_utf8_decode((const unsigned char *)s + i, &cl));
        if (b < 0) {
            memcpy(out, s, len); /* not all byte-level chars: the token's own bytes */
            return len;
        }
        out[o++] = (char)b;
        i += (size_t)cl;
    }
    return o;
}

/* Which string each id decodes from: >= 0 a vocab entry, <= -2 added token -(v + 2). */
static hy_status id_sources(struct hy_tok *t, int32_t *src, struct hy_err *err)
{
    for (int32_t i = 0; i < t->n_ids; i++)
        src[i] = -1;
    for (uint32_t e = 0; e < t->vocab.n_ent; e++) {
        int32_t id = t->vocab.ent[e].val;
        if (src[id] != -1) {
            size_t n1, n2;
            const char *a = hy_tok_strmap_key(&t->vocab, (uint32_t)src[id], &n1);
            const char *b = hy_tok_strmap_key(&t->vocab, e, &n2);
            return hy_err_set(err, HY_E_FORMAT, "model.vocab: \"%.*s\" and \"%.*s\" share id %d",
                              (int)(n1 > 40 ? 40 : n1), a, (int)(n2 > 40 ? 40 : n2), b, id);
        }
        src[id] = (int32_t)e;
    }
    for (int32_t k = 0; k < t->n_added; k++) {
        int32_t id = t->added[k].id;
        if (src[id] <= -2)
            return hy_err_set(err, HY_E_UNSUPPORTED, "added_tokens: two tokens get id %d", id);
        src[id] = -(k + 2);
    }
    return HY_OK;
}

static const char *source_str(const struct hy_tok *t, int32_t src, size_t *len)
{
    if (src >= 0)
        return hy_tok_strmap_key(&t->vocab, (uint32_t)src, len);
    const struct hy_tok_added *a = &t->added[-src - 2];
    *len = a->match_len;
    return t->added_pool + a->match_off;
}

static hy_status fill_ids(struct hy_tok *t, const int32_t *src, struct hy_err *err)
{
    size_t pool = 0;
    for (int32_t i = 0; i < t->n_ids; i++) {
        size_t len = 0;
        if (src[i] != -1)
            source_str(t, src[i], &len);
        pool += len;
    }
    if (!(t->dec_pool = malloc(pool ? pool : 1)))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    size_t off = 0;
    for (int32_t i = 0; i < t->n_ids; i++) {
        if (src[i] == -1)
            continue;
        size_t len;
        const char *s = source_str(t, src[i], &len);
        t->dec_off[i] = (uint32_t)off;
        t->dec_len[i] = (uint32_t)byte_level_decode(s, len, t->dec_pool + off);
        off += t->dec_len[i];
        if (t->dec_len[i] > TOK_MAX_TOKEN_BYTES)
            return hy_err_set(err, HY_E_UNSUPPORTED,
                              "token id %d decodes to %u bytes, more than the %d supported", i,
                              t->dec_len[i], TOK_MAX_TOKEN_BYTES);
        t->id_flags[i] = TOK_ID_PRESENT;
        if (src[i] <= -2 && t->added[-src[i] - 2].special)
            t->id_flags[i] |= TOK_ID_SPECIAL;
        /* HF skips by string: is this id's string the content of a special token? */
        int32_t k = hy_tok_strmap_get(&t->added_map, s, len);
        if (k >= 0 && t->added[k].special)
            t->id_flags[i] |= TOK_ID_SKIP;
    }
    return HY_OK;
}

hy_status hy_tok_build_decode(struct hy_tok *t, struct hy_err *err)
{
    int32_t max = -1;
    for (uint32_t e = 0; e < t->vocab.n_ent; e++)
        max = t->vocab.ent[e].val > max ? t->vocab.ent[e].val : max;
    for (int32_t k = 0; k < t->n_added; k++)
        max = t->added[k].id > max ? t->added[k].id : max;
    t->n_ids = max + 1;
    size_t n = t->n_ids > 0 ? (size_t)t->n_ids : 1;
    int32_t *src = malloc(n * sizeof *src);
    t->dec_off = calloc(n, sizeof *t->dec_off);
    t->dec_len = calloc(n, sizeof *t->dec_len);
    t->id_flags = calloc(n, 1);
    if (!src || !t->dec_off || !t->dec_len || !t->id_flags) {
        free(src);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    hy_status st = id_sources(t, src, err);
    if (!st)
        st = fill_ids(t, src, err);
    free(src);
    return st;
}

static bool id_ok(const struct hy_tok *t, int32_t id)
{
    return id >= 0 && id < t->n_ids && (t->id_flags[id] & TOK_ID_PRESENT);
}

hy_status hy_tok_decode(const struct hy_tok *t, const int32_t *ids, size_t n, bool skip_special,
                        char *out, size_t cap, size_t *n_out, struct hy_err *err)
{
    *n_out = 0;
    size_t raw_len = 0;
    for (size_t i = 0; i < n; i++) {
        if (!id_ok(t, ids[i]))
            return hy_err_set(err, HY_E_RANGE,
                              "token id %d (position %zu) is not in the "
                              "vocabulary",
                              ids[i], i);
        raw_len += t->dec_len[ids[i]];
    }
    char *raw = malloc(raw_len + 1), *fixed = malloc(3 * raw_len + 1);
    if (!raw || !fixed) {
        free(raw);
        free(fixed);
        return hy_err_set(err, HY_E_NOMEM, "decode: out of memory");
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (skip_special && (t->id_flags[ids[i]] & TOK_ID_SKIP))
            continue;
        memcpy(raw + o, t->dec_pool + t->dec_off[ids[i]], t->dec_len[ids[i]]);
        o += t->dec_len[ids[i]];
    }
    size_t m = hy_utf8_repair(raw, o, fixed);
    *n_out = m;
    hy_status st = HY_OK;
    if (m > cap)
        st =
            hy_err_set(err, HY_E_NOSPACE, "decode: output needs %zu bytes, buffer has %zu", m, cap);
    else
        memcpy(out, fixed, m);
    free(raw);
    free(fixed);
    return st;
}

void hy_detok_init(struct hy_detok *d, const struct hy_tok *tok, bool skip_special)
{
    memset(d, 0, sizeof *d);
    d->tok = tok;
    d->skip_special = skip_special;
}

int hy_detok_push(struct hy_detok *d, int32_t id, char *out, size_t cap)
{
    const struct hy_tok *t = d->tok;
    /* Unknown ids (a model head wider than the vocab) are skipped, as HF decode does. */
    if (!id_ok(t, id) || (d->skip_special && (t->id_flags[id] & TOK_ID_SKIP)))
        return 0;
    char buf[3 + TOK_MAX_TOKEN_BYTES], fixed[HY_DETOK_MAX_OUT];
    size_t n = (size_t)d->n_pending;
    memcpy(buf, d->pending, n);
    memcpy(buf + n, t->dec_pool + t->dec_off[id], t->dec_len[id]);
    n += t->dec_len[id];
    size_t tail = hy_utf8_incomplete_tail(buf, n);
    size_t m = hy_utf8_repair(buf, n - tail, fixed);
    if (m > cap)
        return -1;
    memcpy(out, fixed, m);
    memcpy(d->pending, buf + n - tail, tail);
    d->n_pending = (int)tail;
    return (int)m;
}

int hy_detok_flush(struct hy_detok *d, char *out, size_t cap)
{
    if (d->n_pending == 0)
        return 0;
    if (cap < 3)
        return -1;
    memcpy(out, "\xEF\xBF\xBD", 3); /* an unfinished sequence is one maximal subpart */
    d->n_pending = 0;
    return 3;
}
