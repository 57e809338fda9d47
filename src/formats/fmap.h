/* fmap.h: read-only memory maps of whole files (weights are never copied on the CPU).
 * hy_fmap_open maps the file or fails with an error naming the path; an empty file maps to
 * size 0 with data NULL. HY_E_IO (with strerror) if the path cannot be opened, is not a
 * regular file or cannot be mapped; *m is then zeroed. The mapping (PROT_READ, MAP_PRIVATE)
 * lives until hy_fmap_close; the file descriptor is closed at once. Thread-safe to read. */
#ifndef HY_FORMATS_FMAP_H
#define HY_FORMATS_FMAP_H

#include "core/status.h"

#include <stddef.h>

struct hy_fmap {
    const unsigned char *data;
    size_t size;
};

hy_status hy_fmap_open(struct hy_fmap *m, const char *path, struct hy_err *err);
/* Gives the mapping's resident pages back (madvise MADV_DONTNEED): the map stays valid and
 * the same bytes, a later read pages the file in again. For a checkpoint whose weights were
 * copied to a device: the host then holds none of it. */
void hy_fmap_release(const struct hy_fmap *m);
void hy_fmap_close(struct hy_fmap *m); /* accepts a zeroed or closed map */

#endif
