/*
 * units: durations and sizes as configuration files write them, read the
 * same way by corrald's configuration and by every executor.
 */
#ifndef CORRAL_UNITS_H
#define CORRAL_UNITS_H

#include <stddef.h>

/* Parses "300", "5s", "250ms", "10m", "2h", "1d" into seconds; -1 if malformed. */
double units_duration(const char *s);
/* Parses "65536", "64k", "10M", "1G" into bytes; 0 if malformed. */
size_t units_size(const char *s);

#endif
