#!/bin/sh
# Privilege separation (doc/privsep.md) against the real daemon, started as
# root with <daemon user="nobody"> and no privsep attribute (on by default
# then), with real peers: snmptrapd, an SMTP server (aiosmtpd) and a script.
#  0. privsep="yes" as root without user=: refused with file:line.
#  1. Two processes: the executor process (the one started, root, no
#     filter) and the engine process: Uid nobody, NoNewPrivs 1, Seccomp 2,
#     a secret of the environment gone from its /proc/PID/environ.
#  2. The engine cannot read the SNMP community file (root's, 0600): as its
#     user, open fails with "Permission denied"; the test build's hook
#     (agent/corrald-test, CORRAL_TEST_HOOK=open:FILE) shows the engine
#     itself refused.
#  3. An alert reaches snmptrapd, the SMTP server and the script (run as
#     nobody, as without privilege separation); metrics,
#     `corral queue list`, GET /api/v1/queues and the alert store's
#     delivery states cross the
#     socketpair; SIGHUP to the executor process reloads the engine, and
#     the executor process changes an executor (it reads the community file
#     again), `corral ctl save` works.
#  4. kill -9 of the executor process while an alert waits in its spool
#     (the script is down): the engine logs it and stops; a restart
#     delivers the spooled alert.
#  5. The test build's hook CORRAL_TEST_HOOK=execve: the filter kills the
#     engine (SIGSYS), the executor process logs it and corrald exits 1.
# Needs root (the engine drops to nobody); skipped (77) otherwise.
. "$(dirname "$0")/corrald_lib.sh"
need python3 snmptrapd setpriv
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to test the privilege drop"; exit 77; }
id nobody > /dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null ||
    { echo "skipped: /usr/bin/python3 lacks aiosmtpd (Debian: python3-aiosmtpd)"; exit 77; }
CORRALD_TEST=$top_builddir/agent/corrald-test
[ -x "$CORRALD_TEST" ] || fail "$CORRALD_TEST not built (make check builds it)"
PROD=$CORRALD

# the engine, as nobody, reads the configuration again on reload; the state is its to write
chmod 755 "$WORK"
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/persist" "$WORK/nomibs" "$WORK/mail"
chown nobody "$WORK/state"
umask 077
printf 'public\n' > "$WORK/community" # the secret: root's, 0600
umask 022

start_snmptrapd
trap_port=$TRAPD_PORT

/usr/bin/python3 "$HERE/smtp_server.py" --dir "$WORK/mail" > "$WORK/smtp.port" 2> "$WORK/smtp.log" &
track $!
wait_grep "$WORK/smtp.port" PORT || fail "the SMTP server did not start"
sport=$(sed -n 's/^PORT //p' "$WORK/smtp.port")

# the script (exit 75, try again, while $WORK/down exists) records the alert and its own uid:
# the executor process stays root, and runs it as the service user, as without privsep
cat > "$WORK/receiver.sh" <<SH
#!/bin/sh
[ -e "$WORK/down" ] && exit 75
echo "\$CORRAL_ALERT_ID \$(id -u)" >> "$WORK/delivered"
SH
chmod 755 "$WORK/receiver.sh"
: > "$WORK/delivered"
chmod 666 "$WORK/delivered"
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <daemon user="nobody"/>
  <state file="$WORK/state/state"/>
  <control socket="$CONTROL"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence after="1s"/>
  <executors spool="$WORK/spool">
    <snmp name="nms" target="udp:127.0.0.1:$trap_port" community-file="$WORK/community"
          severity="major"/>
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="ops@example.com"/>
    <exec name="script" program="$WORK/receiver.sh" backoff="200ms" max-backoff="200ms"
          attempts="1000"/>
  </executors>
  <routes><route tag="corral.alert" to="nms,mail,script"/></routes>
</corrald>
XML
chmod 644 "$WORK/corrald.conf"

# engine_pid: the engine process of the corrald started last (from its log)
engine_pid() {
    sed -n 's/.*privilege separation: engine process \([0-9]*\) .*/\1/p' "$CORRALD_LOG" | tail -n 1
}
status_field() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
now() { date '+%b %e %H:%M:%S'; }

# ---- 0. privsep="yes" as root without a user to drop to: refused, with the line
sed 's|<daemon user="nobody"/>|<daemon privsep="yes"/>|' "$WORK/corrald.conf" > "$WORK/nouser.conf"
if "$CORRALD" -F -f "$WORK/nouser.conf" --schema "$SCHEMA" < /dev/null > /dev/null 2> "$WORK/nouser.err"; then
    fail "privsep=\"yes\" as root without user= was accepted"
fi
grep -q "nouser.conf:3: <daemon privsep=\"yes\">: started as root, it needs user=" "$WORK/nouser.err" ||
    fail "no clear error: $(cat "$WORK/nouser.err")"

# ---- 1. two processes, the engine confined
PRIVSEP_TEST_SECRET=s3cr3t-in-env
export PRIVSEP_TEST_SECRET
start_corrald corrald "$WORK/corrald.conf"
unset PRIVSEP_TEST_SECRET
engine=$(engine_pid)
[ -n "$engine" ] || fail "no engine process logged (privilege separation is not on by default as root with user=)"
has_matching "$CORRALD_LOG" "privsep: executor process $CORRALD_PID as user root, engine process $engine" ||
    fail "the executor process is not the one started"
[ "$(awk '/^PPid:/ {print $2}' "/proc/$engine/status")" = "$CORRALD_PID" ] ||
    fail "the engine process is not the executor process's child"
uid=$(id -u nobody)
[ "$(awk '/^Uid:/ {print $2 $3 $4 $5}' "/proc/$engine/status")" = "$uid$uid$uid$uid" ] ||
    fail "engine Uid: $(grep ^Uid: "/proc/$engine/status")"
[ "$(status_field "$engine" NoNewPrivs)" = 1 ] || fail "engine NoNewPrivs not 1"
[ "$(status_field "$engine" Seccomp)" = 2 ] || fail "engine Seccomp not 2 (filter)"
[ "$(awk '/^Uid:/ {print $2}' "/proc/$CORRALD_PID/status")" = 0 ] || fail "executor process not root"
[ "$(status_field "$CORRALD_PID" Seccomp)" = 0 ] || fail "executor process filtered"
echo "$TEST: engine $engine: $(grep -E '^(Uid|NoNewPrivs|Seccomp):' "/proc/$engine/status" | tr '\t\n' '  ')"
tr '\0' '\n' < "/proc/$CORRALD_PID/environ" | grep -q '^PRIVSEP_TEST_SECRET=s3cr3t-in-env$' ||
    fail "the executor process lost its environment (its scripts read it)"
tr '\0' '\n' < "/proc/$engine/environ" | grep -q 's3cr3t' &&
    fail "the secret of the environment is still in the engine's /proc/PID/environ"

# ---- 2. the secret file is out of the engine's reach
ls -l /proc/"$engine"/fd 2>/dev/null | grep -q "$WORK/community" &&
    fail "the engine holds the community file open"
if out=$(setpriv --reuid="$uid" --regid="$(id -g nobody)" --clear-groups cat "$WORK/community" 2>&1); then
    fail "the engine's user can read the community file"
fi
echo "$TEST: as the engine's user: $out"
case $out in *"Permission denied"*) ;; *) fail "not refused for want of permission: $out" ;; esac

# ---- 3. alerts flow to every executor, the control socket and metrics cross over
send_udp "$(input_port udp)" "$(now) web1 app: hello"
wait_grep "$WORK/delivered" '^corral.absence/web1 ' || fail "the script did not get the alert"
grep -q "^corral.absence/web1 $uid\$" "$WORK/delivered" ||
    fail "the script did not run as the service user: $(cat "$WORK/delivered")"
wait_grep "$WORK/trapd.log" "BEGIN TRAP2, SNMP v2c, community public" || fail "snmptrapd did not get the trap"
wait_until sh -c "ls '$WORK/mail' | grep -q '^msg-'" || fail "the SMTP server got no mail"
for e in nms mail script; do
    wait_metric corral_executor_delivered_total executor=$e -ge 1 || fail "executor $e: delivered not counted"
done
[ "$(metric corral_privsep_sent_total)" -ge 3 ] || fail "corral_privsep_sent_total: $(metric corral_privsep_sent_total)"
# every metric served, those only served under privilege separation too, is documented in corrald(8)
for name in $("$CORRAL" ctl -s "$CONTROL" stats | sed -n 's/^# HELP \([a-z_]*\) .*/\1/p'); do
    grep -q "^\.B $name\$" "$top_srcdir/doc/corrald.8" || fail "metric $name is not in doc/corrald.8"
done
"$CORRAL" queue -s "$CONTROL" list > "$WORK/queues.txt" || fail "corral queue list failed"
grep -q '^executor script: 0 queued' "$WORK/queues.txt" || fail "queue list: $(cat "$WORK/queues.txt")"
# the HTTP API asks the executor process too (the request waits for its answer)
http_get() {
    python3 - "$(stats_port)" "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), timeout=30)
    print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}
out=$(http_get /api/v1/queues?executor=script)
case $out in '200 {"status":"success","data":{"executors":[{"executor":"script",'*) ;;
    *) fail "GET /api/v1/queues?executor=script: $out" ;; esac
out=$(http_get /api/v1/queues)
[ "$(echo "$out" | grep -o '"executor":"[a-z]*"' | tr '\n' ' ')" = '"executor":"nms" "executor":"mail" "executor":"script" ' ] ||
    fail "GET /api/v1/queues: $out"
out=$(http_get /api/v1/queues?executor=nope)
case $out in '404 '*) ;; *) fail "GET /api/v1/queues?executor=nope: $out" ;; esac
# delivery STATE: the alert store (the engine's) shows web1's alert STATE at the script
# (the executor process's queue reports it across the socketpair)
delivery() {
    python3 - "$CONTROL" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"command": "alerts"}\n')
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
alerts = json.loads(data)["data"]
states = [a["executors"].get("script", {}).get("state") for a in alerts if a["id"] == "corral.absence/web1"]
sys.exit(0 if states == [sys.argv[2]] else 1)
PY
}
wait_until delivery delivered || fail "the alert store does not show the script's delivery"
kill -HUP "$CORRALD_PID"
wait_log 'reload: rules: 0 added' || fail "SIGHUP to the executor process did not reload the engine"
# a reload that changes an executor: the executor process reads the file again and reopens it
# (privsep_reload.sh tests such reloads through)
sed 's|severity="major"|severity="minor"|' "$WORK/corrald.conf" > "$WORK/changed.conf"
cp "$WORK/corrald.conf" "$WORK/orig.conf"
cp "$WORK/changed.conf" "$WORK/corrald.conf"
kill -HUP "$CORRALD_PID"
wait_log 'reload: executor changed: nms' || fail "a reload that changes an executor did not change it"
cp "$WORK/orig.conf" "$WORK/corrald.conf"
# the state save: a child of the confined engine
[ "$("$CORRAL" ctl -s "$CONTROL" save)" = OK ] || fail "corral ctl save failed"
[ -s "$WORK/state/state" ] || fail "no state saved"
corrald_alive

# ---- 4. kill -9 of the executor process: the engine stops, the spool keeps the alert
touch "$WORK/down"
send_udp "$(input_port udp)" "$(now) web2 app: hello"
wait_log 'executor script: alert corral.absence/web2 attempt 1 failed' ||
    fail "the script was not tried while down"
exe=$CORRALD_PID
kill_corrald
wait_until exited "$engine" || fail "the engine process outlived the executor process"
wait_log 'privsep: the executor process is gone' || fail "the engine did not log the executor's death"
wait_log ']: stopped$' || fail "the engine did not stop cleanly"
has_matching "$CORRALD_LOG" 'exiting with status 1' || fail "the engine's exit status is not 1"
grep -q 'web2' "$WORK/delivered" && fail "delivered while the script was down"
rm -f "$WORK/down"
start_corrald corrald "$WORK/corrald.conf"
[ "$CORRALD_PID" != "$exe" ] || fail "not restarted"
wait_grep "$WORK/delivered" '^corral.absence/web2 ' || fail "the spooled alert was not delivered after the restart"
stop_corrald

# ---- 5. the test build: open and execve in the confined engine
CORRALD=$CORRALD_TEST
CORRAL_TEST_HOOK=open:$WORK/community
export CORRAL_TEST_HOOK
start_corrald hook_open "$WORK/corrald.conf"
wait_log "test hook: open $WORK/community: Permission denied" ||
    fail "the engine was not refused the community file"
stop_corrald
if has_matching "$WORK/corrald.log" 'seccomp on, log mode'; then
    # a sanitizer build logs what the filter would kill (LeakSanitizer needs ptrace at exit)
    echo "$TEST: sanitizer build: the filter only logs; execve not checked"
else
    CORRAL_TEST_HOOK=execve
    start_corrald hook_exec "$WORK/corrald.conf"
    pid=$CORRALD_PID
    wait_exit "$pid"
    st=$?
    CORRALD_PID=
    [ $st -eq 1 ] || fail "corrald exited with $st after its engine's execve, not 1"
    has_matching "$CORRALD_LOG" 'killed by its seccomp filter (SIGSYS' || fail "the SIGSYS is not logged"
    has_matching "$CORRALD_LOG" 'test hook: execve returned' && fail "execve returned"
fi
unset CORRAL_TEST_HOOK
CORRALD=$PROD
echo "$TEST: OK"
