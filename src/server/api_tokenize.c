/* api_tokenize.c: POST /tokenize and POST /detokenize, the tokenizer of the loaded model
 * in the shapes of llama.cpp's server and vLLM (http.h has the contract). One shape per
 * input form, so a client of either gets what it expects:
 *   {"content": TEXT, "add_special", "parse_special"}  -> {"tokens": [...]}        (llama.cpp)
 *   {"prompt": TEXT, "add_special_tokens"}              -> {"tokens": [...], "count": n,
 *                                                          "max_model_len": n}     (vLLM)
 *   {"tokens": [...]}                                   -> {"content": TEXT}       (llama.cpp)
 * add_special / add_special_tokens put the model's BOS first (its chat template's first
 * token); control tokens written in the text become their ids unless parse_special is
 * false. Detokenizing renders control tokens as their text, so tokenize then detokenize
 * gives the text back. Bounded: the text by --max-body, the ids by TOK_MAX_IDS, each id
 * within the vocabulary; the work runs on the request's worker, never on the engine. */
#include "server/http.h"

#include "core/json.h"

#include <stdlib.h>
#include <string.h>

#define TOK_MAX_IDS (1 << 18) /* ids one /detokenize takes (also more than 1 MiB of text) */

/* The model's BOS: the first control token of its chat template (prompt.h). */
static int32_t bos_id(const struct hy_server *s)
{
    return hy_tok_find(s->tok, s->prompt.kind.chat == HY_PROMPT_7B ? "<|startoftext|>"
                                                        : "<｜hy_begin▁of▁sentence｜>");
}

/* An optional boolean field (null: absent); answers 400 naming it when it is not one. */
static bool opt_bool(struct hy_http_req *req, json_t *body, const char *key, bool *v)
{
    json_t *x = json_object_get(body, key);
    if (!x || json_is_null(x))
        return true;
    if (!json_is_boolean(x)) {
        hy_http_error(req, 400, "invalid_parameter", "%s: a boolean is required, not %s", key,
                      hy_json_type_name(x));
        return false;
    }
    *v = json_is_true(x);
    return true;
}

bool hy_api_tokenize(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    json_t *body = hy_http_body_json(req);
    if (!body)
        return true;
    json_t *content = json_object_get(body, "content");
    json_t *prompt = json_object_get(body, "prompt");
    bool vllm = !content && prompt;
    json_t *text = vllm ? prompt : content;
    bool add = vllm, parse = true, pieces = false, ok = true;
    if (!json_is_string(text) || (content && prompt))
        ok = !hy_http_error(req, 400, "invalid_parameter",
                            "the text to tokenize is required: \"content\" (llama.cpp) or "
                            "\"prompt\" (vLLM) as a string, one of them");
    else if (!opt_bool(req, body, vllm ? "add_special_tokens" : "add_special", &add) ||
             (!vllm && !opt_bool(req, body, "parse_special", &parse)) ||
             (!vllm && !opt_bool(req, body, "with_pieces", &pieces)))
        ok = false;
    else if (pieces)
        ok = !hy_http_error(req, 400, "unsupported_parameter",
                            "with_pieces: not supported by hymt (detokenize the ids instead)");
    size_t len = ok ? json_string_length(text) : 0, n = 0;
    int32_t *ids = ok ? malloc((len + 2) * sizeof *ids) : NULL; /* <= one id per byte */
    struct hy_err err = {{0}};
    if (ok && !ids)
        ok = !hy_http_error(req, 500, "out_of_memory", "out of memory");
    if (ok && add && (ids[0] = bos_id(s)) >= 0)
        n = 1;
    size_t got = 0;
    if (ok && hy_tok_encode(s->tok, json_string_value(text), len, parse, ids + n, len + 1, &got,
                            &err))
        ok = !hy_http_error(req, 400, "invalid_request", "%s", err.msg);
    if (ok) {
        n += got;
        json_t *list = json_array();
        for (size_t i = 0; list && i < n; i++)
            if (json_array_append_new(list, json_integer(ids[i]))) {
                json_decref(list);
                list = NULL;
            }
        json_t *r = list ? json_pack("{s:o}", "tokens", list) : NULL;
        if (r && vllm) {
            json_object_set_new(r, "count", json_integer((json_int_t)n));
            json_object_set_new(
                r, "max_model_len",
                json_integer(hy_engine_get_params(s->engine)->max_seq_tokens));
        }
        hy_http_json(req, 200, r);
    }
    free(ids);
    json_decref(body);
    return true;
}

bool hy_api_detokenize(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    json_t *body = hy_http_body_json(req);
    if (!body)
        return true;
    json_t *list = json_object_get(body, "tokens");
    size_t n = json_array_size(list);
    int32_t vocab = hy_tok_vocab_size(s->tok);
    if (!json_is_array(list) || n > TOK_MAX_IDS) {
        json_decref(body);
        return hy_http_error(req, 400, "invalid_parameter",
                             "tokens: an array of at most %d token ids is required", TOK_MAX_IDS);
    }
    struct hy_http_buf out = {0};
    struct hy_detok d;
    hy_detok_init(&d, s->tok, false);
    char piece[HY_DETOK_MAX_OUT];
    bool ok = hy_http_buf_add(&out, "", 0);
    for (size_t i = 0; ok && i < n; i++) {
        json_t *v = json_array_get(list, i);
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= vocab) {
            hy_http_buf_free(&out);
            json_decref(body);
            return hy_http_error(req, 400, "invalid_parameter",
                                 "tokens[%zu]: a token id in 0..%d is required", i, vocab - 1);
        }
        int w = hy_detok_push(&d, (int32_t)id, piece, sizeof piece);
        ok = w <= 0 || hy_http_buf_add(&out, piece, (size_t)w);
    }
    int w = ok ? hy_detok_flush(&d, piece, sizeof piece) : 0;
    ok = ok && (w <= 0 || hy_http_buf_add(&out, piece, (size_t)w));
    json_decref(body);
    if (!ok) {
        hy_http_buf_free(&out);
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    }
    hy_http_json(req, 200, json_pack("{s:s%}", "content", out.p, out.n));
    hy_http_buf_free(&out);
    return true;
}
