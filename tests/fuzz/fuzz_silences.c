/*
 * libFuzzer harness for the silences-file reader (silences_new in
 * agent/alerting/silences.c, which corrald runs at start on whatever
 * STATE.silences holds).  The input is the file.  Checked on every run:
 * what was read is saved to another file (silences_set_path), and that
 * reads back into a fresh set as the same silences with no load error
 * (the writer and the reader agree).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/alerting/silences.h"
#include "engine/durable.h"
#include "engine/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW       1796400000000ULL      /* 2026-12-04 */
#define RETENTION (100.0 * 365 * 86400) /* nothing dropped for its age */

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
    static char in[64], corrupt[80], copy[64];
    struct silences *s, *s2;
    struct buf j1 = BUF_INIT, j2 = BUF_INIT;
    struct msg *m = msg_new();

    if (!in[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        log_set_sink(quiet, NULL);
        snprintf(in, sizeof(in), "%s/fuzz_silences.%ld", dir, (long)getpid());
        snprintf(corrupt, sizeof(corrupt), "%s.corrupt", in);
        snprintf(copy, sizeof(copy), "%s/fuzz_silences_copy.%ld", dir, (long)getpid());
    }
    if (durable_replace(in, data, size) < 0) abort();
    s = silences_new(in, RETENTION, 100000, NOW);
    msg_set(m, NV_HOST, "web1", 4);
    silences_match(s, m, NOW);
    silences_set_path(s, copy);
    s2 = silences_new(copy, RETENTION, 100000, NOW);
    if (silences_get_stats(s2)->load_errors) __builtin_trap();
    if (silences_count(s2) != silences_count(s)) __builtin_trap();
    silences_json(s, NULL, true, NOW, &j1);
    silences_json(s2, NULL, true, NOW, &j2);
    if (j1.len != j2.len || memcmp(j1.p, j2.p, j1.len) != 0) __builtin_trap();
    silences_free(s);
    silences_free(s2);
    msg_unref(m);
    unlink(in);
    unlink(corrupt);
    unlink(copy);
    buf_free(&j1);
    buf_free(&j2);
    return 0;
}
