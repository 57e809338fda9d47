/* load.h: finding and loading the model a command names. cli_model_resolve turns -m MODEL
 * (a folder, a GGUF file or a Hugging Face repo id in the local hub cache) into a path the
 * loaders take; cli_load_model opens the backend --device names and loads the model on it
 * with --quant applied. The flags themselves are parsed and checked in args.h. Errors: a
 * one-line message (printed for cli_model_resolve, in err for cli_load_model), and nothing
 * is left allocated. */
#ifndef HY_CLI_LOAD_H
#define HY_CLI_LOAD_H

#include "cli/args.h"
#include "core/status.h"
#include "hub/cache.h"

#include <stdbool.h>

struct hy_backend;
struct hy_model;

/* The rows of cli_load_model's flags for a command's cli_opt table (args.h), given its
 * options struct o with the fields threads (int64_t), device, quant, kv_type (const char *)
 * and fp8_gemm (bool). */
#define CLI_LOAD_OPTS(o)                                                                   \
    {"t|threads", CLI_INT, &(o)->threads, 1, 256, false},                                  \
    {"device", CLI_STR, &(o)->device, 0, 0, false},                                        \
    {"quant", CLI_STR, &(o)->quant, 0, 0, false},                                          \
    {"fp8-gemm", CLI_FLAG, &(o)->fp8_gemm, 0, 0, false},                                   \
    {"kv-type", CLI_STR, &(o)->kv_type, 0, 0, false}
/* Opens the backend named by device (NULL: default_device) and loads the model from dir,
 * quantizing its projections and head when quant is set (cli_quant_dtype). fp8_gemm
 * (--fp8-gemm) puts fp8 weights on the fp8 tensor-core GEMM (hy_backend_open_opts): a CUDA
 * backend only, HY_E_UNSUPPORTED on the CPU. kv_type (--kv-type auto|f32|bf16, NULL: auto)
 * is the KV pool's element type; bf16 is CUDA only. On failure both out pointers are NULL,
 * everything is freed and err says why. */
hy_status cli_load_model(const char *dir, const char *device, const char *default_device,
                         int threads, const char *quant, bool fp8_gemm, const char *kv_type,
                         struct hy_backend **be,
                         struct hy_model **m, struct hy_err *err);

/* What -m MODEL names (hub/cache.h hy_hub_resolve_model): path is what the loaders take (the
 * folder or GGUF file given, or the hub cache snapshot of a repo id, or its .gguf file),
 * name the model's display name (the repo id, or the path's last component). */
struct cli_model {
    char path[HY_HUB_PATH_MAX];
    char name[256]; /* a file name (NAME_MAX) or a repo id fits */
};

/* Resolves arg into *out; on failure prints "hymt CMD: why" (for a repo id absent from the
 * cache: the paths tried and "run `hymt pull ID`") and returns 1 (the exit code). */
int cli_model_resolve(const struct cli_cmd *cmd, const char *arg, struct cli_model *out);

/* --prompt-style's usage line, and the profile (translate/prompt_detect.h) of the model mp
 * names with tokenizer tok: forced is --prompt-style (NULL or "auto": detect). Logs the
 * decision at info level. On failure err says why. */
#define HY_CLI_PROMPT_USAGE                                                                  \
    "  --prompt-style GEN         the prompts the model was trained on: auto (default: from\n" \
    "                             its name, config and tokenizer), mt1 (Hunyuan-MT-7B,\n"    \
    "                             Chimera), mt1.5 (HY-MT1.5) or mt2 (Hy-MT2)\n"
struct hy_prompt_profile;
struct hy_tok;
/* CLI_ERR (message printed) unless s is NULL, "auto" or a generation's name. */
int cli_check_prompt_style(const struct cli_cmd *cmd, const char *s);
hy_status cli_prompt_profile(const struct cli_model *mp, const char *forced,
                             const struct hy_tok *tok, struct hy_prompt_profile *out,
                             struct hy_err *err);

/* What serve and translate run, loaded from one model path in this order and freed in the
 * reverse one. */
struct hy_tok;
struct hy_engine;
struct hy_engine_params;
struct cli_engine_flags;
struct cli_stack {
    struct hy_backend *be;
    struct hy_model *m;
    struct hy_tok *tok;
    struct hy_engine *e;
    /* --chimera: the fusion model beside the translation model, or all NULL */
    struct hy_backend *cbe; /* a second backend object on the same device, same options */
    struct hy_model *cm;    /* weights identical to m's shared with it (hunyuan.h) */
    struct hy_tok *ctok;
    struct hy_engine *ce;
};
/* The share of the one KV budget (--kv-memory, the CPU default, or --gpu-memory-fraction
 * of the device memory free once both models are loaded) that Chimera's engine gets with
 * --chimera; the translation engine keeps the rest. An ensemble of k holds k sequences of
 * (prompt + translation) on the translation engine and one of (prompt + k candidates +
 * fusion) on Chimera's, about (k + 2) segment lengths to 2k; and plain requests use the
 * translation engine alone: a third. */
#define HY_CLI_CHIMERA_KV_SHARE (1.0 / 3.0)
/* cli_load_model (default device "auto"), the tokenizer from the same path, then the
 * engine with parameters *ep completed for the backend by cli_kv_setup (flags f). With
 * chimera (a resolved path; NULL: none) also a second backend of the same device and
 * options, the Chimera model on it sharing identical weights with the first, its
 * tokenizer and its engine, the KV budget split (HY_CLI_CHIMERA_KV_SHARE, logged). On
 * failure err says why and what was loaded stays in *s for cli_stack_free. */
hy_status cli_stack_load(struct cli_stack *s, const char *model, const char *chimera,
                         const char *device,
                         int threads, const char *quant, bool fp8_gemm, const char *kv_type,
                         const struct cli_engine_flags *f, const struct hy_engine_params *ep,
                         struct hy_err *err);
/* Frees engines, tokenizers, models (Chimera's before the one it borrows from) and
 * backends (any may be NULL); leaves *s zeroed. A server that reads the engines must be
 * destroyed before. */
void cli_stack_free(struct cli_stack *s);

#endif
