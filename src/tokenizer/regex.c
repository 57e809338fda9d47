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

hy_status hy_tok_regex_compile(OnigRegex *out, const char *pattern, size_t len, const char *what,
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
