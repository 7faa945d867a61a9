#!/usr/bin/env python3
"""bench/sigma.py: Sigma detection rules against the same work as patterndb
rules, on one core, through `corral match -j 1`.  See bench/README.md.

  python3 bench/sigma.py [--lines N] [--runs R] [--rules 100,1000] [--hit P]
                         [--corr N] [--out FILE]

The corpus is the loghub OpenSSH and Linux lines (../shared/data/loghub or
--loghub) repeated to N lines.  Rule i of a set of n is generated with a
fixed seed: a keyword rule (logsource product linux: every message) whose
keywords are three strings, each with probability P (--hit, default 0.1) a
word pair taken from the corpus (so that some rules hit), the others
absent; every tenth rule instead reads usracct.username (extracted by rules/sshd.xml) with |startswith on
logsource sshd; every twentieth is a |re.  The patterndb set does the same
search: for each keyword a generic rule whose pattern is
@ESTRING::KEYWORD@@ANYSTRING@ (the radix tries every such parser at the
root, a substring search each).  Every run loads rules/ (the shipped
patterndb rules) too, so that sshd fields are extracted; "baseline" is that
alone.  Times are user+system CPU of corral, the best of R runs; every
message and alert is printed (to /dev/null), as corral match does.  The
Sigma alerts column counts the alerts the rules raised over the corpus.

Correlation (--corr N, default 100; 0: none): N correlation rules, each on
a detection rule of its own whose keyword is a word pair of the corpus
(chosen with a fixed seed): event_count (3 events of one Hostname within
10 minutes), then value_count (5 distinct Pid of one Hostname within 10
minutes), then value_percentile (a Pid that is at most 20% of its
Hostname's events within 10 minutes).  --rules '' runs no detection set.  The patterndb set does the event_count work with contexts: per
rule, @ESTRING::KEYWORD@@ANYSTRING@ with context-id bench-I-${HOST}
(scope global, timeout 600 s) and an action on every third message of the
context.  These runs load no other rules (the shipped ones would take the
sshd lines first); "baseline (one rule, no match)" is corral match with one
rule that matches no line.  A message takes one patterndb rule but every
Sigma rule it matches, and a context's timeout restarts with each message
where Sigma's window slides: the work is alike, not identical.
"""
import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)


def corpus(loghub, n, path):
    lines = []
    for name in ("OpenSSH_2k.log", "Linux_2k.log"):
        with open(os.path.join(loghub, name), errors="replace") as f:
            lines += [l.rstrip("\n") for l in f if l.strip()]
    with open(path, "w") as out:
        for i in range(n):
            out.write(lines[i % len(lines)] + "\n")
    return lines


def words_of(lines):
    pairs = []
    for l in lines:
        msg = l.split(": ", 1)[-1].split()
        for i in range(len(msg) - 1):
            w = msg[i] + " " + msg[i + 1]
            if all(c.isalnum() or c in " ._-" for c in w) and len(w) > 6:
                pairs.append(w)
    return sorted(set(pairs))


def gen(n, pairs, sdir, pdb, hit):
    rnd = random.Random(n)
    os.makedirs(sdir, exist_ok=True)
    out = ['<?xml version="1.0"?>\n<patterndb version="4" pub_date="2026-01-01">\n'
           '<ruleset name="bench" id="bench-generic">\n<rules>\n']
    for i in range(n):
        kws = []
        for k in range(3):
            if rnd.random() < hit:
                kws.append(rnd.choice(pairs))
            else:
                kws.append("absent%d token%d" % (i, k))
        if i % 20 == 19:
            det = "    sel:\n        Message|re: '%s[0-9]+'\n    condition: sel\n" % kws[0].split()[0]
            ls = "    product: linux\n"
        elif i % 10 == 9:
            det = "    sel:\n        User|startswith: '%s'\n    condition: sel\n" % ("adm" if i % 20 else "root")
            ls = "    product: linux\n    service: sshd\n"
        else:
            det = "    keywords:\n" + "".join("        - '%s'\n" % k for k in kws) + "    condition: keywords\n"
            ls = "    product: linux\n"
        with open(os.path.join(sdir, "r%05d.yml" % i), "w") as f:
            f.write("title: bench rule %d\nid: bench-%d\nlevel: low\nlogsource:\n%sdetection:\n%s"
                    % (i, i, ls, det))
        out.append('<rule id="bench.%d" provider="bench" class="bench"><patterns>\n' % i)
        for k in kws:
            out.append("<pattern>@ESTRING::%s@@ANYSTRING@</pattern>\n" % k)
        out.append("</patterns></rule>\n")
    out.append("</rules>\n</ruleset>\n</patterndb>\n")
    with open(pdb, "w") as f:
        f.write("".join(out))


def gen_corr(n, pairs, sdir, pdb, kind):
    rnd = random.Random(7 * n + 1)
    os.makedirs(sdir, exist_ok=True)
    out = ['<?xml version="1.0"?>\n<patterndb version="4" pub_date="2026-01-01">\n'
           '<ruleset name="bench" id="bench-corr">\n<rules>\n']
    for i in range(n):
        kw = rnd.choice(pairs)
        if kind == "event_count":
            cond = "    condition:\n        gte: 3\n"
        elif kind == "value_count":
            cond = "    condition:\n        field: Pid\n        gte: 5\n"
        else:
            cond = "    condition:\n        field: Pid\n        lte: 20\n"
        with open(os.path.join(sdir, "c%05d.yml" % i), "w") as f:
            f.write("title: bench correlation %d\nid: bench-c%d\nlevel: low\ncorrelation:\n"
                    "    type: %s\n    rules:\n        - bench-d%d\n    group-by:\n"
                    "        - Hostname\n    timespan: 10m\n%s---\n"
                    "title: bench detection %d\nid: bench-d%d\nlogsource:\n    product: linux\n"
                    "detection:\n    keywords:\n        - '%s'\n    condition: keywords\n"
                    % (i, i, kind, i, cond, i, i, kw))
        out.append('<rule id="bench.c%d" provider="bench" class="bench" context-id="bench-%d-${HOST}"'
                   ' context-timeout="600" context-scope="global"><patterns>\n'
                   "<pattern>@ESTRING::%s@@ANYSTRING@</pattern>\n</patterns>\n"
                   "<actions><action condition='\"$(%% $(context-length) 3)\" == \"0\"'>"
                   "<message><values><value name=\"MESSAGE\">bench correlation %d</value>"
                   "</values><tags><tag>corral.alert</tag></tags></message></action></actions>"
                   "</rule>\n" % (i, i, kw, i))
    out.append("</rules>\n</ruleset>\n</patterndb>\n")
    with open(pdb, "w") as f:
        f.write("".join(out))


def generated(cmd):
    p = subprocess.run(cmd + ["--stats"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    # the last line is the summary: "corral match: N messages, ..., N generated; ..."
    last = p.stderr.strip().splitlines()[-1]
    for w in last.split(";")[0].split(","):
        if w.strip().endswith("generated"):
            return int(w.split()[0])
    return 0


def run(cmd, runs):
    best = None
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(os.devnull, "w") as null:
            p = subprocess.run(cmd, stdout=null, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
        t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = t if best is None else min(best, t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=500000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rules", default="100,1000")
    ap.add_argument("--loghub", default=os.path.join(top, "..", "shared", "data", "loghub"))
    ap.add_argument("--corral", default=os.path.join(top, "build", "tools", "corral"))
    ap.add_argument("--cpu", default="0")
    ap.add_argument("--hit", type=float, default=0.1,
                    help="probability that a keyword is a word pair of the corpus (default 0.1)")
    ap.add_argument("--corr", type=int, default=100,
                    help="correlation rules of each kind (default 100; 0: none)")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not os.path.exists(a.corral):
        a.corral = os.path.join(top, "tools", "corral")
    work = tempfile.mkdtemp(prefix="corral-sigma-bench.")
    try:
        corp = os.path.join(work, "corpus.log")
        pairs = words_of(corpus(a.loghub, a.lines, corp))
        mapping = os.path.join(top, "etc", "sigma-mapping.yml")
        base = ["taskset", "-c", a.cpu, a.corral, "match", "-j", "1", "-f", corp,
                "-r", os.path.join(top, "rules")]
        rows = [("baseline (rules/ only)", run(base, a.runs), "")] if a.rules else []
        for n in [int(x) for x in a.rules.split(",") if x]:
            sdir, pdb = os.path.join(work, "sigma%d" % n), os.path.join(work, "pdb%d.xml" % n)
            gen(n, pairs, sdir, pdb, a.hit)
            cmd = base + ["--sigma", sdir, "--sigma-mapping", mapping]
            alerts = generated(cmd) - generated(base)
            rows.append(("%d Sigma rules" % n, run(cmd, a.runs), format(alerts, ",")))
            rows.append(("%d patterndb rules (%d patterns)" % (n, 3 * n),
                         run(base + ["-r", pdb], a.runs), ""))
        if a.corr:
            n = a.corr
            empty = os.path.join(work, "empty.xml")
            with open(empty, "w") as f:
                f.write('<?xml version="1.0"?>\n<patterndb version="4" pub_date="2026-01-01">\n'
                        '<ruleset name="none" id="none"><rules><rule id="none" provider="bench" '
                        'class="bench"><patterns><pattern>bench: no line says this</pattern>'
                        '</patterns></rule></rules></ruleset>\n</patterndb>\n')
            base = ["taskset", "-c", a.cpu, a.corral, "match", "-j", "1", "-f", corp, "-r", empty]
            rows.append(("baseline (one rule, no match)", run(base, a.runs), ""))
            for kind in ("event_count", "value_count", "value_percentile"):
                sdir = os.path.join(work, "corr-%s" % kind)
                pdb = os.path.join(work, "corr-%s.xml" % kind)
                gen_corr(n, pairs, sdir, pdb, kind)
                cmd = base + ["--sigma", sdir, "--sigma-mapping", mapping]
                alerts = generated(cmd) - generated(base)
                rows.append(("%d Sigma %s correlations (and their %d detection rules)" % (n, kind, n),
                             run(cmd, a.runs), format(alerts, ",")))
                if kind == "event_count":
                    pcmd = base + ["-r", pdb]
                    rows.append(("%d patterndb rules with contexts (every 3rd message)" % n,
                                 run(pcmd, a.runs),
                                 "(%s generated)" % format(generated(pcmd) - generated(base), ",")))
        out = ["| rules | CPU s | events/s | Sigma alerts |", "|---|---:|---:|---:|"]
        for name, t, alerts in rows:
            out.append("| %s | %.2f | %s | %s |" % (name, t, format(int(a.lines / t), ","), alerts))
        text = ("corral match -j 1 over %s lines (loghub OpenSSH + Linux, repeated), keyword hit "
                "probability %g, best of %d, pinned to CPU %s; every message and alert printed "
                "(to /dev/null):\n\n%s\n" % (format(a.lines, ","), a.hit, a.runs, a.cpu,
                                              "\n".join(out)))
        print(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
