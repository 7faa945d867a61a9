/*
 * corral dump: prints the program tree and the pattern trees of a rule set,
 * the way the matcher sees them, for debugging rules.
 */
#include "tools/cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

int
cmd_dump(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"rules", required_argument, NULL, 'r'},
        {"program", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char **rules = calloc((size_t)argc, sizeof(char *));
    const char *program = NULL;
    int nrules = 0, c;
    struct pdb *db;

    while ((c = getopt_long(argc, argv, "r:P:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': rules[nrules++] = optarg; break;
        case 'P': program = optarg; break;
        case 'h':
            puts("usage: corral dump -r RULES [-r RULES...] [-P PROGRAM]\n"
                 "Prints the program tree and every program's pattern tree; with -P, only the\n"
                 "tree that serves PROGRAM.");
            free(rules);
            return 0;
        default: free(rules); return 2;
        }
    }
    if (nrules == 0) {
        cmd_error("dump", "no rules given (-r FILE|DIR)");
        free(rules);
        return 2;
    }
    db = cmd_load_rules(rules, nrules, false, 1);
    free(rules);
    if (!db) return 1;
    pdb_dump(db, stdout, program);
    pdb_free(db);
    return 0;
}
