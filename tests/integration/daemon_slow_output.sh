#!/bin/sh
# A slow output (a reader that never reads) does not stop corrald: it keeps
# receiving and classifying, the output's queue stays bounded and counts what
# it drops, and memory stays bounded.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl

port=$(free_port)
mport=$(free_port)
mkfifo "$WORK/stuck"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <stats listen="127.0.0.1:$mport"/>
  <inputs><udp listen="127.0.0.1:$port"/></inputs>
  <outputs>
    <stdout format="json" select="all"/>
    <file path="$WORK/out.json" format="json" select="all"/>
  </outputs>
</corrald>
XML
# stdout is a pipe to a reader that holds it open and never reads
sleep 300 < "$WORK/stuck" &
PIDS="$PIDS $!"
"$CORRALD" -F -f "$WORK/corrald.conf" --schema "$SCHEMA" > "$WORK/stuck" 2> "$WORK/corrald.log" &
CORRALD_PID=$!
PIDS="$PIDS $CORRALD_PID"
wait_until 10 grep -q started "$WORK/corrald.log" || fail "corrald did not start"
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$CORRALD_PID/status"; }
before=$(rss)
python3 - "$port" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(200000):
    s.sendto(b"<13>Dec  3 10:00:00 web1 app: seq %d" % i + b" x" * 200, ("127.0.0.1", int(sys.argv[1])))
    if i % 2000 == 0:
        time.sleep(0.01)
PY
sleep 2
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" | awk -v n="$1" '$1 == n {print $2}'; }
dropped=$(metric 'corral_output_dropped_total{output="stdout"}')
written=$(metric 'corral_output_written_total{output="file:'"$WORK"'/out.json"}')
received=$(metric corral_messages_received_total)
after=$(rss)
echo "received $received, file output wrote $written, stdout dropped $dropped, RSS $before -> $after kB"
[ "${dropped:-0}" -gt 0 ] || fail "the stuck stdout dropped nothing"
[ "$written" = "$received" ] || fail "the file output did not keep up: $written of $received"
[ "$received" -gt 150000 ] || fail "corrald stopped receiving: $received"
[ $((after - before)) -lt 131072 ] || fail "memory grew by $((after - before)) kB"
stop_corrald "$CORRALD_PID"
echo "ok: a stuck output drops and counts, the rest keeps flowing, memory bounded"
