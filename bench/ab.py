#!/usr/bin/env python3
"""Two or more corral binaries compared on classify.sh's inputs, interleaved.

    ab.py [--runs 7] [--cpu 0] [--scratch DIR] CORRAL [CORRAL ...]

Runs `CORRAL match -j 1 -r RULES -f CORPUS -T ''` for rule sets (a) and (b)
of a scratch directory that bench/classify.sh filled (default
${TMPDIR:-/tmp}/corral-bench-apps, from `classify.sh -s apps`), and the
same on /dev/null, each pinned to one CPU, the binaries taking turns run
after run, so that a change of load hits them alike.  Prints, per binary,
the best CPU time (user + system, wait4) net of the best empty run, msg/s,
and (b)'s slowdown against (a).  A quick before/after check of a change on
a loaded machine; classify.sh is the full benchmark against syslog-ng.
"""
import argparse
import os
import subprocess
import sys

from benchlib import count_lines


def cpu_time(argv, cpu):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("ab.py: %s failed" % " ".join(argv))
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--scratch", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                      "corral-bench-apps"))
    ap.add_argument("corral", nargs="+")
    a = ap.parse_args()
    corpus = os.path.join(a.scratch, "gen", "corpus.log")
    rules = {s: os.path.join(a.scratch, "rules-%s.xml" % s) for s in "ab"}
    for f in [corpus] + list(rules.values()):
        if not os.path.exists(f):
            sys.exit("ab.py: %s is missing: run bench/classify.sh first" % f)
    n = count_lines(corpus)
    best = {}
    for _ in range(a.runs):
        for s in "ab":
            for b in a.corral:
                for f in (corpus, "/dev/null"):
                    t = cpu_time([b, "match", "-j", "1", "-r", rules[s], "-f", f, "-T", ""], a.cpu)
                    best[b, s, f] = min(best.get((b, s, f), t), t)
    print("%d lines, best of %d runs, CPU seconds net of the empty run" % (n, a.runs))
    for b in a.corral:
        net = {s: max(best[b, s, corpus] - best[b, s, "/dev/null"], 1e-9) for s in "ab"}
        print("%s\n  (a) %.3f s %10.0f msg/s   (b) %.3f s %10.0f msg/s   (b)/(a) %.2fx   "
              "empty run (a) %.3f s (b) %.3f s" % (
                  b, net["a"], n / net["a"], net["b"], n / net["b"], net["b"] / net["a"],
                  best[b, "a", "/dev/null"], best[b, "b", "/dev/null"]))


if __name__ == "__main__":
    main()
