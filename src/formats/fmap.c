#include "formats/fmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

hy_status hy_fmap_open(struct hy_fmap *m, const char *path, struct hy_err *err)
{
    m->data = NULL;
    m->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
    if (fd < 0)
        return hy_err_set(err, HY_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return hy_err_set(err, HY_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return hy_err_set(err, HY_E_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return hy_err_set(err, HY_E_RANGE, "%s: file too large to map", path);
    }
    if (sb.st_size == 0) { /* mmap of length 0 is EINVAL; an empty map needs no memory */
        close(fd);
        return HY_OK;
    }
    /* MAP_POPULATE maps every page now (about 0.04 s per GB from the page cache), so the
     * first request does not pay millions of page faults: start-up is the place for it */
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps its own reference to the file */
    if (p == MAP_FAILED)
        return hy_err_set(err, HY_E_IO, "%s: cannot mmap: %s", path, strerror(e));
    m->data = p;
    m->size = (size_t)sb.st_size;
    return HY_OK;
}

void hy_fmap_release(const struct hy_fmap *m)
{
    if (m->data) /* private read-only file pages: dropped, refilled from the file if read */
        (void)madvise((void *)m->data, m->size, MADV_DONTNEED);
}

void hy_fmap_close(struct hy_fmap *m)
{
    if (m->data)
        munmap((void *)m->data, m->size);
    m->data = NULL;
    m->size = 0;
}
