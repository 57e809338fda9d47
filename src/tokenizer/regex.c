/* regex.c: Oniguruma regexes compiled and iterated exactly as HF tokenizers does.
 *
 * Compiling. tokenizers/src/utils/onig.rs (SysRegex::new) calls the `onig` crate's
 * Regex::new(pattern), which is Regex::with_options_and_encoding(pattern,
 * RegexOptions::REGEX_OPTION_NONE, Syntax::default()); that calls
 *   onig_new(&reg, pattern, pattern + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8 (the pattern
 *            is a Rust &str), OnigDefaultSyntax, &einfo)
 * and Syntax::default() is the library's OnigDefaultSyntax, which is ONIG_SYNTAX_ONIGURUMA
 * since Oniguruma 6.7 (regparse.c; the crate bundles 6.9.x, Debian ships 6.9.8). The crate
 * holds a global mutex around onig_new (REGEX_NEW_MUTEX): compiling is not thread-safe
 * (library initialisation, the end-call list), searching is. We do the same with a static
 * mutex, the one piece of process-wide state in the tokenizer: it guards the library, not
 * our data.
 *
 * Unicode version. HF's Oniguruma has Unicode 16.0 property data, Debian's libonig 6.9.8 has
 * 14.0: before compiling, every \p{L} \p{N} \p{M} \p{P} \p{S} (also \P{..}, \p{^..} and
 * the long names) becomes a class that adds the code points HF's engine matches too
 * (unicode_tables.c, measured on both engines by gen_unicode_tables.sh). Other
 * properties keep this libonig's data.
 *
 * A Split "String" pattern is compiled as regex::escape(s) (pre_tokenizers/split.rs): Rust's
 * escape puts a backslash before \ . + * ? ( ) | [ ] { } ^ $ # & - ~, and Oniguruma reads a
 * backslash before any of these as the literal character.
 *
 * Matching. onig::FindMatches::next (onig/src/find.rs): search the whole string (str..end)
 * from last_end to end with ONIG_OPTION_NONE and default match parameters, so lookbehind and
 * \b see the text before last_end. An empty match ending where the previous match ended is
 * rejected: last_end moves one character on and the search repeats. Iteration stops once
 * last_end > len (an empty match at len is therefore reported once, unless the previous
 * match ended there). A search error makes HF panic; we return an error. */
#include "tokenizer/tok_impl.h"
#include "core/utf8.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;

static hy_status compile(OnigRegex *out, const char *pattern, size_t len, const char *what,
                         struct hy_err *err);

bool hy_tok_in_ranges(const struct hy_tok_range *r, int n, uint32_t cp)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid].lo)
            hi = mid - 1;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Property name (as Oniguruma compares them: case, ' ', '-' and '_' ignored) -> its extra
 * ranges; NULL for properties we leave alone. */
static const struct hy_tok_range *extra_ranges(const char *name, size_t len, int *n)
{
    static const struct {
        const char *short_name, *long_name;
    } names[5] = {
        {"l", "letter"}, {"n", "number"}, {"m", "mark"}, {"p", "punctuation"}, {"s", "symbol"}};
    const struct hy_tok_range *tables[5] = {hy_tok_prop_extra_L, hy_tok_prop_extra_N,
                                            hy_tok_prop_extra_M, hy_tok_prop_extra_P,
                                            hy_tok_prop_extra_S};
    const int counts[5] = {hy_tok_prop_extra_L_n, hy_tok_prop_extra_N_n, hy_tok_prop_extra_M_n,
                           hy_tok_prop_extra_P_n, hy_tok_prop_extra_S_n};
    char norm[32];
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (c == ' ' || c == '-' || c == '_')
            continue;
        if (k + 1 >= sizeof norm)
            return NULL;
        norm[k++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    norm[k] = 0;
    for (int i = 0; i < 5; i++)
        if (!strcmp(norm, names[i].short_name) || !strcmp(norm, names[i].long_name)) {
            *n = counts[i];
            return tables[i];
        }
    return NULL;
}

/* Appends "[\p{NAME}" + ranges + "]" (or "[^..." when negated) to out. */
static size_t emit_class(char *out, const char *name, size_t len, bool neg,
                         const struct hy_tok_range *r, int n)
{
    size_t o = (size_t)sprintf(out, "[%s\\p{%.*s}", neg ? "^" : "", (int)len, name);
    for (int i = 0; i < n; i++)
        o += (size_t)sprintf(out + o, "\\x{%X}-\\x{%X}", r[i].lo, r[i].hi);
    out[o++] = ']';
    return o;
}

/* The pattern with the Unicode 16.0 additions; *out is malloc'd. */
static hy_status augment(const char *p, size_t len, char **out, size_t *out_len)
{
    size_t cap = len + 1, o = 0;
    for (size_t i = 0; i + 1 < len; i++)
        cap += (p[i] == '\\' && (p[i + 1] == 'p' || p[i + 1] == 'P')) ? 40 * 64 : 0;
    char *b = malloc(cap);
    if (!b)
        return HY_E_NOMEM;
    for (size_t i = 0; i < len;) {
        if (p[i] != '\\' || i + 1 >= len) {
            b[o++] = p[i++];
            continue;
        }
        char c = p[i + 1];
        const char *name = p + i + 2;
        size_t nl = 0, skip = 2;
        if ((c == 'p' || c == 'P') && i + 2 < len && p[i + 2] == '{') {
            const char *end = memchr(p + i + 3, '}', len - i - 3);
            name = p + i + 3;
            nl = end ? (size_t)(end - name) : 0;
            skip = end ? 3 + nl + 1 : 2;
        } /* \pL is the text "pL" to both Oniguruma versions: left alone */
        bool neg = c == 'P';
        if (nl && name[0] == '^')
            neg = !neg, name++, nl--;
        int n = 0;
        const struct hy_tok_range *r = nl ? extra_ranges(name, nl, &n) : NULL;
        if (r && n)
            o += emit_class(b + o, name, nl, neg, r, n);
        else
            memcpy(b + o, p + i, skip), o += skip;
        i += skip;
    }
    *out = b;
    *out_len = o;
    return HY_OK;
}

hy_status hy_tok_regex_compile(OnigRegex *out, const char *pattern, size_t len, const char *what,
                               struct hy_err *err)
{
    char *aug = NULL;
    size_t aug_len = 0;
    if (augment(pattern, len, &aug, &aug_len))
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", what);
    hy_status st = compile(out, aug, aug_len, what, err);
    free(aug);
    return st;
}

static hy_status compile(OnigRegex *out, const char *pattern, size_t len, const char *what,
                         struct hy_err *err)
{
    OnigErrorInfo einfo = {0};
    OnigEncoding enc = ONIG_ENCODING_UTF8;
    *out = NULL;
    pthread_mutex_lock(&compile_lock);
    int r = onig_initialize(&enc, 1); /* a no-op after the first call */
    if (r == ONIG_NORMAL)
        r = onig_new(out, (const OnigUChar *)pattern, (const OnigUChar *)pattern + len,
                     ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &einfo);
    pthread_mutex_unlock(&compile_lock);
    if (r != ONIG_NORMAL) {
        OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &einfo);
        *out = NULL;
        return hy_err_set(err, HY_E_FORMAT, "%s: bad regex: %s", what, (const char *)msg);
    }
    return HY_OK;
}

hy_status hy_tok_regex_compile_literal(OnigRegex *out, const char *text, size_t len,
                                       const char *what, struct hy_err *err)
{
    char *esc = malloc(2 * len + 1);
    if (!esc)
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", what);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] && strchr("\\.+*?()|[]{}^$#&-~", text[i]))
            esc[n++] = '\\';
        esc[n++] = text[i];
    }
    hy_status st = hy_tok_regex_compile(out, esc, n, what, err);
    free(esc);
    return st;
}

void hy_tok_regex_free(OnigRegex re)
{
    if (re)
        onig_free(re);
}

int hy_tok_finditer_next(struct hy_tok_finditer *it, size_t *start, size_t *end, struct hy_err *err)
{
    const OnigUChar *s = it->s, *e = it->s + it->n;
    for (;;) {
        if (it->last_end > it->n)
            return 0;
        onig_region_clear(it->region);
        int r = onig_search(it->re, s, e, s + it->last_end, e, it->region, ONIG_OPTION_NONE);
        if (r == ONIG_MISMATCH)
            return 0;
        if (r < 0) {
            OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
            onig_error_code_to_str(msg, r);
            hy_err_set(err, HY_E_INVAL, "regex search failed: %s", (const char *)msg);
            return -1;
        }
        size_t ms = (size_t)it->region->beg[0], me = (size_t)it->region->end[0];
        if (ms == me && it->last_match_end == (int64_t)me) {
            /* one character on: the text is valid UTF-8; past the end counts 1 */
            int len =
                it->last_end < it->n ? hy_utf8_seq_len(s + it->last_end, it->n - it->last_end) : 1;
            it->last_end += len > 0 ? (size_t)len : 1;
            continue;
        }
        it->last_end = me;
        it->last_match_end = (int64_t)me;
        *start = ms;
        *end = me;
        return 1;
    }
}

bool hy_tok_regex_is_word(OnigRegex word_re, const char *s, size_t n)
{
    int len = hy_utf8_seq_len((const unsigned char *)s, n);
    if (len <= 0)
        return false;
    const OnigUChar *u = (const OnigUChar *)s;
    return onig_match(word_re, u, u + len, u, NULL, ONIG_OPTION_NONE) > 0;
}
