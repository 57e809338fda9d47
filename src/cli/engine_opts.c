/* engine_opts.c: the engine flags of serve and translate (engine_opts.h has the contract). */
#include "cli/engine_opts.h"

int cli_engine_params(const struct cli_cmd *cmd, struct cli_engine_flags *f,
                      struct hy_engine_params *ep)
{
    *ep = hy_engine_params_default();
    ep->max_queue = f->max_queue ? (int)f->max_queue : HY_CLI_MAX_QUEUE;
    if (f->max_running)
        ep->max_running = (int)f->max_running;
    if (f->mbt)
        ep->max_batch_tokens = (int)f->mbt;
    f->kv_bytes = 0;
    if (f->kv && (f->kv_bytes = cli_parse_size(cmd, "--kv-memory", f->kv, 1, INT64_MAX)) < 0)
        return CLI_ERR;
    return CLI_OK;
}

hy_status cli_kv_setup(const struct cli_engine_flags *f, struct hy_backend *be,
                       struct hy_engine_params *ep, struct hy_err *err)
{
    const bool device = be->i->mem_info != NULL;
    if (f->kv_bytes > 0 && f->gpu_frac > 0)
        return hy_err_set(err, HY_E_INVAL, "give --kv-memory or --gpu-memory-fraction, not both");
    if (f->gpu_frac > 0 && !device)
        return hy_err_set(err, HY_E_INVAL, "--gpu-memory-fraction needs a GPU (--device "
                          "cuda); the CPU backend takes --kv-memory");
    if (f->batch_inv && !be->i->set_batch_invariant)
        return hy_err_set(err, HY_E_UNSUPPORTED, "--batch-invariant needs the CUDA backend "
                          "(--device cuda); the %s backend does not offer it", be->i->name);
    if (f->batch_inv) {
        hy_status st = be->i->set_batch_invariant(be, true, err);
        if (st)
            return st;
    }
    if (f->kv_bytes > 0)
        ep->kv_bytes = f->kv_bytes;
    else if (device)
        ep->kv_fraction = f->gpu_frac > 0 ? f->gpu_frac : HY_CLI_GPU_FRACTION;
    if (device && !f->max_running && ep->max_batch_tokens >= HY_CLI_GPU_RUNNING)
        ep->max_running = HY_CLI_GPU_RUNNING;
    return HY_OK;
}
