/*
 * silences: "we know, stop paging": Alertmanager's silences in corrald.  A
 * silence has an id (random, UUID-shaped), label matchers (labelmatch.h),
 * a start and an end, its creator and a comment.  While a silence is active
 * (start <= now < end), an alert it matches is recorded as silenced in the
 * alert store and sent to no executor (server.c asks silences_match).
 *
 * Silences are saved to their own file (PATH: the state file's name with
 * ".silences", see server.c), or given to a store instead (a cluster's
 * bucket, silences_set_store), with durable_replace on every change, before
 * the change is answered: a silence that `corral silence add` reported
 * survives a kill -9 right after, and a change that cannot be saved (a
 * full disk) is undone and refused with the reason.  A damaged record in
 * the file costs that silence only.  As in Alertmanager, a silence needs a
 * matcher that does not match the empty string: HOST=~".*" alone, or
 * HOST!=web1 alone, would silence every alert without a HOST.  A silence that has ended is kept for
 * the retention period (`silence-retention`, default 5 days) so that `silence list --expired` shows
 * it, then dropped.  At most `max-silences` (default 10000) are kept, expired ones included; adding
 * one more is refused.
 *
 * The operations take and give JSON (jansson), the same for the control
 * socket (control.c, `corral silence`) and the HTTP API:
 *
 *   add:    {"matchers":["HOST=web1", ...], "duration":"2h" | "endsAt":T,
 *            "startsAt":T, "createdBy":"...", "comment":"..."}
 *           T: seconds since the epoch, or ISO 8601 ("2026-12-04T18:00:00Z")
 *   list:   [{"id","matchers":[{"name","value","isRegex","isEqual"}],
 *             "matchersText","startsAt","endsAt","createdBy","comment",
 *             "status":{"state":"active"|"pending"|"expired"}}, ...]
 */
#ifndef CORRAL_SILENCES_H
#define CORRAL_SILENCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/labelmatch.h"
#include "engine/msg.h"

#define SILENCES_RETENTION_DEFAULT (5 * 86400.0)
#define SILENCES_MAX_DEFAULT       10000
#define SILENCES_ID_LEN            36

struct silences;
/* jansson's json_t */
struct json_t;

struct silences_stats {
    uint64_t added, expired, dropped; /* dropped: forgotten after the retention period */
    uint64_t save_errors;
    uint64_t load_errors; /* damaged records skipped (or an unreadable file) at the start */
};

/*
 * The silences saved in path (NULL: memory only).  A missing file is an
 * empty set; damaged records are skipped, counted (load_errors) and
 * logged; the file as read is copied to PATH.corrupt and written again
 * with the silences that were intact.
 */
struct silences *silences_new(const char *path, double retention_s, size_t max, uint64_t now_ms);
void silences_free(struct silences *s);
/* A reload: the new limits. */
void silences_set_limits(struct silences *s, double retention_s, size_t max);
/*
 * A reload that names another state file: the silences move to path (NULL:
 * memory only from now on), saved there at once so that a restart with the
 * new configuration finds them.  The old file is left as it is.
 */
void silences_set_path(struct silences *s, const char *path);

/*
 * Adds a silence from a JSON request and saves the file; 0 and its id in
 * id, or -1 with a message in err and nothing added (the save failed too).
 */
int silences_add_json(struct silences *s, const struct json_t *req, uint64_t now_ms, struct buf *id,
                      struct buf *err);
/*
 * Changes silence id as Alertmanager's POST of a silence with an id does
 * (amtool's `silence update`): the request is add's, and a member it
 * lacks keeps the old value (the start, the end, matchers, createdBy,
 * comment).  With the same matchers, an active silence with the same start
 * (to the second) or a pending one whose start is not in the past is
 * updated in place and keeps its id; otherwise a new silence (with a new
 * id, starting now at the earliest) replaces it and the old one is expired.
 * 0 and the (new) id in new_id, or -1 with a message in err and nothing
 * changed (an unknown id, a bad request, the save failed).
 */
int silences_update_json(struct silences *s, const char *id, const struct json_t *req,
                         uint64_t now_ms, struct buf *new_id, struct buf *err);
/*
 * Ends the silences ids now and saves the file (all, or none and -1 with a
 * message in err: one unknown or ended, or the save failed).
 */
int silences_expire(struct silences *s, const char *const *ids, size_t n, uint64_t now_ms,
                    struct buf *err);
/*
 * Appends a JSON array of the silences: active and pending ones, and ended
 * ones too with expired; with query, only those whose matchers' labels it
 * matches (`silence query HOST=web1` lists the silences that name web1).
 */
void silences_json(struct silences *s, const struct labelmatch *query, bool expired,
                   uint64_t now_ms, struct buf *out);
/* The same array as a jansson value; the caller owns it (json_decref). */
struct json_t; /* jansson's json_t */
struct json_t *silences_to_json(struct silences *s, const struct labelmatch *query, bool expired,
                                uint64_t now_ms);
/* The id of an active silence that matches m, or NULL. */
const char *silences_match(struct silences *s, const struct msg *m, uint64_t now_ms);
/* Drops silences ended more than the retention period ago (saves when it dropped any). */
void silences_tick(struct silences *s, uint64_t now_ms);

/*
 * A store instead of the file (a cluster's bucket, cluster_silences.c):
 * every change of a silence is given to fn, before it is answered, as its
 * record (compact JSON, with its updatedAt) or, dropped after the
 * retention period, as NULL; fn returns 0, or -1 with the reason in err
 * (err may be NULL), and the change is then undone and refused.
 */
typedef int (*silences_store_fn)(void *arg, const char *id, const char *rec, size_t len,
                                 int64_t updated_ms, struct buf *err);
void silences_set_store(struct silences *s, silences_store_fn fn, void *arg);
/*
 * A record of the store, changed elsewhere: taken unless the silence here
 * has an updatedAt as new or newer (Alertmanager's merge).  1 when it
 * changed the set, 0 when not, -1 (counted in load_errors) when damaged.
 */
int silences_apply(struct silences *s, const char *rec, size_t len, struct buf *err);
/* Forgets silence id (deleted from the store elsewhere); whether it was here. */
bool silences_forget(struct silences *s, const char *id);
size_t silences_count(const struct silences *s);
size_t silences_active(const struct silences *s, uint64_t now_ms);
const struct silences_stats *silences_get_stats(const struct silences *s);

#endif
