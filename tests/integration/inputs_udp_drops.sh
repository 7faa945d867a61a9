#!/bin/sh
# Datagrams the kernel drops are counted and logged, never lost silently:
# corrald is stopped (SIGSTOP: a loop that cannot read, as a long stall
# would make it), a burst larger than its receive buffer is sent, and once
# it runs again every datagram is either received or in
# corral_input_kernel_drops_total.
. "$(dirname "$0")/corrald_lib.sh"
need python3

inputs_config "$WORK/corrald.conf" "" '<udp listen="127.0.0.1:0" name="udp"/>'
start_corrald udp "$WORK/corrald.conf"
port=$(input_port udp)
[ "$(metric corral_input_kernel_drops_total input=udp)" = 0 ] || fail "drops before any traffic"
# the receive buffer, from the log: the burst is twice as many bytes in 1000-byte datagrams
kib=$(sed -n 's/.*udp: receive buffer \([0-9]*\) KiB.*/\1/p' "$CORRALD_LOG" | tail -n 1)
[ -n "$kib" ] || fail "receive buffer size not logged"
n=$((kib * 2 * 1024 / 1000 + 2000))
kill -STOP "$CORRALD_PID"
python3 - "$port" "$n" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = b"<13>Dec  4 12:00:00 h t: seq 0 " + b"x" * 968
for i in range(int(sys.argv[2])):
    s.sendto(payload, ("127.0.0.1", int(sys.argv[1])))
PY
kill -CONT "$CORRALD_PID"
accounted() {
    [ $(($(metric corral_input_messages_total input=udp) + $(metric corral_input_kernel_drops_total input=udp))) -eq "$n" ]
}
wait_until accounted || fail "of $n datagrams, $(metric corral_input_messages_total input=udp) received and $(metric corral_input_kernel_drops_total input=udp) counted as dropped"
[ "$(metric corral_input_kernel_drops_total input=udp)" -gt 0 ] || fail "no drop counted"
wait_log "udp: the kernel dropped [0-9]* datagrams" || fail "drops not logged"
got=$(metric corral_input_messages_total input=udp)
stop_corrald
echo "ok: $n datagrams: $got received, the rest counted as kernel drops"
