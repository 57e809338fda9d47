/* tr.h: the translation job behind /api/translate, shared by the compatible routes
 * (LibreTranslate's /translate, DeepL's /v2/translate): texts, each one document on the
 * engine (translate/doc.h), all begun together so that their segments share its batches,
 * answered whole through the caller's callback once every text is translated. Failures
 * (engine, deadline, shutdown, 429 at admission) are answered with hy_http_error, in the
 * request's error shape. Run by the request's worker; the job owns copies of the texts.
 * hy_tr_start returns as a route handler does (true: answered; false: the pump runs on). */
#ifndef HY_SERVER_TR_H
#define HY_SERVER_TR_H

#include "server/http.h"
#include "translate/glossary_store.h"
#include "translate/lang.h"

#define HY_TR_MAX_ITEMS 4096 /* texts of one job (a batch's texts, an HTML page's runs) */

/* Called once with every translation in the order of the texts: outs[i] (lens[i] bytes)
 * and the source language each was translated from (detected or given; NULL when
 * detection did not decide). It answers the request (hy_http_json or hy_http_error). */
typedef void (*hy_tr_answer_fn)(struct hy_http_req *req, void *ctx, const char *const *outs,
                                const size_t *lens, const struct hy_lang *const *srcs, size_t n);

struct hy_tr_job {
    const char *const *texts; /* [n] UTF-8, lens[i] bytes each, copied; none blank */
    const size_t *lens;
    size_t n;                 /* 0..HY_TR_MAX_ITEMS; 0 answers at once */
    const struct hy_sampler_params *samplings; /* [n] each text's, or NULL: sampling */
    const struct hy_lang *src; /* NULL: detected per text */
    const struct hy_lang *tgt;
    struct hy_sampler_params sampling;
    int max_new_tokens;       /* per segment; 0: the document path's default */
    struct hy_gstore_ref *glossary; /* a stored glossary (DeepL's glossary_id), or NULL;
                                     * taken: released when the job ends, whatever happens */
    const char *context;      /* text before each text (the context prompt), copied; or NULL */
    size_t context_len;
    hy_tr_answer_fn answer;
    void *ctx;                /* the callback's; freed with ctx_free (may be NULL) at the end */
    void (*ctx_free)(void *ctx);
};

/* Starts job for req (texts copied; ctx owned from here on, whatever happens). */
bool hy_tr_start(struct hy_http_req *req, const struct hy_tr_job *job);

#endif
