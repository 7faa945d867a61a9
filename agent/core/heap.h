/*
 * heap: gives the free memory of glibc's heap back to the system.
 *
 * glibc keeps what the program frees inside its arenas and returns memory
 * to the system only from the top of a heap.  After a flood (thousands of
 * contexts opened by an attack, then expired), the freed memory lies all
 * over the heap, so corrald's resident size would stay at the flood's peak
 * for good: a leak, to whoever watches it.  heap_trim() asks how much the
 * arenas hold free (mallinfo2) and, from HEAP_TRIM_MIN on, gives back the
 * whole pages among it (malloc_trim, which advises them away: the mapping
 * stays, and is used again without a system call).  server.c calls it every
 * HEAP_TRIM_EVERY_S seconds from its tick.
 */
#ifndef CORRAL_HEAP_H
#define CORRAL_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define HEAP_TRIM_MIN     ((size_t)32 << 20) /* free bytes in the arenas worth a trim */
#define HEAP_TRIM_EVERY_S 10

struct heap_stats {
    uint64_t trims;          /* malloc_trim calls that gave memory back */
    uint64_t returned_bytes; /* by how much the resident size fell in them */
};

/* Trims when the arenas hold at least min bytes free; the bytes the resident size fell by. */
size_t heap_trim(size_t min, struct heap_stats *st);

#endif
