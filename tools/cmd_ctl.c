/*
 * corral ctl / corral stats / corral check-config: talking to a running
 * corrald through its control socket (or its metrics endpoint, with
 * libcurl), and checking a configuration file before deploying it.
 */
#include <config.h>

#include "tools/cmd.h"
#include "agent/conf/conf.h"
#include "agent/core/server.h"
#include "engine/durable.h"
#include "engine/pdb.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET CMD_DEFAULT_SOCKET

/* Copies everything the peer sends to out; returns 0 or -1. */
static int
copy_answer(int fd, struct buf *out)
{
    char chunk[65536];
    ssize_t n;

    while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf_append(out, chunk, (size_t)n);
    }
    return 0;
}

int
cmd_ask_socket(const char *path, const char *command, struct buf *out)
{
    struct sockaddr_un sa;
    int fd, rc = -1;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        durable_write_all(fd, command, strlen(command)) == 0 &&
        durable_write_all(fd, "\n", 1) == 0 && copy_answer(fd, out) == 0)
        rc = 0;
    close(fd);
    return rc;
}

/* Whether this process has gid among its groups. */
static bool
in_group(gid_t gid)
{
    gid_t groups[NGROUPS_MAX];
    int i, n = getgroups(NGROUPS_MAX, groups);

    if (getegid() == gid) return true;
    for (i = 0; i < n; i++)
        if (groups[i] == gid) return true;
    return false;
}

/* Whether the group database lists the user (by name) in gid. */
static bool
listed_in_group(const char *user, gid_t gid)
{
    struct group *gr = getgrgid(gid);
    char **m;

    for (m = gr ? gr->gr_mem : NULL; m && *m; m++)
        if (strcmp(*m, user) == 0) return true;
    return false;
}

/*
 * Connecting to a Unix socket needs search permission on its directories
 * and write permission on the socket: say which is missing and what gives
 * it, from the socket's owner, group and mode.
 */
static void
access_hint(const char *path)
{
    struct passwd *pw = getpwuid(geteuid());
    struct group *gr;
    char myname[64], uname[64], gname[64];
    bool known = pw != NULL;
    struct stat st;

    /* getpwuid's answer is overwritten by the next call: copied */
    snprintf(myname, sizeof(myname), "%s", pw ? pw->pw_name : "this user");

    if (lstat(path, &st) < 0) {
        fprintf(stderr,
                "  a directory on the way to %s is closed to %s (no search permission): run as "
                "root or corrald's user\n",
                path, myname);
        return;
    }
    pw = getpwuid(st.st_uid);
    if (pw)
        snprintf(uname, sizeof(uname), "%s", pw->pw_name);
    else
        snprintf(uname, sizeof(uname), "uid %ld", (long)st.st_uid);
    gr = getgrgid(st.st_gid);
    if (gr)
        snprintf(gname, sizeof(gname), "%s", gr->gr_name);
    else
        snprintf(gname, sizeof(gname), "gid %ld", (long)st.st_gid);
    fprintf(stderr, "  %s is %s:%s mode %04o; connecting needs write permission on it\n", path,
            uname, gname, (unsigned)(st.st_mode & 07777));
    if (!(st.st_mode & S_IWGRP)) {
        fprintf(stderr,
                "  it is its owner's only: run as %s or root, or open it to an operators' group "
                "(<control group=\"corral-ops\"/>, corrald.conf(5)) and add %s to it\n",
                uname, myname);
    } else if (known && !in_group(st.st_gid) && listed_in_group(myname, st.st_gid)) {
        fprintf(stderr,
                "  %s was added to group %s after this login: log in again (or run newgrp %s)\n",
                myname, gname, gname);
    } else {
        fprintf(stderr,
                "  add %s to group %s (adduser %s %s, then log in again), or run as %s or root\n",
                myname, gname, myname, gname, uname);
    }
}

void
cmd_socket_error(const char *verb, const char *path)
{
    int err = errno;

    cmd_error(verb, "%s: %s", path, strerror(err));
    if (err == ENOENT || err == ECONNREFUSED)
        fprintf(stderr,
                "  is corrald running, with <control socket=\"%s\"/> in its configuration?"
                " Another socket: -s PATH%s\n",
                path, strcmp(verb, "stats") == 0 ? "; the metrics listener: -u HOST:PORT" : "");
    else if (err == EACCES)
        access_hint(path);
}

/* libcurl's write callback: the body into the struct buf. */
static size_t
collect(char *p, size_t size, size_t n, void *out)
{
    buf_append(out, p, size * n);
    return size * n;
}

/*
 * GET /metrics from HOST:PORT (plain HTTP, no redirects; an empty HOST is
 * 127.0.0.1, an IPv6 address may stand bare): 0 with the body in out, or -1
 * with the reason in why.
 */
static int
ask_http(const char *hostport, struct buf *out, struct buf *why)
{
    const char *colon = strrchr(hostport, ':');
    struct buf url = BUF_INIT, body = BUF_INIT;
    char err[CURL_ERROR_SIZE] = "";
    size_t hostlen;
    CURLcode rc;
    long code = 0;
    CURL *e;

    if (!colon || !colon[1]) {
        buf_puts(why, "HOST:PORT expected");
        return -1;
    }
    hostlen = (size_t)(colon - hostport);
    if (!hostlen)
        buf_puts(&url, "http://127.0.0.1");
    else if (memchr(hostport, ':', hostlen) && hostport[0] != '[')
        buf_printf(&url, "http://[%.*s]", (int)hostlen, hostport);
    else
        buf_printf(&url, "http://%.*s", (int)hostlen, hostport);
    buf_printf(&url, "%s/metrics", colon);
    if (!(e = curl_easy_init())) {
        buf_puts(why, "cannot start libcurl");
        buf_free(&url);
        return -1;
    }
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)CURLPROTO_HTTP);
#endif
    curl_easy_setopt(e, CURLOPT_URL, buf_str(&url));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
    rc = curl_easy_perform(e);
    if (rc == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK)
        buf_puts(why, err[0] ? err : curl_easy_strerror(rc));
    else if (code != 200)
        buf_printf(why, "HTTP status %ld", code);
    else
        buf_append(out, body.p, body.len);
    buf_free(&url);
    buf_free(&body);
    return rc == CURLE_OK && code == 200 ? 0 : -1;
}

int
cmd_ctl(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = DEFAULT_SOCKET;
    struct buf out = BUF_INIT;
    int c, rc;

    while ((c = getopt_long(argc, argv, "+s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'h':
            puts("usage: corral ctl [-s SOCKET] stats|contexts|cluster|reload|save\n"
                 "Asks a running corrald through its control socket (default " DEFAULT_SOCKET ").");
            return 0;
        default: return 2;
        }
    }
    if (optind != argc - 1) {
        cmd_error("ctl", "one command expected: stats, contexts, cluster, reload or save");
        return 2;
    }
    if (cmd_ask_socket(path, argv[optind], &out) < 0) {
        cmd_socket_error("ctl", path);
        return 1;
    }
    fwrite(out.p, 1, out.len, stdout);
    rc = strstr(buf_str(&out), "FAILED\n") || strncmp(buf_str(&out), "unknown command", 15) == 0;
    buf_free(&out);
    return rc;
}

/* Prints the counters, in Prometheus form (--raw) or as an aligned summary. */
int
cmd_stats(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"url", required_argument, NULL, 'u'},
        {"raw", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = DEFAULT_SOCKET, *url = NULL;
    struct buf out = BUF_INIT, why = BUF_INIT;
    bool raw = false;
    char *line, *save = NULL;
    int c;

    while ((c = getopt_long(argc, argv, "s:u:rh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'u': url = optarg; break;
        case 'r': raw = true; break;
        case 'h':
            puts("usage: corral stats [-s SOCKET | -u HOST:PORT] [--raw]\n"
                 "Shows a running corrald's counters, from its control socket "
                 "(default\n" DEFAULT_SOCKET ") or from its metrics listener.");
            return 0;
        default: return 2;
        }
    }
    if (url && strncmp(url, "http://", 7) == 0) url += 7;
    if (url && ask_http(url, &out, &why) < 0) {
        cmd_error("stats", "%s: %s", url, buf_str(&why));
        buf_free(&why);
        return 1;
    }
    if (!url && cmd_ask_socket(path, "stats", &out) < 0) {
        cmd_socket_error("stats", path);
        return 1;
    }
    if (raw) {
        fwrite(out.p, 1, out.len, stdout);
    } else {
        for (line = strtok_r(out.p, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *sp = strrchr(line, ' ');
            if (line[0] == '#' || !sp) continue;
            *sp = '\0';
            printf("%-72s %s\n", line + (strncmp(line, "corral_", 7) == 0 ? 7 : 0), sp + 1);
        }
    }
    buf_free(&out);
    return 0;
}

int
cmd_check_config(int argc, char **argv)
{
    const char *schema = getenv("CORRAL_SCHEMA"); /* NULL: the built-in schema */
    struct buf err = BUF_INIT;
    struct conf *c;
    size_t rules = 0;
    int rc = 0;

    if (argc != 2 || argv[1][0] == '-') {
        puts("usage: corral check-config FILE\n"
             "Checks a corrald configuration file and the rules it names; errors come as\n"
             "file:line.  Exits 0 when corrald would start with it.");
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    c = conf_load(argv[1], schema, &err);
    if (!c) {
        fputs(buf_str(&err), stderr);
        buf_free(&err);
        return 1;
    }
    if (server_check(c, &rules, true, &err) < 0) {
        fputs(buf_str(&err), stderr);
        rc = 1;
    }
    if (!rc)
        printf("%s: OK (%zu input%s, %zu output%s, %zu rule%s)\n", argv[1], c->ninputs,
               c->ninputs == 1 ? "" : "s", c->noutputs, c->noutputs == 1 ? "" : "s", rules,
               rules == 1 ? "" : "s");
    conf_free(c);
    buf_free(&err);
    return rc;
}
