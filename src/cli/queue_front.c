/* queue_front.c: a command's tokenizer and remote engine on the Redis queue
 * (queue_front.h). */
#include "cli/queue_front.h"

#ifdef HYMT_QUEUE
#include "queue/queue.h"
#endif

#include <stdio.h>
#include <string.h>

hy_status cli_queue_front_open(struct cli_queue_front *f, const char *url, const char *model,
                               const struct hy_engine_params *ep, double result_ttl_s,
                               struct hy_err *err)
{
    memset(f, 0, sizeof *f);
#ifdef HYMT_QUEUE
    /* ids past the tokenizer's are skipped by the detokenizer, as from a head wider than
     * the vocabulary: the bound only keeps them in range */
    struct hy_queue_opts qo = {.result_ttl_s = result_ttl_s, .capacity = ep->max_queue,
                               .vocab = 1 << 24};
    struct hy_engine_params fp = *ep;
    fp.max_running = ep->max_queue; /* any job in flight may have news (doc.c's window) */
    hy_status st = hy_queue_url_parse(url, &qo.url, err);
    if (!st)
        st = hy_tok_load(&f->tok, model, err);
    if (!st)
        st = hy_queue_client_create(&f->qc, &qo, err);
    if (!st)
        st = hy_engine_create_remote(&f->e, hy_queue_client_iface(), f->qc, &fp, err);
    if (!st)
        snprintf(f->where, sizeof f->where, "redis://%s:%d/%d", qo.url.host, qo.url.port,
                 qo.url.db);
    if (st)
        cli_queue_front_close(f);
    return st;
#else
    (void)url, (void)model, (void)ep, (void)result_ttl_s;
    return hy_err_set(err, HY_E_UNSUPPORTED, "--queue: this hymt was built without the Redis "
                                             "queue (install libhiredis-dev and rebuild)");
#endif
}

void cli_queue_front_close(struct cli_queue_front *f)
{
    hy_engine_destroy(f->e);
#ifdef HYMT_QUEUE
    hy_queue_client_destroy(f->qc);
#endif
    hy_tok_destroy(f->tok);
    memset(f, 0, sizeof *f);
}
