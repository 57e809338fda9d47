/* llamacpp_quantize.c: llama.cpp's own quantization of a GGUF file (its public
 * llama_model_quantize, the code behind llama-quantize, with its default parameters), for
 * tests/gguf/llamacpp_check.sh: hymt must load what llama.cpp makes. Built against a
 * llama.cpp source tree by that script, not by hymt's build.
 * usage: llamacpp_quantize IN.gguf OUT.gguf FTYPE   (llama_ftype: 2 Q4_0, 15 Q4_K_M, 18 Q6_K)
 * Exit 1 when llama.cpp fails. */
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: llamacpp_quantize IN.gguf OUT.gguf FTYPE\n");
        return 2;
    }
    llama_backend_init();
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = (enum llama_ftype)atoi(argv[3]);
    p.nthread = 2;
    uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
    llama_backend_free();
    if (rc)
        fprintf(stderr, "llama_model_quantize failed (%u)\n", rc);
    return rc ? 1 : 0;
}
