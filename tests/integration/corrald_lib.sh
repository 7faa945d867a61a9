# corrald_lib.sh: the harness of the integration tests (sourced, not run).
#
# Each test gets a private directory $WORK, starts corrald and its peers in
# it, and stops on exit the processes it started, and only those.  Nothing
# here sleeps to wait for something: a wait polls a condition (a log line, a
# file, a counter) every 0.1 s and fails the test, with the logs, when it is
# not met within $WAIT_TIMEOUT seconds (default 60).
#
# Ports are never picked in advance: configurations say port 0 and the test
# reads the port the kernel gave from corrald's log ("input NAME: listening
# on HOST:PORT", "stats: listening on HOST:PORT"); peers bind port 0 and
# report it (listening_ports, held_port.py, smtp_server.py).
#
#   need TOOL...                 skip the test (77) without TOOL
#   fail MESSAGE                 fail, with the tail of every $WORK/*.log
#   track PID / untrack PID      a process the test started / has reaped
#                                (at exit, any other process of the test's
#                                still running fails it: see cleanup)
#   start_corrald [-p] NAME CONFIG [STDIN [STDOUT]]
#                                corrald -F; log $WORK/NAME.log; waits until
#                                it has started; -p: STDIN through a pipe
#   stop_corrald [PID]           SIGTERM; it must exit 0 within 10 s
#   kill_corrald                 kill -9 (a crash), reaped
#   corrald_alive                fail unless corrald is still running
#   input_port NAME, stats_port  ports corrald was given (from its log)
#   metric NAME [LABEL=VALUE]    a counter, from the control socket $CONTROL
#                                if set, else the stats endpoint; -1 if absent
#   wait_until COMMAND...        until COMMAND succeeds; 1 on timeout
#   wait_log PATTERN [N]         until corrald's log has N lines matching
#   wait_grep FILE PATTERN [N]   until FILE has N lines matching (grep BRE)
#   wait_lines FILE N            until FILE has N lines
#   wait_metric NAME [LABEL=VALUE] OP N   until [ metric OP N ]
#   wait_exit PID                until PID exits; its status
#   listening_ports PID udp|tcp  the ports a peer bound itself (from /proc)
#   send_udp PORT LINE..., send_tcp_file PORT FILE
#   snmptt_handler               snmptrapd.conf's line handing traps to snmptt
#
# The input tests (inputs_*.sh) also use inputs_config, check, check_has
# and the test rules in inputs_rules.xml (see below).
#
# Environment: top_srcdir, top_builddir (set by `make check`), KEEP=1 keeps
# $WORK, WAIT_TIMEOUT.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
CORRALD=$top_builddir/agent/corrald
CORRAL=$top_builddir/tools/corral
SCHEMA=$top_srcdir/etc/corrald.xsd
HERE=$top_srcdir/tests/integration
TEST=$(basename "$0" .sh)
WAIT_TIMEOUT=${WAIT_TIMEOUT:-60}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/$TEST.XXXXXX") || exit 1
PIDS=""
CORRALD_PID=
CORRALD_LOG=
CONTROL=

# alive PID: running (a zombie, exited but not reaped, is not)
alive() {
    _state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -n "$_state" ] && [ "$_state" != Z ]
}

exited() {
    ! alive "$1"
}

track() {
    PIDS="$PIDS $1"
}

# after the test has reaped PID: its number may be reused, never signal it again
untrack() {
    _new=""
    for _p in $PIDS; do [ "$_p" = "$1" ] || _new="$_new $_p"; done
    PIDS=$_new
}

# Every process this test starts carries this mark in its environment;
# corrald builds its children's environments from scratch, so a process is
# also this test's if $WORK is in its command line or is its directory.
CORRAL_TEST_MARK=$WORK
export CORRAL_TEST_MARK

# left_behind: the processes of this test's still running, one a line,
# other than this shell and its copies (subshells).  A single scan of
# /proc, run from / with neither the mark in its environment nor $WORK on
# its command line, so that it does not find itself.
left_behind() {
    (cd / && env -u CORRAL_TEST_MARK python3 - <<EOF
import os
work, main = os.fsencode("$WORK"), $$
mark = b"CORRAL_TEST_MARK=" + work
def read(pid, name):
    try:
        with open("/proc/%s/%s" % (pid, name), "rb") as f:
            return f.read()
    except OSError:
        return None
def ours(pid):
    try:
        cwd = os.fsencode(os.readlink("/proc/%s/cwd" % pid))
    except OSError:
        cwd = b""
    return (mark in (read(pid, "environ") or b"").split(b"\\0")
            or work in (read(pid, "cmdline") or b"")
            or cwd == work or cwd.startswith(work + b"/"))
skip, copy = {os.getpid(), main}, read(main, "cmdline")
for pid in filter(str.isdigit, os.listdir("/proc")):
    stat = read(pid, "stat")
    if int(pid) in skip or not stat or stat.rsplit(b")", 1)[1][1:2] in (b"Z", b"X"):
        continue
    if read(pid, "cmdline") != copy and ours(pid):
        print(pid)
EOF
    )
}

# After the tracked processes: what else the test started must have ended
# too (given 5 s to, as one just sent SIGTERM takes a moment); what has not
# is named, killed and fails the test.
cleanup() {
    _status=$?
    for _p in $PIDS; do kill -TERM "$_p" 2>/dev/null; done
    _i=0
    for _p in $PIDS; do
        while alive "$_p" && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
    done
    for _p in $PIDS; do
        alive "$_p" && kill -KILL "$_p" 2>/dev/null
        wait "$_p" 2>/dev/null
    done
    _i=0
    while [ -n "$(left_behind)" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
    _left=$(left_behind)
    if [ -n "$_left" ]; then
        echo "$TEST: FAIL: processes left behind:" >&2
        for _p in $_left; do
            echo "  $_p: $(tr '\0' ' ' < "/proc/$_p/cmdline" 2>/dev/null)" >&2
            kill -KILL "$_p" 2>/dev/null
        done
        [ "$_status" -eq 0 ] && _status=1
    fi
    if [ -n "${KEEP:-}" ]; then echo "$TEST: kept $WORK"; else rm -rf "$WORK"; fi
    exit "$_status"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# fail REASON: the logs' last lines, then REASON again last, where a
# truncated test log still shows it
fail() {
    echo "$TEST: FAIL: $*" >&2
    for f in "$WORK"/*.log; do
        [ -f "$f" ] && { echo "--- $f (last 30 lines)"; tail -n 30 "$f"; } >&2
    done
    echo "$TEST: FAIL: $*" >&2
    exit 1
}

need() {
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || { echo "$TEST: $tool not installed, skipped"; exit 77; }
    done
}

# need_glibc_malloc BINARY: a test of how glibc's allocator behaves in BINARY
# is skipped in a sanitizer build, whose allocator is its own
need_glibc_malloc() {
    if ldd "$1" 2>/dev/null | grep -q 'libasan\|libtsan'; then
        echo "$TEST: a sanitizer build (its own allocator), skipped"
        exit 77
    fi
}

# ---- waiting

# wait_until COMMAND...: retries COMMAND every 0.1 s until it succeeds, for
# $WAIT_TIMEOUT s of wall-clock time at most
wait_until() {
    _end=$(($(date +%s) + WAIT_TIMEOUT))
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s)" -gt "$_end" ]; then
            echo "$TEST: timed out after $WAIT_TIMEOUT s waiting for: $*" >&2
            return 1
        fi
        sleep 0.1
    done
}

# count_matching FILE PATTERN: lines of FILE matching PATTERN (0 without FILE)
count_matching() {
    if [ -f "$1" ]; then grep -c -- "$2" "$1"; else echo 0; fi
}

has_matching() {
    [ "$(count_matching "$1" "$2")" -ge "${3:-1}" ]
}

wait_grep() {
    wait_until has_matching "$1" "$2" "${3:-1}"
}

wait_log() {
    wait_grep "$CORRALD_LOG" "$1" "${2:-1}"
}

has_lines() {
    [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]
}

wait_lines() {
    wait_until has_lines "$1" "$2"
}

# wait_exit PID: until PID (a child) exits by itself; returns its status
wait_exit() {
    wait_until exited "$1" || return 255
    wait "$1"
    _st=$?
    untrack "$1"
    return $_st
}

# ---- corrald

# start_corrald [-p] NAME CONFIG [STDIN [STDOUT]]: corrald in the foreground,
# in the background; stderr (its log) to $WORK/NAME.log, appended, stdout to
# STDOUT (default $WORK/NAME.out).  Returns once corrald has logged
# "started": its inputs and endpoints are open then.  -p feeds STDIN through
# a pipe rather than a redirection.
start_corrald() {
    [ -x "$CORRALD" ] || fail "$CORRALD not built"
    _pipe=
    if [ "$1" = -p ]; then _pipe=1; shift; fi
    CORRALD_LOG=$WORK/$1.log
    _before=$(count_matching "$CORRALD_LOG" ']: started$')
    if [ -n "$_pipe" ]; then
        cat "$3" | "$CORRALD" -F -f "$2" --schema "$SCHEMA" > "${4:-$WORK/$1.out}" 2>> "$CORRALD_LOG" &
    else
        "$CORRALD" -F -f "$2" --schema "$SCHEMA" < "${3:-/dev/null}" > "${4:-$WORK/$1.out}" \
            2>> "$CORRALD_LOG" &
    fi
    CORRALD_PID=$!
    track "$CORRALD_PID"
    _end=$(($(date +%s) + WAIT_TIMEOUT))
    until has_matching "$CORRALD_LOG" ']: started$' $((_before + 1)); do
        if ! alive "$CORRALD_PID"; then
            has_matching "$CORRALD_LOG" ']: started$' $((_before + 1)) && break
            wait "$CORRALD_PID"
            _st=$?
            untrack "$CORRALD_PID"
            CORRALD_PID=
            fail "corrald $1 exited with $_st before it started"
        fi
        [ "$(date +%s)" -le "$_end" ] || fail "corrald $1 not started after $WAIT_TIMEOUT s"
        sleep 0.1
    done
}

# stop_corrald [PID]: SIGTERM; corrald must exit, with 0, within 10 s
stop_corrald() {
    _pid=${1:-$CORRALD_PID}
    [ -n "$_pid" ] || return 0
    kill -TERM "$_pid" 2>/dev/null
    _i=0
    while alive "$_pid"; do
        _i=$((_i + 1))
        [ $_i -le 100 ] || fail "corrald $_pid did not stop within 10 s of SIGTERM"
        sleep 0.1
    done
    wait "$_pid"
    _st=$?
    untrack "$_pid"
    [ "$_pid" = "$CORRALD_PID" ] && CORRALD_PID=
    [ $_st -eq 0 ] || fail "corrald $_pid exited with $_st on SIGTERM"
}

# kill_corrald: kill -9, as a crash would
kill_corrald() {
    kill -KILL "$CORRALD_PID"
    wait "$CORRALD_PID" 2>/dev/null
    untrack "$CORRALD_PID"
    CORRALD_PID=
}

corrald_alive() {
    alive "$CORRALD_PID" || fail "corrald died"
}

# listen_addr PREFIX: the address after "PREFIX: listening on " in the
# current corrald's log (the last one: a reload may open an input anew)
listen_addr() {
    sed -n "s/.*]: $1: listening on //p" "$CORRALD_LOG" | tail -n 1
}

# input_port NAME: the port input NAME listens on
input_port() {
    _a=$(listen_addr "input $1")
    [ -n "$_a" ] || fail "no port logged for input $1"
    echo "${_a##*:}"
}

stats_port() {
    _a=$(listen_addr stats)
    [ -n "$_a" ] || fail "no stats endpoint logged"
    echo "${_a##*:}"
}

# metrics_text: Prometheus text, from the control socket $CONTROL if the
# test set it, else from the stats endpoint
metrics_text() {
    if [ -n "$CONTROL" ]; then
        "$CORRAL" ctl -s "$CONTROL" stats
    else
        python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode())' \
            "$(stats_port)"
    fi
}

# metric NAME [LABEL=VALUE]: the value of NAME{LABEL="VALUE"}, -1 if absent
metric() {
    _series=$1
    if [ -n "${2:-}" ]; then _series="$1{${2%%=*}=\"${2#*=}\"}"; fi
    metrics_text | awk -v s="$_series" '$1 == s {v = $2} END {print (v == "" ? -1 : v)}'
}

metric_is() {
    if [ $# -eq 4 ]; then
        test "$(metric "$1" "$2")" "$3" "$4"
    else
        test "$(metric "$1")" "$2" "$3"
    fi
}

# wait_metric NAME [LABEL=VALUE] OP N, OP as test(1)'s: -eq, -ge, ...
wait_metric() {
    wait_until metric_is "$@"
}

# ---- peers

# listening_ports PID udp|tcp: the ports PID has bound (UDP) or listens on
# (TCP), for a peer told to bind port 0 that does not say which it got
listening_ports() {
    python3 - "$1" "$2" <<'PY'
import os, sys
pid, proto = sys.argv[1], sys.argv[2]
inodes = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
    except OSError:
        continue
    if link.startswith("socket:["):
        inodes.add(link[8:-1])
ports = set()
for table in (proto, proto + "6"):
    try:
        rows = open("/proc/net/" + table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        f = row.split()
        if f[9] in inodes and (proto == "udp" or f[3] == "0A"):  # 0A: LISTEN
            ports.add(int(f[1].rsplit(":", 1)[1], 16))
print(" ".join(str(p) for p in sorted(ports)))
PY
}

have_ipv6() {
    python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null
}

# send_udp PORT LINE...: one datagram per line, to 127.0.0.1
send_udp() {
    python3 - "$@" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for line in sys.argv[2:]:
    s.sendto(line.encode(), ("127.0.0.1", int(sys.argv[1])))
PY
}

# send_tcp_file PORT FILE: the file over one TCP connection to 127.0.0.1
send_tcp_file() {
    python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
with open(sys.argv[2], "rb") as f:
    s.sendall(f.read())
s.close()
PY
}

# start_snmptrapd: a real snmptrapd on a UDP port of its own (held_port.py
# binds a free one and hands it over), taking community "public" and
# writing each trap between "BEGIN ..." and "END" lines to $WORK/trapd.log;
# sets TRAPD_PORT once it has started
start_snmptrapd() {
    mkdir -p "$WORK/persist" "$WORK/nomibs"
    touch "$WORK/trapd.go"
    cat > "$WORK/snmptrapd.conf" <<EOF
disableAuthorization no
authCommunity log public
format2 BEGIN %P\n%v\nEND\n
EOF
    SNMP_PERSISTENT_DIR=$WORK/persist MIBDIRS=$WORK/nomibs MIBS= \
        python3 "$HERE/held_port.py" udp "$WORK/trapd.port" "$WORK/trapd.go" \
        snmptrapd -f -Lo -C -c "$WORK/snmptrapd.conf" -n -On -Oq -Ot "udp:127.0.0.1:{port}" \
        > "$WORK/trapd.log" 2>&1 &
    track $!
    wait_until test -s "$WORK/trapd.port" || fail "no port for snmptrapd"
    wait_grep "$WORK/trapd.log" "NET-SNMP version" || fail "snmptrapd did not start"
    TRAPD_PORT=$(cat "$WORK/trapd.port")
}

# snmptt_handler: when snmptt is installed, writes $WORK/snmptt.ini (the
# system's, with the shipped contrib/mibs/corral.snmptt, its log in
# $WORK/snmptt.log, nothing to syslog) and prints the snmptrapd.conf line
# that hands every notification to it; prints nothing without snmptt
snmptt_handler() {
    command -v snmptt >/dev/null 2>&1 && [ -f /etc/snmp/snmptt.ini ] || return 0
    awk -v conf="$top_srcdir/contrib/mibs/corral.snmptt" -v work="$WORK" '
        /^snmptt_conf_files *=/ { print "snmptt_conf_files = <<END"; print conf; print "END"; skip = 1; next }
        skip && /^END/ { skip = 0; next }
        skip { next }
        /^log_file *=/ { print "log_file = " work "/snmptt.log"; next }
        /^(syslog_enable|syslog_system_enable|log_system_enable|ipv6_enable|net_snmp_perl_enable) *=/ {
            sub(/=.*/, "= 0"); print; next }
        /^unknown_trap_log_file *=/ { print "unknown_trap_log_file = " work "/snmptt-unknown.log"; next }
        { print }' /etc/snmp/snmptt.ini > "$WORK/snmptt.ini"
    echo "traphandle default snmptt --ini=$WORK/snmptt.ini"
}

# receiver_script: $WORK/receiver.sh, an exec executor's program that records
# each alert id in $WORK/delivered, and is down while $WORK/down exists
# (exit 75: try again later)
receiver_script() {
    cat > "$WORK/receiver.sh" <<SH
#!/bin/sh
[ -e "$WORK/down" ] && exit 75
echo "\$CORRAL_ALERT_ID" >> "$WORK/delivered"
SH
    chmod +x "$WORK/receiver.sh"
}

# ---- the input tests

RULES=$HERE/inputs_rules.xml
OUT=$WORK/out.json

# inputs_config FILE LIMITS INPUTS [ELEMENTS]: a configuration with the test
# rules, a stats endpoint, a JSON file output ($OUT) of every message, and
# ELEMENTS
inputs_config() {
    cat > "$1" <<EOF
<corrald>
  <rules path="$RULES"/>
  <log level="debug"/>
  <stats listen="127.0.0.1:0"/>
${4:-}
  <limits $2/>
  <inputs>
$3
  </inputs>
  <outputs>
    <file path="$OUT" format="json" select="all"/>
  </outputs>
</corrald>
EOF
}

# check WHAT FILE ...: tests/integration/inputs_check.py
check() {
    python3 "$HERE/inputs_check.py" "$@"
}

# check_has FILE REGEX [N]: at least N messages of FILE match REGEX
check_has() {
    [ "$(check count "$1" "$2")" -ge "${3:-1}" ]
}

rss_kb() {
    awk '/^VmRSS:/ {print $2}' "/proc/$CORRALD_PID/status"
}
