#!/bin/sh
# Messages a second through a cluster of corrald nodes on this machine: three
# nats-server processes (JetStream, R3) and NODES corrald nodes (default 3)
# on loopback, as tests/integration/cluster_same.sh starts them; loghub's
# OpenSSH_2k.log repeated REPEAT times (default 50: 100,000 lines) is sent
# over TCP, split evenly over the nodes at once, and the time is measured
# from the first byte sent until every message has been correlated by the
# owner of its partition (the sum of corral_cluster_consumed_total).
# Then the same through one corrald without <cluster>, for comparison.
#   top_srcdir=. top_builddir=build sh bench/cluster.sh
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/integration/corrald_lib.sh"
. "$top_srcdir/tests/integration/cluster_lib.sh"
WAIT_TIMEOUT=${WAIT_TIMEOUT:-600}
REPEAT=${REPEAT:-50}
NODES=${NODES:-3}
RULES=$top_srcdir/rules

i=0
while [ "$i" -lt "$REPEAT" ]; do
    cat "$top_srcdir/tests/data/loghub/OpenSSH_2k.log"
    i=$((i + 1))
done > "$WORK/corpus"
total=$(grep -c "" "$WORK/corpus")
split -n "l/$NODES" -d "$WORK/corpus" "$WORK/part"

start_nats
for n in $(seq 1 "$NODES"); do start_node "$n" "node$n" "$RULES"; done
wait_balanced $(seq 1 "$NODES") || fail "not balanced"

consumed() {
    _c=0
    for _k in $(seq 1 "$NODES"); do _c=$((_c + $(node_metric "$_k" corral_cluster_consumed_total))); done
    [ "$_c" -ge "$total" ]
}
t0=$(date +%s.%N)
k=1
senders=
for part in "$WORK"/part*; do
    as_node "$k" send_tcp_file "$(as_node "$k" input_port tcp)" "$part" &
    senders="$senders $!"
    k=$((k + 1))
done
for p in $senders; do wait "$p"; done
wait_until consumed || fail "not all consumed"
t1=$(date +%s.%N)
echo "cluster: $NODES nodes, $total messages in $(echo "$t1 - $t0" | bc) s: $(echo "$total / ($t1 - $t0)" | bc) msg/s"
for k in $(seq 1 "$NODES"); do as_node "$k" stop_corrald; done

cat > "$WORK/one.conf" <<XML
<corrald>
  <rules path="$RULES"/>
  <engine workers="1"/>
  <control socket="$WORK/one.sock"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs><file path="$WORK/one.json" format="json" select="generated"/></outputs>
</corrald>
XML
start_corrald one "$WORK/one.conf"
CONTROL=$WORK/one.sock
t0=$(date +%s.%N)
send_tcp_file "$(input_port tcp)" "$WORK/corpus"
wait_metric corral_messages_parsed_total -ge "$total" || fail "one: not all processed"
t1=$(date +%s.%N)
echo "one corrald (1 worker): $total messages in $(echo "$t1 - $t0" | bc) s: $(echo "$total / ($t1 - $t0)" | bc) msg/s"
stop_corrald
