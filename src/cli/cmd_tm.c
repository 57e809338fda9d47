/* cmd_tm.c: `hymt tm import|export|count`: the translation memory (translate/tm.h) to and
 * from TMX 1.4, so CAT tools can share it. */
#include "cli/args.h"
#include "cli/commands.h"
#include "translate/tm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TM_MAX_TMX (256ll << 20) /* bytes of one TMX file read */

static const struct cli_cmd cmd = {
    "tm",
    "usage: hymt tm import --tm FILE TMX...\n"
    "       hymt tm export --tm FILE [-o OUT.tmx]\n"
    "       hymt tm count --tm FILE\n"
    "\n"
    "The translation memory that 'hymt translate --tm FILE' fills and answers from (an\n"
    "SQLite file, shared safely by several processes). import reads TMX 1.4 files (a <tu>'s\n"
    "tuv in the header's srclang, or its first, is the source; every other one a target;\n"
    "entries already there are replaced); export writes every entry as TMX 1.4 (standard\n"
    "output or -o); count prints the number of entries.\n"
    "\n"
    "  --tm FILE          the memory (created if missing)\n"
    "  -o, --output FILE  export: write here\n"
    "  -h, --help         this text\n",
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "hymt tm: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            if ((long long)cap >= TM_MAX_TMX) {
                fprintf(stderr, "hymt tm: %s is larger than %lld bytes\n", path, TM_MAX_TMX);
                free(buf);
                fclose(f);
                return NULL;
            }
            cap = cap ? 2 * cap : 1 << 16;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                fprintf(stderr, "hymt tm: out of memory reading %s\n", path);
                return NULL;
            }
            buf = b;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "hymt tm: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int do_import(struct hy_tm *tm, const char **files, int n_files)
{
    int rc = 0;
    for (int i = 0; i < n_files; i++) {
        size_t len = 0, n = 0, skipped = 0;
        char *xml = slurp(files[i], &len);
        if (!xml)
            return 1;
        struct hy_err err = {{0}};
        hy_status st = hy_tm_import_tmx(tm, xml, len, &n, &skipped, &err);
        free(xml);
        if (st) {
            fprintf(stderr, "hymt tm: %s: %s\n", files[i], err.msg);
            return 1;
        }
        fprintf(stderr, "hymt tm: %s: %zu entries imported, %zu in unknown languages skipped\n",
                files[i], n, skipped);
    }
    return rc;
}

static int do_export(struct hy_tm *tm, const char *out)
{
    FILE *f = out ? fopen(out, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "hymt tm: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    size_t n = 0, skipped = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_tm_export_tmx(tm, f, &n, &skipped, &err);
    if (out && fclose(f) != 0 && !st)
        st = hy_err_set(&err, HY_E_IO, "cannot write %s: %s", out, strerror(errno));
    if (st) {
        fprintf(stderr, "hymt tm: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "hymt tm: %zu entries exported%s", n, skipped ? "" : "\n");
    if (skipped)
        fprintf(stderr, ", %zu left out (control characters XML cannot hold)\n", skipped);
    return 0;
}

int cmd_tm(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *pos[257];
    int n_pos = 0;
    struct cli_opt opts[] = {
        {"tm", CLI_STR, &path, 0, 0, false},
        {"o|output", CLI_STR, &out, 0, 0, false},
    };
    int r = cli_parse(&cmd, argc, argv, opts, 2, pos, 257, &n_pos);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (n_pos < 1)
        return cli_fail(&cmd, "which action: import, export or count");
    const char *act = pos[0];
    if (strcmp(act, "import") && strcmp(act, "export") && strcmp(act, "count"))
        return cli_fail(&cmd, "unknown action '%s' (import, export, count)", act);
    if (!path)
        return cli_fail(&cmd, "--tm FILE is required");
    if (!strcmp(act, "import") && n_pos < 2)
        return cli_fail(&cmd, "import: which TMX files");
    if (strcmp(act, "import") && n_pos > 1)
        return cli_fail(&cmd, "%s takes no files", act);
    struct hy_tm *tm = NULL;
    struct hy_err err = {{0}};
    if (hy_tm_open(&tm, path, &err)) {
        fprintf(stderr, "hymt tm: %s\n", err.msg);
        return 1;
    }
    int rc;
    if (!strcmp(act, "import")) {
        rc = do_import(tm, pos + 1, n_pos - 1);
    } else if (!strcmp(act, "export")) {
        rc = do_export(tm, out);
    } else {
        int64_t n = 0;
        rc = hy_tm_count(tm, &n, &err) ? (fprintf(stderr, "hymt tm: %s\n", err.msg), 1) : 0;
        if (!rc)
            printf("%lld\n", (long long)n);
    }
    hy_tm_close(tm);
    return rc;
}
