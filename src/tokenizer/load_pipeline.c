/* load_pipeline.c: the normalizer, pre_tokenizer and decoder sections of tokenizer.json.
 * Supported, with HF's field rules (serde: fields without a default are required):
 *   normalizer:    null | NFC | Sequence{normalizers}
 *   pre_tokenizer: null | ByteLevel{add_prefix_space, trim_offsets, use_regex = true}
 *                  | Split{pattern: {Regex|String}, behavior, invert} | Sequence{pretokenizers}
 *   decoder:       ByteLevel | Sequence{decoders} made only of ByteLevel
 * Anything else is HY_E_UNSUPPORTED naming the type. trim_offsets only changes offsets,
 * which hymt does not report. */
#include "core/json.h"
#include "core/utf8.h"
#include "tokenizer/tok_impl.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define MAX_NESTING 8

/* GPT-2's split regex: the ByteLevel pre-tokenizer's own (pre_tokenizers/byte_level.rs). */
static const char gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const char *type_of(const json_t *j)
{
    const json_t *ty = json_object_get(j, "type");
    return json_is_string(ty) ? json_string_value(ty) : NULL;
}

static hy_status need_type(const json_t *j, const char *what, const char **ty, struct hy_err *err)
{
    if (!json_is_object(j))
        return hy_err_set(err, HY_E_FORMAT, "%s: expected an object, got %s", what,
                          hy_json_type_name(j));
    if (!(*ty = type_of(j)))
        return hy_err_set(err, HY_E_FORMAT, "%s: missing \"type\"", what);
    return HY_OK;
}

static hy_status normalizer(struct hy_tok *t, const json_t *j, int depth, struct hy_err *err)
{
    const char *ty;
    hy_status st = need_type(j, "normalizer", &ty, err);
    if (st)
        return st;
    if (!strcmp(ty, "NFC")) {
        t->nfc = true;
        return HY_OK;
    }
    if (strcmp(ty, "Sequence"))
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "normalizer type \"%s\" is not supported (supported: NFC, Sequence)", ty);
    const json_t *list = json_object_get(j, "normalizers");
    if (!json_is_array(list))
        return hy_err_set(err, HY_E_FORMAT,
                          "normalizer Sequence: \"normalizers\" must be an "
                          "array");
    if (depth >= MAX_NESTING)
        return hy_err_set(err, HY_E_UNSUPPORTED, "normalizer: Sequences nested too deeply");
    for (size_t i = 0; i < json_array_size(list); i++)
        if ((st = normalizer(t, json_array_get(list, i), depth + 1, err)))
            return st; /* NFC twice is NFC: the flag is enough */
    return HY_OK;
}

hy_status hy_tok_load_normalizer(struct hy_tok *t, const json_t *j, struct hy_err *err)
{
    return !j || json_is_null(j) ? HY_OK : normalizer(t, j, 0, err);
}

static hy_status add_stage(struct hy_tok *t, struct hy_tok_stage **out, struct hy_err *err)
{
    if (t->n_stage == TOK_MAX_STAGES)
        return hy_err_set(err, HY_E_UNSUPPORTED, "pre_tokenizer: more than %d stages",
                          TOK_MAX_STAGES);
    *out = &t->stage[t->n_stage++];
    memset(*out, 0, sizeof **out);
    return HY_OK;
}

static hy_status byte_level(struct hy_tok *t, const json_t *j, struct hy_err *err)
{
    bool aps = false, trim = false, use_regex = true;
    hy_status st = hy_json_get_bool(j, "add_prefix_space", true, &aps, err);
    if (!st)
        st = hy_json_get_bool(j, "trim_offsets", true, &trim, err);
    if (!st)
        st = hy_json_get_bool(j, "use_regex", false, &use_regex, err);
    if (st) {
        hy_err_prefix(err, "pre_tokenizer ByteLevel");
        return hy_tok_format_status(st);
    }
    if (use_regex && !t->bytelevel_re &&
        (st = hy_tok_regex_compile(&t->bytelevel_re, gpt2_regex, strlen(gpt2_regex),
                                   "ByteLevel regex", err)))
        return st;
    struct hy_tok_stage *s = NULL;
    if ((st = add_stage(t, &s, err)))
        return st;
    s->kind = TOK_STAGE_BYTELEVEL;
    s->add_prefix_space = aps;
    s->re = use_regex ? t->bytelevel_re : NULL;
    return HY_OK;
}

static hy_status behavior_of(const char *b, enum hy_tok_behavior *out, struct hy_err *err)
{
    static const struct {
        const char *name;
        enum hy_tok_behavior b;
    } names[] = {{"Removed", TOK_REMOVED},
                 {"Isolated", TOK_ISOLATED},
                 {"MergedWithPrevious", TOK_MERGED_PREV},
                 {"MergedWithNext", TOK_MERGED_NEXT},
                 {"Contiguous", TOK_CONTIGUOUS}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (b && !strcmp(b, names[i].name)) {
            *out = names[i].b;
            return HY_OK;
        }
    return hy_err_set(err, HY_E_FORMAT, "pre_tokenizer Split: unknown behavior \"%s\"",
                      b ? b : "(not a string)");
}

static hy_status split(struct hy_tok *t, const json_t *j, struct hy_err *err)
{
    const json_t *pat = json_object_get(j, "pattern");
    const json_t *re = json_object_get(pat, "Regex"), *str = json_object_get(pat, "String");
    if (!json_is_object(pat) || json_object_size(pat) != 1 ||
        !(json_is_string(re) || json_is_string(str)))
        return hy_err_set(err, HY_E_FORMAT,
                          "pre_tokenizer Split: \"pattern\" must be "
                          "{\"Regex\": \"...\"} or {\"String\": \"...\"}");
    bool invert = false;
    enum hy_tok_behavior beh = TOK_ISOLATED;
    const json_t *b = json_object_get(j, "behavior");
    hy_status st = behavior_of(json_is_string(b) ? json_string_value(b) : NULL, &beh, err);
    if (!st && (st = hy_json_get_bool(j, "invert", true, &invert, err)))
        hy_err_prefix(err, "pre_tokenizer Split");
    struct hy_tok_stage *s = NULL;
    if (st || (st = add_stage(t, &s, err)))
        return hy_tok_format_status(st);
    s->kind = TOK_STAGE_SPLIT;
    s->behavior = beh;
    s->invert = invert;
    if (re)
        return hy_tok_regex_compile(&s->re, json_string_value(re), json_string_length(re),
                                    "pre_tokenizer Split", err);
    return hy_tok_regex_compile_literal(&s->re, json_string_value(str), json_string_length(str),
                                        "pre_tokenizer Split", err);
}

static hy_status pre_tokenizer(struct hy_tok *t, const json_t *j, int depth, struct hy_err *err)
{
    const char *ty;
    hy_status st = need_type(j, "pre_tokenizer", &ty, err);
    if (st)
        return st;
    if (!strcmp(ty, "ByteLevel"))
        return byte_level(t, j, err);
    if (!strcmp(ty, "Split"))
        return split(t, j, err);
    if (strcmp(ty, "Sequence"))
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "pre_tokenizer type \"%s\" is not supported (supported: ByteLevel, "
                          "Split, Sequence)",
                          ty);
    const json_t *list = json_object_get(j, "pretokenizers");
    if (!json_is_array(list))
        return hy_err_set(err, HY_E_FORMAT,
                          "pre_tokenizer Sequence: \"pretokenizers\" must be an array");
    if (depth >= MAX_NESTING)
        return hy_err_set(err, HY_E_UNSUPPORTED, "pre_tokenizer: Sequences nested too deeply");
    /* A Sequence applies each member to every piece in turn: flattening is exact. */
    for (size_t i = 0; i < json_array_size(list); i++)
        if ((st = pre_tokenizer(t, json_array_get(list, i), depth + 1, err)))
            return st;
    return HY_OK;
}

hy_status hy_tok_load_pre_tokenizer(struct hy_tok *t, const json_t *j, struct hy_err *err)
{
    return !j || json_is_null(j) ? HY_OK : pre_tokenizer(t, j, 0, err);
}

static hy_status decoder(const json_t *j, int depth, struct hy_err *err)
{
    const char *ty;
    hy_status st = need_type(j, "decoder", &ty, err);
    if (st)
        return st;
    if (!strcmp(ty, "ByteLevel")) {
        /* Its options only matter to offsets. HF requires add_prefix_space and
         * trim_offsets here; we accept them missing (nothing depends on them), not mistyped. */
        bool b = false;
        st = hy_json_get_bool(j, "add_prefix_space", false, &b, err);
        if (!st)
            st = hy_json_get_bool(j, "trim_offsets", false, &b, err);
        if (!st)
            st = hy_json_get_bool(j, "use_regex", false, &b, err);
        if (st)
            hy_err_prefix(err, "decoder ByteLevel");
        return st;
    }
    if (strcmp(ty, "Sequence"))
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "decoder type \"%s\" is not supported (supported: ByteLevel, or a "
                          "Sequence of ByteLevel)",
                          ty);
    const json_t *list = json_object_get(j, "decoders");
    if (!json_is_array(list) || json_array_size(list) == 0)
        return hy_err_set(err, HY_E_FORMAT,
                          "decoder Sequence: \"decoders\" must be a non-empty "
                          "array");
    if (depth >= MAX_NESTING)
        return hy_err_set(err, HY_E_UNSUPPORTED, "decoder: Sequences nested too deeply");
    /* A second ByteLevel would map the first one's output again (a decoded string made
     * only of byte-level chars would change): accept a Sequence of exactly one. */
    if (json_array_size(list) > 1)
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "decoder Sequence with %zu members is not supported (only one "
                          "ByteLevel)",
                          json_array_size(list));
    return decoder(json_array_get(list, 0), depth + 1, err);
}

hy_status hy_tok_load_decoder(const json_t *j, struct hy_err *err)
{
    if (!j || json_is_null(j))
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "decoder null (tokens joined with spaces) is not supported; a "
                          "byte-level BPE needs the ByteLevel decoder");
    return decoder(j, 0, err);
}

/* utf8proc NFC of s[0..n) (raw: s itself) appended to *buf (grown as needed). */
static hy_status nfc_append(const char *s, size_t n, bool raw, char **buf, size_t *len, size_t *cap,
                            struct hy_err *err)
{
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = (utf8proc_ssize_t)n;
    if (!raw && n)
        r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                         UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (r < 0)
        return hy_err_set(err, r == UTF8PROC_ERROR_NOMEM ? HY_E_NOMEM : HY_E_INVAL,
                          "NFC normalization failed: %s", utf8proc_errmsg(r));
    if (r == 0) { /* an empty segment (two kept chars in a row, or one at the start) */
        free(dst);
        return HY_OK;
    }
    if (*len + (size_t)r > *cap) {
        size_t nc = (*len + (size_t)r) * 2 + 16;
        char *nb = realloc(*buf, nc);
        if (!nb) {
            free(dst);
            return hy_err_set(err, HY_E_NOMEM, "NFC normalization: out of memory");
        }
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, raw ? (const void *)s : (const void *)dst, (size_t)r);
    *len += (size_t)r;
    free(dst);
    return HY_OK;
}

/* HF's NFC has Unicode 9.0 tables: the chars of hy_tok_nfc_keep are starters that never
 * compose for it. Such a char blocks reordering and composition across it, so normalizing
 * the text between them and keeping them as they are gives HF's result. */
static hy_status nfc_hf(const char *s, size_t n, char **out, size_t *out_n, struct hy_err *err)
{
    size_t len = 0, cap = 0, seg = 0;
    *out = NULL;
    for (size_t i = 0; i < n;) {
        int cl;
        uint32_t cp = hy_utf8_decode((const unsigned char *)s + i, &cl);
        bool keep = cp >= 0x7FD && hy_tok_in_ranges(hy_tok_nfc_keep, hy_tok_nfc_keep_n, cp);
        hy_status st = HY_OK;
        if (keep && (st = nfc_append(s + seg, i - seg, false, out, &len, &cap, err)) == HY_OK) {
            st = nfc_append(s + i, (size_t)cl, true, out, &len, &cap, err);
            seg = i + (size_t)cl;
        }
        if (st) {
            free(*out);
            *out = NULL;
            return st;
        }
        i += (size_t)cl;
    }
    hy_status st = nfc_append(s + seg, n - seg, false, out, &len, &cap, err);
    if (st) {
        free(*out);
        *out = NULL;
        return st;
    }
    *out_n = len;
    return HY_OK;
}

hy_status hy_tok_nfc(const char *s, size_t n, char **out, size_t *out_n, struct hy_err *err)
{
    *out = NULL;
    *out_n = 0;
    /* Text below U+0300 (no combining marks, no decomposable pairs) is already NFC. */
    size_t i = 0;
    while (i < n && (unsigned char)s[i] < 0xCC)
        i++;
    if (i == n)
        return HY_OK;
    char *dst = NULL;
    size_t dn = 0;
    hy_status st = nfc_hf(s, n, &dst, &dn, err);
    if (st)
        return st;
    if (dn == n && !memcmp(dst, s, n)) {
        free(dst);
        return HY_OK;
    }
    *out = dst;
    *out_n = dn;
    return HY_OK;
}
