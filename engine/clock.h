/*
 * clock: the wall clock in milliseconds, read in one place.  Message time
 * and correlation time are the messages' own (see corr.h); this is for what
 * happens now: retries, rate limits, absence detection, uptime.
 */
#ifndef CORRAL_CLOCK_H
#define CORRAL_CLOCK_H

#include <stdint.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
uint64_t clock_wall_ms(void);

#endif
