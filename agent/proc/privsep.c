/*
 * privsep: the fork into engine and executor processes, the engine's
 * environment scrub, and the capability sets of both (see privsep.h).
 *
 * Capabilities are read and set with the capget/capset system calls
 * directly: three sets of two 32-bit words and the ambient set's prctl are
 * all this needs, not a library.
 */
#include "agent/proc/privsep.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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

/* ---- capabilities ---- */

typedef struct __user_cap_data_struct capdata[_LINUX_CAPABILITY_U32S_3];

static int
caps_get(capdata d)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    return (int)syscall(SYS_capget, &h, d);
}

static int
caps_set(capdata d)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    return (int)syscall(SYS_capset, &h, d);
}

/* The bit of capability cap in its word of a set. */
#define CAP_WORD(cap) ((cap) / 32)
#define CAP_BIT(cap)  (UINT32_C(1) << ((cap) % 32))

bool
privsep_can_change_user(void)
{
    capdata d;

    if (geteuid() == 0) return true;
    if (caps_get(d) < 0) return false;
    return (d[CAP_WORD(CAP_SETUID)].effective & CAP_BIT(CAP_SETUID)) &&
           (d[CAP_WORD(CAP_SETGID)].effective & CAP_BIT(CAP_SETGID));
}

int
privsep_caps_clear(struct buf *err)
{
    capdata d;

    memset(d, 0, sizeof(d));
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
        buf_printf(err, "privsep: cannot clear the ambient capabilities: %s\n", strerror(errno));
        return -1;
    }
    if (caps_set(d) < 0) {
        buf_printf(err, "privsep: cannot give up the capabilities: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

int
privsep_caps_engine_start(struct buf *err)
{
    static const int kept[] = {CAP_SETUID, CAP_SETGID, CAP_NET_BIND_SERVICE};
    capdata d, keep;
    size_t i;

    if (caps_get(d) < 0) {
        buf_printf(err, "privsep: cannot read the capabilities: %s\n", strerror(errno));
        return -1;
    }
    memset(keep, 0, sizeof(keep));
    for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        keep[CAP_WORD(kept[i])].permitted |= d[CAP_WORD(kept[i])].permitted & CAP_BIT(kept[i]);
        keep[CAP_WORD(kept[i])].effective |= d[CAP_WORD(kept[i])].effective & CAP_BIT(kept[i]);
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
        buf_printf(err, "privsep: cannot clear the ambient capabilities: %s\n", strerror(errno));
        return -1;
    }
    if (caps_set(keep) < 0) {
        buf_printf(err, "privsep: cannot give up capabilities: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

int
privsep_caps_executor(struct buf *err)
{
    static const int engine_only[] = {CAP_SETUID, CAP_SETGID, CAP_NET_BIND_SERVICE, CAP_KILL};
    capdata d;
    size_t i;

    if (geteuid() == 0) return 0; /* root: scripts run as <daemon user> (exec_run_as) */
    if (caps_get(d) < 0) {
        buf_printf(err, "privsep: cannot read the capabilities: %s\n", strerror(errno));
        return -1;
    }
    /* ambient first: a capability must leave the ambient set before the inheritable one */
    for (i = 0; i < sizeof(engine_only) / sizeof(engine_only[0]); i++)
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, (unsigned long)engine_only[i], 0, 0) < 0 &&
            errno != EINVAL) {
            buf_printf(err, "privsep: cannot lower an ambient capability: %s\n", strerror(errno));
            return -1;
        }
    for (i = 0; i < sizeof(engine_only) / sizeof(engine_only[0]); i++) {
        d[CAP_WORD(engine_only[i])].effective &= ~CAP_BIT(engine_only[i]);
        d[CAP_WORD(engine_only[i])].permitted &= ~CAP_BIT(engine_only[i]);
        d[CAP_WORD(engine_only[i])].inheritable &= ~CAP_BIT(engine_only[i]);
    }
    if (caps_set(d) < 0) {
        buf_printf(err, "privsep: cannot give up capabilities: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}
