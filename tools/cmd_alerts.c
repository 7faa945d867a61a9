/*
 * corral alerts / corral silence / corral alert: the alerts and the
 * silences of a running corrald, in amtool's words, over its control socket
 * (one JSON request, one JSON answer: agent/web/control.h).  `corral alerts`
 * prints a table of fixed-width columns (a value too long for its column
 * cut, ending in MARK), -o extended every value whole in columns as wide as
 * the longest, --json (-o json) the answer's data as corrald sent it; the
 * state options keep the alerts in those states.  `corral alerts show ID`
 * prints one alert whole (labels, resolution, executors, the history of its
 * notifications); `corral alerts resolve ID...` resolves alerts by hand.
 * `corral silence update` changes a silence as Alertmanager does (corrald
 * decides whether the id stays), `corral alert add` hands corrald an alert
 * as Prometheus does.  Exit status: 0, 1 when corrald cannot be reached or
 * its answer read, 2 for a usage error or an answer that refuses the
 * request (a malformed matcher, an unknown id, an end before the start),
 * and then nothing was changed.
 */
#include <config.h>

#include "tools/cmd.h"
#include "agent/alerting/silences.h"
#include "engine/civil.h"
#include "engine/clock.h"
#include "engine/xalloc.h"

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

/* ---- the table of alerts ---- */

/* What a cell shows in place of the rest of a value cut to its column's width. */
#define MARK '~'

enum column { C_SEV, C_HOST, C_ID, C_SUMMARY, C_SINCE, C_STATE, C_MUTED, C_NCOLS };
/* The simple table's widths in characters; the last column is never cut. */
static const size_t simple_width[C_NCOLS] = {8, 16, 32, 40, 5, 9, 0};
static const char *const heading[C_NCOLS] = {"SEVERITY", "HOST",  "ALERT ID", "SUMMARY",
                                             "SINCE",    "STATE", "MUTED BY"};

/* Characters (UTF-8 code points) in s. */
static size_t
chars(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) n++;
    return n;
}

/*
 * Prints s in a column of width characters (0: as it is): cut to width - 1
 * characters and MARK when longer, padded when shorter; control
 * characters (a log line's tab or newline) as spaces, so that one alert
 * stays one line.
 */
static void
cell(const char *s, size_t width, bool last)
{
    size_t n = chars(s), shown = 0, keep = width && n > width ? width - 1 : n;
    const unsigned char *p;

    for (p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xc0) != 0x80 && shown++ == keep) break;
        putchar(*p < 0x20 || *p == 0x7f ? ' ' : *p);
    }
    if (keep < n) putchar(MARK);
    if (!last) {
        for (; n < width; n++) putchar(' ');
        fputs("  ", stdout);
    }
}

/* "45s", "12m", "3h", "2d": how long ago iso was (an alert's first seen). */
static void
ago(const char *iso, uint64_t now_ms, char *out, size_t size)
{
    int64_t ms, s;

    if (civil_parse_time(iso, &ms) < 0) {
        snprintf(out, size, "-");
        return;
    }
    s = ((int64_t)now_ms - ms) / 1000;
    if (s < 0) s = 0;
    if (s < 60)
        snprintf(out, size, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(out, size, "%lldm", (long long)(s / 60));
    else if (s < 86400)
        snprintf(out, size, "%lldh", (long long)(s / 3600));
    else
        snprintf(out, size, "%lldd", (long long)(s / 86400));
}

/* corrald's state in Alertmanager's words: a firing alert is active. */
static const char *
state_word(const json_t *a)
{
    const char *st = str(a, "state");

    return strcmp(st, "firing") == 0 ? "active" : st;
}

/* The columns of alert a; since is filled, the rest point into a. */
static void
columns(const json_t *a, uint64_t now_ms, char *since, size_t size, const char *col[C_NCOLS])
{
    const json_t *labels = json_object_get(a, "labels");

    col[C_SEV] = str_or_dash(labels, "corral.severity");
    col[C_HOST] = str_or_dash(labels, "HOST");
    col[C_ID] = str(a, "id");
    /* an alert without a summary (a rule that sets none) shows its message */
    col[C_SUMMARY] = json_is_string(json_object_get(labels, "corral.summary"))
                         ? str(labels, "corral.summary")
                         : str_or_dash(labels, "MESSAGE");
    ago(str(a, "firstSeen"), now_ms, since, size);
    col[C_SINCE] = since;
    col[C_STATE] = state_word(a);
    col[C_MUTED] = str_or_dash(a, "mutedBy");
}

static void
print_row(const char *const *col, const size_t *width, int ncols)
{
    int k;

    for (k = 0; k < ncols; k++) cell(col[k], width[k], k == ncols - 1);
    putchar('\n');
}

/* The simple table: columns of fixed widths, long values cut with MARK. */
static void
print_alerts(json_t *data, uint64_t now_ms)
{
    const char *col[C_NCOLS];
    char since[32];
    json_t *a;
    size_t i;

    print_row(heading, simple_width, C_NCOLS);
    json_array_foreach(data, i, a)
    {
        columns(a, now_ms, since, sizeof(since), col);
        print_row(col, simple_width, C_NCOLS);
    }
}

/*
 * -o extended: every value whole, the columns as wide as their longest
 * value, and when each alert began and was last seen, its count and what
 * each executor did.
 */
enum { X_FIRST = C_NCOLS, X_LAST, X_COUNT, X_EXEC, X_NCOLS };

static void
print_alerts_extended(json_t *data, uint64_t now_ms)
{
    static const char *const xheading[X_NCOLS] = {"SEVERITY",  "HOST",  "ALERT ID", "SUMMARY",
                                                  "SINCE",     "STATE", "MUTED BY", "FIRST SEEN",
                                                  "LAST SEEN", "COUNT", "EXECUTORS"};
    size_t n = json_array_size(data), width[X_NCOLS], i, k;
    const char *(*rows)[X_NCOLS] = xcalloc(n ? n : 1, sizeof(*rows));
    char(*text)[2][32] = xcalloc(n ? n : 1, sizeof(*text)); /* since, count */
    struct buf *ex = xcalloc(n ? n : 1, sizeof(*ex));
    json_t *a;

    for (k = 0; k < X_NCOLS; k++) width[k] = chars(xheading[k]);
    json_array_foreach(data, i, a)
    {
        const char *name;
        json_t *e;
        columns(a, now_ms, text[i][0], sizeof(text[i][0]), rows[i]);
        rows[i][X_FIRST] = str(a, "firstSeen");
        rows[i][X_LAST] = str(a, "lastSeen");
        snprintf(text[i][1], sizeof(text[i][1]), "%lld",
                 (long long)json_integer_value(json_object_get(a, "count")));
        rows[i][X_COUNT] = text[i][1];
        json_object_foreach(json_object_get(a, "executors"), name, e)
        {
            buf_printf(&ex[i], "%s%s:%s", ex[i].len ? "," : "", name, str(e, "state"));
        }
        rows[i][X_EXEC] = ex[i].len ? buf_str(&ex[i]) : "-";
        for (k = 0; k < X_NCOLS; k++)
            if (chars(rows[i][k]) > width[k]) width[k] = chars(rows[i][k]);
    }
    width[X_NCOLS - 1] = 0;
    print_row(xheading, width, X_NCOLS);
    for (i = 0; i < n; i++) {
        print_row(rows[i], width, X_NCOLS);
        buf_free(&ex[i]);
    }
    free(rows);
    free(text);
    free(ex);
}

/* The state filters, as amtool's: each selects a state, several add up. */
enum { F_ACTIVE = 1, F_SILENCED = 2, F_INHIBITED = 4, F_RESOLVED = 8 };

static bool
selected(const json_t *a, unsigned filter)
{
    const char *st = state_word(a);

    if (!filter) return true;
    return ((filter & F_ACTIVE) && strcmp(st, "active") == 0) ||
           ((filter & F_SILENCED) && strcmp(st, "silenced") == 0) ||
           ((filter & F_INHIBITED) && strcmp(st, "inhibited") == 0) ||
           ((filter & F_RESOLVED) && strcmp(st, "resolved") == 0);
}

int
cmd_alerts(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},
        {"active", no_argument, NULL, 'A'},
        {"silenced", no_argument, NULL, 'S'},
        {"inhibited", no_argument, NULL, 'I'},
        {"resolved", no_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = CMD_DEFAULT_SOCKET, *output = "simple";
    unsigned filter = 0;
    json_t *data = NULL, *a;
    size_t i;
    int c, rc;

    while ((c = getopt_long(argc, argv, "s:jo:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'j': output = "json"; break;
        case 'o': output = optarg; break;
        case 'A': filter |= F_ACTIVE; break;
        case 'S': filter |= F_SILENCED; break;
        case 'I': filter |= F_INHIBITED; break;
        case 'R': filter |= F_RESOLVED; break;
        case 'h':
            puts("usage: corral alerts [-s SOCKET] [--json | -o simple|extended|json]\n"
                 "                     [--active] [--silenced] [--inhibited] [--resolved] "
                 "[MATCHER...]\n"
                 "       corral alerts [-s SOCKET] [--json] show ID\n"
                 "       corral alerts [-s SOCKET] resolve ID...\n"
                 "Lists a running corrald's alerts (those the matchers select, such as\n"
                 "HOST=web1 or rule_id=~\"corral\\.sshd\\..*\"): severity, host, alert id,\n"
                 "summary, since when, state and the silence or alert that mutes it.  Values\n"
                 "too long for their column end in '~' (whole with -o extended or --json).\n"
                 "The state options select those states (several add up); without one, all\n"
                 "are listed.  show prints one alert whole, with the history of its\n"
                 "notifications; resolve resolves alerts by hand (their send-resolved\n"
                 "executors are told).");
            return 0;
        default: return 2;
        }
    }
    if (strcmp(output, "simple") != 0 && strcmp(output, "extended") != 0 &&
        strcmp(output, "json") != 0) {
        cmd_error("alerts", "-o: simple, extended or json expected, not '%s'", output);
        return 2;
    }
    if (optind < argc && strcmp(argv[optind], "show") == 0) {
        if (argc - optind != 2) {
            cmd_error("alerts", "show: one alert id expected");
            return 2;
        }
        return show_alert(path, argv[optind + 1], strcmp(output, "json") == 0);
    }
    if (optind < argc && strcmp(argv[optind], "resolve") == 0)
        return resolve_alerts(path, argv + optind + 1, argc - optind - 1);
    rc = ask("alerts", path,
             json_pack("{s:s, s:o}", "command", "alerts", "matchers",
                       matchers(argv + optind, argc - optind)),
             &data);
    if (rc) return rc;
    for (i = json_array_size(data); i-- > 0;)
        if (!selected((a = json_array_get(data, i)), filter)) json_array_remove(data, i);
    if (strcmp(output, "json") == 0)
        print_json(data);
    else if (strcmp(output, "extended") == 0)
        print_alerts_extended(data, clock_wall_ms());
    else
        print_alerts(data, clock_wall_ms());
    json_decref(data);
    return 0;
}

/* The silences' table, a header line first (an empty list too), values cut as the alerts'. */
static void
print_silences(json_t *data)
{
    static const size_t width[] = {36, 8, 20, 12, 0};
    static const char *const head[] = {"ID", "STATE", "ENDS", "CREATED BY", "MATCHERS / COMMENT"};
    struct buf last = BUF_INIT;
    json_t *sil;
    size_t i;

    print_row(head, width, 5);
    json_array_foreach(data, i, sil)
    {
        const char *col[5];
        buf_reset(&last);
        buf_puts(&last, str(sil, "matchersText"));
        if (*str(sil, "comment")) buf_printf(&last, "  # %s", str(sil, "comment"));
        col[0] = str(sil, "id");
        col[1] = str(json_object_get(sil, "status"), "state");
        col[2] = str(sil, "endsAt");
        col[3] = str(sil, "createdBy");
        col[4] = buf_str(&last);
        print_row(col, width, 5);
    }
    buf_free(&last);
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
                     "       corral silence [-s SOCKET] update ID [--duration D | --end TIME] "
                     "[--start TIME]\n"
                     "                  [--comment TEXT] [--author NAME] [MATCHER...]\n"
                     "Silences mute the alerts their matchers (HOST=web1, "
                     "PROGRAM=~\"cron|anacron\")\n"
                     "select until they end; add prints the new silence's id.  update changes\n"
                     "what it is given (--duration counts from the start) and prints the id:\n"
                     "the same, or a new one (the old one expired) when the matchers change.\n"
                     "TIME: ISO 8601\n"
                     "(2026-12-04T18:00:00Z) or seconds since the epoch.  --json: JSON output.");
                return 0;
            default: return 2;
            }
        }
        if (i == 0) {
            if (optind >= argc) {
                cmd_error("silence", "add, list, expire, query or update expected");
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
    } else if (strcmp(sub, "update") == 0) {
        /* what is given changes; corrald keeps the id unless the matchers or a started start do */
        json_t *sil = json_object();
        if (optind >= argc) {
            cmd_error("silence", "update: a silence id expected");
            json_decref(sil);
            return 2;
        }
        if (duration && end) {
            cmd_error("silence", "update: --duration or --end, not both");
            json_decref(sil);
            return 2;
        }
        if (argc - optind > 1)
            json_object_set_new(sil, "matchers", matchers(argv + optind + 1, argc - optind - 1));
        if (end) json_object_set_new(sil, "endsAt", jstr(end));
        if (duration) json_object_set_new(sil, "duration", jstr(duration));
        if (start) json_object_set_new(sil, "startsAt", jstr(start));
        if (comment) json_object_set_new(sil, "comment", jstr(comment));
        if (author) json_object_set_new(sil, "createdBy", jstr(author));
        req = json_pack("{s:s, s:s, s:o}", "command", "silence-update", "id", argv[optind],
                        "silence", sil);
        if ((rc = ask("silence", path, req, &data))) return rc;
        if (json)
            print_json(data);
        else
            puts(str(data, "silenceID"));
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
        cmd_error("silence", "unknown subcommand '%s' (add, list, expire, query, update)", sub);
        return 2;
    }
    json_decref(data);
    return 0;
}

/* "name=value" into obj; false when there is no '=' or no name. */
static bool
put_pair(json_t *obj, const char *arg)
{
    const char *eq = strchr(arg, '=');
    char *name;

    if (!eq || eq == arg) return false;
    name = strndup(arg, (size_t)(eq - arg));
    if (!name) return false;
    json_object_set_new(obj, name, jstr(eq + 1));
    free(name);
    return true;
}

/*
 * corral alert add: one alert, as amtool's `alert add` posts it, given to
 * corrald's POST /api/v2/alerts path (alert-add): routed to the executors
 * as a rule's alert.
 */
int
cmd_alert(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"annotation", required_argument, NULL, 'n'},
        {"start", required_argument, NULL, 'S'},
        {"end", required_argument, NULL, 'e'},
        {"generator-url", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = CMD_DEFAULT_SOCKET;
    json_t *labels = json_object(), *ann = json_object(), *alert = json_object(), *data = NULL;
    int c, i, rc = 2;

    while ((c = getopt_long(argc, argv, "s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'n':
            if (!put_pair(ann, optarg)) {
                cmd_error("alert", "--annotation: NAME=VALUE expected, not '%s'", optarg);
                goto out;
            }
            break;
        case 'S': json_object_set_new(alert, "startsAt", jstr(optarg)); break;
        case 'e': json_object_set_new(alert, "endsAt", jstr(optarg)); break;
        case 'g': json_object_set_new(alert, "generatorURL", jstr(optarg)); break;
        case 'h':
            puts("usage: corral alert [-s SOCKET] add [NAME] LABEL=VALUE... [--annotation "
                 "NAME=VALUE]...\n"
                 "                  [--start TIME] [--end TIME] [--generator-url URL]\n"
                 "Gives a running corrald an alert, as Prometheus does (POST /api/v2/alerts): it\n"
                 "goes through the routes to the executors like a rule's alert.  A first word\n"
                 "without '=' is its alertname.  Its id is am/ and the fingerprint of its\n"
                 "labels; HOST comes from a HOST, instance or host label, the severity from\n"
                 "severity, the summary from the summary annotation.  An end in the past\n"
                 "resolves it.  TIME: ISO 8601 or seconds since the epoch.");
            rc = 0;
            goto out;
        default: goto out;
        }
    }
    if (optind >= argc || strcmp(argv[optind], "add") != 0) {
        cmd_error("alert", "add expected (corral alerts lists them)");
        goto out;
    }
    for (i = optind + 1; i < argc; i++) {
        if (i == optind + 1 && !strchr(argv[i], '=')) {
            json_object_set_new(labels, "alertname", jstr(argv[i]));
        } else if (!put_pair(labels, argv[i])) {
            cmd_error("alert", "add: LABEL=VALUE expected, not '%s'", argv[i]);
            goto out;
        }
    }
    if (!json_object_size(labels)) {
        cmd_error("alert", "add: at least one label expected (alertname=Test HOST=web1)");
        goto out;
    }
    json_object_set_new(alert, "labels", labels);
    json_object_set_new(alert, "annotations", ann);
    labels = ann = NULL;
    rc = ask("alert", path, json_pack("{s:s, s:[O]}", "command", "alert-add", "alerts", alert),
             &data);
out:
    json_decref(labels);
    json_decref(ann);
    json_decref(alert);
    json_decref(data);
    return rc;
}
