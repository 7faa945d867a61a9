#!/bin/sh
# Absence tracking against senders that lie about the host: a source is
# bound to the address it was first seen from, so one datagram naming web1
# from another address neither resolves web1's absence nor keeps it quiet
# (counted: corral_absence_foreign_total); web1 itself resolves it.  A flood
# of made-up host names, each sent once, fills max-absence-sources, but the
# oldest of them make room (corral_absence_evicted_total): a real new host
# sent after the flood is still tracked and reported absent.
. "$(dirname "$0")/corrald_lib.sh"
need python3

CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <control socket="$CONTROL"/>
  <limits max-absence-sources="50"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
  <absence after="2s"/>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port udp)
# send_from ADDR LINE...: datagrams from the local address ADDR (any 127.x is ours)
send_from() {
    python3 - "$port" "$@" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[2], 0))
for line in sys.argv[3:]:
    s.sendto(line.encode(), ("127.0.0.1", int(sys.argv[1])))
PY
}
now() { date '+%b %e %H:%M:%S'; }

send_from 127.0.0.1 "$(now) web1 app: seq 1" "$(now) web1 app: seq 2"
wait_grep "$WORK/out.json" '"web1 has been silent for' || fail "web1 absence not reported"

# one spoofed datagram from 127.0.0.2, then a marker host from 127.0.0.1:
# once the marker is tracked, the spoofed one has been seen too
send_from 127.0.0.2 "$(now) web1 app: all is well"
send_from 127.0.0.1 "$(now) marker app: seq 1"
wait_metric corral_absence_sources -eq 2 || fail "marker not tracked: $(metric corral_absence_sources)"
if grep -q '"web1 is sending again' "$WORK/out.json"; then
    fail "a datagram from another address resolved web1's absence"
fi
[ "$(metric corral_absence_foreign_total)" = 1 ] ||
    fail "foreign messages: $(metric corral_absence_foreign_total)"
[ "$(metric corral_absence_down)" -ge 1 ] || fail "web1 no longer down"
wait_log 'naming a watched source from another address' || fail "foreign sender not logged"
send_from 127.0.0.1 "$(now) web1 app: seq 3"
wait_grep "$WORK/out.json" '"web1 is sending again' || fail "web1's own return not reported"

# 1,000 made-up host names once each, from a third address, then a real new host
python3 - "$port" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.3", 0))
stamp = time.strftime("%b %e %H:%M:%S")
for i in range(1000):
    s.sendto(("%s forged%d app: x" % (stamp, i)).encode(), ("127.0.0.1", int(sys.argv[1])))
PY
wait_metric corral_absence_evicted_total -ge 900 ||
    fail "evicted: $(metric corral_absence_evicted_total), untracked $(metric corral_absence_untracked_total)"
send_from 127.0.0.1 "$(now) newhost app: hello"
wait_grep "$WORK/out.json" '"newhost has been silent for' || fail "a new host after the flood not tracked"
[ "$(metric corral_absence_untracked_total)" = 0 ] ||
    fail "untracked: $(metric corral_absence_untracked_total)"
corrald_alive
stop_corrald "$CORRALD_PID"
echo "ok: a spoofed datagram resolves nothing; a new host is tracked through a flood of made-up names"
