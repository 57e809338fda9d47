/* log.h: leveled logging to stderr, one line per call, prefixed with time and level.
 * Thread-safe (each call is one fprintf). The threshold is the global hy_log_level. */
#ifndef HY_CORE_LOG_H
#define HY_CORE_LOG_H

enum hy_log_lvl { HY_LOG_ERROR = 0, HY_LOG_WARN = 1, HY_LOG_INFO = 2, HY_LOG_DEBUG = 3 };

void hy_log(enum hy_log_lvl lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define HY_LOGE(...) hy_log(HY_LOG_ERROR, __VA_ARGS__)
#define HY_LOGW(...) hy_log(HY_LOG_WARN, __VA_ARGS__)
#define HY_LOGI(...) hy_log(HY_LOG_INFO, __VA_ARGS__)
#define HY_LOGD(...) hy_log(HY_LOG_DEBUG, __VA_ARGS__)

#endif
