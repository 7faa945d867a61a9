#!/bin/sh
# A checkpoint larger than one NATS message may be (max_payload, 1 MB by
# default): one partition holds 3500 contexts (two long lines each, an
# hour's timeout), node a owns it and checkpoints them in chunks; it is
# killed (kill -9) once a checkpoint covers every message, the stream's
# retention (60 s) then removes the messages, and node b, started only
# then, takes the partition over: it has nothing to replay, so only the
# checkpoint can give it the contexts.  The third line of each context
# (sent to b) must close all 3500 of them with count 3.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

N=3500
PARTITIONS=1
CLUSTER_ATTRS='retention="60s"'
# the retention, then a lease, on a loaded machine
WAIT_TIMEOUT=240

cat > "$WORK/rules.xml" <<'XML'
<patterndb version="6" pub_date="2026-12-06">
  <ruleset name="big" id="big">
    <patterns><pattern>big</pattern></patterns>
    <rules>
      <rule provider="test" id="big-item" class="system" context-id="big-${n}"
            context-timeout="3600" context-scope="global">
        <patterns><pattern>item @NUMBER:n@ @ANYSTRING:pad@</pattern></patterns>
        <actions>
          <action condition='"$(context-length)" == "3"'>
            <message>
              <values>
                <value name="corral.event">big.done</value>
                <value name="MESSAGE">an item seen three times</value>
              </values>
            </message>
          </action>
        </actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
XML

# lines FIRST LAST: line FIRST..LAST of every context
lines() {
    python3 - "$1" "$2" "$N" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
pad = "x" * 160
for k in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    for n in range(int(sys.argv[3])):
        print("%s bighost big[%d]: item %d %s line %d" % (stamp, 100 + k, n, pad, k))
PY
}

# js SUBJECT JSON: the answer of the JetStream API (user corral), as JSON on stdout
js() {
    python3 - "$NATS_PORT_1" "$(cat "$WORK/nats-password")" "$1" "$2" <<'PY'
import json, socket, sys
port, pw, subj, body = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].encode()
s = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
f = s.makefile("rb")
f.readline()  # INFO
s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"user":"corral","pass":"%s"}\r\n' % pw.encode())
s.sendall(b"SUB _INBOX.ckpt 1\r\nPUB %s _INBOX.ckpt %d\r\n%s\r\nPING\r\n" % (subj.encode(), len(body), body))
while True:
    line = f.readline()
    if not line:
        sys.exit(1)
    if line.startswith(b"MSG "):
        n = int(line.split()[-1])
        print(f.read(n + 2)[:n].decode())
        break
    if line.startswith(b"-ERR"):
        sys.exit(1)
PY
}
# stream_state FIELD: a field of the ingest stream's state (first_seq, last_seq, messages)
stream_state() {
    js '$JS.API.STREAM.INFO.corraltest_in' '' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["state"][sys.argv[1]])' "$1"
}
# kv KEY: the value of KEY in the state bucket (empty: none)
kv() {
    js '$JS.API.STREAM.MSG.GET.KV_corraltest-state' \
        "{\"last_by_subj\": \"\$KV.corraltest-state.$1\"}" | python3 -c '
import base64, json, sys
m = json.load(sys.stdin).get("message")
try:
    sys.stdout.buffer.write(base64.b64decode(m["data"]) if m and m.get("data") else b"")
except BrokenPipeError:
    pass'
}
# covered SEQ: partition 0's checkpoint (its current chunks) covers the stream up to SEQ (the
# first line of its first chunk); sets CKPT_BYTES and CKPT_CHUNKS
covered() {
    _head=$(kv ckpt.0)
    case $_head in
    "chunks 1"*) ;;
    *) return 1 ;;
    esac
    _slot=$(echo "$_head" | sed -n 2p | cut -d' ' -f1)
    CKPT_BYTES=$(echo "$_head" | sed -n 2p | cut -d' ' -f3)
    CKPT_CHUNKS=$(echo "$_head" | sed -n 2p | cut -d' ' -f2)
    [ "$(kv "ckpt.0.$_slot.0" | head -n 1)" -ge "$1" ]
}
pruned() {
    [ "$(stream_state first_seq)" -gt "$1" ]
}

start_nats
start_node 1 a "$WORK/rules.xml"
wait_balanced 1 || fail "node a does not own the partition"
lines 1 2 > "$WORK/first"
as_node 1 send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/first"
as_node 1 wait_metric corral_cluster_consumed_total -ge $((2 * N)) || fail "node a did not consume"
LAST=$(stream_state last_seq)
echo "stream up to $LAST"
if WAIT_TIMEOUT=60 wait_until covered "$LAST"; then
    echo "checkpoint: $CKPT_BYTES bytes in $CKPT_CHUNKS chunks"
    [ "$CKPT_BYTES" -gt 1000000 ] || fail "the checkpoint is only $CKPT_BYTES bytes: not a test of chunks"
    [ "$CKPT_CHUNKS" -gt 1 ] || fail "the checkpoint is in one chunk"
else
    echo "no checkpoint covers the stream up to $LAST"
fi
as_node 1 kill_corrald
wait_until pruned "$LAST" || fail "the stream's retention did not remove the messages"
echo "stream now from $(stream_state first_seq)"

start_node 2 b "$WORK/rules.xml"
wait_balanced 2 || fail "node b did not take the partition"
lines 3 3 > "$WORK/rest"
as_node 2 send_tcp_file "$(as_node 2 input_port tcp)" "$WORK/rest"
as_node 2 wait_metric corral_cluster_consumed_total -ge "$N" || fail "node b did not consume"
done_count() {
    count_matching "$WORK/b.json" '"corral.event":"big.done"'
}
all_done() {
    [ "$(done_count)" -ge "$N" ]
}
wait_until all_done || fail "$(done_count) contexts closed on node b, not $N (checkpoint lost)"
[ "$(done_count)" -eq "$N" ] || fail "$(done_count) contexts closed, not $N"
[ "$(grep '"corral.event":"big.done"' "$WORK/b.json" | grep -o '"big-[0-9]*"' | sort -u |
    grep -c "")" -eq "$N" ] || fail "not every context closed once"
[ "$(node_metric 2 corral_cluster_checkpoints_damaged_total)" = 0 ] || fail "a checkpoint damaged"
as_node 2 stop_corrald
echo "ok: $N contexts of a $CKPT_BYTES-byte checkpoint handed over"
