#!/bin/sh
# hostile_lifecycle: corrald's start and stop under signals, and the paths
# and inputs that used to hang or mislead it.
#
#  1. SIGHUP during start-up (start-up held at a point the test controls:
#     opening a file output that is a FIFO waits for its reader): corrald
#     must not die of it; it reloads once running.
#  2. A second SIGTERM, and a SIGHUP, while stopping (the shutdown held by a
#     forward output whose peer refuses connections, 5 s of draining): the
#     second SIGTERM is only logged, the reload (by SIGHUP or `corral ctl
#     reload`) is refused, corrald exits 0
#     with its state saved.
#  3. A configuration, rules or state path that is a FIFO or /dev/zero: a
#     clear error and exit 1, never a hang (each run under timeout(1), whose
#     expiry fails the test).
#  4. As root with user="nobody": the pid file is written before the
#     privilege drop, so a root-owned directory works (skipped unless root).
#  5. framing="auto" with newline-framed lines that begin with digits and a
#     space ("30 connections dropped"): each line is a message.
#  6. <stats listen="localhost:0"> resolves like an input's address, and
#     ":0" means every address for stats as for inputs.
#
# Run by `make check` with top_srcdir and top_builddir set.  Exits 77
# (skipped) without python3 or timeout, 1 on a failure.

. "$(dirname "$0")/corrald_lib.sh"
need python3 timeout mkfifo

RULES=$HERE/inputs_rules.xml
TIMEOUT=30

# wchan: where in the kernel PID sleeps; opening a FIFO waits in
# wait_for_partner (fifo_open, pipe_wait on older kernels)
in_fifo_open() {
    grep -Eq 'wait_for_partner|fifo_open|pipe_wait' "/proc/$1/wchan"
}

# ---- 1. SIGHUP during start-up

mkfifo "$WORK/out.fifo"
cat > "$WORK/start.conf" <<EOF
<corrald>
  <rules path="$RULES"/>
  <log level="debug"/>
  <state file="$WORK/start.state"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.fifo" format="json" select="all"/></outputs>
</corrald>
EOF
CORRALD_LOG=$WORK/start.log
"$CORRALD" -F -f "$WORK/start.conf" --schema "$SCHEMA" < /dev/null > "$WORK/start.out" \
    2>> "$CORRALD_LOG" &
CORRALD_PID=$!
track "$CORRALD_PID"
wait_until in_fifo_open "$CORRALD_PID" || fail "corrald never reached the FIFO output's open"
kill -HUP "$CORRALD_PID"
# the reader lets start-up go on
cat "$WORK/out.fifo" > "$WORK/fifo.out" &
track $!
wait_log ']: started$' || fail "corrald did not start after a SIGHUP during start-up"
wait_log 'reload: requested by SIGHUP' || fail "the SIGHUP of start-up was not acted on"
corrald_alive
stop_corrald

# ---- 2. a second SIGTERM, and a SIGHUP, while stopping

python3 "$HERE/held_port.py" tcp "$WORK/held.port" "$WORK/held.go" true &
track $!
wait_until test -s "$WORK/held.port" || fail "held_port did not start"
cat > "$WORK/stop.conf" <<EOF
<corrald>
  <rules path="$RULES"/>
  <log level="debug"/>
  <stats listen="127.0.0.1:0"/>
  <control socket="$WORK/control.sock"/>
  <state file="$WORK/stop.state"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs>
    <forward name="fwd" to="127.0.0.1:$(cat "$WORK/held.port")" protocol="tcp" select="all"/>
  </outputs>
</corrald>
EOF
start_corrald stop "$WORK/stop.conf"
send_udp "$(input_port udp)" "<13>Jan  5 10:00:00 h1 inputtest[1]: conn=1 seq=1"
wait_metric corral_output_queued output=fwd -ge 1 || fail "the message is not waiting in fwd"
pid=$CORRALD_PID
kill -TERM "$pid"
wait_log 'signal 15: stopping' || fail "no stop begun"
# the control socket is open until the outputs have drained
"$CORRAL" ctl -s "$WORK/control.sock" reload > "$WORK/ctl.out" 2>&1
grep -q 'stopping: reload ignored' "$WORK/ctl.out" ||
    [ ! -S "$WORK/control.sock" ] || fail "corral ctl reload while stopping: $(cat "$WORK/ctl.out")"
kill -TERM "$pid"
kill -HUP "$pid"
wait_exit "$pid"
st=$?
CORRALD_PID=
[ $st -eq 0 ] || fail "corrald exited with $st after a second SIGTERM and a SIGHUP while stopping"
grep -q 'reload: requested by SIGHUP' "$CORRALD_LOG" && fail "a SIGHUP while stopping reloaded"
grep -q ']: stopped$' "$CORRALD_LOG" || fail "corrald did not stop cleanly"
[ -s "$WORK/stop.state" ] || fail "no state saved"

# ---- 3. paths that are not regular files

# expect_refusal WHAT PATTERN COMMAND...: COMMAND exits 1 within $TIMEOUT s, PATTERN on stderr
expect_refusal() {
    _what=$1 _pat=$2
    shift 2
    timeout "$TIMEOUT" "$@" > "$WORK/refusal.out" 2> "$WORK/refusal.err" < /dev/null
    _st=$?
    [ $_st -ne 124 ] || fail "$_what: still running after $TIMEOUT s (a hang)"
    [ $_st -eq 1 ] || fail "$_what: exit status $_st, expected 1: $(cat "$WORK/refusal.err")"
    grep -q -- "$_pat" "$WORK/refusal.err" || fail "$_what: no \"$_pat\" in: $(cat "$WORK/refusal.err")"
}

mkfifo "$WORK/conf.fifo" "$WORK/rules.fifo" "$WORK/state.fifo"
expect_refusal "configuration FIFO" "conf.fifo: cannot read the configuration: not a regular file" \
    "$CORRALD" -F -f "$WORK/conf.fifo" --schema "$SCHEMA"
expect_refusal "configuration FIFO (-t)" "not a regular file" \
    "$CORRALD" -t -f "$WORK/conf.fifo" --schema "$SCHEMA"
expect_refusal "configuration /dev/zero" "not a regular file" \
    "$CORRALD" -F -f /dev/zero --schema "$SCHEMA"

for rules in "$WORK/rules.fifo" /dev/zero; do
    cat > "$WORK/bad.conf" <<EOF
<corrald>
  <rules path="$rules"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
</corrald>
EOF
    expect_refusal "rules $rules" "rules path $rules: not a file or a directory" \
        "$CORRALD" -F -f "$WORK/bad.conf" --schema "$SCHEMA"
    expect_refusal "rules $rules (-r)" "not a file or a directory" \
        "$CORRALD" -F -r "$rules"
done

for state in "$WORK/state.fifo" /dev/zero; do
    cat > "$WORK/bad.conf" <<EOF
<corrald>
  <rules path="$RULES"/>
  <state file="$state"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
</corrald>
EOF
    expect_refusal "state $state" "state file $state: not a regular file" \
        "$CORRALD" -F -f "$WORK/bad.conf" --schema "$SCHEMA"
done
[ -p "$WORK/state.fifo" ] && [ -c /dev/zero ] || fail "a state path that is not a file was moved"

# ---- 4. the pid file in a root-owned directory, with a privilege drop
#      (of the one process: privsep="no"; privsep.sh tests the separated one)

if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
    mkdir -m 0755 "$WORK/run"
    chmod 0711 "$WORK"
    cat > "$WORK/drop.conf" <<EOF
<corrald>
  <daemon user="nobody" pidfile="$WORK/run/corrald.pid" privsep="no"/>
  <rules path="$RULES"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><stdout format="json" select="all"/></outputs>
</corrald>
EOF
    start_corrald drop "$WORK/drop.conf"
    [ -s "$WORK/run/corrald.pid" ] || fail "no pid file in a root-owned directory"
    [ "$(cat "$WORK/run/corrald.pid")" = "$CORRALD_PID" ] || fail "the pid file has another pid"
    [ "$(stat -c %U "/proc/$CORRALD_PID")" = nobody ] || fail "corrald did not become nobody"
    stop_corrald
else
    echo "$TEST: not root: the pid file with a privilege drop not checked"
fi

# ---- 5. framing="auto" and lines that begin with a number

OUT=$WORK/framing.json
cat > "$WORK/framing.conf" <<EOF
<corrald>
  <rules path="$RULES"/>
  <log level="debug"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp" framing="auto"/></inputs>
  <outputs><file path="$OUT" format="json" select="all"/></outputs>
</corrald>
EOF
start_corrald framing "$WORK/framing.conf"
printf '30 connections dropped\n4 retries left\n5 hosts down\n12 more\n' > "$WORK/lines.txt"
send_tcp_file "$(input_port tcp)" "$WORK/lines.txt"
framing_done() {
    has_lines "$OUT" 4 || metric_is corral_input_errors_total input=tcp -ge 1
}
wait_until framing_done || fail "nothing came of the lines"
[ "$(metric corral_input_errors_total input=tcp)" = 0 ] || fail "the lines were taken for a framing error"
wait_lines "$OUT" 4 || fail "not 4 messages"
# each line whole, in a message of its own (the leading number is read as a program name)
for line in "connections dropped" "retries left" "hosts down" "more"; do
    grep -q "\"MESSAGE\":\"$line\"" "$OUT" || fail "no message \"$line\": $(cat "$OUT")"
done
stop_corrald

# ---- 6. the stats address resolved as inputs' are

cat > "$WORK/stats.conf" <<EOF
<corrald>
  <rules path="$RULES"/>
  <stats listen="localhost:0"/>
  <inputs><udp listen=":0" name="udp"/></inputs>
</corrald>
EOF
start_corrald stats "$WORK/stats.conf"
addr=$(listen_addr stats)
case $addr in
127.0.0.1:*|"[::1]:"*) ;;
*) fail "stats at localhost:0 listen on \"$addr\"" ;;
esac
python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=10).read().decode())' \
    "$addr" > "$WORK/metrics.txt" || fail "no metrics at $addr"
grep -q '^corral_messages_received_total ' "$WORK/metrics.txt" || fail "not the metrics at $addr"
in_addr=$(listen_addr "input udp")
stop_corrald

sed "s|localhost:0|:0|" "$WORK/stats.conf" > "$WORK/stats_any.conf"
start_corrald stats_any "$WORK/stats_any.conf"
addr=$(listen_addr stats)
[ "${addr%:*}" = "${in_addr%:*}" ] || fail "\":0\" is $addr for stats but $in_addr for an input"
stop_corrald

exit 0
