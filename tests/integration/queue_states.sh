#!/bin/sh
# Delivery states that say the truth, with the SMTP test server and a script:
#   - a mail held by group-wait is listed as "grouped" with the time it
#     sends, not "delivering"; `corral queue drop` takes it back and drops
#     it: nothing is mailed, the queue is empty;
#   - a script that fails for now is listed as retrying, with its attempts
#     and the time of its next attempt.
. "$(dirname "$0")/corrald_lib.sh"
need python3
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || { echo "skipped: python3-aiosmtpd missing"; exit 77; }

mkdir -p "$WORK/mail" "$WORK/spool"
/usr/bin/python3 "$HERE/smtp_server.py" --dir "$WORK/mail" > "$WORK/smtp.port" 2> "$WORK/smtp.log" &
track $!
wait_grep "$WORK/smtp.port" PORT || fail "the SMTP server did not start"
sport=$(sed -n 's/^PORT //p' "$WORK/smtp.port")
receiver_script
touch "$WORK/down"
CONTROL=$WORK/control.sock
S="-s $CONTROL"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="ops@example.com" group-by="HOST" group-wait="1h"/>
    <exec name="runner" program="$WORK/receiver.sh" backoff="1h" max-backoff="1h"/>
  </executors>
  <routes><route tag="corral.alert" to="mail,runner"/></routes>
</corrald>
XML

start_corrald corrald "$WORK/corrald.conf"
send_udp "$(input_port udp)" "<38>$(date '+%b %e %H:%M:%S') db1 lc: failure on sda"

# the mail waits for its group
grouped() {
    "$CORRAL" queue $S list mail --json > "$WORK/list.json" &&
        python3 - "$WORK/list.json" <<'PY'
import datetime, json, sys
q = json.load(open(sys.argv[1]))["executors"][0]["queued"]
assert len(q) == 1 and q[0]["state"] == "grouped", q
t = datetime.datetime.fromisoformat(q[0]["sends_at"].replace("Z", "+00:00")).timestamp()
now = datetime.datetime.now(datetime.timezone.utc).timestamp()
assert now + 3000 < t < now + 3700, (t, now)  # group-wait="1h"
PY
}
wait_until grouped || fail "the held mail is not listed as grouped: $(cat "$WORK/list.json")"
"$CORRAL" queue $S list mail > "$WORK/list.txt" || fail "corral queue list failed"
grep -q "grouped" "$WORK/list.txt" || fail "the table does not say grouped: $(cat "$WORK/list.txt")"
grep -q "sends at " "$WORK/list.txt" || fail "the table does not say when it sends: $(cat "$WORK/list.txt")"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["executors"][0]["queued"][0]["id"])' \
    "$WORK/list.json")
"$CORRAL" queue $S drop "mail/$id" > "$WORK/drop.out" 2>&1 || fail "the grouped mail was not dropped: $(cat "$WORK/drop.out")"
[ "$(metric corral_executor_queued executor=mail)" -eq 0 ] || fail "the dropped mail is still queued"
"$CORRAL" queue $S list mail --json |
    python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)["executors"][0]["queued"] != [])' ||
    fail "the dropped mail is still listed"

# the script fails for now: retrying, with its attempts and its next attempt
retrying() {
    "$CORRAL" queue $S list runner --json > "$WORK/runner.json" &&
        python3 - "$WORK/runner.json" <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))["executors"][0]["queued"]
assert len(q) == 1 and q[0]["state"] == "retrying" and q[0]["attempts"] >= 1, q
assert q[0]["next_attempt"], q
PY
}
wait_until retrying || fail "the failing script is not listed as retrying: $(cat "$WORK/runner.json")"
"$CORRAL" queue $S list runner | grep -q "next attempt at " || fail "the table does not say when it retries"
corrald_alive
stop_corrald
[ -z "$(ls "$WORK/mail")" ] || fail "the dropped mail was sent: $(ls "$WORK/mail")"
echo "ok"
