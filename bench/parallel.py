#!/usr/bin/env python3
"""bench/parallel.py: `corral match -j N` against `-j 1`, beside syslog-ng.

The replay figure of doc/parallel.md: the same corpus and rules, classification and
correlation, replayed by corral with one thread and with N, and by syslog-ng
3.38 (stdin source, db-parser with the same rules merged by pdbtool, a file
destination with the same template; syslog-ng 3.38 runs its source, parser
and destination on threads of their own by default, `threaded(yes)`).  Runs
are interleaved so that a change in the machine's load hits every command
alike; each is timed by wall time and by CPU time (user + system, all its
threads, from wait4).  Before timing, the outputs of -j 1 and -j N are
compared: they must be byte-identical.

    python3 bench/parallel.py --corpus FILE --rules DIR_OR_FILE ... \\
        [--jobs 2] [--runs 5] [--scratch DIR] [--out REPORT.md]

The corpus and the 10,000 generated rules come from
`bench/gen.py --shape apps` (see bench/classify.sh -s apps); the shipped
correlation rules are rules/.  See bench/README.md.
"""
import argparse
import os
import subprocess
import sys
import time

import benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
TEMPLATE = "${.classifier.rule_id} ${MESSAGE}\n"
NOW = "2026-12-03T10:00:00Z"

SYSLOG_NG_CONF = """@version: 3.38
# bench/parallel.py: classification and correlation, output like corral's -T
options {{ stats-freq(0); }};
source s_in {{ stdin(); }};
parser p_db {{ db-parser(file("{rules}")); }};
destination d_out {{ file("{out}" template("{template}")); }};
log {{ source(s_in); parser(p_db); destination(d_out); }};
"""


def timed(argv, stdin_path=None, stdout_path=os.devnull, cpu=None):
    """Runs argv (on CPU cpu alone if given); returns (wall seconds, CPU seconds), raising on failure."""
    with open(stdout_path, "wb") as fout:
        t0 = time.monotonic()
        # syslog-ng's stdin() source wants a pipe, not a file: cat feeds it (cat's own CPU
        # time is not counted)
        feed = subprocess.Popen(["cat", stdin_path], stdout=subprocess.PIPE) if stdin_path else None
        pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
        p = subprocess.Popen(argv, stdin=feed.stdout if feed else subprocess.DEVNULL, stdout=fout,
                             stderr=subprocess.PIPE, preexec_fn=pin)
        if feed:
            feed.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        if feed:
            feed.wait()
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit("%s exited with %d: %s" % (argv[0], code, err.strip()))
    return wall, ru.ru_utime + ru.ru_stime


def timed_together(argvs):
    """Runs the (argv, cpu) pairs at once, each on its CPU alone, output to /dev/null; returns
    each one's wall seconds, raising on a failure."""
    procs = []
    with open(os.devnull, "wb") as null:
        t0 = time.monotonic()
        for argv, cpu in argvs:
            procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=null,
                                          stderr=subprocess.DEVNULL,
                                          preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c})))
        walls = [None] * len(procs)
        left = {p.pid: i for i, p in enumerate(procs)}
        while left:
            pid, status = os.wait()[:2]
            if pid not in left:
                continue
            walls[left.pop(pid)] = time.monotonic() - t0
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit("%s exited with %d" % (argvs[0][0][0], os.waitstatus_to_exitcode(status)))
    return walls


def rule_args(rules):
    out = []
    for r in rules:
        out += ["-r", r]
    return out


def merge_for_syslog_ng(a):
    """One patterndb file of every rule file (pdbtool merge), as db-parser takes one."""
    stage = os.path.join(a.scratch, "stage")
    os.makedirs(stage, exist_ok=True)
    for f in os.listdir(stage):
        os.unlink(os.path.join(stage, f))
    n = 0
    for r in a.rules:
        files = ([os.path.join(r, f) for f in sorted(os.listdir(r)) if f.endswith(".xml")]
                 if os.path.isdir(r) else [r])
        for f in files:
            n += 1
            os.symlink(os.path.abspath(f), os.path.join(stage, "%03d-%s" % (n, os.path.basename(f))))
    merged = os.path.join(a.scratch, "merged.xml")
    subprocess.run([a.pdbtool, "merge", "-r", "-D", stage, "-p", merged], check=True)
    return merged


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rules", nargs="+", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scratch", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                      "corral-bench-parallel"))
    ap.add_argument("--corral", default=os.path.join(TOP, "build", "tools", "corral"))
    ap.add_argument("--syslog-ng", dest="syslog_ng", default="/usr/sbin/syslog-ng")
    ap.add_argument("--pdbtool", default="/usr/bin/pdbtool")
    ap.add_argument("--out", help="write the report here too (Markdown)")
    ap.add_argument("--max-context-memory", dest="max_context_memory", default="8G",
                    help="corral's max-context-memory in every run (default 8G: on the apps "
                         "corpus no rule reaches its share; 'default': corral's own, 1G)")
    ap.add_argument("--no-ceiling", dest="ceiling", action="store_false",
                    help="skip the runs that measure the machine's ceiling (-j 1 on each CPU, the rules alone)")
    a = ap.parse_args()
    os.makedirs(a.scratch, exist_ok=True)
    lines = benchlib.count_lines(a.corpus)

    # LIMITS.  Each shard of -j N has the limits of one engine, so -j N gives
    # -j 1's output unless -j 1 reaches a limit (doc/parallel.md, "Limits").
    # With corral's default max-context-memory (1G), each of the 57 rules that
    # open contexts is guaranteed 1/57 of it, and the sshd rules on this corpus
    # use more: -j 1 then evicts and drops, and -j N, whose shards each have a
    # share, drops less when the corpus's two sshd hosts fall in different
    # shards (half the runs: the shard a key falls into follows a key each
    # process draws).  The comparison of outputs would then fail in half the
    # runs.  A config raising max-context-memory keeps every share unreached;
    # max-context-bytes (4M a context) is still reached, the same way in
    # every shard.
    config = []
    if a.max_context_memory != "default":
        conf_path = os.path.join(a.scratch, "limits.conf")
        with open(conf_path, "w") as f:
            f.write('<?xml version="1.0"?>\n<corrald>\n  <rules path="%s"/>\n'
                    '  <limits max-context-memory="%s"/>\n</corrald>\n' %
                    (os.path.abspath(a.rules[0]), a.max_context_memory))
        config = ["-c", conf_path]

    def corral_argv(j, corpus=a.corpus):
        return ([a.corral, "match", "-j", str(j)] + config + rule_args(a.rules) +
                ["--now", NOW, "-f", corpus, "-T", TEMPLATE])

    def corral(j, out=os.devnull, cpu=None, corpus=a.corpus):
        return timed(corral_argv(j, corpus), stdout_path=out, cpu=cpu)

    # the outputs first: -j N must be -j 1's, byte for byte
    o1, on = os.path.join(a.scratch, "out.1"), os.path.join(a.scratch, "out.%d" % a.jobs)
    corral(1, o1)
    corral(a.jobs, on)
    if subprocess.run(["cmp", "-s", o1, on]).returncode != 0:
        raise SystemExit("parallel.py: -j %d's output differs from -j 1's (%s, %s)" % (a.jobs, o1, on))
    outlines = benchlib.count_lines(o1)

    merged = merge_for_syslog_ng(a)
    conf = os.path.join(a.scratch, "syslog-ng.conf")
    sng_out = os.path.join(a.scratch, "syslog-ng.out")
    with open(conf, "w") as f:
        f.write(SYSLOG_NG_CONF.format(rules=merged, out=sng_out,
                                      template=TEMPLATE.replace("\n", "\\n")))

    def syslog_ng():
        for x in ("persist", "pid", "ctl", "out"):
            p = os.path.join(a.scratch, "syslog-ng." + x)
            if os.path.exists(p):
                os.unlink(p)
        return timed([a.syslog_ng, "-F", "--no-caps", "-f", conf,
                      "--persist-file", os.path.join(a.scratch, "syslog-ng.persist"),
                      "--pidfile", os.path.join(a.scratch, "syslog-ng.pid"),
                      "--control", os.path.join(a.scratch, "syslog-ng.ctl")],
                     stdin_path=a.corpus)

    names = ["corral -j 1", "corral -j %d" % a.jobs, "syslog-ng 3.38"]
    cmds = [lambda: corral(1), lambda: corral(a.jobs), syslog_ng]
    # the ceiling: -j 1 on each CPU alone (the CPUs of a virtual machine need
    # not be equally fast), and the rules' loading alone (serial in every run)
    cpus = sorted(os.sched_getaffinity(0))[:a.jobs] if a.ceiling else []
    extra = ["corral -j 1 on CPU %d" % c for c in cpus] + (["rules alone"] if a.ceiling else [])
    extra_cmds = [lambda c=c: corral(1, cpu=c) for c in cpus] + (
        [lambda: corral(1, corpus=os.devnull)] if a.ceiling else [])
    # and -j 1 on every one of those CPUs at once: what each CPU does while
    # the others are busy too (on a virtual machine the CPUs may share a
    # physical core or a power budget, and they share the caches beyond L2)
    busy = "corral -j 1 on CPUs %s at once" % ",".join(str(c) for c in cpus)
    if a.ceiling:
        extra.append(busy)
        extra_cmds.append(lambda: (timed_together([(corral_argv(1), c) for c in cpus]), 0))
    res = {n: [] for n in names + extra}
    for _ in range(a.runs):
        for n, c in zip(names + extra, cmds + extra_cmds):
            res[n].append(c())

    def best(n, k):
        return min(r[k] for r in res[n])

    def median(n, k):
        return benchlib.med([r[k] for r in res[n]])

    load = os.getloadavg()
    rep = []
    w = rep.append
    w("# corral match -j %d against -j 1, beside syslog-ng (%s)" % (a.jobs, time.strftime("%Y-%m-%d %H:%M")))
    w("")
    w("Produced by `bench/parallel.py` (see bench/README.md). %d lines of `%s`; rules: %s; "
      "template `%s`, output to /dev/null; %d interleaved runs each, **best** / median. "
      "-j %d's output was compared with -j 1's first: identical (%d lines). "
      "Machine: %s, %d CPUs; load average after the runs: %.2f %.2f %.2f." %
      (lines, os.path.basename(a.corpus), ", ".join(a.rules), TEMPLATE.replace("\n", "\\n"),
       a.runs, a.jobs, outlines, benchlib.cpu_model(), os.cpu_count(), *load))
    w("")
    w("corral's limits: %s." % (
        "its defaults (max-context-memory 1G)" if not config else
        "max-context-memory %s (`-c`), the others its defaults: no rule reaches its share, so "
        "every shard of -j %d keeps what -j 1 keeps (max-context-bytes is reached, alike in "
        "both)" % (a.max_context_memory, a.jobs)))
    w("")
    w("| command | wall s | msg/s by wall time | CPU s |")
    w("|---|---:|---:|---:|")
    for n in names:
        w("| %s | **%.2f** / %.2f | **%s** / %s | %.2f / %.2f |" % (
            n, best(n, 0), median(n, 0), "{:,.0f}".format(lines / best(n, 0)),
            "{:,.0f}".format(lines / median(n, 0)), best(n, 1), median(n, 1)))
    w("")
    j1, jn, sng = names
    w("- speed-up of -j %d over -j 1 (wall time): **%.2fx** best / %.2fx median" %
      (a.jobs, best(j1, 0) / best(jn, 0), median(j1, 0) / median(jn, 0)))
    w("- corral -j 1 against syslog-ng (wall time): **%.2fx** / %.2fx; -j %d: **%.2fx** / %.2fx" %
      (best(sng, 0) / best(j1, 0), median(sng, 0) / median(j1, 0), a.jobs,
       best(sng, 0) / best(jn, 0), median(sng, 0) / median(jn, 0)))
    w("- CPU spent by -j %d over -j 1: %.2fx (best runs)" % (a.jobs, best(jn, 1) / best(j1, 1)))
    if a.ceiling:
        # with no overhead at all, -j N loads the rules, then processes at the
        # sum of the CPUs' rates (medians): each CPU measured alone, and every
        # CPU measured while all are busy
        load = median("rules alone", 0)
        alone = [median(n, 0) for n in extra[:len(cpus)]]
        together = [benchlib.med([r[0][i] for r in res[busy]]) for i in range(len(cpus))]

        def floor(walls, load=load):
            return load + 1 / sum(1 / max(t - load, 1e-9) for t in walls)

        speedup = median(j1, 0) / median(jn, 0)
        w("")
        w("The machine's ceiling (medians). Were -j %d free of any cost of its own, it would load the "
          "rules (alone: %.2f s, serial in every run) and then process at the sum of the CPUs' rates." %
          (a.jobs, load))
        w("")
        w("| the CPUs' rates measured | -j 1 on each CPU, s | ceiling s | ceiling over -j 1 | "
          "-j %d's speed-up (%.2fx) against it |" % (a.jobs, speedup))
        w("|---|---:|---:|---:|---:|")
        for what, walls in (("each CPU alone", alone), ("all of them busy at once", together)):
            w("| %s | %s | %.2f | **%.2fx** | **%.0f%%** |" %
              (what, ", ".join("%.2f" % t for t in walls), floor(walls), median(j1, 0) / floor(walls),
               100 * speedup / (median(j1, 0) / floor(walls))))
        w("")
        w("Run alone, a CPU is faster than while the others are busy too (the second row's runs are "
          "independent processes: the difference is the machine's, not corral's); -j %d runs with "
          "every CPU busy, so the second row is what it can reach." % a.jobs)
        # The percentage is the ceiling's time over -j N's (-j 1's cancels out), so a slow minute
        # that falls on -j N's runs and not on the ceiling's moves it: paired within each round,
        # whose runs follow each other, the machine's state weighs on both sides alike.
        paired = []
        for i in range(a.runs):
            ld = res["rules alone"][i][0]
            walls_alone = [res[n][i][0] for n in extra[:len(cpus)]]
            walls_busy = list(res[busy][i][0])
            paired.append((floor(walls_alone, ld) / res[jn][i][0],
                           floor(walls_busy, ld) / res[jn][i][0]))
        w("")
        w("Paired by round (each round's -j %d against the ceiling measured by the runs of the same "
          "round, a minute apart at most): median **%.0f%%** of the ceiling with each CPU alone, "
          "**%.0f%%** with all of them busy (rounds: %s)." % (
              a.jobs, 100 * benchlib.med([x[0] for x in paired]),
              100 * benchlib.med([x[1] for x in paired]),
              ", ".join("%.0f/%.0f%%" % (100 * x[0], 100 * x[1]) for x in paired)))
    text = "\n".join(rep) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
