/* main.c: the hymt command: dispatches to a subcommand. */
#include "cli/commands.h"
#include "core/globals.h"
#include "core/log.h"

#include <stdio.h>
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
    "\n"
    "options:\n"
    "  -h, --help       this text; 'hymt COMMAND --help' for a command's options\n"
    "  --version        print the version\n"
    "  -v, --verbose    debug logging (before the command)\n"
    "  -q, --quiet      errors only (before the command)\n"
    "\n"
    "MODEL is a Hugging Face checkpoint folder (config.json + model.safetensors or shards),\n"
    "e.g. one downloaded with: huggingface-cli download tencent/Hunyuan-MT-7B --local-dir DIR,\n"
    "or a GGUF file (hunyuan-dense, as llama.cpp or 'hymt convert' writes it)\n";

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
};

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("hymt 0.1.0\n");
            return 0;
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
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (!strcmp(argv[i], commands[k].name))
            return commands[k].run(argc - i - 1, argv + i + 1);
    fprintf(stderr, "hymt: unknown command '%s' (see 'hymt --help')\n", argv[i]);
    return 2;
}
