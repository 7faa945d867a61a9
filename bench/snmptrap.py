#!/usr/bin/env python3
"""
bench/snmptrap.py: SNMP traps a second received and classified by corrald's
<snmp-trap> input, against snmptrapd + snmptt in daemon mode (snmptrapd's
traphandle snmptthandler spools each trap, the snmptt daemon translates and
logs them), on the same traps (SNMPv2c linkDown/linkUp with four varbinds,
interface index and name varying) and the same MIBs (tests/data/mibs); and
the peak memory (VmHWM) of each: corrald's engine, snmptrapd plus the snmptt
daemon.  Both write one line a trap to a file (corrald's file output of the
classified message, snmptt's log); the time runs from the first datagram
sent to the last line written.  Datagrams are sent in windows (at most
--window traps ahead of what corrald wrote, --snmptt-window ahead of what
snmptrapd logged and handed to snmptthandler, the spool then growing as it
will), so that neither loses traps to a full socket buffer and the rate
measured is the receiver's.

    python3 bench/snmptrap.py [-n TRAPS] [--snmptt-traps N] [--window W] [--snmptt-window W]
                              [--out FILE]

Needs corrald built (agent/corrald of this tree or $CORRALD), snmptrapd and
snmptt.  Ports are picked by the kernel; every process started is stopped.
"""
import argparse, os, shutil, signal, socket, subprocess, sys, tempfile, time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIBS = os.path.join(TOP, "tests", "data", "mibs")


def tlv(t, b):
    n = len(b)
    l = bytes([n]) if n < 128 else (b"\x81" + bytes([n]) if n < 256 else b"\x82" + n.to_bytes(2, "big"))
    return bytes([t]) + l + b


def num(t, v):
    return tlv(t, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True))


def oid(s):
    p = [int(x) for x in s.strip(".").split(".")]
    out = bytes([p[0] * 40 + p[1]])
    for x in p[2:]:
        e = [x & 0x7F]
        x >>= 7
        while x:
            e.insert(0, 0x80 | (x & 0x7F))
            x >>= 7
        out += bytes(e)
    return tlv(6, out)


def trap(i):
    """A v2c linkDown (even i) or linkUp (odd i) of interface i % 48 + 1."""
    idx = i % 48 + 1
    vb = lambda o, v: tlv(0x30, oid(o) + v)
    vbs = tlv(0x30,
              vb(".1.3.6.1.2.1.1.3.0", num(0x43, 1000 + i)) +
              vb(".1.3.6.1.6.3.1.1.4.1.0", oid(".1.3.6.1.6.3.1.1.5.%d" % (3 + i % 2))) +
              vb(".1.3.6.1.2.1.2.2.1.1.%d" % idx, num(2, idx)) +
              vb(".1.3.6.1.2.1.2.2.1.7.%d" % idx, num(2, 1)) +
              vb(".1.3.6.1.2.1.2.2.1.8.%d" % idx, num(2, 2 - i % 2)) +
              vb(".1.3.6.1.2.1.2.2.1.2.%d" % idx, tlv(4, b"ge-0/0/%d" % idx)))
    return tlv(0x30, num(2, 1) + tlv(4, b"public") + tlv(0xA7, num(2, i) + num(2, 0) + num(2, 0) + vbs))


class Counter:
    """Lines of a growing file that contain mark, read from where the last call stopped."""

    def __init__(self, path, mark=b"\n"):
        self.path, self.mark, self.f, self.n, self.rest = path, mark, None, 0, b""

    def __call__(self):
        if not self.f:
            try:
                self.f = open(self.path, "rb")
            except OSError:
                return 0
        data = self.rest + self.f.read()
        cut = data.rfind(b"\n") + 1
        self.rest = data[cut:]
        done = data[:cut]
        self.n += done.count(b"\n") if self.mark == b"\n" else sum(
            1 for l in done.split(b"\n") if self.mark in l)
        return self.n


def hwm_kb(pid):
    try:
        for l in open("/proc/%d/status" % pid):
            if l.startswith("VmHWM:"):
                return int(l.split()[1])
    except OSError:
        pass
    return 0


def wait_for(cond, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    sys.exit("timed out waiting for " + what)


def udp_port(pid):
    """The UDP port process pid has bound (from /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    for l in open("/proc/%d/net/udp" % pid).readlines()[1:]:
        f = l.split()
        if f[9] in inodes:
            return int(f[1].split(":")[1], 16)
    return 0


def send(port, n, out, window, count, taken=None):
    """
    Sends n traps to port, at most window ahead of taken() (what the receiver
    has read off its socket; default count()); seconds until count() (lines
    written) reaches n.
    """
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pkts = [trap(i) for i in range(n)]
    taken = taken or count
    base, tbase = count(), taken()
    t0 = time.monotonic()
    sent, last, moved = 0, -1, time.monotonic()
    while sent < n:
        done = taken() - tbase
        if done != last:
            last, moved = done, time.monotonic()
        elif time.monotonic() - moved > 120:
            sys.exit("no progress for 120 s: %d of %d sent traps taken (lost?)" % (done, sent))
        while sent < n and sent - done < window:
            s.sendto(pkts[sent], ("127.0.0.1", port))
            sent += 1
        time.sleep(0.001)
    end = time.monotonic() + 600
    while count() - base < n:
        if time.monotonic() > end:
            sys.exit("only %d of %d traps written to %s" % (count() - base, n, out))
        time.sleep(0.002)
    return time.monotonic() - t0


def bench_corrald(work, n, window):
    corrald = os.environ.get("CORRALD", os.path.join(TOP, "agent", "corrald"))
    if not os.path.exists(corrald):
        corrald = os.path.join(TOP, "build", "agent", "corrald")
    out = os.path.join(work, "corrald.json")
    conf = os.path.join(work, "corrald.conf")
    with open(conf, "w") as f:
        f.write("""<corrald>
  <rules path="%s"/>
  <inputs><snmp-trap listen="udp:127.0.0.1:0" name="traps" mibs="%s" community="public" rate="0"/></inputs>
  <outputs><file path="%s" format="json" select="classified"/></outputs>
</corrald>
""" % (os.path.join(TOP, "bench", "snmptrap_rules.xml"), MIBS, out))
    log = open(os.path.join(work, "corrald.log"), "w")
    p = subprocess.Popen([corrald, "-F", "-f", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        port = wait_for(lambda: next((int(l.rsplit(":", 1)[1]) for l in open(log.name)
                                      if "traps: listening on" in l), 0), 30, "corrald's port")
        secs = send(port, n, out, window, Counter(out))
        mem = hwm_kb(p.pid)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
    return secs, mem


def bench_snmptt(work, n, window):
    spool = os.path.join(work, "spool")
    os.makedirs(spool)
    out = os.path.join(work, "snmptt.log")
    with open(os.path.join(work, "snmptt.conf"), "w") as f:
        f.write('EVENT anytrap .1.* "Status Events" Normal\nFORMAT $O $+*\n')
    ini = os.path.join(work, "snmptt.ini")
    skip = False
    with open("/etc/snmp/snmptt.ini") as src, open(ini, "w") as dst:
        for l in src:
            k = l.split("=")[0].strip().lstrip("#")
            if k == "snmptt_conf_files":
                dst.write("snmptt_conf_files = <<END\n%s\nEND\n" % os.path.join(work, "snmptt.conf"))
                skip = True
                continue
            if skip:
                skip = not l.startswith("END")
                continue
            repl = {"mode": "daemon", "log_file": out, "spool_directory": spool + "/",
                    "sleep": "1", "daemon_fork": "0", "daemon_uid": "",
                    "pid_file": os.path.join(work, "snmptt.pid"), "mibs_environment": "ALL",
                    "net_snmp_perl_enable": "1", "translate_integers": "1", "syslog_enable": "0",
                    "syslog_system_enable": "0", "log_system_enable": "0", "dns_enable": "0", "ipv6_enable": "0",
                    "unknown_trap_log_file": os.path.join(work, "unknown.log")}
            dst.write("%s = %s\n" % (k, repl[k]) if k in repl else l)
    with open(os.path.join(work, "snmptrapd.conf"), "w") as f:
        f.write("disableAuthorization yes\ntraphandle default /usr/sbin/snmptthandler --ini=%s\n" % ini)
    env = dict(os.environ, MIBDIRS=MIBS, MIBS="ALL", SNMP_PERSISTENT_DIR=work)
    tt = subprocess.Popen(["snmptt", "--daemon", "--ini=" + ini], env=env,
                          stdout=open(os.path.join(work, "snmptt.out"), "w"), stderr=subprocess.STDOUT)
    trapd = subprocess.Popen(["snmptrapd", "-f", "-Lf", os.path.join(work, "snmptrapd.log"), "-C", "-c",
                              os.path.join(work, "snmptrapd.conf"), "-n", "-On", "udp:127.0.0.1:0"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        port = wait_for(lambda: udp_port(trapd.pid), 30, "snmptrapd's port")
        # the window runs against what snmptrapd has handed to snmptthandler (its log), so
        # that its socket never overflows; the snmptt daemon's spool may grow as it will
        secs = send(port, n, out, window, Counter(out, b"Status Events"),
                    Counter(os.path.join(work, "snmptrapd.log"), b"UDP: ["))
        mem = hwm_kb(trapd.pid) + hwm_kb(tt.pid)
    finally:
        for p in (trapd, tt):
            p.send_signal(signal.SIGTERM)
        for p in (trapd, tt):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return secs, mem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20000, help="traps sent to corrald")
    ap.add_argument("--snmptt-traps", type=int, default=2000, help="traps sent to snmptrapd + snmptt")
    ap.add_argument("--window", type=int, default=1000,
                    help="traps ahead of corrald (its socket asks for 4 MiB)")
    ap.add_argument("--snmptt-window", type=int, default=50,
                    help="traps ahead of snmptt (snmptrapd's socket has the default buffer)")
    ap.add_argument("--out")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="corral-snmptrap-bench.")
    try:
        os.makedirs(os.path.join(work, "c"))
        cs, cm = bench_corrald(os.path.join(work, "c"), a.n, a.window)
        os.makedirs(os.path.join(work, "s"))
        ss, sm = bench_snmptt(os.path.join(work, "s"), a.snmptt_traps, a.snmptt_window)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [("corrald (snmp-trap input, classified)", a.n, cs, cm),
            ("snmptrapd + snmptt --daemon", a.snmptt_traps, ss, sm)]
    rep = ["| receiver | traps | seconds | traps/s | peak RSS (VmHWM) |", "|---|---|---|---|---|"]
    for name, n, s, m in rows:
        rep.append("| %s | %d | %.2f | %.0f | %.1f MiB |" % (name, n, s, n / s, m / 1024))
    rep.append("")
    rep.append("corrald / snmptt: %.1f times the traps a second, %.2f times the memory" %
               ((a.n / cs) / (a.snmptt_traps / ss), cm / sm if sm else 0))
    text = "\n".join(rep) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
