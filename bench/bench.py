#!/usr/bin/env python3
"""Runs the measurements of bench/classify.sh and writes its report.

    bench.py --scratch DIR --corral BIN --syslog-ng BIN --pdbtool BIN
             --rules-a FILE --rules-b FILE --corpus FILE --out REPORT.md
             [--runs 3] [--cpu 0] [--feed-cpu 1] [--no-baseline]

Every process measured here is started by this script, pinned to one CPU
(sched_setaffinity, like taskset -c), and waited for with wait4(), which
gives its wall time, its CPU time (user + system, all threads) and its peak
resident set size (ru_maxrss, what /usr/bin/time -v calls "Maximum resident
set size").  See bench/README.md for what the figures mean.
"""
import argparse
import collections
import datetime
import os
import platform
import subprocess
import sys
import time

from benchlib import count_lines, cpu_model, med, mem_gb, yes

SYSLOG_NG_CONF = """@version: 3.38
# corral bench/classify.sh: classification only, no destination
options {{ stats-freq(0); }};
source s_in {{ stdin(); }};
{parser}
log {{ source(s_in); {parser_ref} {dest_ref} {flags} }};
{dest}
"""

CHECK_TEMPLATE = "${.classifier.class}|${.classifier.rule_id}\\n"  # --check-template changes it


class Run:
    def __init__(self, wall, user, sys_, maxrss_kb, rc):
        self.wall, self.cpu, self.maxrss_kb, self.rc = wall, user + sys_, maxrss_kb, rc


TIME = "/usr/bin/time"
SCRATCH = "."


def run(argv, cpu, stdin_path=None, feed_cpu=None, stdout_path=None, pipe_feed=False,
        ok=(0,)):
    """Runs argv pinned to cpu; stdin is /dev/null, the file stdin_path, or
    (pipe_feed) a pipe that a `cat stdin_path` pinned to feed_cpu writes.

    Wall and CPU time come from here (perf_counter, wait4); the peak RSS
    from GNU time, which forks the command from a small process: a child
    forked by Python would report at least Python's own RSS (ru_maxrss
    survives exec)."""
    def pin(c):
        return lambda: os.sched_setaffinity(0, {c})

    rss_file = os.path.join(SCRATCH, "maxrss")
    if os.path.exists(TIME):
        argv = [TIME, "-f", "%M", "-o", rss_file, "--"] + argv
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    feeder = None
    t0 = time.perf_counter()
    if pipe_feed:
        if stdin_path:
            feeder = subprocess.Popen(["cat", stdin_path], stdout=subprocess.PIPE,
                                      preexec_fn=pin(feed_cpu))
            stdin = feeder.stdout
        else:
            stdin = subprocess.PIPE  # empty pipe: closed at once
    else:
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    p = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=subprocess.PIPE,
                         preexec_fn=pin(cpu))
    if feeder:
        feeder.stdout.close()
    elif pipe_feed:
        p.stdin.close()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if feeder:
        feeder.wait()
    if stdout_path:
        out.close()
    if not pipe_feed and stdin_path:
        stdin.close()
    if p.returncode not in ok:
        sys.stderr.write("bench: %s exited %d\n%s" % (" ".join(argv), p.returncode,
                                                      err.decode(errors="replace")[-2000:]))
        sys.exit(1)
    maxrss = ru.ru_maxrss
    if os.path.exists(TIME):
        with open(rss_file) as f:
            maxrss = int(f.read().split()[-1])
    return Run(wall, ru.ru_utime, ru.ru_stime, maxrss, p.returncode)


def best(xs):
    return min(xs)




class Bench:
    def __init__(self, a):
        self.a = a
        self.n = count_lines(a.corpus)
        self.n_loghub = count_lines(a.corpus_loghub) if a.corpus_loghub else 0
        self.results = collections.OrderedDict()
        self.notes = []

    # -- commands ----------------------------------------------------------

    def syslog_ng_conf(self, rules, tag, with_parser=True, check_out=None):
        conf = os.path.join(self.a.scratch, "syslog-ng-%s.conf" % tag)
        parser = 'parser p_db { db-parser(file("%s")); };' % rules if with_parser else ""
        dest = ('destination d_check { file("%s" template("%s")); };' % (check_out, CHECK_TEMPLATE)
                if check_out else "")
        with open(conf, "w") as f:
            f.write(SYSLOG_NG_CONF.format(
                parser=parser, parser_ref="parser(p_db);" if with_parser else "",
                dest=dest, dest_ref="destination(d_check);" if check_out else "",
                flags="flags(flow-control);" if check_out else ""))
        return conf

    def syslog_ng(self, conf, corpus):
        d = self.a.scratch
        for f in ("syslog-ng.persist", "syslog-ng.pid", "syslog-ng.ctl"):
            try:
                os.unlink(os.path.join(d, f))
            except FileNotFoundError:
                pass
        argv = [self.a.syslog_ng, "-F", "--no-caps", "-f", conf,
                "--persist-file", os.path.join(d, "syslog-ng.persist"),
                "--pidfile", os.path.join(d, "syslog-ng.pid"),
                "--control", os.path.join(d, "syslog-ng.ctl")]
        return run(argv, self.a.cpu, corpus, self.a.feed_cpu, pipe_feed=True)

    def corral(self, rules, corpus, tpl="", pipe=False, stdout_path=None):
        # -j 1: one thread, the single-core figure (corral match defaults to a thread a CPU)
        argv = [self.a.corral, "match", "-j", "1", "-r", rules,
                "-f", "-" if pipe else (corpus or "/dev/null"), "-T", tpl]
        return run(argv, self.a.cpu, corpus if pipe else None, self.a.feed_cpu,
                   stdout_path=stdout_path, pipe_feed=pipe)

    def corral_single(self, rules):
        return run([self.a.corral, "match", "-r", rules, "-P", "x", "-M", "y"], self.a.cpu)

    def pdbtool_single(self, rules):
        # pdbtool match exits 1 when the message matches no rule
        return run([self.a.pdbtool, "match", "-p", rules, "-P", "x", "-M", "y"], self.a.cpu,
                   ok=(0, 1))

    # -- measuring -----------------------------------------------------------

    def record(self, key, r):
        self.results.setdefault(key, []).append(r)
        print("  %-34s wall %7.3f s  cpu %7.3f s  rss %7.1f MB" %
              (key, r.wall, r.cpu, r.maxrss_kb / 1024.0), flush=True)

    def measure(self):
        a = self.a
        sets = [("a", a.rules_a), ("b", a.rules_b)]
        confs = {k: self.syslog_ng_conf(r, k) for k, r in sets}
        base_conf = self.syslog_ng_conf(None, "noparser", with_parser=False)
        # warm the page cache and the binaries
        subprocess.run(["cat", a.corpus], stdout=subprocess.DEVNULL, check=True)
        for k, r in sets:
            self.corral_single(r)
            self.pdbtool_single(r)
        for i in range(a.runs):
            print("run %d of %d" % (i + 1, a.runs), flush=True)
            for k, r in sets:
                self.record("corral startup %s" % k, self.corral_single(r))
                self.record("pdbtool startup %s" % k, self.pdbtool_single(r))
                self.record("corral empty %s" % k, self.corral(r, None))
                self.record("syslog-ng empty %s" % k, self.syslog_ng(confs[k], None))
                self.record("corral %s" % k, self.corral(r, a.corpus))
                self.record("corral pipe %s" % k, self.corral(r, a.corpus, pipe=True))
                self.record("syslog-ng %s" % k, self.syslog_ng(confs[k], a.corpus))
                if a.corpus_loghub:
                    self.record("corral loghub %s" % k, self.corral(r, a.corpus_loghub))
                    self.record("syslog-ng loghub %s" % k,
                                self.syslog_ng(confs[k], a.corpus_loghub))
            if a.baseline:
                self.record("syslog-ng empty noparser", self.syslog_ng(base_conf, None))
                self.record("syslog-ng noparser", self.syslog_ng(base_conf, a.corpus))

    def check(self):
        """Classifies the corpus once more with both, writing class|rule_id per
        message, and compares."""
        a = self.a
        self.check_results = {}
        for k, r in (("a", a.rules_a), ("b", a.rules_b)):
            c_out = os.path.join(a.scratch, "check-corral-%s.txt" % k)
            s_out = os.path.join(a.scratch, "check-syslog-ng-%s.txt" % k)
            if os.path.exists(s_out):
                os.unlink(s_out)
            print("check %s: classifying with output" % k, flush=True)
            self.record("corral output %s" % k,
                        self.corral(r, a.corpus, tpl=CHECK_TEMPLATE,
                                    stdout_path=c_out))
            conf = self.syslog_ng_conf(r, "check-" + k, check_out=s_out)
            self.record("syslog-ng output %s" % k, self.syslog_ng(conf, a.corpus))
            self.check_results[k] = compare(c_out, s_out, self.n)

    # -- report --------------------------------------------------------------

    def rate(self, key, empty_key, metric, n=None):
        """(best, median) msg/s over the runs of key, net of the median time
        of empty_key (start-up and shut-down)."""
        n = n or self.n
        base = med([getattr(r, metric) for r in self.results[empty_key]]) if empty_key else 0.0
        rates = [n / max(getattr(r, metric) - base, 1e-9) for r in self.results[key]]
        return max(rates), med(rates)

    def times(self, key, metric="wall"):
        xs = [getattr(r, metric) for r in self.results[key]]
        return best(xs), med(xs)

    def report(self):
        a = self.a
        R = {}
        for metric in ("cpu", "wall"):
            for k in ("a", "b"):
                R[metric, "corral", k] = self.rate("corral %s" % k, "corral empty %s" % k, metric)
                R[metric, "corral pipe", k] = self.rate("corral pipe %s" % k, "corral empty %s" % k, metric)
                R[metric, "syslog-ng", k] = self.rate("syslog-ng %s" % k, "syslog-ng empty %s" % k, metric)
                if a.corpus_loghub:
                    for t in ("corral", "syslog-ng"):
                        R[metric, t + " loghub", k] = self.rate(
                            "%s loghub %s" % (t, k), "%s empty %s" % (t, k), metric, self.n_loghub)
            if a.baseline:
                R[metric, "noparser"] = self.rate("syslog-ng noparser", "syslog-ng empty noparser", metric)
        L = []
        w = L.append
        now = datetime.datetime.now()
        w("# corral classification benchmark, %s" % now.strftime("%Y-%m-%d %H:%M"))
        w("")
        w("Produced by `bench/classify.sh` (see bench/README.md).  %d runs of each "
          "measurement; **best** / median.  msg/s are net of start-up (the median "
          "time of the same command on empty input is subtracted)." % a.runs)
        w("")
        w("## Throughput, one core (msg/s)")
        w("")
        w("| | rule set | corral | syslog-ng 3.38 db-parser | corral / syslog-ng |")
        w("|---|---|---:|---:|---:|")
        for metric, label in (("cpu", "CPU time"), ("wall", "wall time")):
            for k, desc in (("a", "(a) public, %d rules" % a.nrules_a),
                            ("b", "(b) public + generated, %d rules" % a.nrules_b)):
                c, s = R[metric, "corral", k], R[metric, "syslog-ng", k]
                w("| by %s | %s | **%s** / %s | **%s** / %s | **%.2fx** / %.2fx |" % (
                    label, desc, fmt_rate(c[0]), fmt_rate(c[1]), fmt_rate(s[0]),
                    fmt_rate(s[1]), c[0] / s[0], c[1] / s[1]))
        w("")
        def sl(t, metric, i, suffix=""):
            return R[metric, t + suffix, "a"][i] / R[metric, t + suffix, "b"][i]
        w("Slowdown from (a) to (b) (msg/s of (a) divided by msg/s of (b)), **best** / "
          "median: corral **%.2fx** / %.2fx by CPU time, **%.2fx** / %.2fx by wall time; "
          "syslog-ng **%.2fx** / %.2fx by CPU time, **%.2fx** / %.2fx by wall time." % (
              sl("corral", "cpu", 0), sl("corral", "cpu", 1),
              sl("corral", "wall", 0), sl("corral", "wall", 1),
              sl("syslog-ng", "cpu", 0), sl("syslog-ng", "cpu", 1),
              sl("syslog-ng", "wall", 0), sl("syslog-ng", "wall", 1)))
        if a.corpus_loghub:
            w("")
            w("The corpus's generated lines are unknown programs under (a) and matches under "
              "(b), so part of that slowdown is more work per message.  The rule count alone, "
              "on the corpus's %d loghub lines (whose programs sshd, kernel, su, ftpd, ... also "
              "got generated rules in (b)), by CPU time, best / median: corral %s / %s -> "
              "%s / %s msg/s (**%.2fx** / %.2fx), syslog-ng %s / %s -> %s / %s msg/s "
              "(**%.2fx** / %.2fx)." % (
                  self.n_loghub,
                  fmt_rate(R["cpu", "corral loghub", "a"][0]), fmt_rate(R["cpu", "corral loghub", "a"][1]),
                  fmt_rate(R["cpu", "corral loghub", "b"][0]), fmt_rate(R["cpu", "corral loghub", "b"][1]),
                  sl("corral", "cpu", 0, " loghub"), sl("corral", "cpu", 1, " loghub"),
                  fmt_rate(R["cpu", "syslog-ng loghub", "a"][0]), fmt_rate(R["cpu", "syslog-ng loghub", "a"][1]),
                  fmt_rate(R["cpu", "syslog-ng loghub", "b"][0]), fmt_rate(R["cpu", "syslog-ng loghub", "b"][1]),
                  sl("syslog-ng", "cpu", 0, " loghub"), sl("syslog-ng", "cpu", 1, " loghub")))
        w("")
        w("Context (medians, msg/s by CPU time / by wall time):")
        w("")
        for k in ("a", "b"):
            w("- corral (%s) reading the corpus from a pipe (`cat | corral match -f -`, as "
              "syslog-ng reads it): %s / %s" % (k, fmt_rate(R["cpu", "corral pipe", k][1]),
                                                fmt_rate(R["wall", "corral pipe", k][1])))
        if a.baseline:
            w("- syslog-ng with the same stdin() source and no parser at all (its pipeline "
              "alone, the floor under its db-parser figures): %s / %s" % (
                  fmt_rate(R["cpu", "noparser"][1]), fmt_rate(R["wall", "noparser"][1])))
        for k in ("a", "b"):
            c = self.results["corral output %s" % k][0]
            s = self.results["syslog-ng output %s" % k][0]
            w("- with output (`%s` to a file, one run, gross): corral (%s) %s / %s, "
              "syslog-ng (%s) %s / %s" % (
                  CHECK_TEMPLATE, k, fmt_rate(self.n / c.cpu), fmt_rate(self.n / c.wall),
                  k, fmt_rate(self.n / s.cpu), fmt_rate(self.n / s.wall)))
        w("")
        w("## Start-up and memory")
        w("")
        w("| | rule set | wall time (s) | CPU time (s) | peak RSS (MB) |")
        w("|---|---|---:|---:|---:|")
        for key, label in (("corral startup", "`corral match -r RULES -P x -M y`"),
                           ("pdbtool startup", "`pdbtool match -p RULES -P x -M y`"),
                           ("syslog-ng empty", "syslog-ng, start to exit on empty stdin")):
            for k in ("a", "b"):
                rs = self.results["%s %s" % (key, k)]
                wb, wm = self.times("%s %s" % (key, k), "wall")
                cb, cm = self.times("%s %s" % (key, k), "cpu")
                w("| %s | (%s) | **%.3f** / %.3f | **%.3f** / %.3f | %.1f |" % (
                    label, k, wb, wm, cb, cm, max(r.maxrss_kb for r in rs) / 1024.0))
        if a.baseline:
            wb, wm = self.times("syslog-ng empty noparser", "wall")
            w("| syslog-ng, start to exit, no db-parser | - | **%.3f** / %.3f | | |" % (wb, wm))
        w("")
        w("Peak RSS while classifying the corpus (max over runs): corral (a) %.1f MB, "
          "(b) %.1f MB; syslog-ng (a) %.1f MB, (b) %.1f MB." % tuple(
              max(r.maxrss_kb for r in self.results[key]) / 1024.0
              for key in ("corral a", "corral b", "syslog-ng a", "syslog-ng b")))
        w("")
        w("## Targets")
        w("")
        def ratio(k, i):
            return R["cpu", "corral", k][i] / R["cpu", "syslog-ng", k][i]
        slow = [sl("corral", "cpu", i) for i in (0, 1)]
        start = self.times("corral startup b", "wall")
        w("Judged by CPU time, on the best run and on the median; start-up on wall time.  "
          "On a loaded machine the best runs are the better estimate of what the code "
          "does (other processes only ever make a run slower).")
        w("")
        w("| target | best | met | median | met |")
        w("|---|---:|---|---:|---|")
        for k in ("a", "b"):
            w("| corral >= 3x syslog-ng, (%s) | %.2fx | %s | %.2fx | %s |" % (
                k, ratio(k, 0), yes(ratio(k, 0) >= 3), ratio(k, 1), yes(ratio(k, 1) >= 3)))
        w("| corral (b) no slower than 1.5x its (a) | %.2fx | %s | %.2fx | %s |" % (
            slow[0], yes(slow[0] <= 1.5), slow[1], yes(slow[1] <= 1.5)))
        w("| corral start-up < 0.2 s with %d rules | %.3f s | %s | %.3f s | %s |" % (
            a.nrules_b, start[0], yes(start[0] < 0.2), start[1], yes(start[1] < 0.2)))
        w("")
        w("## Agreement with syslog-ng")
        w("")
        for k in ("a", "b"):
            w("- (%s): %s" % (k, self.check_results[k]["summary"]))
            for line in self.check_results[k]["details"]:
                w("  - %s" % line)
        w("")
        w("Classes (check run, corral):")
        w("")
        for k in ("a", "b"):
            w("- (%s): %s" % (k, ", ".join("%s %d" % kv for kv in
                                            sorted(self.check_results[k]["classes"].items(),
                                                   key=lambda kv: -kv[1]))))
        w("")
        w("## Setup")
        w("")
        w("- corpus: %d lines, %.1f MB (%s)" % (self.n, os.path.getsize(a.corpus) / 1e6,
                                                a.corpus_desc))
        w("- rule sets: (a) %s; (b) (a) plus %s" % (a.rules_a_desc, a.rules_b_desc))
        w("- corral: `%s match -j 1 -r RULES -f CORPUS -T ''`, %s" % (a.corral, a.corral_desc))
        w("- syslog-ng: `%s`, `syslog-ng -F --no-caps -f CONF` with private persist, pid "
          "and control files; CONF: `source { stdin(); }` (default flags: RFC 3164 parsing, "
          "as corral), `parser { db-parser(file(RULES)); }`, no destination; the corpus "
          "comes through a pipe from `cat` pinned to CPU %d; syslog-ng exits at end of "
          "input, once every message went through the parser" % (a.syslog_ng_version, a.feed_cpu))
        w("- pinned to CPU %d (sched_setaffinity, as taskset -c %d): corral, syslog-ng (all "
          "its threads), pdbtool" % (a.cpu, a.cpu))
        w("- machine: %s, %d CPUs (nproc), %s, Linux %s, %.1f GB RAM" % (
            cpu_model(), os.cpu_count(), platform.machine(), platform.release(), mem_gb()))
        w("- load average before: %s; after: %s" % (a.load_before, " ".join(
            "%.2f" % x for x in os.getloadavg())))
        w("")
        w("## Raw runs")
        w("")
        w("| measurement | wall (s) | CPU (s) | peak RSS (MB) |")
        w("|---|---|---|---|")
        for key, rs in self.results.items():
            w("| %s | %s | %s | %s |" % (key, " ".join("%.3f" % r.wall for r in rs),
                                         " ".join("%.3f" % r.cpu for r in rs),
                                         " ".join("%.1f" % (r.maxrss_kb / 1024.0) for r in rs)))
        w("")
        text = "\n".join(L)
        with open(a.out, "w") as f:
            f.write(text)
        print()
        print(text)
        print("report written to %s" % a.out)


def compare(c_out, s_out, n):
    with open(c_out, errors="replace") as f:
        c = f.read().splitlines()
    with open(s_out, errors="replace") as f:
        s = f.read().splitlines()
    res = {"classes": collections.Counter(l.split("|", 1)[0] for l in c), "details": []}
    diff = collections.Counter()
    ndiff = 0
    for x, y in zip(c, s):
        if x != y:
            ndiff += 1
            diff["corral %s, syslog-ng %s" % (x or "''", y or "''")] += 1
    cc = collections.Counter(c)
    sc = collections.Counter(s)
    keys_differ = sum(1 for k in set(cc) | set(sc) if cc[k] != sc[k])
    if len(c) == n and len(s) == n and ndiff == 0:
        with open(c_out, "rb") as f1, open(s_out, "rb") as f2:
            same_bytes = f1.read() == f2.read()
        res["summary"] = ("all %d messages get the same line from both (`%s`; the files are "
                          "%s; %d distinct lines, %d messages classified)" % (
                              n, CHECK_TEMPLATE, "byte-identical" if same_bytes else
                              "**not** byte-identical", len(cc),
                              n - res["classes"].get("unknown", 0)))
    else:
        res["summary"] = ("**MISMATCH**: %d lines from corral, %d from syslog-ng, %d of %d "
                          "messages differ line by line, %d class|rule_id counts differ" % (
                              len(c), len(s), ndiff, n, keys_differ))
        for k, v in diff.most_common(15):
            res["details"].append("%d x %s" % (v, k))
        for k in sorted(set(cc) | set(sc), key=lambda k: -abs(cc[k] - sc[k]))[:15]:
            if cc[k] != sc[k]:
                res["details"].append("count of %s: corral %d, syslog-ng %d" % (k, cc[k], sc[k]))
    return res




def fmt_rate(x):
    return "{:,.0f}".format(x)








def main():
    ap = argparse.ArgumentParser()
    for opt in ("scratch", "corral", "syslog-ng", "pdbtool", "rules-a", "rules-b",
                "corpus", "out"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--corpus-loghub", default="")
    for opt in ("rules-a-desc", "rules-b-desc", "corpus-desc", "corral-desc",
                "syslog-ng-version"):
        ap.add_argument("--" + opt, default="")
    ap.add_argument("--nrules-a", type=int, default=0)
    ap.add_argument("--nrules-b", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--feed-cpu", type=int, default=None)
    ap.add_argument("--no-baseline", dest="baseline", action="store_false")
    ap.add_argument("--check-template", default=None,
                    help="the template of the agreement check (default: class|rule_id)")
    a = ap.parse_args()
    global CHECK_TEMPLATE
    if a.check_template:
        CHECK_TEMPLATE = a.check_template
    if a.feed_cpu is None:
        a.feed_cpu = 1 if os.cpu_count() > 1 and a.cpu == 0 else 0
    global SCRATCH
    SCRATCH = a.scratch
    a.load_before = " ".join("%.2f" % x for x in os.getloadavg())
    b = Bench(a)
    print("corpus: %d lines; %d runs of each measurement" % (b.n, a.runs), flush=True)
    b.measure()
    b.check()
    b.report()


if __name__ == "__main__":
    main()
