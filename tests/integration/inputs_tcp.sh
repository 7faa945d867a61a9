#!/bin/sh
# inputs_tcp: corrald's TCP input with real clients, and bad ones.
#
# Three listeners: framing="auto" (the default), "octet-counting" and
# "newline"; limits: max-message-size 1k, max-connections 100, idle-timeout 3s.
#
#   logger -T, with and without --octet-count; loggen --stream (newline) and
#   loggen -P (RFC 5424, octet counting), four connections each;
#   python3: 20 connections at a time, every message cut in two writes at a
#   random point, newline (LF and CRLF, with an unterminated last line) and
#   octet counting; every message must arrive once, in order per
#   connection, classified.
#   Bad clients: three 10 MB lines at once (cut, the connection goes on, RSS
#   stays bounded); a malformed octet count (connection closed, counted);
#   random garbage (corrald keeps serving); a client that never sends (closed
#   after the idle timeout, its partial line delivered); connections beyond
#   max-connections-per-peer (refused, counted).

. "$(dirname "$0")/corrald_lib.sh"
need python3 logger loggen
SEND="python3 $HERE/inputs_send.py"

inputs_config "$WORK/corrald.conf" 'max-message-size="1k" max-connections="100" idle-timeout="3s"' "
    <tcp listen=\"127.0.0.1:0\" name=\"tcp-auto\"/>
    <tcp listen=\"127.0.0.1:0\" framing=\"octet-counting\" name=\"tcp-octet\"/>
    <tcp listen=\"127.0.0.1:0\" framing=\"newline\" name=\"tcp-newline\"/>"
start_corrald corrald "$WORK/corrald.conf"
PA=$(input_port tcp-auto)
PO=$(input_port tcp-octet)
PN=$(input_port tcp-newline)

# ---- well-behaved clients
logger -n 127.0.0.1 -P "$PA" -T -t inputtest "conn=0 seq=0 logger newline to auto" || fail logger
logger -n 127.0.0.1 -P "$PA" -T --octet-count -t inputtest "conn=0 seq=1 logger octet to auto" || fail logger
logger -n 127.0.0.1 -P "$PO" -T --octet-count --rfc5424 -t inputtest "conn=0 seq=2 logger octet" || fail logger
logger -n 127.0.0.1 -P "$PN" -T --rfc3164 -t inputtest "conn=0 seq=3 logger newline" || fail logger

$SEND stream "tcp:127.0.0.1:$PA" --conns 1-20 --per 50 || fail "sender 1-20"
$SEND stream "tcp:127.0.0.1:$PA" --conns 21-40 --per 50 --crlf --unterminated-last || fail "sender 21-40"
$SEND stream "tcp:127.0.0.1:$PA" --conns 41-60 --per 50 --framing octet || fail "sender 41-60"
$SEND stream "tcp:127.0.0.1:$PO" --conns 61-80 --per 50 --framing octet || fail "sender 61-80"
$SEND stream "tcp:127.0.0.1:$PN" --conns 81-100 --per 50 --unterminated-last || fail "sender 81-100"

# loggen's run id is its start second: each run starts in a second after the
# one the run before it ended in, so that runs stay apart
later_than() { [ "$(date +%s)" -gt "$1" ]; }
loggen --inet --stream --active-connections 4 -n 500 -r 5000 -Q 127.0.0.1 "$PA" >/dev/null 2>&1 || fail loggen
wait_until later_than "$(date +%s)" || fail "the clock stands still"
loggen --inet --stream -P --active-connections 4 -n 500 -r 5000 -Q 127.0.0.1 "$PO" >/dev/null 2>&1 || fail "loggen -P"
wait_until later_than "$(date +%s)" || fail "the clock stands still"
loggen --inet --stream -P --active-connections 4 -n 500 -r 5000 -Q 127.0.0.1 "$PA" >/dev/null 2>&1 || fail "loggen -P to auto"

n=$((4 + 100 * 50 + 12 * 500))
wait_lines "$OUT" $n || fail "only $(check lines "$OUT") of $n messages"
check seq "$OUT" --conns 0-0 --per 4 --sourceip 127.0.0.1 || fail "logger messages"
check seq "$OUT" --conns 1-100 --per 50 --host testhost --sourceip 127.0.0.1 || fail "python clients"
check loggen "$OUT" --groups 12 --per 500 || fail "loggen clients"
[ "$(metric corral_input_errors_total input=tcp-auto)" -eq 0 ] || fail "errors counted for good clients"

# ---- three 10 MB lines at once: cut at 1k, the rest skipped, memory bounded
rss0=$(rss_kb)
python3 - "$PA" "$PN" "$PO" <<'EOF' || fail "10 MB lines"
import socket, sys
pa, pn, po = (int(p) for p in sys.argv[1:4])
head = b'<13>Jan  1 00:00:00 testhost inputtest: conn=%d seq=%d '
chunk = b'x' * 65536
def frame(m):
    return b'%d ' % len(m) + m
socks = [socket.create_connection(('127.0.0.1', p)) for p in (pa, pn, po)]
socks[0].sendall(head % (200, 0) + b'normal\n' + head % (200, 1) + b'huge ')
socks[1].sendall(head % (201, 0) + b'normal\n' + head % (201, 1) + b'huge ')
big = head % (202, 1) + b'huge ' + chunk * 160
socks[2].sendall(frame(head % (202, 0) + b'normal') + b'%d ' % len(big) + head % (202, 1) + b'huge ')
for k in range(160):
    for s in socks:
        s.sendall(chunk)
socks[0].sendall(b'\n' + head % (200, 2) + b'after\n')
socks[1].sendall(b'\n' + head % (201, 2) + b'after\n')
socks[2].sendall(frame(head % (202, 2) + b'after'))
for s in socks:
    s.close()
EOF
# seq=2 is the last message of each of the three connections
wait_until check_has "$OUT" '^conn=20[0-2] seq=2 after' 3 || fail "messages after the 10 MB lines"
rss1=$(rss_kb)
echo "$TEST: RSS before the 10 MB lines ${rss0} kB, after ${rss1} kB"
[ $((rss1 - rss0)) -lt 8192 ] || fail "RSS grew from $rss0 kB to $rss1 kB for 3 x 10 MB lines"
check seq "$OUT" --conns 200-202 --per 3 || fail "messages around the 10 MB lines"
for c in 200 201 202; do
    len=$(check field "$OUT" "^conn=$c seq=1 huge" MESSAGE-LEN)
    [ "$len" != "<none>" ] && [ "$len" -lt 1024 ] || fail "conn=$c: 10 MB message not cut: $len"
done
[ "$(metric corral_input_truncated_total input=tcp-newline)" -ge 1 ] || fail "truncated counter (newline)"
[ "$(metric corral_input_truncated_total input=tcp-octet)" -ge 1 ] || fail "truncated counter (octet counting)"

# ---- a malformed octet count closes the connection, and is counted
python3 - "$PO" <<'EOF' || fail "malformed octet count"
import socket, sys, time
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s.settimeout(2)
s.sendall(b'<13>Jan  1 00:00:00 testhost inputtest: conn=203 seq=0 no octet count\n')
t = time.time()
try:
    d = s.recv(10)
except ConnectionResetError:
    d = b''
if d != b'' or time.time() - t > 1.5:
    sys.exit('connection not closed on a malformed octet count')
EOF
[ "$(metric corral_input_errors_total input=tcp-octet)" -ge 1 ] || fail "framing error not counted"
[ "$(check count "$OUT" '^conn=203 ')" -eq 0 ] || fail "a message without its octet count was delivered"

# ---- garbage: random bytes on all three; corrald goes on serving
python3 - "$PA" "$PN" "$PO" <<'EOF' || fail "garbage"
import os, random, socket, sys
rnd = random.Random(7)
for port in sys.argv[1:4]:
    for k in range(5):
        s = socket.create_connection(('127.0.0.1', int(port)))
        try:
            for i in range(40):
                s.sendall(os.urandom(rnd.randint(1, 20000)) + (b'\0' * rnd.randint(0, 3)))
        except OSError:
            pass  # closed on a malformed octet count: expected
        s.close()
EOF
corrald_alive
$SEND stream "tcp:127.0.0.1:$PA" --conns 300-301 --per 5 || fail "sender after garbage"
$SEND stream "tcp:127.0.0.1:$PO" --conns 302-303 --per 5 --framing octet || fail "sender after garbage"
wait_until check_has "$OUT" '^conn=30[0-3] ' 20 || fail "messages after the garbage"
check seq "$OUT" --conns 300-303 --per 5 || fail "messages after the garbage"

# ---- idle clients are closed after idle-timeout (3 s); a partial line is delivered then
python3 - "$PN" <<'EOF' || fail "idle timeout"
import socket, sys, time
s1 = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s2 = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s2.sendall(b'<13>Jan  1 00:00:00 testhost inputtest: conn=400 seq=0 partial, then silence')
t = time.time()
for s in (s1, s2):
    s.settimeout(10)
    try:
        d = s.recv(10)
    except ConnectionResetError:
        d = b''
    el = time.time() - t
    if d != b'' or not 2.5 <= el <= 8:
        sys.exit('idle connection closed after %.1f s (want about 3)' % el)
EOF
wait_until check_has "$OUT" '^conn=400 ' || fail "partial line of an idle connection"
check seq "$OUT" --conns 400-400 --per 1 || fail "partial line of an idle connection"
wait_metric corral_input_idle_closed_total input=tcp-newline -ge 2 || fail "idle closes not counted"

# ---- 110 connections from one address: max-connections-per-peer (100 by
# default) refuses the 10 beyond at once
# (once corrald counts 100 open and 10 refused, every one has been decided)
python3 - "$PN" "$(stats_port)" <<'EOF' || fail "max-connections"
import socket, sys, time, urllib.request
port, stats = int(sys.argv[1]), sys.argv[2]
def metric(name):
    body = urllib.request.urlopen('http://127.0.0.1:%s/metrics' % stats, timeout=10).read().decode()
    want = '%s{input="tcp-newline"} ' % name
    return next((int(l.split()[-1]) for l in body.splitlines() if l.startswith(want)), -1)
socks = [socket.create_connection(('127.0.0.1', port)) for _ in range(110)]
deadline = time.time() + 60
while (metric('corral_input_connections_active'), metric('corral_input_rejected_total')) != (100, 10):
    if time.time() > deadline:
        sys.exit('corrald counts %d open and %d refused, want 100 and 10' %
                 (metric('corral_input_connections_active'), metric('corral_input_rejected_total')))
    time.sleep(0.1)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(1) == b'':
            closed += 1
    except BlockingIOError:
        pass
    except ConnectionResetError:
        closed += 1
if closed != 10:
    sys.exit('%d connections refused, want 10' % closed)
EOF
[ "$(metric corral_input_rejected_total input=tcp-newline)" -eq 10 ] ||
    fail "rejected counter: $(metric corral_input_rejected_total input=tcp-newline)"

corrald_alive
stop_corrald
echo "$TEST: ok ($(check lines "$OUT") messages)"
