/*
 * absence: sources (host, or host and program) each with a timer armed at
 * last-seen + after; a message re-arms it, expiry reports the absence and
 * re-arms it at last-seen + forget, when the source is forgotten.  The
 * engine's timer wheel keeps this O(1) per message however many sources
 * there are; a hash table finds a message's source.
 *
 * Host names come from the messages, so anyone who can send can make up
 * sources: at most max_sources are tracked, messages from the others are
 * counted (untracked) and logged at most once a minute, and forgetting the
 * long silent ones frees room for new hosts.
 */
#include "agent/absence.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/macros.h"
#include "engine/timerwheel.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_EVERY 60000 /* ms between two lines about untracked sources */

struct source {
    struct tw_timer timer; /* first member */
    struct hash_node node; /* in keys, by key */
    const struct conf_absence *rule;
    size_t rule_index;
    char *key; /* "RULE:host\0program", keylen bytes */
    size_t keylen;
    char *host, *program; /* program NULL: the host as a whole */
    uint64_t last_seen;
    int silent;
};

struct absence {
    const struct conf_absence *rules;
    size_t nrules;
    struct tw *wheel;
    struct hash_table keys; /* the sources */
    size_t max_sources, ndown;
    uint64_t untracked, forgotten;
    uint64_t untracked_logged; /* ms of the last line about them; 0: none yet */
    uint64_t untracked_since;  /* untracked messages not logged since */
    absence_emit_fn emit;
    void *arg;
    struct buf key;
};

static tag_id tag_absence, tag_alert, tag_clear;
static nv_handle h_state, h_after, h_last;

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
    }
    return s;
}

static void
source_free(struct source *src)
{
    free(src->key);
    free(src->host);
    free(src->program);
    free(src);
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

static void
report(struct absence *s, struct source *src, bool down, uint64_t now_ms)
{
    struct msg *m = msg_new();
    struct msg_time t = {(int64_t)(now_ms / 1000), (int32_t)(now_ms % 1000) * 1000, 0};
    struct msg_time last = {(int64_t)(src->last_seen / 1000), 0, 0};
    struct buf text = BUF_INIT;
    uint64_t quiet = (now_ms - src->last_seen) / 1000;

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
    msg_set(m, NV_CLASS, "absence", 7);
    msg_set(m, NV_RULE_ID, down ? "corral.absence.down" : "corral.absence.up", down ? 19 : 17);
    msg_set(m, h_state, down ? "down" : "up", down ? 4 : 2);
    buf_reset(&text);
    buf_printf(&text, "%g", src->rule->after);
    msg_set(m, h_after, text.p, text.len);
    buf_reset(&text);
    macro_format_iso(&last, 0, &text);
    msg_set(m, h_last, text.p, text.len);
    msg_tag_set(m, tag_absence);
    msg_tag_set(m, down ? tag_alert : tag_clear);
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
        hash_table_remove(&s->keys, &src->node);
        s->ndown--;
        s->forgotten++;
        source_free(src);
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

/* A new source under s->key, or NULL (counted) when max_sources are tracked already. */
static struct source *
add(struct absence *s, size_t rule_index, const char *host, size_t hlen, const char *prog,
    size_t plen, uint64_t h, uint64_t now_ms)
{
    const struct conf_absence *r = &s->rules[rule_index];
    struct source *src;

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
    hash_table_add(&s->keys, &src->node, h);
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

void
absence_seen(struct absence *s, const struct msg *m, uint64_t now_ms)
{
    size_t hlen = 0, plen = 0, i;
    const char *host = msg_get(m, NV_HOST, &hlen), *prog = msg_get(m, NV_PROGRAM, &plen);

    if (!host) host = "", hlen = 0;
    if (!prog) prog = "", plen = 0;
    absence_tick(s, now_ms);
    for (i = 0; i < s->nrules; i++) {
        const struct conf_absence *r = &s->rules[i];
        struct source *src;
        uint64_t h;

        if (!matches(r, host, hlen, prog, plen)) continue;
        make_key(s, i, host, hlen, prog, plen);
        h = hash_string(s->key.p, s->key.len);
        src = find(s, s->key.p, s->key.len, h);
        if (!src && !(src = add(s, i, host, hlen, prog, plen, h, now_ms))) continue;
        if (src->silent) {
            src->silent = 0;
            s->ndown--;
            report(s, src, false, now_ms);
        }
        src->last_seen = now_ms;
        tw_arm(s->wheel, &src->timer, now_ms + (uint64_t)(r->after * 1000));
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

void
absence_adopt(struct absence *s, struct absence *old, uint64_t now_ms)
{
    struct hash_node *n;
    const struct source **all;
    size_t b = 0, i, k, nall = 0;

    if (!old) return;
    absence_tick(old, now_ms); /* what was due is reported by the rules it was due under */
    absence_tick(s, now_ms);
    /* taken over in the order they were seen, not the table's (which follows a per-process
     * hash): reports due at the same time come in the same order on every run */
    all = xcalloc(old->keys.count + 1, sizeof(*all));
    for (n = hash_table_iter(&old->keys, &b, NULL); n; n = hash_table_iter(&old->keys, &b, n))
        all[nall++] = hash_entry(n, struct source, node);
    qsort(all, nall, sizeof(*all), by_last_seen);
    for (k = 0; k < nall; k++) {
        const struct source *o = all[k];
        const char *prog = o->program ? o->program : "";
        struct source *src;
        uint64_t h;

        /* the same watch: the same host and program (after= and forget= may change) */
        for (i = 0; i < s->nrules; i++)
            if (same_str(s->rules[i].host, o->rule->host) &&
                same_str(s->rules[i].program, o->rule->program))
                break;
        if (i == s->nrules) continue; /* no longer watched */
        make_key(s, i, o->host, strlen(o->host), prog, strlen(prog));
        h = hash_string(s->key.p, s->key.len);
        if (find(s, s->key.p, s->key.len, h)) continue;
        src = add(s, i, o->host, strlen(o->host), prog, strlen(prog), h, now_ms);
        if (!src) continue;
        src->last_seen = o->last_seen;
        src->silent = o->silent;
        if (src->silent) {
            s->ndown++;
            if (forget_at(src) != UINT64_MAX) tw_arm(s->wheel, &src->timer, forget_at(src));
        } else {
            tw_arm(s->wheel, &src->timer, src->last_seen + (uint64_t)(src->rule->after * 1000));
        }
    }
    free(all);
    s->untracked = old->untracked;
    s->forgotten = old->forgotten;
    s->untracked_logged = old->untracked_logged;
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

size_t
absence_down(const struct absence *s)
{
    return s->ndown;
}
