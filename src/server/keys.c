/* keys.c: named API keys, their rate limits and counters (keys.h has the contract). */
#include "server/keys.h"

#include <errno.h>
#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KEYS_FILE_MAX (1 << 20) /* bytes of a keys file */
#define KEYS_RATE_MAX 1000000   /* N of N/unit */

struct key {
    char name[HY_KEYS_NAME_MAX + 1];
    unsigned char digest[32]; /* SHA-256 of the key */
    char rate_text[24];       /* "60/min"; "" when unlimited */
    double rate;              /* requests a second; 0: unlimited */
    double cap;               /* the bucket's size: N of N/unit */
    double tokens, last;      /* the bucket (under mu); last: monotonic seconds */
    int64_t requests, limited;
    int line;                 /* where it was given, for duplicate messages */
};

struct hy_keys {
    pthread_mutex_t mu;
    int n, cap;
    struct key *keys;
};

static void digest(const char *s, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    if (!EVP_Digest(s, n, out, &len, EVP_sha256(), NULL))
        memset(out, 0, 32); /* cannot happen for SHA-256; an all-zero digest matches nothing */
}

/* "N/s", "N/min", "N/h" into k; false when malformed. */
static bool parse_rate(const char *s, struct key *k)
{
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (errno || end == s || *end != '/' || n < 1 || n > KEYS_RATE_MAX || s[0] == '+' ||
        s[0] == '-')
        return false;
    double unit = !strcmp(end, "/s") ? 1 : !strcmp(end, "/min") ? 60 : !strcmp(end, "/h") ? 3600
                                                                                         : 0;
    if (!unit)
        return false;
    k->rate = (double)n / unit;
    k->cap = (double)n;
    k->tokens = k->cap;
    snprintf(k->rate_text, sizeof k->rate_text, "%ld%s", n, end);
    return true;
}

static bool name_ok(const char *s, size_t n)
{
    if (n < 1 || n > HY_KEYS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return false;
    return true;
}

/* Adds a key; errors name where (FILE:LINE or --api-key) and never the key. */
static hy_status add(struct hy_keys *t, const char *where, int line, const char *name,
                     const char *key, size_t key_n, const char *rate, struct hy_err *err)
{
    if (t->n == t->cap) /* the table holds a key a line, up to HY_KEYS_MAX */
        return hy_err_set(err, HY_E_INVAL, "%s: more than %d keys", where, HY_KEYS_MAX);
    struct key *k = &t->keys[t->n];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->line = line;
    if (rate && !parse_rate(rate, k))
        return hy_err_set(err, HY_E_INVAL,
                          "%s: the rate '%.32s' is not N/s, N/min or N/h with N in 1..%d",
                          where, rate, KEYS_RATE_MAX);
    digest(key, key_n, k->digest);
    for (int i = 0; i < t->n; i++) {
        if (!strcmp(t->keys[i].name, name))
            return hy_err_set(err, HY_E_INVAL, "%s: the name %s is taken (line %d)", where,
                              name, t->keys[i].line);
        if (!CRYPTO_memcmp(t->keys[i].digest, k->digest, 32))
            return hy_err_set(err, HY_E_INVAL, "%s: the same key as %s's (line %d)", where,
                              t->keys[i].name, t->keys[i].line);
    }
    t->n++;
    return HY_OK;
}

/* One line of the file (NUL-terminated, no newline). */
static hy_status parse_line(struct hy_keys *t, const char *file, int line, char *s,
                            struct hy_err *err)
{
    char where[300];
    snprintf(where, sizeof where, "%s:%d", file, line);
    char *f[4];
    int n = 0;
    for (char *p = s; *p;) {
        while (*p == ' ' || *p == '\t')
            *p++ = '\0';
        if (!*p)
            break;
        if (n < 4)
            f[n] = p;
        n++;
        while (*p && *p != ' ' && *p != '\t') {
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
                return hy_err_set(err, HY_E_INVAL,
                                  "%s: a control or non-ASCII byte (0x%02x); expected NAME KEY "
                                  "[RATE]", where, (unsigned char)*p);
            p++;
        }
    }
    if (n == 0 || f[0][0] == '#')
        return HY_OK;
    if (n < 2 || n > 3)
        return hy_err_set(err, HY_E_INVAL, "%s: %d field%s; expected NAME KEY [RATE]", where,
                          n, n == 1 ? "" : "s");
    if (!name_ok(f[0], strlen(f[0])))
        return hy_err_set(err, HY_E_INVAL,
                          "%s: the name must be 1-%d of A-Z a-z 0-9 _ . - (it labels metrics)",
                          where, HY_KEYS_NAME_MAX);
    size_t kn = strlen(f[1]);
    if (kn < HY_KEYS_KEY_MIN || kn > HY_KEYS_KEY_MAX)
        return hy_err_set(err, HY_E_INVAL,
                          "%s: %s's key has %zu characters; %d-%d are allowed (openssl rand "
                          "-hex 24 makes one)", where, f[0], kn, HY_KEYS_KEY_MIN, HY_KEYS_KEY_MAX);
    return add(t, where, line, f[0], f[1], kn, n == 3 ? f[2] : NULL, err);
}

/* The file's bytes into *out (NUL-terminated, malloc'ed) after the checks on size and kind. */
static hy_status read_file(const char *path, char **out, size_t *len, struct hy_err *err)
{
    FILE *fp = fopen(path, "rb");
    struct stat sb = {0};
    if (!fp)
        return hy_err_set(err, HY_E_IO, "--api-keys-file %s: cannot read it: %s", path,
                          strerror(errno));
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > KEYS_FILE_MAX) {
        fclose(fp);
        return hy_err_set(err, HY_E_IO, "--api-keys-file %s: %s", path,
                          S_ISREG(sb.st_mode) ? "over 1 MiB" : "not a regular file");
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)sb.st_size, fp) : 0;
    fclose(fp);
    if (!buf)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return HY_OK;
}

/* Parses buf (len bytes, NUL-terminated, modified in place) into t. */
static hy_status parse_file(struct hy_keys *t, const char *path, char *buf, size_t len,
                            struct hy_err *err)
{
    hy_status st = HY_OK;
    int line = 0, before = t->n;
    for (char *p = buf; !st && p < buf + len;) {
        char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        char *end = nl ? nl : buf + len;
        line++;
        if (memchr(p, '\0', (size_t)(end - p)))
            st = hy_err_set(err, HY_E_INVAL, "%s:%d: a NUL byte", path, line);
        if (end > p && end[-1] == '\r')
            end[-1] = '\0';
        *end = '\0';
        if (!st)
            st = parse_line(t, path, line, p, err);
        p = end + 1;
    }
    if (!st && t->n == before)
        st = hy_err_set(err, HY_E_INVAL, "--api-keys-file %s: no keys in it", path);
    return st;
}

hy_status hy_keys_create(struct hy_keys **out, const char *file, const char *single_key,
                         struct hy_err *err)
{
    *out = NULL;
    if (!file && !single_key)
        return HY_OK;
    char *buf = NULL;
    size_t len = 0, lines = 0;
    if (file) {
        hy_status st = read_file(file, &buf, &len, err);
        if (st)
            return st;
        for (size_t i = 0; i < len; i++)
            lines += buf[i] == '\n';
        lines++; /* the last line may have no newline */
    }
    /* the table's size: at most one key a line, plus --api-key's */
    size_t cap = (lines < HY_KEYS_MAX ? lines : HY_KEYS_MAX) + (single_key ? 1 : 0);
    struct hy_keys *t = calloc(1, sizeof *t);
    if (!t || !(t->keys = calloc(cap, sizeof *t->keys))) {
        free(t);
        free(buf);
        return hy_err_set(err, HY_E_NOMEM, "out of memory for the API keys");
    }
    t->cap = (int)cap;
    pthread_mutex_init(&t->mu, NULL);
    hy_status st = HY_OK;
    if (single_key)
        st = add(t, "--api-key", 0, "default", single_key, strlen(single_key), NULL, err);
    if (!st && file)
        st = parse_file(t, file, buf, len, err);
    if (buf)
        OPENSSL_cleanse(buf, len);
    free(buf);
    if (st) {
        hy_keys_destroy(t);
        return st;
    }
    *out = t;
    return HY_OK;
}

void hy_keys_destroy(struct hy_keys *k)
{
    if (!k)
        return;
    OPENSSL_cleanse(k->keys, (size_t)k->cap * sizeof *k->keys);
    free(k->keys);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

int hy_keys_count(const struct hy_keys *k)
{
    return k ? k->n : 0;
}

enum hy_keys_verdict hy_keys_check(struct hy_keys *k, const char *key, double now,
                                   const char **name, int *retry_after_s, const char **rate)
{
    const char *h = key;
    if (!h)
        return HY_KEYS_UNKNOWN;
    unsigned char d[32];
    digest(h, strlen(h), d);
    int found = -1;
    for (int i = 0; i < k->n; i++) /* every digest: the time says nothing about which */
        if (!CRYPTO_memcmp(k->keys[i].digest, d, 32))
            found = i;
    if (found < 0)
        return HY_KEYS_UNKNOWN;
    struct key *e = &k->keys[found];
    *name = e->name;
    enum hy_keys_verdict v = HY_KEYS_OK;
    pthread_mutex_lock(&k->mu);
    if (e->rate > 0) {
        if (e->last > 0)
            e->tokens = fmin(e->cap, e->tokens + (now - e->last) * e->rate);
        e->last = now;
        if (e->tokens >= 1) {
            e->tokens -= 1;
        } else {
            v = HY_KEYS_LIMITED;
            double wait = ceil((1 - e->tokens) / e->rate);
            *retry_after_s = wait < 1 ? 1 : wait > 86400 ? 86400 : (int)wait;
            *rate = e->rate_text;
        }
    }
    if (v == HY_KEYS_OK)
        e->requests++;
    else
        e->limited++;
    pthread_mutex_unlock(&k->mu);
    return v;
}

char *hy_keys_render(struct hy_keys *k, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    static const char *const fam[2][2] = {
        {"hymt_api_key_requests_total", "Requests admitted with each API key."},
        {"hymt_api_key_rate_limited_total", "Requests refused (429) by each key's rate limit."},
    };
    for (int j = 0; j < 2; j++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", fam[j][0], fam[j][1], fam[j][0]);
        pthread_mutex_lock(&k->mu);
        for (int i = 0; i < k->n; i++) /* names are [A-Za-z0-9_.-]: no label escaping */
            fprintf(f, "%s{key=\"%s\"} %lld\n", fam[j][0], k->keys[i].name,
                    (long long)(j ? k->keys[i].limited : k->keys[i].requests));
        pthread_mutex_unlock(&k->mu);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}
