/* tls.c: the server's TLS on OpenSSL (tls.h has the contract). */
#include "server/tls.h"

#include "core/log.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TLS_WHY_MAX 160

struct hy_tls {
    SSL_CTX *ctx;
};

struct hy_tls_sess {
    SSL *ssl;
    char why[TLS_WHY_MAX];
};

/* The oldest queued OpenSSL error as one line (or fallback), then the queue emptied. */
static void take_error(char *buf, size_t cap, const char *fallback)
{
    unsigned long e = ERR_get_error();
    if (e) {
        const char *r = ERR_reason_error_string(e);
        if (r)
            snprintf(buf, cap, "%s", r);
        else
            ERR_error_string_n(e, buf, cap);
    } else {
        snprintf(buf, cap, "%s", fallback);
    }
    ERR_clear_error();
}

/* No passphrase prompt: an encrypted key is an error at start-up, never a hang on a tty. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return 0;
}

/* ALPN: HTTP/1.1 when the client offers it; anything else proceeds without ALPN. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl, (void)arg;
    static const unsigned char h1[] = "\x08http/1.1";
    unsigned char *sel = NULL;
    if (SSL_select_next_proto(&sel, outlen, h1, sizeof h1 - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

/* A regular file we can read; *encrypted: it holds an encrypted PEM key. */
static hy_status readable(const char *flag, const char *path, bool *encrypted,
                          struct hy_err *err)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        hy_status st = hy_err_set(err, HY_E_IO, "%s %s: cannot read it: %s", flag, path,
                                  f ? "not a regular file" : strerror(errno));
        if (f)
            fclose(f);
        return st;
    }
    char head[8192];
    size_t n = fread(head, 1, sizeof head - 1, f);
    head[n] = '\0';
    fclose(f);
    *encrypted = strstr(head, "ENCRYPTED") != NULL; /* PKCS#8 and the old Proc-Type form */
    return HY_OK;
}

/* Loads and checks certificate and key into ctx. */
static hy_status load_pair(SSL_CTX *ctx, const char *cert, const char *key, struct hy_err *err)
{
    char why[TLS_WHY_MAX];
    bool enc = false;
    hy_status st = readable("--tls-cert", cert, &enc, err);
    if (!st)
        st = readable("--tls-key", key, &enc, err);
    if (st)
        return st;
    if (enc)
        return hy_err_set(err, HY_E_INVAL,
                          "--tls-key %s is encrypted: hymt takes no passphrase (decrypt it "
                          "into a file only the server can read: openssl pkey -in KEY -out NEW)",
                          key);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        take_error(why, sizeof why, "no certificate");
        return hy_err_set(err, HY_E_INVAL, "--tls-cert %s: not a PEM certificate (OpenSSL: %s)",
                          cert, why);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        unsigned long e = ERR_peek_last_error();
        if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            return hy_err_set(err, HY_E_INVAL,
                              "--tls-key %s does not belong to the certificate in --tls-cert %s",
                              key, cert);
        }
        take_error(why, sizeof why, "no key");
        return hy_err_set(err, HY_E_INVAL,
                          "--tls-key %s: not a PEM private key (OpenSSL: %s)", key, why);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        take_error(why, sizeof why, "mismatch");
        return hy_err_set(err, HY_E_INVAL,
                          "--tls-key %s does not belong to the certificate in --tls-cert %s (%s)",
                          key, cert, why);
    }
    X509 *x = SSL_CTX_get0_certificate(ctx);
    if (x && X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
        HY_LOGW("tls: the certificate in %s has expired: clients will refuse it", cert);
    else if (x && X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
        HY_LOGW("tls: the certificate in %s is not valid yet: clients will refuse it", cert);
    return HY_OK;
}

hy_status hy_tls_create(struct hy_tls **out, const char *cert_file, const char *key_file,
                        struct hy_err *err)
{
    *out = NULL;
    struct hy_tls *t = calloc(1, sizeof *t);
    SSL_CTX *ctx = t ? SSL_CTX_new(TLS_server_method()) : NULL;
    if (!ctx) {
        free(t);
        ERR_clear_error();
        return hy_err_set(err, HY_E_NOMEM, "tls: cannot create the OpenSSL context");
    }
    t->ctx = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* No renegotiation: then a write never needs a read. An EOF without close_notify is a
     * plain end of stream (HTTP frames its own messages). */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
    /* The loop's output buffer grows and moves between a write and its retry; idle
     * connections give their record buffers back. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_default_passwd_cb(ctx, no_password);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
    hy_status st = load_pair(ctx, cert_file, key_file, err);
    if (st) {
        hy_tls_destroy(t);
        return st;
    }
    *out = t;
    return HY_OK;
}

void hy_tls_destroy(struct hy_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
    ERR_clear_error();
}

struct hy_tls_sess *hy_tls_sess_create(struct hy_tls *t, int fd)
{
    struct hy_tls_sess *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->ssl = SSL_new(t->ctx);
    if (!s->ssl || SSL_set_fd(s->ssl, fd) != 1) {
        SSL_free(s->ssl);
        free(s);
        ERR_clear_error();
        return NULL;
    }
    SSL_set_accept_state(s->ssl);
    return s;
}

void hy_tls_sess_destroy(struct hy_tls_sess *s, bool notify)
{
    if (!s)
        return;
    if (notify && SSL_is_init_finished(s->ssl))
        SSL_shutdown(s->ssl); /* queues close_notify; a full socket just loses it */
    SSL_free(s->ssl);
    free(s);
    ERR_clear_error();
}

/* What a failed call means; sets s->why for HY_TLS_ERROR and HY_TLS_PLAIN_HTTP. */
static enum hy_tls_io failure(struct hy_tls_sess *s, int ret)
{
    int e = SSL_get_error(s->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ: return HY_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return HY_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: ERR_clear_error(); return HY_TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        if (!ERR_peek_error())
            return HY_TLS_CLOSED; /* the socket's own error (reset) or EOF */
        break;
    default: break;
    }
    unsigned long code = ERR_peek_error();
    int reason = ERR_GET_REASON(code);
    if (ERR_GET_LIB(code) == ERR_LIB_SSL &&
        (reason == SSL_R_HTTP_REQUEST || reason == SSL_R_HTTPS_PROXY_REQUEST)) {
        ERR_clear_error();
        snprintf(s->why, sizeof s->why, "plain HTTP sent to the TLS port");
        return HY_TLS_PLAIN_HTTP;
    }
    take_error(s->why, sizeof s->why, e == SSL_ERROR_SSL ? "protocol error" : "TLS failure");
    return HY_TLS_ERROR;
}

enum hy_tls_io hy_tls_handshake(struct hy_tls_sess *s)
{
    ERR_clear_error();
    int r = SSL_do_handshake(s->ssl);
    if (r == 1)
        return HY_TLS_OK;
    return failure(s, r);
}

/* errno for a failed read or write. */
static ssize_t fail_io(enum hy_tls_io r, enum hy_tls_io *want, int sock_errno)
{
    *want = r;
    switch (r) {
    case HY_TLS_WANT_READ:
    case HY_TLS_WANT_WRITE: errno = EAGAIN; break;
    case HY_TLS_CLOSED: errno = sock_errno ? sock_errno : ECONNRESET; break;
    default: errno = EPROTO; break;
    }
    return -1;
}

ssize_t hy_tls_read(struct hy_tls_sess *s, void *p, size_t n, enum hy_tls_io *want)
{
    size_t got = 0;
    ERR_clear_error();
    errno = 0;
    if (SSL_read_ex(s->ssl, p, n, &got) == 1)
        return (ssize_t)got;
    int sock_errno = errno;
    int e = SSL_get_error(s->ssl, 0);
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !ERR_peek_error() &&
                                       !sock_errno)) {
        ERR_clear_error();
        return 0; /* close_notify, or an end of stream without it */
    }
    return fail_io(failure(s, 0), want, sock_errno);
}

ssize_t hy_tls_write(struct hy_tls_sess *s, const void *p, size_t n, enum hy_tls_io *want)
{
    size_t put = 0;
    ERR_clear_error();
    errno = 0;
    if (SSL_write_ex(s->ssl, p, n, &put) == 1)
        return (ssize_t)put;
    int sock_errno = errno;
    enum hy_tls_io r = failure(s, 0);
    if (r == HY_TLS_WANT_READ) { /* only renegotiation asks this, and it is off */
        snprintf(s->why, sizeof s->why, "a write asked for a read (renegotiation?)");
        r = HY_TLS_ERROR;
    }
    if (r == HY_TLS_CLOSED && !sock_errno)
        sock_errno = EPIPE;
    return fail_io(r, want, sock_errno);
}

bool hy_tls_pending(const struct hy_tls_sess *s)
{
    return SSL_pending(s->ssl) > 0;
}

const char *hy_tls_why(const struct hy_tls_sess *s)
{
    return s->why;
}
