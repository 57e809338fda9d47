/* fuzz_util.h: helpers shared by the libFuzzer targets (tests/fuzz/README.md). */
#ifndef HY_FUZZ_UTIL_H
#define HY_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A file holding data[0..size) that the loaders can open by path: one memfd per process,
 * rewritten for every input (no disk I/O, nothing left behind). */
static inline const char *fz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("hymt-fuzz", 0);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
        perror("memfd write");
        abort();
    }
    return path;
}

/* A failure the sanitizers would not see (a broken contract): report and crash, so that
 * libFuzzer saves the input. */
#define FZ_ASSERT(c, ...)                                                                          \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #c);                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Every error carries a message that names its source (the loaders' contract). */
#define FZ_ERR_NAMES(err, what) FZ_ASSERT((err).msg[0] && strstr((err).msg, (what)), "%s", (err).msg)

#endif
