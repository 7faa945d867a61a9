/*
 * framer: cuts a byte stream into syslog messages, RFC 6587 style.
 *
 *   octet counting   "LEN SP MSG", LEN in decimal (RFC 5425, RFC 6587 3.4.1)
 *   newline          "MSG LF", a trailing CR is dropped (RFC 6587 3.4.2)
 *   auto             octet counting when a connection begins with digits,
 *                    a space and the '<' of a syslog priority ("12 <13>..."),
 *                    newline framing otherwise: a line such as "30 connections
 *                    dropped" is a line, not a 30-byte frame
 *
 * A framer is a per-connection state machine fed with whatever the socket
 * returned: frames may be split or joined at any byte.  Messages are handed
 * to a callback, straight from the fed buffer when a message lies whole in
 * it, otherwise from the framer's own buffer, which never grows beyond
 * max-message-size (plus one byte for a CR): an over-long message is cut,
 * delivered once and the rest of it skipped, so a 10 MB line costs no more
 * memory than a long one.  Empty messages are dropped.
 */
#ifndef CORRAL_FRAMER_H
#define CORRAL_FRAMER_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/conf/conf.h"

/*
 * One message: data is valid only during the call.  truncated: the message
 * was longer than the limit and data holds its first max bytes.
 */
typedef void (*framer_cb)(void *arg, const char *data, size_t len, bool truncated);

struct framer {
    enum conf_framing framing; /* as configured */
    int mode;                  /* what this stream turned out to use (FR_* in framer.c) */
    int state;
    size_t max; /* max-message-size */
    char *acc;  /* an incomplete message (octet counting: its first bytes) */
    size_t len, cap;
    size_t want;      /* octet counting: bytes of the frame still to come */
    size_t count;     /* octet counting: the frame's length */
    unsigned ndigits; /* octet counting: digits of the length read so far */
    framer_cb cb;
    void *arg;
};

void framer_init(struct framer *f, enum conf_framing framing, size_t max, framer_cb cb, void *arg);
/* Frees the framer's buffer. */
void framer_free(struct framer *f);
/* Forgets any partial message and detection (a new stream); keeps the buffer. */
void framer_reset(struct framer *f);
/*
 * Feeds bytes.  Returns 0, or -1 when an octet count is malformed: the
 * stream cannot be resynchronised and should be closed; the framer is then
 * reset.
 */
int framer_feed(struct framer *f, const char *data, size_t len);
/*
 * End of the stream: delivers a last unterminated line, or what arrived of
 * an octet-counted frame cut short.  Returns 0, or -1 if such a frame was
 * incomplete (the caller counts it as an error).  Resets the framer.
 */
int framer_eof(struct framer *f);
/*
 * Bytes fed but not delivered yet (an incomplete line): a file input saves
 * its position before them so that a restart reads them again.
 */
size_t framer_pending(const struct framer *f);

#endif
