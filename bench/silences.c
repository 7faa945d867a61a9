/*
 * bench/silences: alerts per second through what routing adds for every
 * alert (agent/core/server.c's record_alert): the alert id, the silences, the
 * inhibit rules and the store's record, with 0, 100 and 10,000 silences
 * (or the counts given).  No silence matches, so each alert is checked
 * against every active one: the worst case, linear in their number.  Half
 * the silences are equality matchers, half anchored regexes, each with a
 * second matcher on the rule id.  Built by `make bench/silences`, not run
 * by `make check`:
 *
 *   bench/silences [-n ALERTS] [-r PERCENT] [SILENCES...]
 *
 * (default: -n 200000 -r 50, and 0 100 10000 silences); -r: the share of
 * regex silences.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/alerting/alerts.h"
#include "agent/conf/conf.h"
#include "agent/alerting/silences.h"
#include "engine/clock.h"
#include "engine/log.h"
#include "engine/nv.h"

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned regex_percent = 50;
static bool quiet; /* the warm-up run: the allocator's first growth is not measured */

static void
run(size_t nsilences, size_t nalerts)
{
    struct conf c;
    struct buf err = BUF_INIT, id = BUF_INIT, text = BUF_INIT;
    struct silences *s = silences_new(NULL, 3600, nsilences + 1, clock_wall_ms());
    struct alerts *a;
    struct msg *m = msg_new();
    uint64_t now = clock_wall_ms();
    size_t i, muted = 0;
    double t0, dt;

    memset(&c, 0, sizeof(c));
    c.max_alerts = 10000;
    a = alerts_new(&c, &err);
    for (i = 0; i < nsilences; i++) {
        json_t *req;
        buf_reset(&text);
        if (i % 100 < regex_percent)
            buf_printf(&text, "HOST=~\"db-[0-9]+-%zu\"", i);
        else
            buf_printf(&text, "HOST=host-%zu", i);
        req = json_pack("{s:[s,s], s:s}", "matchers", buf_str(&text), "rule_id=~\"corral\\..*\"",
                        "duration", "1h");
        buf_reset(&id);
        if (silences_add_json(s, req, now, &id, &err) < 0) {
            fprintf(stderr, "silence %zu: %s\n", i, buf_str(&err));
            exit(1);
        }
        json_decref(req);
    }
    msg_set(m, NV_RULE_ID, "corral.sshd.auth.failed", 23);
    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set_flags(m, MSG_F_GENERATED);
    t0 = now_s();
    for (i = 0; i < nalerts; i++) {
        char host[32];
        const char *by;
        int n = snprintf(host, sizeof(host), "web%zu", i % 5000);
        msg_set(m, NV_HOST, host, (size_t)n);
        alerts_id(a, m, &id);
        by = silences_match(s, m, now);
        if (!by) by = alerts_inhibited_by(a, m, buf_str(&id));
        if (by) muted++;
        alerts_record(a, buf_str(&id), m, by ? ALERT_SILENCED : ALERT_FIRING, by, NULL, 0, now);
    }
    dt = now_s() - t0;
    if (!quiet)
        printf("%6zu silences (%u%% regex): %9.0f alerts/s  (%.2f us an alert, %zu alerts, %zu "
               "muted)\n",
               nsilences, regex_percent, nalerts / dt, dt / nalerts * 1e6, nalerts, muted);
    alerts_free(a);
    silences_free(s);
    msg_unref(m);
    buf_free(&err);
    buf_free(&id);
    buf_free(&text);
}

int
main(int argc, char **argv)
{
    size_t nalerts = 200000;
    int c, i;

    log_setup("silences", "warning", "stderr");
    while ((c = getopt(argc, argv, "n:r:")) != -1) {
        if (c == 'n') {
            nalerts = strtoul(optarg, NULL, 10);
        } else if (c == 'r') {
            regex_percent = (unsigned)strtoul(optarg, NULL, 10);
        } else {
            fprintf(stderr, "usage: bench/silences [-n ALERTS] [-r PERCENT] [SILENCES...]\n");
            return 2;
        }
    }
    quiet = true;
    run(0, nalerts);
    quiet = false;
    if (optind == argc) {
        size_t sizes[] = {0, 100, 10000};
        for (i = 0; i < 3; i++) run(sizes[i], sizes[i] >= 10000 ? nalerts / 20 : nalerts);
    }
    for (i = optind; i < argc; i++) run(strtoul(argv[i], NULL, 10), nalerts);
    return 0;
}
