#include "core/log.h"

#include "core/globals.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int hy_log_level = HY_LOG_INFO;
volatile sig_atomic_t hy_stop_requested = 0;

void hy_log(enum hy_log_lvl lvl, const char *fmt, ...)
{
    if ((int)lvl > hy_log_level)
        return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    char line[1024];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %-5s ", tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* one fprintf so lines from different threads do not interleave */
    fprintf(stderr, "%s\n", line);
}
