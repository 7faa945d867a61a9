#!/bin/sh
# The queue to the worker threads (<engine workers="2" queue="1024"/>: a
# ring of 4 batches of 256) takes a burst of 700 datagrams on a unix-dgram
# input whole, burst after burst, while the workers are busy with the
# shipped rules: none is dropped (corral_engine_dropped_total stays 0) and
# every one is received.  The loop hands a batch to the workers when it is
# full, and one that is not full only while none is with them; so at most
# one part-filled batch is ever out and 700 always fits.  Handing over
# whatever had been read at every loop iteration, the ring filled with small
# batches and about 1,000 of 14,000 were dropped with the queue mostly empty.
. "$(dirname "$0")/corrald_lib.sh"
need python3

RULES=$top_srcdir/rules
DLOG=$WORK/log.sock
BURST=700
BURSTS=20
inputs_config "$WORK/corrald.conf" 'max-message-size="1k"' "
    <unix-dgram path=\"$DLOG\" name=\"dgram\"/>" '  <engine workers="2" queue="1024"/>'
start_corrald corrald "$WORK/corrald.conf"

# a burst goes once the one before has come back from the workers (counted
# received, which counts the dropped too, and nothing queued): its pace is
# corrald's, not a timer's.
# A connected unix-dgram sender blocks while corrald's socket is full, so the
# kernel drops nothing.
done_with() {
    [ "$(metric corral_messages_received_total)" -ge "$1" ] && [ "$(metric corral_engine_queued)" = 0 ]
}
burst=0
while [ $burst -lt $BURSTS ]; do
    python3 - "$DLOG" $((burst * BURST)) $BURST <<'PY' || fail "datagram sender"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(sys.argv[1])
first, n = int(sys.argv[2]), int(sys.argv[3])
for i in range(first, first + n):
    s.send(b"<38>Dec  3 10:00:00 web%d sshd[%d]: Failed password for root from 10.0.%d.%d port 22 ssh2"
           % (i % 7, 1000 + i % 50, i % 200, i % 250))
PY
    burst=$((burst + 1))
    wait_until done_with $((burst * BURST)) || fail "burst $burst not taken: $(metric corral_engine_queued) queued"
done
dropped=$(metric corral_engine_dropped_total)
echo "received $(metric corral_messages_received_total), dropped $dropped, in $(metric corral_engine_batches_total) batches"
[ "$dropped" = 0 ] || fail "$dropped datagrams dropped with at most $BURST queued"
# and each one came back from the workers to the output
written() {
    [ "$(count_matching "$OUT" '"MESSAGE":"Failed password for root from')" -ge $((BURST * BURSTS)) ]
}
wait_until written ||
    fail "the output holds $(count_matching "$OUT" '"MESSAGE":"Failed password for root from') of $((BURST * BURSTS))"
[ "$(count_matching "$OUT" '"MESSAGE":"Failed password for root from')" = $((BURST * BURSTS)) ] ||
    fail "the output holds more than was sent"
stop_corrald
echo "ok: bursts that fit the engine queue are taken whole"
