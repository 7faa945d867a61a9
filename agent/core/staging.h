/*
 * staging: corrald's start and reload, one path (see staging.c).  It
 * implements server.h's server_start, server_reload, server_reload_failed,
 * server_check, server_check_reload, server_check_files and
 * server_spool_dir; what server.c itself calls is here.
 */
#ifndef CORRAL_STAGING_H
#define CORRAL_STAGING_H

struct server;

/*
 * Stopping: a reload that waits for the executor process (privilege
 * separation) is given up, reported as failed to whoever asked for it.
 * Nothing when none waits.
 */
void staging_abandon(struct server *s);

#endif
