/* clock: the wall, monotonic and steady clocks in milliseconds, and their test hook; see clock.h.
 */
#include "engine/clock.h"

#include <pthread.h>
#include <time.h>

/* NULL: the system's clocks (the daemon never sets it) */
static clock_source_fn *source;

void
clock_set_source(clock_source_fn *fn)
{
    source = fn;
}

uint64_t
clock_system_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t
read_ms(clockid_t id)
{
    return source ? source(id) : clock_system_ms(id);
}

uint64_t
clock_wall_ms(void)
{
    return read_ms(CLOCK_REALTIME);
}

uint64_t
clock_mono_ms(void)
{
    return read_ms(CLOCK_MONOTONIC);
}

/* wall minus monotonic at the first clock_steady_ms() */
static pthread_once_t steady_once = PTHREAD_ONCE_INIT;
static uint64_t steady_base;

static void
steady_init(void)
{
    steady_base = clock_wall_ms() - clock_mono_ms();
}

uint64_t
clock_steady_ms(void)
{
    pthread_once(&steady_once, steady_init);
    return steady_base + clock_mono_ms();
}

uint64_t
clock_mono_to_wall(uint64_t mono_ms)
{
    uint64_t wall = clock_wall_ms(), mono = clock_mono_ms();

    return mono_ms >= mono ? wall + (mono_ms - mono) : wall - (mono - mono_ms);
}
