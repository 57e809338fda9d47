/* pull.c: `hymt pull` (pull.h has the contract). */
#include "hub/pull.h"

#include "core/clock.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define API_MAX_BYTES (64 << 20) /* the file list of a repo; real ones are kilobytes */
#define MAX_FILES 100000
#define MAX_NAME 1024
#define MAX_REDIRECTS 10
#define STALL_SECONDS 60L
#define BLOB_MAX (HY_HUB_PATH_MAX + 256)
#define URL_MAX (1024 + HY_HUB_REPO_MAX + 64 + 3 * MAX_NAME + 64) /* endpoint/repo/resolve/commit/path */ /* a transfer below 1 byte/s this long is broken */

static hy_status fail(struct hy_hub_err *err, hy_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static hy_status fail(struct hy_hub_err *err, hy_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return st;
}

bool hy_hub_pattern_match(const char *pattern, const char *path)
{
    char p[MAX_NAME + 2];
    size_t n = strlen(pattern);
    if (n > MAX_NAME)
        return false;
    snprintf(p, sizeof p, "%s%s", pattern, n && pattern[n - 1] == '/' ? "*" : "");
    return fnmatch(p, path, FNM_NOESCAPE) == 0;
}

/* ---- one pull's state ---- */

struct file {
    char *path;       /* repo-relative, validated */
    int64_t size;     /* -1: unknown */
    char sha256[65];  /* LFS files */
    char blob_id[41]; /* git blob sha1 (the others) */
    char etag[129];   /* blob name from the resolve endpoint */
};

struct pull {
    const struct hy_hub_id *id;
    const struct hy_hub_pull_opts *o;
    struct hy_hub_err *err;
    CURL *c;
    char endpoint[1024], repo_dir[HY_HUB_PATH_MAX], locks[HY_HUB_PATH_MAX], commit[41];
    struct file *files;
    int n_files;
    FILE *out;
    /* progress over every byte to fetch */
    int64_t total, done;
    int last_decile;
    double t0, last_draw;
    const char *current;
};

/* Response headers of the last response (reset at each status line: redirects). */
struct hdrs {
    char etag[160], linked_etag[160], location[2048], commit[64];
    int64_t linked_size, content_length;
};

static size_t on_header(char *b, size_t sz, size_t n, void *ud)
{
    struct hdrs *h = ud;
    size_t len = sz * n;
    if (len >= 5 && !strncmp(b, "HTTP/", 5)) {
        memset(h, 0, sizeof *h);
        h->linked_size = h->content_length = -1;
        return len;
    }
    const char *colon = memchr(b, ':', len);
    if (!colon)
        return len;
    size_t kn = (size_t)(colon - b);
    const char *v = colon + 1;
    size_t vn = len - kn - 1;
    while (vn && (*v == ' ' || *v == '\t'))
        v++, vn--;
    while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
        vn--;
    struct {
        const char *name;
        char *dst;
        size_t cap;
    } s[] = {{"etag", h->etag, sizeof h->etag},
             {"x-linked-etag", h->linked_etag, sizeof h->linked_etag},
             {"location", h->location, sizeof h->location},
             {"x-repo-commit", h->commit, sizeof h->commit}};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (kn == strlen(s[i].name) && !strncasecmp(b, s[i].name, kn) && vn < s[i].cap) {
            memcpy(s[i].dst, v, vn);
            s[i].dst[vn] = '\0';
        }
    char num[32];
    if (vn < sizeof num) {
        memcpy(num, v, vn);
        num[vn] = '\0';
        char *end;
        long long x = strtoll(num, &end, 10);
        bool ok = vn && !*end && x >= 0;
        if (ok && kn == 13 && !strncasecmp(b, "x-linked-size", kn))
            h->linked_size = x;
        if (ok && kn == 14 && !strncasecmp(b, "content-length", kn))
            h->content_length = x;
    }
    return len;
}

/* Percent-encodes s into out: unreserved characters and those in safe stay. */
static bool url_quote(const char *s, const char *safe, char *out, size_t cap)
{
    size_t k = 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool keep = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || strchr("-._~", ch) || (ch && strchr(safe, ch));
        if (k + 4 > cap)
            return false;
        k += keep ? (size_t)snprintf(out + k, cap - k, "%c", ch)
                  : (size_t)snprintf(out + k, cap - k, "%%%02X", ch);
    }
    out[k] = '\0';
    return true;
}

/* Options every request shares: who we are, the token, time limits, http(s) only. */
static void setup(struct pull *p, const char *url)
{
    CURL *c = p->c;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "hymt/" "0.1");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, NULL); /* sizes are of the bytes */
    if (p->o->token) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, p->o->token);
    }
}

/* The one-line reason for an HTTP status that is not success. */
static hy_status http_fail(struct pull *p, long code, const char *what)
{
    if (code == 401 || code == 403)
        return fail(p->err, HY_E_INVAL, "%s: access denied (HTTP %ld): a gated or private "
                    "repo needs HF_TOKEN set to a token that may read it", what, code);
    if (code == 404)
        return fail(p->err, HY_E_NOTFOUND, "%s: not found (HTTP 404): check the repo id and "
                    "the revision", what);
    return fail(p->err, HY_E_IO, "%s: HTTP %ld from the hub", what, code);
}

struct membuf {
    char *data;
    size_t n, cap;
};

static size_t on_body(char *b, size_t sz, size_t n, void *ud)
{
    struct membuf *m = ud;
    size_t len = sz * n;
    if (m->n + len + 1 > API_MAX_BYTES)
        return 0;
    if (m->n + len + 1 > m->cap) {
        size_t cap = (m->n + len + 1) * 2;
        char *d = realloc(m->data, cap);
        if (!d)
            return 0;
        m->data = d;
        m->cap = cap;
    }
    memcpy(m->data + m->n, b, len);
    m->n += len;
    m->data[m->n] = '\0';
    return len;
}

/* A file name from the server becomes a path under the snapshot: no absolute paths, empty,
 * "." or ".." parts, backslashes or control characters. */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > MAX_NAME || s[0] == '/' || s[n - 1] == '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\' ||
            (s[i] == '/' && s[i + 1] == '/'))
            return false;
    return hy_hub_parts_ok(s, n);
}

static bool hex_ok(const char *s, size_t n)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static bool wanted(const struct hy_hub_pull_opts *o, const char *path)
{
    bool in = o->n_include == 0;
    for (int i = 0; i < o->n_include && !in; i++)
        in = hy_hub_pattern_match(o->include[i], path);
    for (int i = 0; i < o->n_exclude && in; i++)
        in = !hy_hub_pattern_match(o->exclude[i], path);
    return in;
}

/* One sibling of the API answer into f; false when malformed. */
static bool parse_sibling(json_t *s, struct file *f, const char **why)
{
    json_t *name = json_object_get(s, "rfilename"), *size = json_object_get(s, "size");
    json_t *blob = json_object_get(s, "blobId"), *lfs = json_object_get(s, "lfs");
    *why = "rfilename";
    if (!json_is_string(name) || !name_ok(json_string_value(name)))
        return false;
    f->size = -1;
    *why = "size";
    if (size && !json_is_null(size)) {
        if (!json_is_integer(size) || json_integer_value(size) < 0)
            return false;
        f->size = json_integer_value(size);
    }
    *why = "blobId";
    if (blob && !json_is_null(blob)) {
        if (!json_is_string(blob) || !hex_ok(json_string_value(blob), 40))
            return false;
        memcpy(f->blob_id, json_string_value(blob), 41);
    }
    if (lfs && !json_is_null(lfs)) {
        json_t *sha = json_object_get(lfs, "sha256"), *lsize = json_object_get(lfs, "size");
        *why = "lfs.sha256";
        if (!json_is_string(sha) || !hex_ok(json_string_value(sha), 64))
            return false;
        memcpy(f->sha256, json_string_value(sha), 65);
        *why = "lfs.size";
        if (!json_is_integer(lsize) || json_integer_value(lsize) < 0)
            return false;
        f->size = json_integer_value(lsize);
    }
    f->path = strdup(json_string_value(name));
    *why = "memory";
    return f->path != NULL;
}

static hy_status parse_listing(struct pull *p, const char *text, const char *what)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        return fail(p->err, HY_E_FORMAT, "%s: not a JSON object (%s)", what, je.text);
    }
    json_t *sha = json_object_get(root, "sha"), *sib = json_object_get(root, "siblings");
    hy_status st = HY_OK;
    if (!json_is_string(sha) || !hy_hub_is_commit(json_string_value(sha)))
        st = fail(p->err, HY_E_FORMAT, "%s: no commit hash in \"sha\"", what);
    else if (!json_is_array(sib) || json_array_size(sib) > MAX_FILES)
        st = fail(p->err, HY_E_FORMAT, "%s: \"siblings\" is not an array of at most %d files",
                  what, MAX_FILES);
    if (!st) {
        memcpy(p->commit, json_string_value(sha), 41);
        p->files = calloc(json_array_size(sib) + 1, sizeof *p->files);
        if (!p->files)
            st = fail(p->err, HY_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; !st && i < json_array_size(sib); i++) {
        struct file f = {0};
        const char *why;
        if (!parse_sibling(json_array_get(sib, i), &f, &why))
            st = fail(p->err, HY_E_FORMAT, "%s: file %zu: bad or missing %s", what, i, why);
        else if (wanted(p->o, f.path))
            p->files[p->n_files++] = f;
        else
            free(f.path);
    }
    json_decref(root);
    return st;
}

/* GET the file list of the revision. */
static hy_status list_files(struct pull *p)
{
    char rev[3 * HY_HUB_REV_MAX + 1], url[2048], what[512];
    url_quote(p->id->revision, "", rev, sizeof rev);
    snprintf(url, sizeof url, "%s/api/models/%s/revision/%s?blobs=true", p->endpoint,
             p->id->repo, rev);
    snprintf(what, sizeof what, "%s@%s", p->id->repo, p->id->revision);
    struct membuf m = {0};
    setup(p, url);
    curl_easy_setopt(p->c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(p->c, CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
    curl_easy_setopt(p->c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(p->c, CURLOPT_WRITEDATA, &m);
    CURLcode cc = curl_easy_perform(p->c);
    long code = 0;
    curl_easy_getinfo(p->c, CURLINFO_RESPONSE_CODE, &code);
    hy_status st;
    if (cc != CURLE_OK)
        st = fail(p->err, HY_E_IO, "%s: %s: %s", what, url,
                  cc == CURLE_WRITE_ERROR ? "file list over 64 MiB" : curl_easy_strerror(cc));
    else if (code != 200)
        st = http_fail(p, code, what);
    else
        st = parse_listing(p, m.data ? m.data : "", what);
    free(m.data);
    return st;
}

/* HEAD on the resolve endpoint: the blob name and size (relative redirects followed). */
static hy_status head_file(struct pull *p, struct file *f, const char *url0)
{
    char url[URL_MAX + 2048];
    snprintf(url, sizeof url, "%s", url0);
    struct hdrs h;
    long code = 0;
    for (int hop = 0;; hop++) {
        setup(p, url);
        curl_easy_setopt(p->c, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(p->c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(p->c, CURLOPT_HEADERDATA, &h);
        CURLcode cc = curl_easy_perform(p->c);
        if (cc != CURLE_OK)
            return fail(p->err, HY_E_IO, "%s: %s: %s", f->path, url, curl_easy_strerror(cc));
        curl_easy_getinfo(p->c, CURLINFO_RESPONSE_CODE, &code);
        if (code < 300 || code >= 400 || h.location[0] != '/' || h.location[1] == '/')
            break;
        if (hop == MAX_REDIRECTS)
            return fail(p->err, HY_E_IO, "%s: more than %d redirects", f->path, MAX_REDIRECTS);
        snprintf(url, sizeof url, "%s%s", p->endpoint, h.location);
    }
    if (code >= 400)
        return http_fail(p, code, f->path);
    const char *e = h.linked_etag[0] ? h.linked_etag : h.etag;
    if (!strncmp(e, "W/", 2))
        e += 2;
    size_t n = strlen(e);
    if (n >= 2 && e[0] == '"' && e[n - 1] == '"')
        e++, n -= 2;
    char etag[sizeof f->etag];
    snprintf(etag, sizeof etag, "%.*s", (int)n, e);
    if (!n || !name_ok(etag) || strchr(etag, '/'))
        return fail(p->err, HY_E_FORMAT, "%s: the hub sent no usable ETag", f->path);
    memcpy(f->etag, etag, sizeof etag);
    int64_t size = h.linked_size >= 0 ? h.linked_size : (code < 300 ? h.content_length : -1);
    if (f->size < 0)
        f->size = size;
    else if (size >= 0 && size != f->size)
        return fail(p->err, HY_E_FORMAT, "%s: the file list says %lld bytes, the resolve "
                    "endpoint %lld", f->path, (long long)f->size, (long long)size);
    if (f->size < 0)
        return fail(p->err, HY_E_FORMAT, "%s: the hub reports no size", f->path);
    return HY_OK;
}

/* ---- progress ---- */

static void progress(struct pull *p, bool force)
{
    if (p->o->progress == HY_HUB_PROGRESS_NONE || p->total <= 0)
        return;
    double now = hy_clock_now();
    int pct = (int)(p->done * 100 / p->total);
    if (p->o->progress == HY_HUB_PROGRESS_LINES) {
        if (pct / 10 > p->last_decile) {
            p->last_decile = pct / 10;
            fprintf(p->out, "hymt pull: %d%% (%.1f of %.1f MB)\n", p->last_decile * 10,
                    (double)p->done / 1e6, (double)p->total / 1e6);
        }
        return;
    }
    if (!force && now - p->last_draw < 0.1)
        return;
    p->last_draw = now;
    char bar[31];
    int w = pct * 30 / 100;
    for (int i = 0; i < 30; i++)
        bar[i] = i < w ? '=' : ' ';
    bar[30] = '\0';
    double rate = now > p->t0 ? (double)p->done / (now - p->t0) / 1e6 : 0;
    fprintf(p->out, "\r[%s] %3d%% %.1f/%.1f MB %.1f MB/s %-30.30s", bar, pct,
            (double)p->done / 1e6, (double)p->total / 1e6, rate, p->current ? p->current : "");
    fflush(p->out);
}

/* ---- one file into blobs/ ---- */

struct sink {
    struct pull *p;
    FILE *f;
    EVP_MD_CTX *sha256, *sha1;
    int64_t have, limit;
    bool too_long, first; /* first: no byte of this attempt seen yet */
};

static bool digest_start(struct sink *s, int64_t size);

static size_t on_data(char *b, size_t sz, size_t n, void *ud)
{
    struct sink *s = ud;
    size_t len = sz * n;
    long code = 0;
    curl_easy_getinfo(s->p->c, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200 && code != 206)
        return len; /* an error page: dropped; the status is reported */
    if (s->first && code == 200 && s->have > 0) {
        /* the server ignored Range and sends the whole file: start over */
        s->p->done -= s->have;
        s->have = 0;
        if (ftruncate(fileno(s->f), 0) != 0 || !digest_start(s, s->limit))
            return 0;
    }
    s->first = false;
    if (s->have + (int64_t)len > s->limit) {
        s->too_long = true;
        return 0;
    }
    if (fwrite(b, 1, len, s->f) != len)
        return 0;
    EVP_DigestUpdate(s->sha256, b, len);
    EVP_DigestUpdate(s->sha1, b, len);
    s->have += (int64_t)len;
    s->p->done += (int64_t)len;
    progress(s->p, false);
    return len;
}

/* Starts both digests over the first `have` bytes already in f (a resumed download). */
static bool digest_start(struct sink *s, int64_t size)
{
    char hdr[48];
    int n = snprintf(hdr, sizeof hdr, "blob %lld", (long long)size);
    if (!EVP_DigestInit_ex(s->sha256, EVP_sha256(), NULL) ||
        !EVP_DigestInit_ex(s->sha1, EVP_sha1(), NULL) ||
        !EVP_DigestUpdate(s->sha1, hdr, (size_t)n + 1)) /* git hashes "blob N\0" + bytes */
        return false;
    rewind(s->f);
    static char buf[1 << 16];
    for (int64_t left = s->have; left > 0;) {
        size_t k = fread(buf, 1, left < (int64_t)sizeof buf ? (size_t)left : sizeof buf, s->f);
        if (!k)
            return false;
        EVP_DigestUpdate(s->sha256, buf, k);
        EVP_DigestUpdate(s->sha1, buf, k);
        left -= (int64_t)k;
    }
    return fseeko(s->f, (off_t)s->have, SEEK_SET) == 0;
}

static void hex(const unsigned char *d, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

/* The download in s->f is complete: checks size and hash. */
static hy_status verify(struct pull *p, struct file *f, struct sink *s)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    char got256[65] = "", got1[41] = "";
    EVP_DigestFinal_ex(s->sha256, d, &n);
    hex(d, n, got256);
    EVP_DigestFinal_ex(s->sha1, d, &n);
    hex(d, n, got1);
    if (s->have != f->size)
        return fail(p->err, HY_E_FORMAT, "%s: %lld bytes, the hub reports %lld; the download "
                    "was removed", f->path, (long long)s->have, (long long)f->size);
    /* an LFS file's etag is its sha256 too; a plain file's is its git blob id */
    const char *want256 = f->sha256[0] ? f->sha256 : hex_ok(f->etag, 64) ? f->etag : NULL;
    const char *want1 = f->blob_id[0] && !f->sha256[0] ? f->blob_id : NULL;
    if (!want256 && !want1 && hex_ok(f->etag, 40))
        want1 = f->etag;
    if (want256 && strcmp(want256, got256))
        return fail(p->err, HY_E_FORMAT, "%s: sha256 %s, the hub reports %s; the download was "
                    "removed", f->path, got256, want256);
    if (want1 && strcmp(want1, got1))
        return fail(p->err, HY_E_FORMAT, "%s: git blob id %s, the hub reports %s; the "
                    "download was removed", f->path, got1, want1);
    return HY_OK;
}

/* One GET attempt into s (resuming at s->have); *retry when a new attempt may finish it. */
static hy_status get_once(struct pull *p, struct file *f, const char *url, struct sink *s,
                          bool *retry)
{
    *retry = false;
    char range[48];
    s->first = true;
    setup(p, url);
    curl_easy_setopt(p->c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(p->c, CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
    curl_easy_setopt(p->c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(p->c, CURLOPT_WRITEDATA, s);
    if (s->have > 0) {
        snprintf(range, sizeof range, "%lld-", (long long)s->have);
        curl_easy_setopt(p->c, CURLOPT_RANGE, range);
    }
    CURLcode cc = curl_easy_perform(p->c);
    long code = 0;
    curl_easy_getinfo(p->c, CURLINFO_RESPONSE_CODE, &code);
    if (s->too_long)
        return fail(p->err, HY_E_FORMAT, "%s: the server sent more than the %lld bytes the hub "
                    "reports; the download was removed", f->path, (long long)f->size);
    if (code == 416 && s->have == f->size)
        return HY_OK; /* nothing left to fetch */
    if (code >= 400 || (code && code < 200) || (code >= 300 && code < 400))
        return http_fail(p, code, f->path);
    if (cc == CURLE_PARTIAL_FILE || cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_RECV_ERROR ||
        cc == CURLE_COULDNT_CONNECT || cc == CURLE_GOT_NOTHING || cc == CURLE_SEND_ERROR) {
        *retry = true;
        return fail(p->err, HY_E_IO, "%s: transfer broken after %lld of %lld bytes: %s",
                    f->path, (long long)s->have, (long long)f->size, curl_easy_strerror(cc));
    }
    if (cc != CURLE_OK)
        return fail(p->err, HY_E_IO, "%s: %s", f->path, curl_easy_strerror(cc));
    return HY_OK;
}

/* ---- the cache ---- */

/* mkdir -p of path's parent folders (and of path itself when whole). */
static hy_status mkdirs(struct pull *p, const char *path, bool whole)
{
    char b[HY_HUB_PATH_MAX + MAX_NAME + 64];
    snprintf(b, sizeof b, "%s", path);
    size_t n = strlen(b);
    if (!whole) {
        while (n > 0 && b[n - 1] != '/')
            n--;
        b[n] = '\0';
    }
    for (char *s = b + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(b, 0755) != 0 && errno != EEXIST)
            return fail(p->err, HY_E_IO, "cannot create %s: %s", b, strerror(errno));
        *s = '/';
    }
    if (b[0] && mkdir(b, 0755) != 0 && errno != EEXIST)
        return fail(p->err, HY_E_IO, "cannot create %s: %s", b, strerror(errno));
    return HY_OK;
}

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1;
}

/* Downloads, resumes and checks blobs/<etag> under the lock; a blob already whole stays. */
static hy_status fetch_locked(struct pull *p, struct file *f, const char *blob, const char *url)
{
    char inc[BLOB_MAX + 16];
    snprintf(inc, sizeof inc, "%s.incomplete", blob);
    if (file_size(blob) == f->size)
        return HY_OK; /* another pull finished it while we waited */
    int fd = open(inc, O_RDWR | O_CREAT, 0644);
    FILE *fp = fd >= 0 ? fdopen(fd, "r+b") : NULL;
    if (!fp) {
        if (fd >= 0)
            close(fd);
        return fail(p->err, HY_E_IO, "cannot write %s: %s", inc, strerror(errno));
    }
    struct sink s = {p, fp, EVP_MD_CTX_new(), EVP_MD_CTX_new(), file_size(inc), f->size, 0, 0};
    hy_status st = HY_OK;
    if (s.have > f->size && ftruncate(fd, 0) == 0)
        s.have = 0; /* longer than the file: not ours */
    if (!s.sha256 || !s.sha1 || !digest_start(&s, f->size))
        st = fail(p->err, HY_E_IO, "%s: cannot read back the partial download", inc);
    if (!st && s.have > 0 && p->o->progress != HY_HUB_PROGRESS_NONE)
        fprintf(p->out, "%shymt pull: %s: resuming at %lld of %lld bytes\n",
                p->o->progress == HY_HUB_PROGRESS_BAR ? "\r" : "", f->path,
                (long long)s.have, (long long)f->size);
    p->done += s.have;
    bool retry = !st;
    for (int attempt = 0; !st && retry; attempt++) {
        st = get_once(p, f, url, &s, &retry);
        if (st && retry && attempt < p->o->retries) {
            fprintf(p->out, "%shymt pull: %s; resuming\n",
                    p->o->progress == HY_HUB_PROGRESS_BAR ? "\r" : "", p->err->msg);
            st = HY_OK;
        } else {
            retry = false;
        }
    }
    bool keep = st && !s.too_long; /* a broken transfer resumes on the next pull */
    if (fflush(fp) != 0 || fsync(fd) != 0)
        st = st ? st : fail(p->err, HY_E_IO, "cannot write %s: %s", inc, strerror(errno));
    if (!st)
        st = verify(p, f, &s);
    fclose(fp);
    EVP_MD_CTX_free(s.sha256);
    EVP_MD_CTX_free(s.sha1);
    if (!st && rename(inc, blob) != 0)
        st = fail(p->err, HY_E_IO, "cannot rename %s: %s", inc, strerror(errno));
    if (st && (!keep || s.have == 0))
        unlink(inc);
    if (st && keep && s.have > 0)
        snprintf(p->err->msg + strlen(p->err->msg), sizeof p->err->msg - strlen(p->err->msg),
                 "; %lld bytes kept in %s: run the same command again to resume",
                 (long long)s.have, inc);
    return st;
}

static hy_status fetch_blob(struct pull *p, struct file *f)
{
    char blob[BLOB_MAX], lock[BLOB_MAX], url[URL_MAX], path[3 * MAX_NAME + 1];
    snprintf(blob, sizeof blob, "%s/blobs/%s", p->repo_dir, f->etag);
    if (file_size(blob) == f->size)
        return HY_OK;
    url_quote(f->path, "/", path, sizeof path);
    snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", p->endpoint, p->id->repo, p->commit, path);
    snprintf(lock, sizeof lock, "%s/%s.lock", p->locks, f->etag);
    int lfd = open(lock, O_RDWR | O_CREAT, 0644);
    if (lfd < 0)
        return fail(p->err, HY_E_IO, "cannot create %s: %s", lock, strerror(errno));
    hy_status st;
    if (flock(lfd, LOCK_EX) != 0)
        st = fail(p->err, HY_E_IO, "cannot lock %s: %s", lock, strerror(errno));
    else
        st = fetch_locked(p, f, blob, url);
    close(lfd); /* releases the lock */
    return st;
}

/* snapshots/<commit>/<path> -> ../../blobs/<etag> (one more ../ per folder in path). */
static hy_status link_file(struct pull *p, const struct file *f)
{
    char link[HY_HUB_PATH_MAX + MAX_NAME + 64], target[3 * MAX_NAME + 256];
    snprintf(link, sizeof link, "%s/snapshots/%s/%s", p->repo_dir, p->commit, f->path);
    size_t k = 0;
    target[0] = '\0';
    for (const char *s = f->path; *s; s++)
        if (*s == '/')
            k += (size_t)snprintf(target + k, sizeof target - k, "../");
    snprintf(target + k, sizeof target - k, "../../blobs/%s", f->etag);
    struct stat sb;
    if (lstat(link, &sb) == 0) {
        char cur[sizeof target];
        ssize_t n = readlink(link, cur, sizeof cur - 1);
        if (n >= 0 && (cur[n] = '\0', !strcmp(cur, target)))
            return HY_OK;
        unlink(link);
    }
    hy_status st = mkdirs(p, link, false);
    if (!st && symlink(target, link) != 0)
        st = fail(p->err, HY_E_IO, "cannot link %s: %s", link, strerror(errno));
    return st;
}

/* refs/<revision> = the commit, written whole (temporary file, rename). */
static hy_status write_ref(struct pull *p)
{
    if (!strcmp(p->id->revision, p->commit))
        return HY_OK;
    char ref[HY_HUB_PATH_MAX + HY_HUB_REV_MAX + 16], tmp[sizeof ref + 32];
    snprintf(ref, sizeof ref, "%s/refs/%s", p->repo_dir, p->id->revision);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", ref, (int)getpid());
    hy_status st = mkdirs(p, ref, false);
    FILE *f = st ? NULL : fopen(tmp, "wb");
    if (!st && (!f || fputs(p->commit, f) < 0 || fclose(f) != 0 || rename(tmp, ref) != 0)) {
        st = fail(p->err, HY_E_IO, "cannot write %s: %s", ref, strerror(errno));
        unlink(tmp);
    }
    return st;
}

static hy_status run_pull(struct pull *p)
{
    hy_status st = list_files(p);
    if (!st && p->n_files == 0)
        st = fail(p->err, HY_E_NOTFOUND, "%s@%s: no file matches the --include/--exclude "
                  "patterns", p->id->repo, p->id->revision);
    char dir[HY_HUB_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/blobs", p->repo_dir);
    if (!st)
        st = mkdirs(p, dir, true);
    if (!st)
        st = mkdirs(p, p->locks, true);
    for (int i = 0; !st && i < p->n_files; i++) {
        char url[URL_MAX], path[3 * MAX_NAME + 1], blob[BLOB_MAX];
        struct file *f = &p->files[i];
        url_quote(f->path, "/", path, sizeof path);
        snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", p->endpoint, p->id->repo, p->commit,
                 path);
        st = head_file(p, f, url);
        snprintf(blob, sizeof blob, "%s/blobs/%s", p->repo_dir, f->etag);
        if (!st && file_size(blob) != f->size)
            p->total += f->size;
    }
    p->t0 = hy_clock_now();
    for (int i = 0; !st && i < p->n_files; i++) {
        p->current = p->files[i].path;
        st = fetch_blob(p, &p->files[i]);
        progress(p, true);
    }
    if (p->o->progress == HY_HUB_PROGRESS_BAR && p->total > 0)
        fputc('\n', p->out);
    for (int i = 0; !st && i < p->n_files; i++)
        st = link_file(p, &p->files[i]);
    if (!st)
        st = write_ref(p);
    return st;
}

hy_status hy_hub_pull(const struct hy_hub_id *id, const struct hy_hub_pull_opts *o,
                      char *snapshot, size_t cap, struct hy_hub_err *err)
{
    struct pull p = {.id = id, .o = o, .err = err, .out = o->out ? o->out : stderr,
                     .last_decile = 0};
    const char *ep = o->endpoint ? o->endpoint : HY_HUB_DEFAULT_ENDPOINT;
    size_t n = strlen(ep);
    while (n > 0 && ep[n - 1] == '/')
        n--;
    if ((strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) || n >= sizeof p.endpoint)
        return fail(err, HY_E_INVAL, "HF_ENDPOINT must be an http:// or https:// URL, not '%s'",
                    ep);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ep[i] <= ' ' || ep[i] == 0x7f)
            return fail(err, HY_E_INVAL, "HF_ENDPOINT has a space or control character");
    snprintf(p.endpoint, sizeof p.endpoint, "%.*s", (int)n, ep);
    char cache[HY_HUB_PATH_MAX];
    hy_status st = hy_hub_cache_dir(cache, sizeof cache, NULL, err);
    if (!st)
        st = hy_hub_repo_dir(id, p.repo_dir, sizeof p.repo_dir, err);
    if (st)
        return st;
    const char *base = strrchr(p.repo_dir, '/') + 1;
    if ((size_t)snprintf(p.locks, sizeof p.locks, "%s/.locks/%s", cache, base) >= sizeof p.locks)
        return fail(err, HY_E_INVAL, "hub cache path too long");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(p.c = curl_easy_init()))
        return fail(err, HY_E_IO, "cannot start libcurl");
    st = run_pull(&p);
    curl_easy_cleanup(p.c);
    curl_global_cleanup();
    for (int i = 0; i < p.n_files; i++)
        free(p.files[i].path);
    free(p.files);
    if (!st && (size_t)snprintf(snapshot, cap, "%s/snapshots/%s", p.repo_dir, p.commit) >= cap)
        st = fail(err, HY_E_INVAL, "snapshot path too long");
    return st;
}
