/* tokenizer.h: Hugging Face tokenizer.json (byte-level BPE) loading, encoding and decoding,
 * matching the Python `tokenizers` package id for id.
 * Supported: BPE model (vocab; merges as "a b" strings or ["a","b"] pairs; ignore_merges),
 * added_tokens (special and not), normalizer (null, NFC, Sequence), pre_tokenizer
 * (ByteLevel with or without its regex, Split with Regex or String pattern and every
 * behavior, invert, Sequence), ByteLevel decoder (alone or as a one-member Sequence).
 * Regexes run through Oniguruma with the options HF tokenizers uses (regex.c says which),
 * with HF's Unicode data: regex properties as its Oniguruma (Unicode 16.0), NFC as its
 * normalizer (Unicode 9.0 tables).
 * post_processor is ignored (encode never adds special tokens); truncation must be null.
 * Anything else is a load-time error naming the construct.
 * A loaded struct hy_tok is immutable: encode/decode may run on any number of threads at
 * once. Errors: HY_E_IO / HY_E_FORMAT / HY_E_UNSUPPORTED at load (naming file and field);
 * HY_E_INVAL for invalid UTF-8 input; HY_E_NOSPACE when the output buffer is too small
 * (nothing is truncated silently: *n_out then holds the size needed). */
#ifndef HY_TOKENIZER_TOKENIZER_H
#define HY_TOKENIZER_TOKENIZER_H

#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_TOK_MAX_FILE (256u << 20) /* tokenizer.json larger than this is rejected */

struct hy_tok;

/* path: a tokenizer.json file, a folder holding one, or a GGUF file (its tokenizer.ggml.*
 * metadata, as hy_tok_load_gguf). */
hy_status hy_tok_load(struct hy_tok **out, const char *path, struct hy_err *err);
/* From an open GGUF's tokenizer.ggml.* keys (load_gguf.c says how they map): the same
 * tokenizer, id for id, as the tokenizer.json the file was converted from, for
 * tokenizer.ggml.pre "hunyuan" and "hunyuan-dense" (others are HY_E_UNSUPPORTED). The
 * tokenizer copies what it needs; g may be closed afterwards. */
struct hy_gguf;
hy_status hy_tok_load_gguf(struct hy_tok **out, const struct hy_gguf *g, struct hy_err *err);
/* The tokenizer.ggml.pre name whose pipeline (normalizer and pre_tokenizer, offset-only
 * fields aside) a parsed tokenizer.json document has: "hunyuan", "hunyuan-dense", or NULL
 * when it is neither (such a tokenizer cannot be written to GGUF faithfully). */
struct json_t;
const char *hy_tok_gguf_pre_of(const struct json_t *root);
void hy_tok_destroy(struct hy_tok *tok); /* accepts NULL */

/* Number of ids (largest id + 1, added tokens included). */
int32_t hy_tok_vocab_size(const struct hy_tok *tok);
/* Id of the token whose content is exactly `s` (added tokens first, then the BPE vocab in
 * its byte-level spelling); -1 when absent. For looking up control tokens by name. */
int32_t hy_tok_find(const struct hy_tok *tok, const char *s);
/* True for added tokens marked "special": true. */
bool hy_tok_is_special(const struct hy_tok *tok, int32_t id);

/* Encodes len bytes of UTF-8 text into ids[0..*n_out). No BOS/EOS is added.
 * allow_special: special added tokens in the text become their ids (HF's default encode);
 * otherwise their characters are tokenized like any text (user text can never inject
 * control tokens), exactly as HF with encode_special_tokens=True. Non-special added tokens
 * are always matched, as in HF. Invalid UTF-8: HY_E_INVAL naming the byte offset. */
hy_status hy_tok_encode(const struct hy_tok *tok, const char *text, size_t len, bool allow_special,
                        int32_t *ids, size_t cap, size_t *n_out, struct hy_err *err);

/* Decodes ids to bytes (not NUL-terminated; *n_out bytes). skip_special drops special added
 * tokens. Byte sequences that are not valid UTF-8 come out as U+FFFD, as HF does.
 * HY_E_RANGE for an id outside the vocabulary. */
hy_status hy_tok_decode(const struct hy_tok *tok, const int32_t *ids, size_t n, bool skip_special,
                        char *out, size_t cap, size_t *n_out, struct hy_err *err);

/* Incremental detokenizer for streaming: feed ids one by one, get text that only ever
 * contains complete UTF-8 sequences. Caller-owned, fixed size, no allocation. */
struct hy_detok {
    const struct hy_tok *tok;
    bool skip_special;
    unsigned char pending[8]; /* bytes of an incomplete UTF-8 sequence */
    int n_pending;
};
void hy_detok_init(struct hy_detok *d, const struct hy_tok *tok, bool skip_special);
/* Appends id's text to out (cap bytes); returns the number of bytes written, or -1 when cap
 * is too small for this token's text (the state is then unchanged). A token's text is at
 * most HY_DETOK_MAX_OUT bytes (load rejects longer tokens). Invalid sequences come out as
 * U+FFFD; the concatenated output equals hy_tok_decode of the same ids. An id outside the
 * vocabulary (a model head wider than the tokenizer) is skipped, as HF's decode does. */
#define HY_DETOK_MAX_OUT 1024
int hy_detok_push(struct hy_detok *d, int32_t id, char *out, size_t cap);
/* Emits what is still pending (as U+FFFD); returns bytes written. */
int hy_detok_flush(struct hy_detok *d, char *out, size_t cap);

#endif
