/*
 * tls: OpenSSL contexts and memory-BIO connections for syslog over TLS
 * (RFC 5425); see tls.h.
 *
 * Each connection has an SSL object between two memory BIOs: rbio takes the
 * ciphertext the socket delivered, wbio collects what OpenSSL wants sent.
 * Nothing here touches a socket, so nothing here can block; the caller moves
 * the bytes with libuv.  TLS 1.2 is the lowest version spoken.  Servers
 * issue no session tickets and keep no session cache: syslog connections
 * live long, and a thousand idle ones should cost little.
 *
 * The names check (allowed-names) runs in the verify callback on the
 * peer's own certificate, after the chain verified, so that a refused peer
 * is told with an alert during the handshake rather than cut off after it;
 * it fails as X509_V_ERR_HOSTNAME_MISMATCH, which is also what OpenSSL's
 * host check (a client without allowed-names) reports: one reason class.
 */
#include "agent/net/tls.h"
#include "engine/strlist.h"
#include "engine/xalloc.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A key file is a few KiB; this bounds a wrong path. */
#define KEY_FILE_MAX (1u << 20)
#define NAME_MAX_LEN 256

struct tls_ctx {
    SSL_CTX *ssl;
    unsigned refs;
    bool server;
    char **allowed; /* allowed-names patterns */
    size_t nallowed;
};

struct tls_conn {
    struct tls_ctx *ctx;
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    bool established;
    enum tls_fail fail;
    char why[160];
    char peer_name[NAME_MAX_LEN];
};

/* A write request and the ciphertext it sends. */
struct tls_write {
    uv_write_t req;
    char data[];
};

static const char *const fail_names[TLS_FAIL_N] = {
    "protocol", "no-certificate", "bad-certificate", "name-not-allowed", "peer-alert", "closed",
};

const char *
tls_fail_name(enum tls_fail f)
{
    return f < TLS_FAIL_N ? fail_names[f] : "?";
}

/* What OpenSSL said last, appended to err; its error queue is emptied. */
static void
ssl_reason(struct buf *err)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;

    buf_puts(err, r ? r : "unknown error");
    ERR_clear_error();
}

/* ---- names ---- */

/*
 * RFC 6125 through OpenSSL's X509_check_host: the DNS subjectAltNames, and
 * the subject CN only when there is none (6.4.4; OpenSSL's default, so the
 * CN of a certificate that names evil.attacker.net in its SANs counts for
 * nothing); a wildcard in the certificate only as its whole left-most
 * label, standing for exactly one label (NO_PARTIAL_WILDCARDS; OpenSSL also
 * wants two labels after it and none of them an IDNA A-label).
 */
#define HOST_FLAGS X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS

bool
tls_name_pattern_ok(const char *pattern, const char **why)
{
    const char *name = pattern, *p;

    if (pattern[0] == '*' && pattern[1] == '.') name = pattern + 2;
    for (p = name; *p; p++)
        if (*p == '*') {
            *why = "a wildcard only as the whole first label (\"*.example.com\")";
            return false;
        }
    if (!*name || name[0] == '.' || p[-1] == '.' || strstr(name, "..")) {
        *why = "not a host name";
        return false;
    }
    if (p - pattern >= NAME_MAX_LEN) {
        *why = "too long for a host name";
        return false;
    }
    if (name != pattern && !strchr(name, '.')) {
        *why = "a wildcard needs a domain of two labels or more (\"*.example.com\")";
        return false;
    }
    return true;
}

bool
tls_cert_name_allowed(X509 *x, const char *pattern, char *out, size_t outlen)
{
    char *peer = NULL;
    bool ok;

    if (pattern[0] == '*' && pattern[1] == '.') {
        /*
         * Any one label below the domain: OpenSSL's ".example.com" reference
         * with SINGLE_LABEL_SUBDOMAINS.  It compares the certificate's name
         * as text, so a certificate for the literal "*.example.com" would
         * pass: a wildcard certificate names no host, and is refused here.
         */
        ok = X509_check_host(x, pattern + 1, 0,
                             HOST_FLAGS | X509_CHECK_FLAG_SINGLE_LABEL_SUBDOMAINS, &peer) == 1 &&
             peer && !strchr(peer, '*');
    } else {
        ok = X509_check_host(x, pattern, 0, HOST_FLAGS, &peer) == 1;
    }
    if (ok && out) snprintf(out, outlen, "%s", peer ? peer : pattern);
    OPENSSL_free(peer);
    ERR_clear_error();
    return ok;
}

/* The subject's CN into out (NAME_MAX_LEN); false if it has none (or a bogus one). */
static bool
cert_cn(X509 *x, char *out)
{
    X509_NAME *subj = X509_get_subject_name(x);
    int i = subj ? X509_NAME_get_index_by_NID(subj, NID_commonName, -1) : -1;
    unsigned char *u = NULL;
    int n;
    bool ok = false;

    if (i < 0) return false;
    n = ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i)));
    if (n > 0 && n < NAME_MAX_LEN && !memchr(u, '\0', (size_t)n)) {
        memcpy(out, u, (size_t)n);
        out[n] = '\0';
        ok = true;
    }
    OPENSSL_free(u);
    return ok;
}

/*
 * The certificate's first DNS name into out (NAME_MAX_LEN), as the name to
 * show for a peer no allowed name was checked against; false if it has none.
 * Names holding a NUL or too long are skipped: they cannot be what they claim.
 */
static bool
cert_dns_name(X509 *x, char *out)
{
    GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    bool found = false;
    int i, n;

    for (i = 0; sans && !found && i < sk_GENERAL_NAME_num(sans); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
        const unsigned char *p;
        if (g->type != GEN_DNS) continue;
        p = ASN1_STRING_get0_data(g->d.dNSName);
        n = ASN1_STRING_length(g->d.dNSName);
        if (n <= 0 || n >= NAME_MAX_LEN || memchr(p, '\0', (size_t)n)) continue;
        memcpy(out, p, (size_t)n);
        out[n] = '\0';
        found = true;
    }
    GENERAL_NAMES_free(sans);
    return found;
}

/* Whether x carries one of ctx's allowed names; the certificate's name that did into out. */
static bool
cert_allowed(const struct tls_ctx *ctx, X509 *x, char *out)
{
    size_t i;

    for (i = 0; i < ctx->nallowed; i++)
        if (tls_cert_name_allowed(x, ctx->allowed[i], out, NAME_MAX_LEN)) return true;
    return false;
}

static int
verify_cb(int ok, X509_STORE_CTX *xs)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct tls_conn *c = ssl ? SSL_get_app_data(ssl) : NULL;

    if (!ok || !c || !c->ctx->nallowed || X509_STORE_CTX_get_error_depth(xs) != 0) return ok;
    if (cert_allowed(c->ctx, X509_STORE_CTX_get_current_cert(xs), NULL)) return 1;
    X509_STORE_CTX_set_error(xs, X509_V_ERR_HOSTNAME_MISMATCH);
    return 0;
}

/* ---- keys and contexts ---- */

char *
tls_key_read(const char *path, size_t *len, struct buf *err)
{
    struct stat st;
    char *data = NULL;
    size_t have = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    if (fd < 0) {
        buf_printf(err, "key %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0) {
        buf_printf(err, "key %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        buf_printf(err, "key %s: not a regular file", path);
        goto out;
    }
    if (st.st_mode & (S_IRWXO | S_IWGRP)) {
        buf_printf(err,
                   "key %s: a private key must not be %s (mode %04o): "
                   "chmod 0600, or 0640 with the service's group",
                   path, (st.st_mode & S_IRWXO) ? "open to others" : "writable by its group",
                   (unsigned)(st.st_mode & 07777));
        goto out;
    }
    if (st.st_size <= 0 || (size_t)st.st_size > KEY_FILE_MAX) {
        buf_printf(err, "key %s: %s", path, st.st_size <= 0 ? "empty" : "too large for a key");
        goto out;
    }
    data = xmalloc((size_t)st.st_size + 1);
    while (have < (size_t)st.st_size) {
        ssize_t n = read(fd, data + have, (size_t)st.st_size - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
    }
    if (have == 0) {
        buf_printf(err, "key %s: cannot read it", path);
        free(data);
        data = NULL;
        goto out;
    }
    data[have] = '\0';
    *len = have;
out:
    close(fd);
    return data;
}

/* An encrypted key must not make OpenSSL prompt on the terminal. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static int
load_key(SSL_CTX *sc, const char *path, struct buf *err)
{
    size_t len = 0;
    char *pem = tls_key_read(path, &len, err);
    BIO *bio;
    EVP_PKEY *pk;
    int ok;

    if (!pem) return -1;
    bio = BIO_new_mem_buf(pem, (int)len);
    pk = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
    BIO_free(bio);
    OPENSSL_cleanse(pem, len);
    free(pem);
    if (!pk) {
        buf_printf(err, "key %s: no private key in it (PEM, not encrypted): ", path);
        ssl_reason(err);
        return -1;
    }
    ok = SSL_CTX_use_PrivateKey(sc, pk);
    EVP_PKEY_free(pk);
    if (ok != 1 && ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
        buf_printf(err, "key %s does not belong to the certificate", path);
        ERR_clear_error();
        return -1;
    }
    if (ok != 1) {
        buf_printf(err, "key %s: ", path);
        ssl_reason(err);
        return -1;
    }
    if (SSL_CTX_check_private_key(sc) != 1) {
        buf_printf(err, "key %s does not belong to the certificate", path);
        ERR_clear_error();
        return -1;
    }
    return 0;
}

/* allowed-names: patterns separated by spaces or commas, each checked (tls_name_pattern_ok). */
static int
split_names(struct tls_ctx *ctx, const char *s, struct buf *err)
{
    const char *why;
    size_t i;

    strlist_split(s, &ctx->allowed, &ctx->nallowed);
    for (i = 0; i < ctx->nallowed; i++)
        if (!tls_name_pattern_ok(ctx->allowed[i], &why)) {
            buf_printf(err, "allowed-names: \"%s\": %s", ctx->allowed[i], why);
            return -1;
        }
    return 0;
}

static int
setup(struct tls_ctx *ctx, const struct conf_tls *t, bool server, struct buf *err)
{
    SSL_CTX *sc = ctx->ssl;
    enum conf_tls_verify v = t->verify;
    struct stat st;
    int mode;

    if (SSL_CTX_set_min_proto_version(sc, TLS1_2_VERSION) != 1) {
        buf_puts(err, "cannot require TLS 1.2: ");
        ssl_reason(err);
        return -1;
    }
    SSL_CTX_set_mode(sc, SSL_MODE_RELEASE_BUFFERS);
    if (server) {
        SSL_CTX_set_session_cache_mode(sc, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_num_tickets(sc, 0);
        if (!t->cert || !t->key) {
            buf_puts(err, "a TLS input needs cert= and key=");
            return -1;
        }
    } else if (!t->cert != !t->key) {
        buf_puts(err, "a client certificate needs both cert= and key=");
        return -1;
    }
    if (t->cert && SSL_CTX_use_certificate_chain_file(sc, t->cert) != 1) {
        buf_printf(err, "cert %s: ", t->cert);
        if (access(t->cert, R_OK) < 0)
            buf_puts(err, strerror(errno));
        else
            ssl_reason(err);
        ERR_clear_error();
        return -1;
    }
    if (t->key && load_key(sc, t->key, err) < 0) return -1;
    if (v == CONF_TLS_VERIFY_DEFAULT)
        v = server && !t->ca ? CONF_TLS_VERIFY_NONE : CONF_TLS_VERIFY_REQUIRED;
    if (t->ca) {
        bool dir = stat(t->ca, &st) == 0 && S_ISDIR(st.st_mode);
        if (SSL_CTX_load_verify_locations(sc, dir ? NULL : t->ca, dir ? t->ca : NULL) != 1) {
            buf_printf(err, "ca %s: ", t->ca);
            if (access(t->ca, R_OK) < 0)
                buf_puts(err, strerror(errno));
            else
                ssl_reason(err);
            ERR_clear_error();
            return -1;
        }
        if (server && !dir) {
            STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca);
            if (names) SSL_CTX_set_client_CA_list(sc, names);
            ERR_clear_error();
        }
    } else if (server && v != CONF_TLS_VERIFY_NONE) {
        buf_puts(err, "verify=\"optional\" or \"required\" needs ca=, the CA client certificates "
                      "are checked against");
        return -1;
    } else if (!server && SSL_CTX_set_default_verify_paths(sc) != 1) {
        buf_puts(err, "cannot load the system's CA certificates: ");
        ssl_reason(err);
        return -1;
    }
    if (ctx->nallowed && v == CONF_TLS_VERIFY_NONE) {
        buf_puts(err, "allowed-names needs the peer's certificate verified (verify=\"none\")");
        return -1;
    }
    if (server && ctx->nallowed && v == CONF_TLS_VERIFY_OPTIONAL) {
        /* a client without a certificate would come in with no name to check */
        buf_puts(err, "allowed-names needs verify=\"required\": with \"optional\" a client "
                      "without a certificate comes in unchecked");
        return -1;
    }
    switch (v) {
    case CONF_TLS_VERIFY_NONE: mode = SSL_VERIFY_NONE; break;
    case CONF_TLS_VERIFY_OPTIONAL: mode = SSL_VERIFY_PEER; break;
    default: mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT; break;
    }
    SSL_CTX_set_verify(sc, mode, mode == SSL_VERIFY_NONE ? NULL : verify_cb);
    return 0;
}

struct tls_ctx *
tls_ctx_new(const struct conf_tls *t, bool server, struct buf *err)
{
    struct tls_ctx *ctx = xcalloc(1, sizeof(*ctx));

    ERR_clear_error();
    ctx->refs = 1;
    ctx->server = server;
    if (split_names(ctx, t->allowed_names, err) < 0) {
        tls_ctx_unref(ctx);
        return NULL;
    }
    ctx->ssl = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!ctx->ssl) {
        buf_puts(err, "cannot make a TLS context: ");
        ssl_reason(err);
        tls_ctx_unref(ctx);
        return NULL;
    }
    if (setup(ctx, t, server, err) < 0) {
        tls_ctx_unref(ctx);
        return NULL;
    }
    return ctx;
}

void
tls_ctx_unref(struct tls_ctx *ctx)
{
    size_t i;

    if (!ctx || --ctx->refs > 0) return;
    SSL_CTX_free(ctx->ssl);
    for (i = 0; i < ctx->nallowed; i++) free(ctx->allowed[i]);
    free(ctx->allowed);
    free(ctx);
}

/* ---- connections ---- */

struct tls_conn *
tls_conn_new(struct tls_ctx *ctx, const char *host)
{
    struct tls_conn *c = xcalloc(1, sizeof(*c));

    ERR_clear_error();
    c->ssl = SSL_new(ctx->ssl);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    if (!c->ssl || !c->rbio || !c->wbio) {
        /* out of memory inside OpenSSL: as xmalloc does, stop rather than limp */
        abort();
    }
    /* an empty memory BIO reads as "try again", not as the end of the stream */
    BIO_set_mem_eof_return(c->rbio, -1);
    SSL_set_bio(c->ssl, c->rbio, c->wbio);
    SSL_set_app_data(c->ssl, c);
    c->ctx = ctx;
    ctx->refs++;
    if (host) {
        unsigned char addr[16];
        bool ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
        SSL_set_connect_state(c->ssl);
        /* SNI names a host, never an address (RFC 6066 3) */
        if (!ip && SSL_set_tlsext_host_name(c->ssl, host) != 1) ERR_clear_error();
        if (!ctx->nallowed && SSL_get_verify_mode(c->ssl) != SSL_VERIFY_NONE) {
            /* the server's certificate must name the host we asked for (an IP: its address) */
            X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);
            X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            if (ip)
                X509_VERIFY_PARAM_set1_ip_asc(vp, host);
            else
                X509_VERIFY_PARAM_set1_host(vp, host, 0);
            ERR_clear_error();
        }
    } else {
        SSL_set_accept_state(c->ssl);
    }
    return c;
}

void
tls_conn_free(struct tls_conn *c)
{
    if (!c) return;
    SSL_free(c->ssl); /* frees the BIOs */
    tls_ctx_unref(c->ctx);
    free(c);
}

void
tls_conn_start(struct tls_conn *c)
{
    int r;

    ERR_clear_error();
    r = SSL_do_handshake(c->ssl);
    if (r != 1) ERR_clear_error(); /* WANT_READ: the ClientHello waits in wbio */
}

static int
failed(struct tls_conn *c, int r)
{
    int e = SSL_get_error(c->ssl, r);
    unsigned long err = ERR_peek_last_error();
    long vr = SSL_get_verify_result(c->ssl);
    int reason = ERR_GET_REASON(err);
    const char *s;

    if (vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        c->fail = TLS_FAIL_NAME;
        s = c->ctx->nallowed ? "the certificate carries none of the allowed names"
                             : X509_verify_cert_error_string(vr);
    } else if (vr != X509_V_OK) {
        c->fail = TLS_FAIL_BAD_CERT;
        s = X509_verify_cert_error_string(vr);
    } else if (err && reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
        c->fail = TLS_FAIL_NO_CERT;
        s = "no client certificate";
    } else if (err && reason >= SSL_AD_REASON_OFFSET) {
        c->fail = TLS_FAIL_PEER;
        s = ERR_reason_error_string(err);
    } else {
        c->fail = TLS_FAIL_PROTOCOL;
        s = err ? ERR_reason_error_string(err) : e == SSL_ERROR_SYSCALL ? "unexpected end" : NULL;
    }
    snprintf(c->why, sizeof(c->why), "%s", s ? s : "TLS error");
    ERR_clear_error();
    return -1;
}

/* The name the peer goes by (tls_conn_peer_name): the one allowed, else as RFC 6125 reads it. */
static void
set_peer_name(struct tls_conn *c)
{
    X509 *x = SSL_get0_peer_certificate(c->ssl);

    c->peer_name[0] = '\0';
    if (!x) return;
    if (c->ctx->nallowed && cert_allowed(c->ctx, x, c->peer_name)) return;
    if (cert_dns_name(x, c->peer_name)) return;
    if (!cert_cn(x, c->peer_name)) c->peer_name[0] = '\0';
}

int
tls_conn_feed(struct tls_conn *c, const char *data, size_t len, char *pbuf, size_t pcap,
              tls_plain_cb cb, void *arg)
{
    int r;

    ERR_clear_error();
    if (len && BIO_write(c->rbio, data, (int)len) != (int)len) {
        c->fail = TLS_FAIL_PROTOCOL;
        snprintf(c->why, sizeof(c->why), "cannot buffer what the peer sent");
        return -1;
    }
    if (!c->established) {
        r = SSL_do_handshake(c->ssl);
        if (r != 1) {
            if (SSL_get_error(c->ssl, r) == SSL_ERROR_WANT_READ) return 0;
            return failed(c, r);
        }
        c->established = true;
        set_peer_name(c);
    }
    for (;;) {
        r = SSL_read(c->ssl, pbuf, (int)pcap);
        if (r > 0) {
            if (cb && cb(arg, pbuf, (size_t)r) < 0) return -2;
            continue;
        }
        switch (SSL_get_error(c->ssl, r)) {
        case SSL_ERROR_WANT_READ: return 0;
        case SSL_ERROR_ZERO_RETURN: return 1;
        default: return failed(c, r);
        }
    }
}

void
tls_conn_shutdown(struct tls_conn *c)
{
    ERR_clear_error();
    if (c->established) SSL_shutdown(c->ssl);
    ERR_clear_error();
}

bool
tls_conn_established(const struct tls_conn *c)
{
    return c->established;
}

enum tls_fail
tls_conn_failure(const struct tls_conn *c, const char **why)
{
    if (why) *why = c->why[0] ? c->why : "TLS error";
    return c->fail;
}

int
tls_conn_write(struct tls_conn *c, const char *data, size_t len)
{
    size_t done = 0;

    ERR_clear_error();
    while (done < len) {
        /* a memory BIO grows: a write never waits for the socket */
        size_t chunk = len - done > INT32_MAX ? INT32_MAX : len - done;
        int r = SSL_write(c->ssl, data + done, (int)chunk);
        if (r <= 0) {
            failed(c, r);
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

void
tls_conn_take(struct tls_conn *c, struct buf *out)
{
    size_t n = BIO_ctrl_pending(c->wbio);
    int r;

    if (!n) return;
    buf_reserve(out, n);
    r = BIO_read(c->wbio, out->p + out->len, (int)n);
    if (r > 0) out->len += (size_t)r;
    out->p[out->len] = '\0'; /* buf's contents end in a NUL, whatever they are */
}

static void
on_flushed(uv_write_t *req, int status)
{
    (void)status; /* a failed write shows as a read error or EOF on the connection */
    free(req->data);
}

int
tls_conn_flush(struct tls_conn *c, uv_stream_t *stream)
{
    size_t n = BIO_ctrl_pending(c->wbio);
    struct tls_write *w;
    uv_buf_t b;
    int r;

    if (!n) return 0;
    w = xmalloc(sizeof(*w) + n);
    w->req.data = w;
    r = BIO_read(c->wbio, w->data, (int)n);
    if (r <= 0) {
        free(w);
        return 0;
    }
    b = uv_buf_init(w->data, (unsigned int)r);
    r = uv_write(&w->req, stream, &b, 1, on_flushed);
    if (r < 0) free(w);
    return r;
}

const char *
tls_conn_peer_name(const struct tls_conn *c)
{
    return c->peer_name;
}

void
tls_conn_describe(const struct tls_conn *c, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s %s", SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl));
}
