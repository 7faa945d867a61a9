/*
 * libFuzzer harness for the SNMP trap input's decoding and conversion: the
 * input is one datagram, decoded by net-snmp's snmp_parse() as the input's
 * session does (v1 and v2c; v3 stops at its unknown users), and every trap
 * or inform that decodes is rendered by snmptrap_fmt_line().  The line must
 * parse back as syslog with PROGRAM snmptrap and its structured data whole
 * (.SDATA.snmp.trap set): a value that broke out of its quoting would not.
 * MIBs from $FUZZ_MIBS (run.sh gives the test MIBs), none without it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/input/snmptrap_fmt.h"
#include "engine/nv.h"
#include "engine/syslogfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct msg *m;
    static netsnmp_session sess;
    static nv_handle h_trap;
    struct msg_time now = {1764756000, 0, 0};
    struct syslogfmt_opts opts = {&now};
    struct snmptrap_origin o = {"192.0.2.1", "192.0.2.1", 133};
    struct buf line = BUF_INIT, err = BUF_INIT;
    netsnmp_pdu *pdu;
    u_char *copy;
    size_t len;
    const char *v;

    if (!m) {
        const char *mibs = getenv("FUZZ_MIBS");
        if (snmptrap_fmt_init(mibs ? mibs : "", &err) < 0) abort();
        snmp_sess_init(&sess);
        sess.version = SNMP_DEFAULT_VERSION;
        m = msg_new();
        h_trap = nv_intern_str(".SDATA.snmp.trap");
    }
    copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    pdu = calloc(1, sizeof(*pdu));
    if (snmp_parse(NULL, &sess, pdu, copy, size) == 0 &&
        (pdu->command == SNMP_MSG_TRAP || pdu->command == SNMP_MSG_TRAP2 ||
         pdu->command == SNMP_MSG_INFORM)) {
        snmptrap_fmt_line(&line, pdu, &o);
        syslogfmt_parse(m, line.p, line.len, &opts);
        v = msg_get(m, NV_PROGRAM, &len);
        if (!v || len != 8 || memcmp(v, "snmptrap", 8) != 0) abort();
        if (!msg_get(m, h_trap, &len)) abort();
    }
    snmp_free_pdu(pdu);
    free(copy);
    buf_free(&line);
    buf_free(&err);
    return 0;
}
