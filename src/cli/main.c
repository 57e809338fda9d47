/* main.c: the hymt command: dispatches to a subcommand. */
#include "cli/args.h"
#include "cli/commands.h"
#include "core/globals.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "hymt: translation server and inference engine for the Hunyuan-MT model family\n"
    "\n"
    "usage: hymt COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  generate         run the model on token ids: greedy or sampled continuation\n"
    "  info             summarise a checkpoint: config, parameters, tensors\n"
    "  make-test-model  write a checkpoint with random weights (tests, benchmarks)\n"
    "  tokenize         text to token ids (or --decode: ids to text)\n"
    "  translate        translate files or stdin into another language\n"
    "  bench            measure engine throughput on random prompts\n"
    "  convert          write a checkpoint as one GGUF file (bf16, q8_0, q4_0, q4_k_m)\n"
    "  serve            HTTP server: translation API, OpenAI API, metrics, web page\n"
    "  pull             download a model from the Hugging Face hub into the local cache\n"
    "  tm               translation memory: TMX import and export\n"
    "  worker           run jobs from a Redis queue (behind 'serve --queue' front ends)\n"
    "  help COMMAND     a command's options (as 'hymt COMMAND --help')\n"
    "\n"
    "options (before or after the command):\n"
    "  -h, --help       this text; 'hymt COMMAND --help' for a command's options\n"
    "  --version        print the version, the source commit and the CUDA architectures\n"
    "  -v, --verbose    debug logging\n"
    "  -q, --quiet      errors only\n"
    "  --log-format F   text (default) or json: one JSON object a line (also\n"
    "                   HYMT_LOG_FORMAT); every line has an ISO 8601 time with its zone\n"
    "\n"
    "MODEL is a Hugging Face repo id such as tencent/Hunyuan-MT-7B (optionally @REVISION),\n"
    "found in the local Hugging Face cache ('hymt pull' fills it; so does huggingface-cli\n"
    "download), a checkpoint folder (config.json + model.safetensors or shards), or a GGUF\n"
    "file (hunyuan-dense, as llama.cpp or 'hymt convert' writes it)\n";

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    {"generate", cmd_generate},
    {"info", cmd_info},
    {"make-test-model", cmd_make_test_model},
    {"tokenize", cmd_tokenize},
    {"translate", cmd_translate},
    {"bench", cmd_bench},
    {"convert", cmd_convert},
    {"serve", cmd_serve},
    {"pull", cmd_pull},
    {"tm", cmd_tm},
    {"worker", cmd_worker},
};

int main(int argc, char **argv)
{
    const char *lf = getenv("HYMT_LOG_FORMAT");
    if (lf && *lf && cli_set_log_format(lf))
        return 2;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            cli_print_version();
            return 0;
        } else if (!strncmp(a, "--log-format", 12) && (a[12] == '=' || !a[12])) {
            const char *v = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : "");
            if (cli_set_log_format(v))
                return 2;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            hy_log_level = HY_LOG_DEBUG;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            hy_log_level = HY_LOG_ERROR;
        } else {
            fprintf(stderr, "hymt: unknown option '%s' (see 'hymt --help')\n", a);
            return 2;
        }
    }
    if (i >= argc) {
        fputs(usage, stderr);
        return 2;
    }
    const char *name = argv[i];
    char help[] = "--help";
    char *help_argv[] = {help, NULL};
    if (!strcmp(name, "help")) { /* hymt help [COMMAND] */
        if (i + 1 >= argc) {
            fputs(usage, stdout);
            return 0;
        }
        if (i + 2 < argc) {
            fprintf(stderr, "hymt help: give one COMMAND (see 'hymt --help')\n");
            return 2;
        }
        name = argv[i + 1];
    }
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        if (strcmp(name, commands[k].name))
            continue;
        return name == argv[i] ? commands[k].run(argc - i - 1, argv + i + 1)
                               : commands[k].run(1, help_argv);
    }
    fprintf(stderr, "hymt: unknown command '%s' (see 'hymt --help')\n", name);
    return 2;
}
