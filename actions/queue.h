/*
 * queue: the delivery machinery in front of one executor.  Every alert
 * routed to the executor is written to an on-disk spool before anything
 * else happens, then delivered at most max_inflight at a time; a failure
 * for now is retried with exponential backoff and jitter; an alert that
 * fails for good, or runs out of attempts, goes to the dead-letter file with
 * the reason.  Rate limits and de-duplication run before the spool, so that
 * a flood of events cannot flood an inbox or fork-bomb the host.
 *
 * Durability: the spool is an append-only file of records (an alert, or
 * "alert N is done").  Records appended while handling one batch of input
 * are fdatasync'ed before corrald reads the next batch.  At start, the spool
 * is replayed: alerts without a done record are delivered again (at least
 * once), so after a crash an alert that was delivered but whose done record
 * was not yet on disk is delivered twice; at most max_inflight such
 * duplicates per executor.  Then the spool is rewritten with just the
 * pending alerts, and again while running when more than 1000 of its
 * records, and 4 times as many as the alerts pending, are dead (delivered
 * alerts and their done records), or when it holds dead records and more
 * than QUEUE_MAX_BYTES, and 4 times the memory of the alerts pending.
 *
 * The file (version 2): the header "CORRALSP2\n", then records of
 *   4 bytes  magic C0 52 4C 9A (QUEUE_SPOOL_MAGIC)
 *   1        type: 'A' an alert, 'D' alert seq is done, 'R' an alert that
 *            retries a dead letter (payload: u32 length of the dead
 *            letter's id, the id, then the alert as for 'A')
 *   8        seq, little-endian
 *   4        payload length, little-endian
 *   4        CRC-32 of the payload
 *   4        CRC-32 of the 21 bytes above
 *   payload  the alert (msg_encode), empty for a done record
 * Recovery: a record counts only when both CRCs match.  A record whose
 * header checks out but whose payload does not is skipped by its length;
 * anywhere else the reader scans forward to the next magic whose record
 * checks out.  So a damaged byte loses the one record holding it (or, in a
 * damaged header, whatever stretch it makes unreadable, never a good record
 * after it), and each bad stretch is logged and counted (spool_corrupt).  A
 * bad stretch at the end is a torn record (a crash while writing it).  A
 * spool in which anything was skipped is kept beside the new one as
 * NAME.spool.corrupt before the rewrite, so nothing is compacted away unseen.
 * A version 1 spool ("CORRALSP1\n", no resynchronisation: it ends at the
 * first bad record) is still read, and rewritten as version 2 at start.
 *
 * Delivery control (`corral queue`): queue_list_json lists what is queued,
 * retrying and dead; queue_retry_dead puts dead letters back; queue_drop
 * removes one entry.  Queued entries are named "q" + their spool seq, dead
 * letters by their id in the dead-letter file (deadletter.h).  A retry
 * takes each dead letter out of the dead-letter file exactly once:
 *   1. the file without them is written beside it (not yet in place);
 *   2. they are appended to the spool as 'R' records, an alert with the id
 *      of the dead letter it retries, in one write, and synced;
 *   3. the new dead-letter file is renamed into place (and synced).
 * A crash before 2 is on disk leaves them dead letters only (retry again);
 * after it, the spool has them, and the next start takes what the
 * dead-letter file still holds of them out of it before delivering them
 * (settle_retried).  So a retried alert is never lost, and never both
 * queued and a dead letter after a start; it is delivered at least once,
 * with the spool's duplicates after a crash (above), and retrying the same
 * id twice finds nothing the second time.  Without a spool there is no
 * such guarantee (nothing of the queue survives a crash).  A dropped entry
 * gets a done record (queued) or leaves the file by the same atomic rewrite
 * (dead).  Retried and dropped entries are counted and logged.
 *
 * Write errors (a full disk): a record that cannot be written is cut off
 * again (ftruncate), so no torn bytes lie between good records, and the
 * queue goes on in memory only: the alert is queued as usual (within
 * queue=, counted in memory_only and unspooled), nothing more is appended,
 * and once a second (and at close) the spool catches up: the done records
 * it missed (of alerts delivered meanwhile; past 65,536 of them, a
 * rewrite instead) and the alerts held in memory only are appended to it,
 * in seq order after the records it has, and synced; a failed attempt is
 * cut off again.  So catching up needs room for the missing records only,
 * not for a second copy of the spool; a compaction (above) that finds no
 * room leaves the old file and is tried again a minute later.  When the
 * file cannot be trusted to end where its last whole record did (a sync
 * failed, a cut back failed, it is gone, or it was not written at start:
 * corrald starts on a full disk this way), catching up is a rewrite of
 * the whole spool from memory.  Alerts that were only in memory are lost
 * in a crash meanwhile, and alerts delivered meanwhile may come back
 * once.  Errors are logged once, then at most once a minute with the
 * count.
 */
#ifndef CORRAL_QUEUE_H
#define CORRAL_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "engine/buf.h"
#include "actions/executor.h"
#include "engine/msg.h"

struct queue;

/* Dedupe keys an executor always remembers (the newest); from 1.5 times as
 * many, the oldest are forgotten early. */
#define QUEUE_DEDUPE_MAX 65536

/*
 * Hard bounds of a queue, beside queue=: the memory of the alerts it holds
 * (msg_memory; queue_full from half of it), and how far past queue= alerts
 * submitted with queue_submit_keep may go.  What would exceed them is
 * refused and counted in dropped_full.
 */
#define QUEUE_MAX_BYTES  (16u * 1024 * 1024)
#define QUEUE_KEEP_EXTRA 10000

struct queue_stats {
    uint64_t submitted;        /* alerts routed here */
    uint64_t delivered;        /* delivered successfully */
    uint64_t retries;          /* delivery attempts that failed for now */
    uint64_t dead;             /* written to the dead-letter file */
    uint64_t dropped_full;     /* refused: queue full (alerts or bytes, QUEUE_MAX_BYTES) */
    uint64_t deduplicated;     /* dropped: same dedupe key within the window */
    uint64_t dedupe_forgotten; /* keys forgotten early: more than QUEUE_DEDUPE_MAX in the window */
    uint64_t rate_limited;     /* dropped: over the rate */
    uint64_t queued;           /* waiting now (including retries) */
    uint64_t inflight;         /* being delivered now */
    uint64_t recovered;        /* taken over from the spool at start */
    uint64_t spool_corrupt; /* bad stretches of the spool skipped at start (torn tail included) */
    uint64_t spool_errors;  /* spool writes, syncs and rewrites that failed */
    uint64_t memory_only;   /* alerts accepted while the spool could not be written */
    uint64_t unspooled;     /* alerts queued now that are in memory only */
    uint64_t retried;       /* dead letters queued again (corral queue retry) */
    uint64_t dropped;       /* queued alerts and dead letters dropped (corral queue drop) */
};

/*
 * Opens the executor described by cfg and its queue; spool_dir holds the
 * spool (NULL: no spool, alerts live in memory only).  Returns NULL with
 * "FILE:LINE: message" lines in err.
 */
struct queue *queue_open(uv_loop_t *loop, const struct exconf *cfg, const char *conf_file,
                         const char *spool_dir, struct buf *err);
/* Routes a generated message to this executor (copied); dropped and counted when the queue is full.
 */
void queue_submit(struct queue *q, const struct msg *m);
/*
 * The same for a message that comes from an input the caller pauses once
 * queue_full() (back-pressure): kept even past the queue's size, by at most
 * QUEUE_KEEP_EXTRA alerts and within QUEUE_MAX_BYTES.
 */
void queue_submit_keep(struct queue *q, const struct msg *m);
/* What became of an alert, for an observer (corrald's alert store). */
enum queue_event {
    QUEUE_EV_QUEUED,    /* accepted, waiting for delivery */
    QUEUE_EV_DELIVERED, /* the receiver has it */
    QUEUE_EV_RETRYING,  /* an attempt failed for now; retried later */
    QUEUE_EV_DEAD,      /* given up: in the dead-letter file */
    QUEUE_EV_DROPPED,   /* refused: a duplicate, over the rate, or the queue full */
};
typedef void (*queue_observer_fn)(void *arg, const char *executor, const struct msg *m,
                                  enum queue_event ev);
/* fn (NULL: none) learns each event of q's alerts, on the loop, as it happens. */
void queue_set_observer(struct queue *q, queue_observer_fn fn, void *arg);
/* Holds its `queue` alerts or more: inputs feeding it should wait. */
bool queue_full(const struct queue *q);
/* Holds half its `queue` alerts or fewer: waiting inputs may go on. */
bool queue_low(const struct queue *q);
/* Makes what was submitted durable now (the server calls it once per input batch). */
void queue_sync(struct queue *q);
/* Writes what the executor would send for m (dry run). */
void queue_render(struct queue *q, const struct msg *m, struct buf *out);
/*
 * A reload replaced from (about to be closed) with to, the same executor
 * configured anew: to takes over the alerts from holds, those waiting now
 * and those whose delivery from's close cuts short (or that fail for now),
 * when from has closed, so that a queue without a spool loses nothing.
 * Nothing to do when both use the same spool: to read it when it opened.
 */
void queue_handover(struct queue *from, struct queue *to);
/* Whether a and b use the same spool file. */
bool queue_same_spool(const struct queue *a, const struct queue *b);
/*
 * Writes q's spool anew from the alerts q holds.  For a reload that opened
 * a queue on q's spool file and then gave it up: opening it replaced the
 * file (its replay rewrites it), and q's records since went to the file
 * it replaced, which no start would read.
 */
void queue_respool(struct queue *q);
/* Stops delivering; alerts still queued stay in the spool for the next start. */
void queue_close(struct queue *q, void (*done)(void *arg), void *arg);
const char *queue_name(const struct queue *q);

/*
 * The executor's queue as a JSON object, for `corral queue list` and the
 * HTTP API: {"executor", "queued": [{"id": "q7", "state": "queued",
 * "retrying" or "delivering", "attempts", "alert_id", "severity",
 * "next_attempt", "host", "message"}], "queued_total", "dead_letter_file",
 * "dead": [{"id", "state": "dead", "time", "attempts", "alert_id",
 * "reason", "retryable", "host", "message"}], "dead_total"}; each list
 * holds the first max entries (the totals count them all).  The caller
 * owns the result (json_decref).
 */
struct json_t; /* jansson's json_t */
struct json_t *queue_list_json(struct queue *q, size_t max);

/* What queue_retry_dead and queue_drop did; a line saying it is in out. */
enum queue_ctl_result {
    QUEUE_CTL_OK,
    QUEUE_CTL_UNKNOWN, /* no such entry: nothing changed */
    QUEUE_CTL_FAILED,  /* an I/O error, or the entry is being delivered (see out) */
};
/* Queues again the dead letter id of this executor, or all of them (id NULL). */
int queue_retry_dead(struct queue *q, const char *id, struct buf *out);
/* Drops queued alert "qSEQ" (not while it is being delivered) or dead letter id. */
int queue_drop(struct queue *q, const char *id, struct buf *out);
const struct queue_stats *queue_get_stats(const struct queue *q);

/* ---- the spool format, for tests and the fuzzer (see the top) ---- */

#define QUEUE_SPOOL_HEADER    "CORRALSP2\n"
#define QUEUE_SPOOL_HEADER_V1 "CORRALSP1\n"
#define QUEUE_SPOOL_MAGIC     "\xc0\x52\x4c\x9a"
#define QUEUE_REC_ALERT       'A'
#define QUEUE_REC_DONE        'D'
#define QUEUE_REC_RETRIED     'R'

/* Appends one version 2 record to out. */
void queue_spool_frame(struct buf *out, char type, uint64_t seq, const void *payload, size_t len);

struct queue_scan {
    int version;          /* 2, 1, or 0: no valid header (read as version 2 all the same) */
    size_t records;       /* good records */
    size_t corrupt;       /* bad stretches skipped, the torn tail included */
    size_t corrupt_bytes; /* their bytes */
    size_t tail_bytes;    /* of those, the torn tail's (no good record after it) */
};

/* Called for each good record; payload points into the scanned data. */
typedef void queue_scan_fn(void *arg, char type, uint64_t seq, const void *payload, size_t len);

/* Splits an 'R' record's payload; false when it is not one. */
bool queue_spool_retried(const void *payload, size_t len, const char **dead_id, size_t *idlen,
                         const void **alert, size_t *alen);

/* Reads a whole spool file's contents: fn gets each good record in file order. */
void queue_spool_scan(const void *data, size_t len, queue_scan_fn *fn, void *arg,
                      struct queue_scan *res);

#endif
