#!/bin/sh
# privsep_check_user: `corrald -t` checks, as the engine's user, what the
# engine writes and reads once it has dropped to that user; a stop whose
# state save fails exits non-zero.  Started as root with <daemon
# user="nobody"> (skipped, 77, unless root):
#
#   (a) the state file in a directory of root's (mode 0700): the engine, as
#       nobody, could never save it; corrald -t refuses, with <state>'s
#       file:line, and says it checked as nobody (before: "configuration
#       OK", as root).  So do an event file to create in a directory of
#       root's (0755), an api-token-file only root reads (read again on
#       reload), a file input's position file in a directory of root's, and,
#       with privsep="no" (one process, which drops), an executor spool in a
#       directory of root's.  Once the directories are nobody's, -t passes.
#   (b) corrald started anyway with the state in root's directory: 50 SSH
#       sessions open 50 contexts; on SIGTERM the engine's save fails: it
#       logs it at error, and corrald exits non-zero (before: 0, and the 50
#       contexts were lost without a word).

. "$(dirname "$0")/corrald_lib.sh"
need python3
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to test the privilege drop"; exit 77; }
id nobody > /dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }

chmod 755 "$WORK"
mkdir -p "$WORK/state" "$WORK/events" "$WORK/spool-parent" "$WORK/pos" "$WORK/logs"
chmod 700 "$WORK/state" "$WORK/spool-parent"
chmod 755 "$WORK/events" "$WORK/pos"
printf 'abcdefghijklmnopqrstuvwxyz\n' > "$WORK/token"
chmod 600 "$WORK/token"
: > "$WORK/logs/app.log"
chmod 644 "$WORK/logs/app.log"
RULES=$top_srcdir/tests/integration/session_rules.xml

# config FILE PRIVSEP: the configuration, one element a line (the test greps their lines)
config() {
    cat > "$1" <<XML
<corrald>
  <rules path="$RULES"/>
  <daemon user="nobody" privsep="$2"/>
  <state file="$WORK/state/state" interval="1h"/>
  <stats listen="127.0.0.1:0" api-token-file="$WORK/token"/>
  <inputs>
    <udp listen="127.0.0.1:0" name="udp"/>
    <file path="$WORK/logs/app.log" name="app" position-file="$WORK/pos/app.pos"/>
  </inputs>
  <outputs><file path="$WORK/events/out.json" format="json"/></outputs>
  <executors spool="$WORK/spool-parent/spool">
    <exec name="script" program="/bin/true"/>
  </executors>
  <routes><route tag="never" to="script"/></routes>
</corrald>
XML
}
line() { grep -n "$2" "$1" | head -n 1 | cut -d: -f1; }

# ---- (a) corrald -t
for privsep in yes no; do
    config "$WORK/c-$privsep.conf" $privsep
    "$CORRALD" -t -f "$WORK/c-$privsep.conf" > "$WORK/check.txt" 2>&1 &&
        fail "privsep=$privsep: -t passed with the state in a directory nobody cannot write"
    C=$WORK/c-$privsep.conf
    for expect in \
        "$C:$(line "$C" '<state'): state file $WORK/state/state: cannot save it: Permission denied" \
        "$C:$(line "$C" '<outputs>'): output file:$WORK/events/out.json: $WORK/events/out.json: cannot create it in $WORK/events: Permission denied" \
        "$C:$(line "$C" '<stats'): api-token-file $WORK/token: Permission denied" \
        "$C:$(line "$C" '<file path'): input app: position file $WORK/pos/app.pos: directory $WORK/pos: Permission denied" \
        "(checked as user nobody, whom the engine process runs as)"; do
        grep -qF "$expect" "$WORK/check.txt" || fail "privsep=$privsep: no \"$expect\" in: $(cat "$WORK/check.txt")"
    done
    # the spool: the executor process's (root's) under privilege separation, the dropped one's without
    spool="$C:$(line "$C" '<executors'): executor spool: cannot create directory $WORK/spool-parent/spool in $WORK/spool-parent: Permission denied"
    if [ $privsep = no ]; then
        grep -qF "$spool" "$WORK/check.txt" || fail "privsep=no: spool not checked as nobody: $(cat "$WORK/check.txt")"
    else
        grep -qF "executor spool" "$WORK/check.txt" && fail "privsep=yes: the executor's spool checked as nobody"
    fi
done
chown nobody "$WORK/state" "$WORK/events" "$WORK/spool-parent" "$WORK/pos" "$WORK/token"
for privsep in yes no; do
    "$CORRALD" -t -f "$WORK/c-$privsep.conf" > "$WORK/check.txt" 2>&1 ||
        fail "privsep=$privsep: -t refused what nobody can do: $(cat "$WORK/check.txt")"
done
[ -z "$(ls -A "$WORK/state")" ] || fail "-t left a file in the state directory: $(ls -A "$WORK/state")"

# ---- (b) a final save that fails
chown root "$WORK/state" "$WORK/token"
cat > "$WORK/run.conf" <<XML
<corrald>
  <rules path="$RULES"/>
  <daemon user="nobody"/>
  <state file="$WORK/state/state" interval="1h"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
</corrald>
XML
start_corrald corrald "$WORK/run.conf"
P=$(input_port udp)
i=0
while [ $i -lt 50 ]; do
    set -- "$@" "<38>Jan  1 00:00:00 web1 sshd[$((1000 + i))]: Accepted password for u$i from 10.0.0.$i port 22 ssh2"
    i=$((i + 1))
done
send_udp "$P" "$@"
wait_metric corral_contexts_open -ge 50 || fail "50 sessions did not open 50 contexts"
kill -TERM "$CORRALD_PID"
wait_exit "$CORRALD_PID"
st=$?
CORRALD_PID=
[ $st -ne 0 ] && [ $st -ne 255 ] || fail "corrald exited with $st although the state was not saved"
grep -q "corrald\[error\]: cannot save state to $WORK/state/state" "$CORRALD_LOG" || fail "the failed save not logged at error"
grep -q "corrald\[error\]: the state could not be saved at shutdown" "$CORRALD_LOG" || fail "the lost state not logged at error"
[ ! -e "$WORK/state/state" ] || fail "a state file after all"
echo "privsep_check_user: -t checks as nobody (state, events, token, positions, spool); a lost final save exits $st"
