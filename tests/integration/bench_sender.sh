#!/bin/sh
# bench/sender (the load generator of issue 13) against the real corrald, as
# a smoke test: 300 lines over 3 TCP connections (newline and octet-counting
# framing) and 3 UDP sockets; it reports what it sent, and corrald counts
# every message (UDP on loopback, far below the socket buffer).
. "$(dirname "$0")/corrald_lib.sh"
need python3
SENDER=$top_builddir/bench/sender
[ -x "$SENDER" ] || fail "$SENDER not built"

inputs_config "$WORK/corrald.conf" '' '
    <tcp listen="127.0.0.1:0" name="tcp"/>
    <udp listen="127.0.0.1:0" name="udp"/>'
start_corrald corrald "$WORK/corrald.conf"
PT=$(input_port tcp)
PU=$(input_port udp)

awk 'BEGIN { for (i = 0; i < 100; i++) printf "<13>Dec  4 10:00:00 h%d inputtest: sender seq=%d\n", i % 3, i }' \
    > "$WORK/corpus.log"
"$SENDER" -c 3 -t "127.0.0.1:$PT" -u "127.0.0.1:$PU" "$WORK/corpus.log" > "$WORK/sent" ||
    fail "sender failed: $(cat "$WORK/sent")"
grep -q '^tcp connections=3 messages=100 bytes=[0-9]* seconds=' "$WORK/sent" || fail "tcp report: $(cat "$WORK/sent")"
grep -q '^udp sockets=3 messages=100 bytes=[0-9]* failed=0 seconds=' "$WORK/sent" || fail "udp report: $(cat "$WORK/sent")"
"$SENDER" -o -r 2 -c 2 -t "127.0.0.1:$PT" "$WORK/corpus.log" > "$WORK/sent2" || fail "sender -o failed"
grep -q '^tcp connections=2 messages=200 ' "$WORK/sent2" || fail "tcp -o report: $(cat "$WORK/sent2")"
wait_metric corral_input_messages_total input=tcp -eq 300 || fail "corrald did not count 300 TCP messages"
wait_metric corral_input_messages_total input=udp -eq 100 || fail "corrald did not count 100 UDP messages"
# the receiver gets each connection's lines in corpus order (line i on connection i mod 3)
wait_until check_has "$OUT" 'seq=99' 3 || fail "messages not delivered"
"$SENDER" -t "127.0.0.1:1" "$WORK/corpus.log" > /dev/null 2>&1 && fail "a refused connection did not fail"
stop_corrald
echo "ok: bench/sender sent 300 TCP and 100 UDP messages, corrald counted them all"
