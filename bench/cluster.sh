#!/bin/sh
# Messages a second through a cluster of corrald nodes on this machine: three
# nats-server processes (JetStream, R3) and NODES corrald nodes (default 3)
# on loopback, as tests/integration/cluster_same.sh starts them; loghub's
# OpenSSH_2k.log repeated REPEAT times (default 50: 100,000 lines) is sent
# over TCP, split evenly over the nodes at once, and the time is measured
# from the first byte sent until every message has been correlated by the
# owner of its partition (the sum of corral_cluster_consumed_total).
# Then the same through one corrald without <cluster>, for comparison.
# Also measured:
#   - CPU per message: utime+stime (/proc/PID/stat) of every corrald and
#     nats-server process, before and after each run, over the messages;
#   - failover time: 4 failed logins of one address, the owner of their
#     partition killed (kill -9), the 5th sent to another node at once: from
#     the kill to the brute-force alert of the new owner (lease expiry, then
#     the checkpoint loaded and the stream replayed from it);
#   - checkpoints at CONTEXTS (default 100,000) open contexts, over
#     PARTITIONS partitions (default 16): a rule whose
#     context-id (and host) is unique per line and whose timeout is an hour, CONTEXTS
#     lines, then the checkpoints' size and the time taking them took
#     (corral_cluster_checkpoint_bytes and _seconds, summed over the nodes)
#     once every partition has checkpointed its last message.
#   top_srcdir=. top_builddir=build sh bench/cluster.sh
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/integration/corrald_lib.sh"
. "$top_srcdir/tests/integration/cluster_lib.sh"
WAIT_TIMEOUT=${WAIT_TIMEOUT:-600}
REPEAT=${REPEAT:-50}
NODES=${NODES:-3}
CONTEXTS=${CONTEXTS:-100000}
# 100,000 contexts over 16 partitions: checkpoints of 1.2-1.8 MB, each in 2 chunks
PARTITIONS=${PARTITIONS:-16}
export PARTITIONS
# the rules, and one that keeps a context per line open for an hour
RULES=$WORK/rules
mkdir -p "$RULES"
cp -r "$top_srcdir/rules/." "$RULES/"
cat > "$RULES/zz-bench-contexts.xml" <<'XML'
<patterndb version="6" pub_date="2026-12-06">
  <ruleset name="bench" id="bench-contexts">
    <patterns><pattern>bench</pattern></patterns>
    <rules>
      <rule provider="bench" id="bench-open" class="system" context-id="open-${n}"
            context-timeout="3600" context-scope="host">
        <patterns><pattern>bench-open @NUMBER:n@</pattern></patterns>
      </rule>
    </rules>
  </ruleset>
</patterndb>
XML
HZ=$(getconf CLK_TCK)

# cpu_ticks PID...: utime+stime of the processes, in clock ticks
cpu_ticks() {
    _t=0
    for _p in "$@"; do
        _t=$((_t + $(sed 's/^.*) //' "/proc/$_p/stat" | awk '{print $12 + $13}')))
    done
    echo "$_t"
}
# us_per_msg TICKS MESSAGES
us_per_msg() {
    echo "scale=1; $1 * 1000000 / $HZ / $2" | bc
}

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
node_pids() {
    for _k in $(seq 1 "$NODES"); do eval "echo \$NODE_PID_$_k"; done
}
nats_pids() {
    echo "$NATS_PID_1 $NATS_PID_2 $NATS_PID_3"
}
c0=$(cpu_ticks $(node_pids))
n0=$(cpu_ticks $(nats_pids))

sum_metric() {
    _c=0
    for _k in $(seq 1 "$NODES"); do
        # a node killed for the failover has nothing to say
        eval "alive \$NODE_PID_$_k" || continue
        _v=$(node_metric "$_k" "$1")
        case $_v in -1 | *.*) _v=0 ;; esac
        _c=$((_c + _v))
    done
    echo "$_c"
}
consumed() {
    [ "$(sum_metric corral_cluster_consumed_total)" -ge "$total" ]
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
c1=$(cpu_ticks $(node_pids))
n1=$(cpu_ticks $(nats_pids))
echo "cluster CPU per message: corrald $(us_per_msg $((c1 - c0)) "$total") us, nats-server $(us_per_msg $((n1 - n0)) "$total") us, together $(us_per_msg $((c1 - c0 + n1 - n0)) "$total") us"

# checkpoints at CONTEXTS open contexts
python3 -c '
import sys
for k in range(int(sys.argv[1])):
    print("<13>Dec  6 10:00:00 b%d bench: bench-open %d" % (k, k))' "$CONTEXTS" > "$WORK/contexts"
base=$(sum_metric corral_cluster_consumed_total)
t0=$(date +%s.%N)
k=1
split -n "l/$NODES" -d "$WORK/contexts" "$WORK/cpart"
senders=
for part in "$WORK"/cpart*; do
    as_node "$k" send_tcp_file "$(as_node "$k" input_port tcp)" "$part" &
    senders="$senders $!"
    k=$((k + 1))
done
for p in $senders; do wait "$p"; done
total=$((base + CONTEXTS))
wait_until consumed || fail "contexts: not all consumed"
t1=$(date +%s.%N)
echo "contexts: $CONTEXTS lines in $(echo "$t1 - $t0" | bc) s"
# every partition's last checkpoint covers its last message after two rounds (every 2 s)
sleep 5 # a figure, not a test
bytes=$(sum_metric corral_cluster_checkpoint_bytes)
secs=0
for k in $(seq 1 "$NODES"); do secs="$secs + $(node_metric "$k" corral_cluster_checkpoint_seconds)"; done
echo "checkpoints at $CONTEXTS open contexts: $bytes bytes over $PARTITIONS partitions ($(echo "$bytes / $CONTEXTS" | bc) bytes a context), taken in $(echo "$secs" | bc) s of event loop"
echo "checkpoints written: $(sum_metric corral_cluster_checkpoints_total)"

# failover: from kill -9 of a brute force's owner to the new owner's alert
ADDR=198.51.100.77
fail_lines() {
    python3 - "$1" "$2" "$ADDR" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
for k in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    print("%s victim sshd[%d]: Failed password for root from %s port %d ssh2"
          % (stamp, 700 + k, sys.argv[3], 40000 + k))
PY
}
owner_has() {
    as_node "$1" "$CORRAL" ctl -s "$WORK/node$1.sock" contexts | python3 -c '
import json, sys
sys.exit(not any(c["id"] == "ssh-bruteforce-'"$ADDR"'" and c["messages"] == 4
                 for c in json.load(sys.stdin)))'
}
find_owner() {
    for _k in $(seq 1 "$NODES"); do
        if owner_has "$_k"; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}
fail_lines 1 4 > "$WORK/first"
as_node 1 send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/first"
wait_until find_owner || fail "no owner of the brute force"
OWNER=$(find_owner)
OTHER=1
[ "$OWNER" = 1 ] && OTHER=2
fail_lines 5 5 > "$WORK/last"
alerts() {
    # the corpus gave alerts of its own: only this address's
    cat "$WORK"/node*.json 2>/dev/null | grep '"ssh.bruteforce.alert"' | grep -c "$ADDR"
}
has_alert() {
    [ "$(alerts)" -ge 1 ]
}
eval "kill -KILL \$NODE_PID_$OWNER"
t0=$(date +%s.%N)
eval "wait \$NODE_PID_$OWNER 2>/dev/null; untrack \$NODE_PID_$OWNER"
as_node "$OTHER" send_tcp_file "$(as_node "$OTHER" input_port tcp)" "$WORK/last"
wait_until has_alert || fail "no alert after the failover"
t1=$(date +%s.%N)
echo "failover: alert of the new owner $(echo "$t1 - $t0" | bc) s after kill -9 of the owner (lease 3 s)"
echo "checkpoints found damaged at the takeover: $(sum_metric corral_cluster_checkpoints_damaged_total)"
for k in $(seq 1 "$NODES"); do [ "$k" = "$OWNER" ] || as_node "$k" stop_corrald; done

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
total=$(grep -c "" "$WORK/corpus")
c0=$(cpu_ticks "$CORRALD_PID")
t0=$(date +%s.%N)
send_tcp_file "$(input_port tcp)" "$WORK/corpus"
wait_metric corral_messages_parsed_total -ge "$total" || fail "one: not all processed"
t1=$(date +%s.%N)
echo "one corrald (1 worker): $total messages in $(echo "$t1 - $t0" | bc) s: $(echo "$total / ($t1 - $t0)" | bc) msg/s"
c1=$(cpu_ticks "$CORRALD_PID")
echo "one corrald CPU per message: $(us_per_msg $((c1 - c0)) "$total") us"
stop_corrald
