#!/bin/sh
# Inhibition: while web1's app has stopped logging (the absence detector's
# alert for web1 is firing), web1's SSH brute-force alert is inhibited:
# recorded, counted, not delivered; web2's is delivered.  When web1's app
# logs again (the absence alert resolved), web1's next brute force is
# delivered.  A malformed inhibit matcher is a configuration error with
# file:line.
. "$(dirname "$0")/corrald_lib.sh"
need python3

receiver_script
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/rules/sshd.xml"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence host="web1" program="app" after="1s"/>
  <inhibit source="rule_id=corral.absence.down" target="class!=absence" equal="HOST"/>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/receiver.sh"/>
  </executors>
  <routes><route class="violation" to="runner"/></routes>
</corrald>
XML
CONTROL=$WORK/control.sock
S="-s $CONTROL"

# a bad matcher: refused with the file and line
sed 's/source="rule_id=corral.absence.down"/source="rule_id=~\&quot;(\&quot;"/' \
    "$WORK/corrald.conf" > "$WORK/bad.conf"
"$CORRALD" -t -f "$WORK/bad.conf" --schema "$SCHEMA" > "$WORK/bad.out" 2>&1 &&
    fail "a bad inhibit matcher was accepted"
grep -q "bad.conf:6: inhibit source=.*bad regular expression" "$WORK/bad.out" ||
    fail "bad inhibit matcher: $(cat "$WORK/bad.out")"

brute() {
    python3 - "$(input_port udp)" "$1" "$2" <<'PY'
import socket, sys
port, host, addr = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(5):
    line = "<38>Dec  4 10:00:0%d %s sshd[42]: Failed password for root from %s port %d ssh2" % (
        i, host, addr, 40000 + i)
    s.sendto(line.encode(), ("127.0.0.1", port))
PY
}
# alert_state STATE MATCHER...: the one alert the matchers select is in STATE
alert_state() {
    _want=$1
    shift
    [ "$("$CORRAL" alerts $S --json "$@" |
        python3 -c 'import json, sys; print("\n".join(a["state"] for a in json.load(sys.stdin)))')" = "$_want" ]
}

start_corrald corrald "$WORK/corrald.conf"
send_udp "$(input_port udp)" "<14>Dec  4 10:00:00 web1 app: hello"
wait_until alert_state firing rule_id=corral.absence.down HOST=web1 ||
    fail "web1's absence alert not firing: $("$CORRAL" alerts $S)"
brute web1 192.0.2.1
brute web2 192.0.2.2
wait_grep "$WORK/delivered" 'web2/' || fail "web2's alert not delivered"
wait_metric corral_alerts_inhibited_total -ge 1 || fail "web1's alert not counted as inhibited"
grep -q 'web1/' "$WORK/delivered" && fail "web1's alert was delivered while web1 is absent"
alert_state inhibited HOST=web1 usracct.device=192.0.2.1 ||
    fail "web1's alert not shown inhibited: $("$CORRAL" alerts $S)"
"$CORRAL" alerts $S HOST=web1 | grep 'ssh.bruteforce/web1/192.0.2.1' | grep -q 'corral.absence/web1/app' ||
    fail "what inhibits web1's alert is not shown: $("$CORRAL" alerts $S)"
alert_state firing HOST=web2 || fail "web2's alert not firing"

# web1's app is back: its absence alert resolves, web1's next alert goes out.
# First after= becomes an hour (a reload keeps what the detector knows), so
# that web1's app is not reported absent again before the test is done.
sed -i 's/after="1s"/after="1h"/' "$WORK/corrald.conf"
"$CORRAL" ctl $S reload > "$WORK/reload.out" || fail "reload failed: $(cat "$WORK/reload.out")"
alert_state firing rule_id=corral.absence.down HOST=web1 || fail "the reload resolved the absence"
send_udp "$(input_port udp)" "<14>Dec  4 10:00:09 web1 app: back"
wait_until alert_state resolved rule_id=~'corral\.absence\..*' HOST=web1 ||
    fail "web1's absence alert not resolved: $("$CORRAL" alerts $S)"
brute web1 192.0.2.3
wait_grep "$WORK/delivered" 'web1/.*192.0.2.3' || fail "web1's alert not delivered once web1 is back"
alert_state firing HOST=web1 usracct.device=192.0.2.3 || fail "web1's new alert not firing"
stop_corrald
echo "ok: an absent host's alerts inhibited, delivered again once it is back"
