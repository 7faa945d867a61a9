#!/usr/bin/env python3
"""bench/save_stall.py: what a state save costs corrald with many open contexts.

    python3 bench/save_stall.py [-n CONTEXTS] [-r RATE] [-m MESSAGES] [-d DIR] [-k]

    -n CONTEXTS  open correlation contexts to build (default 1,000,000)
    -r RATE      UDP messages a second sent during the save (default 20,000)
    -m MESSAGES  UDP messages sent from the start of the save (default 200,000)
    -d DIR       scratch directory (default: a new one under ${TMPDIR:-/tmp})
    -k           keep the scratch directory

Builds the state by sending CONTEXTS lines over TCP, each opening a context
with a one-day timeout, restarts corrald (stop: SIGTERM to exit with the final
save; start: exec to "started" with that state, peak and settled RSS), then
runs `corral ctl save` while a UDP sender sends
MESSAGES messages at RATE and measures: the longest loop stall during the save
(corral_loop_stall_max_seconds, before and after), how long fork() stopped the
loop, the save's duration, UDP messages received, counted as kernel drops, and
lost uncounted.  CORRALD, CORRAL: the binaries (default: this tree's
agent/corrald and tools/corral, built).  Prints a Markdown table.
Not part of `make check`: it needs about 2 GB of memory at 1M contexts.
"""
import getopt
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RULES = """<?xml version='1.0'?>
<patterndb version='4' pub_date='2026-12-04'>
  <ruleset name='bench' id='bench'>
    <patterns><pattern>app</pattern></patterns>
    <rules>
      <rule provider='bench' id='bench.open' class='system' context-id='s${sid}'
            context-timeout='86400' context-scope='global'>
        <patterns><pattern>open @NUMBER:sid@ @ANYSTRING:rest@</pattern></patterns>
        <actions><action trigger='timeout'><message><values>
          <value name='MESSAGE'>session ${sid}@1 ended: ${rest}@1</value>
        </values></message></action></actions>
      </rule>
      <rule provider='bench' id='bench.probe' class='system'>
        <patterns><pattern>probe @NUMBER:seq@</pattern></patterns>
      </rule>
    </rules>
  </ruleset>
</patterndb>
"""


def main():
    n, rate, count, scratch, keep = 1000000, 20000, 200000, None, False
    try:
        opts, _ = getopt.getopt(sys.argv[1:], "n:r:m:d:kh", ["help"])
    except getopt.GetoptError as e:
        print("save_stall.py: %s" % e, file=sys.stderr)
        print(__doc__, file=sys.stderr)
        return 2
    for o, v in opts:
        if o == "-n":
            n = int(v)
        elif o == "-r":
            rate = int(v)
        elif o == "-m":
            count = int(v)
        elif o == "-d":
            scratch = v
        elif o == "-k":
            keep = True
        else:
            print(__doc__)
            return 0
    corrald = os.environ.get("CORRALD", os.path.join(TOP, "build/agent/corrald"))
    corral = os.environ.get("CORRAL", os.path.join(TOP, "build/tools/corral"))
    for b in (corrald, corral):
        if not os.access(b, os.X_OK):
            sys.exit("%s not built (set CORRALD / CORRAL)" % b)
    work = scratch or tempfile.mkdtemp(prefix="corral-save-")
    os.makedirs(work, exist_ok=True)
    try:
        return run(corrald, corral, work, n, rate, count)
    finally:
        if not keep and not scratch:
            shutil.rmtree(work, ignore_errors=True)


class Daemon:
    def __init__(self, corrald, corral, work, name):
        self.corral, self.work = corral, work
        self.log = os.path.join(work, name + ".log")
        self.control = os.path.join(work, "control.sock")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [corrald, "-F", "-f", os.path.join(work, "corrald.conf"),
             "--schema", os.path.join(TOP, "etc/corrald.xsd")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        self.peak_at_start = 0
        while not re.search(r"\]: started$", open(self.log).read(), re.M):
            if self.proc.poll() is not None:
                sys.exit("corrald exited:\n" + open(self.log).read())
            self.peak_at_start = max(self.peak_at_start, self.status("VmRSS"))
            time.sleep(0.01)
        self.start_seconds = time.monotonic() - t0
        self.peak_at_start = max(self.peak_at_start, self.status("VmHWM"))

    def status(self, field):
        try:
            for line in open("/proc/%d/status" % self.proc.pid):
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def port(self, what):
        m = re.findall(r"\]: %s: listening on [^ ]*:(\d+)$" % re.escape(what),
                       open(self.log).read(), re.M)
        return int(m[-1])

    def metrics(self):
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port("stats"),
                                      timeout=60).read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def wait_metric(self, name, pred, timeout=3600):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.metrics().get(name, -1)
            if pred(v):
                return v
            time.sleep(0.2)
        sys.exit("timed out waiting for %s" % name)

    def stop(self):
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()
        return time.monotonic() - t0


def udp_sender(port, rate, count, sent):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0 = time.monotonic()
    batch = max(1, rate // 1000)
    i = 0
    while i < count:
        for _ in range(min(batch, count - i)):
            s.sendto(b"<13>Dec  4 12:00:00 h app: probe %d" % i, ("127.0.0.1", port))
            i += 1
        sent[0] = i
        ahead = t0 + i / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    sent[0] = i


def run(corrald, corral, work, n, rate, count):
    with open(os.path.join(work, "rules.xml"), "w") as f:
        f.write(RULES)
    with open(os.path.join(work, "corrald.conf"), "w") as f:
        f.write("""<corrald>
  <rules path="%(w)s/rules.xml"/>
  <state file="%(w)s/state" interval="24h"/>
  <control socket="%(w)s/control.sock"/>
  <stats listen="127.0.0.1:0"/>
  <limits max-contexts="%(max)d"/>
  <inputs>
    <udp listen="127.0.0.1:0" name="udp"/>
    <tcp listen="127.0.0.1:0" name="tcp"/>
  </inputs>
</corrald>
""" % {"w": work, "max": n + 1000})
    d = Daemon(corrald, corral, work, "first")
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", d.port("input tcp"))) as s:
        chunk = []
        for i in range(n):
            chunk.append(b"<13>Dec  4 12:00:00 h app: open %d user%d from 10.%d.%d.%d port 22\n"
                         % (i, i % 5000, i >> 16 & 255, i >> 8 & 255, i & 255))
            if len(chunk) == 10000:
                s.sendall(b"".join(chunk))
                chunk = []
        s.sendall(b"".join(chunk))
    d.wait_metric("corral_contexts_open", lambda v: v >= n)
    fill = time.monotonic() - t0
    rss_running = d.status("VmRSS")
    # restarted, so that the stall gauge (the longest since start) holds no stall of the filling
    stop_seconds = d.stop()
    d = Daemon(corrald, corral, work, "second")
    restored = re.search(r"(\d+) open contexts restored", open(d.log).read())
    rss_after_start = d.status("VmRSS")
    time.sleep(2)
    before = d.metrics()

    sent = [0]
    sender = threading.Thread(target=udp_sender, args=(d.port("input udp"), rate, count, sent))
    t0 = time.monotonic()
    sender.start()
    answer = subprocess.run([corral, "ctl", "-s", d.control, "save"], capture_output=True,
                            text=True).stdout.strip()
    ctl_seconds = time.monotonic() - t0
    sender.join()
    # what was sent is either received or counted as dropped by the kernel (read every second)
    key_in = 'corral_input_messages_total{input="udp"}'
    key_drop = 'corral_input_kernel_drops_total{input="udp"}'
    last, stable = None, 0
    while stable < 3:
        m = d.metrics()
        now = (m.get(key_in, 0), m.get(key_drop, 0))
        stable = stable + 1 if now == last else 0
        last = now
        time.sleep(0.5)
    after = m
    state_size = os.path.getsize(os.path.join(work, "state"))
    d.stop()

    rows = [
        ("open contexts", "%d (filled in %.1f s over TCP)" % (n, fill)),
        ("state file", "%.1f MB" % (state_size / 1e6)),
        ("ctl save answer, wall time", "%s, %.2f s" % (answer, ctl_seconds)),
        ("save duration (corral_state_save_seconds)", "%.2f s" % after["corral_state_save_seconds"]),
        ("loop stopped by fork()", "%.1f ms" % (after["corral_state_save_fork_seconds"] * 1e3)),
        ("longest loop stall since start, before the save", "%.1f ms"
         % (before["corral_loop_stall_max_seconds"] * 1e3)),
        ("longest loop stall since start, after the save", "%.1f ms"
         % (after["corral_loop_stall_max_seconds"] * 1e3)),
        ("UDP sent during the save", "%d at %d/s" % (sent[0], rate)),
        ("UDP received", "%d" % (after.get(key_in, 0) - before.get(key_in, 0))),
        ("UDP kernel drops (counted)", "%d" % (after.get(key_drop, 0) - before.get(key_drop, 0))),
        ("UDP lost uncounted", "%d" % (sent[0] - (after.get(key_in, 0) - before.get(key_in, 0))
                                       - (after.get(key_drop, 0) - before.get(key_drop, 0)))),
        ("RSS running, full state", "%.0f MB" % (rss_running / 1e6)),
        ("stop (SIGTERM to exit, final save)", "%.2f s" % stop_seconds),
        ("start with the state (exec to started)", "%.2f s, %s contexts restored"
         % (d.start_seconds, restored.group(1) if restored else "?")),
        ("peak RSS at start-up (VmHWM)", "%.0f MB" % (d.peak_at_start / 1e6)),
        ("RSS after start-up", "%.0f MB" % (rss_after_start / 1e6)),
    ]
    print("| what | measured |\n|---|---|")
    for k, v in rows:
        print("| %s | %s |" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
