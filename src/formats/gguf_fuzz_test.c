/* gguf_fuzz_test.c: the GGUF reader against 30,000 mutated and truncated copies of a valid
 * small file (fixed seed, so a failure replays). Every copy sits in a buffer of exactly its
 * size, so under ASan (CI's test-asan) any read past the end is caught; each parse must
 * return HY_OK or an error with a message that names the source, and a successful parse is
 * walked completely (every key through its getter, every array element, every tensor byte)
 * to prove its pointers are in bounds. */
#include "formats/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ITERATIONS 30000

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static hy_status write_seed(const char *path, struct hy_err *err)
{
    struct hy_gguf_w *w = NULL;
    const char *toks[5] = {"<|startoftext|>", "a", "Ġthe", "", "x"};
    int32_t types[5] = {3, 1, 1, 5, 1};
    const char *merges[2] = {"Ġ t", "Ġt he"};
    float f[16];
    uint16_t h[64];
    unsigned char q[2 * 34];
    for (int i = 0; i < 16; i++)
        f[i] = (float)i - 7.5f;
    for (int i = 0; i < 64; i++)
        h[i] = hy_f32_to_bf16((float)i * 0.01f - 0.2f);
    float row[64];
    for (int i = 0; i < 64; i++)
        row[i] = (float)(i % 13) - 6.0f;
    hy_q8_0_quantize_row(q, row, 64);
    hy_status s = hy_gguf_w_open(&w, path, err);
    if (s)
        return s;
    if (!s) s = hy_gguf_w_str(w, "general.architecture", "hunyuan-dense", err);
    if (!s) s = hy_gguf_w_u32(w, "hunyuan-dense.block_count", 2, err);
    if (!s) s = hy_gguf_w_f32(w, "hunyuan-dense.rope.freq_base", 11158840.0f, err);
    if (!s) s = hy_gguf_w_f64(w, "hymt.rope.freq_base", 11158839.925, err);
    if (!s) s = hy_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", false, err);
    if (!s) s = hy_gguf_w_i32(w, "x.i32", -5, err);
    if (!s) s = hy_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 5, err);
    if (!s) s = hy_gguf_w_arr_i32(w, "tokenizer.ggml.token_type", types, 5, err);
    if (!s) s = hy_gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 2, err);
    uint64_t ne_f[2] = {4, 4}, ne_h[2] = {32, 2}, ne_q[1] = {64};
    if (!s) s = hy_gguf_w_tensor(w, "output_norm.weight", HY_GGML_F32, 2, ne_f, err);
    if (!s) s = hy_gguf_w_tensor(w, "token_embd.weight", HY_GGML_BF16, 2, ne_h, err);
    if (!s) s = hy_gguf_w_tensor(w, "blk.0.attn_q.weight", HY_GGML_Q8_0, 1, ne_q, err);
    if (!s) s = hy_gguf_w_begin_data(w, err);
    if (!s) s = hy_gguf_w_data(w, f, sizeof f, err);
    if (!s) s = hy_gguf_w_data(w, h, sizeof h, err);
    if (!s) s = hy_gguf_w_data(w, q, sizeof q, err);
    if (s) {
        hy_gguf_w_abort(w);
        return s;
    }
    return hy_gguf_w_finish(w, err);
}

/* Reads everything a successful parse points at; returns a checksum so it is not elided. */
static uint64_t walk(const struct hy_gguf *g)
{
    uint64_t sum = 0;
    struct hy_err err;
    for (size_t i = 0; i < hy_gguf_kv_count(g); i++) {
        const struct hy_gguf_kv *kv = hy_gguf_kv_at(g, i);
        uint64_t u;
        double d;
        bool b;
        const char *s;
        size_t len;
        if (!hy_gguf_get_uint(g, kv->key, true, &u, &err))
            sum += u;
        if (!hy_gguf_get_real(g, kv->key, true, &d, &err))
            sum += (uint64_t)(d != d ? 0 : 1);
        if (!hy_gguf_get_bool(g, kv->key, true, &b, &err))
            sum += b;
        if (!hy_gguf_get_str(g, kv->key, true, &s, &len, &err))
            for (size_t k = 0; k < len; k++)
                sum += (unsigned char)s[k];
        if (kv->type != HY_GGUF_ARRAY)
            continue;
        if (kv->arr_type == HY_GGUF_STRING) {
            size_t pos = 0;
            for (uint64_t k = 0; k < kv->arr_n; k++) {
                hy_gguf_arr_str_next(kv, &pos, &s, &len);
                for (size_t c = 0; c < len; c++)
                    sum += (unsigned char)s[c];
            }
        } else if (kv->arr_type != HY_GGUF_F32 && kv->arr_type != HY_GGUF_F64 &&
                   kv->arr_type != HY_GGUF_BOOL) {
            for (uint64_t k = 0; k < kv->arr_n; k++)
                sum += (uint64_t)hy_gguf_arr_int(kv, k);
        }
    }
    for (size_t i = 0; i < hy_gguf_tensor_count(g); i++) {
        const struct hy_gguf_tensor *t = hy_gguf_tensor_at(g, i);
        const unsigned char *p = t->data;
        for (size_t k = 0; k < t->nbytes; k++)
            sum += p[k];
        if (hy_gguf_find_tensor(g, t->name) != t)
            return ~0ull; /* names are unique, so find must give this tensor back */
    }
    return sum;
}

static void mutate(unsigned char *b, size_t *n)
{
    int k = 1 + (int)(rnd() % 4);
    for (int i = 0; i < k && *n; i++) {
        size_t at = (size_t)(rnd() % *n);
        switch (rnd() % 6) {
        case 0: b[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
        case 1: b[at] = (unsigned char)rnd(); break;
        case 2: { /* an interesting 64-bit value where counts and lengths live */
            static const uint64_t v[] = {0, 1, 2, 3, 31, 32, 33, 255, 0x7fffffffull, 0xffffffffull,
                                         1ull << 32, 1ull << 62, ~0ull, ~0ull - 31};
            uint64_t x = v[rnd() % (sizeof v / sizeof v[0])];
            size_t m = *n - at < 8 ? *n - at : 8;
            memcpy(b + at, &x, m);
            break;
        }
        case 3: *n = (size_t)(rnd() % (*n + 1)); break; /* truncate */
        case 4: { /* a small 32-bit value (types, dims) */
            uint32_t x = (uint32_t)(rnd() % 40);
            size_t m = *n - at < 4 ? *n - at : 4;
            memcpy(b + at, &x, m);
            break;
        }
        default: /* copy a run of bytes from elsewhere */
            if (*n > 16) {
                size_t from = (size_t)(rnd() % (*n - 8));
                memmove(b + at, b + from, *n - at < 8 ? *n - at : 8);
            }
            break;
        }
    }
}

int main(void)
{
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/hymt_gguf_fuzz_%d.gguf", tmp ? tmp : "/tmp", (int)getpid());
    struct hy_err err = {{0}};
    if (write_seed(path, &err)) {
        fprintf(stderr, "gguf_fuzz_test: seed: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(path, "rb");
    unsigned char seed[8192];
    size_t seed_n = f ? fread(seed, 1, sizeof seed, f) : 0;
    if (f)
        fclose(f);
    unlink(path);
    struct hy_gguf *g = NULL;
    if (seed_n == 0 || seed_n == sizeof seed || hy_gguf_open_mem(&g, seed, seed_n, "seed", &err)) {
        fprintf(stderr, "gguf_fuzz_test: the seed file does not parse: %s\n", err.msg);
        return 1;
    }
    uint64_t seed_sum = walk(g);
    hy_gguf_close(g);
    int ok = 0, bad = 0, failures = 0;
    for (int it = 0; it < ITERATIONS; it++) {
        size_t n = seed_n;
        unsigned char *b = malloc(seed_n);
        memcpy(b, seed, seed_n);
        mutate(b, &n);
        unsigned char *exact = malloc(n ? n : 1);
        memcpy(exact, b, n);
        free(b);
        err.msg[0] = 0;
        hy_status s = hy_gguf_open_mem(&g, exact, n, "fuzz", &err);
        if (s == HY_OK) {
            ok++;
            if (walk(g) == ~0ull) {
                fprintf(stderr, "iteration %d: find_tensor disagrees with tensor_at\n", it);
                failures++;
            }
            hy_gguf_close(g);
        } else {
            bad++;
            if (!strstr(err.msg, "fuzz") || g) {
                fprintf(stderr, "iteration %d: status %d without a proper message: '%s'\n", it,
                        (int)s, err.msg);
                failures++;
            }
        }
        free(exact);
    }
    printf("gguf_fuzz_test: %d mutations: %d parsed, %d rejected cleanly (seed %zu bytes, sum "
           "%llu)\n", ITERATIONS, ok, bad, seed_n, (unsigned long long)seed_sum);
    /* both outcomes must occur, or the mutations are not exercising the parser */
    if (ok == 0 || bad == 0)
        failures++;
    return failures ? 1 : 0;
}
