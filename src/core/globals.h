/* globals.h: the only mutable globals in hymt, declared in one place.
 * - hy_log_level: the log threshold (set once by main, read by every thread).
 * - hy_stop_requested: set by the SIGINT/SIGTERM handler, polled by long loops.
 * Everything else reaches functions through a context pointer. */
#ifndef HY_CORE_GLOBALS_H
#define HY_CORE_GLOBALS_H

#include <signal.h>

extern int hy_log_level;
extern volatile sig_atomic_t hy_stop_requested;

#endif
