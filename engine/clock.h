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
#include <time.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
uint64_t clock_wall_ms(void);
/* Milliseconds on CLOCK_MONOTONIC (since boot, suspended time excluded); not stepped. */
uint64_t clock_mono_ms(void);
/* Milliseconds since the epoch as the wall clock read at the first call, plus the monotonic
 * time since: never stepped (thread-safe). */
uint64_t clock_steady_ms(void);
/* A monotonic time (clock_mono_ms) as wall time: when it was, by the wall clock of now. */
uint64_t clock_mono_to_wall(uint64_t mono_ms);

/*
 * Test hook: the clocks read fn(CLOCK_REALTIME) and fn(CLOCK_MONOTONIC), in
 * milliseconds, instead of the system's; NULL restores the system's.  So a
 * test advances time instead of waiting for it to pass: what runs on these
 * clocks (correlation's steady time, absence, the queue's retries and
 * dedupe windows, mail grouping) sees the time fn says.  libuv's timers do
 * not: the code that arms one from these clocks arms it for the difference,
 * so a test that advances past a deadline has the timer re-armed (by new
 * work) rather than waited for.  Set it before the threads that read the
 * clocks start; clock_steady_ms() takes its base at its first call.
 */
typedef uint64_t clock_source_fn(clockid_t id);
void clock_set_source(clock_source_fn *fn);
/* The system's clock id, in milliseconds: for a source that adds to it. */
uint64_t clock_system_ms(clockid_t id);

#endif
