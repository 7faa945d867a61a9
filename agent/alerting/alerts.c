/*
 * alerts: the active alert store (see alerts.h).  Entries live in a hash
 * table by alert id and in one of two lists ordered by when they were last
 * seen: resolved ones and the others, so that making room forgets the
 * resolved alert seen longest ago in O(1).  An entry's labels are a copy of
 * the alert's last message.  Each <inhibit> rule keeps the entries that
 * match its source and are not resolved (a few: the hosts that stopped
 * logging), so that asking whether an alert is inhibited looks at those
 * only, not at the whole store.
 *
 * In a cluster (cluster_alerts.c), an entry knows when it last changed and
 * whether another node's record made it; a change made here is reported
 * to the replica once until exported, and what alerts_merge takes from
 * another node is not reported back (what the entry held and the record
 * lacked is: the bucket's last record becomes the union).  Records merge
 * field by field (merge_into), so that any order of the nodes' writes
 * gives the same store.  Such an entry's executors are the
 * other node's: none is chosen nor told here, so muting it again or
 * resolving it sends nothing from this node.
 *
 * The file (STATE.alerts): "CORRALAL1\n", then one record per entry:
 *   4 bytes  payload length, little-endian
 *   4        CRC-32 of the payload
 *   payload  id, first, last, count, state, muted-by, executors
 *            (name, delivery, at), the message (msg_encode)
 * A record that does not check out (a torn write cannot happen: the file
 * is replaced whole, but a damaged disk can) costs that record only:
 * reading resumes at the next offset where a record checks out.
 */
#include "agent/alerting/alerts.h"
#include "actions/jsonval.h"
#include "actions/exconf.h"
#include "engine/civil.h"
#include "engine/durable.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "engine/template.h"
#include "engine/units.h"
#include "engine/wire.h"
#include "engine/xalloc.h"
#include "agent/alerting/silences.h"
#include "agent/alerting/topology.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FILE_HEADER    "CORRALAL2\n"
#define FILE_HEADER_V1 "CORRALAL1\n" /* read still: without resolution, routes and history */
#define LOG_EVERY      60000

/* An executor of an alert: chosen by its routes, and what became of the last notification. */
struct exstate {
    char *name;
    enum alert_delivery d;
    uint64_t at;
    bool chosen;        /* the routes chose it at the last occurrence */
    bool send_resolved; /* ... with send-resolved */
    bool told;          /* it was handed the alert firing, and not yet its resolution */
    uint32_t attempt;   /* of the notification being delivered: 1, then 2 after a retry, ... */
};

/* One notification of the history. */
struct notice {
    uint64_t at;
    char *executor;
    bool resolved; /* a resolved notification */
    enum alert_delivery outcome;
    uint32_t attempt;
};

struct entry {
    struct hash_node node;
    struct entry *prev, *next; /* in resolved or active, by last seen */
    char *id;
    struct msg *labels;
    uint64_t first, last, count;
    bool resolved;
    enum alert_resolution how; /* when resolved */
    uint64_t resolved_at;
    uint64_t since;         /* when what it says began: corral.since of its firing, or first */
    uint64_t resolve_after; /* ms without occurrence after which it resolves; 0: never */
    enum alert_state muted; /* ALERT_FIRING, ALERT_SILENCED or ALERT_INHIBITED */
    char *by;               /* the silence or the inhibiting alert */
    struct exstate *ex;
    size_t nex, capex;
    struct notice hist[ALERTS_HISTORY]; /* a ring: the last ALERTS_HISTORY notifications */
    uint64_t nhist;                     /* notifications ever recorded */
    uint64_t updated;                   /* ms: its last change, for alerts_merge */
    bool remote;                        /* it came from another node (alerts_merge) */
    bool pending;                       /* changed, not yet exported (alerts_set_replica) */
};

/* A period during which a source of an <inhibit> rule was active (it resolved since). */
struct window {
    char *id;
    struct msg *labels;
    uint64_t since, until;
};

#define INHIBIT_WINDOWS     256
#define INHIBIT_WINDOW_KEEP (3600 * 1000ULL)

/*
 * A notification made here for an alert this node's store did not hold yet
 * (a cluster: the work queue can bring an alert before the bucket brings
 * its record), kept until the record comes (alerts_merge).
 */
struct orphan {
    char *id, *executor;
    uint64_t at;
    enum alert_delivery d;
    bool resolved;
};

#define ORPHANS 64

struct list {
    struct entry *head, *tail;
};

struct rule {
    struct labelmatch *source, *target;
    char **equal;
    size_t nequal;
    bool topo;    /* topology="yes": the target's HOST sits behind the source's (port) */
    char **ports; /* the source's labels that name its port */
    size_t nports;
    struct entry **src; /* the entries, not resolved, that match source now */
    size_t nsrc, capsrc;
    struct window win[INHIBIT_WINDOWS]; /* a ring: the last periods of resolved sources */
    size_t nwin, winpos;
};

struct alerts {
    struct hash_table table;
    struct list resolved, active;
    size_t max;
    struct template *id_tmpl;
    struct rule *rules;
    size_t nrules;
    struct topology *topo; /* <topology>, read anew with each configuration; NULL: none */
    struct buf scratch;
    struct alerts_stats st;
    uint64_t last_log;
    uint64_t resolve_timeout; /* ms; 0: never */
    bool sources_changed;
    alerts_notify_fn notify;
    void *notify_arg;
    alerts_changed_fn changed;
    void *changed_arg;
    struct orphan orphans[ORPHANS]; /* a ring: notices of alerts whose record had not come */
    size_t orphan_pos;
};

static tag_id tag_clear;
static nv_handle h_severity, h_resolve_after, h_since, h_status, h_resolved_by;

static void
init_names(void)
{
    if (!tag_clear) tag_clear = tag_intern("corral.clear", 12);
    if (!h_severity) h_severity = nv_intern_str("corral.severity");
    if (!h_resolve_after) h_resolve_after = nv_intern_str("corral.resolve_after");
    if (!h_since) h_since = nv_intern_str("corral.since");
    if (!h_status) h_status = nv_intern_str("corral.status");
    if (!h_resolved_by) h_resolved_by = nv_intern_str("corral.resolved_by");
}

/* ---- lists ---- */

static void
unlink_entry(struct list *l, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
}

static void
append(struct list *l, struct entry *e)
{
    e->prev = l->tail;
    e->next = NULL;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
}

static struct list *
list_of(struct alerts *a, struct entry *e)
{
    return e->resolved ? &a->resolved : &a->active;
}

/* e changed at now_ms here: the replica, if any, is told once until alerts_export. */
static void
touched(struct alerts *a, struct entry *e, uint64_t now_ms)
{
    e->updated = now_ms > e->updated ? now_ms : e->updated + 1;
    if (!a->changed || e->pending) return;
    e->pending = true;
    a->changed(a->changed_arg, e->id);
}

static void
entry_free(struct entry *e)
{
    size_t i;

    free(e->id);
    free(e->by);
    if (e->labels) msg_unref(e->labels);
    for (i = 0; i < e->nex; i++) free(e->ex[i].name);
    free(e->ex);
    for (i = 0; i < ALERTS_HISTORY; i++) free(e->hist[i].executor);
    free(e);
}

static void
window_clear(struct window *w)
{
    free(w->id);
    if (w->labels) msg_unref(w->labels);
    memset(w, 0, sizeof(*w));
}

/* When firing e began: its corral.since label (ISO 8601), else when first seen. */
static uint64_t
since_of(const struct entry *e)
{
    size_t len;
    const char *v = msg_get(e->labels, h_since, &len);
    char text[64];
    int64_t ms;

    if (v && len > 0 && len < sizeof(text)) {
        memcpy(text, v, len);
        text[len] = '\0';
        if (civil_parse_time(text, &ms) == 0 && ms >= 0 && (uint64_t)ms < e->first)
            return (uint64_t)ms;
    }
    return e->first;
}

/* Source e of rule r resolved: its active period keeps inhibiting targets of that time. */
static void
window_add(struct rule *r, const struct entry *e)
{
    struct window *w = &r->win[r->winpos];

    window_clear(w);
    w->id = xstrdup(e->id);
    w->labels = msg_ref(e->labels);
    w->since = e->since ? e->since : e->first;
    w->until = e->resolved_at ? e->resolved_at : e->last;
    r->winpos = (r->winpos + 1) % INHIBIT_WINDOWS;
    if (r->nwin < INHIBIT_WINDOWS) r->nwin++;
}

/* e leaves rule r's sources. */
static void
source_remove(struct rule *r, const struct entry *e)
{
    size_t i;

    for (i = 0; i < r->nsrc; i++)
        if (r->src[i] == e) {
            r->src[i] = r->src[--r->nsrc];
            return;
        }
}

/*
 * e is among the sources of the rules whose source it matches now, and only
 * those; a source that resolves leaves its active period behind.
 */
static void
sources_update(struct alerts *a, struct entry *e)
{
    size_t i, k;

    for (i = 0; i < a->nrules; i++) {
        struct rule *r = &a->rules[i];
        bool want = !e->resolved && labelmatch_match(r->source, e->labels);
        for (k = 0; k < r->nsrc && r->src[k] != e; k++) continue;
        if (want && k == r->nsrc) {
            r->src = xgrow(r->src, &r->capsrc, r->nsrc + 1, sizeof(*r->src));
            r->src[r->nsrc++] = e;
            a->sources_changed = true;
        } else if (!want && k < r->nsrc) {
            r->src[k] = r->src[--r->nsrc];
            if (e->resolved) window_add(r, e);
            a->sources_changed = true;
        }
    }
}

static void
forget(struct alerts *a, struct entry *e)
{
    size_t i;

    for (i = 0; i < a->nrules; i++) source_remove(&a->rules[i], e);
    unlink_entry(list_of(a, e), e);
    hash_table_remove(&a->table, &e->node);
    entry_free(e);
}

/* ---- setup ---- */

static void
free_rules(struct rule *rules, size_t n)
{
    size_t i, k;

    for (i = 0; i < n; i++) {
        labelmatch_free(rules[i].source);
        labelmatch_free(rules[i].target);
        for (k = 0; k < rules[i].nequal; k++) free(rules[i].equal[k]);
        free(rules[i].equal);
        for (k = 0; k < rules[i].nports; k++) free(rules[i].ports[k]);
        free(rules[i].ports);
        free(rules[i].src);
        for (k = 0; k < INHIBIT_WINDOWS; k++) window_clear(&rules[i].win[k]);
    }
    free(rules);
}

static int
compile_rules(const struct conf *c, struct rule **out, struct buf *err)
{
    const char *file = c->file ? c->file : "(built-in configuration)";
    struct rule *rules = xcalloc(c->ninhibits + 1, sizeof(*rules));
    size_t i, k;
    int rc = 0;

    for (i = 0; i < c->ninhibits; i++) {
        const struct conf_inhibit *in = &c->inhibits[i];
        struct buf e = BUF_INIT;
        rules[i].source =
            labelmatch_parse_names(in->source ? in->source : "", LABELMATCH_NAMES_CONFIG, &e);
        if (!rules[i].source) {
            buf_printf(err, "%s:%d: inhibit source=: %s\n", file, in->line, buf_str(&e));
            rc = -1;
        }
        buf_reset(&e);
        rules[i].target =
            labelmatch_parse_names(in->target ? in->target : "", LABELMATCH_NAMES_CONFIG, &e);
        if (!rules[i].target) {
            buf_printf(err, "%s:%d: inhibit target=: %s\n", file, in->line, buf_str(&e));
            rc = -1;
        }
        buf_free(&e);
        rules[i].equal = xcalloc(in->nequal + 1, sizeof(char *));
        for (k = 0; k < in->nequal; k++) rules[i].equal[k] = xstrdup(in->equal[k]);
        rules[i].nequal = in->nequal;
        rules[i].topo = in->topology;
        rules[i].ports = xcalloc(in->nports + 1, sizeof(char *));
        for (k = 0; k < in->nports; k++) rules[i].ports[k] = xstrdup(in->ports[k]);
        rules[i].nports = in->nports;
        if (in->topology && !c->topology_file) {
            buf_printf(err, "%s:%d: inhibit topology=\"yes\" needs a <topology path=...>\n", file,
                       in->line);
            rc = -1;
        }
    }
    if (rc < 0) {
        free_rules(rules, c->ninhibits);
        return -1;
    }
    *out = rules;
    return 0;
}

struct alerts *
alerts_new(const struct conf *c, struct buf *err)
{
    struct alerts *a = xcalloc(1, sizeof(*a));
    struct buf e = BUF_INIT;

    init_names();
    a->max = c->max_alerts ? c->max_alerts : ALERTS_MAX_DEFAULT;
    a->id_tmpl = template_compile_str(c->alert_id ? c->alert_id : QUEUE_ALERT_ID_DEFAULT, &e);
    if (!a->id_tmpl) {
        buf_printf(err, "%s: bad alert-id template: %s\n", c->file ? c->file : "configuration",
                   buf_str(&e));
        buf_free(&e);
        free(a);
        return NULL;
    }
    buf_free(&e);
    if (compile_rules(c, &a->rules, err) < 0) {
        template_free(a->id_tmpl);
        free(a);
        return NULL;
    }
    if (c->topology_file) {
        /* errors name the topology file and its line; a reload reads the file again */
        a->topo = topology_load(c->topology_file, err);
        if (!a->topo) {
            free_rules(a->rules, c->ninhibits);
            template_free(a->id_tmpl);
            free(a);
            return NULL;
        }
    }
    a->nrules = c->ninhibits;
    a->resolve_timeout = (uint64_t)(c->resolve_timeout * 1000);
    hash_table_init(&a->table, 64);
    return a;
}

void
alerts_set_replica(struct alerts *a, alerts_changed_fn fn, void *arg)
{
    a->changed = fn;
    a->changed_arg = arg;
}

void
alerts_set_notify(struct alerts *a, alerts_notify_fn fn, void *arg)
{
    a->notify = fn;
    a->notify_arg = arg;
}

int
alerts_check_conf(const struct conf *c, struct buf *err)
{
    struct alerts *a = alerts_new(c, err);

    if (!a) return -1;
    alerts_free(a);
    return 0;
}

void
alerts_free(struct alerts *a)
{
    if (!a) return;
    while (a->resolved.head) forget(a, a->resolved.head);
    while (a->active.head) forget(a, a->active.head);
    hash_table_free(&a->table);
    template_free(a->id_tmpl);
    free_rules(a->rules, a->nrules);
    topology_free(a->topo);
    buf_free(&a->scratch);
    for (size_t i = 0; i < ORPHANS; i++) {
        free(a->orphans[i].id);
        free(a->orphans[i].executor);
    }
    free(a);
}

static bool make_room(struct alerts *a);

void
alerts_adopt(struct alerts *a, struct alerts *old)
{
    struct list *lists[2];
    int i;

    if (!old) return;
    a->st = old->st;
    a->last_log = old->last_log;
    if (!a->notify) alerts_set_notify(a, old->notify, old->notify_arg);
    if (!a->changed) alerts_set_replica(a, old->changed, old->changed_arg);
    lists[0] = &old->resolved;
    lists[1] = &old->active;
    for (i = 0; i < 2; i++) {
        while (lists[i]->head) {
            struct entry *e = lists[i]->head;
            unlink_entry(lists[i], e);
            hash_table_remove(&old->table, &e->node);
            hash_table_add(&a->table, &e->node, e->node.hash);
            append(list_of(a, e), e);
            sources_update(a, e);
        }
    }
    while (a->table.count > a->max && make_room(a)) continue;
}

/* ---- recording ---- */

void
alerts_id(struct alerts *a, const struct msg *m, struct buf *out)
{
    struct template_env env;
    struct msg *mm = (struct msg *)m;

    buf_reset(out);
    template_env_single(&env, &mm);
    template_eval(a->id_tmpl, &env, out);
    if (out->len > 256) buf_truncate(out, 256);
}

bool
alerts_is_clear(const struct msg *m)
{
    size_t len;
    const char *sev;

    init_names();
    if (msg_tag_has(m, tag_clear)) return true;
    sev = msg_get(m, h_severity, &len);
    return sev && len == 5 && strncasecmp(sev, "clear", 5) == 0;
}

bool
alerts_is_inhibit_source(const struct alerts *a, const struct msg *m)
{
    size_t i;

    for (i = 0; i < a->nrules; i++)
        if (labelmatch_match(a->rules[i].source, m)) return true;
    return false;
}

static bool
same_labels(const struct rule *r, const struct msg *x, const struct msg *y)
{
    size_t i, lx, ly;
    const char *vx, *vy;

    for (i = 0; i < r->nequal; i++) {
        vx = labelmatch_label(x, r->equal[i], &lx);
        vy = labelmatch_label(y, r->equal[i], &ly);
        if (lx != ly || memcmp(vx, vy, lx) != 0) return false;
    }
    return true;
}

/*
 * A topology rule: the target t's HOST sits behind the source s's HOST, on
 * a port that one of s's port labels names (or on a link without a port).
 */
static bool
topology_holds(const struct alerts *a, const struct rule *r, const struct msg *s,
               const struct msg *t)
{
    const char *ports[8];
    size_t plens[8], n = 0, i, hl, ul;
    const char *host = msg_get(t, NV_HOST, &hl), *up = msg_get(s, NV_HOST, &ul);

    if (!host || !up || !hl || !ul) return false;
    for (i = 0; i < r->nports && n < sizeof(ports) / sizeof(ports[0]); i++) {
        size_t len;
        const char *v = labelmatch_label(s, r->ports[i], &len);
        if (v && len) {
            ports[n] = v;
            plens[n++] = len;
        }
    }
    return topology_behind(a->topo, host, hl, up, ul, ports, plens, n);
}

/* Whether source s of rule r inhibits target t: the equal labels, and the topology. */
static bool
related(const struct alerts *a, const struct rule *r, const struct msg *s, const struct msg *t)
{
    return same_labels(r, s, t) && (!r->topo || topology_holds(a, r, s, t));
}

/* The time of m, in ms since the epoch: the stamp of the line that raised it. */
static uint64_t
time_of(const struct msg *m)
{
    const struct msg_time *t = msg_stamp(m);

    if (!t || t->sec < 0) return 0;
    return (uint64_t)t->sec * 1000 + (uint64_t)t->usec / 1000;
}

/* The id of what inhibits m (id: m's own alert id) at now_ms, or NULL. */
static const char *
inhibitor(struct alerts *a, const struct msg *m, const char *id, uint64_t now_ms)
{
    size_t i, k;
    uint64_t t = 0;
    bool have_t = false;

    for (i = 0; i < a->nrules; i++) {
        struct rule *r = &a->rules[i];
        if ((!r->nsrc && !r->nwin) || !labelmatch_match(r->target, m)) continue;
        for (k = 0; k < r->nsrc; k++) {
            const struct entry *e = r->src[k];
            if (strcmp(e->id, id) != 0 && related(a, r, e->labels, m)) return e->id;
        }
        /*
         * A topology rule inhibits while its source fires, as Alertmanager's do: the
         * hosts behind a port that came back and still do not log are down themselves.
         */
        if (r->topo) continue;
        for (k = 0; k < r->nwin; k++) {
            struct window *w = &r->win[k];
            if (!w->id) continue;
            if (now_ms > w->until && now_ms - w->until > INHIBIT_WINDOW_KEEP) {
                window_clear(w);
                continue;
            }
            if (!have_t) {
                t = time_of(m);
                have_t = true;
            }
            if (t > w->since && t <= w->until && strcmp(w->id, id) != 0 &&
                same_labels(r, w->labels, m))
                return w->id;
        }
    }
    return NULL;
}

const char *
alerts_inhibited_by(struct alerts *a, const struct msg *m, const char *id)
{
    return inhibitor(a, m, id, time_of(m));
}

static struct entry *
find(const struct alerts *a, const char *id, size_t len, uint64_t h)
{
    struct hash_node *n;

    for (n = hash_table_find(&a->table, h); n; n = hash_table_find_next(n)) {
        struct entry *e = hash_entry(n, struct entry, node);
        if (strlen(e->id) == len && memcmp(e->id, id, len) == 0) return e;
    }
    return NULL;
}

static struct entry *
find_str(const struct alerts *a, const char *id)
{
    size_t len = strlen(id);

    return find(a, id, len, hash_string(id, len));
}

bool
alerts_known(const struct alerts *a, const char *id)
{
    return find_str(a, id) != NULL;
}

bool
alerts_firing(const struct alerts *a, const char *id)
{
    const struct entry *e = find_str(a, id);

    return e && !e->resolved;
}

/*
 * Forgets the resolved entry seen longest ago; false when every entry is
 * unresolved: a firing alert is never forgotten for a new one (an attacker
 * raising alerts must not push out the real ones).
 */
static bool
make_room(struct alerts *a)
{
    struct entry *e = a->resolved.head;
    uint64_t now;

    if (!e) return false;
    a->st.forgotten++;
    /* the newest alert's time is the clock: only the rate of the log line depends on it */
    now = a->active.tail && a->active.tail->last > e->last ? a->active.tail->last : e->last;
    if (!a->last_log || now - a->last_log >= LOG_EVERY) {
        log_msg(
            LOG_WARNING,
            "alerts: %zu alerts (max-alerts): forgetting the oldest resolved ones (%llu so far)",
            a->max, (unsigned long long)a->st.forgotten);
        a->last_log = now ? now : 1;
    }
    /* the replica drops it too: alerts_export no longer finds it */
    if (a->changed && !e->pending) a->changed(a->changed_arg, e->id);
    forget(a, e);
    return true;
}

static struct exstate *
exstate_of(struct entry *e, const char *executor)
{
    size_t i;

    for (i = 0; i < e->nex; i++)
        if (strcmp(e->ex[i].name, executor) == 0) return &e->ex[i];
    e->ex = xgrow(e->ex, &e->capex, e->nex + 1, sizeof(*e->ex));
    memset(&e->ex[e->nex], 0, sizeof(e->ex[e->nex]));
    e->ex[e->nex].name = xstrdup(executor);
    return &e->ex[e->nex++];
}

/* Whether e holds the state of executor already. */
static bool
has_executor(const struct entry *e, const char *executor)
{
    size_t i;

    for (i = 0; i < e->nex; i++)
        if (strcmp(e->ex[i].name, executor) == 0) return true;
    return false;
}

/* The resolve timeout of an alert whose last message is m, in ms (0: never). */
static uint64_t
resolve_after_of(const struct alerts *a, const struct msg *m)
{
    size_t len;
    const char *v = msg_get(m, h_resolve_after, &len);
    char text[32];
    double d;

    if (!v || !len || len >= sizeof(text)) return a->resolve_timeout;
    memcpy(text, v, len);
    text[len] = '\0';
    if (strcmp(text, "never") == 0) return 0;
    d = units_duration(text);
    return d < 0 ? a->resolve_timeout : (uint64_t)(d * 1000);
}

/* The resolved notification of e when nothing came to say so (a timeout, by hand). */
static struct msg *
resolution_msg(const struct entry *e, uint64_t now_ms)
{
    struct msg *m = msg_clone(e->labels);
    struct msg_time t = {(int64_t)(now_ms / 1000), (int32_t)(now_ms % 1000) * 1000, 0};
    const char *by = e->how == ALERT_BY_HAND ? "hand" : "timeout";

    msg_set_stamp(m, &t);
    msg_tag_set(m, tag_clear);
    msg_set(m, h_resolved_by, by, strlen(by));
    return m;
}

/*
 * e resolved: the executors that were told it fired and whose route says
 * send-resolved get m (once), except those in skip (they get m otherwise).
 */
static void
announce_resolved(struct alerts *a, struct entry *e, struct msg *m, const struct alert_target *skip,
                  size_t nskip)
{
    size_t i, k;

    msg_set(m, h_status, "resolved", 8);
    for (i = 0; i < e->nex; i++) {
        struct exstate *x = &e->ex[i];
        bool skipped = false;
        if (!x->told) continue;
        x->told = false;
        for (k = 0; k < nskip; k++)
            if (strcmp(skip[k].name, x->name) == 0) skipped = true;
        if (skipped || !x->send_resolved || !a->notify) continue;
        a->st.notified_resolved++;
        a->notify(a->notify_arg, x->name, m);
    }
}

/* e resolves now, how; its executors are told. */
static void
resolve(struct alerts *a, struct entry *e, enum alert_resolution how, uint64_t now_ms)
{
    struct msg *m;

    unlink_entry(list_of(a, e), e);
    e->resolved = true;
    e->how = how;
    e->resolved_at = now_ms;
    append(list_of(a, e), e);
    if (how == ALERT_BY_TIMEOUT) a->st.resolved_timeout++;
    if (how == ALERT_BY_HAND) a->st.resolved_hand++;
    m = resolution_msg(e, now_ms);
    announce_resolved(a, e, m, NULL, 0);
    msg_unref(m);
    sources_update(a, e);
    touched(a, e, now_ms);
}

bool
alerts_record(struct alerts *a, const char *id, const struct msg *m, enum alert_state muted,
              const char *by, const struct alert_target *targets, size_t ntargets, uint64_t now_ms)
{
    size_t len = strlen(id), i;
    uint64_t h = hash_string(id, len);
    struct entry *e = find(a, id, len, h);
    bool clear = alerts_is_clear(m), was_firing;

    if (!e && a->table.count >= a->max && !make_room(a)) {
        a->st.unrecorded++;
        if (!a->last_log || now_ms - a->last_log >= LOG_EVERY) {
            log_msg(LOG_WARNING,
                    "alerts: %zu alerts firing (max-alerts): new alerts are sent but not "
                    "recorded (%llu so far)",
                    a->max, (unsigned long long)a->st.unrecorded);
            a->last_log = now_ms ? now_ms : 1;
        }
        return false;
    }
    a->st.recorded++;
    if (muted == ALERT_SILENCED) a->st.silenced++;
    if (muted == ALERT_INHIBITED) a->st.inhibited++;
    if (!e) {
        e = xcalloc(1, sizeof(*e));
        e->id = xstrndup(id, len);
        e->first = now_ms;
        hash_table_add(&a->table, &e->node, h);
        was_firing = false;
    } else {
        was_firing = !e->resolved;
        unlink_entry(list_of(a, e), e);
        msg_unref(e->labels);
        if (e->resolved && !clear) e->first = now_ms; /* raised again: a new episode */
    }
    /* resolved now, unless it was already (a second clear keeps the first's time and cause) */
    if (!clear) {
        e->how = ALERT_BY_NONE;
        e->resolved_at = 0;
    } else if (!e->resolved) {
        e->how = ALERT_BY_CLEAR;
        e->resolved_at = now_ms;
    }
    e->resolved = clear;
    append(list_of(a, e), e);
    e->labels = msg_clone(m);
    e->last = now_ms;
    e->count++;
    e->resolve_after = resolve_after_of(a, m);
    if (!clear) e->since = since_of(e); /* a clear's labels may not say it: kept from the firing */
    e->muted = muted == ALERT_SILENCED || muted == ALERT_INHIBITED ? muted : ALERT_FIRING;
    free(e->by);
    e->by = by && e->muted != ALERT_FIRING ? xstrdup(by) : NULL;
    if (clear) {
        if (was_firing) {
            struct msg *note = msg_clone(m);
            a->st.resolved_clear++;
            announce_resolved(a, e, note, targets, ntargets);
            msg_unref(note);
        }
    } else {
        for (i = 0; i < e->nex; i++) e->ex[i].chosen = e->ex[i].send_resolved = false;
        for (i = 0; i < ntargets; i++) {
            struct exstate *x = exstate_of(e, targets[i].name);
            x->chosen = true;
            x->send_resolved = targets[i].send_resolved;
            if (e->muted == ALERT_FIRING) x->told = true;
        }
    }
    e->remote = false;
    sources_update(a, e);
    touched(a, e, now_ms);
    return true;
}

int
alerts_resolve(struct alerts *a, const char *id, uint64_t now_ms)
{
    struct entry *e = find_str(a, id);

    if (!e || e->resolved) return -1;
    resolve(a, e, ALERT_BY_HAND, now_ms);
    return 0;
}

size_t
alerts_tick(struct alerts *a, uint64_t now_ms)
{
    struct entry *e, *next;
    size_t n = 0;

    for (e = a->active.head; e; e = next) {
        next = e->next;
        if (e->resolve_after && now_ms >= e->last && now_ms - e->last >= e->resolve_after) {
            resolve(a, e, ALERT_BY_TIMEOUT, now_ms);
            n++;
        }
    }
    return n;
}

/* e is no longer muted: it goes to the executors its routes chose. */
static void
unmuted(struct alerts *a, struct entry *e)
{
    size_t i;

    a->st.unmuted++;
    for (i = 0; i < e->nex; i++) {
        struct exstate *x = &e->ex[i];
        if (!x->chosen) continue;
        x->told = true;
        if (a->notify) a->notify(a->notify_arg, x->name, e->labels);
    }
}

size_t
alerts_admit(struct alerts *a, struct silences *sil, const struct msg *m,
             const struct alert_target *targets, size_t ntargets, struct buf *id, uint64_t now_ms)
{
    enum alert_state muted = ALERT_FIRING;
    const char *by = NULL;
    bool source = false;

    /*
     * Not routed: an <inhibit> source (it must be known to inhibit), or the
     * clear of an alert the store holds (so that it stops inhibiting).
     */
    if (!ntargets) {
        if (!(msg_flags(m) & MSG_F_GENERATED)) return 0;
        source = alerts_is_inhibit_source(a, m);
        if (!source && !alerts_is_clear(m)) return 0;
    }
    alerts_id(a, m, id);
    if (!ntargets && !source && !alerts_known(a, buf_str(id))) return 0;
    /* silences first: a muted alert is recorded, counted and sent nowhere */
    if (sil && (by = silences_match(sil, m, now_ms)))
        muted = ALERT_SILENCED;
    else if ((by = alerts_inhibited_by(a, m, buf_str(id))))
        muted = ALERT_INHIBITED;
    alerts_record(a, buf_str(id), m, muted, by, targets, ntargets, now_ms);
    /* an inhibition source fired or resolved: what fires now may be held back or released */
    if (a->sources_changed) alerts_reinhibit(a, now_ms);
    return muted == ALERT_FIRING ? ntargets : 0;
}

/*
 * Muting again: silences (when they changed) and inhibitions.  Without
 * silences, what a silence holds stays so (its silences did not change),
 * so that an inhibition source firing or resolving, which an attacker's
 * lines may cause often, costs no regular expression of a silence.
 */
static size_t
remute(struct alerts *a, struct silences *sil, bool silences, uint64_t now_ms)
{
    struct entry *e, *next;
    size_t n = 0;

    a->sources_changed = false;
    for (e = a->active.head; e; e = next) {
        const char *by = NULL;
        enum alert_state st = ALERT_FIRING, was = e->muted;
        next = e->next;
        if (alerts_is_clear(e->labels)) continue;
        if (!silences && was == ALERT_SILENCED) continue;
        if (silences && sil && (by = silences_match(sil, e->labels, now_ms)))
            st = ALERT_SILENCED;
        else if ((by = inhibitor(a, e->labels, e->id, time_of(e->labels))))
            st = ALERT_INHIBITED;
        if (st == was && (!by || (e->by && strcmp(by, e->by) == 0))) continue;
        n++;
        e->muted = st;
        free(e->by);
        e->by = by ? xstrdup(by) : NULL;
        if (st == ALERT_FIRING && was != ALERT_FIRING) unmuted(a, e);
        /* another node's alert: its owner mutes it the same way (the silences are shared) */
        if (!e->remote) touched(a, e, now_ms);
    }
    return n;
}

size_t
alerts_remute(struct alerts *a, struct silences *sil, uint64_t now_ms)
{
    return remute(a, sil, true, now_ms);
}

size_t
alerts_reinhibit(struct alerts *a, uint64_t now_ms)
{
    return remute(a, NULL, false, now_ms);
}

bool
alerts_sources_changed(const struct alerts *a)
{
    return a->sources_changed;
}

void
alerts_step(struct alerts *a, struct silences *sil, size_t *nactive, uint64_t now_ms)
{
    size_t active = sil ? silences_active(sil, now_ms) : 0;

    /*
     * silences that began or ended by their times: everything again;
     * sources that resolved by their timeouts: the inhibitions only
     */
    alerts_tick(a, now_ms);
    if (active != *nactive)
        alerts_remute(a, sil, now_ms);
    else if (a->sources_changed)
        alerts_reinhibit(a, now_ms);
    *nactive = active;
}

void
alerts_delivery(struct alerts *a, const char *executor, const struct msg *m, enum alert_delivery d,
                uint64_t now_ms)
{
    struct entry *e;
    struct exstate *x;
    struct notice *n;

    alerts_id(a, m, &a->scratch);
    e = find(a, buf_str(&a->scratch), a->scratch.len, hash_string(a->scratch.p, a->scratch.len));
    if (!e && a->changed) {
        /* a cluster: its record may not have come yet; the oldest such notice makes room */
        struct orphan *o = &a->orphans[a->orphan_pos++ % ORPHANS];
        free(o->id);
        free(o->executor);
        o->id = xstrdup(buf_str(&a->scratch));
        o->executor = xstrdup(executor);
        o->at = now_ms;
        o->d = d;
        o->resolved = alerts_is_clear(m);
        return;
    }
    if (!e)
        return; /* not an alert the store knows: from the spool of an earlier run, or forgotten */
    x = exstate_of(e, executor);
    if (d == ALERT_QUEUED)
        x->attempt = 1;
    else if (d == ALERT_RETRYING)
        x->attempt++;
    if (!x->attempt) x->attempt = 1;
    x->d = d;
    x->at = now_ms;
    n = &e->hist[e->nhist % ALERTS_HISTORY];
    free(n->executor);
    n->executor = xstrdup(executor);
    n->at = now_ms;
    n->resolved = alerts_is_clear(m);
    n->outcome = d;
    n->attempt = d == ALERT_RETRYING ? x->attempt - 1 : x->attempt;
    e->nhist++;
    touched(a, e, now_ms);
}

/* ---- reporting ---- */

const char *
alerts_state_name(enum alert_state st)
{
    switch (st) {
    case ALERT_FIRING: return "firing";
    case ALERT_RESOLVED: return "resolved";
    case ALERT_SILENCED: return "silenced";
    case ALERT_INHIBITED: return "inhibited";
    case ALERT_NSTATES: break;
    }
    return "?";
}

static const char *
delivery_name(enum alert_delivery d)
{
    switch (d) {
    case ALERT_QUEUED: return "queued";
    case ALERT_DELIVERED: return "delivered";
    case ALERT_RETRYING: return "retrying";
    case ALERT_DEAD: return "dead";
    case ALERT_DROPPED: return "dropped";
    }
    return "?";
}

static enum alert_state
state_of(const struct entry *e)
{
    return e->resolved ? ALERT_RESOLVED : e->muted;
}

static const char *
resolution_name(enum alert_resolution how)
{
    switch (how) {
    case ALERT_BY_CLEAR: return "clear";
    case ALERT_BY_TIMEOUT: return "timeout";
    case ALERT_BY_HAND: return "hand";
    case ALERT_BY_NONE: break;
    }
    return NULL;
}

/* A time as ISO 8601 with ms. */
static json_t *
iso_json(uint64_t ms)
{
    struct buf b = BUF_INIT;
    json_t *j;

    civil_format_time((int64_t)ms, &b);
    j = json_stringn(b.p, b.len);
    buf_free(&b);
    return j;
}

/* iso_json, or JSON null for 0 (not yet, or never). */
static json_t *
time_json(uint64_t ms)
{
    return ms ? iso_json(ms) : json_null();
}

static json_t *
entry_json(const struct entry *e)
{
    json_t *execs = json_object(), *hist = json_array();
    const char *how = e->resolved ? resolution_name(e->how) : NULL;
    size_t i;
    uint64_t k, from;

    for (i = 0; i < e->nex; i++) {
        const struct exstate *x = &e->ex[i];
        json_t *one = json_pack("{s:s, s:o, s:b}", "state", x->at ? delivery_name(x->d) : "none",
                                "at", time_json(x->at), "sendResolved", x->send_resolved);
        json_object_set_new(execs, x->name, one);
    }
    from = e->nhist > ALERTS_HISTORY ? e->nhist - ALERTS_HISTORY : 0;
    for (k = from; k < e->nhist; k++) {
        const struct notice *n = &e->hist[k % ALERTS_HISTORY];
        json_array_append_new(
            hist, json_pack("{s:o, s:o, s:s, s:s, s:I}", "at", iso_json(n->at), "executor",
                            jsonval_str(n->executor ? n->executor : ""), "status",
                            n->resolved ? "resolved" : "firing", "outcome",
                            delivery_name(n->outcome), "attempt", (json_int_t)n->attempt));
    }
    return json_pack("{s:o, s:s, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:I, s:o}", "id",
                     jsonval_str(e->id), "state", alerts_state_name(state_of(e)), "labels",
                     jsonval_msg(e->labels), "firstSeen", iso_json(e->first), "lastSeen",
                     iso_json(e->last), "count", (json_int_t)e->count, "mutedBy",
                     jsonval_str(e->by), "resolvedAt", time_json(e->resolved ? e->resolved_at : 0),
                     "resolvedBy", how ? json_string(how) : json_null(), "resolveAt",
                     time_json(!e->resolved && e->resolve_after ? e->last + e->resolve_after : 0),
                     "executors", execs, "notified", (json_int_t)e->nhist, "notifications", hist);
}

json_t *
alerts_to_json(struct alerts *a, const struct labelmatch *query, const char *id)
{
    const struct list *lists[2] = {&a->active, &a->resolved};
    const struct entry *e;
    json_t *arr = json_array();
    int i;

    for (i = 0; i < 2; i++)
        for (e = lists[i]->head; e; e = e->next) {
            if (query && !labelmatch_match(query, e->labels)) continue;
            if (id && strcmp(id, e->id) != 0) continue;
            json_array_append_new(arr, entry_json(e));
        }
    return arr;
}

void
alerts_json(struct alerts *a, const struct labelmatch *query, const char *id, struct buf *out)
{
    jsonval_put_new(out, alerts_to_json(a, query, id));
}

size_t
alerts_count(const struct alerts *a)
{
    return a->table.count;
}

size_t
alerts_in_state(const struct alerts *a, enum alert_state st)
{
    const struct entry *e;
    size_t n = 0;

    if (st == ALERT_RESOLVED) {
        for (e = a->resolved.head; e; e = e->next) n++;
        return n;
    }
    for (e = a->active.head; e; e = e->next)
        if (e->muted == st) n++;
    return n;
}

const struct alerts_stats *
alerts_get_stats(const struct alerts *a)
{
    return &a->st;
}

/* ---- the file ---- */

static void
put_str(struct buf *b, const char *s)
{
    wire_put_bytes(b, s ? s : "", s ? strlen(s) : 0);
}

static void
encode(const struct entry *e, struct buf *b)
{
    size_t i;
    uint64_t k;

    put_str(b, e->id);
    wire_put64(b, e->first);
    wire_put64(b, e->last);
    wire_put64(b, e->count);
    wire_put32(b, (uint32_t)state_of(e));
    put_str(b, e->by);
    wire_put32(b, (uint32_t)e->nex);
    for (i = 0; i < e->nex; i++) {
        const struct exstate *x = &e->ex[i];
        put_str(b, x->name);
        wire_put32(b, (uint32_t)x->d);
        wire_put64(b, x->at);
        wire_put32(b,
                   (uint32_t)x->chosen | (uint32_t)x->send_resolved << 1 | (uint32_t)x->told << 2);
        wire_put32(b, x->attempt);
    }
    wire_put32(b, (uint32_t)e->how);
    wire_put64(b, e->resolved_at);
    wire_put64(b, e->resolve_after);
    wire_put64(b, e->nhist);
    for (k = e->nhist > ALERTS_HISTORY ? e->nhist - ALERTS_HISTORY : 0; k < e->nhist; k++) {
        const struct notice *n = &e->hist[k % ALERTS_HISTORY];
        wire_put64(b, n->at);
        put_str(b, n->executor);
        wire_put32(b, (uint32_t)n->resolved | (uint32_t)n->outcome << 1);
        wire_put32(b, n->attempt);
    }
    msg_encode(e->labels, b);
}

int
alerts_save(const struct alerts *a, const char *path)
{
    const struct list *lists[2] = {&a->resolved, &a->active};
    struct buf out = BUF_INIT, rec = BUF_INIT;
    const struct entry *e;
    unsigned char h[8];
    int i, rc;

    buf_puts(&out, FILE_HEADER);
    for (i = 0; i < 2; i++)
        for (e = lists[i]->head; e; e = e->next) {
            buf_reset(&rec);
            encode(e, &rec);
            wire_store32(h, (uint32_t)rec.len);
            wire_store32(h + 4, durable_crc32(0, rec.p, rec.len));
            buf_append(&out, h, sizeof(h));
            buf_append(&out, rec.p, rec.len);
        }
    rc = durable_replace(path, out.p, out.len);
    buf_free(&out);
    buf_free(&rec);
    return rc;
}

static char *
get_str(struct wire_reader *r)
{
    size_t len;
    const char *p = wire_get_bytes(r, &len);

    return p ? xstrndup(p, len) : NULL;
}

/* One record (of a file of version 1 or 2) into a new entry; NULL when it does not decode. */
static struct entry *
decode(const char *p, size_t len, int version)
{
    struct wire_reader r;
    struct entry *e = xcalloc(1, sizeof(*e));
    uint32_t st, nex, i, how;
    uint64_t k, from;
    size_t used;

    wire_reader_init(&r, p, len);
    e->id = get_str(&r);
    e->first = wire_get64(&r);
    e->last = wire_get64(&r);
    e->count = wire_get64(&r);
    st = wire_get32(&r);
    e->by = get_str(&r);
    nex = wire_get32(&r);
    if (!e->id || !e->by || st >= ALERT_NSTATES || nex > 1024 || r.bad) goto bad;
    if (!e->by[0]) {
        free(e->by);
        e->by = NULL;
    }
    e->resolved = st == ALERT_RESOLVED;
    e->muted = st == ALERT_RESOLVED ? ALERT_FIRING : (enum alert_state)st;
    for (i = 0; i < nex; i++) {
        char *name = get_str(&r);
        uint32_t d = wire_get32(&r);
        uint64_t at = wire_get64(&r);
        uint32_t flags = version >= 2 ? wire_get32(&r) : 0;
        uint32_t attempt = version >= 2 ? wire_get32(&r) : 0;
        if (!name || d > ALERT_DROPPED || has_executor(e, name)) {
            /* an executor twice: not written by corrald (exstate_of keeps one each), and its
             * two deliveries would not merge into one state */
            free(name);
            goto bad;
        }
        e->ex = xgrow(e->ex, &e->capex, e->nex + 1, sizeof(*e->ex));
        memset(&e->ex[e->nex], 0, sizeof(e->ex[e->nex]));
        e->ex[e->nex].name = name;
        e->ex[e->nex].d = (enum alert_delivery)d;
        e->ex[e->nex].at = at;
        e->ex[e->nex].chosen = flags & 1;
        e->ex[e->nex].send_resolved = flags & 2;
        e->ex[e->nex].told = flags & 4;
        e->ex[e->nex++].attempt = attempt;
    }
    if (version >= 2) {
        how = wire_get32(&r);
        e->resolved_at = wire_get64(&r);
        e->resolve_after = wire_get64(&r);
        e->nhist = wire_get64(&r);
        if (how > ALERT_BY_HAND || r.bad) goto bad;
        e->how = (enum alert_resolution)how;
        from = e->nhist > ALERTS_HISTORY ? e->nhist - ALERTS_HISTORY : 0;
        for (k = from; k < e->nhist && !r.bad; k++) {
            struct notice *n = &e->hist[k % ALERTS_HISTORY];
            uint32_t bits;
            n->at = wire_get64(&r);
            n->executor = get_str(&r);
            bits = wire_get32(&r);
            n->attempt = wire_get32(&r);
            if (!n->executor || (bits >> 1) > ALERT_DROPPED) goto bad;
            n->resolved = bits & 1;
            n->outcome = (enum alert_delivery)(bits >> 1);
        }
    } else if (e->resolved) {
        e->how = ALERT_BY_CLEAR;
        e->resolved_at = e->last;
    }
    if (r.bad) goto bad;
    e->labels = msg_new();
    used = (size_t)((const char *)r.p - p);
    if (msg_decode(e->labels, p + used, len - used) == 0) goto bad;
    e->since = since_of(e);
    return e;
bad:
    entry_free(e);
    return NULL;
}

/* ---- replication ---- */

int
alerts_export(struct alerts *a, const char *id, struct buf *out)
{
    struct entry *e = find_str(a, id);

    if (!e) return -1;
    e->pending = false;
    wire_put64(out, e->updated);
    encode(e, out);
    return 0;
}

/* What merging another node's record did to an entry (merge_into). */
#define MERGE_TOOK 1 /* the entry took something from the record */
#define MERGE_KEPT 2 /* the entry holds something the record lacks */

/* Orders notices: by time, then by what they say (a total order, for the union). */
static int
notice_cmp(const struct notice *x, const struct notice *y)
{
    int c;

    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    if ((c = strcmp(x->executor, y->executor))) return c;
    if (x->resolved != y->resolved) return x->resolved ? 1 : -1;
    if (x->outcome != y->outcome) return x->outcome < y->outcome ? -1 : 1;
    if (x->attempt != y->attempt) return x->attempt < y->attempt ? -1 : 1;
    return 0;
}

/* A notice of either side of a merge. */
struct side_notice {
    const struct notice *n;
    bool mine; /* of the entry merged into */
};

static int
side_cmp(const void *x, const void *y)
{
    return notice_cmp(((const struct side_notice *)x)->n, ((const struct side_notice *)y)->n);
}

/*
 * e's history becomes the union of its own and d's (notifications made on
 * different nodes: a work queue gives a delivery to any node), the last
 * ALERTS_HISTORY of it by time.  A notice both hold counts once (as a
 * multiset: n copies on one side and m on the other make max(n, m)).
 */
static int
merge_history(struct entry *e, struct entry *d)
{
    struct side_notice all[2 * ALERTS_HISTORY];
    const struct notice *u[2 * ALERTS_HISTORY];
    struct notice ring[ALERTS_HISTORY];
    size_t n = 0, nu = 0, i, j, took = 0, kept = 0, keep;
    uint64_t k, total;
    int rc = 0;

    for (k = e->nhist > ALERTS_HISTORY ? e->nhist - ALERTS_HISTORY : 0; k < e->nhist; k++)
        all[n++] = (struct side_notice){&e->hist[k % ALERTS_HISTORY], true};
    for (k = d->nhist > ALERTS_HISTORY ? d->nhist - ALERTS_HISTORY : 0; k < d->nhist; k++)
        all[n++] = (struct side_notice){&d->hist[k % ALERTS_HISTORY], false};
    qsort(all, n, sizeof(*all), side_cmp);
    for (i = 0; i < n; i = j) {
        size_t mine = 0, theirs = 0, m;
        for (j = i; j < n && notice_cmp(all[i].n, all[j].n) == 0; j++) {
            if (all[j].mine)
                mine++;
            else
                theirs++;
        }
        if (theirs > mine) took += theirs - mine;
        if (mine > theirs) kept += mine - theirs;
        for (m = 0; m < (mine > theirs ? mine : theirs); m++) u[nu++] = all[i].n;
    }
    if (kept) rc |= MERGE_KEPT;
    if (!took) return rc;
    /* notifications ever recorded: what either knew, and what the other one adds */
    total = e->nhist + took > d->nhist + kept ? e->nhist + took : d->nhist + kept;
    keep = nu < ALERTS_HISTORY ? nu : ALERTS_HISTORY;
    for (i = 0; i < keep; i++) {
        ring[i] = *u[nu - keep + i];
        ring[i].executor = xstrdup(ring[i].executor);
    }
    for (i = 0; i < ALERTS_HISTORY; i++) {
        free(e->hist[i].executor);
        memset(&e->hist[i], 0, sizeof(e->hist[i]));
    }
    for (i = 0; i < keep; i++) e->hist[(total - keep + i) % ALERTS_HISTORY] = ring[i];
    e->nhist = total;
    return rc | MERGE_TOOK;
}

/*
 * d, another node's record, merged into e field by field, so that the
 * result does not depend on the order in which the nodes' writes land:
 * the later occurrence (last seen, then count) gives the labels and times;
 * a resolution stands when it is not older than the last firing either side
 * knows (a resolution made here is not undone by a firing seen before it,
 * nor one made there by a change of this node's made later, such as a
 * delivery); each executor's latest delivery and the union of the histories
 * are kept; the muting of the newer record, which every node derives from
 * the same silences.  Returns MERGE_ bits.
 */
static int
merge_into(struct alerts *a, struct entry *e, struct entry *d)
{
    bool was_firing = !e->resolved, occ, res, mute, take_res;
    const struct entry *rs = NULL; /* whose resolution stands, if one does */
    int rc = 0;
    size_t i;

    occ = d->last > e->last || (d->last == e->last && d->count > e->count);
    if (!occ && (e->last > d->last || e->count > d->count)) rc |= MERGE_KEPT;
    if (e->resolved && d->resolved) {
        /* the later episode's; of one episode, the first resolution */
        if (d->last != e->last || d->count != e->count)
            rs = occ ? d : e;
        else
            rs = d->resolved_at < e->resolved_at ||
                         (d->resolved_at == e->resolved_at && d->how < e->how)
                     ? d
                     : e;
    } else if (e->resolved) {
        rs = e->resolved_at >= d->last ? e : NULL;
    } else if (d->resolved) {
        rs = d->resolved_at >= e->last ? d : NULL;
    }
    res = rs != NULL;
    if (res != d->resolved || (res && (rs->resolved_at != d->resolved_at || rs->how != d->how)))
        rc |= MERGE_KEPT;
    mute = d->updated > e->updated &&
           (e->muted != d->muted || !e->by != !d->by || (e->by && strcmp(e->by, d->by) != 0));
    take_res = rs == d && (!e->resolved || e->resolved_at != d->resolved_at || e->how != d->how);
    if (occ || take_res || res != e->resolved || mute) {
        unlink_entry(list_of(a, e), e);
        if (occ) {
            msg_unref(e->labels);
            e->labels = d->labels;
            d->labels = NULL;
            e->first = d->first;
            e->last = d->last;
            e->count = d->count;
            e->since = d->since;
            e->resolve_after = d->resolve_after;
        }
        if (take_res) {
            e->how = d->how;
            e->resolved_at = d->resolved_at;
        } else if (!res) {
            e->how = ALERT_BY_NONE;
            e->resolved_at = 0;
        }
        e->resolved = res;
        if (mute) {
            e->muted = d->muted;
            free(e->by);
            e->by = d->by;
            d->by = NULL;
        }
        append(list_of(a, e), e);
        rc |= MERGE_TOOK;
    }
    rc |= merge_history(e, d);
    for (i = 0; i < d->nex; i++) {
        struct exstate *x = exstate_of(e, d->ex[i].name);
        if (d->ex[i].at <= x->at) continue;
        x->d = d->ex[i].d;
        x->at = d->ex[i].at;
        x->attempt = d->ex[i].attempt;
        rc |= MERGE_TOOK;
    }
    for (i = 0; i < e->nex && !(rc & MERGE_KEPT); i++) {
        size_t j;
        if (!e->ex[i].at) continue; /* chosen here, never notified: nothing to tell */
        for (j = 0; j < d->nex && strcmp(d->ex[j].name, e->ex[i].name) != 0; j++) continue;
        if (j == d->nex || d->ex[j].at < e->ex[i].at) rc |= MERGE_KEPT;
    }
    if (d->updated > e->updated) e->updated = d->updated;
    if (was_firing && e->resolved) {
        /* resolved on another node: the executors told here that it fired hear of it */
        struct msg *m = resolution_msg(e, e->resolved_at);
        announce_resolved(a, e, m, NULL, 0);
        msg_unref(m);
    }
    if (rc & MERGE_TOOK) sources_update(a, e);
    return rc;
}

/* The notices made here before d's record came are d's; the bucket hears of them. */
static void
adopt_orphans(struct alerts *a, struct entry *d)
{
    bool any = false;
    size_t i;

    for (i = 0; i < ORPHANS; i++) {
        struct orphan *o = &a->orphans[i];
        struct exstate *x;
        struct notice *n;
        if (!o->id || strcmp(o->id, d->id) != 0) continue;
        x = exstate_of(d, o->executor);
        if (o->at > x->at) {
            x->d = o->d;
            x->at = o->at;
            if (!x->attempt) x->attempt = 1;
        }
        n = &d->hist[d->nhist % ALERTS_HISTORY];
        free(n->executor);
        n->executor = o->executor;
        n->at = o->at;
        n->resolved = o->resolved;
        n->outcome = o->d;
        n->attempt = 1;
        d->nhist++;
        free(o->id);
        memset(o, 0, sizeof(*o));
        any = true;
    }
    if (any && a->changed && !d->pending) {
        d->pending = true;
        a->changed(a->changed_arg, d->id);
    }
}

int
alerts_merge(struct alerts *a, const char *rec, size_t len)
{
    struct entry *d, *e;
    uint64_t updated, h;
    size_t i, idl;

    struct wire_reader r;

    wire_reader_init(&r, rec, len);
    updated = wire_get64(&r);
    if (r.bad) return -1;
    if (!(d = decode(rec + 8, len - 8, 2))) return -1;
    d->updated = updated;
    idl = strlen(d->id);
    h = hash_string(d->id, idl);
    e = find(a, d->id, idl, h);
    if (e) {
        int rc = merge_into(a, e, d);
        entry_free(d);
        /* what this node knows and the record lacked goes to the bucket too: its last word is the
         * union */
        if ((rc & MERGE_KEPT) && a->changed && !e->pending) {
            e->pending = true;
            a->changed(a->changed_arg, e->id);
        }
        return (rc & MERGE_TOOK) != 0;
    }
    if (a->table.count >= a->max && !make_room(a)) {
        a->st.unrecorded++;
        entry_free(d);
        return 0;
    }
    /* this node told none of its executors: another node's routes chose them */
    for (i = 0; i < d->nex; i++) d->ex[i].chosen = d->ex[i].send_resolved = d->ex[i].told = false;
    d->remote = true;
    hash_table_add(&a->table, &d->node, h);
    append(list_of(a, d), d);
    sources_update(a, d);
    adopt_orphans(a, d);
    return 1;
}

/*
 * Whether a record starts at off: its length fits, the payload begins with
 * an id of some length that fits (cheap tests that rule out almost every
 * offset of a damaged stretch), and the CRC checks out.
 */
static bool
record_at(const char *data, size_t len, size_t off, uint32_t *rl)
{
    const unsigned char *p = (const unsigned char *)data + off;
    uint32_t idl;

    if (len - off < 12) return false;
    *rl = wire_load32(p);
    idl = wire_load32(p + 8);
    if (*rl > len - off - 8 || *rl < 4 || idl > *rl - 4) return false;
    return durable_crc32(0, p + 8, *rl) == wire_load32(p + 4);
}

int
alerts_load(struct alerts *a, const char *path)
{
    size_t len, off, n = 0, skipped = 0, stretches = 0;
    char *data = durable_read_file(path, DURABLE_MAX_STATE, &len);
    size_t hl = strlen(FILE_HEADER);
    int version = 2;

    if (!data) {
        if (errno == ENOENT) return 0;
        log_msg(LOG_ERR, "alerts: cannot read %s: %s", path, durable_strerror(errno));
        a->st.load_errors++;
        return -1;
    }
    if (len >= hl && memcmp(data, FILE_HEADER_V1, hl) == 0) version = 1;
    if (len < hl || (version == 2 && memcmp(data, FILE_HEADER, hl) != 0)) {
        log_msg(LOG_ERR, "alerts: %s is not an alert store, not read", path);
        a->st.load_errors++;
        free(data);
        return -1;
    }
    for (off = hl; off < len;) {
        uint32_t rl;
        struct entry *e;
        if (!record_at(data, len, off, &rl)) {
            /* a damaged stretch: on to the next offset where a record checks out */
            size_t from = off;
            while (++off < len && !record_at(data, len, off, &rl)) continue;
            a->st.load_errors++;
            skipped += off - from;
            if (++stretches <= 10) /* a few say where; the total follows */
                log_msg(LOG_ERR, "alerts: %s: %zu damaged bytes at offset %zu skipped%s", path,
                        off - from, from, off < len ? "" : " (the end of the file)");
            continue;
        }
        e = decode(data + off + 8, rl, version);
        off += 8 + rl;
        if (!e) {
            a->st.load_errors++;
            log_msg(LOG_ERR, "alerts: %s: a record at offset %zu does not decode, skipped", path,
                    off - 8 - rl);
            continue;
        }
        {
            size_t idl = strlen(e->id);
            uint64_t h = hash_string(e->id, idl);
            struct entry *dup = find(a, e->id, idl, h);
            if (dup) forget(a, dup);
            if (a->table.count >= a->max && !make_room(a)) {
                a->st.unrecorded++;
                entry_free(e);
                continue;
            }
            hash_table_add(&a->table, &e->node, h);
            append(list_of(a, e), e);
            sources_update(a, e);
            n++;
        }
    }
    free(data);
    if (skipped)
        log_msg(LOG_ERR, "alerts: %zu read from %s; %zu damaged stretch%s (%zu bytes) skipped", n,
                path, stretches, stretches == 1 ? "" : "es", skipped);
    else
        log_msg(LOG_INFO, "alerts: %zu read from %s", n, path);
    return 0;
}
