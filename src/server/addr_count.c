/* addr_count.c: connections per client address (addr_count.h has the contract). */
#include "server/addr_count.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

hy_status hy_addr_count_init(struct hy_addr_count *t, int max, struct hy_err *err)
{
    for (t->cap = 16; t->cap < 2 * (size_t)(max > 0 ? max : 1); t->cap *= 2)
        ;
    t->e = calloc(t->cap, sizeof *t->e);
    return t->e ? HY_OK : hy_err_set(err, HY_E_NOMEM, "out of memory for the address table");
}

void hy_addr_count_free(struct hy_addr_count *t)
{
    free(t->e);
    t->e = NULL;
}

static size_t hash(const unsigned char *k)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ k[i]) * 1099511628211ull;
    return (size_t)h;
}

int hy_addr_count_add(struct hy_addr_count *t, const struct sockaddr_storage *sa, int *count)
{
    unsigned char k[16] = {0};
    if (sa->ss_family == AF_INET6) {
        memcpy(k, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    } else if (sa->ss_family == AF_INET) {
        k[10] = k[11] = 0xff; /* ::ffff:a.b.c.d, as the same client over IPv6 */
        memcpy(k + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    }
    size_t m = t->cap - 1, i = hash(k) & m;
    while (t->e[i].count && memcmp(t->e[i].key, k, 16))
        i = (i + 1) & m; /* ends: live addresses are at most half the table */
    if (!t->e[i].count)
        memcpy(t->e[i].key, k, 16);
    *count = ++t->e[i].count;
    return (int)i;
}

void hy_addr_count_remove(struct hy_addr_count *t, int slot)
{
    size_t m = t->cap - 1, i = (size_t)slot;
    if (--t->e[i].count > 0)
        return;
    for (size_t j = (i + 1) & m; t->e[j].count; j = (j + 1) & m) {
        size_t home = hash(t->e[j].key) & m;
        /* move j back into the hole at i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            t->e[i] = t->e[j];
            t->e[j].count = 0;
            i = j;
        }
    }
}
