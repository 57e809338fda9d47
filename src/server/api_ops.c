/* api_ops.c: the operational routes: GET /health, /ready, /metrics, /v1/models, /openapi.json and the
 * web page at GET / (http.h has the contract). */
#include "translate/doc.h"
#include "server/http.h"
#include "server/keys.h"
#include "server/web_page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool hy_api_health(struct hy_http_req *req)
{
    return hy_http_json(req, 200, json_pack("{s:s}", "status", "ok"));
}

bool hy_api_ready(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    if (atomic_load(&s->draining))
        return hy_http_error(req, 503, "shutting_down", "the server is shutting down");
    if (!atomic_load(&s->ready))
        return hy_http_error(req, 503, "not_ready", "the model is still loading");
    char why[256];
    if (s->cfg.available && !s->cfg.available(s->cfg.hooks_ctx, why, sizeof why))
        return hy_http_error(req, 503, "queue_unavailable", "%s", why);
    return hy_http_json(req, 200,
                        json_pack("{s:s,s:s,s:b}", "status", "ready", "model", s->cfg.model_name,
                                  "demo", s->cfg.demo));
}

/* Appends m bytes of more to *text (*n bytes) and frees more; false when out of memory
 * (*text is then unchanged). */
static bool append(char **text, size_t *n, char *more, size_t m)
{
    char *all = m ? realloc(*text, *n + m) : *text;
    if (all && m) {
        memcpy(all + *n, more, m);
        *text = all;
        *n += m;
    }
    free(more);
    return all != NULL;
}

bool hy_api_metrics(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    size_t n = 0;
    char *text = hy_metrics_render(&s->metrics, atomic_load(&s->ready) ? s->engine : NULL,
                                   atomic_load(&s->draining), &n);
    if (!text)
        return hy_http_error(req, 500, "out_of_memory", "cannot render the metrics");
    char *more = NULL;
    size_t m = 0;
    FILE *f = s->cfg.metrics_extra ? open_memstream(&more, &m) : NULL;
    if (f) {
        s->cfg.metrics_extra(s->cfg.hooks_ctx, f);
        fclose(f);
    }
    bool ok = append(&text, &n, more, m);
    if (s->keys) { /* the per-key counters */
        size_t kn = 0;
        char *keys = hy_keys_render(s->keys, &kn);
        ok = keys && append(&text, &n, keys, kn) && ok;
    }
    if (!ok) {
        free(text);
        return hy_http_error(req, 500, "out_of_memory", "cannot render the metrics");
    }
    hy_http_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, n);
    free(text);
    return true;
}

#define DEMO_NOTE                                                                                  \
    "random-weight demo model: its output is meaningless. Serve a real checkpoint with "           \
    "hymt serve -m /path/to/Hunyuan-MT-7B"

bool hy_api_models(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    json_t *m = json_pack("{s:s,s:s,s:I,s:s,s:b,s:I}", "id", s->cfg.model_name, "object", "model",
                          "created", (json_int_t)s->created, "owned_by", "hymt", "demo",
                          s->cfg.demo, "max_chars", (json_int_t)s->cfg.max_chars);
    if (m && s->cfg.demo)
        json_object_set_new(m, "description", json_string(DEMO_NOTE));
    if (m && s->chimera) /* /api/translate's "ensemble" (--chimera): the page's switch */
        json_object_set_new(m, "ensemble_max", json_integer(HY_DOC_MAX_ENSEMBLE));
    return hy_http_json(req, 200, json_pack("{s:s,s:[o]}", "object", "list", "data", m));
}

bool hy_api_openapi(struct hy_http_req *req)
{
    size_t n = 0;
    const unsigned char *p = hy_openapi_doc(&n);
    return hy_http_text(req, 200, "application/json", p, n);
}

bool hy_api_page(struct hy_http_req *req)
{
    size_t n = 0;
    const unsigned char *p = hy_web_page(&n);
    return hy_http_text(req, 200, "text/html; charset=utf-8", p, n);
}
