/* cmd: what the verbs of the corral command share: error messages and rule loading. */
#include "tools/cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "engine/sigma.h"

void
cmd_error(const char *verb, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "corral %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

struct pdb *
cmd_load_rules(char **paths, int npaths, bool strict, unsigned threads)
{
    struct pdb *db = pdb_new();
    int i, rc = 0;

    pdb_set_build_threads(db, threads);
    for (i = 0; i < npaths; i++)
        if (pdb_load(db, paths[i]) < 0) rc = -1;
    pdb_print_diags(db, stderr);
    if (rc < 0 && (strict || pdb_nrules(db) == 0)) {
        pdb_free(db);
        return NULL;
    }
    return db;
}

/* The shipped mapping; when corral runs from a build tree and is not installed (build/, as
   README.md says), the source's, so that scenarios need not name it (rules/sigma.scenario). */
static const char *
shipped_mapping(void)
{
    if (access(CORRAL_SIGMA_MAPPING, R_OK) < 0 && access(CORRAL_SOURCE_SIGMA_MAPPING, R_OK) == 0)
        return CORRAL_SOURCE_SIGMA_MAPPING;
    return CORRAL_SIGMA_MAPPING;
}

long
cmd_load_sigma(struct pdb *db, const char *rules, const char *mapping)
{
    struct sigma *s = sigma_new();
    long n;

    if (sigma_load_mapping(s, mapping ? mapping : shipped_mapping()) == 0) sigma_load(s, rules);
    sigma_print_diags(s, stderr);
    if (sigma_nerrors(s)) {
        sigma_free(s);
        return -1;
    }
    n = (long)sigma_nrules(s);
    pdb_set_sigma(db, s);
    return n;
}
