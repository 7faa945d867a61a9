/*
 * proc: the process chores corrald's engine and executor processes share
 * (proc.h).  systemd readiness is a datagram to $NOTIFY_SOCKET, written
 * here rather than linking libsystemd for one call.
 */
#include "agent/proc/proc.h"
#include "engine/log.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void
proc_sd_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    size_t len;
    int fd;

    if (!path || !path[0] || strlen(path) >= sizeof(sa.sun_path)) return;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    len = strlen(path);
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@') sa.sun_path[0] = '\0'; /* abstract namespace */
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
        log_msg(LOG_WARNING, "cannot notify systemd: %s", strerror(errno));
    close(fd);
}

int
proc_write_pidfile(const char *path)
{
    FILE *f = fopen(path, "w");

    if (!f) return -1;
    fprintf(f, "%ld\n", (long)getpid());
    return fclose(f);
}

int
proc_service_user(const struct conf *c, uid_t *uid, gid_t *gid, struct buf *err)
{
    struct passwd *pw = getpwnam(c->user);
    struct group *gr;

    if (!pw) {
        buf_printf(err, "%s: unknown user '%s'\n", c->file ? c->file : "configuration", c->user);
        return -1;
    }
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    if (c->group) {
        gr = getgrnam(c->group);
        if (!gr) {
            buf_printf(err, "%s: unknown group '%s'\n", c->file ? c->file : "configuration",
                       c->group);
            return -1;
        }
        *gid = gr->gr_gid;
    }
    return 0;
}

void
proc_mask_signals(int how)
{
    static const int handled[] = {SIGHUP, SIGTERM, SIGINT, SIGUSR1, SIGUSR2};
    sigset_t set;
    size_t i;

    sigemptyset(&set);
    for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++) sigaddset(&set, handled[i]);
    sigprocmask(how, &set, NULL);
}
