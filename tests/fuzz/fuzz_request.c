/* fuzz_request.c: JSON request bodies through the real server. `hymt serve` (cmd_serve,
 * linked in) runs in this process on the tiny checkpoint; each input is one POST over
 * loopback: byte 0 picks the route (/api/translate, /v1/chat/completions,
 * /v1/completions), the rest is the body, framed with a correct Content-Length. Going
 * through HTTP keeps the harness to the API's contract whatever the transport is; libFuzzer
 * sees the coverage of every thread. Every request must get a complete HTTP response with
 * a status the README documents (200, 400, 413, 429, 503, 504), never a silent close, a
 * 500 or a hang (a 20 s receive timeout), and an error's body must be our JSON error. */
#include "cli/commands.h"
#include "core/globals.h"
#include "core/log.h"
#include "fuzz/fuzz_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>

static int port;
static char port_s[16];

static void *serve(void *arg)
{
    char *argv[] = {"-m", HYMT_SRC_DIR "/tests/data/tiny-mqa", "--port", port_s, "--threads", "1",
                    "--timeout", "2", "--max-chars", "2000", "--max-body", "65536", NULL};
    int rc = cmd_serve((int)(sizeof argv / sizeof argv[0]) - 1, argv);
    fprintf(stderr, "fuzz_request: the server exited with %d\n", rc);
    abort();
    return arg;
}

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends one request, reads the whole response (the server closes after it) into buf. */
static size_t exchange(const char *head, size_t nh, const uint8_t *body, size_t nb, char *buf,
                       size_t cap)
{
    int fd = connect_to();
    if (fd < 0) {
        snprintf(buf, cap, "connect: %s", strerror(errno));
        return 0;
    }
    size_t got = 0;
    ssize_t k = 0;
    if (send(fd, head, nh, MSG_NOSIGNAL) == (ssize_t)nh &&
        (!nb || send(fd, body, nb, MSG_NOSIGNAL) == (ssize_t)nb)) {
        /* libFuzzer's timer (SIGALRM) interrupts a long wait: wait on */
        while (got < cap - 1 &&
               ((k = recv(fd, buf + got, cap - 1 - got, 0)) > 0 || (k < 0 && errno == EINTR)))
            got += k > 0 ? (size_t)k : 0;
    } else {
        k = -1;
    }
    if (!got)
        snprintf(buf, cap, "%s", k < 0 ? strerror(errno) : "closed without a response");
    else
        buf[got] = '\0';
    close(fd);
    return got;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    hy_log_level = HY_LOG_ERROR;
    int fd = socket(AF_INET, SOCK_STREAM, 0); /* a free port: bind to 0, read it, release it */
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &al))
        abort();
    port = ntohs(a.sin_port);
    close(fd);
    snprintf(port_s, sizeof port_s, "%d", port);
    pthread_t t;
    pthread_create(&t, NULL, serve, NULL);
    pthread_detach(t);
    static const char ready[] = "GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    static char buf[4096];
    for (int i = 0; i < 600; i++) { /* up to 60 s to load under the sanitizers */
        if (exchange(ready, sizeof ready - 1, NULL, 0, buf, sizeof buf) &&
            !strncmp(buf, "HTTP/1.1 200", 12))
            return 0;
        usleep(100000);
    }
    fprintf(stderr, "fuzz_request: the server did not become ready\n");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const routes[3] = {"/api/translate", "/v1/chat/completions",
                                          "/v1/completions"};
    static char resp[1 << 20];
    if (size < 1)
        return 0;
    char head[256];
    int nh = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      routes[data[0] % 3], size - 1);
    size_t got = exchange(head, (size_t)nh, data + 1, size - 1, resp, sizeof resp);
    FZ_ASSERT(got >= 12 && !strncmp(resp, "HTTP/1.1 ", 9), "no HTTP response (%zu bytes): %.200s",
              got, resp);
    int status = atoi(resp + 9);
    FZ_ASSERT(status == 200 || status == 400 || status == 413 || status == 429 ||
                  status == 503 || status == 504,
              "status %d: %.300s", status, resp);
    if (status != 200) {
        const char *b = strstr(resp, "\r\n\r\n");
        FZ_ASSERT(b && strstr(b, "\"error\"") && strstr(b, "\"code\""),
                  "status %d without a JSON error body: %.300s", status, resp);
    }
    return 0;
}
