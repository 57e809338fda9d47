/* tls.h: TLS for the server's connections on OpenSSL's libssl: the server context, made
 * once from a certificate chain and its private key (checked at start-up: readable, PEM,
 * not encrypted, matching each other), and one session per connection that the event loop
 * drives without ever blocking: each call returns at once and says whether it needs the
 * socket readable or writable again (HY_TLS_WANT_READ / HY_TLS_WANT_WRITE).
 * TLS 1.2 and 1.3, no renegotiation, no compression, ALPN http/1.1 when offered.
 * Threads: the context is immutable after hy_tls_create (any thread may make sessions); a
 * session belongs to one thread (the loop's). Errors never abort: a failed handshake or a
 * broken record is one line in the session (hy_tls_why), and OpenSSL's error queue is
 * emptied after every call, so one connection's error never shows up on another's. */
#ifndef HY_SERVER_TLS_H
#define HY_SERVER_TLS_H

#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct hy_tls;      /* the server's context */
struct hy_tls_sess; /* one connection's session */

enum hy_tls_io {
    HY_TLS_OK = 0,
    HY_TLS_WANT_READ,  /* call again when the socket is readable */
    HY_TLS_WANT_WRITE, /* call again when the socket is writable */
    HY_TLS_CLOSED,     /* the peer went away (end of stream, reset) without a TLS error */
    HY_TLS_PLAIN_HTTP, /* the peer spoke plain HTTP (a request line, not a ClientHello) */
    HY_TLS_ERROR,      /* a TLS protocol error: hy_tls_why says which */
};

/* The context from PEM files: cert_file holds the server certificate, optionally followed
 * by its intermediates; key_file its private key (unencrypted). HY_E_IO / HY_E_INVAL with
 * one line naming the flag and the file: unreadable, not PEM, encrypted, or a key that
 * does not belong to the certificate. A certificate past its end date is a warning. */
hy_status hy_tls_create(struct hy_tls **out, const char *cert_file, const char *key_file,
                        struct hy_err *err);
/* Accepts NULL. Every session must be destroyed first. */
void hy_tls_destroy(struct hy_tls *t);

/* A server session on a connected, non-blocking socket (fd stays the caller's to close).
 * NULL when out of memory. */
struct hy_tls_sess *hy_tls_sess_create(struct hy_tls *t, int fd);
/* notify: send close_notify first (best effort: never waits). Accepts NULL. */
void hy_tls_sess_destroy(struct hy_tls_sess *s, bool notify);

/* One step of the handshake: HY_TLS_OK when it is complete. */
enum hy_tls_io hy_tls_handshake(struct hy_tls_sess *s);
/* recv/send conventions: bytes moved (> 0), 0 at the end of the stream (read), or -1 with
 * errno: EAGAIN (then *want is HY_TLS_WANT_READ or HY_TLS_WANT_WRITE: a read may need the
 * socket writable), EPROTO (a TLS error: hy_tls_why), or the socket's own errno. A write
 * may move fewer bytes than asked; the rest is written by the next call, which may come
 * with more bytes appended or the buffer moved. */
ssize_t hy_tls_read(struct hy_tls_sess *s, void *p, size_t n, enum hy_tls_io *want);
ssize_t hy_tls_write(struct hy_tls_sess *s, const void *p, size_t n, enum hy_tls_io *want);
/* True when decrypted bytes wait inside the session (the socket may have none left, so
 * no readiness event will announce them). */
bool hy_tls_pending(const struct hy_tls_sess *s);
/* The last error's one-line description ("" when none). Borrowed, valid until the next call. */
const char *hy_tls_why(const struct hy_tls_sess *s);

#endif
