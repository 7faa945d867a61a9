#!/bin/sh
# Reload under load: rules change while messages stream in over TCP; after
# SIGHUP no message is lost, the new rule classifies, an open SSH session
# survives and still produces its event; a broken rule file is reported with
# file:line and the old rules keep running.
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cp "$top_srcdir/tests/integration/session_rules.xml" "$WORK/rules/"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="all"/></outputs>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port tcp)

now=$(date '+%b %e %H:%M:%S')
printf '%s web1 sshd[4242]: Accepted password for alice from 10.0.0.5 port 50000 ssh2\n' "$now" > "$WORK/open.log"
send_tcp_file "$port" "$WORK/open.log"

# 20000 numbered messages over one connection, while the rules change twice
python3 - "$port" > "$WORK/sender.log" 2>&1 <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for i in range(20000):
    s.sendall(b"<13>Dec  3 10:00:00 web1 app: seq %d\n" % i)
    if i % 500 == 0:
        time.sleep(0.02)
s.close()
PY
sender=$!
track $sender
# the rules change while the messages stream in: once the first is out
wait_grep "$WORK/out.json" '"seq":' || fail "no message streamed in"
cat > "$WORK/rules/new.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-03">
  <ruleset name="new" id="test-new"><patterns><pattern>newprog</pattern></patterns><rules>
    <rule provider="test" id="test.new" class="added"><patterns><pattern>hello @STRING:who@</pattern></patterns></rule>
  </rules></ruleset>
</patterndb>
XML
kill -HUP "$CORRALD_PID"
wait_log "rules: 1 added" || fail "reload not reported"
grep -q "contexts: 1 kept" "$WORK/corrald.log" || fail "open context not kept"
# and again once more messages are out (unless the sender is done by then)
streamed=$(count_matching "$WORK/out.json" '"seq":')
more_or_done() { [ "$(count_matching "$WORK/out.json" '"seq":')" -gt "$streamed" ] || exited "$sender"; }
wait_until more_or_done || fail "no more messages streamed in"
# a broken file: reported with its line, old rules stay
printf '<patterndb version="5">\n<ruleset name="x" id="x">\n<rules>\n<rule id="bad"><patterns><pattern>x @FOO:bar@</pattern></patterns></rule>\n</rules></ruleset></patterndb>\n' > "$WORK/rules/broken.xml"
kill -HUP "$CORRALD_PID"
wait_log "broken.xml:4" || fail "broken rule file not reported with file:line"
grep -q "reload failed" "$WORK/corrald.log" || fail "broken reload not reported as failed"
wait "$sender" || fail "sender failed"
untrack "$sender"

printf '%s web1 newprog: hello bob\n%s web1 sshd[4242]: pam_unix(sshd:session): session closed for user alice\n' "$now" "$now" > "$WORK/close.log"
send_tcp_file "$port" "$WORK/close.log"
wait_grep "$WORK/out.json" '"test.session"\|test.session' || fail "session event missing after reloads"

# the sender's connection may still be read after the other one
wait_grep "$WORK/out.json" '"seq":' 20000 || fail "$(grep -c '"seq":' "$WORK/out.json") of 20000 messages arrived"
got=$(grep -c '"seq":' "$WORK/out.json")
[ "$got" -eq 20000 ] || fail "$got of 20000 messages arrived"
# in order: the seq values come out 0..19999
python3 - "$WORK/out.json" <<'PY' || fail "messages out of order"
import json, sys
seqs = [int(o["seq"]) for o in map(json.loads, open(sys.argv[1])) if "seq" in o]
sys.exit(0 if seqs == list(range(20000)) else 1)
PY
grep -q '"\.classifier\.rule_id":"test\.new"' "$WORK/out.json" || fail "new rule did not classify"
grep -q 'session of alice from 10.0.0.5 closed' "$WORK/out.json" || fail "wrong session event"
stop_corrald "$CORRALD_PID"
echo "ok: 20000 messages through two reloads, context kept, broken file refused"
