#!/bin/sh
# Reload of the executors under privilege separation (doc/privsep.md, the
# L and R frames) against the real daemon, started as root with
# <daemon user="nobody">: the engine reads the file, the executor process
# reads it again itself and opens, hands over and closes its queues, so a
# reload does what it does without privilege separation.
#  1. `corral ctl reload` adding an exec executor and its route, and an
#     SNMP executor whose community file only root may read (the engine
#     cannot, the executor process does): OK, reported; an alert reaches
#     the new script, and the old one.
#  2. SIGHUP changing the new script's argument: the next alert runs with
#     the new argument.
#  3. A reload adding an executor whose secret file is missing: `corral ctl
#     reload` fails with FILE:LINE, the running configuration stays, the
#     running executors still deliver.
#  4. An alert waiting in a script's spool (the script down) when a reload
#     changes that executor: the new configuration delivers it, once.
#  5. A reload removing executors: reported, no longer listed by `corral
#     queue list` nor in the metrics; the others still deliver; corrald
#     stops cleanly.
# Needs root (the engine drops to nobody); skipped (77) otherwise.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to test the privilege drop"; exit 77; }
id nobody > /dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }

# the engine, as nobody, reads the configuration again on reload; the state is its to write
chmod 755 "$WORK"
mkdir -p "$WORK/state" "$WORK/spool"
chown nobody "$WORK/state"
umask 077
printf 'public\n' > "$WORK/community" # root's, 0600: only the executor process may read it
umask 022

# the scripts (run as nobody) record their argument and the alert; the second one exits 75
# (try again) while $WORK/down exists
cat > "$WORK/first.sh" <<SH
#!/bin/sh
echo "\$1 \$CORRAL_ALERT_ID" >> "$WORK/delivered"
SH
cat > "$WORK/second.sh" <<SH
#!/bin/sh
[ -e "$WORK/down" ] && exit 75
echo "\$1 \$CORRAL_ALERT_ID" >> "$WORK/delivered"
SH
chmod 755 "$WORK/first.sh" "$WORK/second.sh"
: > "$WORK/delivered"
chmod 666 "$WORK/delivered"
CONTROL=$WORK/control.sock

# conf EXECUTORS ROUTE_TO: the configuration with those executors, routing alerts to ROUTE_TO
conf() {
    cat > "$WORK/corrald.conf.new" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <daemon user="nobody"/>
  <state file="$WORK/state/state"/>
  <control socket="$CONTROL"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence after="1s"/>
  <executors spool="$WORK/spool">
    <exec name="first" program="$WORK/first.sh"><arg>one</arg></exec>
$1
  </executors>
  <routes><route tag="corral.alert" to="$2"/></routes>
</corrald>
XML
    chmod 644 "$WORK/corrald.conf.new"
    mv "$WORK/corrald.conf.new" "$WORK/corrald.conf"
}
second() {
    echo "    <exec name=\"second\" program=\"$WORK/second.sh\" backoff=\"200ms\" max-backoff=\"200ms\" attempts=\"1000\"><arg>$1</arg></exec>"
}
NMS="    <snmp name=\"nms\" target=\"udp:127.0.0.1:9\" community-file=\"$WORK/community\"/>"
now() { date '+%b %e %H:%M:%S'; }
# alert HOST: a message from HOST, whose absence a second later is the alert corral.absence/HOST
alert() { send_udp "$(input_port udp)" "$(now) $1 app: hello"; }
# reload_ok NAME: `corral ctl reload`, which must succeed; its answer in $WORK/NAME.out
reload_ok() {
    "$CORRAL" ctl -s "$CONTROL" reload > "$WORK/$1.out" 2>&1 ||
        fail "corral ctl reload ($1) failed: $(cat "$WORK/$1.out")"
    echo "$TEST: reload $1: $(tr '\n' '|' < "$WORK/$1.out")"
}
answered() { grep -q -- "$2" "$WORK/$1.out" || fail "reload $1: no '$2' in: $(cat "$WORK/$1.out")"; }

conf "" first
start_corrald corrald "$WORK/corrald.conf"
engine=$(sed -n 's/.*privilege separation: engine process \([0-9]*\) .*/\1/p' "$CORRALD_LOG" | tail -n 1)
[ -n "$engine" ] || fail "not privilege-separated"
alert h0
wait_grep "$WORK/delivered" '^one corral.absence/h0$' || fail "the first script did not get h0"

# ---- 1. executors added: an exec one with a route, and an SNMP one with a root-only secret
conf "$(second two)
$NMS" first,second
reload_ok added
answered added '^executor added: second$'
answered added '^executor added: nms$'
answered added '^OK$'
has_matching "$CORRALD_LOG" 'privsep: the executor process reloaded its executors (3)' ||
    fail "the executor process did not reload its executors"
ls -l "/proc/$engine/fd" 2>/dev/null | grep -q "$WORK/community" && fail "the engine opened the community file"
alert h1
wait_grep "$WORK/delivered" '^two corral.absence/h1$' || fail "the added script did not get h1"
wait_grep "$WORK/delivered" '^one corral.absence/h1$' || fail "the first script did not get h1"
wait_metric corral_executor_delivered_total executor=second -ge 1 ||
    fail "no delivered count for the added executor"

# ---- 2. SIGHUP to the executor process (the main pid) changes the script's argument
conf "$(second deux)
$NMS" first,second
kill -HUP "$CORRALD_PID"
wait_log 'reload: executor changed: second' || fail "SIGHUP did not change the executor"
alert h2
wait_grep "$WORK/delivered" '^deux corral.absence/h2$' || fail "the changed executor did not use its new argument"
grep -q '^two corral.absence/h2$' "$WORK/delivered" && fail "h2 ran with the old argument too"

# ---- 3. a secret file missing: the reload fails with file:line, the running executors stay
cp "$WORK/corrald.conf" "$WORK/good.conf"
conf "$(second trois)
$NMS
    <snmp name=\"nms2\" target=\"udp:127.0.0.1:9\" community-file=\"$WORK/missing\"/>" first,second
line=$(grep -n 'name="nms2"' "$WORK/corrald.conf" | cut -d: -f1)
if "$CORRAL" ctl -s "$CONTROL" reload > "$WORK/missing.out" 2>&1; then
    fail "a reload with a missing secret file succeeded: $(cat "$WORK/missing.out")"
fi
echo "$TEST: reload missing: $(tr '\n' '|' < "$WORK/missing.out")"
answered missing 'reload failed, the running configuration stays'
answered missing "^$WORK/corrald.conf:$line: executor nms2: .*$WORK/missing"
answered missing '^FAILED$'
wait_log "reload: $WORK/corrald.conf:$line: executor nms2" || fail "the failure is not logged with file:line"
alert h3
wait_grep "$WORK/delivered" '^deux corral.absence/h3$' || fail "the running script did not get h3 after the failed reload"
wait_grep "$WORK/delivered" '^one corral.absence/h3$' || fail "the first script did not get h3 after the failed reload"
cp "$WORK/good.conf" "$WORK/corrald.conf"

# ---- 4. an alert in the spool of an executor the reload changes: delivered by its new configuration
touch "$WORK/down"
alert h4
wait_log 'executor second: alert corral.absence/h4 attempt 2 failed' || fail "the script was not tried while down"
conf "$(second quatre)
$NMS" first,second
reload_ok changed
answered changed '^executor changed: second$'
rm -f "$WORK/down"
wait_grep "$WORK/delivered" '^quatre corral.absence/h4$' || fail "the spooled alert was lost in the reload"
alert h5
wait_grep "$WORK/delivered" '^quatre corral.absence/h5$' || fail "the changed executor did not get h5"
[ "$(grep -c 'corral.absence/h4$' "$WORK/delivered")" = 2 ] ||
    fail "h4 delivered other than once by each script: $(grep h4 "$WORK/delivered")"

# ---- 5. executors removed
conf "" first
reload_ok removed
answered removed '^executor removed: second'
answered removed '^executor removed: nms'
"$CORRAL" queue -s "$CONTROL" list > "$WORK/queues.txt" || fail "corral queue list failed"
grep -q '^executor first:' "$WORK/queues.txt" || fail "queue list: $(cat "$WORK/queues.txt")"
grep -q 'second\|nms' "$WORK/queues.txt" && fail "removed executors still listed: $(cat "$WORK/queues.txt")"
[ "$(metric corral_executor_submitted_total executor=second)" = -1 ] || fail "the removed executor is still in the metrics"
alert h6
wait_grep "$WORK/delivered" '^one corral.absence/h6$' || fail "the first script did not get h6"
[ "$(metric corral_privsep_rejected_total)" = 0 ] ||
    fail "the executor process refused requests: $(metric corral_privsep_rejected_total)"
corrald_alive
stop_corrald
echo "$TEST: OK"
