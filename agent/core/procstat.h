/*
 * procstat: the metrics every Prometheus exporter serves about its own
 * process (process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds), with the names and meanings of the
 * Prometheus client libraries, and corral_build_info.  They describe the
 * process that serves /metrics: under privilege separation the engine
 * process, not the executor process (doc/privsep.md).  Read from /proc and
 * getrlimit(2) at each scrape; a file that cannot be read leaves its
 * metrics out rather than serving a false 0.
 */
#ifndef CORRAL_PROCSTAT_H
#define CORRAL_PROCSTAT_H

#include "engine/buf.h"

/* Appends the metrics above, in Prometheus text format, to out. */
void procstat_metrics(struct buf *out);

#endif
