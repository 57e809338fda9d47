/* test.h: the minimal test harness shared by every hymt test.
 * CHECK(cond) records a failure with file:line and goes on; CHECKF adds a message.
 * A test's main() returns test_result(): 0 if every check passed, 1 otherwise.
 * test_path() builds a path under $HYMT_SRC (the source tree) or $HYMT_BIN (build tree);
 * test_rmtree() removes a test's temporary folder. */
#ifndef HY_TESTS_TEST_H
#define HY_TESTS_TEST_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static int test_failures_;
static int test_checks_;

#define CHECK(cond)                                                              \
    do {                                                                         \
        test_checks_++;                                                          \
        if (!(cond)) {                                                           \
            test_failures_++;                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define CHECKF(cond, ...)                                                        \
    do {                                                                         \
        test_checks_++;                                                          \
        if (!(cond)) {                                                           \
            test_failures_++;                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

static inline int test_result(void)
{
    fprintf(stderr, "%d checks, %d failed\n", test_checks_, test_failures_);
    return test_failures_ ? 1 : 0;
}

/* Writes "$VAR/rel" into buf; VAR is "HYMT_SRC" or "HYMT_BIN" (defaults: "." ). */
static inline const char *test_path(char *buf, size_t cap, const char *var, const char *rel)
{
    const char *root = getenv(var);
    int n = snprintf(buf, cap, "%s/%s", root ? root : ".", rel);
    if (n < 0 || (size_t)n >= cap) { /* a test data path must never be cut short */
        fprintf(stderr, "test_path: %s/%s does not fit %zu bytes\n", root ? root : ".", rel, cap);
        exit(2);
    }
    return buf;
}

static inline int test_rm_entry_(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

/* Removes the folder dir (a test's temporary folder) and everything in it; 0 on success. */
static inline int test_rmtree(const char *dir)
{
    return nftw(dir, test_rm_entry_, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
