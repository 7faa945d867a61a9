#!/bin/sh
# systemd integration without libsystemd: corrald reports READY=1 on
# NOTIFY_SOCKET once it serves, RELOADING=1 and READY=1 around a SIGHUP, and
# STOPPING=1 on SIGTERM.  Started as root with <daemon user="nobody">, it
# runs privilege-separated (the default then): the engine process, which
# says these states through the executor process (the main one, which
# systemd listens to), drops its privileges after binding (checked in
# /proc), and cannot get them back.  (tests/integration/privsep.sh tests
# the separation; hostile_lifecycle.sh the drop with privsep="no".)  The shipped unit file passes systemd-analyze verify when available.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to test the privilege drop"; exit 77; }
id nobody > /dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }

chmod 755 "$WORK"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <daemon user="nobody"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="all"/></outputs>
</corrald>
XML
# the output file is opened before the drop; the state would need nobody's rights
python3 - "$WORK/notify.sock" > "$WORK/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
try:
    while True:
        print(s.recv(4096).decode(), flush=True)
except socket.timeout:
    pass
PY
track $!
wait_until test -S "$WORK/notify.sock" || fail "notify listener did not start"
chmod 777 "$WORK/notify.sock"
NOTIFY_SOCKET=$WORK/notify.sock start_corrald corrald "$WORK/corrald.conf"
wait_grep "$WORK/notify.log" '^READY=1' || fail "no READY=1"
engine=$(sed -n 's/.*privilege separation: engine process \([0-9]*\) .*/\1/p' "$CORRALD_LOG")
[ -n "$engine" ] || fail "not privilege-separated"
uid=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$engine/status")
[ "$uid" = "65534 65534 65534 65534" ] || fail "privileges not dropped: Uid $uid"
capeff=$(awk '/^CapEff:/ {print $2}' "/proc/$engine/status")
[ "$capeff" = "0000000000000000" ] || fail "capabilities left: $capeff"
send_udp "$(input_port udp)" "<13>Dec  3 10:00:00 web1 app: seq 1"
wait_grep "$WORK/out.json" '"seq":"1"' || fail "not serving after the drop"
kill -HUP "$CORRALD_PID"
wait_grep "$WORK/notify.log" '^RELOADING=1' || fail "no RELOADING=1"
wait_grep "$WORK/notify.log" '^READY=1' 2 || fail "no READY=1 after reload"
stop_corrald "$CORRALD_PID"
# the listener writes what it receives as it comes: STOPPING=1 was sent before corrald exited
wait_grep "$WORK/notify.log" '^STOPPING=1' || fail "no STOPPING=1"
if command -v systemd-analyze > /dev/null 2>&1; then
    abs=$(cd "$(dirname "$CORRALD")" && pwd)/corrald
    sed "s|/usr/sbin/corrald|$abs|" "$top_srcdir/etc/corrald.service" > "$WORK/corrald.service"
    systemd-analyze verify "$WORK/corrald.service" 2>&1 | grep -v "Command 'man \|corral.*user\|Unknown user\|not found" | grep . &&
        fail "systemd-analyze verify complains about the unit"
fi
echo "ok: READY/RELOADING/STOPPING notified; running as nobody with no capabilities"
