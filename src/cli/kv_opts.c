/* kv_opts.c: the KV pool flags of serve and translate (kv_opts.h has the contract). */
#include "cli/kv_opts.h"

hy_status cli_kv_setup(int64_t kv_bytes, double frac, int64_t max_running,
                       const struct hy_backend *be, struct hy_engine_params *ep,
                       struct hy_err *err)
{
    const bool device = be->i->mem_info != NULL;
    if (kv_bytes > 0 && frac > 0)
        return hy_err_set(err, HY_E_INVAL, "give --kv-memory or --gpu-memory-fraction, not both");
    if (frac > 0 && !device)
        return hy_err_set(err, HY_E_INVAL, "--gpu-memory-fraction needs a GPU (--device "
                          "cuda); the CPU backend takes --kv-memory");
    if (kv_bytes > 0)
        ep->kv_bytes = kv_bytes;
    else if (device)
        ep->kv_fraction = frac > 0 ? frac : HY_CLI_GPU_FRACTION;
    if (device && !max_running && ep->max_batch_tokens >= HY_CLI_GPU_RUNNING)
        ep->max_running = HY_CLI_GPU_RUNNING;
    return HY_OK;
}
