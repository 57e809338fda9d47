#include "cli/args.h"

#include "backend/select.h"
#include "core/dtype.h"
#include "core/globals.h"
#include "core/log.h"

#include "hymt_version.h" /* generated: HYMT_GIT_COMMIT */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cli_print_version(void)
{
    const char *archs = HYMT_CUDA_ARCHS;
    printf("hymt %s (commit %s; %s%s)\n", HYMT_VERSION, HYMT_GIT_COMMIT,
           *archs ? "CUDA architectures " : "CPU only: built without CUDA", archs);
}

int cli_set_log_format(const char *name)
{
    enum hy_log_fmt f;
    if (hy_log_parse_format(name, &f)) {
        fprintf(stderr, "hymt: --log-format must be text or json, not '%s'\n", name);
        return 1;
    }
    hy_log_set_format(f);
    return 0;
}

/* The options main() takes before a command, after it: true when arg was one (*i moves past
 * a value it takes). */
static bool global_option(const char *name, size_t len, const char *eq, int argc, char **argv,
                          int *i, int *rc)
{
    if (len == 10 && !strncmp(name, "log-format", 10)) {
        const char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : "";
        *rc = cli_set_log_format(v) ? CLI_ERR : CLI_OK;
        return true;
    }
    if (eq)
        return false;
    if ((len == 1 && *name == 'v') || (len == 7 && !strncmp(name, "verbose", 7))) {
        hy_log_level = HY_LOG_DEBUG;
    } else if ((len == 1 && *name == 'q') || (len == 5 && !strncmp(name, "quiet", 5))) {
        hy_log_level = HY_LOG_ERROR;
    } else if (len == 7 && !strncmp(name, "version", 7)) {
        cli_print_version();
        *rc = CLI_HELP;
    } else {
        return false;
    }
    return true;
}

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

/* The long name: the last of o->names. */
static const char *long_name(const struct cli_opt *o)
{
    const char *bar = strrchr(o->names, '|');
    return bar ? bar + 1 : o->names;
}

/* Where each option's value came from (--print-config), by index in the table. */
enum source { SRC_DEFAULT, SRC_FLAG, SRC_ENV, SRC_CONFIG };
struct origin {
    enum source src;
    char text[160]; /* "--port", "HYMT_PORT", "FILE:LINE: port", "--api-key-file F" */
};

/* Values read from files (config, --NAME-file) live here for the process: the option
 * tables keep pointers into it. One command parses once a process. */
#define ARENA_BYTES (1 << 17)
#define CONFIG_MAX_BYTES (1 << 16)
#define SECRET_MAX_BYTES 4096
static char arena[ARENA_BYTES];
static size_t arena_used;

static char *arena_dup(const char *s, size_t n)
{
    if (arena_used + n + 1 > sizeof arena)
        return NULL;
    char *d = arena + arena_used;
    memcpy(d, s, n);
    d[n] = '\0';
    arena_used += n + 1;
    return d;
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
    case CLI_SECRET:
        if (!*val)
            return cli_fail(cmd, "%s: empty value", flag);
        *(const char **)o->dst = val;
        return CLI_OK;
    case CLI_FLAG: /* from the command line val is NULL; from settings a boolean word */
        if (!val || !strcmp(val, "1") || !strcasecmp(val, "true") || !strcasecmp(val, "yes") ||
            !strcasecmp(val, "on"))
            *(bool *)o->dst = true;
        else if (!strcmp(val, "0") || !strcasecmp(val, "false") || !strcasecmp(val, "no") ||
                 !strcasecmp(val, "off"))
            *(bool *)o->dst = false;
        else
            return cli_fail(cmd, "%s: expected true or false, got '%s'", flag, val);
        return CLI_OK;
    }
    return CLI_ERR;
}

/* Sets o from a source; label names it in errors and in --print-config. */
static int apply(const struct cli_cmd *cmd, struct cli_opt *o, struct origin *org,
                 const char *label, const char *val, enum source src)
{
    if (set_value(cmd, o, label, val) != CLI_OK)
        return CLI_ERR;
    o->seen = true;
    org->src = src;
    snprintf(org->text, sizeof org->text, "%s", label);
    return CLI_OK;
}

/* The first line of a secret's file (a key, a token): bounded, no control characters. */
static const char *read_secret(const struct cli_cmd *cmd, const char *label, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_fail(cmd, "%s: cannot read %s: %s", label, path, strerror(errno));
        return NULL;
    }
    char buf[SECRET_MAX_BYTES + 1];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n > SECRET_MAX_BYTES) {
        cli_fail(cmd, "%s: %s is over %d bytes", label, path, SECRET_MAX_BYTES);
        return NULL;
    }
    size_t len = 0;
    while (len < n && buf[len] != '\n' && buf[len] != '\r')
        len++;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
            cli_fail(cmd, "%s: %s has a control character in its first line", label, path);
            return NULL;
        }
    const char *v = len ? arena_dup(buf, len) : NULL;
    if (!v)
        cli_fail(cmd, "%s: %s: %s", label, path, len ? "out of space" : "empty first line");
    return v;
}

/* The option named by name[0..len) and whether it was NAME-file (a secret's file). */
static struct cli_opt *find_opt(struct cli_opt *opts, size_t n_opts, const char *name, size_t len,
                                bool *from_file)
{
    *from_file = false;
    for (size_t k = 0; k < n_opts; k++)
        if (matches(&opts[k], name, len))
            return &opts[k];
    if (len > 5 && !strncmp(name + len - 5, "-file", 5))
        for (size_t k = 0; k < n_opts; k++)
            if (opts[k].kind == CLI_SECRET && matches(&opts[k], name, len - 5)) {
                *from_file = true;
                return &opts[k];
            }
    return NULL;
}

/* HYMT_<NAME> (and HYMT_<NAME>_FILE for a secret) for every option no flag set. */
static int apply_env(const struct cli_cmd *cmd, struct cli_opt *opts, struct origin *org,
                     size_t n_opts)
{
    for (size_t k = 0; k < n_opts; k++) {
        struct cli_opt *o = &opts[k];
        if (o->seen)
            continue;
        char var[96];
        size_t n = (size_t)snprintf(var, sizeof var - 6, "HYMT_%s", long_name(o));
        for (size_t i = 5; i < n; i++)
            var[i] = var[i] == '-' ? '_' : (char)toupper((unsigned char)var[i]);
        const char *v = getenv(var);
        if (v && *v) {
            if (apply(cmd, o, &org[k], var, v, SRC_ENV))
                return CLI_ERR;
            continue;
        }
        strcat(var, "_FILE");
        if (o->kind == CLI_SECRET && (v = getenv(var)) && *v) {
            const char *secret = read_secret(cmd, var, v);
            char label[160];
            snprintf(label, sizeof label, "%s=%s", var, v);
            if (!secret || apply(cmd, o, &org[k], label, secret, SRC_ENV))
                return CLI_ERR;
        }
    }
    return CLI_OK;
}

/* One "name = value" line of the config file (path:line in messages). */
static int config_line(const struct cli_cmd *cmd, struct cli_opt *opts, struct origin *org,
                       size_t n_opts, char *line, const char *where)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return cli_fail(cmd, "%s: expected 'name = value'", where);
    char *key = line, *val = eq + 1, *e = eq;
    while (e > key && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    for (char *c = key; *c; c++)
        *c = *c == '_' ? '-' : *c;
    while (isspace((unsigned char)*val))
        val++;
    size_t vn = strlen(val);
    while (vn && isspace((unsigned char)val[vn - 1]))
        val[--vn] = '\0';
    if (vn >= 2 && val[0] == '"' && val[vn - 1] == '"') {
        val[vn - 1] = '\0';
        val++;
    }
    bool from_file;
    struct cli_opt *o = find_opt(opts, n_opts, key, strlen(key), &from_file);
    if (!o || strlen(key) < 2)
        return cli_fail(cmd, "%s: unknown setting '%s'", where, key);
    struct origin *og = &org[o - opts];
    if (og->src == SRC_CONFIG)
        return cli_fail(cmd, "%s: '%s' set twice", where, key);
    if (o->seen)
        return CLI_OK; /* a flag or the environment wins */
    char label[160];
    snprintf(label, sizeof label, "%.100s: %.50s", where, key);
    if (from_file && !(val = (char *)read_secret(cmd, label, val)))
        return CLI_ERR;
    return apply(cmd, o, og, label, val, SRC_CONFIG);
}

static int apply_config(const struct cli_cmd *cmd, struct cli_opt *opts, struct origin *org,
                        size_t n_opts, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return cli_fail(cmd, "--config: cannot read %s: %s", path, strerror(errno));
    static char text[CONFIG_MAX_BYTES + 1];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    if (n > CONFIG_MAX_BYTES)
        return cli_fail(cmd, "--config: %s is over %d bytes", path, CONFIG_MAX_BYTES);
    if (memchr(text, '\0', n))
        return cli_fail(cmd, "--config: %s is not a text file", path);
    text[n] = '\0';
    int lineno = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        while (isspace((unsigned char)*line))
            line++;
        size_t ln = strlen(line);
        if (ln && line[ln - 1] == '\r')
            line[--ln] = '\0';
        if (!*line || *line == '#')
            continue;
        char where[160];
        snprintf(where, sizeof where, "%.140s:%d", path, lineno);
        if (config_line(cmd, opts, org, n_opts, line, where))
            return CLI_ERR;
    }
    return CLI_OK;
}

/* --print-config: the settings as a config file, each with its source. */
static void print_config(const struct cli_cmd *cmd, const struct cli_opt *opts,
                         const struct origin *org, size_t n_opts, const char *config)
{
    printf("# hymt %s settings: flag > HYMT_* environment > config file > default\n", cmd->name);
    printf("# config file: %s\n", config ? config : "none");
    for (size_t k = 0; k < n_opts; k++) {
        const struct cli_opt *o = &opts[k];
        char v[512];
        bool empty = false;
        switch (o->kind) {
        case CLI_INT:
            snprintf(v, sizeof v, "%lld", (long long)*(int64_t *)o->dst);
            empty = *(int64_t *)o->dst == 0;
            break;
        case CLI_REAL:
            snprintf(v, sizeof v, "%g", *(double *)o->dst);
            empty = *(double *)o->dst == 0;
            break;
        case CLI_STR:
        case CLI_SECRET: {
            const char *sv = *(const char **)o->dst;
            snprintf(v, sizeof v, "%s%s%s", sv && strchr(sv, '#') ? "\"" : "", sv ? sv : "",
                     sv && strchr(sv, '#') ? "\"" : "");
            empty = !sv;
            break;
        }
        case CLI_FLAG:
            snprintf(v, sizeof v, "%s", *(bool *)o->dst ? "true" : "false");
            empty = !*(bool *)o->dst;
            break;
        }
        if (o->kind == CLI_SECRET && !empty)
            snprintf(v, sizeof v, "********");
        static const char *src[] = {"default", "flag", "environment", "config"};
        if (!o->seen && empty)
            printf("# %-22s (not set: built-in default)\n", long_name(o));
        else if (!o->seen)
            printf("%-24s = %-24s # default\n", long_name(o), v);
        else
            printf("%-24s = %-24s # %s %s\n", long_name(o), v, src[org[k].src], org[k].text);
    }
}

static int parse(const struct cli_cmd *cmd, bool settings, int argc, char **argv,
                 struct cli_opt *opts, size_t n_opts, const char **pos, int max_pos, int *n_pos)
{
    *n_pos = 0;
    struct origin org[CLI_MAX_OPTS];
    HY_ASSERT(n_opts <= CLI_MAX_OPTS);
    memset(org, 0, sizeof org);
    const char *config = NULL;
    bool print = false;
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
        if (settings && len == 12 && !strncmp(name, "print-config", len) && !eq) {
            print = true;
            continue;
        }
        bool from_file = false, is_config = settings && len == 6 &&
                                            !strncmp(name, "config", 6);
        struct cli_opt *o = is_config ? NULL : find_opt(opts, n_opts, name, len, &from_file);
        int grc = CLI_OK;
        if (!o && !is_config && global_option(name, len, eq, argc, argv, &i, &grc)) {
            if (grc)
                return grc;
            continue;
        }
        if (!o && !is_config)
            return cli_fail(cmd, "unknown option '%.*s'", (int)(len + (size_t)(name - a)), a);
        if (o && o->seen)
            return cli_fail(cmd, "option '%s' given twice", a);
        const char *val = NULL;
        if (o && o->kind == CLI_FLAG) {
            if (eq)
                return cli_fail(cmd, "option '%.*s' takes no value", (int)(eq - a), a);
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            return cli_fail(cmd, "option '%s' needs a value", a);
        }
        if (is_config) {
            if (config || !*val)
                return cli_fail(cmd, "--config: give one FILE");
            config = val;
            continue;
        }
        char label[160];
        snprintf(label, sizeof label, "%.*s%s%.100s", (int)(len + (size_t)(name - a)), a,
                 from_file ? " " : "", from_file ? val : "");
        if (from_file && !(val = read_secret(cmd, label, val)))
            return CLI_ERR;
        struct origin *og = &org[o - opts];
        if (apply(cmd, o, og, from_file ? label : a, val, SRC_FLAG))
            return CLI_ERR;
        if (!from_file)
            snprintf(og->text, sizeof og->text, "%.*s", (int)(len + (size_t)(name - a)), a);
    }
    if (!settings)
        return CLI_OK;
    if (apply_env(cmd, opts, org, n_opts))
        return CLI_ERR;
    if (!config && getenv("HYMT_CONFIG") && *getenv("HYMT_CONFIG"))
        config = getenv("HYMT_CONFIG");
    if (config && apply_config(cmd, opts, org, n_opts, config))
        return CLI_ERR;
    if (print) {
        print_config(cmd, opts, org, n_opts, config);
        return CLI_HELP;
    }
    return CLI_OK;
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_opt *opts,
              size_t n_opts, const char **pos, int max_pos, int *n_pos)
{
    return parse(cmd, false, argc, argv, opts, n_opts, pos, max_pos, n_pos);
}

int cli_parse_settings(const struct cli_cmd *cmd, int argc, char **argv, struct cli_opt *opts,
                       size_t n_opts, const char **pos, int max_pos, int *n_pos)
{
    return parse(cmd, true, argc, argv, opts, n_opts, pos, max_pos, n_pos);
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
