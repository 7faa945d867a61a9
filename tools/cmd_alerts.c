/*
 * corral alerts / corral silence: the active alerts and the silences of a
 * running corrald, in amtool's words, over its control socket (one JSON
 * request, one JSON answer: agent/control.h).  --json prints the answer's
 * data as corrald sent it; otherwise a table.  `corral alerts show ID`
 * prints one alert whole (labels, resolution, executors, the history of its
 * notifications); `corral alerts resolve ID...` resolves alerts by hand.  An
 * answer that refuses the request (a malformed matcher, an unknown id, an
 * end before the start) exits 2 with corrald's message, and nothing was
 * changed.
 */
#include <config.h>

#include "tools/cmd.h"

#include <getopt.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sends req; 0 with the answer's data in *data (owned), 2 when refused, 1 when unreachable. */
static int
ask(const char *verb, const char *path, json_t *req, json_t **data)
{
    char *text = json_dumps(req, JSON_COMPACT);
    struct buf out = BUF_INIT;
    json_error_t jerr;
    json_t *ans;
    const char *status;
    int rc;

    json_decref(req);
    if (cmd_ask_socket(path, text, &out) < 0) {
        cmd_socket_error(verb, path);
        free(text);
        return 1;
    }
    free(text);
    ans = json_loadb(out.p ? out.p : "", out.len, 0, &jerr);
    status = json_string_value(json_object_get(ans, "status"));
    if (!ans || !status) {
        cmd_error(verb, "unexpected answer from corrald: %.200s", buf_str(&out));
        rc = 1;
    } else if (strcmp(status, "success") != 0) {
        const char *e = json_string_value(json_object_get(ans, "error"));
        cmd_error(verb, "%s", e ? e : "refused");
        rc = 2;
    } else {
        *data = json_incref(json_object_get(ans, "data"));
        rc = 0;
    }
    json_decref(ans);
    buf_free(&out);
    return rc;
}

static json_t *
jstr(const char *s)
{
    return json_string(s);
}

static json_t *
matchers(char **argv, int n)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < n; i++) json_array_append_new(a, jstr(argv[i]));
    return a;
}

static void
print_json(json_t *data)
{
    char *s = json_dumps(data, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

    puts(s ? s : "null");
    free(s);
}

static const char *
str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s ? s : "";
}

/* jnull-safe string of a JSON value, "-" when it is null or absent */
static const char *
str_or_dash(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s ? s : "-";
}

/* corral alerts show ID: one alert, whole. */
static int
show_alert(const char *path, const char *id, bool json)
{
    json_t *data = NULL, *a, *v, *n;
    const char *key;
    size_t i;
    int rc;

    rc = ask("alerts", path,
             json_pack("{s:s, s:[], s:s}", "command", "alerts", "matchers", "id", id), &data);
    if (rc) return rc;
    a = json_array_get(data, 0);
    if (!a) {
        cmd_error("alerts", "show: no alert %s", id);
        json_decref(data);
        return 2;
    }
    if (json) {
        print_json(a);
        json_decref(data);
        return 0;
    }
    printf("id:          %s\n", str(a, "id"));
    printf("state:       %s\n", str(a, "state"));
    if (json_is_string(json_object_get(a, "mutedBy")))
        printf("muted by:    %s\n", str(a, "mutedBy"));
    printf("first seen:  %s\n", str(a, "firstSeen"));
    printf("last seen:   %s\n", str(a, "lastSeen"));
    printf("count:       %lld\n", (long long)json_integer_value(json_object_get(a, "count")));
    if (json_is_string(json_object_get(a, "resolvedAt")))
        printf("resolved:    %s (%s)\n", str(a, "resolvedAt"), str_or_dash(a, "resolvedBy"));
    else if (json_is_string(json_object_get(a, "resolveAt")))
        printf("resolves at: %s unless raised again\n", str(a, "resolveAt"));
    puts("labels:");
    json_object_foreach(json_object_get(a, "labels"), key, v)
    {
        if (json_is_string(v)) printf("  %s=%s\n", key, json_string_value(v));
    }
    puts("executors:");
    json_object_foreach(json_object_get(a, "executors"), key, v)
    {
        printf("  %-16s %-9s %s%s\n", key, str(v, "state"), str_or_dash(v, "at"),
               json_is_true(json_object_get(v, "sendResolved")) ? "  (send-resolved)" : "");
    }
    printf("notifications (%lld):\n",
           (long long)json_integer_value(json_object_get(a, "notified")));
    json_array_foreach(json_object_get(a, "notifications"), i, n)
    {
        printf("  %s  %-16s %-8s %-9s attempt %lld\n", str(n, "at"), str(n, "executor"),
               str(n, "status"), str(n, "outcome"),
               (long long)json_integer_value(json_object_get(n, "attempt")));
    }
    json_decref(data);
    return 0;
}

/* corral alerts resolve ID...: all or none. */
static int
resolve_alerts(const char *path, char **ids, int n)
{
    json_t *data = NULL;
    int rc;

    if (n < 1) {
        cmd_error("alerts", "resolve: at least one alert id expected");
        return 2;
    }
    rc = ask("alerts", path,
             json_pack("{s:s, s:o}", "command", "alerts-resolve", "ids", matchers(ids, n)), &data);
    json_decref(data);
    return rc;
}

int
cmd_alerts(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = CMD_DEFAULT_SOCKET;
    bool json = false;
    json_t *data = NULL, *a;
    size_t i;
    int c, rc;

    while ((c = getopt_long(argc, argv, "s:jh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'j': json = true; break;
        case 'h':
            puts("usage: corral alerts [-s SOCKET] [--json] [MATCHER...]\n"
                 "       corral alerts [-s SOCKET] [--json] show ID\n"
                 "       corral alerts [-s SOCKET] resolve ID...\n"
                 "Lists a running corrald's active alerts (those the matchers select, such as\n"
                 "HOST=web1 or rule_id=~\"corral\\.sshd\\..*\"): id, state, count, last seen,\n"
                 "what each executor did, and the silence or alert that mutes it.  show prints\n"
                 "one alert whole, with the history of its notifications; resolve resolves\n"
                 "alerts by hand (their send-resolved executors are told).");
            return 0;
        default: return 2;
        }
    }
    if (optind < argc && strcmp(argv[optind], "show") == 0) {
        if (argc - optind != 2) {
            cmd_error("alerts", "show: one alert id expected");
            return 2;
        }
        return show_alert(path, argv[optind + 1], json);
    }
    if (optind < argc && strcmp(argv[optind], "resolve") == 0)
        return resolve_alerts(path, argv + optind + 1, argc - optind - 1);
    rc = ask("alerts", path,
             json_pack("{s:s, s:o}", "command", "alerts", "matchers",
                       matchers(argv + optind, argc - optind)),
             &data);
    if (rc) return rc;
    if (json) {
        print_json(data);
    } else {
        if (json_array_size(data))
            printf("%-40s %-9s %5s  %-20s  %s\n", "ID", "STATE", "COUNT", "LAST SEEN",
                   "EXECUTORS / MUTED BY");
        json_array_foreach(data, i, a)
        {
            const char *name;
            json_t *ex, *exs = json_object_get(a, "executors");
            bool first = true;
            printf("%-40s %-9s %5lld  %-20s  ", str(a, "id"), str(a, "state"),
                   (long long)json_integer_value(json_object_get(a, "count")), str(a, "lastSeen"));
            json_object_foreach(exs, name, ex)
            {
                printf("%s%s:%s", first ? "" : ",", name, str(ex, "state"));
                first = false;
            }
            if (json_is_string(json_object_get(a, "mutedBy")))
                printf("%s%s", first ? "" : " ", str(a, "mutedBy"));
            putchar('\n');
        }
    }
    json_decref(data);
    return 0;
}

static void
print_silences(json_t *data)
{
    json_t *sil;
    size_t i;

    if (json_array_size(data))
        printf("%-36s  %-8s  %-20s  %-12s  %s\n", "ID", "STATE", "ENDS", "CREATED BY",
               "MATCHERS / COMMENT");
    json_array_foreach(data, i, sil)
    {
        printf("%-36s  %-8s  %-20s  %-12s  %s", str(sil, "id"),
               str(json_object_get(sil, "status"), "state"), str(sil, "endsAt"),
               str(sil, "createdBy"), str(sil, "matchersText"));
        if (*str(sil, "comment")) printf("  # %s", str(sil, "comment"));
        putchar('\n');
    }
}

static const char *
user_name(void)
{
    const char *u = getenv("USER");
    struct passwd *pw;

    if (u && *u) return u;
    pw = getpwuid(getuid());
    return pw ? pw->pw_name : "";
}

int
cmd_silence(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"duration", required_argument, NULL, 'd'},
        {"end", required_argument, NULL, 'e'},
        {"start", required_argument, NULL, 'S'},
        {"comment", required_argument, NULL, 'c'},
        {"author", required_argument, NULL, 'a'},
        {"expired", no_argument, NULL, 'x'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = CMD_DEFAULT_SOCKET, *duration = NULL, *end = NULL, *start = NULL;
    const char *comment = NULL, *author = NULL, *sub = "";
    bool json = false, expired = false, quiet = false;
    json_t *data = NULL, *req;
    int c, rc, i;

    /* -s and --json right after the verb, or after the subcommand */
    for (i = 0; i < 2; i++) {
        /* the first pass stops at the subcommand; the second takes options anywhere */
        while ((c = getopt_long(argc, argv, i ? "s:jd:e:c:a:xqh" : "+s:jd:e:c:a:xqh", longopts,
                                NULL)) != -1) {
            switch (c) {
            case 's': path = optarg; break;
            case 'j': json = true; break;
            case 'd': duration = optarg; break;
            case 'e': end = optarg; break;
            case 'S': start = optarg; break;
            case 'c': comment = optarg; break;
            case 'a': author = optarg; break;
            case 'x': expired = true; break;
            case 'q': quiet = true; break;
            case 'h':
                puts("usage: corral silence [-s SOCKET] add [--duration 2h | --end TIME] [--start "
                     "TIME]\n"
                     "                  [--comment TEXT] [--author NAME] MATCHER...\n"
                     "       corral silence [-s SOCKET] list [--expired]\n"
                     "       corral silence [-s SOCKET] expire ID...\n"
                     "       corral silence [-s SOCKET] query [--expired] MATCHER...\n"
                     "Silences mute the alerts their matchers (HOST=web1, "
                     "PROGRAM=~\"cron|anacron\")\n"
                     "select until they end; add prints the new silence's id.  TIME: ISO 8601\n"
                     "(2026-12-04T18:00:00Z) or seconds since the epoch.  --json: JSON output.");
                return 0;
            default: return 2;
            }
        }
        if (i == 0) {
            if (optind >= argc) {
                cmd_error("silence", "add, list, expire or query expected");
                return 2;
            }
            sub = argv[optind];
            argc -= optind;
            argv += optind;
            optind = 0; /* glibc: start again, at argv[1] */
        }
    }
    if (strcmp(sub, "add") == 0) {
        json_t *sil;
        if (optind >= argc) {
            cmd_error("silence", "add: at least one matcher expected (HOST=web1)");
            return 2;
        }
        if (duration && end) {
            cmd_error("silence", "add: --duration or --end, not both");
            return 2;
        }
        sil = json_pack("{s:o, s:s, s:s}", "matchers", matchers(argv + optind, argc - optind),
                        "createdBy", author ? author : user_name(), "comment",
                        comment ? comment : "");
        if (end)
            json_object_set_new(sil, "endsAt", jstr(end));
        else
            json_object_set_new(sil, "duration", jstr(duration ? duration : "1h"));
        if (start) json_object_set_new(sil, "startsAt", jstr(start));
        req = json_pack("{s:s, s:o}", "command", "silence-add", "silence", sil);
        if ((rc = ask("silence", path, req, &data))) return rc;
        if (json)
            print_json(data);
        else
            puts(str(data, "silenceID"));
    } else if (strcmp(sub, "list") == 0 || strcmp(sub, "query") == 0) {
        bool query = sub[0] == 'q';
        if (!query && optind < argc) {
            cmd_error("silence", "list takes no matchers (silence query MATCHER... does)");
            return 2;
        }
        req = json_pack("{s:s, s:b, s:o}", "command", query ? "silence-query" : "silence-list",
                        "expired", expired, "matchers", matchers(argv + optind, argc - optind));
        if ((rc = ask("silence", path, req, &data))) return rc;
        if (json) {
            print_json(data);
        } else if (quiet) {
            size_t k;
            json_t *sil;
            json_array_foreach(data, k, sil) puts(str(sil, "id"));
        } else {
            print_silences(data);
        }
    } else if (strcmp(sub, "expire") == 0) {
        if (optind >= argc) {
            cmd_error("silence", "expire: at least one silence id expected");
            return 2;
        }
        req = json_pack("{s:s, s:o}", "command", "silence-expire", "ids",
                        matchers(argv + optind, argc - optind));
        if ((rc = ask("silence", path, req, &data))) return rc;
        if (json) print_json(data);
    } else {
        cmd_error("silence", "unknown subcommand '%s' (add, list, expire, query)", sub);
        return 2;
    }
    json_decref(data);
    return 0;
}
