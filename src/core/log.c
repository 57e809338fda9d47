/* log.c: log lines in text or JSON (log.h has the contract). */
#include "core/log.h"

#include "core/globals.h"
#include "core/utf8.h"

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

int hy_log_level = HY_LOG_INFO;
volatile sig_atomic_t hy_stop_requested = 0;

static enum hy_log_fmt log_fmt = HY_LOG_TEXT;
static FILE *log_out; /* NULL: stderr */

void hy_log_set_format(enum hy_log_fmt fmt) { log_fmt = fmt; }
enum hy_log_fmt hy_log_get_format(void) { return log_fmt; }
void hy_log_set_output(FILE *f) { log_out = f; }

int hy_log_parse_format(const char *name, enum hy_log_fmt *out)
{
    if (!strcmp(name, "text"))
        *out = HY_LOG_TEXT;
    else if (!strcmp(name, "json"))
        *out = HY_LOG_JSON;
    else
        return -1;
    return 0;
}

/* A line being formed: content stops at limit (room is kept to close the line). */
struct line {
    char *b;
    size_t n, limit, cap;
    bool cut;
};

#define CLOSE_ROOM 32 /* room for '..."' + ',"truncated":true}' */

/* Appends s[0..len) whole or not at all; past limit only when force (closing text). */
static bool put(struct line *l, const char *s, size_t len, bool force)
{
    if (l->cut && !force)
        return false;
    if (l->n + len > (force ? l->cap - 1 : l->limit)) {
        l->cut = l->cut || !force;
        return false;
    }
    memcpy(l->b + l->n, s, len);
    l->n += len;
    l->b[l->n] = '\0';
    return true;
}

static void puts_(struct line *l, const char *s) { put(l, s, strlen(s), false); }

/* s with control characters and invalid UTF-8 escaped; json: JSON string escapes, else
 * text escapes (quote: also '"' and '\'). */
static void put_escaped(struct line *l, const char *s, bool json, bool quote)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n && !l->cut;) {
        unsigned char c = p[i];
        char e[8];
        int k = c >= 0x80 ? hy_utf8_seq_len(p + i, n - i) : 1;
        if (k == 0) { /* an invalid byte: U+FFFD */
            put(l, "\xEF\xBF\xBD", 3, false);
            i++;
            continue;
        }
        if (k > 1) {
            put(l, s + i, (size_t)k, false);
            i += (size_t)k;
            continue;
        }
        const char *rep = NULL;
        if (c == '\n')
            rep = "\\n";
        else if (c == '\t')
            rep = "\\t";
        else if (c == '\r')
            rep = "\\r";
        else if ((c == '"' || c == '\\') && (json || quote))
            rep = c == '"' ? "\\\"" : "\\\\";
        if (rep) {
            puts_(l, rep);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(e, sizeof e, json ? "\\u%04x" : "\\x%02x", c);
            puts_(l, e);
        } else {
            put(l, (const char *)&c, 1, false);
        }
        i++;
    }
}

/* A plain JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return false;
    if (*s == '.') {
        if (!(*++s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return !*s;
}

/* A text value is quoted when it is empty or holds spaces, quotes, '=' or non-printables. */
static bool needs_quotes(const char *s)
{
    if (!*s)
        return true;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '"' || *s == '=' || *s == 0x7f || *s == '\\')
            return true;
    return false;
}

/* YYYY-MM-DDThh:mm:ss.mmm+hh:mm: local time and its offset from UTC */
static void put_time(struct line *l, double t)
{
    time_t sec = (time_t)t;
    int ms = (int)((t - (double)sec) * 1000.0);
    ms = ms < 0 ? 0 : ms > 999 ? 999 : ms;
    struct tm tm;
    localtime_r(&sec, &tm);
    long off = tm.tm_gmtoff / 60;
    char ts[48];
    size_t k = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + k, sizeof ts - k, ".%03d%c%02ld:%02ld", ms, off < 0 ? '-' : '+',
             (off < 0 ? -off : off) / 60, (off < 0 ? -off : off) % 60);
    puts_(l, ts);
}

size_t hy_log_format_line(char *buf, size_t cap, double t, enum hy_log_lvl lvl,
                          const struct hy_log_field *fields, int n_fields, const char *msg)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (cap < 2 * CLOSE_ROOM) {
        if (cap)
            buf[0] = '\0';
        return 0;
    }
    struct line l = {buf, 0, cap - CLOSE_ROOM, cap, false};
    buf[0] = '\0';
    const bool json = log_fmt == HY_LOG_JSON;
    const char *level = names[(unsigned)lvl < 4 ? lvl : 3];
    if (json) {
        puts_(&l, "{\"ts\":\"");
        put_time(&l, t);
        puts_(&l, "\",\"level\":\"");
        puts_(&l, level);
        puts_(&l, "\",\"msg\":\"");
        put_escaped(&l, msg, true, true);
        put(&l, l.cut ? "...\"" : "\"", l.cut ? 4 : 1, true);
        for (int i = 0; i < n_fields && !l.cut; i++) {
            if (!fields[i].value)
                continue;
            size_t start = l.n; /* a field that does not fit is left out whole */
            puts_(&l, ",\"");
            put_escaped(&l, fields[i].key, true, true);
            puts_(&l, "\":");
            bool num = json_number(fields[i].value);
            if (!num)
                puts_(&l, "\"");
            put_escaped(&l, fields[i].value, true, true);
            if (!num)
                puts_(&l, "\"");
            if (l.cut)
                l.b[l.n = start] = '\0';
        }
        if (l.cut)
            put(&l, ",\"truncated\":true", 17, true);
        put(&l, "}", 1, true);
        return l.n;
    }
    put_time(&l, t);
    char lv[16];
    snprintf(lv, sizeof lv, " %-5s ", level);
    puts_(&l, lv);
    put_escaped(&l, msg, false, false);
    for (int i = 0; i < n_fields && !l.cut; i++) {
        if (!fields[i].value)
            continue;
        size_t start = l.n;
        puts_(&l, " ");
        put_escaped(&l, fields[i].key, false, true);
        puts_(&l, "=");
        bool q = needs_quotes(fields[i].value);
        if (q)
            puts_(&l, "\"");
        put_escaped(&l, fields[i].value, false, q);
        if (q)
            puts_(&l, "\"");
        if (l.cut)
            l.b[l.n = start] = '\0';
    }
    if (l.cut)
        put(&l, "...", 3, true);
    return l.n;
}

static void emit(enum hy_log_lvl lvl, const struct hy_log_field *fields, int n_fields,
                 const char *fmt, va_list ap)
{
    char msg[HY_LOG_LINE_MAX];
    if (vsnprintf(msg, sizeof msg, fmt, ap) >= (int)sizeof msg)
        memcpy(msg + sizeof msg - 4, "...", 4); /* cut: say so */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char line[HY_LOG_LINE_MAX + 2];
    size_t n = hy_log_format_line(line, sizeof line - 1, (double)ts.tv_sec + ts.tv_nsec * 1e-9,
                                  lvl, fields, n_fields, msg);
    line[n++] = '\n';
    /* one write so that lines from different threads do not interleave */
    fwrite(line, 1, n, log_out ? log_out : stderr);
    fflush(log_out ? log_out : stderr);
}

void hy_log(enum hy_log_lvl lvl, const char *fmt, ...)
{
    if ((int)lvl > hy_log_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(lvl, NULL, 0, fmt, ap);
    va_end(ap);
}

void hy_log_fields(enum hy_log_lvl lvl, const struct hy_log_field *fields, int n_fields,
                   const char *fmt, ...)
{
    if ((int)lvl > hy_log_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(lvl, fields, n_fields, fmt, ap);
    va_end(ap);
}
