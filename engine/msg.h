/*
 * msg: a log message as corral sees it: a set of name-value pairs keyed by
 * nv handles, a list of tags, a timestamp and a syslog priority.
 *
 * All value bytes live in one arena owned by the message.  Values set from
 * bytes that are already in the arena (a parsed field of the raw line, a
 * capture out of MESSAGE) are stored as references, not copied, so parsing
 * and classifying a line copies it once.  A message is meant to be reset and
 * reused for the next line; in steady state the per-message path allocates
 * nothing.
 */
#ifndef CORRAL_MSG_H
#define CORRAL_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/nv.h"
#include "engine/tags.h"

struct msg;

/* A point in time with the UTC offset it was written in. */
struct msg_time {
    int64_t sec;    /* seconds since the epoch (UTC) */
    int32_t usec;   /* microseconds, 0..999999 */
    int32_t gmtoff; /* seconds east of UTC of the original stamp */
};

/* Default priority of a message without one: user.notice, as syslog-ng. */
#define MSG_DEFAULT_PRI 13

/* Values longer than this are truncated (and the message flagged). */
#define MSG_MAX_VALUE (16u * 1024 * 1024)

enum msg_flag {
    MSG_F_TRUNCATED = 1 << 0, /* some value or the arena hit a size limit */
    MSG_F_HAS_STAMP = 1 << 1, /* the timestamp came from the message text */
    MSG_F_GENERATED = 1 << 2, /* produced by a rule action */
    MSG_F_SYSLOG = 1 << 3,    /* parsed from a syslog line: has a priority and a date */
};

struct msg *msg_new(void);
struct msg *msg_ref(struct msg *m);
void msg_unref(struct msg *m);
/* Empties the message for reuse, keeping its memory. */
void msg_reset(struct msg *m);
/* A compact deep copy holding only live values. */
struct msg *msg_clone(const struct msg *m);
/* The same, keeping only the values whose keep[handle] is set (all when keep is NULL). */
struct msg *msg_clone_kept(const struct msg *m, const unsigned char *keep);

/* The value of a name, or NULL if unset; *len receives its length. Not NUL-terminated. */
const char *msg_get(const struct msg *m, nv_handle h, size_t *len);
/*
 * Hints the CPU to fetch m (the struct; with body, its values, text and
 * tags, which reads the struct), with write to own the lines for writing: a
 * thread about to read a message another thread wrote (par.c), or to reset
 * and refill a reused one that other threads read since, asks for it ahead.
 * Changes nothing.
 */
void msg_prefetch(const struct msg *m, bool body, bool write);
/* Sets a value, copying the bytes unless they already lie in this message's arena. */
void msg_set(struct msg *m, nv_handle h, const char *val, size_t len);
void msg_unset(struct msg *m, nv_handle h);

/*
 * Appends raw bytes to the arena and returns a pointer to them, valid until
 * the next msg_set/msg_store call.  Parsers store the input line with this and
 * then msg_set slices of it without further copies.
 */
const char *msg_store(struct msg *m, const char *data, size_t len);

/* Number of values set, and the i-th of them in the order they were first set. */
size_t msg_nvalues(const struct msg *m);
nv_handle msg_value_at(const struct msg *m, size_t i, const char **val, size_t *len);

void msg_tag_set(struct msg *m, tag_id t);
void msg_tag_clear(struct msg *m, tag_id t);
bool msg_tag_has(const struct msg *m, tag_id t);
size_t msg_ntags(const struct msg *m);
tag_id msg_tag_at(const struct msg *m, size_t i);

const struct msg_time *msg_stamp(const struct msg *m);
void msg_set_stamp(struct msg *m, const struct msg_time *t);
const struct msg_time *msg_recvd(const struct msg *m);
void msg_set_recvd(struct msg *m, const struct msg_time *t);
int msg_pri(const struct msg *m);
void msg_set_pri(struct msg *m, int pri);
uint32_t msg_flags(const struct msg *m);
void msg_set_flags(struct msg *m, uint32_t flags);

/*
 * A portable binary form of a message (values, tags, stamps, priority,
 * flags), for state files and spools.  msg_decode returns the bytes it used,
 * or 0 if data does not hold a complete, well-formed message.
 */
void msg_encode(const struct msg *m, struct buf *out);
size_t msg_decode(struct msg *m, const char *data, size_t len);

/* Bytes of memory held by the message (for accounting). */
size_t msg_memory(const struct msg *m);

#endif
