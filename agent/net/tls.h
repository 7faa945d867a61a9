/*
 * tls: syslog over TLS (RFC 5425) for the <tls> input (in_stream.c) and the
 * TLS forward output (output.c), with OpenSSL on the libuv loop.
 *
 * A connection's TLS engine works on memory buffers, never on the socket:
 * the caller feeds it the ciphertext it read (tls_conn_feed) and sends what
 * it has to send (tls_conn_flush, or tls_conn_take for a caller that writes
 * itself), so a handshake never blocks the loop and a client that sends
 * half a ClientHello costs nothing but its connection.
 *
 * A context (struct tls_ctx) holds the certificate, key, CA and the names a
 * peer's certificate must carry; connections keep a reference to the one
 * they started with, so a reload can put a new context in place while the
 * connections of the old one go on.  Keys are read when the context is made:
 * at start-up before corrald drops its privileges, and on reload as the
 * service user.  A private key file that others than its owner and group
 * may read, or that its group may write, is refused (tls_key_check).
 *
 * allowed-names is checked as RFC 6125 says (tls_cert_name_allowed); an
 * input with allowed-names needs verify="required", since a client without
 * a certificate has no name to check.
 */
#ifndef CORRAL_TLS_H
#define CORRAL_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>
#include <uv.h>

#include "engine/buf.h"
#include "agent/conf/conf.h"

/* Why a handshake failed: the reason label of corral_tls_handshake_failures_total. */
enum tls_fail {
    TLS_FAIL_PROTOCOL, /* not TLS, an old version, nothing in common */
    TLS_FAIL_NO_CERT,  /* verify="required" and the client sent no certificate */
    TLS_FAIL_BAD_CERT, /* the certificate does not verify against the CA (or expired...) */
    TLS_FAIL_NAME,     /* it verifies but carries none of the allowed names (or the host) */
    TLS_FAIL_PEER,     /* the peer gave up with an alert (it does not trust our certificate) */
    TLS_FAIL_CLOSED,   /* the connection ended (closed, idle, evicted) before the handshake did */
    TLS_FAIL_N
};

const char *tls_fail_name(enum tls_fail f);

struct tls_ctx;
struct tls_conn;

/*
 * Makes a context from the TLS attributes; server: for an input (a
 * certificate and key are needed), else for a forward output (they are
 * optional: a client certificate).  Returns NULL with a message in err.
 */
struct tls_ctx *tls_ctx_new(const struct conf_tls *t, bool server, struct buf *err);
void tls_ctx_unref(struct tls_ctx *ctx);

/*
 * Refuses a private key file that is not a regular file, that others than
 * its owner and group may read or write (o+rwx), or that its group may
 * write (g+w): 0600 and 0640 (root:corral) are what it should be.  Returns
 * 0, or -1 with a message in err.  Checked on the opened file, which is then
 * read: its PEM text is returned (the caller frees it, clearing it first).
 */
char *tls_key_read(const char *path, size_t *len, struct buf *err);

/*
 * An allowed-names pattern: a host name ("web1.example.com", any case), or
 * "*.example.com", which stands for exactly one label below a domain of two
 * labels or more ("a.example.com", not "example.com" nor "a.b.example.com").
 * A '*' anywhere else, an empty label, a leading or final dot are refused:
 * false, with why.
 */
bool tls_name_pattern_ok(const char *pattern, const char **why);

/*
 * Whether certificate x carries a name pattern allows, as RFC 6125 says: its
 * DNS subjectAltNames, and its subject CN only when it has none; a wildcard
 * in the certificate only as the whole left-most label, for one label, so a
 * certificate for "*.example.com" matches the pattern "web1.example.com"
 * (its CA vouched for every such host) but not the pattern "*.example.com"
 * (it names no host).  The certificate's name that matched goes to out.
 */
bool tls_cert_name_allowed(X509 *x, const char *pattern, char *out, size_t outlen);

/*
 * A connection on ctx (referenced).  host: for a client, the server's name
 * (SNI, and what its certificate must carry when ctx has no allowed names);
 * NULL for a server.
 */
struct tls_conn *tls_conn_new(struct tls_ctx *ctx, const char *host);
void tls_conn_free(struct tls_conn *c);

/* A client starts the handshake: its ClientHello is then waiting to be sent. */
void tls_conn_start(struct tls_conn *c);

/* Plaintext from the peer; returns 0 to go on, -1 to stop feeding. */
typedef int (*tls_plain_cb)(void *arg, const char *data, size_t len);

/*
 * Feeds ciphertext read from the socket: the handshake goes on, and the
 * plaintext it carries goes to cb (through pbuf, pcap bytes).  Afterwards
 * something may be waiting to be sent (tls_conn_flush).  Returns 0, 1 when
 * the peer ended the session (close_notify), -1 when TLS failed (see
 * tls_conn_failure), or -2 when cb asked to stop.
 */
int tls_conn_feed(struct tls_conn *c, const char *data, size_t len, char *pbuf, size_t pcap,
                  tls_plain_cb cb, void *arg);
bool tls_conn_established(const struct tls_conn *c);
/* Our close_notify, to send before closing (the answer to the peer's, or our own end). */
void tls_conn_shutdown(struct tls_conn *c);
/* After -1 from tls_conn_feed: the class, and what OpenSSL said. */
enum tls_fail tls_conn_failure(const struct tls_conn *c, const char **why);

/* Encrypts plaintext; the records wait to be sent.  Returns 0 or -1. */
int tls_conn_write(struct tls_conn *c, const char *data, size_t len);
/* Appends what waits to be sent to out. */
void tls_conn_take(struct tls_conn *c, struct buf *out);
/* Sends what waits with a write request of its own (freed when done).  Returns 0 or a UV error. */
int tls_conn_flush(struct tls_conn *c, uv_stream_t *stream);
/*
 * The peer certificate's name once established: its name that matched an
 * allowed name, else its first DNS subjectAltName, else its subject CN; ""
 * without a certificate.
 */
const char *tls_conn_peer_name(const struct tls_conn *c);
/* What the handshake agreed on, for the log: "TLSv1.3 TLS_AES_256_GCM_SHA384". */
void tls_conn_describe(const struct tls_conn *c, char *out, size_t outlen);

#endif
