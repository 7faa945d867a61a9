/*
 * Unit tests of agent/net/tls.c's checks that need no peer: how allowed-names
 * patterns match the names of certificates made here (RFC 6125: DNS names,
 * the CN only without them; "*.example.com" as one label only; wildcard
 * certificates), which patterns are refused, which private key files
 * are refused for their mode, and the contexts a configuration cannot make
 * (a missing or unreadable certificate, key or CA, checks without a CA,
 * allowed-names without verification).
 * The handshakes themselves are tested against real clients and servers in
 * tests/integration/inputs_tls.sh and outputs_tls.sh.
 */
#include "agent/conf/conf.h"
#include "agent/net/tls.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A certificate with subject CN cn (NULL: none) and subjectAltNames sans
 * (OpenSSL's form, "DNS:a,DNS:b"; NULL: no extension).  Unsigned: name checks read names only.
 */
static X509 *
cert(const char *cn, const char *sans)
{
    X509 *x = X509_new();
    X509_NAME *subj = X509_get_subject_name(x);

    ck_assert_ptr_nonnull(x);
    if (cn)
        ck_assert_int_eq(X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
                                                    (const unsigned char *)cn, -1, -1, 0),
                         1);
    if (sans) {
        X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, sans);
        ck_assert_ptr_nonnull(ext);
        ck_assert_int_eq(X509_add_ext(x, ext, -1), 1);
        X509_EXTENSION_free(ext);
    }
    return x;
}

/* Whether a certificate (cn, sans) passes pattern; the name it matched by into out. */
static bool
allowed(const char *cn, const char *sans, const char *pattern, char *out)
{
    X509 *x = cert(cn, sans);
    char name[256] = "";
    bool ok = tls_cert_name_allowed(x, pattern, name, sizeof(name));

    if (out) strcpy(out, name);
    X509_free(x);
    return ok;
}

START_TEST(test_name_exact)
{
    char name[256];

    ck_assert(allowed(NULL, "DNS:client1.example.com", "client1.example.com", name));
    ck_assert_str_eq(name, "client1.example.com");
    ck_assert(allowed(NULL, "DNS:CLIENT1.Example.COM", "client1.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:client2.example.com", "client1.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:client1.example.com.evil", "client1.example.com", NULL));
    ck_assert(allowed(NULL, "DNS:other.example.org,DNS:client1.example.com", "client1.example.com",
                      NULL));
    /* no DNS name: the CN (RFC 6125 6.4.4) */
    ck_assert(allowed("client1.example.com", NULL, "client1.example.com", name));
    ck_assert_str_eq(name, "client1.example.com");
    ck_assert(allowed("client1.example.com", "IP:10.0.0.1", "client1.example.com", NULL));
    ck_assert(!allowed(NULL, NULL, "client1.example.com", NULL));
}
END_TEST

START_TEST(test_name_cn_ignored_with_sans)
{
    /* a DNS subjectAltName present: the CN is not a name of the certificate */
    ck_assert(!allowed("web1.example.com", "DNS:evil.attacker.net", "web1.example.com", NULL));
    ck_assert(!allowed("web1.example.com", "DNS:evil.attacker.net", "*.example.com", NULL));
    ck_assert(allowed("web1.example.com", "DNS:evil.attacker.net", "evil.attacker.net", NULL));
}
END_TEST

START_TEST(test_name_wildcard_pattern)
{
    char name[256];

    ck_assert(allowed(NULL, "DNS:a.example.com", "*.example.com", name));
    ck_assert_str_eq(name, "a.example.com");
    ck_assert(allowed(NULL, "DNS:Web-1.EXAMPLE.com", "*.example.com", NULL));
    ck_assert(allowed("web1.example.com", NULL, "*.example.com", NULL));
    /* one label: not none, not two */
    ck_assert(!allowed(NULL, "DNS:example.com", "*.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:a.b.example.com", "*.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:a.example.org", "*.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:aexample.com", "*.example.com", NULL));
    /* a certificate for the literal wildcard names no host: refused by a wildcard pattern */
    ck_assert(!allowed(NULL, "DNS:*.example.com", "*.example.com", NULL));
    ck_assert(!allowed("*.example.com", NULL, "*.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:w*.example.com", "*.example.com", NULL));
}
END_TEST

START_TEST(test_name_wildcard_cert)
{
    char name[256];

    /* RFC 6125 6.4.3: the whole left-most label, exactly one label */
    ck_assert(allowed(NULL, "DNS:*.example.com", "web1.example.com", name));
    ck_assert_str_eq(name, "*.example.com");
    ck_assert(!allowed(NULL, "DNS:*.example.com", "a.web1.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:*.example.com", "example.com", NULL));
    /* partial wildcards are not expanded */
    ck_assert(!allowed(NULL, "DNS:w*.example.com", "web1.example.com", NULL));
    ck_assert(!allowed(NULL, "DNS:*b1.example.com", "web1.example.com", NULL));
    /* nor one over a single label */
    ck_assert(!allowed(NULL, "DNS:*.com", "example.com", NULL));
}
END_TEST

START_TEST(test_name_patterns)
{
    const char *why;

    ck_assert(tls_name_pattern_ok("web1.example.com", &why));
    ck_assert(tls_name_pattern_ok("*.example.com", &why));
    ck_assert(tls_name_pattern_ok("localhost", &why));
    ck_assert(!tls_name_pattern_ok("a*.example.com", &why));
    ck_assert_msg(strstr(why, "first label"), "%s", why);
    ck_assert(!tls_name_pattern_ok("*", &why));
    ck_assert(!tls_name_pattern_ok("*.*.example.com", &why));
    ck_assert(!tls_name_pattern_ok("*.com", &why));
    ck_assert_msg(strstr(why, "two labels"), "%s", why);
    ck_assert(!tls_name_pattern_ok(".example.com", &why));
    ck_assert(!tls_name_pattern_ok("example.com.", &why));
    ck_assert(!tls_name_pattern_ok("a..example.com", &why));
}
END_TEST

/* Writes a key-like file with mode and returns whether tls_key_read took it. */
static bool
key_taken(mode_t mode, char *why, size_t whylen)
{
    char path[] = "/tmp/test_tls.XXXXXX";
    int fd = mkstemp(path);
    struct buf err = BUF_INIT;
    size_t len = 0;
    char *data;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "-----BEGIN PRIVATE KEY-----\n", 28), 28);
    close(fd);
    ck_assert_int_eq(chmod(path, mode), 0);
    data = tls_key_read(path, &len, &err);
    snprintf(why, whylen, "%s", buf_str(&err));
    unlink(path);
    buf_free(&err);
    if (data) ck_assert_uint_eq(len, 28);
    free(data);
    return data != NULL;
}

START_TEST(test_key_modes)
{
    char why[512];

    ck_assert(key_taken(0600, why, sizeof(why)));
    ck_assert(key_taken(0400, why, sizeof(why)));
    ck_assert(key_taken(0640, why, sizeof(why)));
    ck_assert(key_taken(0440, why, sizeof(why)));
    ck_assert(!key_taken(0644, why, sizeof(why)));
    ck_assert_msg(strstr(why, "open to others (mode 0644)"), "%s", why);
    ck_assert(!key_taken(0604, why, sizeof(why)));
    ck_assert(!key_taken(0602, why, sizeof(why)));
    ck_assert(!key_taken(0601, why, sizeof(why)));
    ck_assert(!key_taken(0660, why, sizeof(why)));
    ck_assert_msg(strstr(why, "writable by its group (mode 0660)"), "%s", why);
}
END_TEST

START_TEST(test_key_not_regular)
{
    struct buf err = BUF_INIT;
    size_t len;

    ck_assert_ptr_null(tls_key_read("/tmp", &len, &err));
    ck_assert_msg(strstr(buf_str(&err), "not a regular file"), "%s", buf_str(&err));
    buf_reset(&err);
    ck_assert_ptr_null(tls_key_read("/nonexistent/key.pem", &len, &err));
    ck_assert_msg(strstr(buf_str(&err), "No such file"), "%s", buf_str(&err));
    buf_free(&err);
}
END_TEST

/* ---- contexts: what a configuration lacks or gets wrong ---- */

static char tdir[] = "/tmp/corral-test-tls-XXXXXX";
static char crt[300], key[300], junk[300];

/* A self-signed certificate (CN and DNS name test.example) in crt and its key in key (0600). */
static void
write_cert(void)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = cert("test.example", "DNS:test.example");
    FILE *f;

    ck_assert_ptr_nonnull(pk);
    ck_assert_int_eq(X509_set_version(x, 2), 1);
    ck_assert_int_eq(ASN1_INTEGER_set(X509_get_serialNumber(x), 1), 1);
    ck_assert_ptr_nonnull(X509_gmtime_adj(X509_getm_notBefore(x), 0));
    ck_assert_ptr_nonnull(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
    ck_assert_int_eq(X509_set_issuer_name(x, X509_get_subject_name(x)), 1);
    ck_assert_int_eq(X509_set_pubkey(x, pk), 1);
    ck_assert_int_gt(X509_sign(x, pk, EVP_sha256()), 0);
    ck_assert_ptr_nonnull(f = fopen(crt, "w"));
    ck_assert_int_eq(PEM_write_X509(f, x), 1);
    fclose(f);
    ck_assert_ptr_nonnull(f = fopen(key, "w"));
    ck_assert_int_eq(PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
    ck_assert_int_eq(chmod(key, 0600), 0);
    X509_free(x);
    EVP_PKEY_free(pk);
}

/* tls_ctx_new(t, server): NULL with what in the message, or (what NULL) a context. */
static void
ctx_says(const struct conf_tls *t, bool server, const char *what)
{
    struct buf err = BUF_INIT;
    struct tls_ctx *ctx = tls_ctx_new(t, server, &err);

    if (what) {
        ck_assert_ptr_null(ctx);
        ck_assert_msg(strstr(buf_str(&err), what), "want %s in: %s", what, buf_str(&err));
    } else {
        ck_assert_msg(ctx != NULL, "%s", buf_str(&err));
    }
    tls_ctx_unref(ctx);
    buf_free(&err);
}

START_TEST(test_ctx_refused)
{
    struct conf_tls t;
    char cmd[400];

    ck_assert_ptr_nonnull(mkdtemp(tdir));
    snprintf(crt, sizeof(crt), "%s/c.crt", tdir);
    snprintf(key, sizeof(key), "%s/c.key", tdir);
    snprintf(junk, sizeof(junk), "%s/junk.pem", tdir);
    write_cert();
    {
        FILE *f = fopen(junk, "w");
        ck_assert_ptr_nonnull(f);
        fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n", f);
        fclose(f);
    }
    memset(&t, 0, sizeof(t));
    /* an input needs its certificate and key; a client certificate needs both */
    ctx_says(&t, true, "a TLS input needs cert= and key=");
    t.cert = crt;
    ctx_says(&t, false, "a client certificate needs both cert= and key=");
    /* files that are not there, or not certificates */
    t.cert = "/nonexistent/c.crt";
    t.key = key;
    ctx_says(&t, true, "cert /nonexistent/c.crt: No such file or directory");
    t.cert = junk;
    ctx_says(&t, true, "cert ");
    t.cert = crt;
    t.ca = "/nonexistent/ca.pem";
    ctx_says(&t, true, "ca /nonexistent/ca.pem: No such file or directory");
    t.ca = junk;
    ctx_says(&t, true, "ca ");
    /* checking clients needs the CA they are checked against */
    t.ca = NULL;
    t.verify = CONF_TLS_VERIFY_REQUIRED;
    ctx_says(&t, true, "verify=\"optional\" or \"required\" needs ca=");
    /* allowed-names: only with the peer's certificate verified, and every time */
    t.allowed_names = "test.example";
    t.verify = CONF_TLS_VERIFY_NONE;
    ctx_says(&t, false, "allowed-names needs the peer's certificate verified");
    t.ca = crt;
    t.verify = CONF_TLS_VERIFY_OPTIONAL;
    ctx_says(&t, true, "allowed-names needs verify=\"required\"");
    /* what works: a CA file, a CA directory, a client with the system's CAs */
    t.verify = CONF_TLS_VERIFY_REQUIRED;
    ctx_says(&t, true, NULL);
    t.ca = tdir;
    ctx_says(&t, true, NULL);
    memset(&t, 0, sizeof(t));
    ctx_says(&t, false, NULL);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tdir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *
tls_suite(void)
{
    Suite *s = suite_create("tls");
    TCase *tc = tcase_create("tls");

    tcase_add_test(tc, test_name_exact);
    tcase_add_test(tc, test_name_cn_ignored_with_sans);
    tcase_add_test(tc, test_name_wildcard_pattern);
    tcase_add_test(tc, test_name_wildcard_cert);
    tcase_add_test(tc, test_name_patterns);
    tcase_add_test(tc, test_key_modes);
    tcase_add_test(tc, test_key_not_regular);
    tcase_add_test(tc, test_ctx_refused);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(tls_suite());
}
