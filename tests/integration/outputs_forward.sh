#!/bin/sh
# outputs_forward: corrald's forward outputs against a real syslog-ng 3.38.
#
# corrald listens on UDP and forwards everything it receives twice, over UDP
# and over TCP (RFC 6587 octet counting), as RFC 3164 lines, to a syslog-ng
# whose network() sources (transport "udp" and "framed") write what they
# parsed as JSON.  Every message must arrive exactly once on each transport
# with the HOST, PROGRAM, PID and MESSAGE it was sent with: a multi-line one
# whole, and the message a rule generates as PROGRAM "corral" from this host.
#
# Run by `make check` with top_srcdir and top_builddir set.  Exits 77
# (skipped) without syslog-ng or python3, 1 on a failure.  Starts and stops
# only its own processes.

top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
top_builddir=${top_builddir:-$top_srcdir}
CORRALD=$top_builddir/agent/corrald
SYSLOGNG=${SYSLOGNG:-$(command -v syslog-ng || echo /usr/sbin/syslog-ng)}
N=50

if [ ! -x "$SYSLOGNG" ]; then
    echo "outputs_forward: no syslog-ng, skipped"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "outputs_forward: no python3, skipped"
    exit 77
fi
if [ ! -x "$CORRALD" ]; then
    echo "outputs_forward: $CORRALD not built" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/outputs_forward.XXXXXX") || exit 1
corrald_pid=
sng_pid=
cleanup() {
    [ -n "$corrald_pid" ] && kill "$corrald_pid" 2>/dev/null && wait "$corrald_pid" 2>/dev/null
    [ -n "$sng_pid" ] && kill "$sng_pid" 2>/dev/null && wait "$sng_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fail() {
    echo "outputs_forward: $*" >&2
    for f in corrald.log syslog-ng.log; do
        [ -f "$tmp/$f" ] && { echo "--- $f" >&2; tail -n 30 "$tmp/$f" >&2; }
    done
    exit 1
}

# Three free loopback ports: syslog-ng UDP, syslog-ng TCP, corrald's UDP input.
set -- $(python3 -c '
import socket
socks = []
for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM, socket.SOCK_DGRAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
') || fail "cannot pick ports"
SNG_UDP=$1 SNG_TCP=$2 IN_UDP=$3

cat > "$tmp/syslog-ng.conf" <<EOC
@version: 3.38
options { keep-hostname(yes); chain-hostnames(no); use-dns(no); dns-cache(no); stats-freq(0); };
source s_udp { network(ip("127.0.0.1") port($SNG_UDP) transport("udp")); };
source s_tcp { network(ip("127.0.0.1") port($SNG_TCP) transport("framed")); };
destination d_udp { file("$tmp/udp.json" template("\$(format-json HOST=\$HOST PROGRAM=\$PROGRAM PID=\$PID MESSAGE=\$MSG)\n")); };
destination d_tcp { file("$tmp/tcp.json" template("\$(format-json HOST=\$HOST PROGRAM=\$PROGRAM PID=\$PID MESSAGE=\$MSG)\n")); };
log { source(s_udp); destination(d_udp); };
log { source(s_tcp); destination(d_tcp); };
EOC

# One rule whose action generates a message without HOST or PROGRAM.
cat > "$tmp/rules.xml" <<'EOC'
<?xml version='1.0'?>
<patterndb version='4' pub_date='2026-01-01'>
  <ruleset name='app' id='outputs-forward-app'>
    <pattern>app</pattern>
    <rules>
      <rule id='outputs-forward-trigger' class='system' provider='outputs_forward'>
        <patterns><pattern>trigger @NUMBER:n@</pattern></patterns>
        <actions>
          <action>
            <message inherit-properties='FALSE'>
              <values><value name='MESSAGE'>the trigger was seen</value></values>
            </message>
          </action>
        </actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
EOC

cat > "$tmp/corrald.conf" <<EOC
<?xml version="1.0"?>
<corrald>
  <rules path="$tmp/rules.xml"/>
  <log level="debug" to="stderr"/>
  <inputs>
    <udp listen="127.0.0.1:$IN_UDP"/>
  </inputs>
  <outputs>
    <forward name="to-udp" to="127.0.0.1:$SNG_UDP" protocol="udp" format="syslog" select="all"/>
    <forward name="to-tcp" to="127.0.0.1:$SNG_TCP" protocol="tcp" format="syslog" select="all"/>
  </outputs>
</corrald>
EOC

"$SYSLOGNG" -F -f "$tmp/syslog-ng.conf" --no-caps -R "$tmp/syslog-ng.persist" \
    -p "$tmp/syslog-ng.pid" -c "$tmp/syslog-ng.ctl" >"$tmp/syslog-ng.log" 2>&1 &
sng_pid=$!
i=0
until [ -S "$tmp/syslog-ng.ctl" ]; do
    kill -0 "$sng_pid" 2>/dev/null || { sng_pid=; fail "syslog-ng did not start"; }
    i=$((i + 1))
    [ $i -gt 100 ] && fail "syslog-ng did not start in 10 s"
    sleep 0.1
done

"$CORRALD" -F -f "$tmp/corrald.conf" --schema "$top_srcdir/etc/corrald.xsd" \
    >"$tmp/corrald.out" 2>"$tmp/corrald.log" &
corrald_pid=$!
sleep 1
kill -0 "$corrald_pid" 2>/dev/null || { corrald_pid=; fail "corrald did not start"; }

# Send, wait for both files to hold everything, compare.
python3 - "$IN_UDP" "$N" "$tmp" <<'EOP' || fail "messages differ"
import json, os, socket, sys, time

port, n, tmp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
want = []
lines = []
for i in range(1, n + 1):
    host, prog, pid, text = "web%d" % (i % 7), "app" if i % 2 else "postfix/smtpd", str(1000 + i), "message %d of %d" % (i, n)
    want.append({"HOST": host, "PROGRAM": prog, "PID": pid, "MESSAGE": text})
    lines.append("<13>Jan  5 10:00:00 %s %s[%s]: %s" % (host, prog, pid, text))
want.append({"HOST": "db1", "PROGRAM": "app", "PID": "7", "MESSAGE": "first line\nsecond line"})
lines.append("<13>Jan  5 10:00:01 db1 app[7]: first line\nsecond line")
want.append({"HOST": "db1", "PROGRAM": "app", "PID": "8", "MESSAGE": "trigger 42"})
lines.append("<13>Jan  5 10:00:02 db1 app[8]: trigger 42")
# generated by the rule: this host's name, PROGRAM corral, no PID
want.append({"HOST": socket.gethostname(), "PROGRAM": "corral", "PID": "", "MESSAGE": "the trigger was seen"})

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for line in lines:
    s.sendto(line.encode(), ("127.0.0.1", port))
    time.sleep(0.002)  # loopback UDP drops what a receiver cannot take at once

def load(name):
    path = os.path.join(tmp, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

deadline = time.time() + 15
while time.time() < deadline:
    if len(load("udp.json")) >= len(want) and len(load("tcp.json")) >= len(want):
        break
    time.sleep(0.1)
time.sleep(0.3)  # anything extra (a duplicate) shows up now
ok = True
key = lambda r: (r["HOST"], r["PROGRAM"], r["PID"], r["MESSAGE"])
for name in ("udp.json", "tcp.json"):
    got = sorted(map(key, load(name)))
    exp = sorted(map(key, want))
    if got != exp:
        ok = False
        print("%s: %d received, %d expected" % (name, len(got), len(exp)), file=sys.stderr)
        for r in sorted(set(exp) - set(got)):
            print("  missing:", r, file=sys.stderr)
        for r in sorted(set(got) - set(exp)):
            print("  unexpected:", r, file=sys.stderr)
        if len(got) != len(set(got)):
            print("  duplicates present", file=sys.stderr)
sys.exit(0 if ok else 1)
EOP

kill "$corrald_pid"
wait "$corrald_pid" || fail "corrald exited with status $? on SIGTERM"
corrald_pid=
echo "outputs_forward: $((N + 3)) messages over UDP and TCP received by syslog-ng"
exit 0
