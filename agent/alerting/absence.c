/*
 * absence: sources (host, or host and program) each with a timer armed at
 * last-seen + after; a message re-arms it, expiry reports the absence and
 * re-arms it at last-seen + forget, when the source is forgotten.  The
 * engine's timer wheel keeps this O(1) per message however many sources
 * there are; a hash table finds a message's source.  Times are monotonic
 * (clock_mono_ms): a step of the wall clock neither reports nor hides an
 * absence; the reports' stamps are wall time (absence_wall_clock()).
 *
 * Host names come from the messages, so anyone who can send can make up
 * sources or speak for a real one:
 *   - a source is bound to the address it was first seen from (SOURCEIP;
 *     none for local inputs): messages naming it from another address are
 *     counted (foreign) and neither refresh nor resolve it, so a spoofed
 *     datagram cannot hide an outage (<absence address="any"> unbinds);
 *   - at most max_sources are tracked.  A source seen once is on probation
 *     until its second message: when the table is full, the oldest source
 *     on probation makes room (evicted), so that made-up names, each sent
 *     once, cannot keep a real new host out; only when every source has
 *     been seen twice are messages from new ones counted (untracked) and
 *     logged at most once a minute.  Forgetting the long silent ones frees
 *     room too.
 */
#include "agent/alerting/absence.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/macros.h"
#include "engine/timerwheel.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_EVERY   60000 /* ms between two lines about untracked sources or foreign senders */
#define SUMMARY_MAX 120   /* bytes of corral.summary */

struct source {
    struct tw_timer timer; /* first member */
    struct hash_node node; /* in keys, by key */
    const struct conf_absence *rule;
    size_t rule_index;
    char *key; /* "RULE:host\0program", keylen bytes */
    size_t keylen;
    char *host, *program; /* program NULL: the host as a whole */
    char *addr;           /* SOURCEIP it is bound to; NULL: none (a local input) */
    size_t addrlen;
    struct source *pprev, *pnext; /* probation list, while seen once */
    bool probation;
    uint64_t last_seen; /* monotonic ms */
    uint64_t seen_wall; /* last_seen as wall ms, kept as taken: the reports' stamps */
    int silent;
};

struct absence {
    const struct conf_absence *rules;
    size_t nrules;
    struct tw *wheel;
    struct hash_table keys; /* the sources */
    size_t max_sources, ndown;
    uint64_t untracked, forgotten, evicted, foreign;
    uint64_t untracked_logged; /* ms of the last line about them; 0: none yet */
    uint64_t untracked_since;  /* untracked messages not logged since */
    uint64_t foreign_logged, foreign_since;
    uint64_t changes;             /* reports made and sources forgotten: a checkpoint is due */
    struct source *phead, *ptail; /* on probation, oldest first */
    uint64_t (*wall)(uint64_t mono_ms);
    absence_emit_fn emit;
    void *arg;
    struct buf key;
};

static tag_id tag_absence, tag_alert, tag_clear;
static nv_handle h_state, h_after, h_last, h_since, h_alert_id, h_severity, h_event, h_summary;

struct absence *
absence_new(const struct conf_absence *rules, size_t nrules, size_t max_sources, uint64_t now_ms,
            absence_emit_fn emit, void *arg)
{
    struct absence *s = xcalloc(1, sizeof(*s));

    s->rules = rules;
    s->nrules = nrules;
    s->wheel = tw_new(now_ms);
    hash_table_init(&s->keys, 64);
    s->max_sources = max_sources;
    s->emit = emit;
    s->arg = arg;
    if (!tag_absence) {
        tag_absence = tag_intern("corral.absence", 14);
        tag_alert = tag_intern("corral.alert", 12);
        tag_clear = tag_intern("corral.clear", 12);
        h_state = nv_intern_str("absence.state");
        h_after = nv_intern_str("absence.after");
        h_last = nv_intern_str("absence.last_seen");
        h_since = nv_intern_str("corral.since");
        h_alert_id = nv_intern_str("corral.alert_id");
        h_severity = nv_intern_str("corral.severity");
        h_event = nv_intern_str("corral.event");
        h_summary = nv_intern_str("corral.summary");
    }
    return s;
}

void
absence_wall_clock(struct absence *s, uint64_t (*wall)(uint64_t mono_ms))
{
    s->wall = wall;
}

static void
source_free(struct source *src)
{
    free(src->key);
    free(src->host);
    free(src->program);
    free(src->addr);
    free(src);
}

/* Puts a source on probation, newest last. */
static void
probation_push(struct absence *s, struct source *src)
{
    src->probation = true;
    src->pnext = NULL;
    src->pprev = s->ptail;
    if (s->ptail)
        s->ptail->pnext = src;
    else
        s->phead = src;
    s->ptail = src;
}

static void
probation_remove(struct absence *s, struct source *src)
{
    if (!src->probation) return;
    if (src->pprev)
        src->pprev->pnext = src->pnext;
    else
        s->phead = src->pnext;
    if (src->pnext)
        src->pnext->pprev = src->pprev;
    else
        s->ptail = src->pprev;
    src->pprev = src->pnext = NULL;
    src->probation = false;
}

/* Stops watching a source (forgotten or evicted), without a report. */
static void
source_drop(struct absence *s, struct source *src)
{
    tw_cancel(s->wheel, &src->timer);
    hash_table_remove(&s->keys, &src->node);
    probation_remove(s, src);
    if (src->silent) s->ndown--;
    source_free(src);
}

void
absence_free(struct absence *s)
{
    struct hash_node *n, *next;
    size_t b = 0;

    if (!s) return;
    for (n = hash_table_iter(&s->keys, &b, NULL); n; n = next) {
        next = hash_table_iter(&s->keys, &b, n);
        source_free(hash_entry(n, struct source, node));
    }
    hash_table_free(&s->keys);
    tw_free(s->wheel);
    buf_free(&s->key);
    free(s);
}

/* When a source last seen at last_seen is forgotten (UINT64_MAX: never). */
static uint64_t
forget_at(const struct source *src)
{
    if (src->rule->forget <= 0) return UINT64_MAX;
    return src->last_seen + (uint64_t)(src->rule->forget * 1000);
}

static bool
matches(const struct conf_absence *r, const char *host, size_t hlen, const char *prog, size_t plen)
{
    if (r->host && (strlen(r->host) != hlen || memcmp(r->host, host, hlen))) return false;
    if (r->program && (strlen(r->program) != plen || memcmp(r->program, prog, plen))) return false;
    return true;
}

/* At most SUMMARY_MAX bytes of text, not cutting a UTF-8 sequence. */
static size_t
summary_len(const char *text, size_t len)
{
    if (len <= SUMMARY_MAX) return len;
    len = SUMMARY_MAX;
    while (len && ((unsigned char)text[len] & 0xC0) == 0x80) len--;
    return len;
}

/*
 * A report is an alert (tag corral.alert) with the labels of the alert
 * contract; "down" and "up" share corral.alert_id corral.absence/HOST[/PROGRAM],
 * so that the alert store resolves the first with the second (tag corral.clear)
 * and SNMP pairs them.
 */
static void
report(struct absence *s, struct source *src, bool down, uint64_t now_ms)
{
    struct msg *m = msg_new();
    uint64_t wall = s->wall ? s->wall(now_ms) : now_ms;
    uint64_t seen = src->seen_wall;
    struct msg_time t = {(int64_t)(wall / 1000), (int32_t)(wall % 1000) * 1000, 0};
    struct msg_time last = {(int64_t)(seen / 1000), 0, 0};
    struct buf text = BUF_INIT;
    uint64_t quiet = (now_ms - src->last_seen) / 1000;
    const char *sev = src->rule->severity ? src->rule->severity : "warning";

    msg_set_stamp(m, &t);
    msg_set_recvd(m, &t);
    msg_set_flags(m, MSG_F_GENERATED);
    msg_set(m, NV_HOST, src->host, strlen(src->host));
    msg_set(m, NV_PROGRAM, src->program ? src->program : "corrald",
            strlen(src->program ? src->program : "corrald"));
    if (down)
        buf_printf(&text, "%s%s%s has been silent for %llu seconds", src->host,
                   src->program ? " " : "", src->program ? src->program : "",
                   (unsigned long long)quiet);
    else
        buf_printf(&text, "%s%s%s is sending again after %llu seconds", src->host,
                   src->program ? " " : "", src->program ? src->program : "",
                   (unsigned long long)quiet);
    msg_set(m, NV_MESSAGE, text.p, text.len);
    msg_set(m, h_summary, text.p, summary_len(text.p, text.len));
    msg_set(m, NV_CLASS, "absence", 7);
    msg_set(m, NV_RULE_ID, down ? "corral.absence.down" : "corral.absence.up", down ? 19 : 17);
    msg_set(m, h_state, down ? "down" : "up", down ? 4 : 2);
    buf_reset(&text);
    buf_printf(&text, "%g", src->rule->after);
    msg_set(m, h_after, text.p, text.len);
    buf_reset(&text);
    macro_format_iso(&last, 0, &text);
    msg_set(m, h_last, text.p, text.len);
    /* since when it was quiet (to the millisecond): an inhibition by this report covers the
     * lines stamped after the last one it received */
    buf_reset(&text);
    last.usec = (int32_t)(seen % 1000) * 1000;
    macro_format_iso(&last, 3, &text);
    msg_set(m, h_since, text.p, text.len);
    msg_set(m, h_severity, sev, strlen(sev));
    msg_set(m, h_event, down ? "absence.down" : "absence.up", down ? 12 : 10);
    buf_reset(&text);
    buf_printf(&text, "corral.absence/%s", src->host);
    if (src->program) buf_printf(&text, "/%s", src->program);
    msg_set(m, h_alert_id, text.p, text.len);
    msg_tag_set(m, tag_absence);
    msg_tag_set(m, tag_alert);
    if (!down) msg_tag_set(m, tag_clear);
    s->changes++;
    s->emit(s->arg, m);
    msg_unref(m);
    buf_free(&text);
}

static void
fire(struct tw_timer *t, void *arg)
{
    struct absence *s = arg;
    struct source *src = (struct source *)t;

    if (src->silent) {
        /* silent for `forget`: make room; should it send again, it is a new source */
        s->forgotten++;
        s->changes++;
        source_drop(s, src);
        return;
    }
    src->silent = 1;
    s->ndown++;
    report(s, src, true, tw_now(s->wheel));
    if (forget_at(src) != UINT64_MAX) tw_arm(s->wheel, &src->timer, forget_at(src));
}

static struct source *
find(struct absence *s, const char *key, size_t len, uint64_t h)
{
    struct hash_node *n;

    for (n = hash_table_find(&s->keys, h); n; n = hash_table_find_next(n)) {
        struct source *src = hash_entry(n, struct source, node);
        if (src->keylen == len && memcmp(src->key, key, len) == 0) return src;
    }
    return NULL;
}

/*
 * A new source under s->key, bound to addr (NULL: none), on probation; when
 * max_sources are tracked, the oldest on probation makes room, and without
 * one NULL (counted).
 */
static struct source *
add(struct absence *s, size_t rule_index, const char *host, size_t hlen, const char *prog,
    size_t plen, const char *addr, size_t alen, uint64_t h, uint64_t now_ms)
{
    const struct conf_absence *r = &s->rules[rule_index];
    struct source *src;

    if (s->keys.count >= s->max_sources && s->phead) {
        s->evicted++;
        source_drop(s, s->phead);
    }
    if (s->keys.count >= s->max_sources) {
        s->untracked++;
        s->untracked_since++;
        if (!s->untracked_logged || now_ms - s->untracked_logged >= LOG_EVERY) {
            log_msg(LOG_WARNING,
                    "absence: %zu sources tracked already (the limit): %llu messages from "
                    "sources not tracked (%llu in all); the first is %.*s",
                    s->keys.count, (unsigned long long)s->untracked_since,
                    (unsigned long long)s->untracked, (int)(hlen > 200 ? 200 : hlen), host);
            s->untracked_logged = now_ms ? now_ms : 1;
            s->untracked_since = 0;
        }
        return NULL;
    }
    src = xcalloc(1, sizeof(*src));
    tw_timer_init(&src->timer);
    src->rule = r;
    src->rule_index = rule_index;
    src->key = xmalloc(s->key.len + 1);
    memcpy(src->key, s->key.p, s->key.len);
    src->keylen = s->key.len;
    src->host = xstrndup(host, hlen);
    src->program = r->program ? xstrndup(prog, plen) : NULL;
    if (addr) {
        src->addr = xstrndup(addr, alen);
        src->addrlen = alen;
    }
    hash_table_add(&s->keys, &src->node, h);
    probation_push(s, src);
    return src;
}

static void
make_key(struct absence *s, size_t rule_index, const char *host, size_t hlen, const char *prog,
         size_t plen)
{
    buf_reset(&s->key);
    buf_printf(&s->key, "%zu:", rule_index);
    buf_append(&s->key, host, hlen);
    if (s->rules[rule_index].program) {
        buf_putc(&s->key, '\0');
        buf_append(&s->key, prog, plen);
    }
}

/* Whether a message from addr (NULL: none) may speak for src. */
static bool
bound_to(const struct source *src, const char *addr, size_t alen)
{
    if (src->rule->any_address) return true;
    if (!src->addr || !addr) return !src->addr && !addr;
    return src->addrlen == alen && memcmp(src->addr, addr, alen) == 0;
}

static void
count_foreign(struct absence *s, const struct source *src, const char *addr, size_t alen,
              uint64_t now_ms)
{
    s->foreign++;
    s->foreign_since++;
    if (s->foreign_logged && now_ms - s->foreign_logged < LOG_EVERY) return;
    log_msg(LOG_WARNING,
            "absence: %llu messages (%llu in all) naming a watched source from another address "
            "than the one it is bound to, not counted as the source's; the first: %.*s from %.*s "
            "(bound to %s)",
            (unsigned long long)s->foreign_since, (unsigned long long)s->foreign,
            (int)(strlen(src->host) > 200 ? 200 : strlen(src->host)), src->host,
            addr ? (int)(alen > 64 ? 64 : alen) : 10, addr ? addr : "no address",
            src->addr ? src->addr : "no address");
    s->foreign_logged = now_ms ? now_ms : 1;
    s->foreign_since = 0;
}

void
absence_seen(struct absence *s, const struct msg *m, uint64_t now_ms)
{
    absence_seen_at(s, m, now_ms, 0);
}

void
absence_seen_at(struct absence *s, const struct msg *m, uint64_t now_ms, uint64_t wall_ms)
{
    uint64_t wall_now = s->wall ? s->wall(now_ms) : now_ms, seen = now_ms;
    size_t hlen = 0, plen = 0, alen = 0, i;
    const char *host = msg_get(m, NV_HOST, &hlen), *prog = msg_get(m, NV_PROGRAM, &plen);
    const char *addr = msg_get(m, NV_SOURCEIP, &alen);

    if (!host) host = "", hlen = 0;
    if (!prog) prog = "", plen = 0;
    /* a record's stamp, earlier than now: seen that long ago on the monotonic clock too */
    if (!wall_ms || wall_ms > wall_now)
        wall_ms = wall_now;
    else
        seen = now_ms - (wall_now - wall_ms > now_ms ? now_ms : wall_now - wall_ms);
    absence_tick(s, now_ms);
    for (i = 0; i < s->nrules; i++) {
        const struct conf_absence *r = &s->rules[i];
        struct source *src;
        uint64_t h;

        if (!matches(r, host, hlen, prog, plen)) continue;
        make_key(s, i, host, hlen, prog, plen);
        h = hash_string(s->key.p, s->key.len);
        src = find(s, s->key.p, s->key.len, h);
        if (!src) {
            if (!(src = add(s, i, host, hlen, prog, plen, addr, alen, h, now_ms))) continue;
        } else if (!bound_to(src, addr, alen)) {
            count_foreign(s, src, addr, alen, now_ms);
            continue;
        } else {
            probation_remove(s, src); /* seen twice: no longer the first to make room */
        }
        if (src->silent) {
            src->silent = 0;
            s->ndown--;
            report(s, src, false, now_ms);
        }
        if (seen >= src->last_seen) { /* else it has word of a later message already */
            src->last_seen = seen;
            src->seen_wall = wall_ms;
        }
        tw_arm(s->wheel, &src->timer, src->last_seen + (uint64_t)(r->after * 1000));
    }
}

static bool
same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Sources in the order they were last seen (messages of one millisecond as they came). */
static int
by_last_seen(const void *a, const void *b)
{
    const struct source *x = *(const struct source *const *)a,
                        *y = *(const struct source *const *)b;

    if (x->last_seen != y->last_seen) return x->last_seen < y->last_seen ? -1 : 1;
    return x->timer.seq < y->timer.seq ? -1 : x->timer.seq > y->timer.seq;
}

/* A source as another watcher had it (a reload's, a checkpoint's). */
struct was {
    const char *rule_host, *rule_program; /* the rule's: NULL: any */
    const char *host, *program;           /* program NULL: the host as a whole */
    const char *addr;
    size_t addrlen;
    uint64_t last_seen, seen_wall;
    int silent;
    bool probation;
};

/* Takes over a source, if s watches it alike. */
static void
adopt_was(struct absence *s, const struct was *o, uint64_t now_ms)
{
    const char *prog = o->program ? o->program : "";
    struct source *src;
    uint64_t h;
    size_t i;

    /* the same watch: the same host and program (after= and forget= may change) */
    for (i = 0; i < s->nrules; i++)
        if (same_str(s->rules[i].host, o->rule_host) &&
            same_str(s->rules[i].program, o->rule_program))
            break;
    if (i == s->nrules) return; /* no longer watched */
    make_key(s, i, o->host, strlen(o->host), prog, strlen(prog));
    h = hash_string(s->key.p, s->key.len);
    if (find(s, s->key.p, s->key.len, h)) return;
    src = add(s, i, o->host, strlen(o->host), prog, strlen(prog), o->addr, o->addrlen, h, now_ms);
    if (!src) return;
    if (!o->probation) probation_remove(s, src);
    src->last_seen = o->last_seen;
    src->seen_wall = o->seen_wall;
    src->silent = o->silent;
    if (src->silent) {
        s->ndown++;
        if (forget_at(src) != UINT64_MAX) tw_arm(s->wheel, &src->timer, forget_at(src));
    } else {
        tw_arm(s->wheel, &src->timer, src->last_seen + (uint64_t)(src->rule->after * 1000));
    }
}

static void
adopt_one(struct absence *s, const struct source *o, uint64_t now_ms)
{
    struct was w = {o->rule->host, o->rule->program, o->host,      o->program, o->addr,
                    o->addrlen,    o->last_seen,     o->seen_wall, o->silent,  o->probation};

    adopt_was(s, &w, now_ms);
}

/*
 * s's sources, those seen twice first in the order they were seen (not the
 * table's, which follows a per-process hash), then those on probation,
 * oldest first; NULL-terminated, to free.
 */
static const struct source **
in_order(const struct absence *s)
{
    struct hash_node *n;
    const struct source **all, *o;
    size_t b = 0, nall = 0;

    all = xcalloc(s->keys.count + 1, sizeof(*all));
    for (n = hash_table_iter(&s->keys, &b, NULL); n; n = hash_table_iter(&s->keys, &b, n))
        if (!(o = hash_entry(n, struct source, node))->probation) all[nall++] = o;
    qsort(all, nall, sizeof(*all), by_last_seen);
    for (o = s->phead; o; o = o->pnext) all[nall++] = o;
    return all;
}

void
absence_adopt(struct absence *s, struct absence *old, uint64_t now_ms)
{
    const struct source **all;
    size_t k;

    if (!old) return;
    absence_tick(old, now_ms); /* what was due is reported by the rules it was due under */
    absence_tick(s, now_ms);
    /* in the order they were seen, so that reports due at the same time come in the same
     * order on every run; those on probation keep their order */
    all = in_order(old);
    for (k = 0; all[k]; k++) adopt_one(s, all[k], now_ms);
    free(all);
    s->untracked = old->untracked;
    s->forgotten = old->forgotten;
    s->evicted = old->evicted;
    s->foreign = old->foreign;
    s->untracked_logged = old->untracked_logged;
    s->foreign_logged = old->foreign_logged;
}

static void
put_field(struct buf *out, const char *v, size_t len)
{
    if (!v) {
        buf_putc(out, '-');
        return;
    }
    buf_printf(out, "%zu:", len);
    buf_append(out, v, len);
}

static void
put_str_field(struct buf *out, const char *v)
{
    put_field(out, v, v ? strlen(v) : 0);
}

void
absence_save(const struct absence *s, struct buf *out)
{
    const struct source **all = in_order(s);
    size_t k;

    for (k = 0; all[k]; k++) {
        const struct source *o = all[k];
        buf_printf(out, "%llu %d %d ", (unsigned long long)o->seen_wall, o->silent,
                   (int)o->probation);
        put_str_field(out, o->rule->host);
        put_str_field(out, o->rule->program);
        put_str_field(out, o->host);
        put_str_field(out, o->program);
        put_field(out, o->addr, o->addrlen);
        buf_putc(out, '\n');
    }
    free(all);
}

/* One field of absence_save's at *at (end: the end), NUL-terminated in *v; false: malformed. */
static bool
get_field(const char **at, const char *end, char **v, size_t *len, bool *null)
{
    const char *p = *at;
    size_t l = 0;

    *null = false;
    if (p < end && *p == '-') {
        *null = true;
        *at = p + 1;
        return true;
    }
    if (p >= end || *p < '0' || *p > '9') return false;
    while (p < end && *p >= '0' && *p <= '9' && p - *at < 18) l = l * 10 + (size_t)(*p++ - '0');
    if (p >= end || *p != ':' || l > (size_t)(end - p - 1)) return false;
    *v = xstrndup(p + 1, l);
    *len = l;
    *at = p + 1 + l;
    return true;
}

long
absence_load(struct absence *s, const char *data, size_t len, uint64_t now_ms)
{
    const char *at = data, *end = data + len;
    uint64_t wall_now = s->wall ? s->wall(now_ms) : now_ms;
    long n = 0;

    absence_tick(s, now_ms);
    while (at < end) {
        char *f[5] = {NULL, NULL, NULL, NULL, NULL}, *e;
        size_t flen[5] = {0}, k;
        bool null[5];
        unsigned long long seen;
        long silent, probation;
        bool ok = true;
        struct was w;

        seen = strtoull(at, &e, 10);
        if (e == at || e >= end || *e != ' ') return -1;
        silent = strtol(e + 1, &e, 10);
        if (e >= end || *e != ' ') return -1;
        probation = strtol(e + 1, &e, 10);
        if (e >= end || *e != ' ') return -1;
        at = e + 1;
        for (k = 0; k < 5 && ok; k++) ok = get_field(&at, end, &f[k], &flen[k], &null[k]);
        ok = ok && !null[2] && at < end && *at == '\n';
        if (ok) {
            w.rule_host = f[0];
            w.rule_program = f[1];
            w.host = f[2];
            w.program = f[3];
            w.addr = f[4];
            w.addrlen = flen[4];
            w.seen_wall = seen;
            w.last_seen = seen > wall_now            ? now_ms
                          : wall_now - seen > now_ms ? 0
                                                     : now_ms - (wall_now - seen);
            w.silent = silent != 0;
            w.probation = probation != 0;
            adopt_was(s, &w, now_ms);
            n++;
            at++;
        }
        for (k = 0; k < 5; k++) free(f[k]);
        if (!ok) return -1;
    }
    return n;
}

uint64_t
absence_changes(const struct absence *s)
{
    return s->changes;
}

void
absence_tick(struct absence *s, uint64_t now_ms)
{
    tw_advance(s->wheel, now_ms, fire, s);
}

size_t
absence_tracked(const struct absence *s)
{
    return s->keys.count;
}

uint64_t
absence_untracked(const struct absence *s)
{
    return s->untracked;
}

uint64_t
absence_forgotten(const struct absence *s)
{
    return s->forgotten;
}

uint64_t
absence_evicted(const struct absence *s)
{
    return s->evicted;
}

uint64_t
absence_foreign(const struct absence *s)
{
    return s->foreign;
}

size_t
absence_down(const struct absence *s)
{
    return s->ndown;
}
