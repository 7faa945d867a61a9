/*
 * libFuzzer harness for the alert-store reader (alerts_load in
 * agent/alerting/alerts.c, which corrald runs at start on whatever STATE.alerts
 * holds).  The input is the file.  Checked on every run: the store holds
 * no more alerts than the file has records; what was read is saved again,
 * and the copy reads back into a fresh store as the same alerts with no
 * load error (the writer and the reader agree).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/alerting/alerts.h"
#include "engine/durable.h"
#include "engine/log.h"

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
    static char in[64], copy[64];
    static struct conf c; /* the defaults: 10000 alerts, the default id, no inhibit rules */
    struct alerts *a, *a2;
    struct buf err = BUF_INIT, j1 = BUF_INIT, j2 = BUF_INIT;

    if (!in[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        log_set_sink(quiet, NULL);
        snprintf(in, sizeof(in), "%s/fuzz_alerts.%ld", dir, (long)getpid());
        snprintf(copy, sizeof(copy), "%s/fuzz_alerts_copy.%ld", dir, (long)getpid());
    }
    if (durable_replace(in, data, size) < 0) abort();
    a = alerts_new(&c, &err);
    if (!a) abort();
    if (alerts_load(a, in) == 0) {
        /* a record is 8 bytes of head and 44 of payload before its message at least */
        if (alerts_count(a) > size / 52) __builtin_trap();
        if (alerts_save(a, copy) < 0) abort();
        a2 = alerts_new(&c, &err);
        if (!a2 || alerts_load(a2, copy) != 0) __builtin_trap();
        if (alerts_get_stats(a2)->load_errors) __builtin_trap();
        if (alerts_count(a2) != alerts_count(a)) __builtin_trap();
        alerts_json(a, NULL, NULL, &j1);
        alerts_json(a2, NULL, NULL, &j2);
        if (j1.len != j2.len || memcmp(j1.p, j2.p, j1.len) != 0) __builtin_trap();
        alerts_free(a2);
        unlink(copy);
    } else if (alerts_count(a)) {
        __builtin_trap(); /* refused, yet something taken in */
    }
    alerts_free(a);
    unlink(in);
    buf_free(&err);
    buf_free(&j1);
    buf_free(&j2);
    return 0;
}
