/*
 * silence: sources (host, or host and program) each with a timer armed at
 * last-seen + after; a message re-arms it, expiry reports the silence.  The
 * engine's timer wheel keeps this O(1) per message however many sources
 * there are.
 */
#include "agent/silence.h"
#include "engine/macros.h"
#include "engine/strtab.h"
#include "engine/timerwheel.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct source {
    struct tw_timer timer; /* first member */
    const struct conf_silence *rule;
    char *host, *program; /* program NULL: the host as a whole */
    uint64_t last_seen;
    int silent;
};

struct silence {
    const struct conf_silence *rules;
    size_t nrules;
    struct tw *wheel;
    struct strtab *keys; /* "host\0program" -> index into sources + 1 */
    struct source **sources;
    size_t nsources, capsources, max_sources, nsilent;
    uint64_t untracked;
    silence_emit_fn emit;
    void *arg;
    struct buf key;
};

static tag_id tag_silence, tag_alert, tag_clear;
static nv_handle h_state, h_after, h_last;

struct silence *
silence_new(const struct conf_silence *rules, size_t nrules, size_t max_sources, uint64_t now_ms,
            silence_emit_fn emit, void *arg)
{
    struct silence *s = xcalloc(1, sizeof(*s));

    s->rules = rules;
    s->nrules = nrules;
    s->wheel = tw_new(now_ms);
    s->keys = strtab_new((uint32_t)max_sources);
    s->max_sources = max_sources;
    s->emit = emit;
    s->arg = arg;
    if (!tag_silence) {
        tag_silence = tag_intern("corral.silence", 14);
        tag_alert = tag_intern("corral.alert", 12);
        tag_clear = tag_intern("corral.clear", 12);
        h_state = nv_intern_str("silence.state");
        h_after = nv_intern_str("silence.after");
        h_last = nv_intern_str("silence.last_seen");
    }
    return s;
}

void
silence_free(struct silence *s)
{
    size_t i;

    if (!s) return;
    for (i = 0; i < s->nsources; i++) {
        free(s->sources[i]->host);
        free(s->sources[i]->program);
        free(s->sources[i]);
    }
    free(s->sources);
    strtab_free(s->keys);
    tw_free(s->wheel);
    buf_free(&s->key);
    free(s);
}

static bool
matches(const struct conf_silence *r, const char *host, size_t hlen, const char *prog, size_t plen)
{
    if (r->host && (strlen(r->host) != hlen || memcmp(r->host, host, hlen))) return false;
    if (r->program && (strlen(r->program) != plen || memcmp(r->program, prog, plen))) return false;
    return true;
}

static void
report(struct silence *s, struct source *src, bool down, uint64_t now_ms)
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
    msg_set(m, NV_CLASS, "silence", 7);
    msg_set(m, NV_RULE_ID, down ? "corral.silence.down" : "corral.silence.up", down ? 19 : 17);
    msg_set(m, h_state, down ? "down" : "up", down ? 4 : 2);
    buf_reset(&text);
    buf_printf(&text, "%g", src->rule->after);
    msg_set(m, h_after, text.p, text.len);
    buf_reset(&text);
    macro_format_iso(&last, 0, &text);
    msg_set(m, h_last, text.p, text.len);
    msg_tag_set(m, tag_silence);
    msg_tag_set(m, down ? tag_alert : tag_clear);
    s->emit(s->arg, m);
    msg_unref(m);
    buf_free(&text);
}

static void
fire(struct tw_timer *t, void *arg)
{
    struct silence *s = arg;
    struct source *src = (struct source *)t;

    src->silent = 1;
    s->nsilent++;
    report(s, src, true, tw_now(s->wheel));
}

void
silence_seen(struct silence *s, const struct msg *m, uint64_t now_ms)
{
    size_t hlen = 0, plen = 0, i;
    const char *host = msg_get(m, NV_HOST, &hlen), *prog = msg_get(m, NV_PROGRAM, &plen);

    if (!host) host = "", hlen = 0;
    if (!prog) prog = "", plen = 0;
    silence_tick(s, now_ms);
    for (i = 0; i < s->nrules; i++) {
        const struct conf_silence *r = &s->rules[i];
        struct source *src;
        uint32_t id;

        if (!matches(r, host, hlen, prog, plen)) continue;
        buf_reset(&s->key);
        buf_printf(&s->key, "%zu:", i);
        buf_append(&s->key, host, hlen);
        if (r->program) {
            buf_putc(&s->key, '\0');
            buf_append(&s->key, prog, plen);
        }
        id = strtab_lookup(s->keys, s->key.p, s->key.len);
        if (!id) {
            id = strtab_intern(s->keys, s->key.p, s->key.len);
            if (!id) {
                s->untracked++;
                continue;
            }
            src = xcalloc(1, sizeof(*src));
            tw_timer_init(&src->timer);
            src->rule = r;
            src->host = xstrndup(host, hlen);
            src->program = r->program ? xstrndup(prog, plen) : NULL;
            s->sources = xgrow(s->sources, &s->capsources, s->nsources + 1, sizeof(*s->sources));
            s->sources[s->nsources++] = src;
        } else {
            src = s->sources[id - 1];
        }
        if (src->silent) {
            src->silent = 0;
            s->nsilent--;
            report(s, src, false, now_ms);
        }
        src->last_seen = now_ms;
        tw_arm(s->wheel, &src->timer, now_ms + (uint64_t)(r->after * 1000));
    }
}

void
silence_tick(struct silence *s, uint64_t now_ms)
{
    tw_advance(s->wheel, now_ms, fire, s);
}

size_t
silence_tracked(const struct silence *s)
{
    return s->nsources;
}

size_t
silence_silent(const struct silence *s)
{
    return s->nsilent;
}
