#!/bin/sh
# hostile_conns: one client cannot deny service to the others.
#
#   A slow-loris peer (127.0.0.1) opens 25 TCP connections and dribbles a
#   byte of a never-ending line on each now and then.  max-connections 20,
#   max-connections-per-peer 15: 15 are accepted, 10 refused (counted).  A
#   second peer (127.0.0.2) then opens 8 connections and sends a message on
#   each: 5 fit, and 3 close the loris connections idle longest (counted as
#   evicted); all 8 messages arrive.  With a short idle-timeout (reload),
#   the loris connections are closed although bytes keep coming: only a
#   complete message is activity.
#
#   corrald runs with 256 open files.  400 idle /metrics connections do not
#   use them up: at most 16 are kept, each new one closing the oldest
#   (counted), so `corral ctl` and a scrape still get through.
#
#   A control connection that sends nothing is closed after <control
#   timeout> (1 s here), and counted.
. "$(dirname "$0")/corrald_lib.sh"
need python3

# 256 open files for corrald (and what it starts); the python clients raise
# their own soft limit back to the hard one
ulimit -Sn 256 || fail "cannot lower the open files limit"

config() {
    inputs_config "$WORK/corrald.conf" \
        "max-connections=\"20\" max-connections-per-peer=\"15\" idle-timeout=\"$1\"" \
        '    <tcp listen="127.0.0.1:0" name="tcp" framing="newline"/>' \
        "  <control socket=\"$WORK/control.sock\" timeout=\"1s\"/>"
}
config 1h
start_corrald corrald "$WORK/corrald.conf"
PORT=$(input_port tcp)
STATS=$(stats_port)

# ---- the slow loris: 25 connections, a byte on each every 0.2 s, for 120 s
# at most; $WORK/loris says how many of them corrald has closed so far
python3 - "$PORT" "$WORK/loris" <<'EOF' &
import os, resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port, state = int(sys.argv[1]), sys.argv[2]
socks = [socket.create_connection(('127.0.0.1', port)) for _ in range(25)]
for s in socks:
    s.setblocking(False)
line = b'<13>Jan  1 00:00:00 testhost loris: never ends ' + b'x' * 100000
closed, k, end = set(), 0, time.time() + 120
while time.time() < end:
    for i, s in enumerate(socks):
        if i in closed:
            continue
        try:
            if s.recv(1) == b'':
                closed.add(i)
                continue
        except BlockingIOError:
            pass
        except OSError:
            closed.add(i)
            continue
        try:
            s.send(line[k:k + 1])
        except OSError:
            closed.add(i)
    k += 1
    with open(state + '.tmp', 'w') as f:
        f.write('%d\n' % len(closed))
    os.rename(state + '.tmp', state)
    time.sleep(0.2)
EOF
LORIS=$!
track "$LORIS"
wait_metric corral_input_rejected_total input=tcp -eq 10 ||
    fail "loris: $(metric corral_input_rejected_total input=tcp) connections refused, want 10 (max-connections-per-peer 15)"
wait_metric corral_input_connections_active input=tcp -eq 15 ||
    fail "loris: $(metric corral_input_connections_active input=tcp) connections open, want 15"
grep -q 'tcp: 127.0.0.1 has 15 connections open, refusing another (max-connections-per-peer' \
    "$CORRALD_LOG" || fail "the per-peer refusal was not logged"

# ---- a second peer gets in: 8 connections from 127.0.0.2, one message each, kept open
python3 - "$PORT" "$WORK/peer2.go" <<'EOF' &
import os, socket, sys, time
port, go = int(sys.argv[1]), sys.argv[2]
socks = []
for c in range(8):
    s = socket.socket()
    s.bind(('127.0.0.2', 0))
    s.connect(('127.0.0.1', port))
    s.sendall(b'<13>Jan  1 00:00:00 testhost inputtest: conn=%d seq=0 second peer\n' % (500 + c))
    socks.append(s)
# held open until the test says so (or 120 s)
end = time.time() + 120
while not os.path.exists(go) and time.time() < end:
    time.sleep(0.1)
EOF
PEER2=$!
track "$PEER2"
wait_until check_has "$OUT" '^conn=50[0-7] seq=0 second peer' 8 ||
    fail "second peer: $(check count "$OUT" '^conn=50[0-7] ') of 8 messages arrived"
check seq "$OUT" --conns 500-507 --per 1 --sourceip 127.0.0.2 || fail "second peer's messages"
wait_metric corral_input_evicted_total input=tcp -eq 3 ||
    fail "$(metric corral_input_evicted_total input=tcp) connections evicted, want 3"
[ "$(metric corral_input_connections_active input=tcp)" -eq 20 ] ||
    fail "$(metric corral_input_connections_active input=tcp) connections open, want 20"
wait_until grep -q 'closing the one idle longest (127.0.0.1, ' "$CORRALD_LOG" ||
    fail "the eviction was not logged"

# ---- bytes are not activity: with idle-timeout 2s the loris loses all 25,
# although it goes on sending
config 2s
"$CORRAL" ctl -s "$WORK/control.sock" reload > "$WORK/reload.out" || fail "reload: $(cat "$WORK/reload.out")"
loris_closed() { [ "$(cat "$WORK/loris" 2>/dev/null)" = 25 ]; }
wait_until loris_closed || fail "loris: only $(cat "$WORK/loris") of 25 connections closed"
alive "$LORIS" || fail "the loris stopped sending before its connections were closed"
kill "$LORIS" 2>/dev/null
wait "$LORIS" 2>/dev/null
untrack "$LORIS"
touch "$WORK/peer2.go"
wait "$PEER2" || fail "second peer"
untrack "$PEER2"

# ---- 400 idle /metrics connections: corrald keeps 16, `corral ctl` and a scrape get in
python3 - "$STATS" "$WORK/http.go" "$WORK/http.ready" <<'EOF' &
import os, resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port, go, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
socks = []
for _ in range(400):
    s = socket.socket()
    s.settimeout(30)
    s.connect(('127.0.0.1', port))
    s.sendall(b'GET /metrics HTTP/1.0\r\n')  # never finished
    socks.append(s)
open(ready, 'w').close()
end = time.time() + 120
while not os.path.exists(go) and time.time() < end:
    time.sleep(0.1)
EOF
HTTP=$!
track "$HTTP"
wait_until test -e "$WORK/http.ready" || fail "400 /metrics connections not made"
"$CORRAL" ctl -s "$WORK/control.sock" stats > "$WORK/stats.out" ||
    fail "corral ctl stats failed with 400 idle /metrics connections"
grep -q '^corral_endpoint_evicted_total{endpoint="stats"} ' "$WORK/stats.out" ||
    fail "no corral_endpoint_evicted_total in: $(head -c 300 "$WORK/stats.out")"
evicted=$(awk '$1 == "corral_endpoint_evicted_total{endpoint=\"stats\"}" {print $2}' "$WORK/stats.out")
timed_out=$(awk '$1 == "corral_endpoint_timeouts_total{endpoint=\"stats\"}" {print $2}' "$WORK/stats.out")
[ $((evicted + timed_out)) -ge 384 ] ||
    fail "400 idle /metrics connections: $evicted evicted, $timed_out timed out; at most 16 may stay"
[ "$(metric corral_input_connections_active input=tcp)" -ge 0 ] || fail "no scrape with 400 idle /metrics connections"
grep -q 'stats: 16 connections open, closing the oldest for a new one' "$CORRALD_LOG" ||
    fail "the /metrics eviction was not logged"
touch "$WORK/http.go"
wait "$HTTP" || fail "the /metrics clients"
untrack "$HTTP"

# ---- an idle control connection is closed after its timeout (1 s)
before=$(metric corral_endpoint_timeouts_total endpoint=control)
python3 - "$WORK/control.sock" <<'EOF' || fail "idle control connection"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(60)
try:
    d = s.recv(10)
except ConnectionResetError:
    d = b''
if d != b'':
    sys.exit('the idle control connection got %r' % d)
EOF
wait_metric corral_endpoint_timeouts_total endpoint=control -ge $((before + 1)) ||
    fail "the control timeout was not counted"
wait_log 'control: a connection was not done within 1.0 s, closed' ||
    fail "the control timeout was not logged"
"$CORRAL" ctl -s "$WORK/control.sock" stats > /dev/null || fail "corral ctl after the timeout"

corrald_alive
stop_corrald
echo "$TEST: ok"
