/* logprobs.c: a generation's log-probabilities as OpenAI's JSON (gen.h). */
#include "server/gen.h"

#include "core/utf8.h"

#include <string.h>

size_t hy_gen_n_logprobs(const struct hy_gen *g)
{
    return g->lp.n / sizeof(struct hy_logprob);
}

static const struct hy_logprob *entry(const struct hy_gen *g, size_t i)
{
    return (const struct hy_logprob *)(const void *)g->lp.p + i;
}

/* A token's bytes: its text through a fresh detokenizer, what that holds back of an
 * incomplete character included. Special tokens keep their text. */
static size_t token_bytes(const struct hy_tok *tok, int32_t id, char *out, size_t cap)
{
    struct hy_detok d;
    hy_detok_init(&d, tok, false);
    int w = hy_detok_push(&d, id, out, cap);
    size_t n = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < d.n_pending && n < cap; i++)
        out[n++] = (char)d.pending[i];
    return n;
}

/* The token's string: its bytes when whole UTF-8, else "bytes:\xNN..." (OpenAI's way). */
static json_t *token_string(const char *b, size_t n)
{
    if (hy_utf8_validate(b, n) == n)
        return json_stringn(b, n);
    char s[8 + 4 * HY_DETOK_MAX_OUT + 8];
    size_t o = (size_t)snprintf(s, sizeof s, "bytes:");
    for (size_t i = 0; i < n && o + 5 < sizeof s; i++)
        o += (size_t)snprintf(s + o, sizeof s - o, "\\x%02x", (unsigned char)b[i]);
    return json_stringn(s, o);
}

static json_t *byte_array(const char *b, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer((unsigned char)b[i]));
    return a;
}

/* {token, logprob, bytes} of one id, plus what `extra` adds. */
static json_t *chat_token(const struct hy_tok *tok, int32_t id, float lp)
{
    char b[HY_DETOK_MAX_OUT + 8];
    size_t n = token_bytes(tok, id, b, sizeof b);
    return json_pack("{s:o,s:f,s:o}", "token", token_string(b, n), "logprob", (double)lp,
                     "bytes", byte_array(b, n));
}

json_t *hy_gen_logprobs_chat(const struct hy_gen *g, size_t from, size_t to)
{
    const struct hy_tok *tok = g->req->srv->tok;
    json_t *content = json_array();
    for (size_t i = from; content && i < to; i++) {
        const struct hy_logprob *e = entry(g, i);
        json_t *t = chat_token(tok, e->id, e->logprob), *top = json_array();
        for (int j = 0; top && j < e->n_top; j++)
            json_array_append_new(top, chat_token(tok, e->top[j].id, e->top[j].logprob));
        json_object_set_new(t, "top_logprobs", top);
        json_array_append_new(content, t);
    }
    return json_pack("{s:o,s:n}", "content", content, "refusal");
}

json_t *hy_gen_logprobs_completion(const struct hy_gen *g, size_t from, size_t to,
                                   size_t *text_off)
{
    const struct hy_tok *tok = g->req->srv->tok;
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(),
           *offs = json_array();
    char b[HY_DETOK_MAX_OUT + 8];
    for (size_t i = from; i < to; i++) {
        const struct hy_logprob *e = entry(g, i);
        size_t n = token_bytes(tok, e->id, b, sizeof b);
        json_array_append_new(tokens, token_string(b, n));
        json_array_append_new(lps, json_real(e->logprob));
        json_array_append_new(offs, json_integer((json_int_t)*text_off));
        for (size_t c = 0; c < n; c++) /* offsets in characters, as vLLM counts them */
            *text_off += ((unsigned char)b[c] & 0xC0) != 0x80;
        json_t *top = json_object(); /* {token: logprob}; a repeated string keeps the first */
        for (int j = 0; j < e->n_top; j++) {
            size_t m = token_bytes(tok, e->top[j].id, b, sizeof b);
            json_t *k = token_string(b, m);
            if (k && !json_object_get(top, json_string_value(k)))
                json_object_set_new(top, json_string_value(k), json_real(e->top[j].logprob));
            json_decref(k);
        }
        json_array_append_new(tops, top);
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps,
                     "top_logprobs", tops, "text_offset", offs);
}
