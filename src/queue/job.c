/* job.c: the queue's wire format (job.h). */
#include "queue/job.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define JOB_SAMPLING_MAX 160 /* bytes of the s field */

const char hy_job_lua_take[] =
    "local o = redis.call('GET', KEYS[1])\n"
    "if o == 'done' then\n"
    "  redis.call('XACK', KEYS[3], ARGV[4], ARGV[3]) redis.call('XDEL', KEYS[3], ARGV[3])\n"
    "  return 0\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[4]) == 1 then\n"
    "  redis.call('XADD', KEYS[2], '*', 'a', ARGV[1], 'k', 'end', 'f', ARGV[6], 'g', '0')\n"
    "  redis.call('EXPIRE', KEYS[2], ARGV[5])\n"
    "  redis.call('SET', KEYS[1], 'done', 'EX', ARGV[5])\n"
    "  redis.call('XACK', KEYS[3], ARGV[4], ARGV[3]) redis.call('XDEL', KEYS[3], ARGV[3])\n"
    "  redis.call('HINCRBY', KEYS[5], 'cancelled', 1)\n"
    "  return 2\n"
    "end\n"
    "if o then redis.call('HINCRBY', KEYS[5], 'reclaimed', 1) end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])\n"
    "redis.call('XADD', KEYS[2], '*', 'a', ARGV[1], 'k', 'start')\n"
    "redis.call('EXPIRE', KEYS[2], ARGV[2])\n"
    "return 1\n";

const char hy_job_lua_push[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "redis.call('XADD', KEYS[2], '*', 'a', ARGV[1], 'o', ARGV[3], 't', ARGV[2])\n"
    "return 1\n";

const char hy_job_lua_end[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "redis.call('XADD', KEYS[2], '*', 'a', ARGV[1], 'k', 'end', 'f', ARGV[2], 'g', ARGV[3])\n"
    "redis.call('EXPIRE', KEYS[2], ARGV[4])\n"
    "redis.call('SET', KEYS[1], 'done', 'EX', ARGV[4])\n"
    "redis.call('XACK', KEYS[3], ARGV[6], ARGV[5]) redis.call('XDEL', KEYS[3], ARGV[5])\n"
    "redis.call('HINCRBY', KEYS[4], ARGV[7], 1)\n"
    "return 1\n";

const char hy_job_lua_refresh[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "redis.call('XCLAIM', KEYS[2], ARGV[2], ARGV[3], 0, ARGV[4], 'JUSTID')\n"
    "return 1\n";

/* Waiting entries are the stream's tail past the group's last delivered id (acknowledged
 * ones are deleted), so their count is XLEN minus the pending count. */
const char hy_job_lua_read[] =
    "local p = redis.call('XPENDING', KEYS[1], ARGV[1])[1]\n"
    "local w = redis.call('XLEN', KEYS[1]) - p\n"
    "if w <= 0 then return false end\n"
    "local n = math.max(1, redis.call('ZCOUNT', KEYS[2], ARGV[5], '+inf'))\n"
    "local free = tonumber(ARGV[3])\n"
    "local take = math.min(free, w, math.ceil((p + w) / n) - tonumber(ARGV[4]))\n"
    "if take < 1 then\n"
    "  local last\n"
    "  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do\n"
    "    local f = {}\n"
    "    for i = 1, #g - 1, 2 do f[g[i]] = g[i + 1] end\n"
    "    if f['name'] == ARGV[1] then last = f['last-delivered-id'] end\n"
    "  end\n"
    "  if not last then return false end\n"
    "  local e = redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', 1)[1]\n"
    "  local t = redis.call('TIME')\n"
    "  local born = e and tonumber(string.match(e[1], '^%d+'))\n"
    "  if not born or t[1] * 1000 + math.floor(t[2] / 1000) - born < tonumber(ARGV[6]) then\n"
    "    return false\n"
    "  end\n"
    "  take = math.min(free, math.ceil(w / n))\n"
    "end\n"
    "return redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', take, 'STREAMS',\n"
    "                  KEYS[1], '>')\n";

const char *const hy_job_stat_names[HY_JOB_N_STATS] = {
    "steps", "generated", "computed", "preemptions", "kv_total", "kv_used", "kv_cached",
    "running"};

void hy_job_key(char *out, const char *prefix, const char *what, const char *id)
{
    snprintf(out, HY_JOB_KEY_MAX, "%s:%s%s%s", prefix, what, id ? ":" : "", id ? id : "");
}

int64_t hy_job_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hy_job_new_id(char *id)
{
    unsigned char b[HY_JOB_ID_LEN / 2];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, b, sizeof b) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof b) { /* no urandom: time, pid and a counter stay unique */
        static _Atomic uint64_t counter;
        uint64_t x = (uint64_t)hy_job_now_ms() ^ ((uint64_t)getpid() << 40);
        uint64_t y = ++counter * 0x9E3779B97F4A7C15ull ^ (uint64_t)clock();
        memcpy(b, &x, 8);
        memcpy(b + 8, &y, 8);
    }
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(id + 2 * i, 3, "%02x", b[i]);
}

bool hy_job_id_valid(const char *s, size_t n)
{
    if (n != HY_JOB_ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

bool hy_job_parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    if (n == 0 || n > 20)
        return false;
    bool neg = s[0] == '-';
    if (neg && n == 1)
        return false;
    int64_t v = 0;
    for (size_t i = neg; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (s[i] - '0');
    }
    v = neg ? -v : v;
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

size_t hy_job_scratch_bytes(const struct hy_job *j)
{
    return (size_t)j->n_prompt * 4 + HY_ENGINE_MAX_STOP * 4 + JOB_SAMPLING_MAX + 4 * 24;
}

static void put_ids(char *dst, const int32_t *ids, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)ids[i];
        dst[4 * i] = (char)(v & 0xff);
        dst[4 * i + 1] = (char)(v >> 8 & 0xff);
        dst[4 * i + 2] = (char)(v >> 16 & 0xff);
        dst[4 * i + 3] = (char)(v >> 24);
    }
}

int hy_job_encode(const struct hy_job *j, char *scratch, struct hy_job_field *f)
{
    char *p = scratch;
    int k = 0;
#define FIELD(nm, v, len)                                                                  \
    f[k++] = (struct hy_job_field){nm, v, strlen(nm), len}
    FIELD("v", "1", 1);
    FIELD("id", j->id, strlen(j->id));
    put_ids(p, j->prompt, j->n_prompt);
    FIELD("p", p, (size_t)j->n_prompt * 4);
    p += (size_t)j->n_prompt * 4;
    put_ids(p, j->stop_ids, j->n_stop);
    FIELD("stop", p, (size_t)j->n_stop * 4);
    p += (size_t)j->n_stop * 4;
    int w = snprintf(p, 24, "%d", j->max_new);
    FIELD("n", p, (size_t)w);
    p += w + 1;
    const struct hy_sampler_params *s = &j->sampling;
    w = snprintf(p, JOB_SAMPLING_MAX, "%.9g %.9g %" PRId32 " %.9g %" PRIu64, s->temperature,
                 s->top_p, s->top_k, s->repetition_penalty, s->seed);
    FIELD("s", p, (size_t)w);
    p += w + 1;
    w = snprintf(p, 24, "%" PRId64, j->deadline_ms);
    FIELD("dl", p, (size_t)w);
    p += w + 1;
    w = snprintf(p, 24, "%d", j->ttl_s);
    FIELD("ttl", p, (size_t)w);
#undef FIELD
    return k;
}

/* Little-endian int32s of a field into a new array (or out when given); HY_E_FORMAT when
 * its length is not whole ids or more than max. */
static hy_status get_ids(const struct hy_job_field *fl, int max, int32_t **out, int *n,
                         struct hy_err *err)
{
    if (fl->val_len % 4 || fl->val_len / 4 > (size_t)max)
        return hy_err_set(err, HY_E_FORMAT, "job field %s: %zu bytes, not 0..%d token ids",
                          fl->name, fl->val_len, max);
    *n = (int)(fl->val_len / 4);
    if (!*out && !(*out = malloc((size_t)(*n ? *n : 1) * sizeof **out)))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    const unsigned char *b = (const unsigned char *)fl->val;
    for (int i = 0; i < *n; i++)
        (*out)[i] = (int32_t)((uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                              (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24);
    return HY_OK;
}

static hy_status get_sampling(const struct hy_job_field *fl, struct hy_sampler_params *s,
                              struct hy_err *err)
{
    char buf[JOB_SAMPLING_MAX];
    if (fl->val_len >= sizeof buf || memchr(fl->val, 0, fl->val_len))
        return hy_err_set(err, HY_E_FORMAT, "job field s: too long");
    memcpy(buf, fl->val, fl->val_len);
    buf[fl->val_len] = 0;
    double t, p, r;
    long long k;
    unsigned long long seed;
    int used = 0;
    if (sscanf(buf, "%lf %lf %lld %lf %llu%n", &t, &p, &k, &r, &seed, &used) != 5 ||
        (size_t)used != fl->val_len || !isfinite(t) || !isfinite(p) || !isfinite(r) || k < 0 ||
        k > INT32_MAX)
        return hy_err_set(err, HY_E_FORMAT, "job field s: not 'temperature top_p top_k "
                                            "repetition_penalty seed'");
    *s = (struct hy_sampler_params){(float)t, (int32_t)k, (float)p, (float)r, seed};
    return hy_sampler_params_check(s, err);
}

static const struct hy_job_field *find(const struct hy_job_field *f, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (f[i].name_len == strlen(name) && !memcmp(f[i].name, name, f[i].name_len))
            return &f[i];
    return NULL;
}

hy_status hy_job_decode(const struct hy_job_field *f, size_t n, struct hy_job *j,
                        struct hy_err *err)
{
    memset(j, 0, sizeof *j);
    static const char *const need[] = {"v", "id", "p", "n", "s", "stop", "dl", "ttl"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!find(f, n, need[i]))
            return hy_err_set(err, HY_E_FORMAT, "job: field %s missing", need[i]);
    const struct hy_job_field *v = find(f, n, "v"), *id = find(f, n, "id");
    if (v->val_len != 1 || v->val[0] != '1')
        return hy_err_set(err, HY_E_FORMAT, "job: format version %.*s, this worker reads 1",
                          (int)(v->val_len < 8 ? v->val_len : 8), v->val);
    if (!hy_job_id_valid(id->val, id->val_len))
        return hy_err_set(err, HY_E_FORMAT, "job field id: not %d hex digits", HY_JOB_ID_LEN);
    memcpy(j->id, id->val, HY_JOB_ID_LEN);
    int64_t max_new = 0, dl = 0, ttl = 0;
    const struct hy_job_field *fn = find(f, n, "n"), *fd = find(f, n, "dl"),
                              *ft = find(f, n, "ttl");
    if (!hy_job_parse_int(fn->val, fn->val_len, 1, HY_JOB_MAX_NEW, &max_new))
        return hy_err_set(err, HY_E_RANGE, "job field n: not 1..%d", HY_JOB_MAX_NEW);
    if (!hy_job_parse_int(fd->val, fd->val_len, 0, INT64_MAX / 2, &dl))
        return hy_err_set(err, HY_E_RANGE, "job field dl: not a unix time in ms");
    if (!hy_job_parse_int(ft->val, ft->val_len, 1, 30 * 86400, &ttl))
        return hy_err_set(err, HY_E_RANGE, "job field ttl: not 1..2592000 s");
    j->max_new = (int)max_new;
    j->deadline_ms = dl;
    j->ttl_s = (int)ttl;
    hy_status st = get_sampling(find(f, n, "s"), &j->sampling, err);
    int32_t *stop = j->stop_ids;
    if (!st)
        st = get_ids(find(f, n, "stop"), HY_ENGINE_MAX_STOP, &stop, &j->n_stop, err);
    if (!st)
        st = get_ids(find(f, n, "p"), HY_JOB_MAX_PROMPT, &j->prompt, &j->n_prompt, err);
    if (!st && j->n_prompt < 1)
        st = hy_err_set(err, HY_E_FORMAT, "job field p: the prompt is empty");
    if (st)
        hy_job_free(j);
    return st;
}

void hy_job_free(struct hy_job *j)
{
    free(j->prompt);
    j->prompt = NULL;
    j->n_prompt = 0;
}
