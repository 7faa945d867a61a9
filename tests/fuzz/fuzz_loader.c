/*
 * libFuzzer harness for the patterndb loader: the input is a rule file.
 * A database that loads is also used to classify a few messages and to run
 * its own examples, so whatever the loader accepts is exercised as well.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <libxml/parser.h>

#include "engine/pdb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
silence(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const programs[] = {"sshd", "p", "", "postfix/smtpd"};
    struct pdb *db = pdb_new();
    struct msg *m = msg_new();
    size_t i;

    xmlSetGenericErrorFunc(NULL, silence);
    pdb_load_memory(db, "fuzz.xml", (const char *)data, size);
    for (i = 0; i < pdb_nexamples(db); i++) {
        const struct pdb_example *ex = pdb_example_at(db, i);
        if (!ex->message) continue;
        msg_reset(m);
        msg_set(m, NV_MESSAGE, ex->message, strlen(ex->message));
        if (ex->program) msg_set(m, NV_PROGRAM, ex->program, strlen(ex->program));
        pdb_classify(db, m);
    }
    for (i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
        msg_reset(m);
        msg_set(m, NV_PROGRAM, programs[i], strlen(programs[i]));
        msg_set(m, NV_MESSAGE, (const char *)data, size > 200 ? 200 : size);
        pdb_classify(db, m);
    }
    msg_unref(m);
    pdb_free(db);
    return 0;
}
