/*
 * smtp_int: what the pieces of the smtp executor share, and what its unit
 * test reaches into.  Not an interface for the rest of corrald: that is
 * smtp_executor in executor.h.
 *
 *   smtp.c       configuration, grouping, repeat suppression, the executor
 *   smtp_mime.c  turning text into a correct RFC 5322 / MIME message
 *   smtp_send.c  sending messages with libcurl's multi interface on libuv
 */
#ifndef CORRAL_SMTP_INT_H
#define CORRAL_SMTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <uv.h>

#include "engine/buf.h"
#include "actions/executor.h"

/* ---- smtp_mime.c ---- */

/*
 * Longest subject, in characters, "[RESOLVED] " and the group suffix not
 * counted; a longer one is cut at a word boundary with "…".
 */
#define SMTP_SUBJECT_MAX 120

/*
 * True for an addr-spec we are willing to put in an envelope and a header:
 * ASCII dot-atom local part, '@', a host name.  No quoting, no comments, no
 * domain literals: there is then nothing in an address that needs escaping.
 */
bool smtp_addr_valid(const char *s, size_t len);

/*
 * Splits "addr@host" or "Display Name <addr@host>" into its display name
 * (malloc'ed, NULL if none) and address (malloc'ed).  False if malformed.
 */
bool smtp_parse_mailbox(const char *s, char **name, char **addr);

/*
 * Makes text safe for a header: invalid UTF-8 becomes U+FFFD; C0 and C1
 * controls (CR, LF, NEL included), DEL, U+2028, U+2029 and the bidirectional
 * overrides become spaces; leading and trailing spaces go.  At most max_chars
 * characters are kept (0: no limit); a cut ends in "...".
 */
void smtp_header_clean(const char *s, size_t len, size_t max_chars, struct buf *out);

/*
 * Appends "Name: value\r\n" for unstructured text (already clean): as is and
 * folded at spaces when it is printable ASCII, else as RFC 2047 encoded-words
 * (UTF-8, base64), one character never split across two of them.
 */
void smtp_header_text(struct buf *out, const char *field, const char *value, size_t len);

/* Appends "Name: mailbox\r\n" for a display name (may be NULL) and an address. */
void smtp_header_mailbox(struct buf *out, const char *field, const char *name, const char *addr);

/* Appends "Name: a, b, ...\r\n", folded between addresses. */
void smtp_header_addrs(struct buf *out, const char *field, char *const *addrs, size_t n);

/*
 * Makes text fit for a text/plain body: invalid UTF-8 becomes U+FFFD, CRLF
 * and lone CR become LF, other controls but TAB and LF become U+FFFD.
 */
void smtp_body_clean(const char *s, size_t len, struct buf *out);

/*
 * Encodes clean body text (LF line ends) for the wire: CRLF line ends, and
 * either as is ("7bit": printable ASCII, lines of at most 998 bytes, none
 * starting with '.') or quoted-printable, where a line never starts with '.'
 * either.  Returns the Content-Transfer-Encoding used.
 */
const char *smtp_body_encode(const char *text, size_t len, struct buf *out);

/* What a mail's subject is made of: its titling alert, and the others in the mail. */
struct smtp_subject {
    /*
     * The alert's severity: the built-in subject "[SEVERITY] HOST: text",
     * the severity upper-cased (an empty one is "warning").  NULL: text is
     * the whole subject (a subject= template's output).
     */
    const char *severity;
    const char *host; /* the built-in subject's HOST (may be empty) */
    size_t host_len;
    const char *text; /* the built-in subject's summary, or the template's output */
    size_t text_len;
    bool resolved; /* "[RESOLVED] " first, and no severity */
    size_t more;   /* other alerts in the mail: " (+N more)" last */
};

/*
 * Appends the clean subject (smtp_header_clean) for s: "[RESOLVED] "
 * when it resolves, the text cut at a word boundary to SMTP_SUBJECT_MAX
 * characters with "…", " (+N more)" when the mail carries N more alerts.
 */
void smtp_subject(const struct smtp_subject *s, struct buf *out);

/* RFC 5322 date-time in local time: "Tue, 02 Jan 2024 15:04:05 +0100". */
void smtp_format_date(time_t t, struct buf *out);

/* Appends a new, unique "<...@domain>". */
void smtp_message_id(const char *domain, struct buf *out);

/* ---- smtp_send.c ---- */

enum smtp_tls { SMTP_TLS_REQUIRED, SMTP_TLS_OPTIONAL, SMTP_TLS_NONE };

struct smtp_tx_conf {
    const char *url;
    enum smtp_tls tls;
    const char *ca_file;         /* NULL: the system's trust store */
    bool verify;                 /* check the server's certificate and name */
    const char *user, *password; /* NULL: no AUTH */
    const char *mail_from;       /* envelope sender (an addr-spec) */
    char *const *rcpts;          /* envelope recipients */
    size_t nrcpts;
    long timeout_ms;      /* a whole SMTP session, and the wait for any one reply */
    unsigned connections; /* sessions at once */
};

typedef void (*smtp_tx_done_fn)(void *arg, enum deliver_result r, const char *reason);

struct smtp_tx;

/* Copies what it needs from c.  Touches neither the loop nor curl until the first send. */
struct smtp_tx *smtp_tx_new(uv_loop_t *loop, const struct smtp_tx_conf *c);
/*
 * Sends one message (wire form: CRLF line ends, no line starting with '.'),
 * taking over msg's memory; done(arg, ...) once, possibly before returning
 * (when curl cannot even start).
 */
void smtp_tx_send(struct smtp_tx *t, struct buf *msg, smtp_tx_done_fn done, void *arg);
/*
 * Drops the messages not yet under way (their done is never called); the
 * sessions under way finish (within the timeout) and report as usual; then
 * closed(arg).
 */
void smtp_tx_close(struct smtp_tx *t, void (*closed)(void *), void *arg);

/*
 * What the outcome of a session means for the alert: curl's result, the last
 * SMTP reply code.
 */
enum deliver_result smtp_classify(int curl_code, long reply_code);

#endif
