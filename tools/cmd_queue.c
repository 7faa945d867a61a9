/*
 * corral queue: delivery control of a running corrald over its control
 * socket (agent/web/queuectl.h): list what each executor has queued, retrying
 * and dead-lettered, queue dead letters again, drop an entry.
 *
 *   corral queue [-s SOCKET] list [EXECUTOR] [--json]
 *   corral queue [-s SOCKET] retry EXECUTOR/ID | --all-dead [EXECUTOR]
 *   corral queue [-s SOCKET] drop EXECUTOR/ID
 *
 * Exit status: 0 done, 2 a usage error or an unknown executor or id
 * (nothing changed), 1 corrald unreachable or a failure it reported.
 */
#include <config.h>

#include "tools/cmd.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: corral queue [-s SOCKET] list [EXECUTOR] [--json]\n"
    "       corral queue [-s SOCKET] retry EXECUTOR/ID | --all-dead [EXECUTOR]\n"
    "       corral queue [-s SOCKET] drop EXECUTOR/ID\n"
    "Lists, retries or drops the alerts of a running corrald's executors, through\n"
    "its control socket (default " CMD_DEFAULT_SOCKET ").\n";

static const char *
str(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));

    return s ? s : "";
}

/*
 * One entry: id, state, attempts, alert id, then host and message (and a
 * dead letter's reason, a grouped mail's send time, a retry's next attempt).
 */
static void
print_entry(const char *executor, json_t *e)
{
    char id[512];

    snprintf(id, sizeof(id), "%s/%s", executor, str(e, "id"));
    printf("  %-28s %-10s %3lld  %-30s %s%s%s\n", id, str(e, "state"),
           (long long)json_integer_value(json_object_get(e, "attempts")), str(e, "alert_id"),
           str(e, "host"), *str(e, "host") ? ": " : "", str(e, "message"));
    if (*str(e, "reason")) printf("  %-28s %s (%s)\n", "", str(e, "reason"), str(e, "time"));
    /* held by its executor (grouped mail), or waiting to be retried */
    if (*str(e, "sends_at")) printf("  %-28s sends at %s\n", "", str(e, "sends_at"));
    if (*str(e, "next_attempt")) printf("  %-28s next attempt at %s\n", "", str(e, "next_attempt"));
    if (json_is_false(json_object_get(e, "retryable")))
        printf("  %-28s cannot be read back as an alert: drop it, or resend it by hand\n", "");
}

/* The daemon's JSON as a table, one block per executor. */
static int
print_list(const char *text)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr), *ex, *e;
    size_t i, j;

    if (!o) {
        cmd_error("queue", "corrald's answer is not JSON: %s", jerr.text);
        return 1;
    }
    json_array_foreach(json_object_get(o, "executors"), i, ex)
    {
        const char *name = str(ex, "executor");
        json_t *dead_total = json_object_get(ex, "dead_total");
        printf("executor %s: %lld queued", name,
               (long long)json_integer_value(json_object_get(ex, "queued_total")));
        if (dead_total)
            printf(", %lld dead letters in %s", (long long)json_integer_value(dead_total),
                   str(ex, "dead_letter_file"));
        else
            printf(", no dead-letter file");
        putchar('\n');
        if (*str(ex, "dead_error")) printf("  %s\n", str(ex, "dead_error"));
        json_array_foreach(json_object_get(ex, "queued"), j, e) print_entry(name, e);
        json_array_foreach(json_object_get(ex, "dead"), j, e) print_entry(name, e);
    }
    json_decref(o);
    return 0;
}

int
cmd_queue(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = CMD_DEFAULT_SOCKET, *sub, *arg = NULL, *arg2 = NULL;
    struct buf req = BUF_INIT, out = BUF_INIT;
    bool json = false;
    int c, i, rc = 0;

    /* options right after the verb, as `corral ctl -s SOCKET`; then the subcommand */
    while ((c = getopt_long(argc, argv, "+s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage_text, stderr);
        return 2;
    }
    sub = argv[optind++];
    for (i = optind; i < argc; i++) {
        if (strcmp(sub, "list") == 0 && strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (argv[i][0] == '-' && strcmp(argv[i], "--all-dead") != 0) {
            cmd_error("queue", "unknown option '%s'", argv[i]);
            return 2;
        } else if (!arg) {
            arg = argv[i];
        } else if (!arg2) {
            arg2 = argv[i];
        } else {
            cmd_error("queue", "too many arguments");
            return 2;
        }
    }
    if (strcmp(sub, "list") == 0 && !arg2) {
        buf_printf(&req, "queue list%s%s", arg ? " " : "", arg ? arg : "");
    } else if (strcmp(sub, "retry") == 0 && arg && (strcmp(arg, "--all-dead") == 0 || !arg2)) {
        buf_printf(&req, "queue retry %s%s%s", arg, arg2 ? " " : "", arg2 ? arg2 : "");
    } else if (strcmp(sub, "drop") == 0 && arg && !arg2 && strcmp(arg, "--all-dead") != 0) {
        buf_printf(&req, "queue drop %s", arg);
    } else {
        fputs(usage_text, stderr);
        return 2;
    }
    if (strpbrk(buf_str(&req), "\n\r") || req.len > 250) {
        cmd_error("queue", "an executor name or id that corrald cannot have");
        buf_free(&req);
        return 2;
    }
    if (cmd_ask_socket(path, buf_str(&req), &out) < 0) {
        cmd_socket_error("queue", path);
        buf_free(&req);
        return 1;
    }
    if (strncmp(buf_str(&out), "ERROR ", 6) == 0 || strncmp(buf_str(&out), "FAILED ", 7) == 0)
        while (out.len && out.p[out.len - 1] == '\n') out.p[--out.len] = '\0'; /* cmd_error's */
    if (strncmp(buf_str(&out), "ERROR ", 6) == 0) {
        cmd_error("queue", "%s", buf_str(&out) + 6);
        rc = 2;
    } else if (strncmp(buf_str(&out), "FAILED ", 7) == 0) {
        cmd_error("queue", "%s", buf_str(&out) + 7);
        rc = 1;
    } else if (strncmp(buf_str(&out), "OK ", 3) == 0) {
        fputs(buf_str(&out) + 3, stdout);
    } else if (strcmp(sub, "list") == 0 && buf_str(&out)[0] == '{') {
        if (json)
            fputs(buf_str(&out), stdout);
        else
            rc = print_list(buf_str(&out));
    } else {
        /* a corrald without `queue` (older) answers "unknown command" */
        cmd_error("queue", "%s", out.len ? buf_str(&out) : "no answer from corrald\n");
        rc = 1;
    }
    buf_free(&req);
    buf_free(&out);
    return rc;
}
