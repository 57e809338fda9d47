/* fuzz_config.c: config.json text through hy_config_parse and hy_quant_config_parse. A
 * parse either fails with a message that names the source or gives a config whose checked
 * invariants hold (the loader relies on them: divisible heads, even head_dim, finite RoPE
 * base; a block size of 1 to 65536 on both sides or none, the ignore list within its limit
 * and matchable). */
#include "formats/config.h"
#include "formats/quant_config.h"
#include "fuzz/fuzz_util.h"

static void quant(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FZ_ASSERT(text, "out of memory");
    memcpy(text, data, size);
    text[size] = '\0';
    struct hy_quant_config q;
    struct hy_err err = {{0}};
    if (hy_quant_config_parse(&q, text, NULL, "fuzz.json", &err) != HY_OK) {
        FZ_ERR_NAMES(err, "fuzz.json");
        free(text);
        return;
    }
    FZ_ASSERT((q.block_rows == 0) == (q.block_cols == 0) && q.block_rows >= 0 &&
                  q.block_rows <= 65536 && q.block_cols >= 0 && q.block_cols <= 65536,
              "block size %d x %d", q.block_rows, q.block_cols);
    FZ_ASSERT(q.n_ignore >= 0 && q.n_ignore <= HY_QUANT_MAX_IGNORE, "%d ignore entries",
              q.n_ignore);
    static const char *const names[] = {"lm_head", "model.layers.0.mlp.down_proj",
                                        "model.layers.12.mlp.experts.7.up_proj",
                                        "model.layers.3.mlp.gate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        (void)hy_quant_config_ignored(&q, names[i], i != 3);
    hy_quant_config_free(&q);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    quant(data, size);
    struct hy_config c;
    struct hy_err err = {{0}};
    if (hy_config_parse(&c, (const char *)data, size, "fuzz.json", &err) != HY_OK) {
        FZ_ERR_NAMES(err, "fuzz.json");
        return 0;
    }
    FZ_ASSERT(c.num_attention_heads % c.num_key_value_heads == 0 && c.head_dim % 2 == 0 &&
                  c.max_position_embeddings >= 64 && c.vocab_size >= 1 && c.rope_base > 0,
              "invariants of a parsed config");
    float inv[512];
    hy_config_inv_freq(&c, inv);
    for (int64_t i = 0; i < c.head_dim / 2; i++)
        FZ_ASSERT(inv[i] > 0 && inv[i] <= 1, "inv_freq[%lld] = %g", (long long)i, inv[i]);
    return 0;
}
