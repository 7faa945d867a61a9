/*
 * silence: tells when a source that has been sending goes quiet, and again
 * when it comes back.  A source is a host, or a host and program, chosen by
 * <silence host=... program=... after=...> entries of the configuration.
 * Both events are generated messages like those of rule actions, so they
 * reach the same outputs (and executors):
 *
 *   MESSAGE="web1 sshd has been silent for 300 seconds"   tags corral.silence, corral.alert
 *   MESSAGE="web1 sshd is sending again after 412 seconds" tags corral.silence, corral.clear
 *
 * with values silence.state (down/up), silence.after, silence.last_seen.
 * A source silent for `forget` seconds (conf_silence.forget; 0: never) is
 * forgotten: no state is kept for it any more.
 */
#ifndef CORRAL_SILENCE_H
#define CORRAL_SILENCE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/conf.h"
#include "engine/msg.h"

struct silence;

typedef void (*silence_emit_fn)(void *arg, struct msg *m);

/* max_sources bounds the number of sources tracked (the rest are counted, not watched). */
struct silence *silence_new(const struct conf_silence *rules, size_t nrules, size_t max_sources,
                            uint64_t now_ms, silence_emit_fn emit, void *arg);
void silence_free(struct silence *s);
/* A message arrived from host/program at now_ms. */
void silence_seen(struct silence *s, const struct msg *m, uint64_t now_ms);
/* Time passes: reports sources that went silent. */
void silence_tick(struct silence *s, uint64_t now_ms);
/*
 * At a reload: takes over old's sources that s watches alike (a rule with
 * the same host and program), with when they were last seen and whether
 * they are silent, so that a reload neither forgets nor repeats a silence.
 * old keeps its own; the caller frees it.  Also takes over its counters.
 */
void silence_adopt(struct silence *s, struct silence *old, uint64_t now_ms);
size_t silence_tracked(const struct silence *s);
/* Messages from sources not tracked (max_sources reached). */
uint64_t silence_untracked(const struct silence *s);
/* Sources forgotten after `forget` seconds of silence. */
uint64_t silence_forgotten(const struct silence *s);
size_t silence_silent(const struct silence *s);

#endif
