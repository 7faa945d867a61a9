/*
 * libFuzzer harness for the syslog parser: the input is one line.  The parsed
 * message is also rendered as JSON, which walks every value it set.
 */
#include <stddef.h>
#include <stdint.h>

#include "engine/json.h"
#include "engine/syslogfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct msg *m;
    struct msg_time now = {1764756000, 0, 0};
    struct syslogfmt_opts opts = {&now};
    struct buf out = BUF_INIT;

    if (!m) m = msg_new(); /* reused, as the daemon reuses its messages */
    syslogfmt_parse(m, (const char *)data, size, &opts);
    json_format_msg(m, &out);
    buf_free(&out);
    return 0;
}
