#!/usr/bin/env python3
"""
corr_diff: differential test of corral's correlation engine against
syslog-ng 3.38's pdbtool.

It generates (from a seed, reproducibly) correlation scenarios: a pattern
database whose rules have context ids, scopes, timeouts, values with
back-references, actions (match and timeout triggers, conditions, rate
limits, every inheritance mode, create-context) and a log whose timestamps
step across context deadlines exactly, go backwards, jump, and run ahead of
the clock.  Each log goes through `corral match -f` and `pdbtool match -f`
(at end of input both expire every open context); the emitted messages,
input and generated, are compared line by line through a template listing
every field the scenario can touch.  Scenario flavours weight the odds:
mixed; timers (many contexts, deadlines crossed exactly); rate (bursts and
refills of rate limits); cc (create-context, contexts joined by rules); long
(timeouts past syslog-ng's first timer-wheel level, ties across levels).

The clock: with libfaketime available, pdbtool runs under a frozen clock set
inside the scenario (LD_PRELOAD, FAKETIME=absolute time; corral gets the same
--now), so that stamps ahead of the clock are clamped reproducibly.  Without
it both use the real clock and every stamp lies in the past.

corral runs one thread (-j 1) on even-numbered scenarios and its parallel
engine (-j 4, engine/par.c) on odd ones: both must agree with pdbtool, so
with each other.  Scenarios with create-context correlate in one shard.

Known, deliberate difference: corral sets .classifier.context_id on generated
messages that come from a context; that field is compared for input messages
only.  $TAGS is compared in order: both list tags in the order they were
first registered (--loose-tags: as a set).  A difference outside the engine,
left out unless asked for: a create-context always names its scope
(--loader-quirks: also without; syslog-ng 3.38 takes global, corral's loader
process).

Scenarios avoid what makes syslog-ng itself misbehave (see "syslog-ng bugs"
in engine/corr.c): a rate N/S with N > 256*S (division by zero), a
create-context run by a timeout action of a rule with context-timeout 0 (the
new timer is lost and pdbtool never ends), a timeout action that creates a
context of its own rule without a condition that stops the chain (pdbtool
never ends), empty <value></value> elements (syslog-ng sets the value to
"", corral's loader ignores the element), and a stamp or clock at a multiple
of 1024 s, where syslog-ng fires a 1024 s timeout armed then at once.

Exit status: 0 when everything agrees, 1 on any mismatch (the differing
scenarios are printed, minimised), 2 on usage or tool errors.
"""

import argparse
import calendar
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

LIBFAKETIME_PATHS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                     "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                     "/usr/lib64/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                     "/usr/local/lib/faketime/libfaketime.so.1"]


def find_libfaketime():
    for p in LIBFAKETIME_PATHS:
        if os.path.exists(p):
            return p
    return ""

ENC = "latin-1"
STRICT_TAGS = True
# Rule-file forms that corral's loader (engine/pdb_load.c) reads differently
# from syslog-ng 3.38; left out unless --loader-quirks: a create-context
# without context-scope (global in 3.38, process in corral).
LOADER_QUIRKS = False
ONLY_FLAVOUR = None
SEP = "|"
FIELDS = ["G", ".classifier.rule_id", ".classifier.context_id", "HOST", "PROGRAM", "PID",
          "TAGS", "k", "s", "v1", "v2", "MESSAGE", "ISODATE"]
TEMPLATE = SEP.join("${%s}" % f if f != "TAGS" else "$TAGS" for f in FIELDS) + "\\n"
CTXID_FIELD = FIELDS.index(".classifier.context_id")
TAGS_FIELD = FIELDS.index("TAGS")

BASE = calendar.timegm((2026, 11, 20, 10, 0, 0))
SCOPES = [None, "process", "program", "host", "global"]

# ---------------------------------------------------------------- model


def xml_attr(s):
    return (s.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def xml_text(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Action:
    def __init__(self):
        self.trigger = None     # None (match), "match", "timeout"
        self.condition = None
        self.rate = None
        self.kind = "message"   # or "create-context"
        self.inherit = None     # (attribute, value) or None
        self.values = []        # [(name, template)]
        self.tags = []
        self.cc_id = None
        self.cc_scope = None
        self.cc_timeout = None

    def fires_on_timeout(self):
        return self.trigger == "timeout"

    def xml(self, marker):
        attrs = ""
        if self.trigger:
            attrs += ' trigger="%s"' % self.trigger
        if self.condition is not None:
            attrs += ' condition="%s"' % xml_attr(self.condition)
        if self.rate is not None:
            attrs += ' rate="%s"' % self.rate
        mattrs = ""
        if self.inherit:
            mattrs = ' %s="%s"' % self.inherit
        vals = [("G", marker)] + self.values
        msg = ["<message%s>" % mattrs, "<values>"]
        msg += ['<value name="%s">%s</value>' % (n, xml_text(t)) for n, t in vals]
        msg.append("</values>")
        if self.tags:
            msg.append("<tags>%s</tags>" % "".join("<tag>%s</tag>" % t for t in self.tags))
        msg.append("</message>")
        body = "".join(msg)
        if self.kind == "create-context":
            cattrs = ' context-id="%s"' % xml_attr(self.cc_id)
            if self.cc_scope:
                cattrs += ' context-scope="%s"' % self.cc_scope
            if self.cc_timeout is not None:
                cattrs += ' context-timeout="%d"' % self.cc_timeout
            body = "<create-context%s>%s</create-context>" % (cattrs, body)
        return "<action%s>%s</action>" % (attrs, body)


class Rule:
    def __init__(self, idx, program):
        self.idx = idx
        self.id = "r%d" % idx
        self.kw = "e%d" % idx
        self.program = program  # "prog" or None (generic ruleset)
        self.cls = None
        self.ctx_id = None
        self.scope = None
        self.timeout = None
        self.values = []
        self.tags = []
        self.actions = []

    def pattern(self):
        return "%s @ESTRING:k:;@@ANYSTRING:s@" % self.kw

    def xml(self):
        attrs = ' id="%s" provider="corr_diff"' % self.id
        if self.cls:
            attrs += ' class="%s"' % self.cls
        if self.ctx_id is not None:
            attrs += ' context-id="%s"' % xml_attr(self.ctx_id)
        if self.scope:
            attrs += ' context-scope="%s"' % self.scope
        if self.timeout is not None:
            attrs += ' context-timeout="%d"' % self.timeout
        out = ["<rule%s>" % attrs, "<patterns><pattern>%s</pattern></patterns>" % self.pattern()]
        if self.values:
            out.append("<values>%s</values>" % "".join(
                '<value name="%s">%s</value>' % (n, xml_text(t)) for n, t in self.values))
        if self.tags:
            out.append("<tags>%s</tags>" % "".join("<tag>%s</tag>" % t for t in self.tags))
        if self.actions:
            out.append("<actions>%s</actions>" % "".join(
                a.xml("%s.%d" % (self.id, i)) for i, a in enumerate(self.actions)))
        out.append("</rule>")
        return "".join(out)


class Line:
    def __init__(self, t, host, prog, pid, msg, fmt="iso", frac=None, tz=0):
        self.t = t          # seconds since the epoch
        self.host = host
        self.prog = prog
        self.pid = pid      # "" for none
        self.msg = msg
        self.fmt = fmt      # "iso" or "bsd"
        self.frac = frac    # e.g. "250" or None
        self.tz = tz        # minutes east of UTC (iso only)

    def text(self):
        if self.fmt == "bsd":
            stamp = time.strftime("%b %d %H:%M:%S", time.gmtime(self.t))
        else:
            lt = time.gmtime(self.t + self.tz * 60)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", lt)
            if self.frac:
                stamp += "." + self.frac
            sign = "+" if self.tz >= 0 else "-"
            stamp += "%s%02d:%02d" % (sign, abs(self.tz) // 60, abs(self.tz) % 60)
        tag = self.prog + ("[%s]" % self.pid if self.pid else "")
        return "%s %s %s: %s" % (stamp, self.host, tag, self.msg)


class Scenario:
    def __init__(self, sid, seed):
        self.sid = sid
        self.seed = seed
        self.rules = []
        self.lines = []
        self.clock = None  # frozen clock (epoch seconds) or None
        self.flavour = None

    def xml(self):
        prog = [r for r in self.rules if r.program == "prog"]
        generic = [r for r in self.rules if r.program is None]
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<patterndb version="4" pub_date="2026-01-01">']
        if prog:
            out.append('<ruleset name="prog" id="rs-prog"><patterns><pattern>prog</pattern>'
                       '</patterns><rules>')
            out += [r.xml() for r in prog]
            out.append("</rules></ruleset>")
        if generic:
            out.append('<ruleset name="generic" id="rs-generic"><rules>')
            out += [r.xml() for r in generic]
            out.append("</rules></ruleset>")
        out.append("</patterndb>")
        return "\n".join(out) + "\n"

    def log(self):
        return "".join(l.text() + "\n" for l in self.lines)

    def clock_str(self):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.clock))


# ---------------------------------------------------------------- generator

CTX_IDS = ["${k}", "${k}", "${k}", "c", "cc${k}", "cc${k}", "${s}", "$(echo ${k})", "${nope}",
           "", "$HOST-${k}", "${k}@1", "${s}${k}"]
RULE_VALUES = ["$(context-lookup --max-count 1 (\"${k}\" != \"\") ${k})", "${k}@9", "${k}", "${k}@1", "${k}@2", "${s}@1", "$(context-length)", "$CONTEXT_ID",
               "$(context-values ${k})", "${v1}@1", "n${v1}@1", "$(context-values ${s} ${k})",
               "$(context-lookup (\"${s}\" eq \"a\") ${k})", "${.classifier.rule_id}@1",
               "$(grep (\"${k}\" == \"1\") ${s})", "${MESSAGE}@1", "${v2}@1", "$_",
               # shortcuts in corral (tf_list.c, tf_cond.c): the first item alone, the items unlisted
               "$(list-head $(context-values ${s} ${k}))",
               "$(list-count $(filter (\"$_\" eq \"${k}\") $(context-values ${k})))",
               "$(filter (\"$_\" ne \"a\") $(context-values ${s}))"]
GEN_VALUES = ["g ${k}", "g ${k}@1 ${k}@2", "g $(context-length)", "g $(context-values ${k})",
              "g $CONTEXT_ID", "g ${v1}@1", "g ${k}@0 ${MESSAGE}@0", "g ${MESSAGE}@1", "g ${s}", "${nope}",
              "g $(context-values ${v1})", "g ${.classifier.rule_id}@1", "g ${G}@1",
              "g ${k}@3", "g $(context-lookup (\"${k}\" == \"2\") ${s})", "g ${HOST}@2",
              "g ${PID}@1 ${PROGRAM}@1", "g ${v2}", "g ${.classifier.context_id}@1",
              "g ${ISODATE}@1", "g $(list-head $(context-values ${ISODATE}))"]
CONDITIONS = ['"$(context-length)" >= "2"', '"${k}" == "1"', '"${s}" eq "a"',
              'match("a" value("s"))', 'tags("t1")', 'not tags("t2")', '"${k}@1" ne ""',
              '"$(context-length)" > "1" and "${s}" ne "b"', '"${k}@1" == "${k}"',
              '"$(context-length)" == "1"', 'program("prog")', 'host("h1")']
RATES = ["1", "2", "1/2", "2/3", "3/5", "1/1", "5/2", "2/1", "1/3"]
# N <= 256*S: syslog-ng divides by zero beyond
RATES_WIDE = RATES + ["3/7", "7/3", "10/60", "1/10", "4/9", "256/1", "9/2", "5/11", "100/3"]
INHERITS = [None, None, ("inherit-properties", "TRUE"), ("inherit-properties", "FALSE"),
            ("inherit-properties", "context"), ("inherit-properties", "1"),
            ("inherit-properties", "f"), ("inherit-mode", "none"),
            ("inherit-mode", "last-message"), ("inherit-mode", "context")]
CC_IDS = ["cc${k}", "cc${k}", "c", "${k}", "cc${k}@1", "cc${v1}", "cc", "${s}"]
KS = ["1", "1", "2", "2", "3", ""]
SS = ["a", "a", "b", "c"]


class Flavour:
    """What a scenario stresses: the odds its generator uses."""

    def __init__(self, name, **kw):
        self.name = name
        self.p_ctx = 0.85            # a rule correlates
        self.timeouts = [None, 0, 1, 1, 2, 2, 3, 5]
        self.ctx_ids = CTX_IDS
        self.nactions = [0, 1, 1, 2, 2, 3]
        self.triggers = [None, None, "match", "timeout", "timeout"]
        self.p_condition = 0.3
        self.p_rate = 0.25
        self.rates = RATES
        self.p_cc = 0.25
        self.cc_ids = CC_IDS
        self.gaps = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7]
        self.ks = KS
        self.__dict__.update(kw)


FLAVOURS = [
    (50, Flavour("mixed")),
    # many contexts, deadlines crossed exactly, several expiring in one step
    (20, Flavour("timers", p_ctx=1.0, timeouts=[0, 1, 1, 2, 2, 3, 4],
                 ctx_ids=["${k}", "${k}", "${s}${k}", "c", "$HOST-${k}"],
                 triggers=["timeout", "timeout", None], p_cc=0.1,
                 gaps=[0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 5], ks=["1", "2", "3", "4", "5", "6"])),
    # token buckets: bursts and refills
    (15, Flavour("rate", p_rate=0.9, rates=RATES_WIDE, p_condition=0.1, p_cc=0.05,
                 nactions=[1, 2, 2, 3], triggers=[None, None, "match", "timeout"],
                 gaps=[0, 0, 0, 0, 0, 1, 1, 2, 3, 5, 8, 13])),
    # timeouts past syslog-ng's first wheel level (1024 s), ties across it
    (5, Flavour("long", p_ctx=1.0, timeouts=[1020, 1024, 1030, 1100, 2048, 4, 65000, 65536, 66560],
                ctx_ids=["${k}", "${k}", "c"], triggers=["timeout", "timeout", None], p_cc=0.1,
                gaps=[0, 0, 4, 6, 10, 70, 74, 80, 1000, 1020, 1024, 64512, 65536],
                ks=["1", "2", "3", "4"])),
    # contexts made by actions, joined by rules
    (15, Flavour("cc", p_cc=0.6, ctx_ids=["cc${k}", "cc${k}", "cc", "${k}", "cc${v1}"],
                 cc_ids=["cc${k}", "cc${k}", "cc", "${k}", "cc${k}@1"], nactions=[1, 2, 2, 3])),
]


def gen_action(rng, rule, fl):
    a = Action()
    a.trigger = rng.choice(fl.triggers)
    if rng.random() < fl.p_condition:
        a.condition = rng.choice(CONDITIONS)
    if rng.random() < fl.p_rate:
        a.rate = rng.choice(fl.rates)
    if rng.random() < fl.p_cc:
        a.kind = "create-context"
        a.cc_id = rng.choice(fl.cc_ids)
        a.cc_scope = rng.choice(SCOPES if LOADER_QUIRKS else SCOPES[1:])
        a.cc_timeout = rng.choice([None, 0, 1, 2, 4])
    a.inherit = rng.choice(INHERITS)
    a.values = [("MESSAGE", rng.choice(GEN_VALUES))]
    for name in ("v1", "v2"):
        if rng.random() < 0.3:
            a.values.append((name, rng.choice(GEN_VALUES + RULE_VALUES)))
    if rng.random() < 0.1:
        a.values.append(("PROGRAM", rng.choice(["gen", "app"])))
    if rng.random() < 0.08:
        a.values.append(("HOST", "hgen"))
    if rng.random() < 0.1:
        a.values.append(("PID", rng.choice(["9", "${nope}"])))
    if rng.random() < 0.3:
        a.tags = [rng.choice(["t1", "gt"])]
    if rng.random() < 0.3:
        rng.shuffle(a.values)
    return a


def gen_scenario(sid, seed, nrules, nlines, fake_clock):
    rng = random.Random(seed)
    sc = Scenario(sid, seed)
    if ONLY_FLAVOUR:
        fl = [f for _, f in FLAVOURS if f.name == ONLY_FLAVOUR][0]
    else:
        fl = rng.choices([f for _, f in FLAVOURS], [w for w, _ in FLAVOURS])[0]
    sc.flavour = fl.name
    for i in range(nrules):
        r = Rule(i, "prog" if rng.random() < 0.5 else None)
        if rng.random() < 0.3:
            r.cls = rng.choice(["c", "auth"])
        if rng.random() < fl.p_ctx:
            r.ctx_id = rng.choice(fl.ctx_ids)
            r.scope = rng.choice(SCOPES)
            r.timeout = rng.choice(fl.timeouts)
        for name in ("v1", "v2"):
            if rng.random() < 0.35:
                r.values.append((name, rng.choice(RULE_VALUES)))
        # rule values may rewrite the scope fields: the key is taken before
        if rng.random() < 0.05:
            r.values.append(("HOST", rng.choice(["hx", "${s}"])))
        if rng.random() < 0.05:
            r.values.append(("PID", rng.choice(["7", "${k}"])))
        if rng.random() < 0.3:
            r.tags = [rng.choice(["t1", "t2"])]
        for _ in range(rng.choice(fl.nactions)):
            a = gen_action(rng, r, fl)
            # syslog-ng bug: a context created by a timeout action of a rule with
            # timeout 0 is armed into the slot being fired and lost; pdbtool then
            # never ends.
            if a.kind == "create-context" and a.fires_on_timeout() and not r.timeout:
                a.trigger = "match"
            # The new context remembers this rule, so its expiry runs this action
            # again: an endless chain, and pdbtool's final expiry never ends.  A
            # condition false on a one-message context breaks the chain.
            if a.kind == "create-context" and a.fires_on_timeout():
                a.condition = rng.choice(['"$(context-length)" >= "2"', '"${k}@1" ne ""'])
            r.actions.append(a)
        sc.rules.append(r)

    t = BASE + rng.randrange(0, 3600)
    start = t
    hosts, progs, pids = ["h1", "h2"], ["prog", "app", "svc"], ["1", "2", ""]
    host, prog, pid = "h1", "prog", "1"
    # several messages often share a stamp, then time steps over deadlines
    gaps = fl.gaps
    for _ in range(nlines):
        x = rng.random()
        if x < 0.06:
            t = max(BASE, t - rng.randint(1, 5))  # back in time: correlation time stays
        elif x < 0.09:
            t += rng.randint(20, 200)
        else:
            t += rng.choice(gaps)
        if rng.random() < 0.4:
            host = rng.choice(hosts)
        if rng.random() < 0.5:
            prog = rng.choice(progs)
        if rng.random() < 0.4:
            pid = rng.choice(pids)
        y = rng.random()
        if y < 0.85:
            r = rng.choice(sc.rules)
            # a rule only sees its programs: "prog" has its own ruleset
            if r.program == "prog":
                prog = "prog"
            elif prog == "prog":
                prog = rng.choice(["app", "svc"])
            msg = "%s %s;%s" % (r.kw, rng.choice(fl.ks), rng.choice(SS))
        elif y < 0.93:
            msg = "zz %s;a" % rng.choice(KS)
        else:
            msg = "e%d nosep" % rng.randrange(nrules)
        # syslog-ng bug (engine/corr.c): a timeout of exactly 1024 armed at a
        # multiple of 1024 fires at the wheel's next second; no stamp is one
        if t % 1024 == 0:
            t += 1
        fmt = "bsd" if rng.random() < 0.05 else "iso"
        frac = rng.choice(["250", "999", "5"]) if fmt == "iso" and rng.random() < 0.08 else None
        tz = rng.choice([60, -120, 330]) if fmt == "iso" and rng.random() < 0.05 else 0
        sc.lines.append(Line(t, host, prog, pid, msg, fmt, frac, tz))
    if fake_clock:
        # the clock sits inside the log now and then: later stamps are clamped to it
        end = max(l.t for l in sc.lines)
        if rng.random() < 0.4:
            sc.clock = rng.randint(start, end + 1)
        else:
            sc.clock = end + rng.randint(1, 100)
        if sc.clock % 1024 == 0:
            sc.clock += 1
    return sc


# ---------------------------------------------------------------- running


class Runner:
    def __init__(self, corral, pdbtool, faketime, workdir):
        self.corral = corral
        self.pdbtool = pdbtool
        self.faketime = faketime
        self.workdir = workdir
        self.env = dict(os.environ, LC_ALL="C.UTF-8", TZ="UTC")
        self.runs = 0

    def _run(self, argv, env):
        try:
            p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=20)
        except subprocess.TimeoutExpired:
            return "<%s timed out>\n" % os.path.basename(argv[0])
        except OSError as e:
            raise RuntimeError("%s: %s" % (argv[0], e))
        if p.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (argv[0], p.returncode,
                                                     p.stderr.decode(ENC)[-2000:]))
        return p.stdout.decode(ENC)

    def run(self, sc, tag):
        d = os.path.join(self.workdir, "s%d%s" % (sc.sid, tag))
        os.makedirs(d, exist_ok=True)
        rules, log = os.path.join(d, "rules.xml"), os.path.join(d, "test.log")
        with open(rules, "w", encoding=ENC) as f:
            f.write(sc.xml())
        with open(log, "w", encoding=ENC) as f:
            f.write(sc.log())
        pargv = [self.pdbtool, "match", "-p", rules, "-f", log, "-T", TEMPLATE]
        cargv = [self.corral, "match", "-j", "1" if sc.sid % 2 == 0 else "4", "-r", rules, "-f",
                 log, "-T", TEMPLATE]
        penv = self.env
        if sc.clock is not None:
            # not the faketime(1) wrapper: its semaphores collide under load.
            # An absolute FAKETIME freezes the clock.
            penv = dict(self.env, LD_PRELOAD=self.faketime, FAKETIME=sc.clock_str(),
                        FAKETIME_DONT_FAKE_MONOTONIC="1")
            cargv += ["--now", sc.clock_str().replace(" ", "T") + "Z"]
        self.runs += 1
        pout = self._run(pargv, penv)
        cout = self._run(cargv, self.env)
        return d, normalise(pout), normalise(cout)


def normalise(out):
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    res = []
    for l in lines:
        f = l.split(SEP)
        if len(f) == len(FIELDS) and f[0]:
            f[CTXID_FIELD] = "-"  # generated: .classifier.context_id differs on purpose
        if len(f) == len(FIELDS) and not STRICT_TAGS:
            # --loose-tags: compared as a set
            f[TAGS_FIELD] = ",".join(sorted(f[TAGS_FIELD].split(",")))
        res.append(SEP.join(f))
    return res


def differs(runner, sc, tag=""):
    d, p, c = runner.run(sc, tag)
    return (p != c), d, p, c


# ---------------------------------------------------------------- minimising


def clone(sc):
    import copy
    return copy.deepcopy(sc)


def minimise(runner, sc, budget):
    """Greedy reduction: drop log lines, rules' actions, values and tags while
    the outputs still differ."""
    best = sc
    n = [0]

    def still(cand):
        if n[0] >= budget:
            return False
        n[0] += 1
        try:
            bad, _, p, c = differs(runner, cand, ".min")
        except (RuntimeError, subprocess.TimeoutExpired):
            return False
        # a hang is another problem (a reduction broke the scenario's invariants)
        return bad and not any("timed out>" in l for l in p + c)

    changed = True
    while changed and n[0] < budget:
        changed = False
        # log lines, in chunks then one by one
        for chunk in (8, 4, 2, 1):
            i = 0
            while i < len(best.lines) and n[0] < budget:
                cand = clone(best)
                del cand.lines[i:i + chunk]
                if cand.lines and still(cand):
                    best, changed = cand, True
                else:
                    i += chunk
        # rules no line uses any more
        used = set(l.msg.split(" ")[0] for l in best.lines)
        cand = clone(best)
        cand.rules = [r for r in cand.rules if r.kw in used]
        if len(cand.rules) < len(best.rules) and cand.rules and still(cand):
            best, changed = cand, True
        for ri in range(len(best.rules)):
            for ai in reversed(range(len(best.rules[ri].actions))):
                cand = clone(best)
                del cand.rules[ri].actions[ai]
                if still(cand):
                    best, changed = cand, True
            for attr in ("values", "tags"):
                for vi in reversed(range(len(getattr(best.rules[ri], attr)))):
                    cand = clone(best)
                    del getattr(cand.rules[ri], attr)[vi]
                    if still(cand):
                        best, changed = cand, True
            for ai in range(len(best.rules[ri].actions)):
                for attr in ("values", "tags"):
                    for vi in reversed(range(len(getattr(best.rules[ri].actions[ai], attr)))):
                        cand = clone(best)
                        del getattr(cand.rules[ri].actions[ai], attr)[vi]
                        if still(cand):
                            best, changed = cand, True
                for attr in ("condition", "rate", "inherit"):
                    act = best.rules[ri].actions[ai]
                    if attr == "condition" and act.kind == "create-context" and act.fires_on_timeout():
                        continue  # the condition ends a chain of contexts, see gen_scenario()
                    if getattr(act, attr) is not None:
                        cand = clone(best)
                        setattr(cand.rules[ri].actions[ai], attr, None)
                        if still(cand):
                            best, changed = cand, True
    return best


def report(runner, sc, d, p, c, do_min, budget):
    out = []
    if do_min:
        sc = minimise(runner, sc, budget)
        bad, d, p, c = differs(runner, sc, ".min")
        if not bad:
            out.append("(minimising lost the difference; the original scenario follows)")
    out.append("=" * 72)
    out.append("scenario %d (seed %d, %s)%s: files in %s" % (
        sc.sid, sc.seed, sc.flavour, ", clock %s" % sc.clock_str() if sc.clock is not None else "", d))
    out.append("--- rules.xml")
    out.append(sc.xml().rstrip("\n"))
    out.append("--- test.log")
    out.append(sc.log().rstrip("\n"))
    out.append("--- output (fields: %s)" % SEP.join(FIELDS))
    for i in range(max(len(p), len(c))):
        pl = p[i] if i < len(p) else "<none>"
        cl = c[i] if i < len(c) else "<none>"
        if pl == cl:
            out.append("   " + pl)
        else:
            out.append(" P " + pl)
            out.append(" C " + cl)
    return "\n".join(out)


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corral", required=True)
    ap.add_argument("--pdbtool", required=True)
    ap.add_argument("--libfaketime", default=find_libfaketime(),
                    help="libfaketime.so.1 for a frozen clock ('' to use the real clock)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenarios", type=int, default=300)
    ap.add_argument("--rules", type=int, default=4, help="rules per scenario")
    ap.add_argument("--lines", type=int, default=24, help="log lines per scenario")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--workdir", help="keep generated files here")
    ap.add_argument("--only", type=int, help="run only this scenario number")
    ap.add_argument("--max-report", type=int, default=3)
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--flavour", choices=[f.name for _, f in FLAVOURS],
                    help="generate only this kind of scenario")
    ap.add_argument("--loose-tags", action="store_true", help="compare $TAGS as a set, not in order")
    ap.add_argument("--loader-quirks", action="store_true",
                    help="also generate rule files corral's loader reads differently")
    ap.add_argument("--min-budget", type=int, default=400, help="runs spent minimising one case")
    args = ap.parse_args()
    global STRICT_TAGS, LOADER_QUIRKS, ONLY_FLAVOUR
    ONLY_FLAVOUR = args.flavour
    STRICT_TAGS = not args.loose_tags
    LOADER_QUIRKS = args.loader_quirks

    if args.libfaketime and not os.path.exists(args.libfaketime):
        print("corr_diff: %s does not exist" % args.libfaketime, file=sys.stderr)
        return 2
    for path in (args.corral, args.pdbtool):
        if not os.access(path, os.X_OK):
            print("corr_diff: %s is not executable" % path, file=sys.stderr)
            return 2
    workdir = args.workdir or tempfile.mkdtemp(prefix="corr_diff.")
    os.makedirs(workdir, exist_ok=True)
    runner = Runner(args.corral, args.pdbtool, args.libfaketime, workdir)

    rng = random.Random(args.seed)
    scenarios = []
    for sid in range(args.scenarios):
        seed = rng.getrandbits(48)
        nr = max(1, args.rules + rng.randint(-2, 2))
        nl = max(1, args.lines + rng.randint(-args.lines // 2, args.lines // 2))
        if args.only is not None and sid != args.only:
            continue
        scenarios.append(gen_scenario(sid, seed, nr, nl, bool(args.libfaketime)))

    failures = []
    nlines = 0
    ngen = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
            futs = {ex.submit(differs, runner, sc): sc for sc in scenarios}
            for fut in concurrent.futures.as_completed(futs):
                sc = futs[fut]
                bad, d, p, c = fut.result()
                nlines += len(p)
                ngen += sum(1 for l in p if l.split(SEP)[0])
                if bad:
                    failures.append((sc, d, p, c))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("corr_diff: %s" % e, file=sys.stderr)
        return 2

    failures.sort(key=lambda f: f[0].sid)
    for sc, d, p, c in failures[:args.max_report]:
        try:
            print(report(runner, sc, d, p, c, not args.no_minimise, args.min_budget))
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print("corr_diff: %s" % e, file=sys.stderr)
    if len(failures) > args.max_report:
        print("... and %d more: %s" % (len(failures) - args.max_report,
                                       " ".join(str(f[0].sid) for f in failures[args.max_report:])))
    print("corr_diff: seed %d, %d scenarios (%s clock), %d output lines compared (%d generated), "
          "%d scenarios differ"
          % (args.seed, len(scenarios), "frozen" if args.libfaketime else "real", nlines, ngen,
             len(failures)))
    if not failures and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    elif failures:
        print("corr_diff: generated files kept in %s" % workdir)
        print("corr_diff: to rerun one: corr_diff.py --seed %d --scenarios %d --rules %d --lines %d "
              "--only N%s" % (args.seed, args.scenarios, args.rules, args.lines,
                              " --libfaketime=" if not args.libfaketime else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
