#!/bin/sh
# What an operator's monitoring reads of corrald itself: corral_build_info
# (the version of `corrald --version`), the process_* metrics of the
# Prometheus client libraries with sane values, and
# corral_config_last_reload_successful with its timestamp (1 after the start
# and a good reload, 0 after a reload of a broken file, which leaves the
# timestamp as it was).  corrald's own log lines carry RFC 3339 stamps with
# milliseconds and the offset of the zone (TZ set to +05:45 here, a zone
# whose offset a missing or wrong one cannot pass for).  A failed delivery
# that will be retried is logged at warning, a dead letter at error: an exec
# script that exits 75 then succeeds, one that exits 1, and a mail executor
# whose SMTP port refuses connections.  Under privilege separation the
# process_* metrics are the engine process's (it serves them; its seccomp
# filter lets it read /proc).  Unprivileged, with net.core.rmem_max
# below the 8 MiB a UDP input asks for, the warning names the sysctl to set.
. "$(dirname "$0")/corrald_lib.sh"
need python3

TZ=XST-5:45
export TZ
mkdir -p "$WORK/state" "$WORK/spool"
cat > "$WORK/retry.sh" <<SH
#!/bin/sh
[ -e "$WORK/down" ] && exit 75
echo "\$CORRAL_ALERT_ID" >> "$WORK/delivered"
SH
printf '#!/bin/sh\nexit 1\n' > "$WORK/fail.sh"
chmod 755 "$WORK/retry.sh" "$WORK/fail.sh"
: > "$WORK/delivered"
# a port that refuses connections (bound, not listening) until the test ends
python3 "$HERE/held_port.py" tcp "$WORK/smtp.port" "$WORK/never" true > "$WORK/held.log" 2>&1 &
track $!
wait_until test -s "$WORK/smtp.port" || fail "no port held for the SMTP server"
CONTROL=$WORK/control.sock
conf() {
    cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <state file="$WORK/state/state"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence after="1s"/>
  <executors spool="$WORK/spool">
    <exec name="retry" program="$WORK/retry.sh" backoff="100ms" max-backoff="100ms"
          attempts="1000"/>
    <exec name="fail" program="$WORK/fail.sh"/>
    <smtp name="mail" url="smtp://127.0.0.1:$(cat "$WORK/smtp.port")" tls="none"
          from="corral@example.com" to="ops@example.com" attempts="2" backoff="100ms"
          max-backoff="100ms"/>
  </executors>
  <routes><route tag="corral.alert" to="retry,fail,mail"/></routes>
</corrald>
XML
}
conf
before=$(date +%s)
start_corrald corrald "$WORK/corrald.conf"
after=$(date +%s)
metrics_text > "$WORK/metrics.1"
# value NAME [FILE]: the sample of NAME (without labels)
value() { awk -v n="$1" '$1 == n {print $2}' "${2:-$WORK/metrics.1}"; }

# ---- build and process
version=$("$CORRALD" --version | awk '{print $2}')
grep -qx "corral_build_info{version=\"$version\"} 1" "$WORK/metrics.1" ||
    fail "corral_build_info is not 1 with version $version: $(grep build_info "$WORK/metrics.1")"
python3 - "$WORK/metrics.1" "$before" "$after" <<'PY' || fail "process metrics"
import sys
m = {}
for line in open(sys.argv[1]):
    if not line.startswith("#") and " " in line:
        name, v = line.rsplit(" ", 1)
        m[name] = float(v)
before, after = int(sys.argv[2]), int(sys.argv[3])
for n in ("process_cpu_seconds_total", "process_resident_memory_bytes",
          "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
          "process_start_time_seconds"):
    assert n in m, n + " missing"
assert m["process_open_fds"] > 3, m["process_open_fds"]          # stdio, the loop, sockets
assert m["process_open_fds"] <= m["process_max_fds"], (m["process_open_fds"], m["process_max_fds"])
assert m["process_resident_memory_bytes"] > 1 << 20, m["process_resident_memory_bytes"]
assert m["process_virtual_memory_bytes"] >= m["process_resident_memory_bytes"]
assert m["process_cpu_seconds_total"] >= 0
# the start of this corrald, in seconds since the epoch (not ticks, not ms):
# between the clock read before starting it and the one after, give or take
# the rounding of the boot time /proc/stat gives in whole seconds
st = m["process_start_time_seconds"]
assert before - 30 <= st <= after + 30, (before, st, after)
PY
# started_at PID VALUE: VALUE is PID's start time as process_start_time_seconds
# gives it (proc(5)), within the second by which the boot time of /proc/stat
# (whole seconds, computed anew at each read) may move when the clock is slewed
started_at() {
    python3 - "$1" "$2" <<'PY'
import os, sys
stat = open("/proc/%s/stat" % sys.argv[1]).read()
start = int(stat[stat.rindex(")") + 2:].split()[19])
btime = next(int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime "))
want = btime + start / os.sysconf("SC_CLK_TCK")
assert abs(float(sys.argv[2]) - want) <= 1.01, (sys.argv[2], want)
PY
}
started_at "$CORRALD_PID" "$(value process_start_time_seconds)" ||
    fail "process_start_time_seconds is not when corrald started"
[ "$(value corral_config_last_reload_successful)" = 1 ] || fail "not 1 after the start"
ts0=$(value corral_config_last_reload_success_timestamp_seconds)
awk -v t="$ts0" -v b="$before" -v a="$after" 'BEGIN { exit !(t >= b - 1 && t <= a + 1) }' ||
    fail "reload timestamp $ts0 is not the start ($before..$after)"

# ---- reloads: good, broken, good
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1 || fail "reload: $(cat "$WORK/reload.out")"
metrics_text > "$WORK/metrics.2"
[ "$(value corral_config_last_reload_successful "$WORK/metrics.2")" = 1 ] || fail "not 1 after a good reload"
ts1=$(value corral_config_last_reload_success_timestamp_seconds "$WORK/metrics.2")
awk -v a="$ts0" -v b="$ts1" 'BEGIN { exit !(b > a) }' || fail "a good reload left the timestamp at $ts1"
echo "<corrald><inputs>" > "$WORK/corrald.conf"
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/broken.out" 2>&1 && fail "the broken file reloaded"
metrics_text > "$WORK/metrics.3"
[ "$(value corral_config_last_reload_successful "$WORK/metrics.3")" = 0 ] || fail "not 0 after a failed reload"
[ "$(value corral_config_last_reload_success_timestamp_seconds "$WORK/metrics.3")" = "$ts1" ] ||
    fail "a failed reload changed the timestamp"
[ "$(value corral_reload_failures_total "$WORK/metrics.3")" = 1 ] || fail "the failure not counted"
conf
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1 || fail "reload: $(cat "$WORK/reload.out")"
metrics_text > "$WORK/metrics.4"
[ "$(value corral_config_last_reload_successful "$WORK/metrics.4")" = 1 ] || fail "not 1 again"
ts2=$(value corral_config_last_reload_success_timestamp_seconds "$WORK/metrics.4")
awk -v a="$ts1" -v b="$ts2" 'BEGIN { exit !(b > a) }' || fail "the next good reload left the timestamp"

# ---- delivery failures
touch "$WORK/down"
send_udp "$(input_port udp)" "$(date '+%b %e %H:%M:%S') h1 app: hello"
wait_log 'corrald\[warning\]: executor retry: alert corral.absence/h1 attempt 1 failed' ||
    fail "a failed attempt of the script to be retried is not a warning"
rm -f "$WORK/down"
wait_grep "$WORK/delivered" '^corral.absence/h1$' || fail "the script never delivered"
wait_log 'corrald\[error\]: executor fail: alert corral.absence/h1 given up after 1 attempts' ||
    fail "the script's dead letter is not an error"
wait_log 'corrald\[warning\]: executor mail: alert .* attempt 1 failed' ||
    fail "a refused SMTP connection to be retried is not a warning"
wait_log 'corrald\[error\]: executor mail: alert .* given up after 2 attempts' ||
    fail "the mail dead letter is not an error"
grep -q 'corrald\[info\]: executor [a-z]*: alert .* \(failed\|given up\)' "$CORRALD_LOG" &&
    fail "a delivery failure logged at info"

# ---- log stamps: every line of corrald's, RFC 3339 with milliseconds and this zone's offset
n=$(grep -c ' corrald\[' "$CORRALD_LOG")
[ "$n" -gt 10 ] || fail "only $n log lines"
bad=$(grep ' corrald\[' "$CORRALD_LOG" |
    grep -Evc '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}\+05:45 corrald\[(error|warning|info|debug)\]: ')
[ "$bad" = 0 ] || fail "$bad of $n log lines without an RFC 3339 stamp with offset +05:45"
stop_corrald

# ---- under privilege separation, the metrics are those of the engine process, which serves them
if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
    chmod 0755 "$WORK"
    printf '<corrald><rules path="%s"/><daemon user="nobody"/><stats listen="127.0.0.1:0"/></corrald>\n' \
        "$top_srcdir/tests/integration/session_rules.xml" > "$WORK/privsep.conf"
    chmod 0644 "$WORK/privsep.conf"
    start_corrald privsep "$WORK/privsep.conf"
    engine=$(sed -n 's/.*privilege separation: engine process \([0-9]*\) .*/\1/p' "$CORRALD_LOG")
    [ -n "$engine" ] || fail "no engine process logged"
    CONTROL=
    metrics_text > "$WORK/metrics.5"
    started_at "$engine" "$(value process_start_time_seconds "$WORK/metrics.5")" ||
        fail "under privsep process_start_time_seconds is not the engine's"
    [ "$(value process_open_fds "$WORK/metrics.5")" -gt 3 ] || fail "under privsep no open fds"
    stop_corrald
fi

# ---- the receive buffer warning, unprivileged
rmem=$(cat /proc/sys/net/core/rmem_max 2>/dev/null || echo 0)
if [ "$rmem" -ge 8388608 ] || [ "$rmem" = 0 ]; then
    echo "$TEST: net.core.rmem_max is $rmem: the receive buffer warning cannot be seen here"
else
    as=
    if [ "$(id -u)" = 0 ]; then
        need setpriv
        as="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups --inh-caps=-all --bounding-set=-all"
        chmod 0711 "$WORK"
    fi
    mkdir -m 0777 "$WORK/nobody"
    printf '<corrald><rules path="%s"/><inputs><udp listen="127.0.0.1:0" name="udp"/></inputs></corrald>\n' \
        "$top_srcdir/tests/integration/session_rules.xml" > "$WORK/nobody/c.conf"
    chmod 0644 "$WORK/nobody/c.conf"
    # shellcheck disable=SC2086 # the wrapper's words
    $as "$CORRALD" -F -f "$WORK/nobody/c.conf" --schema "$SCHEMA" < /dev/null 2> "$WORK/nobody.log" &
    pid=$!
    track "$pid"
    wait_grep "$WORK/nobody.log" 'udp: receive buffer' || fail "no receive buffer line unprivileged"
    grep -q 'corrald\[warning\]: udp: receive buffer [0-9]* KiB, not the 8192 KiB asked for .*sysctl -w net.core.rmem_max=8388608' "$WORK/nobody.log" ||
        fail "the warning does not say what to set: $(grep 'receive buffer' "$WORK/nobody.log")"
    wait_grep "$WORK/nobody.log" ']: started$' || fail "unprivileged corrald did not start"
    stop_corrald "$pid"
fi
echo "$TEST: OK"
