#!/bin/sh
# A message stored in a partition after later ones of the node that
# received it (its publish sent again once its acknowledgement did not
# come: the server it went to died) is correlated out of that order; the
# owner counts it (corral_cluster_out_of_order_total) and says so.  Here:
# a line a node published, recorded off the wire, published again under
# the ids a publisher gives its 9th and then its 5th message, then its
# 12th: the second is late, the others are not.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
start_nats
python3 "$HERE/nats_copy.py" record "127.0.0.1:$NATS_PORT_1" corral "$WORK/nats-password" \
    'corraltest.in.>' "$WORK/recorded" "$WORK/record-ready" &
track "$!"
wait_until test -f "$WORK/record-ready" || fail "the recorder did not subscribe"
start_node 1 a "$RULES"
start_node 2 b "$RULES"
wait_balanced 1 2 || fail "the partitions were not shared out"

late_total() {
    echo $(($(node_metric 1 corral_cluster_out_of_order_total) + \
        $(node_metric 2 corral_cluster_out_of_order_total)))
}
consumed() {
    [ "$(($(node_metric 1 corral_cluster_consumed_total) + \
        $(node_metric 2 corral_cluster_consumed_total)))" -ge "$1" ]
}

echo "<13>$(date '+%b %e %H:%M:%S') web7 app[1]: hello" > "$WORK/line"
send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/line"
wait_until has_lines "$WORK/recorded" 1 || fail "the recorder saw no publish"
wait_until consumed 1 || fail "the line was not correlated"
[ "$(late_total)" -eq 0 ] || fail "a message in order counted as out of order"

# the recorded publish under other ids of one publisher: 9, then 5 (late), then 12
python3 - "$WORK/recorded" "$WORK/crafted" <<'PY'
import json, re, sys
m = json.loads(open(sys.argv[1]).readline())
assert "Nats-Msg-Id:" in m["headers"], m["headers"]
with open(sys.argv[2], "w") as f:
    for n in (9, 5, 12):
        c = dict(m, headers=re.sub(r"Nats-Msg-Id: [^\r]*", "Nats-Msg-Id: test-node-1a2b-%d" % n,
                                   m["headers"]))
        f.write(json.dumps(c) + "\n")
PY
python3 "$HERE/nats_copy.py" publish "127.0.0.1:$NATS_PORT_2" corral "$WORK/nats-password" \
    "$WORK/crafted" > "$WORK/answers" || fail "the crafted messages were not published"
[ "$(grep -c '"seq"' "$WORK/answers")" -eq 3 ] || fail "JetStream did not store the three: $(cat "$WORK/answers")"
wait_until consumed 4 || fail "the three were not correlated"
[ "$(late_total)" -eq 1 ] || fail "$(late_total) messages counted out of order, not 1"
has_matching "$WORK/a.log" 'correlated out of their order' ||
    has_matching "$WORK/b.log" 'correlated out of their order' || fail "the owner did not say so"
echo "ok: the one message stored after a later one of its publisher is counted and logged"

# every metric a cluster node serves is documented in corrald(8)
ncluster=0
for name in $(as_node 1 metrics_text | sed -n 's/^# HELP \([a-z_]*\) .*/\1/p'); do
    grep -q "^\.B $name\$" "$top_srcdir/doc/corrald.8" || fail "metric $name is not in doc/corrald.8"
    case $name in corral_cluster_*) ncluster=$((ncluster + 1)) ;; esac
done
[ "$ncluster" -ge 20 ] || fail "only $ncluster corral_cluster_* metrics served"
echo "ok: every metric of a cluster node is in corrald(8) ($ncluster of the cluster's)"
