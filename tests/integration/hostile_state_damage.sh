#!/bin/sh
# One damaged byte in the state file costs one context, not all: 260 SSH
# sessions open, corrald stops (state saved), one byte in the middle of the
# file is flipped; at the restart 259 sessions come back and the loss is
# logged with its count.  The restored sessions still correlate.
. "$(dirname "$0")/corrald_lib.sh"
need python3

CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <state file="$WORK/state"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
</corrald>
XML
start_corrald first "$WORK/corrald.conf"
python3 - "$(input_port udp)" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
stamp = time.strftime("%b %e %H:%M:%S")
for i in range(260):
    line = "%s web1 sshd[%d]: Accepted password for u%d from 10.0.%d.%d port %d ssh2" % (
        stamp, 1000 + i, i, i // 250, i % 250 + 1, 2000 + i)
    s.sendto(line.encode(), ("127.0.0.1", int(sys.argv[1])))
PY
wait_metric corral_contexts_open -eq 260 || fail "sessions opened: $(metric corral_contexts_open)"
stop_corrald "$CORRALD_PID"
[ -s "$WORK/state" ] || fail "no state file written at shutdown"
python3 - "$WORK/state" <<'PY'
import sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
d[len(d) // 2] ^= 0x5a
open(p, "wb").write(d)
PY
start_corrald second "$WORK/corrald.conf"
wait_metric corral_contexts_open -eq 259 || fail "contexts after the damage: $(metric corral_contexts_open)"
grep -q "state file: 1 of 260 saved contexts lost to damage" "$WORK/second.log" ||
    fail "the loss was not logged"
# a restored session still closes with its event
python3 - "$(input_port udp)" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
stamp = time.strftime("%b %e %H:%M:%S")
for i in (0, 259):
    line = "%s web1 sshd[%d]: pam_unix(sshd:session): session closed for user u%d" % (stamp, 1000 + i, i)
    s.sendto(line.encode(), ("127.0.0.1", int(sys.argv[1])))
PY
wait_grep "$WORK/out.json" 'session of u[0-9]* from 10\.0\.[0-9.]* closed' || fail "no event from a restored session"
corrald_alive
stop_corrald "$CORRALD_PID"
echo "ok: one damaged byte in the state file lost 1 of 260 contexts, logged"
