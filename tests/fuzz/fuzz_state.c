/*
 * libFuzzer harness for the state-file reader (corr_load_file in
 * engine/corr.c, which corrald runs at start on whatever the state file
 * holds).  The input is a state file.  Checked on every run: a file that is
 * refused leaves no context behind; the contexts of a file that loads are
 * saved again and the copy loads into a fresh engine as the same number of
 * contexts (the writer and reader agree); and the copy with one byte
 * flipped (where the input's size says) loses at most one context, unless
 * the byte is in the magic or version, when it is refused whole.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/corr.h"
#include "engine/pdb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* rule ids the seeds use (run.sh): contexts naming another rule are dropped at load */
static const char rules[] =
    "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
    "<ruleset name='rs' id='rs'><rules>\n"
    "<rule id='r1' provider='t' context-id='${k}' context-timeout='5'>"
    "<patterns><pattern>a @NUMBER:k@ @ANYSTRING:s@</pattern></patterns>"
    "<actions><action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>end $(context-values ${s})</value></values></message></action>"
    "</actions></rule>\n"
    "<rule id='r2' provider='t' context-id='${k}' context-timeout='3' context-scope='global'>"
    "<patterns><pattern>b @NUMBER:k@</pattern></patterns></rule>\n"
    "</rules></ruleset></patterndb>\n";

static struct pdb *db;

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    (void)arg;
    (void)m;
    (void)kind;
    (void)a;
}

static uint64_t
fixed_clock(void *arg)
{
    (void)arg;
    return 1795168800000ull;
}

static struct corr *
engine(void)
{
    struct corr_opts o = {0};

    o.emit = on_emit;
    o.clock = fixed_clock;
    o.max_context_msgs = 8;
    return corr_new(db, &o);
}

/* Loads the state file at path with byte at (modulo its size) flipped; its size in *size. */
static long
load_flipped(const char *path, size_t at, size_t *size, size_t *pos)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    struct corr *c;
    long n, len;

    if (!f) abort();
    if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) <= 0) abort();
    rewind(f);
    buf = malloc((size_t)len);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) abort();
    fclose(f);
    *size = (size_t)len;
    *pos = at % (size_t)len;
    buf[*pos] ^= 0xa5;
    if (!(f = fmemopen(buf, (size_t)len, "rb"))) abort();
    c = engine();
    n = corr_load_file(c, f, NULL);
    fclose(f);
    corr_free(c);
    free(buf);
    return n;
}

static uint64_t
open_contexts(const struct corr *c)
{
    struct corr_stats st;

    corr_stats(c, &st);
    return st.contexts_open;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char copy[64];
    struct corr *c, *c2;
    size_t dropped = 0;
    long n, n2;
    FILE *f;

    if (!db) {
        db = pdb_new();
        if (pdb_load_memory(db, "fuzz.xml", rules, sizeof(rules) - 1) != 0) abort();
        /* saved with fsync on every run: memory-backed where there is such a directory */
        snprintf(copy, sizeof(copy), "%s/fuzz_state.%ld",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
    }
    if (!size || !(f = fmemopen((void *)data, size, "rb"))) return 0;
    c = engine();
    n = corr_load_file(c, f, &dropped);
    fclose(f);
    if (n < 0 && open_contexts(c)) __builtin_trap(); /* refused, yet half taken in */
    if (n >= 0) {
        if ((uint64_t)n != open_contexts(c)) __builtin_trap();
        if (corr_save(c, copy) < 0) abort();
        c2 = engine();
        n2 = corr_load(c2, copy, NULL);
        if (n2 != n) __builtin_trap();
        corr_free(c2);
        if (n > 0) {
            size_t csize, pos;
            long n3 = load_flipped(copy, size, &csize, &pos);
            if (pos < 12 ? n3 != -1 : n3 < n - 1) __builtin_trap();
        }
        unlink(copy);
    }
    corr_free(c);
    return 0;
}
