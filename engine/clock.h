/*
 * clock: the clocks, in milliseconds, read in one place.  Message time and
 * correlation time are the messages' own (see corr.h); this is for what
 * happens now.  The rule for steps of the system clock (settimeofday, an
 * NTP step, a virtual machine resumed): stamps follow them, intervals never
 * do.  So:
 *   - clock_wall_ms() stamps things: received messages without a stamp of
 *     their own, alert times, silences' absolute start and end times;
 *   - clock_mono_ms() measures intervals: absence (how long a source has
 *     been quiet), uptime; libuv's timers (retries, linger) run on the same
 *     clock;
 *   - clock_steady_ms() is the clock of correlation: epoch milliseconds like
 *     the wall clock, read once at the first call and moved on by the
 *     monotonic clock since, so that context timeouts and rate windows of
 *     an idle engine count real time, and a stamp from the future is cut
 *     at a time the wall clock cannot be stepped to.
 */
#ifndef CORRAL_CLOCK_H
#define CORRAL_CLOCK_H

#include <stdint.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
uint64_t clock_wall_ms(void);
/* Milliseconds on CLOCK_MONOTONIC (since boot, suspended time excluded); not stepped. */
uint64_t clock_mono_ms(void);
/* Milliseconds since the epoch as the wall clock read at the first call, plus the monotonic
 * time since: never stepped (thread-safe). */
uint64_t clock_steady_ms(void);
/* A monotonic time (clock_mono_ms) as wall time: when it was, by the wall clock of now. */
uint64_t clock_mono_to_wall(uint64_t mono_ms);

#endif
