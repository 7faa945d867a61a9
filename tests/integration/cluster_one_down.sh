#!/bin/sh
# A cluster that starts while one of its three nats-server processes is
# down (the stream and buckets, 3 replicas, made by an earlier run): a partition whose consumer cannot be created at once (JetStream still
# electing the stream's or the metadata leader) is retried by the node that
# took its lease, not given back.  Every partition gets an owner and keeps
# it once the nodes are balanced (no lease acquired, released or lost after),
# and every message is correlated.  Then the third server
# comes back; the messages sent after it are correlated too.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml

# N failed logins, each from another address: one context each, over every partition
fail_lines() {
    python3 - "$1" "$2" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
for k in range(int(sys.argv[1])):
    print("%s web%d sshd[%d]: Failed password for root from 198.51.%d.%d port %d ssh2"
          % (stamp, k % 7, 500 + k, int(sys.argv[2]), 1 + k, 40000 + k))
PY
}

start_nats
# an earlier run made the stream and the buckets (JetStream places no new 3-replica
# stream on two servers)
start_node 1 a "$RULES"
as_node 1 wait_metric corral_cluster_partitions_owned -eq 16 || fail "node a owns nothing"
as_node 1 stop_corrald
mv "$WORK/a.log" "$WORK/a-first.log"
kill -TERM "$NATS_PID_3"
wait "$NATS_PID_3" 2>/dev/null
untrack "$NATS_PID_3"
echo "stopped nats-server 3"

start_node 1 a "$RULES"
start_node 2 b "$RULES"
start_node 3 c "$RULES"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

sum() {
    _s=0
    for _k in 1 2 3; do _s=$((_s + $(node_metric "$_k" "$1"))); done
    echo "$_s"
}
# a partition whose consumer was not created at once is kept and asked for again: never
# given back for it (each creation fails with a chance of one in three: an ordered consumer
# is placed on one of the stream's three servers, the stopped one included)
cat "$WORK/a.log" "$WORK/b.log" "$WORK/c.log" | grep "cannot read it" &&
    fail "partitions given back because their consumer was not created at once"
# while the streams' leaders are elected again on the two servers left, a lease may not be
# renewed in time; from here on, every partition keeps its owner
leases() {
    echo "$(sum corral_cluster_acquired_total)/$(sum corral_cluster_released_total)/$(sum corral_cluster_lost_total)"
}
LEASES=$(leases)
echo "leases acquired/released/lost once balanced: $LEASES"
no_churn() {
    [ "$(leases)" = "$LEASES" ] || fail "leases moved: acquired/released/lost $LEASES, then $(leases)"
    ! cat "$WORK/a.log" "$WORK/b.log" "$WORK/c.log" | grep "cannot read it" ||
        fail "partitions given back because their consumer was not created at once"
}

fail_lines 200 1 > "$WORK/first"
as_node 2 send_tcp_file "$(as_node 2 input_port tcp)" "$WORK/first"
consumed() {
    [ "$(sum corral_cluster_consumed_total)" -ge "$1" ]
}
wait_until consumed 200 || fail "not every message was correlated ($(sum corral_cluster_consumed_total) of 200)"
no_churn
echo "retried consumers: $(sum corral_cluster_subscribe_retries_total)"

start_nats_server 3
wait_until nats_ready 3 && nats_alive 3 || fail "nats-server 3 did not start again"
echo "restarted nats-server 3"
fail_lines 200 2 > "$WORK/second"
as_node 3 send_tcp_file "$(as_node 3 input_port tcp)" "$WORK/second"
wait_until consumed 400 || fail "not every message was correlated ($(sum corral_cluster_consumed_total) of 400)"
balanced 1 2 3 || fail "the partitions moved"
no_churn
for k in 3 2 1; do as_node "$k" stop_corrald; done
echo "ok: one NATS server of three down at the start: every partition owned and kept, 400 messages"
