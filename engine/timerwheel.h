/*
 * timerwheel: timers for correlation contexts.  A hierarchical timing wheel
 * (8 levels of 64 slots, millisecond ticks) with occupancy bitmaps, so that
 * arming, re-arming and cancelling cost O(1) and advancing time by a day
 * with a million timers pending only visits the slots that hold timers.
 *
 * Timers are intrusive: the owner embeds a struct tw_timer and gets it back
 * in the expiry callback.  Time only moves forward.
 */
#ifndef CORRAL_TIMERWHEEL_H
#define CORRAL_TIMERWHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tw_timer {
    struct tw_timer *next, *prev;
    uint64_t expires;    /* fires once the wheel's time reaches this */
    uint64_t order;      /* ties on expires fire by order, then in arming order */
    uint64_t seq;        /* arming order */
    int16_t level, slot; /* -1: not armed */
};

struct tw;

typedef void (*tw_fire_fn)(struct tw_timer *t, void *arg);

struct tw *tw_new(uint64_t now);
void tw_free(struct tw *w);
uint64_t tw_now(const struct tw *w);
size_t tw_count(const struct tw *w);

void tw_timer_init(struct tw_timer *t);
bool tw_armed(const struct tw_timer *t);
/* Arms (or re-arms) a timer to fire at `expires`; a time not after now fires at the next advance.
 */
void tw_arm(struct tw *w, struct tw_timer *t, uint64_t expires);
/* The same, with an order among timers due at the same time (tw_arm: 0). */
void tw_arm_ordered(struct tw *w, struct tw_timer *t, uint64_t expires, uint64_t order);
void tw_cancel(struct tw *w, struct tw_timer *t);
/* Sets the arming number of the next timer armed (they count up from there). */
void tw_set_seq(struct tw *w, uint64_t seq);
/* The arming number the next timer armed gets. */
uint64_t tw_seq(const struct tw *w);

/*
 * Moves time forward to `to` (no-op if not later than now), firing every timer
 * whose time has come in order of expiry, then order, then arming order.  fn
 * may arm and cancel timers, including ones that are due.
 */
void tw_advance(struct tw *w, uint64_t to, tw_fire_fn fn, void *arg);
/* Fires every pending timer in order, as if time jumped to infinity (time itself stays). */
void tw_expire_all(struct tw *w, tw_fire_fn fn, void *arg);
/* The earliest expiry of a pending timer, or UINT64_MAX if there is none. */
uint64_t tw_next_expiry(const struct tw *w);
/*
 * Advancing to a time before this one fires no timer and moves none between
 * slots: it only sets now.  Cheap (the slots' bitmaps), unlike
 * tw_next_expiry(), and at most the next expiry.
 */
uint64_t tw_quiet_until(const struct tw *w);

#endif
