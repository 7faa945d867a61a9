/*
 * sandbox: the engine process's seccomp filter (see sandbox.h).
 *
 * The list is by name, so that it reads as what it allows and builds on
 * every architecture: a name the architecture does not have (stat on
 * arm64) is skipped.  Anything not named here kills the process: a parser
 * bug that takes control of the engine can read and write sockets and the
 * files the service user may, and nothing else (no program, no ptrace, no
 * mount, no change of user, no new privileges).
 */
#include "agent/proc/sandbox.h"

#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>

static const char *const allowed[] = {
    /* descriptors, files and directories (inputs, outputs, state, spool-less saves) */
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "lseek",
    "open",
    "openat",
    "close",
    "close_range",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "ioctl",
    "fstat",
    "stat",
    "lstat",
    "newfstatat",
    "statx",
    "fstatfs",
    "statfs",
    "access",
    "faccessat",
    "faccessat2",
    "getdents64",
    "readlink",
    "readlinkat",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "mkdir",
    "mkdirat",
    "rmdir",
    "chmod",
    "fchmod",
    "fchmodat",
    "umask",
    "fsync",
    "fdatasync",
    "ftruncate",
    "getcwd",
    "pipe",
    "pipe2",
    /* the libuv loop */
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "eventfd2",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "inotify_init1",
    "inotify_add_watch",
    "inotify_rm_watch",
    /* sockets (socket itself is filtered by family below) */
    "socketpair",
    "bind",
    "listen",
    "accept",
    "accept4",
    "connect",
    "getsockname",
    "getpeername",
    "setsockopt",
    "getsockopt",
    "shutdown",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    /* memory */
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "membarrier",
    /* threads (libuv's pool, the HTTP server's) and the saving child */
    "clone",
    "futex",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "set_tid_address",
    "exit",
    "exit_group",
    "wait4",
    "waitid",
    "sched_yield",
    "sched_getaffinity",
    "getpid",
    "getppid",
    "gettid",
    "prlimit64",
    "getrlimit",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "prctl",
    "arch_prctl",
    "restart_syscall",
    /* signals */
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigtimedwait",
    "sigaltstack",
    "kill",
    "tgkill",
    "tkill",
    /* time, randomness, host */
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "nanosleep",
    "gettimeofday",
    "time",
    "getrandom",
    "uname",
    "sysinfo",
};

int
sandbox_engine(enum sandbox_mode mode, struct buf *err)
{
    static const int families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
    scmp_filter_ctx ctx;
    size_t i;
    int rc = 0, nr;

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        buf_printf(err, "cannot set no_new_privs: %s\n", strerror(errno));
        return -1;
    }
    ctx = seccomp_init(mode == SANDBOX_LOG ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS);
    if (!ctx) {
        buf_printf(err, "cannot create the seccomp filter\n");
        return -1;
    }
    /*
     * Every thread of the process gets the filter, not only the caller:
     * threads started before it (libuv's pool, worker threads) would
     * otherwise run unconfined.  The load fails if one cannot take it.
     */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]) && rc == 0; i++) {
        nr = seccomp_syscall_resolve_name(allowed[i]);
        if (nr == __NR_SCMP_ERROR) continue; /* not on this architecture */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
    }
    for (i = 0; i < sizeof(families) / sizeof(families[0]) && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]));
    if (rc == 0) {
        /* every other family: refused as systemd refuses it, not fatal (getaddrinfo probes) */
        static const int refuse[] = {AF_PACKET, AF_BLUETOOTH, AF_ALG, AF_KEY, AF_VSOCK};
        for (i = 0; i < sizeof(refuse) / sizeof(refuse[0]) && rc == 0; i++)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                  SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)refuse[i]));
    }
    /* glibc tries clone3 first and falls back to clone (allowed above) on ENOSYS */
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc == 0) rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc < 0) {
        buf_printf(err, "cannot load the seccomp filter: %s\n", strerror(-rc));
        return -1;
    }
    return 0;
}
