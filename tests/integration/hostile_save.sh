#!/bin/sh
# A state save does not stop corrald: while a save is held open (the saving
# child waits on a FIFO, CORRALD_TEST_SAVE_GATE), corrald still answers its
# metrics endpoint and opens contexts from new messages; `corral ctl save`
# answers only once its save is written; a save asked for meanwhile follows
# the running one and holds the newer contexts, which a restart after kill -9
# restores.  SIGTERM during a held save stops corrald at once with a complete
# final save and no temporary file left; a save that cannot be written is
# counted, logged and answered FAILED.
. "$(dirname "$0")/corrald_lib.sh"
need python3 mkfifo

mkdir "$WORK/st"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <state file="$WORK/st/state" interval="1h"/>
  <control socket="$WORK/control.sock"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
</corrald>
XML
now=$(date '+%b %e %H:%M:%S')
open_session() {
    send_udp "$(input_port udp)" \
        "$(printf '%s web1 sshd[%s]: Accepted password for u%s from 10.0.0.1 port 1 ssh2' "$now" "$1" "$1")"
}
# ctl_save NAME: `corral ctl save` in the background, its answer in $WORK/NAME.answer
ctl_save() {
    "$CORRAL" ctl -s "$WORK/control.sock" save > "$WORK/$1.answer" 2>&1 &
    track $!
}
answered() {
    [ -s "$WORK/$1.answer" ]
}
# release: lets the held saving child go on (opening the FIFO for writing
# waits for the child to open it for reading)
release() {
    echo go > "$WORK/gate"
}

mkfifo "$WORK/gate"
CORRALD_TEST_SAVE_GATE=$WORK/gate
export CORRALD_TEST_SAVE_GATE
start_corrald first "$WORK/corrald.conf"
open_session 101
open_session 102
wait_metric corral_contexts_open -eq 2 || fail "the first sessions were not opened"

# --- a save held open: corrald goes on
ctl_save one
wait_metric corral_state_save_running -eq 1 || fail "no save running"
open_session 103
# the metrics endpoint answers (metric reads it) and the message was processed
wait_metric corral_contexts_open -eq 3 || fail "corrald stopped processing during a save"
answered one && fail "ctl save answered before its save was written: $(cat "$WORK/one.answer")"
[ -e "$WORK/st/state" ] && fail "a state file appeared while the save was held"
# asked for during the running save: coalesced into one after it
ctl_save two
ctl_save three
wait_metric corral_state_save_requests_total -eq 3 || fail "the save requests did not arrive"
release
wait_until answered one || fail "ctl save did not answer after its save"
grep -qx OK "$WORK/one.answer" || fail "ctl save: $(cat "$WORK/one.answer")"
answered two && fail "the second ctl save answered with the first save"
wait_metric corral_state_saves_total -eq 1 || fail "first save not counted"
wait_metric corral_state_save_running -eq 1 || fail "the coalesced save did not start"
release
wait_until answered two || fail "the coalesced save did not answer"
wait_until answered three || fail "the coalesced save did not answer the third request"
grep -qx OK "$WORK/two.answer" && grep -qx OK "$WORK/three.answer" || fail "coalesced save failed"
wait_metric corral_state_saves_total -eq 2 || fail "two saves expected (the third coalesced)"
[ "$(metric corral_state_save_requests_total)" = 3 ] || fail "requests miscounted"
wait_metric corral_state_save_running -eq 0 || fail "a save still running"
[ "$(metric corral_state_save_failures_total)" = 0 ] || fail "a save failure counted"
# kill -9: no save at shutdown, so the restart reads what the coalesced save wrote
kill_corrald
unset CORRALD_TEST_SAVE_GATE
start_corrald second "$WORK/corrald.conf"
grep -q "3 open contexts restored" "$WORK/second.log" || fail "the background save lost contexts"

# --- SIGTERM while a save is held: the child is stopped, the final save made in-process
stop_corrald "$CORRALD_PID"
CORRALD_TEST_SAVE_GATE=$WORK/gate
export CORRALD_TEST_SAVE_GATE
start_corrald third "$WORK/corrald.conf"
open_session 104
wait_metric corral_contexts_open -eq 4 || fail "session 104 not opened"
ctl_save four
wait_metric corral_state_save_running -eq 1 || fail "no save running before SIGTERM"
stop_corrald "$CORRALD_PID"
grep -qx OK "$WORK/four.answer" || fail "ctl save pending at SIGTERM: $(cat "$WORK/four.answer")"
ls "$WORK/st" | grep -q tmp && fail "temporary files left: $(ls "$WORK/st")"
unset CORRALD_TEST_SAVE_GATE
start_corrald fourth "$WORK/corrald.conf"
grep -q "4 open contexts restored" "$WORK/fourth.log" || fail "the final save lost contexts"

# --- a save that cannot be written: counted, logged, answered FAILED
rm -r "$WORK/st"
ctl_save five
wait_until answered five || fail "the failing save did not answer"
grep -qx FAILED "$WORK/five.answer" || fail "failed save answered: $(cat "$WORK/five.answer")"
wait_metric corral_state_save_failures_total -eq 1 || fail "save failure not counted"
wait_log "cannot save state to $WORK/st/state" || fail "save failure not logged"
mkdir "$WORK/st"
stop_corrald "$CORRALD_PID"
echo "ok: saves run beside the loop, coalesce, survive SIGTERM and report failures"
