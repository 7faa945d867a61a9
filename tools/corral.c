/*
 * corral: the companion tool for rule authors and operators.
 *
 *   corral test [-v] FILE|DIR...        run the examples embedded in rule files
 *   corral match -r RULES ...           classify a message or a log file
 *   corral dump -r RULES [-P PROGRAM]   show the pattern trees
 *   corral check-config FILE            check a corrald configuration
 *   corral ctl / corral stats           talk to a running corrald
 *   corral alerts / corral silence      its alerts and silences
 *   corral alert add                    give it a (test) alert, routed to its executors
 *   corral queue list|retry|drop        delivery control of a running corrald
 */
#include <config.h>

#include "tools/cmd.h"

#include <stdio.h>
#include <string.h>

static void
usage(FILE *out)
{
    fputs("usage: corral VERB [OPTIONS]\n"
          "\n"
          "  test [-v] FILE|DIR...                 run the examples of rule files\n"
          "  match -r RULES -P PROGRAM -M MESSAGE  classify one message\n"
          "  match -r RULES -f LOG [--json]        classify every line of a syslog file\n"
          "  dump -r RULES [-P PROGRAM]            print the pattern trees\n"
          "  check-config FILE                     check a corrald configuration\n"
          "  ctl [-s SOCKET] stats|contexts|cluster|reload|save   talk to a running corrald\n"
          "  stats [-s SOCKET | -u HOST:PORT]      show a running corrald's counters\n"
          "  alerts [-s SOCKET] [MATCHER...]       list a running corrald's alerts\n"
          "  alert [-s SOCKET] add LABEL=VALUE...  give it an alert (routed to its executors)\n"
          "  silence [-s SOCKET] add|list|expire|query|update ...   mute alerts\n"
          "  queue [-s SOCKET] list|retry|drop     list, retry or drop executors' alerts\n"
          "  --version                             print the version\n"
          "\n"
          "Run `corral VERB --help` for the options of a verb; see corral(1).\n",
          out);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        puts("corral " PACKAGE_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "test") == 0) return cmd_test(argc - 1, argv + 1);
    if (strcmp(argv[1], "match") == 0) return cmd_match(argc - 1, argv + 1);
    if (strcmp(argv[1], "dump") == 0) return cmd_dump(argc - 1, argv + 1);
    if (strcmp(argv[1], "ctl") == 0) return cmd_ctl(argc - 1, argv + 1);
    if (strcmp(argv[1], "stats") == 0) return cmd_stats(argc - 1, argv + 1);
    if (strcmp(argv[1], "alerts") == 0) return cmd_alerts(argc - 1, argv + 1);
    if (strcmp(argv[1], "alert") == 0) return cmd_alert(argc - 1, argv + 1);
    if (strcmp(argv[1], "silence") == 0) return cmd_silence(argc - 1, argv + 1);
    if (strcmp(argv[1], "queue") == 0) return cmd_queue(argc - 1, argv + 1);
    if (strcmp(argv[1], "check-config") == 0) return cmd_check_config(argc - 1, argv + 1);
    fprintf(stderr, "corral: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
