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
 * The file (STATE.alerts): "CORRALAL1\n", then one record per entry:
 *   4 bytes  payload length, little-endian
 *   4        CRC-32 of the payload
 *   payload  id, first, last, count, state, muted-by, executors
 *            (name, delivery, at), the message (msg_encode)
 * A record that does not check out (a torn write cannot happen: the file
 * is replaced whole, but a damaged disk can) costs that record only:
 * reading resumes at the next offset where a record checks out.
 */
#include "agent/alerts.h"
#include "actions/queue.h"
#include "engine/durable.h"
#include "engine/hash.h"
#include "engine/json.h"
#include "engine/log.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "engine/template.h"
#include "engine/wire.h"
#include "engine/xalloc.h"
#include "agent/silences.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FILE_HEADER "CORRALAL1\n"
#define LOG_EVERY   60000

struct exstate {
    char *name;
    enum alert_delivery d;
    uint64_t at;
};

struct entry {
    struct hash_node node;
    struct entry *prev, *next; /* in resolved or active, by last seen */
    char *id;
    struct msg *labels;
    uint64_t first, last, count;
    bool resolved;
    enum alert_state muted; /* ALERT_FIRING, ALERT_SILENCED or ALERT_INHIBITED */
    char *by;               /* the silence or the inhibiting alert */
    struct exstate *ex;
    size_t nex, capex;
};

struct list {
    struct entry *head, *tail;
};

struct rule {
    struct labelmatch *source, *target;
    char **equal;
    size_t nequal;
    struct entry **src; /* the entries, not resolved, that match source now */
    size_t nsrc, capsrc;
};

struct alerts {
    struct hash_table table;
    struct list resolved, active;
    size_t max;
    struct template *id_tmpl;
    struct rule *rules;
    size_t nrules;
    struct buf scratch;
    struct alerts_stats st;
    uint64_t last_log;
};

static tag_id tag_clear;
static nv_handle h_severity;

static void
init_names(void)
{
    if (!tag_clear) tag_clear = tag_intern("corral.clear", 12);
    if (!h_severity) h_severity = nv_intern_str("corral.severity");
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

static void
entry_free(struct entry *e)
{
    size_t i;

    free(e->id);
    free(e->by);
    if (e->labels) msg_unref(e->labels);
    for (i = 0; i < e->nex; i++) free(e->ex[i].name);
    free(e->ex);
    free(e);
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

/* e is among the sources of the rules whose source it matches now, and only those. */
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
        } else if (!want && k < r->nsrc) {
            r->src[k] = r->src[--r->nsrc];
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
        free(rules[i].src);
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
        rules[i].source = labelmatch_parse(in->source ? in->source : "", &e);
        if (!rules[i].source) {
            buf_printf(err, "%s:%d: inhibit source=: %s\n", file, in->line, buf_str(&e));
            rc = -1;
        }
        buf_reset(&e);
        rules[i].target = labelmatch_parse(in->target ? in->target : "", &e);
        if (!rules[i].target) {
            buf_printf(err, "%s:%d: inhibit target=: %s\n", file, in->line, buf_str(&e));
            rc = -1;
        }
        buf_free(&e);
        rules[i].equal = xcalloc(in->nequal + 1, sizeof(char *));
        for (k = 0; k < in->nequal; k++) rules[i].equal[k] = xstrdup(in->equal[k]);
        rules[i].nequal = in->nequal;
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
    a->nrules = c->ninhibits;
    hash_table_init(&a->table, 64);
    return a;
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
    buf_free(&a->scratch);
    free(a);
}

static void make_room(struct alerts *a);

void
alerts_adopt(struct alerts *a, struct alerts *old)
{
    struct list *lists[2];
    int i;

    if (!old) return;
    a->st = old->st;
    a->last_log = old->last_log;
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
    while (a->table.count > a->max) make_room(a);
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

const char *
alerts_inhibited_by(struct alerts *a, const struct msg *m, const char *id)
{
    size_t i;
    struct entry *e;

    size_t k;

    for (i = 0; i < a->nrules; i++) {
        const struct rule *r = &a->rules[i];
        if (!r->nsrc || !labelmatch_match(r->target, m)) continue;
        for (k = 0; k < r->nsrc; k++) {
            e = r->src[k];
            if (strcmp(e->id, id) != 0 && same_labels(r, e->labels, m)) return e->id;
        }
    }
    return NULL;
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

bool
alerts_known(const struct alerts *a, const char *id)
{
    size_t len = strlen(id);

    return find(a, id, len, hash_string(id, len)) != NULL;
}

/* Forgets one entry: the resolved one seen longest ago, else the oldest. */
static void
make_room(struct alerts *a)
{
    struct entry *e = a->resolved.head ? a->resolved.head : a->active.head;
    uint64_t now;

    if (!e) return;
    a->st.forgotten++;
    /* the newest alert's time is the clock: only the rate of the log line depends on it */
    now = a->active.tail && a->active.tail->last > e->last ? a->active.tail->last : e->last;
    if (!a->last_log || now - a->last_log >= LOG_EVERY) {
        log_msg(LOG_WARNING,
                "alerts: %zu alerts (max-alerts): forgetting the oldest%s ones (%llu so far)",
                a->max, a->resolved.head ? " resolved" : "", (unsigned long long)a->st.forgotten);
        a->last_log = now ? now : 1;
    }
    forget(a, e);
}

void
alerts_record(struct alerts *a, const char *id, const struct msg *m, enum alert_state muted,
              const char *by, uint64_t now_ms)
{
    size_t len = strlen(id);
    uint64_t h = hash_string(id, len);
    struct entry *e = find(a, id, len, h);
    bool clear = alerts_is_clear(m);

    a->st.recorded++;
    if (muted == ALERT_SILENCED) a->st.silenced++;
    if (muted == ALERT_INHIBITED) a->st.inhibited++;
    if (!e) {
        if (a->table.count >= a->max) make_room(a);
        e = xcalloc(1, sizeof(*e));
        e->id = xstrndup(id, len);
        e->first = now_ms;
        e->resolved = clear;
        hash_table_add(&a->table, &e->node, h);
        append(list_of(a, e), e);
    } else {
        unlink_entry(list_of(a, e), e);
        e->resolved = clear;
        append(list_of(a, e), e);
        msg_unref(e->labels);
    }
    e->labels = msg_clone(m);
    e->last = now_ms;
    e->count++;
    e->muted = muted == ALERT_SILENCED || muted == ALERT_INHIBITED ? muted : ALERT_FIRING;
    free(e->by);
    e->by = by && e->muted != ALERT_FIRING ? xstrdup(by) : NULL;
    sources_update(a, e);
}

void
alerts_delivery(struct alerts *a, const char *executor, const struct msg *m, enum alert_delivery d,
                uint64_t now_ms)
{
    struct entry *e;
    size_t i;

    alerts_id(a, m, &a->scratch);
    e = find(a, buf_str(&a->scratch), a->scratch.len, hash_string(a->scratch.p, a->scratch.len));
    if (!e)
        return; /* not an alert the store knows: from the spool of an earlier run, or forgotten */
    for (i = 0; i < e->nex; i++)
        if (strcmp(e->ex[i].name, executor) == 0) break;
    if (i == e->nex) {
        e->ex = xgrow(e->ex, &e->capex, e->nex + 1, sizeof(*e->ex));
        e->ex[e->nex++].name = xstrdup(executor);
    }
    e->ex[i].d = d;
    e->ex[i].at = now_ms;
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

static void
entry_json(const struct entry *e, struct buf *out)
{
    size_t i;

    buf_puts(out, "{\"id\":");
    json_quote(out, e->id, strlen(e->id));
    buf_printf(out, ",\"state\":\"%s\",\"labels\":", alerts_state_name(state_of(e)));
    json_format_msg(e->labels, out);
    buf_puts(out, ",\"firstSeen\":\"");
    silences_format_time((int64_t)e->first, out);
    buf_puts(out, "\",\"lastSeen\":\"");
    silences_format_time((int64_t)e->last, out);
    buf_printf(out, "\",\"count\":%llu,\"mutedBy\":", (unsigned long long)e->count);
    if (e->by)
        json_quote(out, e->by, strlen(e->by));
    else
        buf_puts(out, "null");
    buf_puts(out, ",\"executors\":{");
    for (i = 0; i < e->nex; i++) {
        if (i) buf_putc(out, ',');
        json_quote(out, e->ex[i].name, strlen(e->ex[i].name));
        buf_printf(out, ":{\"state\":\"%s\",\"at\":\"", delivery_name(e->ex[i].d));
        silences_format_time((int64_t)e->ex[i].at, out);
        buf_puts(out, "\"}");
    }
    buf_puts(out, "}}");
}

void
alerts_json(struct alerts *a, const struct labelmatch *query, struct buf *out)
{
    const struct list *lists[2] = {&a->active, &a->resolved};
    const struct entry *e;
    size_t shown = 0;
    int i;

    buf_putc(out, '[');
    for (i = 0; i < 2; i++)
        for (e = lists[i]->head; e; e = e->next) {
            if (query && !labelmatch_match(query, e->labels)) continue;
            if (shown++) buf_putc(out, ',');
            entry_json(e, out);
        }
    buf_putc(out, ']');
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

    put_str(b, e->id);
    wire_put64(b, e->first);
    wire_put64(b, e->last);
    wire_put64(b, e->count);
    wire_put32(b, (uint32_t)state_of(e));
    put_str(b, e->by);
    wire_put32(b, (uint32_t)e->nex);
    for (i = 0; i < e->nex; i++) {
        put_str(b, e->ex[i].name);
        wire_put32(b, (uint32_t)e->ex[i].d);
        wire_put64(b, e->ex[i].at);
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

/* One record into a new entry; NULL when it does not decode. */
static struct entry *
decode(const char *p, size_t len)
{
    struct wire_reader r;
    struct entry *e = xcalloc(1, sizeof(*e));
    uint32_t st, nex, i;
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
        if (!name || d > ALERT_DROPPED) {
            free(name);
            goto bad;
        }
        e->ex = xgrow(e->ex, &e->capex, e->nex + 1, sizeof(*e->ex));
        e->ex[e->nex].name = name;
        e->ex[e->nex].d = (enum alert_delivery)d;
        e->ex[e->nex++].at = at;
    }
    if (r.bad) goto bad;
    e->labels = msg_new();
    used = (size_t)((const char *)r.p - p);
    if (msg_decode(e->labels, p + used, len - used) == 0) goto bad;
    return e;
bad:
    entry_free(e);
    return NULL;
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

    if (!data) {
        if (errno == ENOENT) return 0;
        log_msg(LOG_ERR, "alerts: cannot read %s: %s", path, durable_strerror(errno));
        a->st.load_errors++;
        return -1;
    }
    if (len < hl || memcmp(data, FILE_HEADER, hl) != 0) {
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
        e = decode(data + off + 8, rl);
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
            if (a->table.count >= a->max) make_room(a);
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
