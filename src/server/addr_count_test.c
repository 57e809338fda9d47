/* addr_count_test.c: the per-address connection counts against a plain reference: random
 * adds and removes over a small address space (so probe chains collide and wrap around the
 * table's end), with the table kept at its largest allowed load; every count must match,
 * and an address's slot must stay findable after the removals around it. IPv4 and its
 * IPv4-mapped IPv6 form are one client. */
#include "server/addr_count.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAX 64     /* live addresses at most */
#define SPACE 96   /* distinct addresses drawn from */
#define CONNS 400  /* live connections at most */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static struct sockaddr_storage addr(int i, bool v6)
{
    struct sockaddr_storage sa;
    memset(&sa, 0, sizeof sa);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&sa;
        a->sin6_family = AF_INET6;
        a->sin6_addr.s6_addr[0] = 0x20;
        a->sin6_addr.s6_addr[15] = (unsigned char)i;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&sa;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(0x7f000000u + (uint32_t)i);
    }
    return sa;
}

int main(void)
{
    struct hy_addr_count t;
    struct hy_err err = {{0}};
    CHECK(hy_addr_count_init(&t, MAX, &err) == HY_OK);
    int ref[SPACE] = {0}, live = 0, n_conns = 0, bad = 0;
    int conn_addr[CONNS], conn_slot[CONNS];
    for (int step = 0; step < 200000; step++) {
        bool add = n_conns == 0 || (n_conns < CONNS && next() % 2);
        if (add) {
            int a = (int)(next() % SPACE);
            if (!ref[a] && live == MAX)
                continue; /* the contract: at most MAX live addresses */
            struct sockaddr_storage sa = addr(a, a % 3 == 0);
            int count = 0;
            conn_slot[n_conns] = hy_addr_count_add(&t, &sa, &count);
            conn_addr[n_conns++] = a;
            live += ref[a]++ == 0;
            bad += count != ref[a];
        } else {
            int k = (int)(next() % (unsigned)n_conns);
            int a = conn_addr[k];
            /* the slot may have moved since the add (backward shift): look it up again */
            struct sockaddr_storage sa = addr(a, a % 3 == 0);
            int count = 0, slot = hy_addr_count_add(&t, &sa, &count);
            bad += count != ref[a] + 1;
            hy_addr_count_remove(&t, slot);
            hy_addr_count_remove(&t, slot);
            live -= --ref[a] == 0;
            conn_addr[k] = conn_addr[--n_conns];
            conn_slot[k] = conn_slot[n_conns];
        }
    }
    CHECKF(bad == 0, "%d counts differ from the reference", bad);
    /* IPv4 and ::ffff:a.b.c.d are the same client */
    struct sockaddr_storage v4 = addr(200, false), v6;
    memset(&v6, 0, sizeof v6);
    struct sockaddr_in6 *m = (struct sockaddr_in6 *)&v6;
    m->sin6_family = AF_INET6;
    m->sin6_addr.s6_addr[10] = m->sin6_addr.s6_addr[11] = 0xff;
    memcpy(&m->sin6_addr.s6_addr[12], &((struct sockaddr_in *)&v4)->sin_addr, 4);
    int c1 = 0, c2 = 0;
    int s1 = hy_addr_count_add(&t, &v4, &c1), s2 = hy_addr_count_add(&t, &v6, &c2);
    CHECK(c1 == 1 && c2 == 2 && s1 == s2);
    hy_addr_count_free(&t);
    (void)conn_slot;
    return test_result();
}
