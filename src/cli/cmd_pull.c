/* cmd_pull.c: `hymt pull REPO[@REVISION]`: a model from the Hugging Face hub into the local
 * hub cache (hub/pull.h), where -m REPO then finds it. */
#include "cli/args.h"
#include "cli/commands.h"
#include "core/globals.h"
#include "core/log.h"
#include "hub/pull.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct cli_cmd cmd = {
    "pull",
    "usage: hymt pull REPO[@REVISION] [options]\n"
    "\n"
    "Downloads a model repo from the Hugging Face hub into the local hub cache, the one\n"
    "huggingface_hub and transformers use ($HF_HUB_CACHE, else $HF_HOME/hub, else\n"
    "~/.cache/huggingface/hub), so that -m REPO finds it. REVISION is a branch, a tag or a\n"
    "commit hash (default main). Resumes an interrupted download; checks every file against\n"
    "the size and sha256 (or git blob id) the hub reports. Prints the snapshot folder.\n"
    "\n"
    "  --include PATTERN   only files matching PATTERN (repeatable, up to 32; '*' matches\n"
    "                      across '/'; 'dir/' a folder), e.g. --include '*Q4_K_M.gguf'\n"
    "  --exclude PATTERN   not files matching PATTERN (repeatable), e.g. --exclude '*.bin'\n"
    "  --retries N         attempts more for a broken transfer, each resuming (default 5)\n"
    "  -q, --quiet         no progress (errors only)\n"
    "  -h, --help          this text\n"
    "\n"
    "environment:\n"
    "  HF_ENDPOINT         the hub or a mirror (default https://huggingface.co)\n"
    "  HF_TOKEN            a token for gated or private repos (Authorization: Bearer)\n"
    "  HF_HUB_CACHE, HF_HOME  where the cache is (above)\n"
    "\n"
    "example:\n"
    "  hymt pull tencent/Hunyuan-MT-7B && hymt translate -m tencent/Hunyuan-MT-7B --to de\n",
};

/* Splits argv into --include/--exclude (repeatable, collected here) and the rest. */
static int take_patterns(int argc, char **argv, struct hy_hub_pull_opts *o, char **rest,
                         int *n_rest)
{
    *n_rest = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool inc = !strncmp(a, "--include", 9), exc = !strncmp(a, "--exclude", 9);
        const char *tail = a + 9;
        if ((!inc && !exc) || (*tail && *tail != '=')) {
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        const char *v = *tail == '=' ? tail + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v || !*v)
            return cli_fail(&cmd, "%.9s needs a pattern", a);
        int *n = inc ? &o->n_include : &o->n_exclude;
        if (*n >= HY_HUB_MAX_PATTERNS)
            return cli_fail(&cmd, "more than %d %.9s patterns", HY_HUB_MAX_PATTERNS, a);
        (inc ? o->include : o->exclude)[(*n)++] = v;
    }
    return CLI_OK;
}

int cmd_pull(int argc, char **argv)
{
    struct hy_hub_pull_opts o = {0};
    int64_t retries = 5;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return 1;
    int n_rest = 0;
    int r = take_patterns(argc, argv, &o, rest, &n_rest);
    struct cli_opt opts[] = {
        {"retries", CLI_INT, &retries, 0, 100, false},
    };
    const char *pos[1];
    int n_pos = 0;
    if (!r)
        r = cli_parse(&cmd, n_rest, rest, opts, sizeof opts / sizeof opts[0], pos, 1, &n_pos);
    free(rest);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (n_pos != 1)
        return cli_fail(&cmd, "give one REPO[@REVISION], e.g. tencent/Hunyuan-MT-7B");
    struct hy_hub_id id;
    if (!hy_hub_id_parse(pos[0], &id))
        return cli_fail(&cmd, "'%s' is not a repo id (ORG/NAME[@REVISION], e.g. "
                        "tencent/Hunyuan-MT-7B)", pos[0]);
    o.endpoint = getenv("HF_ENDPOINT") && *getenv("HF_ENDPOINT") ? getenv("HF_ENDPOINT") : NULL;
    o.token = getenv("HF_TOKEN") && *getenv("HF_TOKEN") ? getenv("HF_TOKEN") : NULL;
    o.retries = (int)retries;
    o.out = stderr;
    o.progress = hy_log_level < HY_LOG_INFO ? HY_HUB_PROGRESS_NONE
                       : isatty(STDERR_FILENO) ? HY_HUB_PROGRESS_BAR : HY_HUB_PROGRESS_LINES;
    static char snap[HY_HUB_PATH_MAX];
    static struct hy_hub_err err;
    if (hy_hub_pull(&id, &o, snap, sizeof snap, &err)) {
        fprintf(stderr, "hymt pull: %s\n", err.msg);
        return 1;
    }
    printf("%s\n", snap);
    return 0;
}
