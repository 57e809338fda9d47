/* addr_count.h: open connections per client address, for the per-address limit: a table
 * of at most `max` live addresses, sized at init (open addressing, linear probing,
 * backward-shift deletion: no tombstones, so it never fills up with departed clients) and
 * never reallocated. IPv4 addresses count as their IPv4-mapped IPv6 form. One thread (the
 * event loop). */
#ifndef HY_SERVER_ADDR_COUNT_H
#define HY_SERVER_ADDR_COUNT_H

#include "core/status.h"

#include <stddef.h>
#include <sys/socket.h>

struct hy_addr_ent {
    unsigned char key[16];
    int count; /* 0: empty */
};

struct hy_addr_count {
    struct hy_addr_ent *e;
    size_t cap; /* a power of two, at least twice max */
};

hy_status hy_addr_count_init(struct hy_addr_count *t, int max, struct hy_err *err);
void hy_addr_count_free(struct hy_addr_count *t);
/* Counts one more connection from sa: returns its slot (for remove), *count the
 * connections from that address now. At most `max` distinct addresses may be live. */
int hy_addr_count_add(struct hy_addr_count *t, const struct sockaddr_storage *sa, int *count);
/* One connection of the address in slot fewer. */
void hy_addr_count_remove(struct hy_addr_count *t, int slot);

#endif
