#!/bin/sh
# inputs_many: 2000 concurrent TCP connections (and 500 unix-stream ones).
#
# python3 opens them all, waits until corrald's stats count them open
# (corral_input_connections_active), then sends five messages on each,
# interleaved across connections, every message cut in two writes.  All
# 12500 must arrive, in order per connection, classified (all from one
# address: max-connections-per-peer is raised to match).  corrald raises
# its open-files limit to what max-connections needs; the test is skipped
# when the hard limit cannot allow 2000 connections.

. "$(dirname "$0")/corrald_lib.sh"
need python3
SEND="python3 $HERE/inputs_send.py"

hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 2600 ]; then
    echo "$TEST: open files hard limit $hard is below 2600, skipped"
    exit 77
fi

inputs_config "$WORK/corrald.conf" 'max-message-size="64k" max-connections="3000" max-connections-per-peer="3000" idle-timeout="2m"' "
    <tcp listen=\"127.0.0.1:0\" name=\"tcp\"/>
    <unix-stream path=\"$WORK/stream.sock\" name=\"unix\"/>"
start_corrald corrald "$WORK/corrald.conf"
PORT=$(input_port tcp)

$SEND stream "tcp:127.0.0.1:$PORT" --conns 1-2000 --per 5 --expect-active "$(stats_port)" tcp ||
    fail "2000 TCP connections"
$SEND stream "unix:$WORK/stream.sock" --conns 3001-3500 --per 5 --framing octet --expect-active "$(stats_port)" unix ||
    fail "500 unix-stream connections"
wait_lines "$OUT" 12500 || fail "only $(check lines "$OUT") of 12500 messages"
check seq "$OUT" --conns 1-2000 --per 5 || fail "TCP messages"
check seq "$OUT" --conns 3001-3500 --per 5 || fail "unix-stream messages"
[ "$(metric corral_input_connections_total input=tcp)" -eq 2000 ] || fail "connections counter"
[ "$(metric corral_input_rejected_total input=tcp)" -eq 0 ] || fail "connections rejected"
wait_metric corral_input_connections_active input=tcp -eq 0 ||
    fail "connections still counted open: $(metric corral_input_connections_active input=tcp)"
stop_corrald
echo "$TEST: ok ($(check lines "$OUT") messages)"
