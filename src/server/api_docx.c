/* api_docx.c: POST /api/translate with "format": "docx": a Word document in, the same
 * document translated out (translate/docx.h: every paragraph's text over its own runs;
 * styles, tables and images untouched). {"format": "docx", "content": base64 of the .docx
 * (the body limit --max-body bounds it), "target_lang" / "tgt", "source_lang" / "src",
 * sampling fields, "max_tokens"} is answered {"format": "docx", "content": base64 of the
 * new .docx, "paragraphs": translated paragraphs, "source_lang", "target_lang", "model"}.
 * The paragraphs are /api/translate's job (tr.h: one document each, batched together);
 * their characters together are within --max-chars (else 413), at most HY_TR_MAX_ITEMS
 * paragraphs. Not streamed (400). A bad package is 400 with docx.h's one-line reason. */
#include "server/gen.h"
#include "server/tr.h"

#include "core/json.h"
#include "translate/docx.h"

#include <stdlib.h>
#include <string.h>

#define DOCX_LANG_MAX 64

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' || c == '-' ? 62 : c == '/' || c == '_' ? 63 : -1;
}

/* Decodes standard or URL-safe base64 (padding optional, no other characters) into a new
 * buffer; NULL when invalid (*n = 0) or out of memory (*n = 1). */
static unsigned char *b64_decode(const char *s, size_t len, size_t *n)
{
    while (len && s[len - 1] == '=')
        len--;
    unsigned char *out = malloc(len / 4 * 3 + 3);
    *n = out ? 0 : 1;
    if (!out || len % 4 == 1) {
        free(out);
        return NULL;
    }
    uint32_t acc = 0;
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = acc << 6 | (uint32_t)v;
        if (i % 4 == 3) {
            out[k++] = (unsigned char)(acc >> 16);
            out[k++] = (unsigned char)(acc >> 8);
            out[k++] = (unsigned char)acc;
            acc = 0;
        }
    }
    if (len % 4 == 2)
        out[k++] = (unsigned char)(acc >> 4);
    else if (len % 4 == 3) {
        out[k++] = (unsigned char)(acc >> 10);
        out[k++] = (unsigned char)(acc >> 2);
    }
    *n = k;
    return out;
}

static char *b64_encode(const unsigned char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; out && i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    if (out)
        *o = '\0';
    return out;
}

struct docx_job {
    struct hy_docx *d;
    const struct hy_lang *src, *tgt;
};

static void job_free(void *ctx)
{
    struct docx_job *j = ctx;
    hy_docx_close(j->d);
    free(j);
}

/* tr.h's answer: the translations written back into the package. */
static void answer(struct hy_http_req *req, void *ctx, const char *const *outs,
                   const size_t *lens, const struct hy_lang *const *srcs, size_t n)
{
    struct docx_job *j = ctx;
    void *out = NULL;
    size_t out_len = 0;
    struct hy_err err = {{0}};
    if (hy_docx_finish(j->d, outs, lens, &out, &out_len, &err)) {
        hy_http_error(req, 500, "translation_failed", "%s", err.msg);
        return;
    }
    char *b64 = b64_encode(out, out_len);
    free(out);
    if (!b64) {
        hy_http_error(req, 500, "out_of_memory", "out of memory");
        return;
    }
    const struct hy_lang *src = j->src ? j->src : n ? srcs[0] : NULL;
    json_t *r = json_pack("{s:s,s:s,s:I,s:o,s:s,s:s}", "format", "docx", "content", b64,
                          "paragraphs", (json_int_t)n, "source_lang",
                          src ? json_string(src->code) : json_null(), "target_lang",
                          j->tgt->code, "model", req->srv->cfg.model_name);
    free(b64);
    hy_http_json(req, 200, r);
}

static bool lang(struct hy_http_req *req, json_t *body, const char *key, const char *alias,
                 bool source, const struct hy_lang **out)
{
    char name[DOCX_LANG_MAX] = "";
    struct hy_err err = {{0}};
    const char *used = json_object_get(body, key) ? key : alias;
    *out = NULL;
    if (hy_json_get_str(body, used, !source, name, sizeof name, &err))
        return hy_http_error(req, 400, source ? "invalid_parameter" : "missing_target_lang",
                             "%s", err.msg), false;
    if (source && (!name[0] || !strcmp(name, "auto")))
        return true;
    if (!(*out = hy_lang_find(name)))
        return hy_http_error(req, 400, "unknown_language", "%s: unknown language '%s'", used,
                             name), false;
    return true;
}

/* The paragraphs' characters together, for --max-chars. */
static size_t chars_of(const char *const *t, const size_t *l, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < l[i]; k++)
            c += ((unsigned char)t[i][k] & 0xC0) != 0x80;
    return c;
}

bool hy_api_translate_docx(struct hy_http_req *req, json_t *body)
{
    struct hy_server *s = req->srv;
    struct hy_err err = {{0}};
    struct hy_tr_job job = {.sampling = hy_sampler_params_default(), .answer = answer,
                            .ctx_free = job_free};
    json_t *c = json_object_get(body, "content");
    bool stream = false;
    int64_t max_new = 0;
    if (!json_is_string(c))
        return hy_http_error(req, 400, "missing_content", "content: the .docx file in base64 "
                             "is required with format docx");
    if (hy_json_get_bool(body, "stream", false, &stream, &err) || stream)
        return hy_http_error(req, 400, "invalid_parameter", "stream: a .docx is answered "
                             "whole"), true;
    if (hy_json_get_int(body, "max_tokens", false, 1,
                        hy_engine_get_params(s->engine)->max_seq_tokens, &max_new, &err) ||
        hy_gen_parse_sampling(body, &job.sampling,
                              atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull, &err))
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg);
    struct docx_job *j = calloc(1, sizeof *j);
    if (!j)
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    if (!lang(req, body, "target_lang", "tgt", false, &j->tgt) ||
        !lang(req, body, "source_lang", "src", true, &j->src))
        return job_free(j), true;
    size_t n = 0;
    unsigned char *data = b64_decode(json_string_value(c), json_string_length(c), &n);
    if (!data) {
        job_free(j);
        return n ? hy_http_error(req, 500, "out_of_memory", "out of memory")
                 : hy_http_error(req, 400, "invalid_content", "content: not base64");
    }
    hy_status st = hy_docx_open(&j->d, data, n, &err);
    free(data);
    if (st) {
        job_free(j);
        return hy_http_error(req, st == HY_E_UNSUPPORTED ? 501 : st == HY_E_RANGE ? 413 : 400,
                             "invalid_document", "%s", err.msg);
    }
    const char *const *texts;
    const size_t *lens;
    job.n = hy_docx_texts(j->d, &texts, &lens);
    size_t chars = chars_of(texts, lens, job.n);
    if (job.n > HY_TR_MAX_ITEMS || chars > s->cfg.max_chars) {
        job_free(j);
        return hy_http_error(req, 413, "text_too_long", "the document holds %zu paragraphs of "
                             "%zu characters; the limits are %d paragraphs and %zu characters",
                             job.n, chars, HY_TR_MAX_ITEMS, s->cfg.max_chars);
    }
    job.texts = texts;
    job.lens = lens;
    job.src = j->src;
    job.tgt = j->tgt;
    job.max_new_tokens = (int)max_new;
    job.ctx = j;
    return hy_tr_start(req, &job);
}
