#!/bin/sh
# Back-pressure between a cluster node's inputs and the stream: with the
# three nats-server processes stopped (SIGSTOP), publishes are not
# acknowledged; past max-in-flight="16" of them, datagrams are dropped and
# counted (corral_cluster_dropped_total) and the TCP input stops reading
# (its sender waits); once the servers go on (SIGCONT), every TCP message
# is published and acknowledged, none lost.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

start_nats
cluster_conf "$WORK/a.conf" a "$top_srcdir/rules/sshd.xml"
sed -i 's|lease="3s"|lease="3s" max-in-flight="16"|; s|<inputs>|<inputs><udp listen="127.0.0.1:0" name="udp"/>|' \
    "$WORK/a.conf"
start_corrald a "$WORK/a.conf"
NODE_PID_1=$CORRALD_PID NODE_LOG_1=$CORRALD_LOG NODE_NAME_1=a
wait_balanced 1 || fail "node a does not own the partitions"

CONTROL=$WORK/a.sock
# (a failure while they are stopped: the harness's SIGKILL ends them all the same)
resume() {
    for i in 1 2 3; do eval "kill -CONT \$NATS_PID_$i"; done
}
for i in 1 2 3; do eval "kill -STOP \$NATS_PID_$i"; done

# 40 datagrams: 16 in flight, 24 dropped
i=0
while [ $i -lt 40 ]; do
    send_udp "$(input_port udp)" "<13>$(date '+%b %e %H:%M:%S') h$i app: datagram $i"
    i=$((i + 1))
done
wait_metric corral_messages_received_total -eq 40 || fail "not every datagram was read"
[ "$(metric corral_cluster_published_total)" -eq 16 ] || fail "not 16 publishes in flight"
[ "$(metric corral_cluster_dropped_total)" -eq 24 ] || fail "not 24 datagrams dropped"

# 2000 lines over TCP: the input stops reading, nothing is dropped
python3 -c '
import time
for i in range(2000):
    print("<13>%s h%d app: line %d" % (time.strftime("%b %e %H:%M:%S"), i % 50, i))' > "$WORK/lines"
send_tcp_file "$(input_port tcp)" "$WORK/lines" &
sender=$!
track "$sender"
wait_log "cluster: queue full, stream inputs paused" || fail "the TCP input was not paused"
d=$(metric corral_cluster_dropped_total); [ "$d" -eq 24 ] || fail "$d dropped, not 24: a TCP message was"
resume
wait_exit "$sender" || fail "the sender failed"
wait_metric corral_cluster_acked_total -eq 2016 || fail "not every message acknowledged"
[ "$(metric corral_cluster_publish_failed_total)" -eq 0 ] || fail "publishes failed"
d=$(metric corral_cluster_dropped_total); [ "$d" -eq 24 ] || fail "$d dropped, not 24: a TCP message was"
stop_corrald
echo "ok: 24 of 40 datagrams dropped and counted at 16 in flight; 2000 TCP lines waited, none lost"
