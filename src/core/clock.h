/* clock.h: monotonic time for timings and deadlines. Thread-safe. */
#ifndef HY_CORE_CLOCK_H
#define HY_CORE_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock (arbitrary origin). */
static inline double hy_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
