/* llamacpp_greedy.c: greedy ids (and, given hymt's --dump-logits file, how far the logits
 * are) from llama.cpp's library on a GGUF file, for tests/gguf/llamacpp_check.sh. Built
 * against a llama.cpp source tree by that script, not by hymt's build.
 * usage: llamacpp_greedy MODEL.gguf N IDS [HYMT_DUMP]
 *   IDS: comma-separated prompt ids. Prints the N greedy ids (no stop on EOS), one line;
 *   with HYMT_DUMP ([N, vocab] float32, row 0 the last prompt position, as `hymt generate
 *   --dump-logits` writes), prints to stderr the largest max|llama - hymt| / max|hymt| over
 *   the rows. Exit 1 on any failure. */
#include "llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IDS 1024

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: llamacpp_greedy MODEL.gguf N IDS [HYMT_DUMP]\n");
        return 2;
    }
    int n_gen = atoi(argv[2]), n = 0;
    llama_token ids[MAX_IDS];
    for (char *p = argv[3]; *p && n < MAX_IDS; p += *p == ',') {
        char *end;
        ids[n++] = (llama_token)strtol(p, &end, 10);
        if (end == p)
            return 2;
        p = end;
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model)
        return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n + n_gen + 16);
    cp.n_batch = cp.n_ctx;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx)
        return 1;
    const int V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    float *dump = NULL;
    if (argc == 5) {
        FILE *f = fopen(argv[4], "rb");
        dump = malloc((size_t)n_gen * (size_t)V * sizeof *dump);
        if (!f || !dump || fread(dump, sizeof *dump, (size_t)n_gen * (size_t)V, f) != (size_t)n_gen * (size_t)V)
            return 1;
        fclose(f);
    }
    double worst = 0;
    if (llama_decode(ctx, llama_batch_get_one(ids, n)))
        return 1;
    for (int s = 0; s < n_gen; s++) {
        const float *lg = llama_get_logits_ith(ctx, -1);
        llama_token best = 0;
        for (int i = 1; i < V; i++)
            best = lg[i] > lg[best] ? i : best;
        if (dump) {
            double num = 0, den = 0;
            for (int i = 0; i < V; i++) {
                num = fmax(num, fabs((double)lg[i] - dump[(size_t)s * V + i]));
                den = fmax(den, fabs((double)dump[(size_t)s * V + i]));
            }
            worst = fmax(worst, num / den);
        }
        printf("%s%d", s ? " " : "", best);
        if (llama_decode(ctx, llama_batch_get_one(&best, 1)))
            return 1;
    }
    printf("\n");
    if (dump)
        fprintf(stderr, "llama.cpp vs hymt logits: max rel diff %.3g over %d steps\n", worst, n_gen);
    free(dump);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
