#!/bin/sh
# bench/loadgen, the load generator of bench/daemon.sh, sends exactly what it
# reports: 1000 messages over 2 TCP connections (octet counting), 1000 with
# newline framing and 1000 over UDP (at a modest rate, well inside corrald's
# 8 MiB receive buffer) to a running corrald, whose input counters
# (/metrics) must reach exactly those figures, with every message parsed.
# A smoke test only: the benchmark itself is run by hand (bench/README.md).
. "$(dirname "$0")/corrald_lib.sh"
LOADGEN=$top_builddir/bench/loadgen
[ -x "$LOADGEN" ] || fail "$LOADGEN not built"

corpus=$WORK/corpus.log
awk '{ sub(/\r$/, ""); print "<38>" $0 }' "$top_srcdir/tests/data/loghub/OpenSSH_2k.log" > "$corpus"
inputs_config "$WORK/corrald.conf" "" '<tcp listen="127.0.0.1:0" name="tcp"/>
    <udp listen="127.0.0.1:0" name="udp"/>'
start_corrald lg "$WORK/corrald.conf"
tport=$(input_port tcp)
uport=$(input_port udp)

# sent MESSAGES-EXPECTED JSON-FILE: loadgen's own report says it sent them all
sent() {
    grep -q "\"messages\":$1,.*\"failed\":0" "$2" || fail "loadgen reported: $(cat "$2")"
}

"$LOADGEN" -c 2 -n 1000 -p "$tport" -f "$corpus" > "$WORK/tcp.json" 2> "$WORK/tcp.log" ||
    fail "loadgen over TCP failed: $(cat "$WORK/tcp.log")"
sent 1000 "$WORK/tcp.json"
grep -q '"connections":2,' "$WORK/tcp.json" || fail "not 2 connections: $(cat "$WORK/tcp.json")"
wait_metric corral_input_messages_total input=tcp -ge 1000 ||
    fail "corrald counted $(metric corral_input_messages_total input=tcp) TCP messages of 1000"

"$LOADGEN" -N -n 1000 -p "$tport" -f "$corpus" > "$WORK/nl.json" 2> "$WORK/nl.log" ||
    fail "loadgen, newline framing, failed: $(cat "$WORK/nl.log")"
sent 1000 "$WORK/nl.json"
wait_metric corral_input_messages_total input=tcp -ge 2000 ||
    fail "corrald counted $(metric corral_input_messages_total input=tcp) TCP messages of 2000"

"$LOADGEN" -U -r 20000 -n 1000 -p "$uport" -f "$corpus" > "$WORK/udp.json" 2> "$WORK/udp.log" ||
    fail "loadgen over UDP failed: $(cat "$WORK/udp.log")"
sent 1000 "$WORK/udp.json"
wait_metric corral_input_messages_total input=udp -ge 1000 ||
    fail "corrald counted $(metric corral_input_messages_total input=udp) UDP messages of 1000"

# not one more either, and every message was a whole, parsed one
[ "$(metric corral_input_messages_total input=tcp)" -eq 2000 ] ||
    fail "TCP: $(metric corral_input_messages_total input=tcp) messages counted, 2000 sent"
[ "$(metric corral_input_messages_total input=udp)" -eq 1000 ] ||
    fail "UDP: $(metric corral_input_messages_total input=udp) messages counted, 1000 sent"
wait_metric corral_messages_parsed_total -ge 3000 || fail "not every message parsed"
[ "$(metric corral_input_truncated_total input=tcp)" -le 0 ] || fail "truncated TCP messages"
stop_corrald
echo "ok: loadgen's 3000 messages (TCP octet counting over 2 connections, newline, UDP) all counted by corrald"
