/*
 * privsep: the fork into engine and executor processes, and the engine's
 * environment scrub (see privsep.h).
 */
#include "agent/privsep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/xalloc.h"

extern char **environ;

enum privsep_role
privsep_split(int *fd, pid_t *engine_pid, struct buf *err)
{
    int sv[2];
    pid_t parent = getpid(), pid;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
        buf_printf(err, "privsep: socketpair: %s\n", strerror(errno));
        return PRIVSEP_FAILED;
    }
    pid = fork();
    if (pid < 0) {
        buf_printf(err, "privsep: fork: %s\n", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return PRIVSEP_FAILED;
    }
    if (pid == 0) {
        close(sv[1]);
        /* the executor may have died between fork and prctl: then stop at once */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != parent) {
            close(sv[0]);
            buf_printf(err, "privsep: the executor process is gone\n");
            return PRIVSEP_FAILED;
        }
        *fd = sv[0];
        return PRIVSEP_ENGINE;
    }
    close(sv[0]);
    *fd = sv[1];
    *engine_pid = pid;
    return PRIVSEP_EXECUTOR;
}

/* Whether the engine keeps variable s ("NAME=value"): locale and time zone only. */
static bool
kept(const char *s)
{
    static const char *const names[] = {"TZ=", "LANG=", "LANGUAGE=", "TMPDIR=", "LC_"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strncmp(s, names[i], strlen(names[i])) == 0) return true;
    return false;
}

void
privsep_scrub_environment(void)
{
    char **e, **keep;
    size_t n = 0, k = 0, i;

    for (e = environ; e && *e; e++) n++;
    keep = xcalloc(n + 1, sizeof(*keep));
    for (e = environ; e && *e; e++) {
        if (kept(*e))
            keep[k++] = xstrdup(*e);
        else
            explicit_bzero(*e, strlen(*e)); /* in place: the initial block, or the heap */
    }
    clearenv();
    for (i = 0; i < k; i++) {
        char *eq = strchr(keep[i], '=');
        *eq = '\0';
        setenv(keep[i], eq + 1, 1);
        free(keep[i]);
    }
    free(keep);
}
