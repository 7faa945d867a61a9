#!/bin/sh
# The real amtool (0.25, Debian's prometheus-alertmanager) against corrald's
# API v2: `alert add` injects an alert that reaches the exec executor through
# corrald's routes, `alert query` lists it (active, then suppressed by a
# silence), `silence add/query/update/expire` as amtool's users run them.
# amtool sends the API token from its --http.config.file (bearer
# credentials); without it, writes are refused.  The fingerprint of the
# alert is the one the real Alertmanager gives it.
. "$(dirname "$0")/corrald_lib.sh"
need python3
AMTOOL=$(command -v amtool) || { echo "skipped: amtool (prometheus-alertmanager) missing"; exit 77; }
# no amtool configuration of the user's
HOME=$WORK
export HOME

TOKEN=corral-test-token-$$-0123456789
printf '%s\n' "$TOKEN" > "$WORK/token"
chmod 600 "$WORK/token"
cat > "$WORK/http.yml" <<EOF
authorization:
  type: Bearer
  credentials_file: $WORK/token
EOF
cat > "$WORK/runner.sh" <<SH
#!/bin/sh
echo "\$CORRAL_ALERT_ID host=\$CORRAL_HOST sev=\$CORRAL_SEVERITY status=\$CORRAL_STATUS summary=\$CORRAL_CORRAL_SUMMARY" >> "$WORK/delivered"
SH
chmod +x "$WORK/runner.sh"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <stats listen="127.0.0.1:0" api-token-file="$WORK/token"/>
  <executors><exec name="runner" program="$WORK/runner.sh"/></executors>
  <routes><route tag="corral.alert" to="runner"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
URL=http://127.0.0.1:$(stats_port)

# am ARGS...: amtool with the token; its output in $WORK/out (amtool warns on
# stderr that corrald's version is not its own: kept apart)
am() {
    "$AMTOOL" --alertmanager.url="$URL" --http.config.file="$WORK/http.yml" "$@" \
        > "$WORK/out" 2>> "$WORK/amtool.err"
}
# has PATTERN: amtool's last output has a line matching PATTERN (grep -E)
has() {
    grep -Eq "$1" "$WORK/out" || fail "amtool's output has no $1: $(cat "$WORK/out")"
}
hasnt() {
    ! grep -Eq "$1" "$WORK/out" || fail "amtool's output has $1: $(cat "$WORK/out")"
}

# without the token: refused, nothing routed
"$AMTOOL" --alertmanager.url="$URL" alert add alertname=Sneaky > "$WORK/out" 2>&1 &&
    fail "amtool alert add without the token succeeded"
grep -q 401 "$WORK/out" || fail "no 401 for amtool without the token: $(cat "$WORK/out")"

am alert add alertname=ApiTest severity=warning instance=web5:9100 job=node \
    --annotation=summary="test alert from amtool" || fail "amtool alert add: $(cat "$WORK/out" "$WORK/amtool.err")"
wait_grep "$WORK/delivered" "^am/[0-9a-f]\{16\} host=web5 sev=warning status=firing summary=test alert from amtool\$" ||
    fail "amtool's alert did not reach the executor"
grep -q Sneaky "$WORK/delivered" && fail "the alert without the token was routed"

am alert query || fail "amtool alert query"
has '^ApiTest +[0-9-]+ [0-9:]+ UTC +test alert from amtool +active'
am alert query ApiTest || fail "amtool alert query ApiTest"
has '^ApiTest '
am alert query 'instance=~"web5.*"' || fail "amtool alert query with a regex"
has '^ApiTest '
am alert query alertname=Other || fail "amtool alert query alertname=Other"
hasnt ApiTest
am -o json alert query || fail "amtool -o json alert query"
python3 - "$WORK/out" <<'PY' || fail "amtool -o json alert query: $(cat "$WORK/out")"
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a) == 1, a
x = a[0]
assert x["labels"]["alertname"] == "ApiTest" and x["labels"]["HOST"] == "web5", x
assert x["status"]["state"] == "active" and x["receivers"] == [{"name": "runner"}], x
assert x["fingerprint"] == x["labels"]["corral_alert_id"][3:], x
PY

# the fingerprint is the one the real Alertmanager gives the same alert
AM=$(command -v prometheus-alertmanager || command -v alertmanager) ||
    { echo "skipped: prometheus-alertmanager missing"; exit 77; }
printf 'route:\n  receiver: "null"\nreceivers:\n  - name: "null"\n' > "$WORK/am.yml"
mkdir -p "$WORK/am"
"$AM" --config.file="$WORK/am.yml" --storage.path="$WORK/am" \
    --web.listen-address=127.0.0.1:0 --cluster.listen-address= > "$WORK/am.log" 2>&1 &
am_pid=$!
track $am_pid
wait_grep "$WORK/am.log" 'msg="Listening on" address=127.0.0.1:[0-9]' || fail "Alertmanager did not listen"
AMURL=http://$(sed -n 's/.*msg="Listening on" address=\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$WORK/am.log" | head -n 1)
"$AMTOOL" --alertmanager.url="$AMURL" alert add alertname=ApiTest severity=warning \
    instance=web5:9100 job=node --annotation=summary="test alert from amtool" 2>> "$WORK/amtool.err" ||
    fail "amtool alert add to Alertmanager"
python3 - "$WORK/out" "$AMURL" <<'PY' || fail "fingerprints differ"
import json, sys, urllib.request
ours = json.load(open(sys.argv[1]))[0]["fingerprint"]
theirs = json.load(urllib.request.urlopen(sys.argv[2] + "/api/v2/alerts", timeout=10))
assert [a["fingerprint"] for a in theirs] == [ours], (ours, theirs)
PY
kill $am_pid
wait_exit $am_pid > /dev/null
untrack $am_pid

# a silence: the alert is suppressed
am silence add alertname=ApiTest --comment="maintenance" --duration=1h ||
    fail "amtool silence add: $(cat "$WORK/out" "$WORK/amtool.err")"
SID=$(cat "$WORK/out")
echo "$SID" | grep -Eq '^[0-9a-f-]{36}$' || fail "amtool silence add printed no id: $SID"
am silence query || fail "amtool silence query"
has "^$SID +alertname=\"ApiTest\" .* maintenance"
am silence query -q || fail "amtool silence query -q"
[ "$(cat "$WORK/out")" = "$SID" ] || fail "silence query -q: $(cat "$WORK/out")"
am silence query instance=web5 || fail "amtool silence query instance=web5"
hasnt "$SID"
am alert query || fail "amtool alert query (silenced)"
hasnt ApiTest
am alert query --silenced || fail "amtool alert query --silenced"
has '^ApiTest .* suppressed'

# silence update of the end and the comment: in place, the id kept (Alertmanager's rule)
am -o json silence update "$SID" --duration=2h --comment="longer" ||
    fail "amtool silence update: $(cat "$WORK/out" "$WORK/amtool.err")"
NEW=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$WORK/out") ||
    fail "silence update's output: $(cat "$WORK/out")"
[ "$NEW" = "$SID" ] || fail "silence update of the end and comment gave a new id"
am silence query || fail "amtool silence query (updated)"
has "^$SID +alertname=\"ApiTest\" .* longer"
am silence query --expired || fail "amtool silence query --expired"
hasnt "$SID"
am alert query --silenced || fail "amtool alert query --silenced (updated)"
has '^ApiTest .* suppressed'

# expired: the alert is active again and sent to the executor once more
am silence expire "$NEW" || fail "amtool silence expire: $(cat "$WORK/out" "$WORK/amtool.err")"
am silence query -q || fail "amtool silence query -q (expired)"
[ -s "$WORK/out" ] && fail "silences left: $(cat "$WORK/out")"
am alert query || fail "amtool alert query (expired)"
has '^ApiTest .* active'
wait_grep "$WORK/delivered" "^am/.* host=web5 .*status=firing" 2 || fail "not sent again when unsilenced"
am silence expire "$NEW" && fail "an expired silence expired again"

# amtool's own check of the server (GET /api/v2/status)
am config show || fail "amtool config show: $(cat "$WORK/amtool.err")"
corrald_alive
stop_corrald
echo "ok"
