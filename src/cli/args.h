/* args.h: command-line parsing for the hymt subcommands.
 * Each subcommand declares a table of options; cli_parse() fills them, accepts
 * "--name value" and "--name=value" (and a short alias such as -m), validates types and
 * ranges, and prints one clear line "hymt CMD: ..." on any error. It returns
 * CLI_OK, CLI_HELP (usage was printed to stdout: exit 0) or CLI_ERR (exit 2). The options
 * hymt takes before a command work after it too, unless the command's table has them:
 * -v/--verbose and -q/--quiet set the log level, --log-format text|json the log lines
 * format, --version prints the version (CLI_HELP).
 *
 * Settings (cli_parse_settings, e.g. serve): every option may also
 * come from the environment variable HYMT_<NAME> (the long name upper-cased, '-' as '_':
 * HYMT_PORT, HYMT_API_KEY) and from a config file (--config FILE or HYMT_CONFIG) of
 * "name = value" lines (the long names; '#' starts a comment line; a value may be
 * double-quoted; flags take true/false), with the precedence flag > environment > config
 * file > default. A CLI_SECRET option (a string) also takes --NAME-file FILE (HYMT_NAME_FILE,
 * "NAME-file =" in the file): the value is the file's first line, so a key need not appear
 * in `ps` or the environment. --print-config prints the settings in effect as a config file,
 * each with where it came from, secrets masked, and returns CLI_HELP. */
#ifndef HY_CLI_ARGS_H
#define HY_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

/* CLI_SECRET: a string (a key, a token) masked by --print-config, also read from a file */
enum cli_kind { CLI_INT, CLI_REAL, CLI_STR, CLI_FLAG, CLI_SECRET };
enum { CLI_OK = 0, CLI_HELP = 1, CLI_ERR = 2 };
#define CLI_MAX_OPTS 64

struct cli_opt {
    const char *names; /* "m|model": short and long names, '|' separated, no dashes */
    enum cli_kind kind;
    void *dst;         /* int64_t*, double*, const char** (STR, SECRET), bool* */
    double lo, hi;     /* range for CLI_INT / CLI_REAL */
    bool seen;         /* set by cli_parse: given (by any source) */
};

struct cli_cmd {
    const char *name;  /* "generate" */
    const char *usage; /* full --help text */
};

/* Usage lines of the settings options, for the --help text of a command with .settings. */
#define HY_CLI_SETTINGS_USAGE                                                                \
    "  --config FILE              settings as 'name = value' lines (the long option names);\n" \
    "                             also HYMT_CONFIG. Every option can also be set with\n"     \
    "                             HYMT_<NAME> (HYMT_PORT, HYMT_API_KEY, ...): a flag wins\n" \
    "                             over the environment, which wins over the file\n"          \
    "  --print-config             print the settings in effect and where each came from\n"   \
    "                             (secrets masked), and exit\n"

/* Positional arguments go to pos[0..max_pos-1]; more is an error. At most CLI_MAX_OPTS
 * options. */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_opt *opts,
              size_t n_opts, const char **pos, int max_pos, int *n_pos);
/* cli_parse with the settings above: the environment, --config, --print-config. */
int cli_parse_settings(const struct cli_cmd *cmd, int argc, char **argv, struct cli_opt *opts,
                       size_t n_opts, const char **pos, int max_pos, int *n_pos);

/* Prints "hymt VERSION (commit C; CUDA architectures ...)" on stdout. */
void cli_print_version(void);
/* --log-format text|json (core/log.h); 1 with a message for anything else. */
int cli_set_log_format(const char *name);

/* Prints "hymt CMD: message" to stderr; returns CLI_ERR for `return cli_fail(...)`. */
int cli_fail(const struct cli_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a byte size: a number with an optional K, M, G or T suffix (powers of 1024),
 * e.g. "512M", "1.5G". -1 with a message naming `flag` on error or outside [lo, hi]. */
int64_t cli_parse_size(const struct cli_cmd *cmd, const char *flag, const char *s, int64_t lo,
                       int64_t hi);

/* Checks --device (auto|cpu|cuda; NULL is fine) and --quant (q8, q4, q4_0, q4_k, q6_k; NULL
 * is fine) the way every model-running command takes them; CLI_ERR with the one-line
 * message otherwise. */
int cli_check_device_quant(const struct cli_cmd *cmd, const char *device, const char *quant);
/* The weight dtype --quant asks for (enum hy_dtype): q8 Q8_0, q4 Q4_G128 (Q4_0 where
 * in-features are not a multiple of 128), q4_0, q4_k, q6_k themselves; NULL: HY_DTYPE_F32
 * (as stored); -1 for anything else. */
int cli_quant_dtype(const char *quant);

/* Parses "1,2,3" into ids (at most cap); -1 with a message on error. */
int cli_parse_ids(const struct cli_cmd *cmd, const char *s, int32_t *ids, int cap);

/* Usage lines of --quant, --fp8-gemm and --kv-type (cli/load.h cli_load_model's flags) for
 * --help texts in the 29-column layout of serve and translate. */
#define HY_CLI_QUANT_USAGE                                                                   \
    "  --quant q8|q4              quantize the projections and the head at load: q8 int8 (Q8_0),\n" \
    "                             q4 4-bit (Q4_G128); also q4_0, q4_k, q6_k (GGUF types),\n"   \
    "                             fp8 (each stays in its type on a GPU)\n"                      \
    "  --fp8-gemm                 fp8 weights: multiply batches of more than 8 rows on the\n"   \
    "                             fp8 tensor cores (activations rounded to fp8: faster, less\n" \
    "                             exact; GPU sm_89+)\n"                                       \
    "  --kv-type auto|f32|bf16    KV cache elements (auto: bf16 on a GPU, f32 on the CPU;\n"    \
    "                             bf16 halves the cache's bytes a token; GPU only)\n"

#endif
