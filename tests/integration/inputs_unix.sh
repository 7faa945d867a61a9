#!/bin/sh
# inputs_unix: unix-dgram (a /dev/log replacement) and unix-stream inputs.
#
#   The socket files are created with the configured modes, replacing a
#   socket file left by an earlier run; logger -u (datagram and stream, with
#   and without --octet-count) and python3 clients; an over-long datagram is
#   cut and counted; the socket files are removed at stop.  A path that holds
#   a regular file is refused (corrald does not start) and the file is left
#   alone.

. "$(dirname "$0")/corrald_lib.sh"
need python3 logger stat
SEND="python3 $HERE/inputs_send.py"

DLOG=$WORK/log.sock
SLOG=$WORK/stream.sock
# a socket file left behind by a process that died: bound, never unlinked
python3 -c "import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind(sys.argv[1])" "$DLOG" ||
    fail "stale socket"
[ -S "$DLOG" ] || fail "no stale socket made"

inputs_config "$WORK/corrald.conf" 'max-message-size="1k"' "
    <unix-dgram path=\"$DLOG\" mode=\"0620\" name=\"dgram\"/>
    <unix-stream path=\"$SLOG\" mode=\"0600\" name=\"stream\"/>"
start_corrald corrald "$WORK/corrald.conf"
[ "$(stat -c %a "$DLOG")" = 620 ] || fail "mode of $DLOG: $(stat -c %a "$DLOG")"
[ "$(stat -c %a "$SLOG")" = 600 ] || fail "mode of $SLOG: $(stat -c %a "$SLOG")"

logger -u "$DLOG" -d --socket-errors=on -t inputtest "conn=0 seq=0 logger unix-dgram" || fail "logger -u -d"
logger -u "$DLOG" -d --socket-errors=on -t inputtest "conn=0 seq=1 logger unix-dgram" || fail "logger -u -d"
logger -u "$SLOG" -T --socket-errors=on -t inputtest "conn=1 seq=0 logger unix-stream" || fail "logger -u -T"
logger -u "$SLOG" -T --octet-count --socket-errors=on -t inputtest "conn=1 seq=1 logger octet" ||
    fail "logger -u -T --octet-count"
$SEND dgram "unix:$DLOG" --conns 10-14 --per 200 || fail "datagram sender"
$SEND stream "unix:$SLOG" --conns 20-39 --per 50 --unterminated-last || fail "stream sender"
$SEND stream "unix:$SLOG" --conns 40-59 --per 50 --framing octet || fail "stream sender (octet)"
python3 - "$DLOG" <<'EOF' || fail "long datagram"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(b'<13>Jan  1 00:00:00 testhost inputtest: conn=60 seq=0 long ' + b'y' * 4000, sys.argv[1])
s.sendto(b'<13>Jan  1 00:00:00 testhost inputtest: conn=61 seq=0 nul-ended\0', sys.argv[1])
EOF
wait_lines "$OUT" $((4 + 1000 + 2000 + 2)) || fail "messages missing"
check seq "$OUT" --conns 0-1 --per 2 || fail "logger messages"
# logger on a local socket names no host: the message is this host's
host=$(check field "$OUT" '^conn=0 seq=0 ' HOST)
[ "$host" = "$(hostname)" ] || fail "a local line naming no host: HOST is '$host', not $(hostname)"
check seq "$OUT" --conns 10-14 --per 200 --host testhost || fail "datagram messages"
check seq "$OUT" --conns 20-59 --per 50 --host testhost || fail "stream messages"
len=$(check field "$OUT" '^conn=60 seq=0' MESSAGE-LEN)
[ "$len" != "<none>" ] && [ "$len" -lt 1024 ] || fail "long datagram not cut: $len"
[ "$(check field "$OUT" '^conn=61 seq=0' MESSAGE)" = "conn=61 seq=0 nul-ended" ] || fail "trailing NUL kept"
[ "$(metric corral_input_truncated_total input=dgram)" -eq 1 ] || fail "truncated counter"

# reload with other modes: the inputs are opened anew before the old ones
# close, and closing the old ones must not remove the new sockets
inputs_config "$WORK/corrald.conf" 'max-message-size="1k"' "
    <unix-dgram path=\"$DLOG\" mode=\"0640\" name=\"dgram\"/>
    <unix-stream path=\"$SLOG\" mode=\"0660\" name=\"stream\"/>"
kill -HUP "$CORRALD_PID"
# the reload report (its last line counts the contexts) is logged once the
# new inputs are open and the old ones closed; "requested by" comes before
wait_log ']: reload: contexts: ' || fail "reload not reported"
[ "$(stat -c %a "$DLOG" 2>/dev/null)" = 640 ] && [ "$(stat -c %a "$SLOG" 2>/dev/null)" = 660 ] ||
    fail "modes after reload: $(stat -c %a "$DLOG" "$SLOG" 2>&1)"
[ -S "$DLOG" ] && [ -S "$SLOG" ] || fail "a socket is gone after the reload"
logger -u "$DLOG" -d --socket-errors=on -t inputtest "conn=62 seq=0 after reload" || fail "logger -u -d after reload"
logger -u "$SLOG" -T --socket-errors=on -t inputtest "conn=62 seq=1 after reload" || fail "logger -u -T after reload"
wait_lines "$OUT" $((4 + 1000 + 2000 + 2 + 2)) || fail "messages after the reload"
check seq "$OUT" --conns 62-62 --per 2 || fail "messages after the reload"
stop_corrald
[ -e "$DLOG" ] && fail "$DLOG left behind"
[ -e "$SLOG" ] && fail "$SLOG left behind"

# a regular file where the socket should be: refused, and kept
echo "precious" > "$DLOG"
inputs_config "$WORK/bad.conf" 'max-message-size="1k"' "
    <unix-dgram path=\"$DLOG\" name=\"dgram\"/>"
"$CORRALD" -F -f "$WORK/bad.conf" --schema "$SCHEMA" > "$WORK/bad.log" 2>&1 < /dev/null &
pid=$!
track $pid
wait_exit $pid && fail "corrald exited 0 over a regular file at $DLOG"
grep -q "]: started$" "$WORK/bad.log" && fail "corrald started over a regular file at $DLOG"
grep -q "not a socket" "$WORK/bad.log" || fail "no error message about $DLOG"
[ "$(cat "$DLOG")" = precious ] || fail "$DLOG was touched"
echo "$TEST: ok ($(check lines "$OUT") messages)"
