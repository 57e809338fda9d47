/* fuzz_gguf.c: any bytes as a GGUF file, in a buffer of exactly their size (ASan sees a
 * read past the end). hy_gguf_open_mem opens it or fails naming the source; an opened one
 * is walked (every key, every string of a string array, every tensor byte), and the model
 * config (hy_load_gguf_config) and the tokenizer (hy_tok_load_gguf, then an encode) are
 * read from it as `hymt -m FILE.gguf` does: each loads or fails with a message. */
#include "formats/config.h"
#include "formats/gguf.h"
#include "fuzz/fuzz_util.h"
#include "model/load_gguf.h"
#include "tokenizer/tokenizer.h"

static void walk(const struct hy_gguf *g)
{
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < hy_gguf_kv_count(g); i++) {
        const struct hy_gguf_kv *kv = hy_gguf_kv_at(g, i);
        FZ_ASSERT(kv->key && hy_gguf_find_kv(g, kv->key), "key %zu not found by name", i);
        if (kv->type == HY_GGUF_ARRAY && kv->arr_type == HY_GGUF_STRING) {
            size_t pos = 0;
            for (uint64_t k = 0; k < kv->arr_n; k++) {
                const char *s;
                size_t len;
                hy_gguf_arr_str_next(kv, &pos, &s, &len);
                if (len)
                    sink ^= (unsigned char)s[len - 1];
            }
        }
    }
    for (size_t i = 0; i < hy_gguf_tensor_count(g); i++) {
        const struct hy_gguf_tensor *t = hy_gguf_tensor_at(g, i);
        const unsigned char *p = t->data;
        for (size_t k = 0; k < t->nbytes; k += 256)
            sink ^= p[k];
        if (t->nbytes)
            sink ^= p[t->nbytes - 1];
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    struct hy_gguf *g = NULL;
    struct hy_err err = {{0}};
    if (hy_gguf_open_mem(&g, copy, size, "fuzz.gguf", &err) != HY_OK) {
        FZ_ERR_NAMES(err, "fuzz.gguf");
        free(copy);
        return 0;
    }
    walk(g);
    struct hy_config c;
    if (hy_load_gguf_config(&c, g, &err) != HY_OK)
        FZ_ASSERT(err.msg[0], "config error without a message");
    struct hy_tok *t = NULL;
    if (hy_tok_load_gguf(&t, g, &err) == HY_OK) {
        static const char sample[] = "Hello, world! 今天天气很好。 <|startoftext|> 123\n\n x";
        int32_t ids[256];
        size_t n = 0;
        hy_status st = hy_tok_encode(t, sample, sizeof sample - 1, true, ids, 256, &n, &err);
        FZ_ASSERT(st == HY_OK || st == HY_E_NOSPACE, "encode: %s", err.msg);
        hy_tok_destroy(t);
    } else {
        FZ_ASSERT(err.msg[0], "tokenizer error without a message");
    }
    hy_gguf_close(g);
    free(copy);
    return 0;
}
