/* engine_opts.h: the engine flags the serving commands (serve, translate) share, and how
 * they size the engine for a backend. --max-queue (default 1024: a document submits all
 * its segments at once), --max-running, --max-batch-tokens. --kv-memory SIZE takes that
 * many bytes; without it, a device backend (CUDA) takes the share --gpu-memory-fraction
 * (default HY_CLI_GPU_FRACTION) of the device memory free after the weights and the step
 * scratch, and the CPU backend keeps the engine default. A device backend also decodes more
 * sequences together by default (HY_CLI_GPU_RUNNING: a GPU step over 64 sequences costs
 * little more than over 16). */
#ifndef HY_CLI_ENGINE_OPTS_H
#define HY_CLI_ENGINE_OPTS_H

#include "cli/args.h"
#include "engine/engine.h"

#define HY_CLI_GPU_FRACTION 0.9
#define HY_CLI_GPU_RUNNING 64
#define HY_CLI_MAX_QUEUE 1024

/* The flags' values; zero / NULL when not given. */
struct cli_engine_flags {
    int64_t max_queue, max_running, mbt;
    const char *kv;
    double gpu_frac;
    int64_t kv_bytes; /* --kv-memory parsed by cli_engine_params */
    bool batch_inv;   /* --batch-invariant */
};

/* The flags' rows of a command's cli_opt table. */
#define CLI_ENGINE_OPTS(f)                                                                 \
    {"max-queue", CLI_INT, &(f)->max_queue, 1, 65536, false},                              \
    {"max-running", CLI_INT, &(f)->max_running, 1, 4096, false},                           \
    {"max-batch-tokens", CLI_INT, &(f)->mbt, 1, 1 << 20, false},                           \
    {"kv-memory", CLI_STR, &(f)->kv, 0, 0, false},                                         \
    {"gpu-memory-fraction", CLI_REAL, &(f)->gpu_frac, 0.01, 1, false},                     \
    {"batch-invariant", CLI_FLAG, &(f)->batch_inv, 0, 0, false}

/* Usage lines for the two KV flags, for --help texts. */
#define HY_CLI_KV_USAGE                                                                    \
    "  --kv-memory SIZE           KV cache size, e.g. 512M (default: 1G on the CPU; on a\n" \
    "                             GPU a share of its free memory, below)\n"                \
    "  --gpu-memory-fraction F    share of the GPU memory free after the weights and\n"    \
    "                             the step scratch that the KV cache takes (default 0.9)\n" \
    "  --batch-invariant          a request's output the same whatever it is batched with\n" \
    "                             (GPU; slower: fixed-order tensor-core sums, no split-K)\n"

/* The engine parameters the flags set before the backend is known, into *ep (from the
 * engine defaults); parses --kv-memory into f->kv_bytes. CLI_ERR (message printed) on a
 * bad size, else CLI_OK. */
int cli_engine_params(const struct cli_cmd *cmd, struct cli_engine_flags *f,
                      struct hy_engine_params *ep);

/* The rest, once the backend is known: ep->kv_bytes / ep->kv_fraction for backend be, and
 * ep->max_running when --max-running was not given and be is a device; --batch-invariant
 * switches be to batch-invariant numerics (backend.h; before the engine exists). HY_E_INVAL
 * naming the flag for both KV sizes given, or a fraction given for the CPU backend;
 * HY_E_UNSUPPORTED for --batch-invariant on a backend without it. */
hy_status cli_kv_setup(const struct cli_engine_flags *f, struct hy_backend *be,
                       struct hy_engine_params *ep, struct hy_err *err);

#endif
