/* executor: what every executor kind shares: the registry of kinds, common attributes, secrets. */
#include "actions/executor.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

char *
executor_secret(const struct exconf *cfg, const char *attr, const char *conf_file, struct buf *err)
{
    char key[64], line[4096];
    const char *path, *var;
    FILE *f;
    size_t n;

    snprintf(key, sizeof(key), "%s-file", attr);
    path = exconf_attr(cfg, key);
    snprintf(key, sizeof(key), "%s-env", attr);
    var = exconf_attr(cfg, key);
    if (path && var) {
        buf_printf(err, "%s:%d: %s: give %s-file or %s-env, not both\n", conf_file, cfg->line,
                   cfg->name, attr, attr);
        return NULL;
    }
    if (var) {
        const char *v = getenv(var);
        if (!v) {
            buf_printf(err, "%s:%d: %s: environment variable %s (%s-env) is not set\n", conf_file,
                       cfg->line, cfg->name, var, attr);
            return NULL;
        }
        return xstrdup(v);
    }
    if (!path) return NULL;
    f = fopen(path, "r");
    if (!f) {
        buf_printf(err, "%s:%d: %s: cannot read %s-file %s: %s\n", conf_file, cfg->line, cfg->name,
                   attr, path, strerror(errno));
        return NULL;
    }
    if (!fgets(line, sizeof(line), f)) line[0] = '\0';
    fclose(f);
    n = strcspn(line, "\r\n");
    line[n] = '\0';
    return xstrdup(line);
}
