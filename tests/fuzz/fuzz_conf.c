/*
 * libFuzzer harness for the configuration reader (conf_load in agent/conf/conf.c:
 * libxml2 parsing, validation against the built-in schema, then the checks
 * the schema cannot express).  The input is a configuration file.  Checked on
 * every run: a configuration that is refused comes with an error, and every
 * error line names the file (corrald reports "file:line: message").
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* exconf.c is linked without the executors (run.sh): only their own attributes are known. */
bool
executor_common_attr(const char *name)
{
    (void)name;
    return false;
}

static char path[64];

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buf err = BUF_INIT;
    struct conf *c;
    const char *line;
    FILE *f;

    if (!path[0]) {
        int fd;
        snprintf(path, sizeof(path), "/tmp/fuzz_conf.XXXXXX");
        if ((fd = mkstemp(path)) < 0) abort();
        close(fd);
    }
    if (!(f = fopen(path, "wb")) || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    c = conf_load(path, NULL, &err);
    if (!c && !err.len) __builtin_trap(); /* refused without a word */
    for (line = err.p; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, path, strlen(path)) != 0)
            __builtin_trap(); /* an error without its file */
    conf_free(c);
    buf_free(&err);
    return 0;
}
