#!/bin/sh
# A step of the wall clock (settimeofday, an NTP step) moves no interval:
# with an SSH session open (the shipped rules, a 24 h context) and a host
# watched by <absence after="1h">, corrald's wall clock is stepped 2 days
# ahead (libfaketime; CLOCK_MONOTONIC untouched).  A canary context of 3 s
# opened after the step must expire (so the engine has ticked for 3 s of
# real time since the step) and be the only one to: the session stays open
# and no absence is reported.  Then the same with the clock stepped 2 days
# back: the canary still expires after its 3 s.  Run with one engine and
# with two workers.  Last, an executor's retry: a delivery fails, the clock
# is stepped 2 days back while the retry waits (5 to 10 s of backoff), and
# the retry still comes.
. "$(dirname "$0")/corrald_lib.sh"
need python3
FAKETIME_LIB=
for f in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1; do
    [ -f "$f" ] && FAKETIME_LIB=$f && break
done
[ -n "$FAKETIME_LIB" ] || { echo "$TEST: libfaketime not installed, skipped"; exit 77; }
# the sanitizer builds of the suite: their runtimes and libfaketime both
# interpose the clock and thread functions, and corrald under both stops
# answering; the plain build runs this test
if ldd "$CORRALD" 2>/dev/null | grep -Eq 'lib(asan|tsan)\.so'; then
    echo "$TEST: a sanitizer build, whose runtime cannot share the process with libfaketime: skipped"
    exit 77
fi

CONTROL=$WORK/control.sock
cat > "$WORK/canary.xml" <<'XML'
<?xml version="1.0"?>
<patterndb version="5" pub_date="2026-12-06">
  <ruleset name="canary" id="test-canary">
    <patterns><pattern>canary</pattern></patterns>
    <rules>
      <rule provider="test" id="test.alarm" class="system">
        <patterns><pattern>alarm @NUMBER:n@</pattern></patterns>
        <actions>
          <action>
            <message><values><value name="MESSAGE">alarm ${n}</value></values><tags><tag>corral.alert</tag></tags></message>
          </action>
        </actions>
      </rule>
      <rule provider="test" id="test.canary" class="system" context-id="canary-${n}" context-timeout="3" context-scope="global">
        <patterns><pattern>canary @NUMBER:n@</pattern></patterns>
        <actions>
          <action trigger="timeout">
            <message><values><value name="MESSAGE">canary ${n}@1 expired</value></values></message>
          </action>
        </actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
XML
now() { date '+%b %e %H:%M:%S'; }

# step WORKERS STEP
step() {
    rm -f "$WORK/out.json"
    cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/rules/sshd.xml"/>
  <rules path="$WORK/canary.xml"/>
  <control socket="$CONTROL"/>
  <engine workers="$1"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
  <absence after="1h"/>
</corrald>
XML
    echo "+0" > "$WORK/faketime"
    # corrald only: the test's own clock (date, the waits) is not stepped
    export LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$WORK/faketime" FAKETIME_NO_CACHE=1 \
        FAKETIME_DONT_FAKE_MONOTONIC=1
    start_corrald "corrald-$1$2" "$WORK/corrald.conf"
    unset LD_PRELOAD FAKETIME_TIMESTAMP_FILE FAKETIME_NO_CACHE FAKETIME_DONT_FAKE_MONOTONIC
    port=$(input_port udp)
    send_udp "$port" "<38>$(now) web1 sshd[4242]: Accepted password for alice from 10.0.0.9 port 5555 ssh2"
    wait_metric corral_contexts_open -eq 1 || fail "session not opened: $(metric corral_contexts_open)"
    [ "$(metric corral_absence_sources)" = 1 ] || fail "web1 not watched"
    echo "$2" > "$WORK/faketime"
    send_udp "$port" "<38>$(now) web2 canary: canary 1"
    wait_grep "$WORK/out.json" 'canary 1 expired' || fail "canary did not expire (step $2)"
    [ "$(metric corral_contexts_expired_total)" = 1 ] ||
        fail "step $2, $1 workers: contexts expired: $(metric corral_contexts_expired_total) (the session?)"
    [ "$(metric corral_contexts_open)" = 1 ] || fail "step $2: session closed: $(metric corral_contexts_open)"
    if grep -q 'was never seen to close\|has been silent' "$WORK/out.json"; then
        fail "step $2, $1 workers: $(cat "$WORK/out.json")"
    fi
    [ "$(metric corral_absence_down)" = 0 ] || fail "step $2: absent: $(metric corral_absence_down)"
    corrald_alive
    stop_corrald "$CORRALD_PID"
}
step 1 +2d
step 2 +2d
step 2 -2d

# the executor's retry across a step back: the hook fails once (75: retry), then delivers
cat > "$WORK/hook.sh" <<SH
#!/bin/sh
[ -e "$WORK/failed" ] || { touch "$WORK/failed"; exit 75; }
echo "\$CORRAL_ALERT_ID" >> "$WORK/delivered"
SH
chmod +x "$WORK/hook.sh"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/canary.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="hook" program="$WORK/hook.sh" backoff="10s"/>
  </executors>
  <routes><route tag="corral.alert" to="hook"/></routes>
</corrald>
XML
echo "+0" > "$WORK/faketime"
export LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$WORK/faketime" FAKETIME_NO_CACHE=1 \
    FAKETIME_DONT_FAKE_MONOTONIC=1
start_corrald corrald-retry "$WORK/corrald.conf"
unset LD_PRELOAD FAKETIME_TIMESTAMP_FILE FAKETIME_NO_CACHE FAKETIME_DONT_FAKE_MONOTONIC
send_udp "$(input_port udp)" "<38>$(now) web3 canary: alarm 7"
wait_until test -e "$WORK/failed" || fail "the hook never ran"
echo "-2d" > "$WORK/faketime"
wait_grep "$WORK/delivered" . || fail "the retry did not come after the clock stepped back"
corrald_alive
stop_corrald "$CORRALD_PID"
echo "ok: a 2-day step of the wall clock either way expires no session, reports no absence, delays no retry"
