#!/usr/bin/env python3
"""Runs the measurements of bench/daemon.sh and writes its report.

    daemon.py --scratch DIR --corrald BIN --corral BIN --schema XSD
              --syslog-ng BIN --syslog-ng-ctl BIN --loggen BIN
              --rules FILE --corpus FILE --out REPORT.md
              [--runs 3] [--window 10] [--udp-seconds 8] [--udp-settle 3]
              [--conns 1,4] [--context-variant 100]
              [--cloadgen BIN [--workers 1,2]]

corrald and syslog-ng (with db-parser() and the same merged rule file) are
started here, one at a time, pinned to one CPU, listening on a free loopback
port for TCP and UDP; loggen, pinned to the other CPU, sends them the corpus;
their own counters (`corral stats --raw`, `syslog-ng-ctl stats`) say how many
messages they received.  CPU time comes from /proc/PID/stat (all threads),
peak RSS from VmHWM in /proc/PID/status.  Every process started here is
stopped here, by its pid.  With --cloadgen (bench/loadgen, built by make) the
TCP throughput is measured again with it as the sender, which is not the
bottleneck (loggen is): corrald beside syslog-ng, corrald with each worker
count of --workers (`<engine workers="N"/>`, pinned to N CPUs; skipped with a
note while corrald rejects the element), and loadgen's own ceiling into its
--sink.  With --tls-cert/--tls-key (a certificate for 127.0.0.1 and its key)
the daemons also get TLS inputs: corrald a `<tls>` input, syslog-ng a
`syslog(transport("tls"))` source (RFC 5425, octet counting) and a
`network(transport("tls"))` one (lines), and `loadgen -T` measures them
beside plain TCP, with loadgen's own TLS ceiling into `loadgen --sink -T`;
--tls-only measures only that (bench/daemon.sh -t).  See bench/README.md for
what the figures mean.
"""
import argparse
import collections
import datetime
import json
import os
import pickle
import platform
import re
import signal
import socket
import subprocess
import sys
import time

from benchlib import count_lines, cpu_model, med, mem_gb, yes

HZ = os.sysconf("SC_CLK_TCK")
A = None  # the parsed arguments
STARTED = {}  # pid -> Popen of every process started here and not yet reaped


def started(p):
    STARTED[p.pid] = p
    return p


def reaped(p):
    STARTED.pop(p.pid, None)


def stop_all():
    """On the way out, however it goes: SIGTERM, then SIGKILL, to each process
    this script started that is still there, by its pid."""
    for pid, p in list(STARTED.items()):
        try:
            if p.poll() is None:
                os.kill(pid, signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.kill(pid, signal.SIGKILL)
                    p.wait()
        except (ProcessLookupError, ChildProcessError):
            pass
        reaped(p)

CORRALD_CONF = """<?xml version="1.0"?>
<!-- corral bench/daemon.sh -->
<corrald>
  <rules path="{rules}"/>
  <log level="info" to="stderr"/>
  <control socket="{ctl}"/>
{limits}{engine}  <inputs>
    <tcp name="tcp" listen="127.0.0.1:{port}"/>
    <udp name="udp" listen="127.0.0.1:{port}"/>
{tls_inputs}  </inputs>
  <outputs>
    <file path="{out}" format="json" select="{select}"/>
  </outputs>
</corrald>
"""

SYSLOG_NG_CONF = """@version: 3.38
# corral bench/daemon.sh
options {{ stats-freq(0); keep-hostname(yes); threaded(yes); }};
source s_tcp {{ network(ip("127.0.0.1") port({port}) transport("tcp")
                         max-connections(100) log-iw-size(100000)); }};
source s_udp {{ network(ip("127.0.0.1") port({port}) transport("udp") so-rcvbuf(8388608)); }};
{tls_sources}parser p_db {{ db-parser(file("{rules}")); }};
destination d_gen {{ file("{out}" template("${{corral.event}}|${{MESSAGE}}\\n")); }};
{body}
"""
SNG_BODY = """filter f_gen { tags("corral.correlated"); };
log { source(s_tcp); source(s_udp); parser(p_db); filter(f_gen); destination(d_gen); };"""
SNG_CHECK_BODY = """destination d_all {{ file("{all}" template("${{.classifier.class}}|${{.classifier.rule_id}}\\n")); }};
log {{ source(s_tcp); source(s_udp); parser(p_db);
      if (tags("corral.correlated")) {{ destination(d_gen); }} else {{ destination(d_all); }}; }};"""

# TLS (--tls-cert): corrald's <tls> input takes both framings (framing="auto");
# syslog-ng needs a source for each: syslog() is RFC 5425 (octet counting),
# network() lines.  Neither asks for a client certificate that must verify.
CORRALD_TLS = """    <tls name="tls" listen="127.0.0.1:{port}" cert="{cert}" key="{key}"/>
"""
SNG_TLS = """source s_tls {{ syslog(ip("127.0.0.1") port({port}) transport("tls")
                         max-connections(100) log-iw-size(100000)
                         tls(cert-file("{cert}") key-file("{key}") peer-verify(optional-untrusted))); }};
source s_tlsnet {{ network(ip("127.0.0.1") port({lport}) transport("tls")
                         max-connections(100) log-iw-size(100000)
                         tls(cert-file("{cert}") key-file("{key}") peer-verify(optional-untrusted))); }};
"""
# what a TLS-mode run measures: (proto, loadgen's options, what it is)
TLS_ROWS = [("tcp", ["-N"], "TCP, lines"),
            ("tls", ["-T"], "TLS, RFC 5425 octet counting"),
            ("tls-lines", ["-T", "-N"], "TLS, lines")]

TIME_RE = re.compile(r"[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d")
LOGGEN_RE = re.compile(r"average rate = ([0-9.]+) msg/sec, count=([0-9]+), time=([0-9.]+)")
TCP_FLOOD = 10000000  # loggen -r for "as fast as it goes"


def pin(cpu):
    cpus = set(cpu) if isinstance(cpu, (set, list, tuple)) else {cpu}
    return lambda: os.sched_setaffinity(0, cpus)


def tool(argv, timeout=30):
    """A short command pinned to the load CPU; its stdout."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       preexec_fn=pin(A.load_cpu), timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), p.returncode,
                                                p.stderr.decode(errors="replace").strip()))
    return p.stdout.decode(errors="replace")


def free_port():
    """A loopback port free for both TCP and UDP now."""
    for _ in range(200):
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
            u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            t.close()
            u.close()
    raise RuntimeError("no free port")


def proc_cpu(pid):
    """User + system seconds of the process, all its threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def proc_hwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def cpu_times():
    """{cpu index: (busy, steal, total)} in ticks, from /proc/stat."""
    res = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+) (.*)", line)
            if m:
                v = [int(x) for x in m.group(2).split()]
                idle = v[3] + v[4]
                steal = v[7] if len(v) > 7 else 0
                total = sum(v[:8])
                res[int(m.group(1))] = (total - idle - steal, steal, total)
    return res


def udp_socket(port):
    """(receive queue bytes, drops) of the UDP socket bound to 127.0.0.1:port."""
    key = "0100007F:%04X" % port
    with open("/proc/net/udp") as f:
        for line in f:
            p = line.split()
            if len(p) > 12 and p[1] == key:
                return int(p[4].split(":")[1], 16), int(p[-1])
    return None, None


def udp_rcvbuf(port):
    """The receive buffer the kernel gave the socket (ss -m: rb), bytes."""
    try:
        out = tool(["ss", "-Hulnm", "sport = :%d" % port])
    except Exception:
        return None
    m = re.search(r"rb(\d+)", out)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------
# the daemons


class Daemon:
    kind = "?"

    def __init__(self, tag, check=False):
        self.tag, self.check = tag, check
        self.dir = os.path.join(A.scratch, "run")
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        self.port = None
        self.tls_port = self.tls_lines_port = None
        self.cpus = {A.cpu}

    def path(self, name):
        return os.path.join(self.dir, "%s-%s" % (self.kind, name))

    def start(self):
        self.port = free_port()
        if A.tls_cert:
            self.tls_port = free_port()
            # corrald's one <tls> input takes both framings; syslog-ng needs two sources
            self.tls_lines_port = free_port() if self.kind == "syslog-ng" else self.tls_port
        argv = self.prepare()
        self.log = open(self.path("stderr.log"), "ab")
        self.log.write(("\n=== %s %s port %d\n" % (datetime.datetime.now().isoformat(timespec="seconds"),
                                                   self.tag, self.port)).encode())
        self.log.flush()
        self.proc = started(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                             stderr=self.log, preexec_fn=pin(self.cpus)))
        self.pid = self.proc.pid
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited %d at start-up; see %s" % (
                    self.kind, self.proc.returncode, self.path("stderr.log")))
            try:
                self.counters()
                if self.listening():
                    break
            except Exception:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("%s did not come up; see %s" % (self.kind, self.path("stderr.log")))
            time.sleep(0.05)
        return self

    def listening(self):
        q, _ = udp_socket(self.port)
        if q is None:
            return False
        with open("/proc/net/tcp") as f:
            ls = {l.split()[1] for l in f.readlines()[1:] if l.split()[3] == "0A"}
        return all("0100007F:%04X" % p in ls for p in (self.port, self.tls_port,
                                                       self.tls_lines_port) if p)

    def port_of(self, proto):
        return {"tcp": self.port, "tls": self.tls_port, "tls-lines": self.tls_lines_port}[proto]

    def stop(self):
        """SIGTERM to our daemon, by pid; SIGKILL after 15 s.  Returns a note when
        it did not end the ordinary way."""
        note = None
        if self.proc.poll() is not None:
            note = "%s (%s) had exited by itself with status %d" % (self.kind, self.tag,
                                                                    self.proc.returncode)
        else:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait()
                note = "%s (%s) did not stop within 15 s of SIGTERM: killed" % (self.kind, self.tag)
            if note is None and self.proc.returncode not in (0, -signal.SIGTERM):
                note = "%s (%s) exited with status %d on SIGTERM" % (self.kind, self.tag,
                                                                     self.proc.returncode)
        reaped(self.proc)
        self.log.close()
        return note

    def sample(self):
        """(time, CPU seconds, counters), the time the middle of the query."""
        c = proc_cpu(self.pid)
        t0 = time.monotonic()
        k = self.counters()
        t1 = time.monotonic()
        return (t0 + t1) / 2, c, k


class Corrald(Daemon):
    kind = "corrald"

    def __init__(self, tag, check=False, max_context_messages=None, workers=1):
        Daemon.__init__(self, tag, check)
        self.mcm = max_context_messages
        # N workers: <engine workers="N"/>, the daemon pinned to N CPUs
        self.workers = workers
        if workers > 1:
            self.cpus = set(range(A.cpu, A.cpu + workers)) & set(range(os.cpu_count()))

    def prepare(self):
        self.ctl = self.path("ctl.sock")
        self.out = self.path(self.tag + ".json" if self.check else "generated.json")
        for f in (self.ctl, self.out):
            if os.path.exists(f):
                os.unlink(f)
        conf = self.path("conf.xml")
        limits = ('  <limits max-context-messages="%d"/>\n' % self.mcm) if self.mcm else ""
        with open(conf, "w") as f:
            f.write(CORRALD_CONF.format(rules=A.rules, ctl=self.ctl, port=self.port, out=self.out,
                                        select="all" if self.check else "generated",
                                        limits=limits,
                                        tls_inputs=CORRALD_TLS.format(
                                            port=self.tls_port, cert=A.tls_cert, key=A.tls_key)
                                        if A.tls_cert else "",
                                        # always said: corrald's default is one per core
                                        engine='  <engine workers="%d"/>\n' % self.workers))
        return [A.corrald, "-F", "-f", conf, "--schema", A.schema]

    def counters(self):
        k = {}
        for line in tool([A.corral, "stats", "-s", self.ctl, "--raw"], timeout=30).splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, val = line.rsplit(" ", 1)
            k[name] = float(val)
        def s(prefix):
            return sum(v for n, v in k.items() if n.startswith(prefix))
        return {
            "tcp": k.get('corral_input_messages_total{input="tcp"}', 0),
            "udp": k.get('corral_input_messages_total{input="udp"}', 0),
            "tls": k.get('corral_input_messages_total{input="tls"}', 0),
            "tls-lines": k.get('corral_input_messages_total{input="tls"}', 0),
            "received": k.get("corral_messages_received_total", 0),
            "parsed": k.get("corral_messages_parsed_total", 0),
            "matched": k.get("corral_messages_matched_total", 0),
            "unknown": k.get("corral_messages_unknown_total", 0),
            "generated": k.get("corral_messages_generated_total", 0),
            "written": s("corral_output_written_total"),
            "out_dropped": s("corral_output_dropped_total"),
            "context_full": k.get('corral_dropped_total{reason="context_full"}', 0),
            "rate_limit": k.get('corral_dropped_total{reason="rate_limit"}', 0),
            "context_bytes": k.get("corral_context_bytes", 0),
            "contexts": k.get("corral_contexts_open", 0),
            "input_errors": s("corral_input_errors_total"),
            "truncated": s("corral_input_truncated_total"),
        }


class SyslogNg(Daemon):
    kind = "syslog-ng"

    def prepare(self):
        self.ctl = self.path("ctl")
        self.out = self.path(self.tag + "-generated.txt" if self.check else "generated.txt")
        self.all = self.path(self.tag + "-classes.txt")
        for f in (self.path("persist"), self.path("pid"), self.ctl, self.out, self.all):
            if os.path.exists(f):
                os.unlink(f)
        body = SNG_CHECK_BODY.format(all=self.all) if self.check else SNG_BODY
        tls = ""
        if A.tls_cert:
            tls = SNG_TLS.format(port=self.tls_port, lport=self.tls_lines_port, cert=A.tls_cert,
                                 key=A.tls_key)
            body = body.replace("source(s_tcp); source(s_udp);",
                                "source(s_tcp); source(s_udp); source(s_tls); source(s_tlsnet);")
        conf = self.path("conf")
        with open(conf, "w") as f:
            f.write(SYSLOG_NG_CONF.format(port=self.port, rules=A.rules, out=self.out, body=body,
                                          tls_sources=tls))
        return [A.syslog_ng, "-F", "--no-caps", "-f", conf, "-R", self.path("persist"),
                "-p", self.path("pid"), "-c", self.ctl]

    def counters(self):
        k = {}
        for line in tool([A.syslog_ng_ctl, "stats", "-c", self.ctl], timeout=10).splitlines()[1:]:
            p = line.split(";")
            if len(p) == 6:
                k[tuple(p[:5])] = float(p[5])
        return {
            "tcp": k.get(("source", "s_tcp", "", "a", "processed"), 0),
            "udp": k.get(("source", "s_udp", "", "a", "processed"), 0),
            "tls": k.get(("source", "s_tls", "", "a", "processed"), 0),
            "tls-lines": k.get(("source", "s_tlsnet", "", "a", "processed"), 0),
            "received": k.get(("center", "", "received", "a", "processed"), 0),
            "written": k.get(("destination", "d_gen", "", "a", "processed"), 0),
            "out_dropped": sum(v for kk, v in k.items() if kk[0].startswith("dst.") and kk[4] == "dropped"),
        }


DAEMONS = {"corrald": Corrald, "syslog-ng": SyslogNg}


# ---------------------------------------------------------------------------
# loggen


def loggen(args, port, secs):
    """Starts loggen pinned to the load CPU; returns the Popen (output in a file)."""
    path = os.path.join(A.scratch, "run", "loggen.out")
    f = open(path, "wb")
    secs = max(1, int(round(secs)))  # loggen takes whole seconds
    argv = [A.loggen, "--inet"] + args + ["-I", str(secs), "127.0.0.1", str(port)]
    p = started(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                 preexec_fn=pin(A.load_cpu)))
    p.outfile, p.outpath, p.argv, p.secs = f, path, argv, secs
    return p


def loggen_wait(p):
    """Waits for loggen; (sent, seconds, its CPU seconds, output)."""
    deadline = time.monotonic() + p.secs + 60
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.kill(p.pid, signal.SIGKILL)
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    reaped(p)
    p.outfile.close()
    with open(p.outpath, errors="replace") as f:
        out = f.read()
    m = LOGGEN_RE.findall(out)
    if not m:
        raise RuntimeError("loggen (%s) printed no summary:\n%s" % (" ".join(p.argv), out[-2000:]))
    rate, count, secs = m[-1]
    return int(count), float(secs), ru.ru_utime + ru.ru_stime, out


def cloadgen(args, port, secs, cpus=None):
    """Starts bench/loadgen pinned to the load CPU(s); the Popen (its JSON line
    on stdout, its text on stderr, both in files)."""
    path = os.path.join(A.scratch, "run", "loadgen.out")
    f = open(path, "wb")
    e = open(path + ".err", "wb")
    argv = [A.cloadgen] + args + ["-d", "%g" % secs, "-H", "127.0.0.1", "-p", str(port),
                                  "-f", A.cloadgen_corpus or A.corpus]
    p = started(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=e,
                                 preexec_fn=pin(cpus if cpus is not None else A.load_cpu)))
    p.outfile, p.errfile, p.outpath, p.argv, p.secs = f, e, path, argv, secs
    return p


def cloadgen_wait(p):
    """Waits for loadgen; (sent, seconds, its CPU seconds, its report as a dict)."""
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    reaped(p)
    p.outfile.close()
    p.errfile.close()
    with open(p.outpath, errors="replace") as f:
        lines = [l for l in f.read().splitlines() if l.startswith("{")]
    if not lines:
        with open(p.outpath + ".err", errors="replace") as f:
            raise RuntimeError("loadgen (%s) printed no report:\n%s" % (" ".join(p.argv),
                                                                       f.read()[-2000:]))
    r = json.loads(lines[-1])
    return r["messages"], r["elapsed"], ru.ru_utime + ru.ru_stime, r


def drain(d, key, sent, settle=0.6, limit=60):
    """Waits until the daemon's counter key reaches sent, or stops moving (and,
    for UDP, its socket's receive queue is empty).  The final counters."""
    deadline = time.monotonic() + limit
    last, since = None, time.monotonic()
    while True:
        k = d.counters()
        q = udp_socket(d.port)[0] if key == "udp" else 0
        if k[key] >= sent and not q:
            return k
        if k[key] != last or q:
            last, since = k[key], time.monotonic()
        elif time.monotonic() - since >= settle:
            return k
        if time.monotonic() > deadline:
            return k
        time.sleep(0.1)


# ---------------------------------------------------------------------------
# measurements


class Bench:
    def __init__(self):
        self.runs = []  # every measurement, for the raw table
        self.notes = []  # anything odd
        self.loads = []

    def note(self, s):
        if s and s not in self.notes:
            self.notes.append(s)
            print("  NOTE: " + s, flush=True)

    def load(self, what):
        self.loads.append((what, " ".join("%.2f" % x for x in os.getloadavg())))

    # -- classification and correlation check --------------------------------

    def check(self):
        """Sends the corpus once, over TCP then over UDP (at a rate both keep up
        with), to each daemon writing every message's class and rule id and every
        generated message; compares them."""
        self.check_res = {}
        n = count_lines(A.corpus)
        for proto in ("tcp", "udp"):
            for kind, cls in DAEMONS.items():
                d = cls("check-" + proto, check=True).start()
                p = loggen(["--stream" if proto == "tcp" else "--dgram", "-R", A.corpus,
                            "-r", "5000"], d.port, 30)
                sent, secs, _, _ = loggen_wait(p)
                k = drain(d, proto, sent, settle=1.0)
                self.note(d.stop())
                cls_lines, gen = read_check(d)
                self.check_res[proto, kind] = {"sent": sent, "received": k[proto], "classes": cls_lines,
                                               "generated": gen, "counters": k}
                print("check %s %s: sent %d, received %d, %d classified, %d generated" % (
                    proto, kind, sent, k[proto],
                    sum(1 for c in cls_lines if not c.startswith("unknown|")), len(gen)), flush=True)
        self.check_n = n

    # -- TCP -----------------------------------------------------------------

    def tcp_run(self, kind, conns, variant=None, label=None, sender="loggen", workers=1,
                proto="tcp", largs=None):
        """One run; proto "tls" or "tls-lines" (loadgen only, largs its
        options): into the daemon's TLS input of that framing."""
        label = label or kind
        if kind == "corrald" and (variant or workers > 1):
            d = Corrald("tcp", max_context_messages=variant, workers=workers).start()
        else:
            d = DAEMONS[kind]("tcp").start()
        secs = A.warmup + A.window + 2
        if sender == "loadgen":
            # on the CPUs the daemon does not use (all of them if it uses every one)
            free = set(range(os.cpu_count())) - d.cpus or set(range(os.cpu_count()))
            # newline framing: syslog-ng's network() source expects it, as loggen sends
            p = cloadgen((largs or ["-N"]) + ["-c", str(conns)], d.port_of(proto), secs,
                         cpus=free)
        else:
            p = loggen(["--stream", "-l", "-R", A.corpus, "-r", str(TCP_FLOOD),
                        "--active-connections=%d" % conns], d.port, secs)
        time.sleep(A.warmup)
        c0 = cpu_times()
        t0, cpu0, k0 = d.sample()
        time.sleep(A.window)
        t1, cpu1, k1 = d.sample()
        c1 = cpu_times()
        alive = d.proc.poll() is None
        sent, lsecs, lcpu, lout = (cloadgen_wait if sender == "loadgen" else loggen_wait)(p)
        k = drain(d, proto, sent) if d.proc.poll() is None else k1
        hwm = proc_hwm_kb(d.pid) if d.proc.poll() is None else 0
        self.note(d.stop())
        if not alive:
            self.note("%s exited during a TCP run (%d connections)" % (label, conns))
        dt = t1 - t0
        r = {
            "test": "tcp", "daemon": label, "conns": conns, "sender": sender,
            "workers": workers, "cpus": sorted(d.cpus), "proto": proto,
            "rate": (k1[proto] - k0[proto]) / dt, "cpu": (cpu1 - cpu0) / dt,
            "hwm_mb": hwm / 1024.0, "sent": sent, "received": k[proto],
            "loggen_rate": sent / lsecs, "loggen_cpu": lcpu / lsecs,
            "cpu0_other": max(0.0, (c1[A.cpu][0] - c0[A.cpu][0]) / HZ / dt - (cpu1 - cpu0) / dt),
            "cpu1_busy": (c1[A.load_cpu][0] - c0[A.load_cpu][0]) / HZ / dt,
            "steal": (c1[A.cpu][1] - c0[A.cpu][1]) / HZ / dt,
            "counters": k,
        }
        if proto != "tcp" and sender == "loadgen":
            r["tls"] = "%s %s" % (lout.get("tls_version", "?"), lout.get("cipher", "?"))
        if r["received"] != sent:
            self.note("%s %s, %d connection(s): %s sent %d messages, the daemon counted %d "
                      "(%+d) after draining" % (proto.upper(), label, conns, sender, sent,
                                                r["received"], r["received"] - sent))
        if kind == "corrald":
            k = r["counters"]
            if not (k["received"] == k[proto] == k["parsed"] == k["matched"] + k["unknown"]):
                self.note("corrald counters disagree after a %s run: received %d, %s input %d, "
                          "parsed %d, matched %d + unknown %d" % (
                              proto, k["received"], proto, k[proto], k["parsed"], k["matched"],
                              k["unknown"]))
        print("  %-9s %-28s conns %d: %9.0f msg/s  cpu %5.1f%%  rss %7.1f MB  (%s %.0f msg/s, "
              "cpu %.0f%%; other load on cpu%d %.0f%%)" % (
                  proto, label, conns, r["rate"], 100 * r["cpu"], r["hwm_mb"], sender,
                  r["loggen_rate"],
                  100 * r["loggen_cpu"], A.cpu, 100 * r["cpu0_other"]), flush=True)
        self.runs.append(r)
        return r

    def sink_run(self, conns):
        """loggen's own ceiling: the same loggen command into a sink that only
        reads (python, pinned where the daemons run)."""
        code = ("import socket,sys,threading\n"
                "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(64)\n"
                "print(s.getsockname()[1], flush=True)\n"
                "def h(c):\n"
                "    b=bytearray(1<<20)\n"
                "    while c.recv_into(b): pass\n"
                "while True:\n"
                "    c,_=s.accept(); threading.Thread(target=h,args=(c,),daemon=True).start()\n")
        sink = started(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                        preexec_fn=pin(A.cpu)))
        try:
            port = int(sink.stdout.readline())
            secs = A.window
            cpu0 = proc_cpu(sink.pid)
            t0 = time.monotonic()
            p = loggen(["--stream", "-l", "-R", A.corpus, "-r", str(TCP_FLOOD),
                        "--active-connections=%d" % conns], port, secs)
            sent, lsecs, lcpu, _ = loggen_wait(p)
            scpu = (proc_cpu(sink.pid) - cpu0) / (time.monotonic() - t0)
        finally:
            os.kill(sink.pid, signal.SIGTERM)
            sink.wait()
            reaped(sink)
        r = {"test": "sink", "daemon": "null sink", "conns": conns, "rate": sent / lsecs,
             "cpu": scpu, "loggen_cpu": lcpu / lsecs, "sent": sent}
        print("  sink conns %d: loggen %9.0f msg/s, loggen cpu %.0f%%, sink cpu %.0f%%" % (
            conns, r["rate"], 100 * r["loggen_cpu"], 100 * scpu), flush=True)
        self.runs.append(r)
        return r

    def lsink_run(self, conns, tls=False):
        """loadgen's own ceiling: loadgen into `loadgen --sink` (which only reads,
        and with tls decrypts: TLS 1.3, a self-signed P-256 certificate), the
        sink pinned where the daemons run."""
        t = ["-T"] if tls else []
        sink = started(subprocess.Popen([A.cloadgen, "--sink", "-p", "0"] + t,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        preexec_fn=pin(A.cpu)))
        try:
            port = int(sink.stdout.readline())
            cpu0 = proc_cpu(sink.pid)
            t0 = time.monotonic()
            p = cloadgen((t or ["-N"]) + ["-c", str(conns)], port, A.window)
            sent, lsecs, lcpu, _ = cloadgen_wait(p)
            scpu = (proc_cpu(sink.pid) - cpu0) / (time.monotonic() - t0)
        finally:
            os.kill(sink.pid, signal.SIGTERM)
            sink.wait()
            reaped(sink)
        r = {"test": "sink", "daemon": "null sink (loadgen --sink%s)" % (" -T" if tls else ""),
             "conns": conns, "rate": sent / lsecs, "cpu": scpu, "loggen_cpu": lcpu / lsecs,
             "sent": sent, "sender": "loadgen", "tls": tls}
        print("  sink%s conns %d: loadgen %9.0f msg/s, loadgen cpu %.0f%%, sink cpu %.0f%%" % (
            " TLS" if tls else "", conns, r["rate"], 100 * r["loggen_cpu"], 100 * scpu),
            flush=True)
        self.runs.append(r)
        return r

    # -- UDP -----------------------------------------------------------------

    def udp_step(self, kind, rate, tag="udp"):
        """One step: a fresh daemon, loggen at rate for udp_seconds.  Loss over
        the whole step (sent - received), and in the steady part: the socket's
        kernel drops from udp_settle seconds after the start to the end, which
        leaves out loggen's opening burst (it starts with 0.9 s worth of
        messages at once)."""
        d = DAEMONS[kind](tag).start()
        rcvbuf = udp_rcvbuf(d.port)
        _, drops0 = udp_socket(d.port)
        cpu0 = proc_cpu(d.pid)
        p = loggen(["--dgram", "-l", "-R", A.corpus, "-r", str(int(rate))], d.port, A.udp_seconds)
        time.sleep(A.udp_settle)
        _, drops_a = udp_socket(d.port)
        c_a = cpu_times()
        cpu_a, t_a = proc_cpu(d.pid), time.monotonic()
        sent, lsecs, lcpu, _ = loggen_wait(p)
        alive = d.proc.poll() is None
        _, drops_b = udp_socket(d.port)
        t_b = time.monotonic()
        cpu_b = proc_cpu(d.pid) if alive else cpu_a
        c_b = cpu_times()
        k = drain(d, "udp", sent) if alive else {"udp": 0}
        _, drops1 = udp_socket(d.port)
        self.note(d.stop())
        if not alive:
            self.note("%s exited during a UDP run at %d msg/s" % (kind, rate))
        r = {"test": "udp", "daemon": kind, "rate_asked": rate, "sent": sent,
             "received": k["udp"], "loss": sent - k["udp"], "drops": (drops1 or 0) - (drops0 or 0),
             "steady_loss": (drops_b or 0) - (drops_a or 0), "actual": sent / lsecs,
             "cpu": (cpu_b - cpu_a) / (t_b - t_a), "rcvbuf": rcvbuf,
             "cpu0_other": max(0.0, (c_b[A.cpu][0] - c_a[A.cpu][0]) / HZ / (t_b - t_a)
                               - (cpu_b - cpu_a) / (t_b - t_a)),
             "loggen_cpu": lcpu / lsecs, "tag": tag,
             "limited": sent < 0.95 * rate * A.udp_seconds}
        if r["loss"] != r["drops"]:
            self.note("UDP %s at %d msg/s: sent - received = %d, but the socket's drop counter "
                      "(/proc/net/udp) says %d" % (kind, rate, r["loss"], r["drops"]))
        print("  udp %-9s -r %7d (%7.0f sent/s): sent %8d received %8d loss %7d (kernel drops %d), "
              "steady loss %d, cpu %3.0f%% (others on cpu%d %.0f%%)" % (
                  kind, rate, r["actual"], sent, r["received"], r["loss"], r["drops"],
                  r["steady_loss"], 100 * r["cpu"], A.cpu, 100 * r["cpu0_other"]), flush=True)
        self.runs.append(r)
        return r

    def udp_search(self, kind, hints):
        """The highest lossless rate, by two criteria: no loss over the whole
        step ("total"), and no loss once loggen's opening burst is over
        ("steady").  For each: up by 25% a step until a step loses (down by a
        third while the first one does), then bisections between the highest
        lossless and the lowest lossy rate.  Every step counts for both."""
        steps = {}

        def step(rate):
            rate = int(rate)
            if rate not in steps:
                steps[rate] = self.udp_step(kind, rate)
            return steps[rate]

        def lost(r, crit):
            return (r["loss"] if crit == "total" else r["steady_loss"]) > 0

        def bounds(crit):
            bad = min((r for r in steps.values() if lost(r, crit)), key=lambda r: r["rate_asked"],
                      default=None)
            goods = [r for r in steps.values() if not lost(r, crit) and
                     (bad is None or r["rate_asked"] < bad["rate_asked"])]
            return max(goods, key=lambda r: r["rate_asked"], default=None), bad

        limited = False
        for crit in ("total", "steady"):
            good, bad = bounds(crit)
            rate = hints[crit] if good is None else int(good["rate_asked"] * 1.25)
            if bad is None:
                while rate <= A.udp_max:
                    r = step(rate)
                    if lost(r, crit):
                        break
                    if r["limited"]:
                        limited = True  # loggen's ceiling, not the daemon's
                        break
                    rate = int(rate * 1.25)
            good, bad = bounds(crit)
            rate = bad["rate_asked"] if bad else 0
            while bad and good is None and rate > 1000:
                rate = int(rate / 1.5)
                step(rate)
                good, bad = bounds(crit)
            for _ in range(A.bisect):
                good, bad = bounds(crit)
                if not (good and bad):
                    break
                mid = int((good["rate_asked"] + bad["rate_asked"]) / 2)
                if mid - good["rate_asked"] < 0.03 * good["rate_asked"]:
                    break
                step(mid)
        res = {"daemon": kind, "limited": limited}
        for crit in ("total", "steady"):
            res[crit] = bounds(crit)
        print("  => %s: highest lossless -r: %s over the whole step, %s in the steady part%s" % (
            kind, res["total"][0]["rate_asked"] if res["total"][0] else "none",
            res["steady"][0]["rate_asked"] if res["steady"][0] else "none",
            " (loggen's ceiling)" if limited else ""), flush=True)
        return res

    # -- the lot -------------------------------------------------------------

    def measure(self):
        self.when = datetime.datetime.now()
        self.load("start")
        print("classification check", flush=True)
        self.check()
        self.load("after the check")
        self.tcp = collections.defaultdict(list)
        self.sink = collections.defaultdict(list)
        self.lsink = collections.defaultdict(list)
        self.workers_rejected = {}
        for i in range(A.runs):
            print("TCP, run %d of %d" % (i + 1, A.runs), flush=True)
            for c in A.conns:
                for kind in DAEMONS:
                    self.tcp[kind, c].append(self.tcp_run(kind, c))
                self.sink[c].append(self.sink_run(c))
            if A.context_variant:
                label = "corrald mcm=%d" % A.context_variant
                self.tcp[label, A.conns[0]].append(
                    self.tcp_run("corrald", A.conns[0], variant=A.context_variant, label=label))
            if A.cloadgen:
                self.measure_loadgen()
        self.load("after TCP")
        if A.cloadgen and A.tls_cert:
            self.measure_tls()
            self.load("after TLS")
        self.udp = collections.defaultdict(list)
        hints = {k: {"total": A.udp_start, "steady": A.udp_start} for k in DAEMONS}
        for i in range(A.runs):
            print("UDP, run %d of %d" % (i + 1, A.runs), flush=True)
            for kind in ("syslog-ng", "corrald"):
                s = self.udp_search(kind, hints[kind])
                self.udp[kind].append(s)
                for crit in ("total", "steady"):
                    if s[crit][0]:
                        hints[kind][crit] = max(1000, int(s[crit][0]["rate_asked"] * 0.8))
        sng = [s["total"][0]["rate_asked"] for s in self.udp["syslog-ng"] if s["total"][0]]
        self.at_sng = []
        if sng:
            self.at_sng_rate = max(sng)
            print("UDP: corrald at syslog-ng's best lossless rate, -r %d" % self.at_sng_rate,
                  flush=True)
            for i in range(A.runs):
                self.at_sng.append(self.udp_step("corrald", self.at_sng_rate, tag="udp-at-sng"))
        sng = [s["steady"][0]["rate_asked"] for s in self.udp["syslog-ng"] if s["steady"][0]]
        self.at_sng_steady = []
        if sng:
            self.at_sng_steady_rate = max(sng)
            print("UDP: corrald at syslog-ng's best steady lossless rate, -r %d" %
                  self.at_sng_steady_rate, flush=True)
            for i in range(A.runs):
                self.at_sng_steady.append(self.udp_step("corrald", self.at_sng_steady_rate,
                                                        tag="udp-at-sng-steady"))
        self.load("end")
        self.scan_logs()

    def measure_tls(self):
        """TLS beside plain TCP, bench/loadgen the sender: both daemons for each
        row of TLS_ROWS and each connection count, one daemon after the other
        (so that a change of the machine's load falls on both alike); then
        loadgen's own ceilings, TCP and TLS."""
        self.tlsr = collections.defaultdict(list)
        self.tls_sink = collections.defaultdict(list)
        for i in range(A.runs):
            print("TLS and TCP with loadgen, run %d of %d" % (i + 1, A.runs), flush=True)
            for c in A.conns:
                for proto, largs, _ in TLS_ROWS:
                    for kind in DAEMONS:
                        label = "%s %s" % (kind, proto)
                        try:
                            self.tlsr[proto, kind, c].append(self.tcp_run(
                                kind, c, label=label, sender="loadgen", proto=proto,
                                largs=largs))
                        except (RuntimeError, subprocess.TimeoutExpired) as e:
                            stop_all()
                            self.note("%s, %d connection(s): run abandoned: %s" % (label, c, e))
                for tls in (False, True):
                    self.tls_sink[tls, c].append(self.lsink_run(c, tls=tls))

    def measure_tls_only(self):
        """bench/daemon.sh -t: only measure_tls()."""
        self.when = datetime.datetime.now()
        self.load("start")
        self.measure_tls()
        self.load("end")
        self.scan_logs()

    def measure_loadgen(self):
        """The TCP runs again with bench/loadgen as the sender, corrald with every
        worker count asked for, and loadgen's own ceiling."""
        def run(label, *args, **kw):
            try:
                r = self.tcp_run(*args, label=label, sender="loadgen", **kw)
                self.tcp[label, c].append(r)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                # e.g. a daemon that does not answer its counters under the flood:
                # a finding, not the end of the benchmark
                stop_all()
                self.note("TCP %s, %d connection(s): run abandoned: %s" % (label, c, e))
        for c in A.conns:
            for kind in DAEMONS:
                run(kind + " (loadgen)", kind, c)
            if A.context_variant:
                run("corrald mcm=%d (loadgen)" % A.context_variant, "corrald", c,
                    variant=A.context_variant)
            for w in A.workers:
                if w <= 1 or w in self.workers_rejected:
                    continue
                label = "corrald %d workers (loadgen)" % w
                try:
                    r = self.tcp_run("corrald", c, label=label, sender="loadgen", workers=w)
                    self.tcp[label, c].append(r)
                except RuntimeError as e:
                    # <engine workers="N"/> does not exist before the parallel engine
                    self.workers_rejected[w] = str(e)
                    self.note("corrald with `<engine workers=\"%d\"/>` did not start (%s): only "
                              "1 worker is reported" % (w, str(e).split(";")[0]))
            self.lsink[c].append(self.lsink_run(c))

    def scan_logs(self):
        """Warnings and errors the daemons logged."""
        self.log_lines = {}
        for kind in DAEMONS:
            path = os.path.join(A.scratch, "run", "%s-stderr.log" % kind)
            bad = []
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    for line in f:
                        if re.search(r"warn|error|crit|fatal|abort|assert", line, re.I) and \
                                "window sizing" not in line:
                            bad.append(line.rstrip())
            self.log_lines[kind] = bad

    # -- report --------------------------------------------------------------

    def report(self):
        L = []
        w = L.append
        now = getattr(self, "when", None) or datetime.datetime.now()
        w("# corrald daemon benchmark, %s" % now.strftime("%Y-%m-%d %H:%M"))
        w("")
        w("Produced by `bench/daemon.sh` (see bench/README.md).  corrald and syslog-ng 3.38 "
          "(`db-parser()`, same rules) on loopback, each pinned to CPU %d, loggen pinned to "
          "CPU %d.  %d runs of each measurement; **best** / median.  Message rates are "
          "the daemons' own counters." % (A.cpu, A.load_cpu, A.runs))
        w("")
        # TCP
        w("## TCP: sustained throughput")
        w("")
        w("loggen floods %d-s runs (`--stream -l -R CORPUS -r %d`); the rate is the daemon's "
          "received-message counter over a %g-s window after %g s of warm-up.  CPU is the "
          "daemon's user + system time over the window (100%% = its whole core)." % (
              A.warmup + A.window + 2, TCP_FLOOD, A.window, A.warmup))
        w("")
        w("| connections | corrald msg/s | syslog-ng msg/s | corrald / syslog-ng |")
        w("|---:|---:|---:|---:|")
        R = {}
        for c in A.conns:
            cr = [r["rate"] for r in self.tcp["corrald", c]]
            sr = [r["rate"] for r in self.tcp["syslog-ng", c]]
            R[c] = (max(cr) / max(sr), med(cr) / med(sr))
            w("| %d | **%s** / %s | **%s** / %s | **%.2fx** / %.2fx |" % (
                c, fr(max(cr)), fr(med(cr)), fr(max(sr)), fr(med(sr)), R[c][0], R[c][1]))
        w("")
        w("| connections | daemon | CPU of its core | msg per CPU-second | peak RSS (MB) | "
          "sender msg/s, its CPU | other load on CPU %d |" % A.cpu)
        w("|---:|---|---:|---:|---:|---:|---:|")
        P = {}
        keys = [k for k in self.tcp]
        for c in A.conns:
            for label in [k[0] for k in keys if k[1] == c and self.tcp[k]]:
                rs = self.tcp[label, c]
                per = [r["rate"] / r["cpu"] for r in rs if r["cpu"] > 0]
                P[label, c] = (max(per), med(per)) if per else (0, 0)
                w("| %d | %s | %s / %s | **%s** / %s | %.1f | %s, %.0f%% | %.0f%% |" % (
                    c, label, pc(max(r["cpu"] for r in rs)), pc(med([r["cpu"] for r in rs])),
                    fr(P[label, c][0]), fr(P[label, c][1]),
                    max(r["hwm_mb"] for r in rs), fr(med([r["loggen_rate"] for r in rs])),
                    100 * med([r["loggen_cpu"] for r in rs]),
                    100 * med([r["cpu0_other"] for r in rs])))
        w("")
        for c in A.conns:
            rs = self.sink[c]
            w("- loggen's own ceiling, %d connection(s), into a sink that only reads (python, on "
              "CPU %d): **%s** / %s msg/s (loggen's CPU %.0f%%, the sink's %.0f%%)." % (
                  c, A.cpu, fr(max(r["rate"] for r in rs)), fr(med([r["rate"] for r in rs])),
                  100 * med([r["loggen_cpu"] for r in rs]), 100 * med([r["cpu"] for r in rs])))
        sat = {}
        for c in A.conns:
            for kind in DAEMONS:
                sat[kind, c] = med([r["cpu"] for r in self.tcp[kind, c]])
        w("- A daemon well under 100%% of its core was not the bottleneck itself: it waited for "
          "loggen (one `send()` per message, and on loopback the kernel's receive path runs on "
          "the sender's CPU), or other processes of the machine took CPU %d from it (\"other "
          "load\": CPU %d's busy time minus the daemon's).  Its msg/s is then a lower bound, and "
          "msg per CPU-second estimates its capacity.  Median CPU: %s." % (
              A.cpu, A.cpu, "; ".join("%s %d conn. %s" % (k, c, pc(v)) for (k, c), v in sat.items())))
        if A.context_variant:
            label = "corrald mcm=%d" % A.context_variant
            v = P.get((label, A.conns[0]))
            ratio = ""
            if v and P["syslog-ng", A.conns[0]][0]:
                ratio = ("; by msg per CPU-second it is **%.2fx** / %.2fx syslog-ng's (%d "
                         "connection)" % (v[0] / P["syslog-ng", A.conns[0]][0],
                                          v[1] / P["syslog-ng", A.conns[0]][1], A.conns[0]))
            w("- `%s`: corrald with `<limits max-context-messages=\"%d\"/>` instead of the "
              "default 10,000.  Under this replay a few brute-force contexts are always full, so "
              "this row shows what holding 10,000 messages a context costs (before commit "
              "490f550, corrald moved all of a full context's message pointers for every "
              "message added to it)%s." % (label, A.context_variant, ratio))
        w("")
        if getattr(A, "cloadgen", None):
            self.report_loadgen(w, P)
        self.report_tls(w)
        # UDP
        w("## UDP: highest lossless rate")
        w("")
        w("Each step: a fresh daemon, loggen `--dgram -l -R CORPUS -r RATE` for %g s, then "
          "the daemon drains its socket.  **Whole step**: loss = messages loggen sent - "
          "messages the daemon counted.  loggen starts every run "
          "with a burst of 0.9 s worth of messages at its full speed (its token bucket starts "
          "nearly full), so this mostly measures how big a burst the daemon's socket buffer "
          "and its speed absorb.  **Steady**: the socket's kernel drop counter "
          "(/proc/net/udp) from %g s after the start to the end, after the burst: whether the "
          "daemon keeps up with the rate itself.  Rates are loggen's `-r` (its average over a "
          "step is about %.2f times that, the burst included).  Search: up by 25%% from %d "
          "until a step loses, down by a third while the first one does, then %d "
          "bisections; each run starts the next at 80%% of its result." % (
              A.udp_seconds, A.udp_settle, 1 + 0.9 / A.udp_seconds, A.udp_start, A.bisect))
        w("")
        w("| | whole step: max lossless -r | lowest lossy -r (lost) | steady: max lossless -r | "
          "lowest lossy -r (lost) | CPU at the steady max | receive buffer (ss rb) |")
        w("|---|---:|---|---:|---|---:|---:|")
        U = {}
        for kind in DAEMONS:
            ss = self.udp[kind]
            cells = []
            for crit in ("total", "steady"):
                goods = [s[crit][0]["rate_asked"] if s[crit][0] else 0 for s in ss]
                U[kind, crit] = (max(goods), med(goods))
                bads = ", ".join(
                    ("%s (%d)" % (fr(s[crit][1]["rate_asked"]),
                                  s[crit][1]["loss" if crit == "total" else "steady_loss"]))
                    if s[crit][1] else ("none: loggen's ceiling" if s["limited"] else "none")
                    for s in ss)
                cells += ["**%s** / %s" % (fr(U[kind, crit][0]), fr(U[kind, crit][1])), bads]
            cpus = [s["steady"][0]["cpu"] for s in ss if s["steady"][0]]
            rb = [r["rcvbuf"] for r in self.runs if r.get("test") == "udp" and r["daemon"] == kind
                  and r.get("rcvbuf")]
            w("| %s | %s | %s | %s | %s | %s | %s |" % (
                kind, cells[0], cells[1], cells[2], cells[3], pc(med(cpus)) if cpus else "-",
                ("%.0f MiB" % (max(rb) / 1048576.0)) if rb else "?"))
        def ur(crit, i):
            return U["corrald", crit][i] / U["syslog-ng", crit][i] if U["syslog-ng", crit][i] else 0
        w("| corrald / syslog-ng | **%.2fx** / %.2fx | | **%.2fx** / %.2fx | | | |" % (
            ur("total", 0), ur("total", 1), ur("steady", 0), ur("steady", 1)))
        w("")
        if self.at_sng:
            w("corrald at syslog-ng's best whole-step lossless rate (`-r %d`), %d runs: %s." % (
                self.at_sng_rate, len(self.at_sng), "; ".join(
                    "sent %d, received %d, **loss %d** (steady %d), CPU %s" % (
                        r["sent"], r["received"], r["loss"], r["steady_loss"], pc(r["cpu"]))
                    for r in self.at_sng)))
            w("")
        if self.at_sng_steady:
            w("corrald at syslog-ng's best steady lossless rate (`-r %d`), %d runs: %s." % (
                self.at_sng_steady_rate, len(self.at_sng_steady), "; ".join(
                    "**steady loss %d**, whole step %d of %d, CPU %s" % (
                        r["steady_loss"], r["loss"], r["sent"], pc(r["cpu"]))
                    for r in self.at_sng_steady)))
            w("")
        w("The receive buffer is what the kernel granted (`ss -m`: rb, twice what was set, "
          "Linux's bookkeeping): corrald sets 8 MiB with SO_RCVBUFFORCE (it runs as root "
          "here), syslog-ng asks `so-rcvbuf(8388608)` with SO_RCVBUF, which "
          "net.core.rmem_max (%s bytes here, not changed by the benchmark) caps.  The "
          "whole-step figures depend on it; the steady ones much less (a full buffer holds a "
          "few seconds of a small deficit at most, so a daemon short of the rate by a few "
          "per cent may still pass a %g-s step)." % (read_sysctl("net/core/rmem_max"), A.udp_seconds))
        w("")
        # targets
        w("## Targets")
        w("")
        w("| target | best | met | median | met |")
        w("|---|---:|---|---:|---|")
        for c in A.conns:
            w("| corrald >= 2x syslog-ng over TCP, %d connection(s), msg/s | %.2fx | %s | %.2fx | %s |" % (
                c, R[c][0], yes(R[c][0] >= 2), R[c][1], yes(R[c][1] >= 2)))
        for c in A.conns:
            b = P["corrald", c][0] / P["syslog-ng", c][0]
            m = P["corrald", c][1] / P["syslog-ng", c][1]
            w("| the same by msg per CPU-second, %d connection(s) | %.2fx | %s | %.2fx | %s |" % (
                c, b, yes(b >= 2), m, yes(m >= 2)))
        if self.at_sng:
            losses = sorted(r["loss"] for r in self.at_sng)
            w("| corrald loses nothing at syslog-ng's max lossless UDP rate (`-r %d`) | loss %d | %s | "
              "loss %d | %s |" % (self.at_sng_rate, losses[0], yes(losses[0] == 0),
                                  med(losses), yes(med(losses) == 0)))
            w("| (worst of the %d runs) | loss %d | %s | | |" % (
                len(losses), losses[-1], yes(losses[-1] == 0)))
        if self.at_sng_steady:
            losses = sorted(r["steady_loss"] for r in self.at_sng_steady)
            w("| the same in the steady part, at syslog-ng's max steady lossless rate (`-r %d`) | "
              "loss %d | %s | loss %d | %s |" % (self.at_sng_steady_rate, losses[0],
                                                 yes(losses[0] == 0), med(losses),
                                                 yes(med(losses) == 0)))
        w("")
        # checks
        w("## Checks")
        w("")
        n = self.check_n
        for proto in ("tcp", "udp"):
            parts = []
            for kind in DAEMONS:
                c = self.check_res[proto, kind]
                ncls = sum(1 for x in c["classes"] if not x.startswith("unknown|") and x != "|")
                parts.append("%s received %d of %d, classified %d, generated %d" % (
                    kind, c["received"], c["sent"], ncls, len(c["generated"])))
            a, b = self.check_res[proto, "corrald"], self.check_res[proto, "syslog-ng"]
            same = a["classes"] == b["classes"]
            cdiff = diff_counts(a["classes"], b["classes"])
            w("- corpus once over %s (%d lines at 5,000 msg/s): %s; class and rule id per "
              "message %s" % (proto.upper(), n, "; ".join(parts),
                              "**the same in both**" if same else "**differ**: " + cdiff))
            ev = lambda g: [x.split("|", 1)[0] for x in g]
            edif = diff_counts(ev(a["generated"]), ev(b["generated"]))
            w("  - generated messages by `corral.event`: %s" % (
                "the same counts in both (%s)" % ", ".join(
                    "%s %d" % kv for kv in sorted(collections.Counter(ev(a["generated"])).items()))
                if not edif else "**differ**: " + edif))
            # the two daemons ran one after the other: their time stamps differ
            notime = lambda g: sorted(TIME_RE.sub("TIME", x) for x in g)
            mdif = [(x, y) for x, y in zip(notime(a["generated"]), notime(b["generated"])) if x != y]
            if mdif:
                w("  - their texts (`corral.event|MESSAGE`, time stamps masked, sorted) differ in "
                  "%d of %d, e.g. corrald `%s`, syslog-ng `%s`" % (
                      len(mdif), len(a["generated"]), mdif[0][0][:240], mdif[0][1][:240]))
            elif a["generated"]:
                w("  - their texts (`corral.event|MESSAGE`, time stamps masked): the same in both")
        tc = [r for r in self.runs if r["test"] == "tcp"]
        bad = [r for r in tc if r["received"] != r["sent"]]
        w("- TCP runs: loggen's sent count and the daemon's received count after draining "
          "%s" % ("agree in all %d runs" % len(tc) if not bad else "**disagree** in %d of %d runs (see the notes)"
                  % (len(bad), len(tc))))
        uc = [r for r in self.runs if r["test"] == "udp"]
        badu = [r for r in uc if r["loss"] != r["drops"]]
        w("- UDP steps: sent - received equals the socket's kernel drop counter "
          "(/proc/net/udp) %s" % ("in all %d steps" % len(uc) if not badu else
                                  "**except in %d of %d steps** (see the notes)" % (len(badu), len(uc))))
        for cr in ([r for r in tc if r["daemon"] == "corrald"],
                   [r for r in tc if r["daemon"].startswith("corrald mcm")]):
            if not cr:
                continue
            k = cr[-1]["counters"]
            w("- " + cr[-1]["daemon"] + ", last TCP run: %d messages, %d matched, %d unknown, %d generated, %d "
              "written to the output; %d open contexts holding %.0f MB; %d messages dropped "
              "from full contexts (`context_full`), %d generated messages held back by rate "
              "limits" % (k["received"], k["matched"], k["unknown"], k["generated"], k["written"],
                          k["contexts"], k["context_bytes"] / 1e6, k["context_full"], k["rate_limit"]))
        sr = [r for r in tc if r["daemon"] == "syslog-ng"]
        if sr:
            k = sr[-1]["counters"]
            w("- syslog-ng, last TCP run: %d messages, %d generated messages written; peak RSS "
              "%.0f MB (it keeps every message of a context: its brute-force contexts never "
              "time out under this replay, so its memory grows with the run)" % (
                  k["received"], k["written"], sr[-1]["hwm_mb"]))
        for kind in DAEMONS:
            ls = self.log_lines.get(kind, [])
            if ls:
                w("- %s logged %d warning/error lines, e.g.: `%s`" % (kind, len(ls), ls[0][:300]))
            else:
                w("- %s logged no warnings or errors" % kind)
        w("")
        if self.notes:
            w("Notes:")
            w("")
            for s in self.notes:
                w("- " + s)
            w("")
        # setup
        w("## Setup")
        w("")
        w("- corpus: %s (%d lines), replayed in a loop by loggen" % (A.corpus_desc, n))
        w("- rules: %s" % A.rules_desc)
        w("- corrald: %s; configuration: the rules, a control socket, `<tcp>` and `<udp>` inputs "
          "on one free loopback port, `<file format=\"json\" select=\"generated\">`; defaults "
          "otherwise (max-context-messages 10,000)" % A.corral_desc)
        w("- syslog-ng: `%s`, `syslog-ng -F --no-caps -f CONF -R PERSIST -p PID -c CTL`; CONF: "
          "`network()` sources, `transport(\"tcp\")` and `transport(\"udp\") so-rcvbuf(8388608)`, "
          "default flags (RFC 3164), `keep-hostname(yes)`, `db-parser(file(RULES))`, a `file()` destination for "
          "messages tagged `corral.correlated` (the generated ones); counters from "
          "`syslog-ng-ctl stats`" % A.syslog_ng_version)
        w("- loggen: %s; `-R` parses each `<38>` line as RFC 3164 and sends it with the current "
          "time stamp, newline-terminated" % A.loggen_version)
        w("- pinned (sched_setaffinity, as taskset -c): the daemon (all its threads) to CPU %d; "
          "loggen, `corral stats` and `syslog-ng-ctl` to CPU %d" % (A.cpu, A.load_cpu))
        w("- machine: %s, %d CPUs (nproc), %s, Linux %s, %.1f GB RAM" % (
            cpu_model(), os.cpu_count(), platform.machine(), platform.release(), mem_gb()))
        w("- load average: %s" % "; ".join("%s %s" % x for x in self.loads))
        w("")
        self.raw_table(w)
        text = "\n".join(L)
        with open(A.out, "w") as f:
            f.write(text)
        print()
        print(text)
        print("report written to %s" % A.out)


    def raw_table(self, w):
        """The raw runs, every measurement, as a table."""
        w("## Raw runs")
        w("")
        w("TCP rows: msg/s and CPU over the window, from the daemon's counter and /proc.  "
          "Null-sink rows: loggen's own average.  UDP rows: msg/s is loggen's average send "
          "rate over the step (opening burst included), CPU the daemon's in the steady part; "
          "loss is sent - received over the step, steady the kernel drops after the burst.  "
          "Other on CPU %d: its busy time not spent in the daemon (other processes of the "
          "machine, interrupts)." % A.cpu)
        w("")
        w("| test | daemon | conns / rate asked | msg/s | CPU | peak RSS (MB) | sent | received | "
          "loss | kernel drops | loggen CPU | other on CPU %d |" % A.cpu)
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in self.runs:
            if r["test"] == "tcp":
                w("| %s | %s | %d | %s | %s | %.1f | %d | %d | | | %s | %s |" % (
                    r.get("proto", "tcp"), r["daemon"], r["conns"], fr(r["rate"]), pc(r["cpu"]),
                    r["hwm_mb"], r["sent"], r["received"], pc(r["loggen_cpu"]),
                    pc(r["cpu0_other"])))
            elif r["test"] == "sink":
                w("| %s | %s | %d | %s | %s | | %d | | | | %s | |" % (
                    "tls" if r.get("tls") else "tcp", r["daemon"], r["conns"], fr(r["rate"]),
                    pc(r["cpu"]), r["sent"], pc(r["loggen_cpu"])))
            else:
                w("| %s | %s | %s | %s | %s | | %d | %d | %d (steady %d) | %d | %s | %s |" % (
                    r["tag"], r["daemon"], fr(r["rate_asked"]), fr(r["actual"]), pc(r["cpu"]),
                    r["sent"], r["received"], r["loss"], r["steady_loss"], r["drops"],
                    pc(r["loggen_cpu"]), pc(r["cpu0_other"])))
        w("")

    def report_tls_only(self):
        """The report of bench/daemon.sh -t."""
        L = []
        w = L.append
        now = getattr(self, "when", None) or datetime.datetime.now()
        w("# corrald TLS input benchmark, %s" % now.strftime("%Y-%m-%d %H:%M"))
        w("")
        w("Produced by `bench/daemon.sh -t` (see bench/README.md): corrald's `<tls>` input "
          "beside syslog-ng 3.38's TLS sources (`db-parser()`, the same rules), with plain TCP "
          "in the same run for reference; bench/loadgen the sender.  Each daemon pinned to "
          "CPU %d, loadgen to CPU %d.  %d run(s) of each measurement.  Message rates are the "
          "daemons' own counters." % (A.cpu, A.load_cpu, A.runs))
        if A.machine_note:
            w("")
            w("**%s**" % A.machine_note)
        w("")
        self.report_tls(w)
        tr = [r for r in self.runs if r["test"] == "tcp"]
        bad = [r for r in tr if r["received"] != r["sent"]]
        w("## Checks")
        w("")
        w("- loadgen's sent count and the daemon's received count (that input's counter) after "
          "draining %s" % ("agree in all %d runs" % len(tr) if not bad else
                           "**disagree** in %d of %d runs (see the notes)" % (len(bad), len(tr))))
        for kind in DAEMONS:
            ls = self.log_lines.get(kind, [])
            if ls:
                w("- %s logged %d warning/error lines, e.g.: `%s`" % (kind, len(ls), ls[0][:300]))
            else:
                w("- %s logged no warnings or errors" % kind)
        w("")
        if self.notes:
            w("Notes:")
            w("")
            for x in self.notes:
                w("- " + x)
            w("")
        w("## Setup")
        w("")
        w("- corpus: %s, loadgen's copy with the time of its creation as every line's stamp, "
          "replayed in a loop" % A.corpus_desc)
        w("- rules: %s" % A.rules_desc)
        w("- corrald: %s; configuration: the rules, a control socket, `<tcp>`, `<udp>` and "
          "`<tls cert=\"...\" key=\"...\"/>` inputs on free loopback ports (TLS: "
          "`framing=\"auto\"`, the default, takes both framings; `verify=\"none\"`, the "
          "default without `ca`), `<file format=\"json\" select=\"generated\">`" % A.corral_desc)
        w("- syslog-ng: `%s`, `syslog-ng -F --no-caps`; CONF: `network(transport(\"tcp\"))`, "
          "`syslog(transport(\"tls\"))` (RFC 5425) and `network(transport(\"tls\"))` "
          "(lines) sources, each `max-connections(100) log-iw-size(100000)`, TLS with "
          "`peer-verify(optional-untrusted)`; `threaded(yes)`, `keep-hostname(yes)`, "
          "`db-parser(file(RULES))`, a `file()` destination for the generated messages"
          % A.syslog_ng_version)
        w("- certificate: %s" % A.tls_desc)
        w("- pinned (sched_setaffinity): the daemon (all its threads) to CPU %d; loadgen, "
          "`corral stats` and `syslog-ng-ctl` to CPU %d" % (A.cpu, A.load_cpu))
        w("- machine: %s, %d CPUs (nproc), %s, Linux %s, %.1f GB RAM" % (
            cpu_model(), os.cpu_count(), platform.machine(), platform.release(), mem_gb()))
        w("- load average: %s" % "; ".join("%s %s" % x for x in self.loads))
        w("")
        self.raw_table(w)
        text = "\n".join(L)
        with open(A.out, "w") as f:
            f.write(text)
        print()
        print(text)
        print("report written to %s" % A.out)


def _report_tls(self, w):
    """The TLS section: corrald's <tls> input beside syslog-ng's TLS sources."""
    if not getattr(self, "tlsr", None):
        return
    many = A.runs > 1

    def best(rs, f=lambda r: r["rate"]):
        v = [f(r) for r in rs]
        return "**%s**" % fr(max(v)) + (" / %s" % fr(med(v)) if many else "")

    w("## TLS: corrald's `<tls>` input beside syslog-ng's TLS sources")
    w("")
    w("`bench/loadgen -c CONNS -d %g` sends the corpus (256-KiB writes, one thread a "
      "connection; over TLS the same writes through `SSL_write()`), pinned to CPU %d; a fresh "
      "daemon each run; the rate is the daemon's counter of that input over a %g-s window "
      "after %g s of warm-up; CPU the daemon's over the window (100%% = one core).  Rows: "
      "plain TCP with lines (`-N`) into corrald's `<tcp>` and syslog-ng's "
      "`network(transport(\"tcp\"))`, for reference; TLS with RFC 5425 octet counting "
      "(`-T`) into corrald's `<tls>` and syslog-ng's `syslog(transport(\"tls\"))`; TLS with "
      "lines (`-T -N`) into corrald's `<tls>` and syslog-ng's `network(transport(\"tls\"))`.  "
      "loadgen does not verify the daemons' certificate (no `--ca`): the handshake's cost "
      "does not matter here, each connection makes one." % (
          A.warmup + A.window + 2, A.load_cpu, A.window, A.warmup))
    w("")
    w("| connections | transport | corrald msg/s | syslog-ng msg/s | corrald / syslog-ng | "
      "CPU corrald, syslog-ng | msg per CPU-second, corrald / syslog-ng |")
    w("|---:|---|---:|---:|---:|---:|---:|")
    for c in A.conns:
        for proto, _, what in TLS_ROWS:
            a, b = self.tlsr.get((proto, "corrald", c)), self.tlsr.get((proto, "syslog-ng", c))
            if not a or not b:
                w("| %d | %s | %s | %s | - | | |" % (c, what, best(a) if a else "not measured",
                                                      best(b) if b else "not measured"))
                continue
            ra, rb = max(r["rate"] for r in a), max(r["rate"] for r in b)
            pa = max([r["rate"] / r["cpu"] for r in a if r["cpu"] > 0], default=0)
            pb = max([r["rate"] / r["cpu"] for r in b if r["cpu"] > 0], default=0)
            w("| %d | %s | %s | %s | **%.2fx** | %s, %s | %s / %s = %s |" % (
                c, what, best(a), best(b), ra / rb if rb else 0,
                pc(med([r["cpu"] for r in a])), pc(med([r["cpu"] for r in b])),
                fr(pa), fr(pb), "%.2fx" % (pa / pb) if pb else "-"))
    w("")
    def per_cpu(rs):
        return max([r["rate"] / r["cpu"] for r in rs if r["cpu"] > 0], default=0)

    for c in A.conns:
        for kind in DAEMONS:
            # the same framing (lines) both ways: only TLS differs
            t = self.tlsr.get(("tcp", kind, c))
            s5 = self.tlsr.get(("tls-lines", kind, c))
            if t and s5 and per_cpu(t):
                w("- %s, %d connection(s), lines over TLS beside lines over plain TCP: %.0f%% of "
                  "its msg per CPU-second, %.0f%% of its msg/s (a figure over 100%% says the "
                  "run's noise is larger than what TLS costs)" % (
                      kind, c, 100 * per_cpu(s5) / per_cpu(t),
                      100 * max(r["rate"] for r in s5) / max(r["rate"] for r in t)))
    ciphers = sorted({r["tls"] for r in self.runs
                      if r.get("proto", "tcp") != "tcp" and r.get("tls")})
    w("- negotiated (loadgen's report): %s" % (", ".join(ciphers) or "?"))
    for c in A.conns:
        for tls in (False, True):
            rs = self.tls_sink.get((tls, c))
            if not rs:
                continue
            top = max((max(r["rate"] for r in v) for (p, k, cc), v in self.tlsr.items()
                       if cc == c and (p != "tcp") == tls and v), default=0)
            ceil = max(r["rate"] for r in rs)
            w("- loadgen's own %s ceiling, %d connection(s), into `loadgen --sink%s` (%s, on "
              "CPU %d): **%s** msg/s (loadgen's CPU %.0f%%, the sink's %.0f%%)%s" % (
                  "TLS" if tls else "TCP", c, " -T" if tls else "",
                  "decrypts and discards, TLS 1.3, a self-signed P-256 certificate" if tls else
                  "reads and discards", A.cpu, fr(ceil), 100 * med([r["loggen_cpu"] for r in rs]),
                  100 * med([r["cpu"] for r in rs]),
                  ": %.1fx the fastest daemon's %s rate above, so loadgen is %s the bottleneck" % (
                      ceil / top, "TLS" if tls else "TCP",
                      "not" if ceil > 1.5 * top else "**perhaps**") if top else ""))
    w("")


Bench.report_tls = _report_tls


def _report_loadgen(self, w, P):
    """The section of the TCP runs driven by bench/loadgen."""
    w("## TCP with bench/loadgen: the daemons' own ceiling")
    w("")
    w("The same TCP runs with `bench/loadgen -N -c CONNS -d %g` as the sender (the corpus "
      "loaded once, framed once with newlines as loggen does, which syslog-ng's `network()` "
      "source expects, written in 256-KiB writes, one thread a connection), pinned to the CPUs the daemon does not use.  It sends lines verbatim, so "
      "its copy of the corpus has the time of its creation as every line's stamp (loggen puts "
      "the current time in each line): in both cases no context times out during a run."
      % (A.warmup + A.window + 2))
    w("")
    w("| connections | daemon | msg/s | CPU of its core(s) | msg per CPU-second | against "
      "syslog-ng (msg/s) |")
    w("|---:|---|---:|---:|---:|---:|")
    for c in A.conns:
        base = self.tcp.get(("syslog-ng (loadgen)", c))
        brate = max(r["rate"] for r in base) if base else 0
        for label in [k[0] for k in self.tcp
                      if k[1] == c and k[0].endswith("(loadgen)") and self.tcp[k]]:
            rs = self.tcp[label, c]
            best = max(r["rate"] for r in rs)
            w("| %d | %s | **%s** / %s | %s | %s | %s |" % (
                c, label, fr(best), fr(med([r["rate"] for r in rs])),
                pc(med([r["cpu"] for r in rs])), fr(P.get((label, c), (0, 0))[0]),
                "%.2fx" % (best / brate) if brate else "-"))
    w("")
    for c in A.conns:
        rs = self.lsink.get(c)
        if rs:
            w("- loadgen's own ceiling, %d connection(s), into `loadgen --sink` (reads and "
              "discards, on CPU %d): **%s** / %s msg/s (loadgen's CPU %.0f%%, the sink's %.0f%%)."
              % (c, A.cpu, fr(max(r["rate"] for r in rs)), fr(med([r["rate"] for r in rs])),
                 100 * med([r["loggen_cpu"] for r in rs]), 100 * med([r["cpu"] for r in rs])))
            top = max((max(r["rate"] for r in v) for (l, cc), v in self.tcp.items()
                       if cc == c and l.endswith("(loadgen)") and v), default=0)
            if top:
                w("  - that is **%.1fx** the fastest daemon's rate above: loadgen is %s the "
                  "bottleneck." % (max(r["rate"] for r in rs) / top,
                                   "not" if max(r["rate"] for r in rs) > 1.5 * top else
                                   "**perhaps**"))
    rej = getattr(self, "workers_rejected", {})
    asked = [n for n in getattr(A, "workers", [1]) if n > 1]
    if asked:
        for n in asked:
            if n in rej:
                w("- corrald with %d workers: **not measured**: this corrald rejects "
                  "`<engine workers=\"%d\"/>` (the parallel engine is not in it), so only 1 "
                  "worker is reported." % (n, n))
            else:
                w("- corrald with %d workers: `<engine workers=\"%d\"/>`, the daemon pinned to "
                  "%d CPUs (on a machine with no CPU left over, loadgen shares them)." % (n, n, n))
    else:
        w("- corrald with N workers: not asked for (`daemon.sh -W 1,2`).")
    w("- syslog-ng runs with its multi-threading options on: `threaded(yes)` in the global "
      "options and `max-connections(100) log-iw-size(100000)` on the TCP source (a window of "
      "1,000 messages a connection); it is pinned to the same CPU(s) as corrald with 1 worker.")
    w("")


Bench.report_loadgen = _report_loadgen


def read_check(d):
    """([class|rule_id per log message], [corral.event|MESSAGE per generated message])"""
    cls, gen = [], []
    if d.kind == "corrald":
        with open(d.out, errors="replace") as f:
            for line in f:
                o = json.loads(line)
                if "corral.correlated" in o.get("TAGS", "").split(","):
                    gen.append("%s|%s" % (o.get("corral.event", ""), o.get("MESSAGE", "")))
                else:
                    cls.append("%s|%s" % (o.get(".classifier.class", ""), o.get(".classifier.rule_id", "")))
    else:
        for path, lst in ((d.all, cls), (d.out, gen)):
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    lst.extend(l.rstrip("\n") for l in f)
    return cls, gen


def diff_counts(a, b, top=5):
    ca, cb = collections.Counter(a), collections.Counter(b)
    ks = sorted((k for k in set(ca) | set(cb) if ca[k] != cb[k]), key=lambda k: -abs(ca[k] - cb[k]))
    if not ks:
        return ""
    return "; ".join("`%s`: corrald %d, syslog-ng %d" % (k[:200], ca[k], cb[k]) for k in ks[:top]) + \
        ("; ... %d more" % (len(ks) - top) if len(ks) > top else "")






def fr(x):
    return "{:,.0f}".format(x)


def pc(x):
    return "%.0f%%" % (100 * x)




def read_sysctl(name):
    try:
        with open("/proc/sys/" + name) as f:
            return f.read().strip()
    except OSError:
        return "?"






def main():
    global A
    ap = argparse.ArgumentParser()
    for opt in ("scratch", "corrald", "corral", "schema", "syslog-ng", "syslog-ng-ctl", "loggen",
                "rules", "corpus", "out"):
        ap.add_argument("--" + opt, required=True)
    for opt in ("rules-desc", "corral-desc", "syslog-ng-version", "loggen-version"):
        ap.add_argument("--" + opt, default="")
    ap.add_argument("--corpus-desc", default="loghub OpenSSH_2k.log, CRs removed, `<38>` in front "
                    "of each line (licence notice in the scratch directory, LICENSE.loghub)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--window", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--udp-seconds", type=float, default=8)
    ap.add_argument("--udp-settle", type=float, default=None,
                    help="seconds before the steady part of a UDP step (default: min(3, half a step))")
    ap.add_argument("--udp-start", type=int, default=25000)
    ap.add_argument("--udp-max", type=int, default=2000000)
    ap.add_argument("--bisect", type=int, default=2)
    ap.add_argument("--conns", default="1,4")
    ap.add_argument("--context-variant", type=int, default=100,
                    help="also measure corrald with this max-context-messages (0: not)")
    # --report-from RESULTS.pickle [--out REPORT.md]: only write the report again, from
    # the saved results of a run kept with daemon.sh -k (scratch/run/results.pickle)
    ap.add_argument("--cloadgen", default="", help="bench/loadgen: TCP runs with it too")
    ap.add_argument("--cloadgen-corpus", default=None,
                    help="loadgen's corpus (default --corpus): it sends lines verbatim")
    ap.add_argument("--workers", default="1",
                    help="corrald worker counts for the loadgen runs (<engine workers=N/>)")
    ap.add_argument("--tls-cert", default="", help="TLS inputs with this certificate (PEM)")
    ap.add_argument("--tls-key", default="", help="its private key")
    ap.add_argument("--tls-desc", default="", help="what the certificate is, for the report")
    ap.add_argument("--tls-only", action="store_true",
                    help="measure only TLS beside TCP, with loadgen (daemon.sh -t)")
    ap.add_argument("--machine-note", default="", help="a line for the report about the machine")
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--load-cpu", type=int, default=None)
    if "--report-from" in sys.argv:
        # the report of an earlier run, from its saved results (with its options)
        path = sys.argv[sys.argv.index("--report-from") + 1]
        with open(path, "rb") as f:
            saved_args, state = pickle.load(f)
        out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else saved_args.out
        A = saved_args
        A.out = out
        b = Bench()
        b.__dict__.update(state)
        if "when" not in state:
            b.when = datetime.datetime.fromtimestamp(os.path.getmtime(path))
        for opt in ("tls_cert", "tls_only", "machine_note", "tls_desc"):
            if not hasattr(A, opt):
                setattr(A, opt, "")  # a run from before the TLS rows
        (b.report_tls_only if A.tls_only else b.report)()
        return
    A = ap.parse_args()
    A.conns = [int(x) for x in A.conns.split(",")]
    A.workers = [int(x) for x in A.workers.split(",")]
    if A.udp_settle is None:
        A.udp_settle = min(3.0, A.udp_seconds / 2)
    if A.load_cpu is None:
        A.load_cpu = 1 if os.cpu_count() > 1 and A.cpu == 0 else 0
    os.makedirs(os.path.join(A.scratch, "run"), exist_ok=True)
    def on_signal(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    if A.tls_only and not (A.cloadgen and A.tls_cert and A.tls_key):
        ap.error("--tls-only needs --cloadgen, --tls-cert and --tls-key")
    b = Bench()
    if A.tls_only:
        print("%d run(s); TLS and TCP with loadgen, window %g s; connections %s" % (
            A.runs, A.window, A.conns), flush=True)
    else:
        print("%d runs; TCP window %g s; UDP steps of %g s; connections %s" % (
            A.runs, A.window, A.udp_seconds, A.conns), flush=True)
    try:
        (b.measure_tls_only if A.tls_only else b.measure)()
    finally:
        stop_all()
    with open(os.path.join(A.scratch, "run", "results.pickle"), "wb") as f:
        pickle.dump((A, b.__dict__), f)
    (b.report_tls_only if A.tls_only else b.report)()


if __name__ == "__main__":
    main()
