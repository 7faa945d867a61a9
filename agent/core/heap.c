/*
 * heap: gives the free memory of glibc's heap back to the system (see
 * heap.h for why).
 */
#include "agent/core/heap.h"
#include "engine/log.h"

#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

/* The resident size in bytes (/proc/self/statm), or 0 if it cannot be read. */
static size_t
resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    long page = sysconf(_SC_PAGESIZE);

    if (!f) return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
    fclose(f);
    return page > 0 ? (size_t)resident * (size_t)page : 0;
}

size_t
heap_trim(size_t min, struct heap_stats *st)
{
    struct mallinfo2 mi = mallinfo2();
    size_t before, after;

    if (mi.fordblks < min) return 0;
    before = resident_bytes();
    if (!malloc_trim(0)) return 0;
    after = resident_bytes();
    st->trims++;
    if (after >= before) return 0;
    st->returned_bytes += before - after;
    log_msg(LOG_INFO, "heap: gave %.1f MiB of freed memory back to the system (resident %.1f MiB)",
            (double)(before - after) / (1 << 20), (double)after / (1 << 20));
    return before - after;
}
