#!/bin/sh
# A node dies with alerts it pulled from the cluster's work queue and has
# not delivered: node a's exec program hangs (its deliveries never end),
# nodes b and c record.  Brute force alerts from 30 addresses, sent to
# all three nodes, go to the work queue; once node a has pulled some, it is
# killed (kill -9).  What it had pulled and not acknowledged is delivered
# again after the ack wait (30 s), by b or c: the exec scripts of b and c
# run once for each of the 30 alerts.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
ADDRS=30

cat > "$WORK/hang.sh" <<EOF
#!/bin/sh
echo \$\$ >> "$WORK/hung"
exec sleep 600
EOF
record_script CORRAL_CORRAL_EVENT CORRAL_USRACCT_DEVICE
chmod 755 "$WORK/hang.sh"
exec_of() {
    echo '<executors><exec name="run" program="'"$WORK/$1"'" timeout="1h" max-children="2"/></executors>
  <routes><route tag="corral.alert" to="run"/></routes>'
}

start_nats
start_node 1 a "$RULES" "$(exec_of hang.sh)"
start_node 2 b "$RULES" "$(exec_of record.sh)"
start_node 3 c "$RULES" "$(exec_of record.sh)"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

# five failures from each address
python3 - "$ADDRS" > "$WORK/lines" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
for k in range(5):
    for i in range(int(sys.argv[1])):
        print("%s web%d sshd[%d]: Failed password for u%d from 198.18.7.%d port %d ssh2"
              % (stamp, i % 3, 900 + k, i, i + 1, 40000 + k))
PY
# every address's lines through one node, in order: split by address, not by line
python3 - "$WORK" <<'PY'
import sys
work = sys.argv[1]
lines = open(work + "/lines").read().splitlines()
outs = [open("%s/lines.%d" % (work, k), "w") for k in (1, 2, 3)]
for l in lines:
    i = int(l.split(" from 198.18.7.")[1].split()[0])
    outs[i % 3].write(l + "\n")
PY
for k in 1 2 3; do
    as_node "$k" send_tcp_file "$(as_node "$k" input_port tcp)" "$WORK/lines.$k"
done

# node a's exec program runs: it holds alerts it will never deliver
wait_until test -s "$WORK/hung" || fail "node a delivers nothing"
PULLED=$(node_metric 1 corral_cluster_alerts_pulled_total)
as_node 1 kill_corrald
# its exec children, in sessions of their own
for p in $(cat "$WORK/hung"); do kill -KILL "$p" 2>/dev/null; done
echo "killed node a with $PULLED alerts pulled, none delivered"

delivered() {
    count_matching "$WORK/delivered" '^ssh.bruteforce.alert '
}
all_delivered() {
    [ "$(delivered)" -ge "$ADDRS" ]
}
quiet() {
    for _k in 2 3; do
        [ "$(node_metric "$_k" corral_cluster_alerts_pulled_total)" = \
          "$(node_metric "$_k" corral_cluster_alerts_acked_total)" ] || return 1
    done
}
wait_until all_delivered || fail "$(delivered) of $ADDRS alerts delivered"
wait_until quiet || fail "alerts still in flight"
python3 - "$WORK" "$ADDRS" <<'PY' || fail "an alert lost or delivered twice"
import collections, sys
work, n = sys.argv[1], int(sys.argv[2])
got = collections.Counter(l.split()[1] for l in open(work + "/delivered")
                          if l.startswith("ssh.bruteforce.alert "))
assert len(got) == n, len(got)
assert all(c == 1 for c in got.values()), [a for a, c in got.items() if c > 1]
PY
echo "ok: the $PULLED alerts node a held were delivered by the others, each once"
