#!/bin/sh
# Restart and crash: open SSH sessions survive SIGTERM (state written at
# shutdown) and kill -9 (state saved every second); their close messages
# still produce the correlated events after the restart.  A half-written or
# garbage state file does not stop corrald from starting: what the first
# keeps intact loads, the second is set aside.
. "$(dirname "$0")/corrald_lib.sh"
need python3

CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <state file="$WORK/state" interval="1s"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
</corrald>
XML
now=$(date '+%b %e %H:%M:%S')
line() { printf '%s web1 sshd[%s]: %s' "$now" "$1" "$2"; }

# --- SIGTERM in the middle of open sessions
start_corrald first "$WORK/corrald.conf"
send_udp "$(input_port udp)" "$(line 101 'Accepted password for alice from 10.0.0.1 port 1 ssh2')" \
                 "$(line 102 'Accepted password for bob from 10.0.0.2 port 2 ssh2')"
wait_metric corral_contexts_open -eq 2 || fail "the two sessions were not opened"
stop_corrald "$CORRALD_PID"
[ -s "$WORK/state" ] || fail "no state file written at shutdown"

start_corrald second "$WORK/corrald.conf"
grep -q "2 open contexts restored" "$WORK/second.log" || fail "contexts not restored"
send_udp "$(input_port udp)" "$(line 101 'pam_unix(sshd:session): session closed for user alice')"
wait_grep "$WORK/out.json" 'session of alice from 10.0.0.1 closed' || fail "no event after restart"

# --- kill -9: the periodic save (every second) keeps bob's and carol's sessions
send_udp "$(input_port udp)" "$(line 103 'Accepted password for carol from 10.0.0.3 port 3 ssh2')"
wait_metric corral_contexts_open -eq 3 || fail "carol's session was not opened"
# a periodic save counted after carol's session was opened has it
saves=$(metric corral_state_saves_total)
wait_metric corral_state_saves_total -gt "$saves" || fail "no periodic state save"
kill_corrald
start_corrald third "$WORK/corrald.conf"
# alice's context stays open after her close message (it only ends at its timeout)
grep -q "3 open contexts restored" "$WORK/third.log" || fail "contexts lost by kill -9"
send_udp "$(input_port udp)" "$(line 102 'pam_unix(sshd:session): session closed for user bob')" \
                 "$(line 103 'pam_unix(sshd:session): session closed for user carol')"
wait_grep "$WORK/out.json" 'session of carol from 10.0.0.3 closed' || fail "carol's event missing"
grep -q 'session of bob from 10.0.0.2 closed' "$WORK/out.json" || fail "bob's event missing"
stop_corrald "$CORRALD_PID"

# --- a torn state file (as a crash in the middle of writing one would leave,
#     were it not for the rename): the contexts cut off are lost and counted;
#     plain garbage is no state file: set aside
head -c 100 "$WORK/state" > "$WORK/state.torn"
mv "$WORK/state.torn" "$WORK/state"
start_corrald fourth "$WORK/corrald.conf"
grep -q "saved contexts lost to damage" "$WORK/fourth.log" || fail "torn state file not reported"
stop_corrald "$CORRALD_PID"
head -c 5000 /dev/urandom > "$WORK/state"
start_corrald fifth "$WORK/corrald.conf"
grep -q "unusable" "$WORK/fifth.log" || fail "garbage state file not reported"
[ -f "$WORK/state.corrupt" ] || fail "garbage state not moved aside"
stop_corrald "$CORRALD_PID"
echo "ok: sessions survive SIGTERM and kill -9; bad state files are set aside"
