/*
 * libFuzzer harness for the Sigma rule loader (engine/sigma): the input is
 * a rule file.  Whatever loads is evaluated against a few messages, at
 * times that move through the correlation rules' timespans; a document
 * either loads as a rule or is refused with a diagnostic.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/nv.h"
#include "engine/sigma.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char mapping[] = "logsources:\n"
                              "  - product: linux\n"
                              "  - product: linux\n    service: sshd\n    program: [sshd]\n"
                              "  - category: webserver\n    facility: [daemon, local7]\n"
                              "fields:\n  a: a\n  b: b\n  c-uri: http.uri\n  Message: MESSAGE\n";

struct fire {
    struct sigma_scratch *sc;
    const struct msg *m;
    size_t n;
};

/* Every alert fired, correlations' included, is made. */
static void
fire(void *arg, const struct sigma_rule *r)
{
    struct fire *f = arg;

    f->n++;
    msg_unref(sigma_alert_fired(r, f->m, f->sc));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sigma *s = sigma_new();
    struct sigma_scratch *sc = sigma_scratch_new();
    struct msg *m = msg_new();
    size_t i, hits;

    if (sigma_load_mapping_memory(s, "mapping.yml", mapping, sizeof(mapping) - 1) != 0)
        __builtin_trap();
    sigma_load_memory(s, "fuzz.yml", (const char *)data, size);
    if (sigma_ndiags(s) < sigma_nrefused(s)) __builtin_trap(); /* every refusal says why */
    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set(m, NV_HOST, "web1", 4);
    msg_set(m, NV_MESSAGE, "Failed password for root from 10.0.0.1 port 22", 46);
    msg_set(m, nv_intern_str("a"), "10.1.2.3", 8);
    msg_set(m, nv_intern_str("b"), "-42.5", 5);
    hits = sigma_match(s, m, sc, NULL, NULL);
    for (i = 0; i < sigma_nrules(s) && i < 4; i++) msg_unref(sigma_alert(sigma_rule_at(s, i), m));
    if (hits > sigma_nrules(s)) __builtin_trap();
    /* correlation rules: the same message again and again, with a new time each */
    for (i = 0; i < 8; i++) {
        struct fire f = {sc, m, 0};
        sigma_scratch_set_time(sc, (uint64_t)i * 7000);
        msg_set(m, nv_intern_str("b"), i & 1 ? "x" : "y", 1);
        sigma_match(s, m, sc, fire, &f);
    }
    msg_unref(m);
    sigma_scratch_free(sc);
    sigma_free(s);
    return 0;
}
