/* listen.c: the event loop's start-up: the listening socket and the open-file limit
 * (http.h has the contract). */
#include "server/http.h"

#include "core/log.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

hy_status hy_loop_listen(const struct hy_server_config *cfg, int *fd_out, int *port,
                         struct hy_err *err)
{
    struct addrinfo hints = {0}, *res = NULL;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", cfg->port);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(cfg->host, ports, &hints, &res);
    if (rc != 0)
        return hy_err_set(err, HY_E_INVAL, "cannot resolve --host %s: %s", cfg->host,
                          gai_strerror(rc));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return hy_err_set(err, HY_E_IO, "cannot listen on %s:%d (address in use?)", cfg->host,
                          cfg->port);
    }
    freeaddrinfo(res);
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    *port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                           : ((struct sockaddr_in *)&sa)->sin_port);
    *fd_out = fd;
    return HY_OK;
}

void hy_loop_raise_nofile(int n_conns)
{
    struct rlimit r;
    rlim_t want = (rlim_t)n_conns + 64;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < want) {
        r.rlim_cur = want < r.rlim_max ? want : r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
        if (r.rlim_cur < want)
            HY_LOGW("http: open file limit %llu < %llu: fewer connections than "
                    "--max-connections will be accepted", (unsigned long long)r.rlim_cur,
                    (unsigned long long)want);
    }
}
