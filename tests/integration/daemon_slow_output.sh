#!/bin/sh
# A slow output (a reader that never reads) does not stop corrald: it keeps
# receiving and classifying, the output's queue stays bounded and counts what
# it drops, and memory stays bounded.
. "$(dirname "$0")/corrald_lib.sh"
need python3

# Under ASan, freed memory waits in a quarantine of up to 256 MB before it
# is reused, so RSS grows with what corrald frees, not with what it holds:
# a small quarantine lets the bound below measure corrald (a plain build
# ignores the variable)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
export ASAN_OPTIONS

mkfifo "$WORK/stuck"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs>
    <stdout format="json" select="all"/>
    <file path="$WORK/out.json" format="json" select="all"/>
  </outputs>
</corrald>
XML
# stdout is a pipe to a reader that holds it open and never reads (sleep:
# it only holds the pipe, and is stopped at the end)
sleep 3600 < "$WORK/stuck" &
track $!
start_corrald corrald "$WORK/corrald.conf" /dev/null "$WORK/stuck"
port=$(input_port udp)
before=$(rss_kb)
# 200,000 datagrams in 40 chunks; each chunk once corrald has taken the one
# before (received, or dropped by the kernel and counted): its pace, not a
# timer's, so a slow machine or ASan changes nothing but the time it takes
accounted() {
    [ $(($(metric corral_messages_received_total) + $(metric corral_input_kernel_drops_total input=udp))) -ge "$1" ]
}
chunk=0
while [ $chunk -lt 40 ]; do
    python3 - "$port" "$chunk" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
first = int(sys.argv[2]) * 5000
for i in range(first, first + 5000):
    s.sendto(b"<13>Dec  3 10:00:00 web1 app: seq %d" % i + b" x" * 200, ("127.0.0.1", int(sys.argv[1])))
PY
    chunk=$((chunk + 1))
    wait_until accounted $((chunk * 5000)) || fail "corrald stopped taking datagrams after $((chunk * 5000 - 5000))"
done
# everything sent is in: corrald has emptied its socket's receive queue (the
# kernel dropped what did not fit), and the file output has written all
# corrald received (it did not keep up otherwise)
udp_queue() {
    python3 - "$1" <<'PY'
import sys
port = "%04X" % int(sys.argv[1])
for row in open("/proc/net/udp").read().splitlines()[1:]:
    f = row.split()
    if f[1] == "0100007F:" + port:
        print(int(f[4].split(":")[1], 16))
PY
}
queue_empty() { [ "$(udp_queue "$port")" = 0 ]; }
wait_until queue_empty || fail "corrald did not read its input: $(udp_queue "$port") bytes queued"
file_output="output=file:$WORK/out.json"
kept_up() { [ "$(metric corral_output_written_total "$file_output")" = "$(metric corral_messages_received_total)" ]; }
wait_until kept_up || true
dropped=$(metric corral_output_dropped_total output=stdout)
written=$(metric corral_output_written_total "$file_output")
received=$(metric corral_messages_received_total)
after=$(rss_kb)
echo "received $received, file output wrote $written, stdout dropped $dropped, RSS $before -> $after kB"
[ "${dropped:-0}" -gt 0 ] || fail "the stuck stdout dropped nothing"
[ "$written" = "$received" ] || fail "the file output did not keep up: $written of $received"
kernel=$(metric corral_input_kernel_drops_total input=udp)
[ $((received + kernel)) -eq 200000 ] || fail "received $received + kernel drops $kernel of 200000 sent"
# with stdout stuck after its first 10,000, corrald went on receiving (each
# chunk fits the receive buffer: the kernel drops next to nothing)
[ "$received" -gt 100000 ] || fail "corrald stopped receiving: $received"
[ $((after - before)) -lt 131072 ] || fail "memory grew by $((after - before)) kB"
stop_corrald "$CORRALD_PID"
echo "ok: a stuck output drops and counts, the rest keeps flowing, memory bounded"
