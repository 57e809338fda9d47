#include "cli/args.h"

#include "backend/select.h"
#include "model/hunyuan.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_fail(const struct cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hymt %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'hymt %s --help')\n", cmd->name);
    va_end(ap);
    return CLI_ERR;
}

/* Does `arg` (without dashes, up to len) name option o? */
static bool matches(const struct cli_opt *o, const char *arg, size_t len)
{
    const char *p = o->names;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && !strncmp(p, arg, len))
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}

static int set_value(const struct cli_cmd *cmd, struct cli_opt *o, const char *flag,
                     const char *val)
{
    char *end;
    errno = 0;
    switch (o->kind) {
    case CLI_INT: {
        long long v = strtoll(val, &end, 10);
        if (errno || end == val || *end || v < o->lo || v > o->hi)
            return cli_fail(cmd, "%s: expected an integer in %.0f..%.0f, got '%s'", flag, o->lo,
                            o->hi, val);
        *(int64_t *)o->dst = v;
        return CLI_OK;
    }
    case CLI_REAL: {
        double v = strtod(val, &end);
        if (errno || end == val || *end || !isfinite(v) || v < o->lo || v > o->hi)
            return cli_fail(cmd, "%s: expected a number in %g..%g, got '%s'", flag, o->lo, o->hi,
                            val);
        *(double *)o->dst = v;
        return CLI_OK;
    }
    case CLI_STR:
        if (!*val)
            return cli_fail(cmd, "%s: empty value", flag);
        *(const char **)o->dst = val;
        return CLI_OK;
    case CLI_FLAG:
        *(bool *)o->dst = true;
        return CLI_OK;
    }
    return CLI_ERR;
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_opt *opts,
              size_t n_opts, const char **pos, int max_pos, int *n_pos)
{
    *n_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(cmd->usage, stdout);
            return CLI_HELP;
        }
        if (a[0] != '-' || !a[1] || !strcmp(a, "--")) {
            if (!strcmp(a, "--") && i + 1 < argc)
                a = argv[++i];
            if (*n_pos >= max_pos)
                return cli_fail(cmd, "unexpected argument '%s'", a);
            pos[(*n_pos)++] = a;
            continue;
        }
        const char *name = a + (a[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        struct cli_opt *o = NULL;
        for (size_t k = 0; k < n_opts && !o; k++)
            if (matches(&opts[k], name, len))
                o = &opts[k];
        if (!o)
            return cli_fail(cmd, "unknown option '%.*s'", (int)(len + (size_t)(name - a)), a);
        if (o->seen)
            return cli_fail(cmd, "option '%s' given twice", a);
        o->seen = true;
        const char *val = NULL;
        if (o->kind == CLI_FLAG) {
            if (eq)
                return cli_fail(cmd, "option '%.*s' takes no value", (int)(eq - a), a);
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            return cli_fail(cmd, "option '%s' needs a value", a);
        }
        if (set_value(cmd, o, a, val) != CLI_OK)
            return CLI_ERR;
    }
    return CLI_OK;
}

int cli_parse_ids(const struct cli_cmd *cmd, const char *s, int32_t *ids, int cap)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            cli_fail(cmd, "--ids: expected comma-separated non-negative integers, got '%s'", s);
            return -1;
        }
        if (n >= cap) {
            cli_fail(cmd, "--ids: more than %d ids", cap);
            return -1;
        }
        ids[n++] = (int32_t)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) {
            cli_fail(cmd, "--ids: trailing comma in '%s'", s);
            return -1;
        }
    }
    if (n == 0)
        cli_fail(cmd, "--ids: no ids given");
    return n ? n : -1;
}

int64_t cli_parse_size(const struct cli_cmd *cmd, const char *flag, const char *s, int64_t lo,
                       int64_t hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b' || (*end == 'i' && end[1] == 'B'))
        end += *end == 'i' ? 2 : 1;
    double bytes = v * mul;
    if (errno || end == s || *end || !isfinite(bytes) || bytes < (double)lo || bytes > (double)hi) {
        cli_fail(cmd, "%s: expected a size like 512M or 2G between %lld and %lld bytes, got '%s'",
                 flag, (long long)lo, (long long)hi, s);
        return -1;
    }
    return (int64_t)bytes;
}

/* --quant names and the weight dtype each makes at load (model/load.c); q4_0, q4_k and q6_k
 * are there to compare the GGUF types on the same model. */
static const struct {
    const char *name;
    enum hy_dtype dtype;
} quant_names[] = {
    {"q8", HY_DTYPE_Q8_0},   {"q4", HY_DTYPE_Q4_G128}, {"q4_0", HY_DTYPE_Q4_0},
    {"q4_k", HY_DTYPE_Q4_K}, {"q6_k", HY_DTYPE_Q6_K},
    {"fp8", HY_DTYPE_F8_E4M3}, /* per tensor (model/load_quant.h): bf16 on the CPU, fp8 on a GPU */
};

int cli_quant_dtype(const char *quant)
{
    if (!quant)
        return HY_DTYPE_F32;
    for (size_t i = 0; i < sizeof quant_names / sizeof quant_names[0]; i++)
        if (!strcmp(quant, quant_names[i].name))
            return (int)quant_names[i].dtype;
    return -1;
}

int cli_check_device_quant(const struct cli_cmd *cmd, const char *device, const char *quant)
{
    if (device && !hy_backend_name_valid(device))
        return cli_fail(cmd, "--device must be auto, cpu or cuda, not '%s'", device);
    if (cli_quant_dtype(quant) < 0)
        return cli_fail(cmd, "--quant must be q8, q4 or fp8 (or q4_0, q4_k, q6_k), not '%s'",
                        quant);
    return CLI_OK;
}

hy_status cli_load_model(const char *dir, const char *device, const char *default_device,
                         int threads, const char *quant, bool fp8_gemm, struct hy_backend **be,
                         struct hy_model **m, struct hy_err *err)
{
    *m = NULL;
    *be = NULL;
    int qd = cli_quant_dtype(quant);
    if (qd < 0)
        return hy_err_set(err, HY_E_INVAL, "unknown --quant '%s'", quant);
    const struct hy_backend_open_opts bo = {.fp8_gemm = fp8_gemm};
    hy_status st = hy_backend_open_opts(be, device ? device : default_device, threads, &bo, err);
    if (st)
        return st;
    if (qd == HY_DTYPE_F8_E4M3 && (*be)->i->weight_upload && !(*be)->i->weight_upload_fp8) {
        st = hy_err_set(err, HY_E_UNSUPPORTED, "--quant fp8 is not supported on the %s backend "
                        "yet (CPU only)", (*be)->i->name);
        (*be)->i->destroy(*be);
        *be = NULL;
        return st;
    }
    struct hy_model_opts mo = {(enum hy_dtype)qd};
    st = hy_model_load_opts(m, dir, *be, &mo, err);
    if (st) {
        (*be)->i->destroy(*be);
        *be = NULL;
    }
    return st;
}
