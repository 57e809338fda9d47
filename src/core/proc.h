/* proc.h: facts about this process from /proc, for log lines and metrics. Reads a file at
 * each call (not for hot paths); thread-safe. Unreadable (no /proc): 0. */
#ifndef HY_CORE_PROC_H
#define HY_CORE_PROC_H

#include <stdint.h>

/* Resident set size in bytes (/proc/self/statm's second field times the page size). */
int64_t hy_proc_rss_bytes(void);

#endif
