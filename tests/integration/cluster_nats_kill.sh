#!/bin/sh
# One of the three clustered nats-server processes killed (kill -9) under
# load: three corrald nodes take a steady stream of SSH login failures,
# spread over the three, from 240 addresses, each reaching its fifth failure
# (a brute force alert, routed to an exec executor) in one of rounds 5 to
# 12; the server that leads the leases' bucket is killed after round 6 and
# restarted after round 9.  Leases renewed late move partitions, and their
# new owners replay the stream: every alert still reaches the exec script
# exactly once (the work queue drops the replay's second publish of an
# alert id), and none is missing from the nodes' outputs.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
GROUPS_N=8
PER_GROUP=30
ADDRS=$((GROUPS_N * PER_GROUP))

record_script CORRAL_CORRAL_EVENT CORRAL_USRACCT_DEVICE CORRAL_CORRAL_CLUSTER_ID
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'" max-children="8"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'

start_nats
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
start_node 3 c "$RULES" "$EXEC"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

# round R NODE: the failures of round R that go to node NODE (1..3): group G's
# addresses fail in rounds G+1..G+5, each address through a node of its own per round
round() {
    python3 - "$1" "$2" "$GROUPS_N" "$PER_GROUP" <<'PY'
import sys, time
r, node, groups, per = (int(a) for a in sys.argv[1:])
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
for g in range(groups):
    k = r - g  # this group's failure number in round r
    if not 1 <= k <= 5:
        continue
    for i in range(per):
        if (i + r) % 3 + 1 != node:
            continue
        print("%s web%d sshd[%d]: Failed password for u%d_%d from 198.18.%d.%d port %d ssh2"
              % (stamp, i % 5, 1000 + r, g, i, g, i + 1, 40000 + r))
PY
}
send_round() {
    for _k in 1 2 3; do
        round "$1" "$_k" > "$WORK/round$1.$_k"
        as_node "$_k" send_tcp_file "$(as_node "$_k" input_port tcp)" "$WORK/round$1.$_k"
    done
}

# the server whose JetStream leads the leases' bucket (its log says so), else n1
leases_leader() {
    for _i in 1 2 3; do
        if grep -q "new stream leader for .*KV_corraltest-leases" "$WORK/nats$_i.log"; then
            echo "$_i"
            return
        fi
    done
    echo 1
}

for r in 1 2 3 4 5 6; do send_round "$r"; done
VICTIM=$(leases_leader)
eval "VICTIM_PID=\$NATS_PID_$VICTIM"
kill -KILL "$VICTIM_PID"
wait "$VICTIM_PID" 2>/dev/null
untrack "$VICTIM_PID"
echo "killed nats-server n$VICTIM"
for r in 7 8 9; do send_round "$r"; done
start_nats_server "$VICTIM"
echo "restarted nats-server n$VICTIM"
for r in 10 11 12; do send_round "$r"; done

delivered() {
    count_matching "$WORK/delivered" '^ssh.bruteforce.alert '
}
all_delivered() {
    [ "$(delivered)" -ge "$ADDRS" ]
}
# nothing in flight: every publish to the work queue acknowledged, every alert pulled ended
quiet() {
    for _k in 1 2 3; do
        [ "$(node_metric "$_k" corral_cluster_alerts_published_total)" = \
          "$(node_metric "$_k" corral_cluster_alerts_stored_total)" ] || return 1
        [ "$(node_metric "$_k" corral_cluster_alerts_pulled_total)" = \
          "$(node_metric "$_k" corral_cluster_alerts_acked_total)" ] || return 1
    done
}
wait_until all_delivered || fail "$(delivered) of $ADDRS alerts delivered"
wait_balanced 1 2 3 || fail "the partitions were not shared out again"
wait_until quiet || fail "alerts still in flight"

python3 - "$WORK" "$ADDRS" <<'PY' || fail "an alert lost or delivered twice"
import collections, json, sys
work, n = sys.argv[1], int(sys.argv[2])
got = collections.Counter(l.split()[1] for l in open(work + "/delivered")
                          if l.startswith("ssh.bruteforce.alert "))
twice = {a: c for a, c in got.items() if c > 1}
print("delivered: %d alerts, %d addresses, %d more than once"
      % (sum(got.values()), len(got), len(twice)))
assert not twice, sorted(twice.items())[:10]
assert len(got) == n, len(got)
out = set()
for node in "abc":
    try:
        for line in open("%s/%s.json" % (work, node)):
            m = json.loads(line)
            if m.get("corral.event") == "ssh.bruteforce.alert":
                out.add(m["usracct.device"])
    except FileNotFoundError:
        pass
assert out == set(got), "generated but not delivered, or the other way: %s" % sorted(out ^ set(got))[:10]
PY
for k in 1 2 3; do
    echo "node $k: suppressed $(node_metric "$k" corral_cluster_replay_suppressed_total)," \
        "acquired $(node_metric "$k" corral_cluster_acquired_total)," \
        "alerts published $(node_metric "$k" corral_cluster_alerts_published_total)," \
        "pulled $(node_metric "$k" corral_cluster_alerts_pulled_total)," \
        "ingest publish failures $(node_metric "$k" corral_cluster_publish_failed_total)"
done
echo "ok: every alert delivered once with n$VICTIM killed and restarted"
