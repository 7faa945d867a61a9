#!/usr/bin/env python3
"""bench/workers.py: corrald with 1 and N worker threads, beside syslog-ng.

The daemon figure of doc/parallel.md.  Each daemon gets the same rules and the same
corpus, sent by bench/loadgen over C TCP connections (octet counting, the
lines verbatim); the time measured runs from the first byte sent to the
moment the daemon has received and processed every message (corrald:
corral_messages_received_total reaches the count and corral_engine_queued is
0; syslog-ng: its source's processed counter reaches the count, read with
syslog-ng-ctl).  Runs are interleaved.  corrald writes its generated
messages to a file, syslog-ng has no destination (db-parser's own work
only).  syslog-ng 3.38 runs its network source with one thread per
connection (`threaded(yes)` is its default), and its db-parser on those
threads.

    python3 bench/workers.py --corpus FILE --rules FILE [--merged FILE] \\
        [--workers 1,2] [--privsep] [--conns 4] [--count N] [--runs 3] [--out REPORT.md]

--privsep also runs each worker count privilege-separated (`<daemon
user="nobody" privsep="yes"/>`, as root): the engine-executor split's cost.

--rules is one patterndb file both daemons load (merge a directory with
`pdbtool merge`, as bench/parallel.py does).  See bench/README.md.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

CORRALD_CONF = """<corrald>
{daemon}  <rules path="{rules}"/>
  <engine workers="{workers}"/>
  <control socket="{ctl}"/>
  <inputs><tcp listen="127.0.0.1:{port}" name="tcp"/></inputs>
  <outputs><file path="{out}" format="json" select="generated"/></outputs>
</corrald>
"""

SYSLOG_NG_CONF = """@version: 3.38
options {{ stats-freq(0); keep-hostname(yes); }};
source s_net {{ network(ip(127.0.0.1) port({port}) transport("tcp")
                        max-connections(64) log-iw-size(100000)); }};
parser p_db {{ db-parser(file("{rules}")); }};
log {{ source(s_net); parser(p_db); }};
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    """CPU time of pid and its children (privsep: the engine process is the daemon's child)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            total += sum(cpu_seconds(int(c)) for c in f.read().split())
    except OSError:
        pass
    return total


def wait_for(pred, timeout, what, poll=0.05):
    t0 = time.monotonic()
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() - t0 > timeout:
            raise SystemExit("workers.py: timed out waiting for %s" % what)
        time.sleep(poll)


class Corrald:
    def __init__(self, a, workers, privsep=False):
        self.a, self.workers, self.privsep = a, workers, privsep
        self.name = "corrald, %d worker%s%s" % (workers, "s" if workers > 1 else "",
                                                ", privsep" if privsep else "")

    def start(self, d):
        self.ctl = os.path.join(d, "ctl.sock")
        self.port = free_port()
        conf = os.path.join(d, "corrald.conf")
        with open(conf, "w") as f:
            # privsep: two processes, the engine as nobody under seccomp (needs root)
            daemon = '  <daemon user="nobody" privsep="yes"/>\n' if self.privsep else ""
            f.write(CORRALD_CONF.format(daemon=daemon, rules=self.a.rules, workers=self.workers,
                                        ctl=self.ctl,
                                        port=self.port, out=os.path.join(d, "generated.json")))
        self.p = subprocess.Popen([self.a.corrald, "-F", "-f", conf],
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "corrald.log"), "w"))
        wait_for(lambda: self.metrics() is not None, 120, "corrald to start")

    def metrics(self):
        r = subprocess.run([self.a.corral, "ctl", "-s", self.ctl, "stats"], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        m = {}
        for line in r.stdout.splitlines():
            if line and not line.startswith("#") and "{" not in line:
                k, _, v = line.partition(" ")
                m[k] = float(v)
        return m

    def done(self, n):
        m = self.metrics() or {}
        return (m.get("corral_messages_received_total", 0) >= n and
                m.get("corral_engine_queued", 0) == 0)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=120)


class SyslogNg:
    name = "syslog-ng 3.38"

    def __init__(self, a):
        self.a = a

    def start(self, d):
        self.d = d
        self.port = free_port()
        conf = os.path.join(d, "syslog-ng.conf")
        with open(conf, "w") as f:
            f.write(SYSLOG_NG_CONF.format(port=self.port, rules=self.a.merged or self.a.rules))
        self.ctl = os.path.join(d, "syslog-ng.ctl")
        self.p = subprocess.Popen([self.a.syslog_ng, "-F", "--no-caps", "-f", conf,
                                   "--persist-file", os.path.join(d, "syslog-ng.persist"),
                                   "--pidfile", os.path.join(d, "syslog-ng.pid"),
                                   "--control", self.ctl],
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "syslog-ng.log"), "w"))
        wait_for(lambda: self.processed() is not None, 120, "syslog-ng to start")

    def processed(self):
        r = subprocess.run([self.a.syslog_ng_ctl, "stats", "-c", self.ctl], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        for line in r.stdout.splitlines():
            # src.network;s_net#0;tcp,127.0.0.1;a;processed;N
            if line.startswith("source;s_net;") and ";processed;" in line:
                return int(line.rsplit(";", 1)[1])
        return None if "s_net" not in r.stdout else 0

    def done(self, n):
        return (self.processed() or 0) >= n

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=120)


def run_one(a, daemon):
    with tempfile.TemporaryDirectory(prefix="corral-workers-") as d:
        os.chmod(d, 0o755)  # privsep: the engine process (nobody) writes there too
        daemon.start(d)
        try:
            cpu0 = cpu_seconds(daemon.p.pid)
            sent = subprocess.run([a.loadgen, "-N", "-c", str(a.conns), "-n", str(a.count), "-p", str(daemon.port),
                                   "-f", a.corpus], capture_output=True, text=True)
            if sent.returncode != 0:
                raise SystemExit("loadgen failed: " + sent.stderr)
            m = re.search(r'"messages":\s*(\d+)', sent.stdout)
            n = int(m.group(1)) if m else a.count
            # loadgen reads and frames the corpus (about a second for 100 MB)
            # before it connects: the time runs from its first byte, on the
            # clock Python's monotonic() reads (CLOCK_MONOTONIC on Linux)
            t0 = float(re.search(r'"started":\s*([0-9.]+)', sent.stdout).group(1))
            wait_for(lambda: daemon.done(n), 600, "%s to process %d messages" % (daemon.name, n), poll=0.01)
            wall, cpu = time.monotonic() - t0, cpu_seconds(daemon.p.pid) - cpu0
        finally:
            daemon.stop()
    return n, wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--merged", help="the rules for syslog-ng, if not --rules")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--count", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--corrald", default=os.path.join(TOP, "build", "agent", "corrald"))
    ap.add_argument("--corral", default=os.path.join(TOP, "build", "tools", "corral"))
    ap.add_argument("--loadgen", default=os.path.join(TOP, "build", "bench", "loadgen"))
    ap.add_argument("--syslog-ng", dest="syslog_ng", default="/usr/sbin/syslog-ng")
    ap.add_argument("--syslog-ng-ctl", dest="syslog_ng_ctl", default="/usr/sbin/syslog-ng-ctl")
    ap.add_argument("--privsep", action="store_true",
                    help="each worker count also with <daemon privsep=\"yes\"> (run as root)")
    ap.add_argument("--out")
    a = ap.parse_args()
    daemons = [Corrald(a, int(w)) for w in a.workers.split(",")]
    if a.privsep:
        daemons += [Corrald(a, int(w), privsep=True) for w in a.workers.split(",")]
    daemons += [SyslogNg(a)]
    res = {d.name: [] for d in daemons}
    for i in range(a.runs):
        for d in daemons:
            r = run_one(a, d)
            res[d.name].append(r)
            print("run %d: %s: %d messages in %.2f s, %.2f CPU s" % (i + 1, d.name, *r), file=sys.stderr, flush=True)
    load = os.getloadavg()
    rep = []
    w = rep.append
    w("# corrald with 1 and N workers, beside syslog-ng (%s)" % time.strftime("%Y-%m-%d %H:%M"))
    w("")
    w("Produced by `bench/workers.py` (see bench/README.md): %d messages of `%s` sent by bench/loadgen "
      "over %d TCP connections (newline framing); rules `%s`; %d interleaved runs, **best** / median, from the first "
      "byte sent to the last message processed. Machine: %s, %d CPUs; load average after the runs: "
      "%.2f %.2f %.2f." % (a.count, os.path.basename(a.corpus), a.conns, a.rules, a.runs,
                            benchlib.cpu_model(), os.cpu_count(), *load))
    w("")
    w("| daemon | msg/s | wall s | CPU s |")
    w("|---|---:|---:|---:|")

    def best(name, k, f=min):
        return f(r[k] for r in res[name])

    for d in daemons:
        rates = [r[0] / r[1] for r in res[d.name]]
        w("| %s | **{:,.0f}** / {:,.0f} | %.2f / %.2f | %.2f / %.2f |".format(max(rates), benchlib.med(rates)) % (
            d.name, best(d.name, 1), benchlib.med([r[1] for r in res[d.name]]),
            best(d.name, 2), benchlib.med([r[2] for r in res[d.name]])))
    w("")
    names = [d.name for d in daemons]
    for d in daemons[1:-1]:
        if getattr(d, "privsep", False):
            continue
        w("- %s against %s: **%.2fx** (best runs)" % (d.name, names[0], best(names[0], 1) / best(d.name, 1)))
    for d in daemons:
        if getattr(d, "privsep", False):
            plain = "corrald, %d worker%s" % (d.workers, "s" if d.workers > 1 else "")
            w("- %s against %s: **%.2fx** (best runs)" % (d.name, plain, best(plain, 1) / best(d.name, 1)))
    for d in daemons[:-1]:
        w("- %s against syslog-ng: **%.2fx** (best runs)" % (d.name, best(names[-1], 1) / best(d.name, 1)))
    text = "\n".join(rep) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
