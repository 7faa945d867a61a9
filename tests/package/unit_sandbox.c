/*
 * unit_sandbox: runs a command under the seccomp part of corrald.service, for
 * machines where systemd is not PID 1 (CI's container) and cannot apply the
 * unit itself.  systemd implements these three directives with seccomp
 * filters; this program installs equivalent ones with libseccomp, then
 * executes the command, so that the package test can check that corrald
 * still works under them: binds its ports, saves its state, runs the exec
 * executor's scripts, sends traps and mail.
 *
 *   SystemCallFilter=      the system calls named in ALLOWFILE (one per line,
 *                          the unit's groups expanded by the caller with
 *                          systemd-analyze syscall-filter) are allowed; any
 *                          other fails with EPERM (SystemCallErrorNumber=EPERM)
 *   RestrictAddressFamilies=
 *                          socket() with a family outside -f fails with
 *                          EAFNOSUPPORT, as systemd does
 *   MemoryDenyWriteExecute=
 *                          (-w) mmap() asking for writable and executable
 *                          memory, and mprotect()/pkey_mprotect() adding
 *                          execute permission, fail with EPERM
 *
 * Usage: unit_sandbox -a ALLOWFILE [-f FAMILY,...] [-w] -- COMMAND [ARG...]
 * The filter is installed with no_new_privs set (NoNewPrivileges=yes).
 * Failures report on stderr and exit 125, like env(1) and nice(1).
 *
 * Test-only code: built by tests/package/deb.sh, never installed.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct {
    const char *name;
    int value;
} families[] = {
    {"AF_UNIX", AF_UNIX},       {"AF_INET", AF_INET},     {"AF_INET6", AF_INET6},
    {"AF_NETLINK", AF_NETLINK}, {"AF_PACKET", AF_PACKET},
};

static void
die(const char *what, int err)
{
    fprintf(stderr, "unit_sandbox: %s: %s\n", what, strerror(err));
    exit(125);
}

static int
family_value(const char *name)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (strcmp(families[i].name, name) == 0) return families[i].value;
    fprintf(stderr, "unit_sandbox: unknown address family %s\n", name);
    exit(125);
}

static void
allow_listed(scmp_filter_ctx ctx, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[128];
    if (!f) die(path, errno);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, " \t\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#') continue;
        int nr = seccomp_syscall_resolve_name(line);
        if (nr == __NR_SCMP_ERROR)
            continue; /* a name this architecture does not have, as systemd skips it */
        /* the address family and W^X rules below own these calls */
        if (strcmp(line, "socket") == 0 || strcmp(line, "mmap") == 0 ||
            strcmp(line, "mprotect") == 0 || strcmp(line, "pkey_mprotect") == 0)
            continue;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        if (rc < 0) die(line, -rc);
    }
    fclose(f);
}

/* socket(): allowed for the listed families only, EAFNOSUPPORT for the others */
static void
restrict_families(scmp_filter_ctx ctx, char *list, int allowed)
{
    int nr = SCMP_SYS(socket), ok[AF_MAX] = {0}, rc;
    if (!allowed) return; /* not in the allow list: EPERM like any other call */
    if (!list) {
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) < 0) die("socket", -rc);
        return;
    }
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
         name = strtok_r(NULL, ",", &save))
        ok[family_value(name)] = 1;
    for (int af = 0; af < AF_MAX; af++) {
        rc = seccomp_rule_add(ctx, ok[af] ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
                              SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)af));
        if (rc < 0) die("socket family", -rc);
    }
}

/* mmap() and mprotect(): allowed unless they make memory writable and executable */
static void
deny_write_execute(scmp_filter_ctx ctx, int wx, int allowed_mmap, int allowed_mprotect)
{
    int rc = 0;
    if (allowed_mmap) {
        if (wx) {
            rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                                   SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_WRITE, 0));
            rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                                   SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
        } else {
            rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 0);
        }
    }
    if (allowed_mprotect) {
        if (wx) {
            rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
                                   SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
            rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(pkey_mprotect), 1,
                                   SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
        } else {
            rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 0);
            rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(pkey_mprotect), 0);
        }
    }
    if (rc < 0) die("mmap/mprotect rules", EINVAL);
}

/* whether NAME is in the allow list (for the calls handled apart) */
static int
listed(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    char line[128];
    int found = 0;
    if (!f) die(path, errno);
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, " \t\r\n")] = '\0';
        found = strcmp(line, name) == 0;
    }
    fclose(f);
    return found;
}

int
main(int argc, char **argv)
{
    const char *allow = NULL;
    char *fams = NULL;
    int wx = 0, opt;
    while ((opt = getopt(argc, argv, "+a:f:w")) != -1) {
        switch (opt) {
        case 'a': allow = optarg; break;
        case 'f': fams = optarg; break;
        case 'w': wx = 1; break;
        default: return 125;
        }
    }
    if (!allow || optind >= argc) {
        fprintf(stderr, "usage: unit_sandbox -a ALLOWFILE [-f FAMILY,...] [-w] -- COMMAND...\n");
        return 125;
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!ctx) die("seccomp_init", ENOMEM);
    allow_listed(ctx, allow);
    restrict_families(ctx, fams, listed(allow, "socket"));
    deny_write_execute(ctx, wx, listed(allow, "mmap"), listed(allow, "mprotect"));
    int rc = seccomp_load(ctx); /* sets no_new_privs first (SCMP_FLTATR_CTL_NNP) */
    if (rc < 0) die("seccomp_load", -rc);
    seccomp_release(ctx);
    execvp(argv[optind], argv + optind);
    die(argv[optind], errno);
}
