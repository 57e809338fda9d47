/* compat.h: what LibreTranslate's and DeepL's routes share: their texts (plain, or HTML /
 * XML whose markup must survive: translate/format.h finds the text runs) planned as one
 * translation job (tr.h), each run an item, optionally in several variants (the same runs
 * again, sampled more freely: LibreTranslate's alternatives), and each text put
 * back together from its runs' translations. A blank text, or markup without letters,
 * has no runs: it comes back as it was. Owns copies of everything; worker thread.
 * Errors: HY_E_INVAL (bad UTF-8, too many runs for one job), HY_E_NOMEM. */
#ifndef HY_SERVER_COMPAT_H
#define HY_SERVER_COMPAT_H

#include "server/tr.h"
#include "translate/format.h"

struct hy_compat {
    size_t n_texts;
    int n_var;                   /* variants of every text (1: none beyond the first) */
    char *buf;                   /* the texts, one after the other */
    size_t *off, *len;           /* [n_texts] text i: buf + off[i], len[i] bytes */
    struct hy_format_run **runs; /* [n_texts] each text's runs (malloc'd or NULL) */
    size_t *n_runs, *first;      /* [n_texts] its run count and first item index */
    size_t runs_total;           /* items of one variant */
    const char **item_text;      /* [n_var * runs_total] the job's texts */
    size_t *item_len;
    struct hy_sampler_params *samplings; /* [n_var * runs_total] (see plan) */
};

/* Plans texts (a JSON array of strings, validated by the caller) in format f (TEXT or
 * HTML) with n_var variants. The first variant is sampled with `first`; the others, which
 * should differ from it, with temperature 1, top_p 0.95, no top-k, first's repetition
 * penalty, and seed first.seed + v. */
hy_status hy_compat_plan(struct hy_compat *c, json_t *texts, enum hy_format f, int n_var,
                         const struct hy_sampler_params *first, struct hy_err *err);
/* The job's texts, lengths, count and samplings (the rest of job is the caller's). */
void hy_compat_job(const struct hy_compat *c, struct hy_tr_job *job);
/* Text i's variant v put together from the job's outs/lens (tr.h's answer arguments):
 * *out malloc'd, *out_len bytes. */
hy_status hy_compat_result(const struct hy_compat *c, const char *const *outs,
                           const size_t *lens, size_t i, int v, char **out, size_t *out_len,
                           struct hy_err *err);
/* The source language text i was translated from: its first run's that detection decided
 * (NULL when none). */
const struct hy_lang *hy_compat_source(const struct hy_compat *c,
                                       const struct hy_lang *const *srcs, size_t i);
/* Whether the server's model translates l: its generation's languages (lang.h), which
 * GET /languages and GET /v2/languages list. Before the model is ready (those routes need
 * none) every language of the table: the generation is published with ready. */
bool hy_compat_model_has(struct hy_server *s, const struct hy_lang *l);
/* Frees what plan allocated; accepts a zeroed struct. */
void hy_compat_free(struct hy_compat *c);

#endif
