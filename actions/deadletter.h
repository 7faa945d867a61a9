/*
 * deadletter: the dead-letter file of executors, one JSON object a line, for
 * people (jq, grep) and for `corral queue`, which lists its entries, puts
 * them back in their executor's queue (retry) or removes them (drop):
 *
 *   {"id":"d1764806400123-42","time":"2026-12-04T00:00:00+00:00",
 *    "executor":"mail","reason":"550 no such user","attempts":1,
 *    "alert_id":"ssh.bruteforce/web1","message":{...},"encoded":"0d00..."}
 *
 * id names the entry for good: "d" + the ms it was written + "-" + its spool
 * seq.  encoded is the alert exactly as the spool holds it (msg_encode, in
 * hex), so a retry delivers what would have been delivered; message is the
 * same for people.  Lines written before ids existed get "h" + a hash of the
 * line as id, and are retried from message (its string values and TAGS).
 * Several executors may share one file: each line says whose it is.  A line
 * that is not such an object is kept as it is and counted, never dropped.
 *
 * Removing entries (retry, drop) rewrites the file atomically (durable.h):
 * deadletter_remove_begin writes the new contents beside it, and the
 * caller commits (renames) once it has made the entries' new home durable.
 */
#ifndef CORRAL_DEADLETTER_H
#define CORRAL_DEADLETTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/durable.h"
#include "engine/msg.h"

/* Longest line read back (a message is at most 256M; its hex twice that, and JSON again). */
#define DEADLETTER_MAX_FILE DURABLE_MAX_STATE

struct deadletter {
    char *id, *executor, *time, *reason, *alert_id;
    uint32_t attempts;
    struct msg *msg; /* the alert to deliver again; NULL: the line does not give one */
    size_t off, len; /* the line in the file, its newline included */
};

struct deadletter_list {
    struct deadletter *v;
    size_t n, cap;
    size_t unreadable; /* lines that are not a dead letter (kept as they are) */
};

/* The line for one dead letter (with its newline) appended to out; seq: its spool seq. */
void deadletter_format(struct buf *out, uint64_t now_ms, uint64_t seq, const char *executor,
                       const char *reason, uint32_t attempts, const char *alert_id,
                       const struct msg *m);
/* Appends it to path (created 0600) and syncs; 0 or -1 with errno. */
int deadletter_append(const char *path, const char *line, size_t len);
/* Reads a file's contents: every line that is a dead letter, in file order. */
void deadletter_parse(const char *data, size_t len, struct deadletter_list *out);
/*
 * Reads path (a missing file has no entries); *data (freed by the caller)
 * holds the contents that the entries' off and len refer to.  0, or -1 with
 * errno.
 */
int deadletter_read(const char *path, struct deadletter_list *out, char **data, size_t *len);
void deadletter_list_free(struct deadletter_list *l);
/*
 * Writes, beside path, the file without the entries of l for which remove[i]
 * is set (every other byte as it was); durable_commit(df) puts it in place,
 * durable_abort(df) forgets it.  0, or -1 with errno (nothing changed).
 */
int deadletter_remove_begin(struct durable_file *df, const char *path, const char *data, size_t len,
                            const struct deadletter_list *l, const bool *remove);

#endif
