#!/bin/sh
# inputs_turns: a flooding stream connection reads 64 KiB and then waits for
# the next turn of corrald's loop, so that the other connections, the control
# socket and the HTTP endpoints are served in every iteration (before, libuv
# read up to 2 MiB of each readable connection at once, and under a flood over
# many connections one iteration took seconds).
#
# corrald is stopped (SIGSTOP) while bench/loadgen fills four connections; once
# one connection holds more than 64 KiB in the kernel (its receive queue, read
# from /proc/net/tcp), corrald is continued: its first read of that
# connection fills the read buffer, so the connection must yield
# (corral_input_read_yields_total), and every message must still arrive,
# once.
. "$(dirname "$0")/corrald_lib.sh"
need python3
LOADGEN=$top_builddir/bench/loadgen
[ -x "$LOADGEN" ] || fail "$LOADGEN not built"
corpus=$WORK/corpus.log
awk '{ sub(/\r$/, ""); print "<38>" $0 }' "$top_srcdir/tests/data/loghub/OpenSSH_2k.log" > "$corpus"
inputs_config "$WORK/corrald.conf" "" '<tcp listen="127.0.0.1:0" name="tcp"/>'
start_corrald turns "$WORK/corrald.conf"
port=$(input_port tcp)
metric_is corral_input_read_yields_total input=tcp -eq 0 || fail "no yields metric, or yields before any input"

# the most bytes waiting in one established connection to PORT (the kernel's receive queue)
queued() {
    python3 - "$port" <<'PY'
import sys
port = int(sys.argv[1])
most = 0
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for line in lines:
        f = line.split()
        local, state, queues = f[1], f[3], f[4]
        if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
            most = max(most, int(queues.split(":")[1], 16))
print(most)
PY
}
full() {
    [ "$(queued)" -gt 65536 ]
}

kill -STOP "$CORRALD_PID"
"$LOADGEN" -c 4 -n 40000 -p "$port" -f "$corpus" > "$WORK/lg.json" 2> "$WORK/lg.log" &
lg=$!
track $lg
wait_until full || { kill -CONT "$CORRALD_PID"; fail "no connection ever held 64 KiB (most: $(queued))"; }
echo "one connection holds $(queued) bytes; continuing corrald"
kill -CONT "$CORRALD_PID"
wait "$lg" || fail "loadgen failed: $(cat "$WORK/lg.log")"
untrack $lg
grep -q '"messages":40000,.*"failed":0' "$WORK/lg.json" || fail "loadgen reported: $(cat "$WORK/lg.json")"
wait_metric corral_input_messages_total input=tcp -ge 40000 ||
    fail "received $(metric corral_input_messages_total input=tcp) of 40000"
metric_is corral_input_messages_total input=tcp -eq 40000 ||
    fail "received $(metric corral_input_messages_total input=tcp), 40000 sent"
metric_is corral_input_errors_total input=tcp -eq 0 || fail "framing errors"
metric_is corral_input_read_yields_total input=tcp -gt 0 ||
    fail "a connection holding more than 64 KiB never yielded"
echo "ok: $(metric corral_input_read_yields_total input=tcp) yields, 40000 messages received once"
stop_corrald
