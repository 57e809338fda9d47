/* fuzz_config.c: config.json text through hy_config_parse. A parse either fails with a
 * message that names the source or gives a config whose checked invariants hold (the
 * loader relies on them: divisible heads, even head_dim, finite RoPE base). */
#include "formats/config.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
