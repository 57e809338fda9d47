/* proc_test.c: the resident set size is positive and grows by about what a fresh buffer
 * takes once every page of it is written (64 MiB; at least half must show, so page-cache
 * or allocator slack cannot make it pass or fail by itself). */
#include "core/proc.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    const int64_t before = hy_proc_rss_bytes();
    CHECKF(before > 0, "rss %lld", (long long)before);
    const size_t n = (size_t)64 << 20;
    unsigned char *p = malloc(n);
    CHECK(p != NULL);
    if (p) {
        memset(p, 0x5A, n);
        const int64_t after = hy_proc_rss_bytes();
        CHECKF(after - before >= (int64_t)(n / 2), "rss %lld -> %lld after writing %zu bytes",
               (long long)before, (long long)after, n);
        CHECK(p[n - 1] == 0x5A);
        free(p);
    }
    return test_result();
}
