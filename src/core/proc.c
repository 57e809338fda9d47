/* proc.c: /proc readers (proc.h has the contract). */
#include "core/proc.h"

#include <stdio.h>
#include <unistd.h>

int64_t hy_proc_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, rss = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lld %lld", &size, &rss) != 2)
        rss = 0;
    fclose(f);
    return (int64_t)rss * (int64_t)sysconf(_SC_PAGESIZE);
}
