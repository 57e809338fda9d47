/* json_test.c: bounded file loading, parse errors with positions, validating getters. */
#include "core/json.h"

#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];

static const char *tmp_file(char *buf, size_t cap, const char *name, const char *text)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    FILE *f = fopen(buf, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return buf;
}

static int has(const struct hy_err *e, const char *s)
{
    return strstr(e->msg, s) != NULL;
}

static void test_parse(void)
{
    struct hy_err e = {{0}};
    json_t *j = NULL;
    /* Not NUL-terminated: a heap copy of exactly len bytes (ASan catches an over-read). */
    const char text[] = "{\"a\": 1, \"b\": [true, 2.5]}";
    size_t len = sizeof text - 1;
    char *buf = malloc(len);
    memcpy(buf, text, len);
    CHECK(hy_json_parse(&j, buf, len, "body", &e) == HY_OK);
    CHECK(json_is_object(j) && json_object_size(j) == 2);
    json_decref(j);
    free(buf);

    CHECK(hy_json_parse(&j, "{\"a\": 1,\n  x}", 13, "request body", &e) == HY_E_FORMAT);
    CHECK(j == NULL);
    CHECKF(has(&e, "request body") && has(&e, "line 2") && has(&e, "column 3"), "%s", e.msg);
    CHECK(hy_json_parse(&j, "{\"a\": 1, \"a\": 2}", 16, "dup", &e) == HY_E_FORMAT);
    CHECKF(has(&e, "dup") && has(&e, "duplicate"), "%s", e.msg);
    CHECK(hy_json_parse(&j, "", 0, "empty", &e) == HY_E_FORMAT);
    CHECK(hy_json_parse(&j, "\"a\\u0000b\"", 10, "nul", &e) == HY_E_FORMAT);
    CHECK(hy_json_parse(&j, "{} x", 4, "trailing", &e) == HY_E_FORMAT);
    CHECK(hy_json_parse(&j, "42", 2, "scalar", &e) == HY_OK && json_is_integer(j));
    json_decref(j);
    CHECK(hy_json_parse(&j, "{}", 2, "nullerr", NULL) == HY_OK); /* err is optional */
    json_decref(j);
}

static void test_load_file(void)
{
    struct hy_err e = {{0}};
    char path[256];
    json_t *j = NULL;
    tmp_file(path, sizeof path, "ok.json", "{\"k\": \"v\"}\n");
    CHECK(hy_json_load_file(&j, path, 1024, &e) == HY_OK);
    CHECK(json_is_string(json_object_get(j, "k")));
    json_decref(j);
    CHECK(hy_json_load_file(&j, path, 11, &e) == HY_OK); /* exactly max_bytes */
    json_decref(j);
    CHECK(hy_json_load_file(&j, path, 10, &e) == HY_E_RANGE);
    CHECKF(has(&e, path) && has(&e, "larger than"), "%s", e.msg);
    CHECK(j == NULL);

    /* A file larger than the first read buffer, and one just over a large limit. */
    size_t big = 100000;
    char *text = malloc(big + 1);
    memset(text, ' ', big);
    memcpy(text, "[1,", 3);
    memcpy(text + big - 3, "2]\n", 3);
    text[big] = '\0';
    tmp_file(path, sizeof path, "big.json", text);
    free(text);
    CHECK(hy_json_load_file(&j, path, big, &e) == HY_OK && json_array_size(j) == 2);
    json_decref(j);
    CHECK(hy_json_load_file(&j, path, big - 1, &e) == HY_E_RANGE);

    tmp_file(path, sizeof path, "bad.json", "{\n  \"a\": 1,\n  \"b\": ]\n}\n");
    CHECK(hy_json_load_file(&j, path, 1024, &e) == HY_E_FORMAT);
    CHECKF(has(&e, path) && has(&e, "line 3"), "%s", e.msg);

    snprintf(path, sizeof path, "%s/missing.json", tmpdir);
    CHECK(hy_json_load_file(&j, path, 1024, &e) == HY_E_IO);
    CHECKF(has(&e, path) && has(&e, "No such file"), "%s", e.msg);
    CHECK(hy_json_load_file(&j, tmpdir, 1024, &e) == HY_E_IO); /* a directory */
    CHECKF(has(&e, tmpdir), "%s", e.msg);
}

static void test_getters(void)
{
    struct hy_err e = {{0}};
    json_t *o = NULL;
    const char *t =
        "{\"i\": 7, \"neg\": -3, \"r\": 0.5, \"b\": true, \"s\": \"hello\", \"n\": null,"
        " \"is\": \"7\", \"big\": 9000000000}";
    CHECK(hy_json_parse(&o, t, strlen(t), "t", &e) == HY_OK);

    int64_t i = 42;
    CHECK(hy_json_get_int(o, "i", true, 0, 10, &i, &e) == HY_OK && i == 7);
    CHECK(hy_json_get_int(o, "big", true, 0, INT64_MAX, &i, &e) == HY_OK && i == 9000000000);
    i = 42;
    CHECK(hy_json_get_int(o, "absent", false, 0, 10, &i, &e) == HY_OK && i == 42);
    CHECK(hy_json_get_int(o, "n", false, 0, 10, &i, &e) == HY_OK && i == 42); /* null = absent */
    CHECK(hy_json_get_int(o, "absent", true, 0, 10, &i, &e) == HY_E_NOTFOUND);
    CHECKF(has(&e, "'absent'"), "%s", e.msg);
    CHECK(hy_json_get_int(o, "n", true, 0, 10, &i, &e) == HY_E_NOTFOUND);
    CHECK(hy_json_get_int(o, "i", true, 8, 10, &i, &e) == HY_E_RANGE && i == 42);
    CHECKF(has(&e, "'i'") && has(&e, "7"), "%s", e.msg);
    CHECK(hy_json_get_int(o, "neg", true, 0, 10, &i, &e) == HY_E_RANGE);
    CHECK(hy_json_get_int(o, "is", true, 0, 10, &i, &e) == HY_E_FORMAT);
    CHECKF(has(&e, "'is'") && has(&e, "string"), "%s", e.msg);
    CHECK(hy_json_get_int(o, "r", true, 0, 10, &i, &e) == HY_E_FORMAT); /* no silent truncation */
    CHECK(hy_json_get_int(o, "b", true, 0, 10, &i, &e) == HY_E_FORMAT);

    double d = -1;
    CHECK(hy_json_get_real(o, "r", true, 0, 1, &d, &e) == HY_OK && d == 0.5);
    CHECK(hy_json_get_real(o, "i", true, 0, 10, &d, &e) == HY_OK && d == 7.0);
    CHECK(hy_json_get_real(o, "r", true, 0.6, 1, &d, &e) == HY_E_RANGE && d == 7.0);
    CHECK(hy_json_get_real(o, "s", true, 0, 1, &d, &e) == HY_E_FORMAT);
    CHECK(hy_json_get_real(o, "absent", true, 0, 1, &d, &e) == HY_E_NOTFOUND);

    bool b = false;
    CHECK(hy_json_get_bool(o, "b", true, &b, &e) == HY_OK && b);
    CHECK(hy_json_get_bool(o, "i", true, &b, &e) == HY_E_FORMAT);
    b = false;
    CHECK(hy_json_get_bool(o, "absent", false, &b, &e) == HY_OK && !b);

    char s[8] = "x";
    CHECK(hy_json_get_str(o, "s", true, s, sizeof s, &e) == HY_OK && !strcmp(s, "hello"));
    CHECK(hy_json_get_str(o, "s", true, s, 6, &e) == HY_OK); /* 5 chars + NUL fit */
    strcpy(s, "x");
    CHECK(hy_json_get_str(o, "s", true, s, 5, &e) == HY_E_RANGE && !strcmp(s, "x"));
    CHECKF(has(&e, "'s'"), "%s", e.msg);
    CHECK(hy_json_get_str(o, "i", true, s, sizeof s, &e) == HY_E_FORMAT);
    CHECK(hy_json_get_str(o, "absent", false, s, sizeof s, &e) == HY_OK && !strcmp(s, "x"));

    json_t *arr = json_array();
    CHECK(hy_json_get_int(arr, "i", true, 0, 10, &i, &e) == HY_E_FORMAT); /* not an object */
    json_decref(arr);
    CHECK(!strcmp(hy_json_type_name(o), "object") && !strcmp(hy_json_type_name(NULL), "nothing"));
    json_decref(o);
}

/* Only regular files are read: a FIFO (no writer: open would block), a directory and a
 * character device are errors at once. */
static void test_not_regular(void)
{
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo.json", tmpdir);
    CHECK(mkfifo(fifo, 0600) == 0);
    const char *paths[3] = {fifo, tmpdir, "/dev/zero"};
    for (int i = 0; i < 3; i++) {
        json_t *j = NULL;
        struct hy_err e = {{0}};
        CHECK(hy_json_load_file(&j, paths[i], 1 << 20, &e) == HY_E_IO && !j);
        CHECKF(strstr(e.msg, paths[i]) && strstr(e.msg, "not a regular file"), "%s", e.msg);
    }
    unlink(fifo);
    /* an error quoting the input stays one line (the CLI's and the log's contract) */
    json_t *j = NULL;
    struct hy_err e = {{0}};
    static const char bad[] = "{\"a\": 1,\n\"b\n\x1b[31m\": 2\n";
    CHECK(hy_json_parse(&j, bad, sizeof bad - 1, "x.json", &e) == HY_E_FORMAT);
    CHECKF(!strchr(e.msg, '\n') && !strchr(e.msg, '\x1b'), "%s", e.msg);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hymt-json-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_parse();
    test_load_file();
    test_getters();
    test_not_regular();
    const char *names[] = {"ok.json", "big.json", "bad.json"};
    char path[256];
    for (size_t k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[k]);
        unlink(path);
    }
    CHECK(rmdir(tmpdir) == 0);
    return test_result();
}
