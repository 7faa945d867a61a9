/* executor: what every executor kind shares: the registry of kinds, common attributes, severities.
 */
#include "actions/executor.h"

#include "engine/tags.h"

#include <string.h>
#include <strings.h>

/* Every executor kind corrald knows; a new kind is added here, in its own file and in the schema.
 */
static const struct executor_kind *const kinds[] = {&snmp_executor, &smtp_executor, &exec_executor};

const struct executor_kind *
executor_kind_find(const char *name)
{
    size_t i;

    for (i = 0; name && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(kinds[i]->name, name) == 0) return kinds[i];
    return NULL;
}

bool
executor_common_attr(const char *name)
{
    static const char *const common[] = {
        "name",   "queue",      "attempts", "backoff",  "max-backoff", "rate",
        "dedupe", "dedupe-key", "alert-id", "severity", "dead-letter",
    };
    size_t i;

    for (i = 0; i < sizeof(common) / sizeof(common[0]); i++)
        if (strcmp(common[i], name) == 0) return true;
    return false;
}

static const char *const severities[EXECUTOR_SEVERITY_MAX] = {
    "clear", "info", "warning", "minor", "major", "critical",
};

int
executor_severity_number(const char *name)
{
    int i;

    for (i = 0; name && i < EXECUTOR_SEVERITY_MAX; i++)
        if (strcasecmp(name, severities[i]) == 0) return i + 1;
    return executor_severity_number(EXECUTOR_SEVERITY_DEFAULT);
}

const char *
executor_severity_name(int number)
{
    return number >= 1 && number <= EXECUTOR_SEVERITY_MAX ? severities[number - 1] : NULL;
}

bool
executor_alert_resolved(const struct alert *a)
{
    static tag_id clear;

    if (a->severity && strcasecmp(a->severity, "clear") == 0) return true;
    if (!clear) clear = tag_intern("corral.clear", 12);
    return a->msg && msg_tag_has(a->msg, clear);
}
