/*
 * libFuzzer harness for the merge of another node's alert record
 * (alerts_merge in agent/alerting/alerts.c, which a node of a cluster runs on every
 * record the cluster's state bucket holds).  The input is the record.
 * Checked on every run: a record taken makes one alert, and merging it
 * again changes nothing; that alert exported reads back into a fresh store
 * as the same alert; a record refused takes nothing in.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/alerting/alerts.h"
#include "engine/log.h"
#include "engine/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
quiet(void *arg, int level, const char *text)
{
    (void)arg;
    (void)level;
    (void)text;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct conf c; /* the defaults: 10000 alerts, the default id, no inhibit rules */
    static bool init;
    struct alerts *a, *b;
    struct buf err = BUF_INIT, rec = BUF_INIT, j1 = BUF_INIT, j2 = BUF_INIT;
    char *id;
    int rc;

    if (!init) {
        log_set_sink(quiet, NULL);
        init = true;
    }
    a = alerts_new(&c, &err);
    if (!a) abort();
    rc = alerts_merge(a, (const char *)data, size);
    if (rc < 0 || rc > 1) {
        if (rc != -1 || alerts_count(a)) __builtin_trap(); /* refused, yet something taken in */
    } else if (rc == 0) {
        if (alerts_count(a)) __builtin_trap();
    } else {
        if (alerts_count(a) != 1) __builtin_trap();
        if (alerts_merge(a, (const char *)data, size) != 0) __builtin_trap();
        /* the id as the record has it, up to a NUL (the JSON's may be made valid UTF-8) */
        id = strndup((const char *)data + 12, wire_load32(data + 8));
        if (!id || alerts_export(a, id, &rec) != 0) __builtin_trap();
        b = alerts_new(&c, &err);
        if (!b || alerts_merge(b, rec.p, rec.len) != 1) __builtin_trap();
        alerts_json(a, NULL, NULL, &j1);
        alerts_json(b, NULL, NULL, &j2);
        if (j1.len != j2.len || memcmp(j1.p, j2.p, j1.len) != 0) __builtin_trap();
        alerts_free(b);
        free(id);
    }
    alerts_free(a);
    buf_free(&err);
    buf_free(&rec);
    buf_free(&j1);
    buf_free(&j2);
    return 0;
}
