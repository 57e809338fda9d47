/* docx.c: .docx paragraphs translated in place (contract and limits in docx.h). */
#include "translate/docx.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef HYMT_DOCX /* built with libzip and libxml2 (CMakeLists.txt); the stubs are at the end */

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <pthread.h>
#include <stdio.h>
#include <zip.h>

#define DOC_PART "word/document.xml"
#define W_NS "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

bool hy_docx_available(void)
{
    return true;
}

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void)
{
    xmlInitParser();
}

static bool is_w(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && n->ns && n->ns->href &&
           !strcmp((const char *)n->ns->href, W_NS) && !strcmp((const char *)n->name, name);
}

/* A paragraph: its own w:t elements (not those of a paragraph nested inside it, as in a
 * text box) in document order. */
struct para {
    xmlNode **t;
    size_t n;
};

struct paras {
    struct para *p;
    size_t n, cap;
    xmlNode **pool; /* every w:t, paragraph by paragraph */
    size_t n_pool, cap_pool;
    bool nomem;
};

static void collect_t(struct paras *ps, xmlNode *n)
{
    for (xmlNode *c = n->children; c; c = c->next) {
        if (is_w(c, "p"))
            continue; /* its own paragraph, collected by the walk */
        if (is_w(c, "t")) {
            if (ps->n_pool == ps->cap_pool) {
                size_t cap = 2 * ps->cap_pool + 256;
                xmlNode **p = realloc(ps->pool, cap * sizeof *p);
                if (!p) {
                    ps->nomem = true;
                    return;
                }
                ps->pool = p;
                ps->cap_pool = cap;
            }
            ps->pool[ps->n_pool++] = c;
            continue;
        }
        collect_t(ps, c);
    }
}

/* Every paragraph under n in document order (a nested one after the one holding it). The
 * w:t lists are offsets into the pool until the walk ends (the pool moves as it grows). */
static void walk(struct paras *ps, xmlNode *n, int depth)
{
    for (xmlNode *c = n->children; c && !ps->nomem && depth < 256; c = c->next) {
        if (is_w(c, "p")) {
            if (ps->n == ps->cap) {
                size_t cap = 2 * ps->cap + 64;
                struct para *p = realloc(ps->p, cap * sizeof *p);
                if (!p) {
                    ps->nomem = true;
                    return;
                }
                ps->p = p;
                ps->cap = cap;
            }
            size_t first = ps->n_pool;
            collect_t(ps, c);
            ps->p[ps->n++] = (struct para){(xmlNode **)(uintptr_t)first, ps->n_pool - first};
        }
        walk(ps, c, depth + 1);
    }
}

static size_t cp_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* Byte offset of code point k of s (n bytes). */
static size_t cp_off(const char *s, size_t n, size_t k)
{
    size_t i = 0;
    for (; i < n && k; k--)
        for (i++; i < n && ((unsigned char)s[i] & 0xC0) == 0x80; i++)
            ;
    return i;
}

static bool has_letter(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
            return true;
        if (c >= 0xC3) /* beyond Latin-1's symbols: a letter of some script, or close */
            return true;
    }
    return false;
}

static bool space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Replaces the text of w:t element t by s[0..n). */
static bool set_text(xmlNode *t, const char *s, size_t n)
{
    xmlNode *c = t->children;
    while (c) {
        xmlNode *next = c->next;
        xmlUnlinkNode(c);
        xmlFreeNode(c);
        c = next;
    }
    xmlNode *txt = xmlNewTextLen((const xmlChar *)s, (int)n);
    if (!txt || !xmlAddChild(t, txt))
        return false;
    if (n && (space(s[0]) || space(s[n - 1]))) {
        xmlNs *xml = xmlSearchNsByHref(t->doc, t, XML_XML_NAMESPACE);
        if (!xml || !xmlSetNsProp(t, xml, (const xmlChar *)"space", (const xmlChar *)"preserve"))
            return false;
    }
    return true;
}

/* Where the cut after a run ends in s (bytes, n): code point target, moved to just after
 * the nearest space within HY_DOCX_SNAP code points, never before lo. */
static size_t cut_at(const char *s, size_t n, size_t target, size_t lo)
{
    size_t best = target, dist = HY_DOCX_SNAP + 1, total = cp_count(s, n);
    for (size_t d = 0; d <= HY_DOCX_SNAP && dist > HY_DOCX_SNAP; d++) {
        size_t cand[2] = {target >= d ? target - d : (size_t)-1, target + d};
        for (int k = 0; k < 2; k++) {
            size_t c = cand[k];
            if (c == (size_t)-1 || c > total || c < lo || c == 0)
                continue;
            size_t b = cp_off(s, n, c);
            if (space(s[b - 1]) && (b == n || !space(s[b]))) {
                best = c;
                dist = d;
                break;
            }
        }
    }
    return best < lo ? lo : best > total ? total : best;
}

/* Writes the paragraph's new text s[0..n) over its runs (see docx.h). */
static bool distribute(const struct para *p, char **olds, const size_t *old_lens,
                       const char *s, size_t n)
{
    size_t total = 0, cum = 0, prev = 0, m = cp_count(s, n);
    for (size_t i = 0; i < p->n; i++)
        total += cp_count(olds[i], old_lens[i]);
    for (size_t i = 0; i < p->n; i++) {
        size_t len_i = cp_count(olds[i], old_lens[i]);
        cum += len_i;
        size_t end = i + 1 == p->n ? m
                     : len_i == 0  ? prev
                                   : cut_at(s, n, (size_t)((double)m * (double)cum /
                                                               (double)(total ? total : 1) + 0.5),
                                            prev);
        size_t a = cp_off(s, n, prev), b = cp_off(s, n, end);
        if (!set_text(p->t[i], s + a, b - a))
            return false;
        prev = end;
    }
    return true;
}

struct texts {
    char **para;     /* [n paragraphs] the whole text, malloc'd */
    size_t *len;
    const char **trimmed; /* [n_tr] what is translated */
    size_t *tr_len, *tr_para; /* its length, its paragraph */
    char **outs;
    size_t *out_lens;
    char **old;      /* [n_pool] each w:t's text */
    size_t *old_len;
    size_t n_tr;
};

static void texts_free(struct texts *x, size_t n_para, size_t n_pool)
{
    for (size_t i = 0; x->para && i < n_para; i++)
        free(x->para[i]);
    for (size_t i = 0; x->outs && i < x->n_tr; i++)
        free(x->outs[i]);
    for (size_t i = 0; x->old && i < n_pool; i++)
        xmlFree(x->old[i]);
    free(x->para);
    free(x->len);
    free(x->trimmed);
    free(x->tr_len);
    free(x->tr_para);
    free(x->outs);
    free(x->out_lens);
    free(x->old);
    free(x->old_len);
}

/* Gathers every paragraph's text and the trimmed ones to translate. */
static hy_status gather(struct paras *ps, struct texts *x, struct hy_err *err)
{
    size_t np = ps->n ? ps->n : 1, nt = ps->n_pool ? ps->n_pool : 1;
    x->para = calloc(np, sizeof *x->para);
    x->len = calloc(np, sizeof *x->len);
    x->trimmed = calloc(np, sizeof *x->trimmed);
    x->tr_len = calloc(np, sizeof *x->tr_len);
    x->tr_para = calloc(np, sizeof *x->tr_para);
    x->outs = calloc(np, sizeof *x->outs);
    x->out_lens = calloc(np, sizeof *x->out_lens);
    x->old = calloc(nt, sizeof *x->old);
    x->old_len = calloc(nt, sizeof *x->old_len);
    if (!x->para || !x->len || !x->trimmed || !x->tr_len || !x->tr_para || !x->outs ||
        !x->out_lens || !x->old || !x->old_len)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    for (size_t k = 0; k < ps->n_pool; k++) {
        x->old[k] = (char *)xmlNodeGetContent(ps->pool[k]);
        x->old_len[k] = x->old[k] ? strlen(x->old[k]) : 0;
    }
    for (size_t i = 0; i < ps->n; i++) {
        const struct para *p = &ps->p[i];
        size_t first = (size_t)(p->t - ps->pool), n = 0;
        for (size_t k = 0; k < p->n; k++)
            n += x->old_len[first + k];
        if (!(x->para[i] = malloc(n + 1)))
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        n = 0;
        for (size_t k = 0; k < p->n; k++) {
            memcpy(x->para[i] + n, x->old[first + k], x->old_len[first + k]);
            n += x->old_len[first + k];
        }
        x->len[i] = n;
        size_t a = 0, b = n;
        while (a < b && space(x->para[i][a]))
            a++;
        while (b > a && space(x->para[i][b - 1]))
            b--;
        if (!has_letter(x->para[i] + a, b - a))
            continue;
        x->trimmed[x->n_tr] = x->para[i] + a;
        x->tr_len[x->n_tr] = b - a;
        x->tr_para[x->n_tr++] = i;
    }
    return HY_OK;
}

/* Writes each translated paragraph back: its leading space, the translation, its
 * trailing space, over its runs. */
static hy_status write_back(struct paras *ps, struct texts *x, struct hy_err *err)
{
    for (size_t j = 0; j < x->n_tr; j++) {
        if (!x->outs[j] || (x->out_lens[j] == x->tr_len[j] &&
                            !memcmp(x->outs[j], x->trimmed[j], x->tr_len[j])))
            continue; /* unchanged: the runs stay as they are */
        size_t i = x->tr_para[j], lead = (size_t)(x->trimmed[j] - x->para[i]);
        size_t trail = x->len[i] - lead - x->tr_len[j], n = lead + x->out_lens[j] + trail;
        char *s = malloc(n + 1);
        if (!s)
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        memcpy(s, x->para[i], lead);
        memcpy(s + lead, x->outs[j], x->out_lens[j]);
        memcpy(s + lead + x->out_lens[j], x->trimmed[j] + x->tr_len[j], trail);
        const struct para *p = &ps->p[i];
        size_t first = (size_t)(p->t - ps->pool);
        bool ok = distribute(p, x->old + first, x->old_len + first, s, n);
        free(s);
        if (!ok)
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    return HY_OK;
}

/* An open package: the archive, its document part parsed, the paragraphs gathered. */
struct hy_docx {
    zip_source_t *src; /* the archive's bytes (libzip writes the new one here) */
    zip_t *z;
    zip_int64_t idx;   /* word/document.xml */
    xmlDoc *doc;
    struct paras ps;
    struct texts x;
};

/* Parses document.xml (xml[0..n)) into d and gathers its paragraphs. */
static hy_status parse_xml(struct hy_docx *d, const char *xml, size_t n, struct hy_err *err)
{
    pthread_once(&xml_once, xml_init);
    d->doc = xmlReadMemory(xml, (int)n, DOC_PART, NULL,
                           XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!d->doc) {
        const xmlError *e = xmlGetLastError();
        char msg[160] = "?";
        if (e && e->message)
            snprintf(msg, sizeof msg, "%s", e->message);
        msg[strcspn(msg, "\r\n")] = '\0';
        return hy_err_set(err, HY_E_FORMAT, DOC_PART ": not well-formed XML (line %d: %s)",
                          e ? e->line : 0, msg);
    }
    if (d->doc->intSubset || d->doc->extSubset) /* no DTD: no entity expansion, no XXE */
        return hy_err_set(err, HY_E_FORMAT, DOC_PART ": a DTD, which a .docx part never holds");
    xmlNode *root = xmlDocGetRootElement(d->doc);
    if (!root || !is_w(root, "document"))
        return hy_err_set(err, HY_E_FORMAT, DOC_PART ": the root is not w:document");
    walk(&d->ps, root, 0);
    for (size_t i = 0; i < d->ps.n; i++) /* offsets into the pool, now that it stays */
        d->ps.p[i].t = d->ps.pool + (uintptr_t)d->ps.p[i].t;
    if (d->ps.nomem)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    return gather(&d->ps, &d->x, err);
}

/* Reads part idx (declared size, at most HY_DOCX_MAX_XML, checked while reading). */
static hy_status read_part(zip_t *z, zip_int64_t idx, char **out, size_t *n, struct hy_err *err)
{
    zip_stat_t sb;
    if (zip_stat_index(z, (zip_uint64_t)idx, 0, &sb) || !(sb.valid & ZIP_STAT_SIZE))
        return hy_err_set(err, HY_E_FORMAT, DOC_PART ": unreadable in the archive");
    if (sb.size > (zip_uint64_t)HY_DOCX_MAX_XML)
        return hy_err_set(err, HY_E_RANGE, DOC_PART " is %llu bytes uncompressed; the limit is "
                          "%lld", (unsigned long long)sb.size, HY_DOCX_MAX_XML);
    zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)idx, 0);
    char *buf = malloc(sb.size + 1);
    if (!f || !buf) {
        free(buf);
        if (f)
            zip_fclose(f);
        return hy_err_set(err, f ? HY_E_NOMEM : HY_E_FORMAT, DOC_PART ": %s",
                          f ? "out of memory" : zip_strerror(z));
    }
    /* one byte more than declared: a part that inflates past its size is refused */
    zip_int64_t got = zip_fread(f, buf, sb.size + 1);
    zip_fclose(f);
    if (got < 0 || (zip_uint64_t)got != sb.size) {
        free(buf);
        return hy_err_set(err, HY_E_FORMAT, DOC_PART ": its data does not match its declared "
                          "size (corrupt archive)");
    }
    *out = buf;
    *n = (size_t)got;
    return HY_OK;
}

/* The archive's checks: entry count, declared sizes, the document part's index. */
static hy_status check_archive(zip_t *z, zip_int64_t *doc_idx, struct hy_err *err)
{
    zip_int64_t n = zip_get_num_entries(z, 0);
    if (n < 0 || n > HY_DOCX_MAX_ENTRIES)
        return hy_err_set(err, HY_E_RANGE, "the archive has %lld parts; the limit is %d",
                          (long long)n, HY_DOCX_MAX_ENTRIES);
    zip_uint64_t total = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t sb;
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &sb) == 0 && (sb.valid & ZIP_STAT_SIZE))
            total += sb.size;
        if (total > (zip_uint64_t)HY_DOCX_MAX_TOTAL)
            return hy_err_set(err, HY_E_RANGE, "the archive's parts are more than %lld bytes "
                              "uncompressed", HY_DOCX_MAX_TOTAL);
    }
    *doc_idx = zip_name_locate(z, DOC_PART, 0);
    if (*doc_idx < 0)
        return hy_err_set(err, HY_E_FORMAT, "not a Word document: the archive has no " DOC_PART);
    return HY_OK;
}

/* The archive in src after zip_close, into *out. */
static hy_status take_output(zip_source_t *src, void **out, size_t *out_len, struct hy_err *err)
{
    zip_stat_t sb;
    if (zip_source_stat(src, &sb) || !(sb.valid & ZIP_STAT_SIZE) || zip_source_open(src))
        return hy_err_set(err, HY_E_IO, "cannot read the new archive back");
    char *buf = malloc(sb.size ? sb.size : 1);
    zip_int64_t got = buf ? zip_source_read(src, buf, sb.size) : -1;
    zip_source_close(src);
    if (got < 0 || (zip_uint64_t)got != sb.size) {
        free(buf);
        return hy_err_set(err, buf ? HY_E_IO : HY_E_NOMEM, "cannot read the new archive back");
    }
    *out = buf;
    *out_len = (size_t)got;
    return HY_OK;
}

void hy_docx_close(struct hy_docx *d)
{
    if (!d)
        return;
    texts_free(&d->x, d->ps.n, d->ps.n_pool);
    free(d->ps.p);
    free(d->ps.pool);
    xmlFreeDoc(d->doc);
    if (d->z)
        zip_discard(d->z);
    zip_source_free(d->src);
    free(d);
}

hy_status hy_docx_open(struct hy_docx **out, const void *data, size_t len, struct hy_err *err)
{
    *out = NULL;
    if ((long long)len > HY_DOCX_MAX_BYTES)
        return hy_err_set(err, HY_E_RANGE, "the .docx file is %zu bytes; the limit is %lld", len,
                          HY_DOCX_MAX_BYTES);
    struct hy_docx *d = calloc(1, sizeof *d);
    /* a private copy: libzip writes the new archive into the source's buffer */
    void *copy = malloc(len ? len : 1);
    zip_error_t ze;
    zip_error_init(&ze);
    if (d && copy && len)
        memcpy(copy, data, len);
    if (d && copy)
        d->src = zip_source_buffer_create(copy, len, 1, &ze);
    if (!d || !d->src) {
        free(copy);
        free(d);
        zip_error_fini(&ze);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    zip_source_keep(d->src); /* ours, to read the new archive from after zip_close */
    d->z = zip_open_from_source(d->src, ZIP_CHECKCONS, &ze);
    if (!d->z) /* not taken: both references are still ours */
        zip_source_free(d->src);
    hy_status st = d->z ? HY_OK
                        : hy_err_set(err, HY_E_FORMAT, "not a .docx file (a zip archive): %s",
                                     zip_error_strerror(&ze));
    zip_error_fini(&ze);
    char *xml = NULL;
    size_t n = 0;
    if (!st)
        st = check_archive(d->z, &d->idx, err);
    if (!st)
        st = read_part(d->z, d->idx, &xml, &n, err);
    if (!st)
        st = parse_xml(d, xml, n, err);
    free(xml);
    if (st) {
        hy_docx_close(d);
        return st;
    }
    *out = d;
    return HY_OK;
}

size_t hy_docx_texts(const struct hy_docx *d, const char *const **texts, const size_t **lens)
{
    *texts = d->x.trimmed;
    *lens = d->x.tr_len;
    return d->x.n_tr;
}

hy_status hy_docx_finish(struct hy_docx *d, const char *const *outs, const size_t *out_lens,
                         void **out, size_t *out_len, struct hy_err *err)
{
    *out = NULL;
    *out_len = 0;
    for (size_t j = 0; j < d->x.n_tr; j++) { /* copies: write_back reads them from x */
        free(d->x.outs[j]);
        d->x.outs[j] = NULL;
        if (!outs[j])
            continue;
        if (!(d->x.outs[j] = malloc(out_lens[j] ? out_lens[j] : 1)))
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        memcpy(d->x.outs[j], outs[j], out_lens[j]);
        d->x.out_lens[j] = out_lens[j];
    }
    hy_status st = write_back(&d->ps, &d->x, err);
    xmlChar *nx = NULL;
    int nn = 0;
    if (!st) {
        xmlDocDumpMemoryEnc(d->doc, &nx, &nn, "UTF-8");
        if (!nx)
            st = hy_err_set(err, HY_E_NOMEM, "out of memory writing " DOC_PART);
    }
    zip_source_t *part = NULL;
    if (!st && !(part = zip_source_buffer(d->z, nx, (zip_uint64_t)nn, 0)))
        st = hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (!st && zip_file_replace(d->z, (zip_uint64_t)d->idx, part, 0) < 0) {
        zip_source_free(part);
        st = hy_err_set(err, HY_E_IO, "cannot replace " DOC_PART ": %s", zip_strerror(d->z));
    }
    if (!st && zip_close(d->z) < 0)
        st = hy_err_set(err, HY_E_IO, "cannot write the new archive: %s", zip_strerror(d->z));
    else if (!st)
        d->z = NULL; /* closed: the new archive is in d->src */
    if (!st)
        st = take_output(d->src, out, out_len, err);
    xmlFree(nx);
    return st;
}

hy_status hy_docx_translate(const void *data, size_t len, hy_format_translate_fn fn, void *ctx,
                            void **out, size_t *out_len, struct hy_err *err)
{
    struct hy_docx *d = NULL;
    *out = NULL;
    *out_len = 0;
    hy_status st = hy_docx_open(&d, data, len, err);
    if (!st && d->x.n_tr)
        st = fn(ctx, d->x.trimmed, d->x.tr_len, d->x.n_tr, d->x.outs, d->x.out_lens, err);
    if (!st) { /* finish copies the outputs: hand it the ones fn made, then free those */
        size_t n = d->x.n_tr;
        char **outs = d->x.outs;
        size_t *lens = d->x.out_lens;
        d->x.outs = calloc(n ? n : 1, sizeof *d->x.outs);
        d->x.out_lens = calloc(n ? n : 1, sizeof *d->x.out_lens);
        st = d->x.outs && d->x.out_lens
                 ? hy_docx_finish(d, (const char *const *)outs, lens, out, out_len, err)
                 : hy_err_set(err, HY_E_NOMEM, "out of memory");
        for (size_t j = 0; j < n; j++)
            free(outs[j]);
        free(outs);
        free(lens);
    }
    hy_docx_close(d);
    return st;
}

#else /* no libzip / libxml2: .docx is refused with what to install */

bool hy_docx_available(void)
{
    return false;
}

#define NO_DOCX ".docx needs a build with libzip and libxml2 (apt-get install libzip-dev " \
                "libxml2-dev, then rebuild)"

hy_status hy_docx_open(struct hy_docx **out, const void *data, size_t len, struct hy_err *err)
{
    (void)data, (void)len;
    *out = NULL;
    return hy_err_set(err, HY_E_UNSUPPORTED, NO_DOCX);
}

size_t hy_docx_texts(const struct hy_docx *d, const char *const **texts, const size_t **lens)
{
    (void)d;
    *texts = NULL;
    *lens = NULL;
    return 0;
}

hy_status hy_docx_finish(struct hy_docx *d, const char *const *outs, const size_t *out_lens,
                         void **out, size_t *out_len, struct hy_err *err)
{
    (void)d, (void)outs, (void)out_lens;
    *out = NULL;
    *out_len = 0;
    return hy_err_set(err, HY_E_UNSUPPORTED, NO_DOCX);
}

void hy_docx_close(struct hy_docx *d)
{
    (void)d;
}

hy_status hy_docx_translate(const void *data, size_t len, hy_format_translate_fn fn, void *ctx,
                            void **out, size_t *out_len, struct hy_err *err)
{
    (void)data, (void)len, (void)fn, (void)ctx;
    *out = NULL;
    *out_len = 0;
    return hy_err_set(err, HY_E_UNSUPPORTED, NO_DOCX);
}

#endif

bool hy_docx_is_path(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && !strcasecmp(path + n - 5, ".docx");
}

struct eng_job {
    struct hy_engine *e;
    const struct hy_tok *tok;
    const struct hy_doc_opts *o;
    struct hy_doc_result *res;
};

static hy_status eng_runs(void *ctx, const char *const *texts, const size_t *lens, size_t n,
                          char **outs, size_t *out_lens, struct hy_err *err)
{
    struct eng_job *j = ctx;
    return hy_format_doc_runs(j->e, j->tok, j->o, j->res, true, texts, lens, n, outs, out_lens,
                              err);
}

hy_status hy_docx_doc_translate(struct hy_engine *e, const struct hy_tok *tok, const void *data,
                                size_t len, const struct hy_doc_opts *o,
                                struct hy_doc_result *res, struct hy_err *err)
{
    memset(res, 0, sizeof *res);
    if (!o->write)
        return hy_err_set(err, HY_E_INVAL, "an output is required");
    struct eng_job j = {e, tok, o, res};
    void *out = NULL;
    size_t n = 0;
    hy_status st = hy_docx_translate(data, len, eng_runs, &j, &out, &n, err);
    if (!st)
        st = o->write(o->write_ctx, out, n, err);
    free(out);
    return st;
}
