/* kv_opts.h: how the serving commands (serve, translate) size the engine for a backend.
 * --kv-memory SIZE takes that many bytes; without it, a device backend (CUDA) takes the
 * share --gpu-memory-fraction (default HY_CLI_GPU_FRACTION) of the device memory free
 * after the weights and the step scratch, and the CPU backend keeps the engine default.
 * A device backend also decodes more sequences together by default (HY_CLI_GPU_RUNNING:
 * a GPU step over 64 sequences costs little more than over 16). */
#ifndef HY_CLI_KV_OPTS_H
#define HY_CLI_KV_OPTS_H

#include "cli/args.h"
#include "engine/engine.h"

#define HY_CLI_GPU_FRACTION 0.9
#define HY_CLI_GPU_RUNNING 64

/* Usage lines for the two flags, for --help texts. */
#define HY_CLI_KV_USAGE                                                                    \
    "  --kv-memory SIZE           KV cache size, e.g. 512M (default: 1G on the CPU; on a\n" \
    "                             GPU a share of its free memory, below)\n"                \
    "  --gpu-memory-fraction F    share of the GPU memory free after the weights and\n"    \
    "                             the step scratch that the KV cache takes (default 0.9)\n"

/* Sets ep->kv_bytes / ep->kv_fraction for backend be from the flags' values (kv_bytes:
 * the parsed --kv-memory, 0 when not given; frac: 0 when not given), and ep->max_running
 * when max_running (--max-running) is 0 and be is a device. HY_E_INVAL naming the flag for
 * both sizes given, or a fraction given for the CPU backend. */
hy_status cli_kv_setup(int64_t kv_bytes, double frac, int64_t max_running,
                       const struct hy_backend *be, struct hy_engine_params *ep,
                       struct hy_err *err);

#endif
