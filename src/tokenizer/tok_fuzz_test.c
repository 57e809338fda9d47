/* tok_fuzz_test.c: property tests on random input (fixed seeds, so failures reproduce):
 *   - random bytes: encode succeeds exactly when the bytes are valid UTF-8;
 *   - random valid text: decode(encode(x)) == x without a normalizer, == NFC(x) with NFC;
 *   - every Split behavior (with invert) over regexes with empty matches loses no text;
 *   - random ids: the detokenizer's pushes + flush equal decode, and no push ends inside a
 *     character;
 *   - several threads encoding with one hy_tok give the single-thread ids.
 * On a hand-made Qwen-style tokenizer and on the tiny checkpoints' tokenizers. */
#include "core/utf8.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tok_test_util.h"

#include <pthread.h>

#define MAX_TEXT 512
#define MAX_IDS 4096

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Pieces of text that exercise the regexes, NFC and the added tokens. */
// clang-format off
static const char *const pool[] = {
    "a", "b", "Z", "0", "7", "123456", " ", "  ", "\n", "\r\n", "\t", "'s", "'T", "'ll", "ſ",
    "é", "e\xCC\x81", "\xCC\x81", "中", "文字", "ひら", "한국", "\xE1\x84\x80\xE1\x85\xA1",
    "\xE2\x84\xAB", "😀", "👍🏽", "👨\xE2\x80\x8D👩\xE2\x80\x8D👧", "🇯🇵", "\xE2\x80\x8B",
    "\xC2\xA0", "　", "ｆ", "!", ".", "...", "<|", "|>", "<|endoftext|>", "<|eos|>",
    "<|extra_0|>", "<｜hy_User｜>", "endoftext", "\xEF\xBF\xBD", "١٢", "५", "ก\xE0\xB8\xB1",
    "http://x.y/z?q=1", "x", "xx", "ax b", "\xE0\xA3\x8F", "\xF0\x9E\x80\x91",
    "\xF0\xB1\x8D\x90",
};
// clang-format on

static size_t random_text(uint64_t *s, char *out)
{
    size_t n = 0, parts = rng(s) % 24;
    for (size_t i = 0; i < parts; i++) {
        const char *p = pool[rng(s) % (sizeof pool / sizeof pool[0])];
        size_t len = strlen(p);
        if (n + len > MAX_TEXT)
            break;
        memcpy(out + n, p, len);
        n += len;
    }
    return n;
}

static void check_random_bytes(const struct hy_tok *tok, uint64_t seed)
{
    char text[64];
    static int32_t ids[MAX_IDS];
    for (int it = 0; it < 3000; it++) {
        size_t n = rng(&seed) % sizeof text;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng(&seed);
            text[i] = (r & 3) ? (char)(0x20 + (r >> 8) % 0x5F) : (char)(r >> 16);
        }
        size_t got = 0;
        bool valid = hy_utf8_validate(text, n) == n;
        hy_status st = hy_tok_encode(tok, text, n, it & 1, ids, MAX_IDS, &got, NULL);
        CHECKF(valid ? st == HY_OK : st == HY_E_INVAL, "random bytes %d: status %d", it, st);
    }
}

/* decode(encode(x)) against x (or its NFC form, special tokens left as text). */
static void check_round_trip(const struct hy_tok *tok, uint64_t seed, int iters)
{
    static char text[MAX_TEXT], out[4 * MAX_TEXT];
    static int32_t ids[MAX_IDS];
    for (int it = 0; it < iters; it++) {
        size_t n = random_text(&seed, text), got = 0, m = 0;
        bool special = !tok->nfc && (it & 1);
        hy_status st = hy_tok_encode(tok, text, n, special, ids, MAX_IDS, &got, NULL);
        if (!st)
            st = hy_tok_decode(tok, ids, got, false, out, sizeof out, &m, NULL);
        char *want = NULL;
        size_t wn = n;
        if (tok->nfc)
            HY_ASSERT(!hy_tok_nfc(text, n, &want, &wn, NULL));
        const char *w = want ? want : text;
        if (!want)
            wn = n;
        CHECKF(st == HY_OK && m == wn && !memcmp(out, w, m), "round trip %d: \"%.*s\"", it, (int)n,
               text);
        free(want);
        if (test_failures_)
            return;
    }
}

/* The concatenated pushes equal decode; each push is whole characters. */
static void check_detok(const struct hy_tok *tok, uint64_t seed)
{
    static int32_t ids[64];
    static char all[64 * HY_DETOK_MAX_OUT], want[64 * 3 * TOK_MAX_TOKEN_BYTES];
    for (int it = 0; it < 2000; it++) {
        size_t n = rng(&seed) % 64;
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)(rng(&seed) % (uint64_t)hy_tok_vocab_size(tok));
        bool skip = it & 1;
        struct hy_detok d;
        hy_detok_init(&d, tok, skip);
        size_t o = 0;
        bool whole = true;
        for (size_t i = 0; i < n; i++) {
            int r = hy_detok_push(&d, ids[i], all + o, HY_DETOK_MAX_OUT);
            HY_ASSERT(r >= 0);
            whole &= hy_utf8_validate(all + o, (size_t)r) == (size_t)r;
            o += (size_t)r;
        }
        o += (size_t)hy_detok_flush(&d, all + o, HY_DETOK_MAX_OUT);
        size_t m = 0;
        hy_status st = hy_tok_decode(tok, ids, n, skip, want, sizeof want, &m, NULL);
        CHECKF(st == HY_OK && whole && m == o && !memcmp(all, want, m), "detok %d", it);
        if (test_failures_)
            return;
    }
}

struct thread_job {
    const struct hy_tok *tok;
    uint64_t seed;
    int iters;
    int32_t *ids;  /* [iters][MAX_IDS] */
    size_t *n_ids; /* [iters] */
};

static void *encode_many(void *arg)
{
    struct thread_job *j = arg;
    char text[MAX_TEXT];
    uint64_t s = j->seed;
    for (int it = 0; it < j->iters; it++) {
        size_t n = random_text(&s, text);
        if (hy_tok_encode(j->tok, text, n, true, j->ids + (size_t)it * MAX_IDS, MAX_IDS,
                          &j->n_ids[it], NULL))
            j->n_ids[it] = (size_t)-1;
    }
    return NULL;
}

static void check_threads(const struct hy_tok *tok)
{
    enum { THREADS = 4, ITERS = 200 };
    struct thread_job job[THREADS + 1];
    pthread_t th[THREADS];
    for (int k = 0; k <= THREADS; k++) {
        job[k] = (struct thread_job){tok, 0x1234567ull, ITERS, NULL, NULL};
        job[k].ids = malloc((size_t)ITERS * MAX_IDS * sizeof *job[k].ids);
        job[k].n_ids = malloc(ITERS * sizeof *job[k].n_ids);
        HY_ASSERT(job[k].ids && job[k].n_ids);
    }
    encode_many(&job[THREADS]); /* the reference, alone */
    for (int k = 0; k < THREADS; k++)
        HY_ASSERT(!pthread_create(&th[k], NULL, encode_many, &job[k]));
    for (int k = 0; k < THREADS; k++)
        pthread_join(th[k], NULL);
    for (int k = 0; k < THREADS; k++)
        for (int it = 0; it < ITERS; it++) {
            size_t n = job[k].n_ids[it];
            CHECKF(n == job[THREADS].n_ids[it] &&
                       !memcmp(job[k].ids + (size_t)it * MAX_IDS,
                               job[THREADS].ids + (size_t)it * MAX_IDS, n * sizeof(int32_t)),
                   "thread %d text %d", k, it);
        }
    for (int k = 0; k <= THREADS; k++) {
        free(job[k].ids);
        free(job[k].n_ids);
    }
}

/* Byte-level vocab, a Split stage, then ByteLevel: no behavior but Removed drops text. */
static void check_split_round_trip(struct tt *t)
{
    static const char *const regexes[] = {"x*", "\\b", "(?=a)", "a|x+", " ?\\p{L}+|\\s+(?!\\S)",
                                          "$",  "^"};
    static const char *const behaviors[] = {"Isolated", "MergedWithPrevious", "MergedWithNext",
                                            "Contiguous"};
    struct tt_str v = {0};
    tt_byte_vocab(&v, NULL);
    uint64_t seed = 99;
    for (size_t r = 0; r < sizeof regexes / sizeof regexes[0]; r++)
        for (int b = 0; b < 4; b++)
            for (int inv = 0; inv < 2; inv++) {
                struct tt_str pre = {0};
                tt_addf(&pre, "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                              "\"pattern\": {\"Regex\": ");
                tt_add_json_str(&pre, regexes[r], strlen(regexes[r]));
                tt_addf(&pre,
                        "}, \"behavior\": \"%s\", \"invert\": %s}, {\"type\": "
                        "\"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": "
                        "false, \"use_regex\": false}]}",
                        behaviors[b], inv ? "true" : "false");
                char *json = tt_tokenizer(NULL, pre.s, NULL, NULL, v.s, "[]");
                struct tt_tok k = tt_load(t, json);
                if (k.tok)
                    check_round_trip(k.tok, seed++, 50);
                hy_tok_destroy(k.tok);
                free(json);
                free(pre.s);
            }
    free(v.s);
}

static void check_tokenizer(const struct hy_tok *tok, uint64_t seed)
{
    check_random_bytes(tok, seed);
    check_round_trip(tok, seed + 1, 3000);
    check_detok(tok, seed + 2);
    check_threads(tok);
}

static const char qwen_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static struct tt_tok qwen_like(struct tt *t, bool nfc)
{
    static const char *const extra[] = {"ĠĠ", "ĠĠĠĠ", "Ġt", "he", "Ġthe", "ä¸", "ä¸Ń", NULL};
    static const char *const merges[] = {"Ġ Ġ",   "ĠĠ ĠĠ", "Ġ t",  "h e",
                                         "Ġt he", "ä ¸",   "ä¸ Ń", NULL};
    struct tt_str v = {0}, m = {0}, pre = {0};
    tt_byte_vocab(&v, extra);
    tt_merges(&m, merges, true);
    tt_addf(&pre, "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                  "\"pattern\": {\"Regex\": ");
    tt_add_json_str(&pre, qwen_regex, strlen(qwen_regex));
    tt_addf(&pre, "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
                  "\"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]}");
    const char *added = "[{\"id\": 263, \"content\": \"<|endoftext|>\", \"single_word\": false, "
                        "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                        "\"special\": true}, {\"id\": 264, \"content\": \"<|eos|>\", "
                        "\"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
                        "\"normalized\": false, \"special\": true}]";
    char *json = tt_tokenizer(nfc ? "{\"type\": \"NFC\"}" : NULL, pre.s, added, NULL, v.s, m.s);
    struct tt_tok k = tt_load(t, json);
    free(json);
    free(v.s);
    free(m.s);
    free(pre.s);
    return k;
}

int main(void)
{
    struct tt t;
    tt_init(&t);
    for (int nfc = 0; nfc < 2; nfc++) {
        struct tt_tok k = qwen_like(&t, nfc);
        if (k.tok)
            check_tokenizer(k.tok, 1000 + (uint64_t)nfc);
        hy_tok_destroy(k.tok);
    }
    check_split_round_trip(&t);
    const char *tiny[] = {"tests/data/tiny-mqa/tokenizer.json",
                          "tests/data/tiny-dense18/tokenizer.json"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        struct hy_tok *tok = NULL;
        struct hy_err err = {{0}};
        test_path(path, sizeof path, "HYMT_SRC", tiny[i]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "note: %s absent, skipped\n", path);
            continue;
        }
        hy_status st = hy_tok_load(&tok, path, &err);
        CHECKF(st == HY_OK, "%s", err.msg);
        if (tok)
            check_tokenizer(tok, 2000 + (uint64_t)i);
        hy_tok_destroy(tok);
    }
    tt_cleanup(&t);
    return test_result();
}
