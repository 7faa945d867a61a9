#!/bin/sh
# inputs_udp: corrald's UDP input with real senders.
#
#   logger -d (RFC 3164 and RFC 5424), over IPv4 and IPv6; loggen --dgram;
#   python3 senders: five sockets of 300 datagrams each; datagrams ending in
#   a newline and NULs (stripped); an over-long datagram (cut at
#   max-message-size and counted); garbage (random bytes, NULs, empty
#   datagrams), after which corrald still serves.  Every message must arrive
#   once, classified by tests/integration/inputs_rules.xml, with the sender's
#   address in SOURCEIP.

. "$(dirname "$0")/corrald_lib.sh"
need python3 logger loggen

INPUTS="    <udp listen=\"127.0.0.1:0\" name=\"udp4\"/>"
V6=
if have_ipv6; then
    V6=1
    INPUTS="$INPUTS
    <udp listen=\"[::1]:0\" name=\"udp6\"/>"
fi
inputs_config "$WORK/corrald.conf" 'max-message-size="1k"' "$INPUTS"
start_corrald corrald "$WORK/corrald.conf"
grep -q "udp4: receive buffer" "$CORRALD_LOG" || fail "no receive buffer size logged"
PORT=$(input_port udp4)

# logger: conn 0, one message in each syslog format
logger -n 127.0.0.1 -P "$PORT" -d --rfc3164 -t inputtest "conn=0 seq=0 logger rfc3164" || fail "logger"
logger -n 127.0.0.1 -P "$PORT" -d --rfc5424 -t inputtest "conn=0 seq=1 logger rfc5424" || fail "logger"
n=2
if [ -n "$V6" ]; then
    logger -n ::1 -P "$(input_port udp6)" -d -t inputtest "conn=7 seq=0 over IPv6" || fail "logger -n ::1"
    n=$((n + 1))
fi

# python3: five senders, 300 datagrams each, paced so the test is about the input, not drops
python3 - "$PORT" <<'EOF' || fail "sender"
import socket, sys, time
port = int(sys.argv[1])
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(5)]
for seq in range(300):
    for i, s in enumerate(socks, 1):
        s.sendto(b'<13>Jan  1 00:00:00 testhost inputtest: conn=%d seq=%d from python' % (i, seq),
                 ('127.0.0.1', port))
    if seq % 50 == 49:
        time.sleep(0.02)
s = socks[0]
# a newline and NULs after the message are not part of it
s.sendto(b'<13>Jan  1 00:00:00 testhost inputtest: conn=6 seq=0 trailing\n\0\0', ('127.0.0.1', port))
# longer than max-message-size (1k): cut
s.sendto(b'<13>Jan  1 00:00:00 testhost inputtest: conn=8 seq=0 long ' + b'x' * 3000, ('127.0.0.1', port))
EOF
n=$((n + 1500 + 2))

# loggen: 400 datagrams
loggen --inet --dgram -n 400 -r 2000 -Q 127.0.0.1 "$PORT" >/dev/null 2>&1 || fail "loggen"
n=$((n + 400))
wait_lines "$OUT" $n || fail "only $(check lines "$OUT") of $n messages"

# garbage: random bytes, NULs, empty datagrams, lone newlines; then a marker
python3 - "$PORT" <<'EOF' || fail "garbage sender"
import os, socket, sys, time
port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(300):
    s.sendto(os.urandom(1 + i * 7 % 1500), ('127.0.0.1', port))
for d in (b'', b'\n', b'\0', b'\0\0\n\r', b'\xff\xfe\xfd', b'<', b'<999>', b'<13>'):
    s.sendto(d, ('127.0.0.1', port))
time.sleep(0.2)
s.sendto(b'<13>Jan  1 00:00:00 testhost inputtest: conn=9 seq=0 after garbage', ('127.0.0.1', port))
EOF
# the marker comes last from one socket: once it is out, so is everything before it
wait_until check_has "$OUT" '^conn=9 seq=0 ' || fail "no message after the garbage"
corrald_alive

# lines that name no host (as some devices send them) from two senders:
# each gets its sender's address as HOST, as syslog-ng has it, not one
# shared empty HOST that would merge their host-scoped contexts
python3 - "$PORT" <<'EOF' || fail "no-host sender"
import socket, sys
port = int(sys.argv[1])
for seq, src in enumerate(('127.0.0.2', '127.0.0.3')):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.sendto(b'<13>Jan  1 00:00:00 inputtest[7]: conn=10 seq=%d no host' % seq, ('127.0.0.1', port))
EOF
wait_until check_has "$OUT" '^conn=10 seq=1 ' || fail "no message from 127.0.0.3"
wait_until check_has "$OUT" '^conn=10 seq=0 ' || fail "no message from 127.0.0.2"
for seq in 0 1; do
    host=$(check field "$OUT" "^conn=10 seq=$seq " HOST)
    [ "$host" = "127.0.0.$((seq + 2))" ] || fail "a line naming no host from 127.0.0.$((seq + 2)): HOST is '$host'"
done

check seq "$OUT" --conns 0-0 --per 2 --sourceip 127.0.0.1 || fail "logger messages"
check seq "$OUT" --conns 1-5 --per 300 --unordered --host testhost --sourceip 127.0.0.1 || fail "python messages"
check seq "$OUT" --conns 9-9 --per 1 || fail "the message after the garbage"
check loggen "$OUT" --groups 1 --per 400 || fail "loggen messages"
if [ -n "$V6" ]; then
    check seq "$OUT" --conns 7-7 --per 1 --sourceip ::1 || fail "IPv6 message"
fi
[ "$(check field "$OUT" '^conn=6 seq=0' MESSAGE)" = "conn=6 seq=0 trailing" ] ||
    fail "trailing newline/NULs kept: $(check field "$OUT" '^conn=6 seq=0' MESSAGE)"
len=$(check field "$OUT" '^conn=8 seq=0' MESSAGE-LEN)
[ "$len" != "<none>" ] && [ "$len" -lt 1024 ] && [ "$len" -gt 900 ] || fail "over-long datagram: MESSAGE length $len"
[ "$(metric corral_input_truncated_total input=udp4)" -ge 1 ] || fail "truncated counter"
received=$(metric corral_input_messages_total input=udp4)
[ "$received" -ge 1904 ] || fail "corral_input_messages_total{input=udp4} is $received"

stop_corrald
echo "$TEST: ok ($(check lines "$OUT") messages)"
