#!/bin/sh
# Alertmanager's API v2 in corrald: every endpoint's answer has the shape of
# Alertmanager's OpenAPI definitions (apiv2_spec.py), with corrald's alerts
# in it as Alertmanager would list them: a rule alert firing (active), one
# silenced and one inhibited (suppressed, with the silence id and the
# inhibiting alert's fingerprint), and an alert posted to /api/v2/alerts,
# which reaches the exec executor through the routes with HOST, severity and
# summary from its labels and annotations, and the fingerprint Alertmanager
# gives its label set.  Filters, writes that need the token, bad alerts
# (400, counted, none routed), silences updated and expired, /-/healthy.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl

TOKEN=corral-test-token-$$-0123456789
printf '%s\n' "$TOKEN" > "$WORK/token"
chmod 600 "$WORK/token"
cat > "$WORK/runner.sh" <<SH
#!/bin/sh
echo "\$CORRAL_ALERT_ID host=\$CORRAL_HOST sev=\$CORRAL_SEVERITY status=\$CORRAL_STATUS summary=\$CORRAL_CORRAL_SUMMARY" >> "$WORK/delivered"
SH
chmod +x "$WORK/runner.sh"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <stats listen="127.0.0.1:0" api-token-file="$WORK/token"/>
  <alerts resolve-timeout="1h"/>
  <inhibit source="rule_id=test.lc.stuck" target="rule_id=test.lc.fail" equal="HOST"/>
  <executors><exec name="runner" program="$WORK/runner.sh"/></executors>
  <routes><route tag="corral.alert" to="runner"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
URL=http://127.0.0.1:$(stats_port)
AUTH="Authorization: Bearer $TOKEN"

# spec SCHEMA PATH [CURL ARGS]: GET PATH answers 200 with JSON of SCHEMA, kept in $WORK/answer
spec() {
    _s=$1 _p=$2
    shift 2
    _code=$(curl -sS -o "$WORK/answer" -w '%{http_code}' "$@" "$URL$_p") || fail "curl $_p"
    [ "$_code" = 200 ] || fail "$_p: status $_code: $(cat "$WORK/answer")"
    python3 "$HERE/apiv2_spec.py" "$_s" "$WORK/answer" || fail "$_p is no $_s: $(cat "$WORK/answer")"
}
# status METHOD PATH [CURL ARGS]: the HTTP status, the body in $WORK/answer
status() {
    _m=$1 _p=$2
    shift 2
    curl -sS -o "$WORK/answer" -w '%{http_code}' -X "$_m" "$@" "$URL$_p" || fail "curl $_m $_p"
}
# py EXPRESSION: evaluates EXPRESSION with a = the JSON in $WORK/answer; fails when false
py() {
    python3 -c "import json, sys; a = json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" \
        "$WORK/answer" || fail "not ($1): $(cat "$WORK/answer")"
}

fire() {
    send_udp "$(input_port udp)" "<38>$(date '+%b %e %H:%M:%S') $1 lc: $3 $2"
}
fire web1 sdx stuck
fire web1 sda "failure on"
fire web2 sdb "failure on"
# a Prometheus-like alert, through the routes to the executor
cat > "$WORK/post.json" <<'EOF'
[{"labels": {"alertname": "DiskFull", "instance": "web3:9100", "severity": "critical",
             "job": "node"},
  "annotations": {"summary": "disk full on web3", "runbook": "https://wiki/disk"},
  "generatorURL": "http://prometheus:9090/graph?g0.expr=up"}]
EOF
[ "$(status POST /api/v2/alerts -H "$AUTH" -H 'Content-Type: application/json' \
    --data-binary @"$WORK/post.json")" = 200 ] || fail "POST /api/v2/alerts: $(cat "$WORK/answer")"
# Alertmanager's fingerprint of that label set (FNV-1a 64 of the sorted names and values)
FP=$(python3 - <<'PY'
labels = {"alertname": "DiskFull", "instance": "web3:9100", "severity": "critical", "job": "node"}
h = 14695981039346656037
for k in sorted(labels):
    for part in (k.encode(), b"\xff", labels[k].encode(), b"\xff"):
        for byte in part:
            h = ((h ^ byte) * 1099511628211) % 2**64
print("%016x" % h)
PY
)
wait_grep "$WORK/delivered" "^am/$FP host=web3 sev=critical status=firing summary=disk full on web3\$" ||
    fail "the posted alert did not reach the executor: $(cat "$WORK/delivered" 2>/dev/null)"
wait_grep "$WORK/delivered" "^lc/web2/sdb " || fail "web2's alert not delivered"

# a silence for web2, posted as amtool posts it
NOW=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
LATER=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%S.000Z)
cat > "$WORK/silence.json" <<EOF
{"matchers": [{"name": "HOST", "value": "web2", "isRegex": false, "isEqual": true}],
 "startsAt": "$NOW", "endsAt": "$LATER", "createdBy": "test", "comment": "maintenance"}
EOF
[ "$(status POST /api/v2/silences -H "$AUTH" --data-binary @"$WORK/silence.json")" = 200 ] ||
    fail "POST /api/v2/silences: $(cat "$WORK/answer")"
python3 "$HERE/apiv2_spec.py" postSilencesOK "$WORK/answer" || fail "silence answer: $(cat "$WORK/answer")"
SID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["silenceID"])' "$WORK/answer")

# every read endpoint, against the spec
all_listed() {
    curl -sS -o "$WORK/answer" "$URL/api/v2/alerts" &&
        python3 -c 'import json,sys; sys.exit(len(json.load(open(sys.argv[1]))) != 4)' "$WORK/answer"
}
wait_until all_listed || fail "not 4 alerts: $(cat "$WORK/answer")"
spec gettableAlerts /api/v2/alerts
FP_SOURCE=$(python3 -c '
import sys
h = 14695981039346656037
for b in b"lc/web1/sdx":
    h = ((h ^ b) * 1099511628211) % 2**64
print("%016x" % h)')
py "[x['status']['silencedBy'] for x in a if x['labels']['HOST'] == 'web2'] == [['$SID']]"
py "[x['status']['inhibitedBy'] for x in a if x['labels'].get('lc_dev') == 'sda'] == [['$FP_SOURCE']]"
py "[x['status']['state'] for x in a if x['labels'].get('lc_dev') == 'sdx'] == ['active']"
py "all(x['labels']['alertname'] and x['receivers'] == [{'name': 'runner'}] for x in a)"
py "[x['labels']['alertname'] for x in a if x['labels'].get('rule_id') == 'test.lc.fail'] == ['lc.failure', 'lc.failure']"
py "all(__import__('re').match(r'^[a-zA-Z_][a-zA-Z0-9_]*\$', k) for x in a for k in x['labels'])"
py "[(x['fingerprint'], x['annotations'], x['generatorURL'], x['labels']['severity']) for x in a if x['labels'].get('instance')] == [('$FP', {'summary': 'disk full on web3', 'description': 'disk full on web3', 'runbook': 'https://wiki/disk'}, 'http://prometheus:9090/graph?g0.expr=up', 'critical')]"
py "[x['fingerprint'] for x in a if x['labels'].get('lc_dev') == 'sdx'] == ['$FP_SOURCE']"

# the query arguments: states, matchers (names as the API shows them), receivers
spec gettableAlerts "/api/v2/alerts?silenced=false&inhibited=false"
py "sorted(x['labels']['HOST'] for x in a) == ['web1', 'web3']"
spec gettableAlerts "/api/v2/alerts?active=false"
py "sorted(x['labels']['HOST'] for x in a) == ['web1', 'web2']"
spec gettableAlerts /api/v2/alerts -G --data-urlencode 'filter=alertname="DiskFull"'
py "[x['labels']['HOST'] for x in a] == ['web3']"
spec gettableAlerts /api/v2/alerts -G --data-urlencode 'filter=lc_dev="sdb"'
py "[x['labels']['HOST'] for x in a] == ['web2']"
spec gettableAlerts /api/v2/alerts -G --data-urlencode 'filter=rule_id="test.lc.stuck"'
py "[x['labels']['lc_dev'] for x in a] == ['sdx']"
spec gettableAlerts "/api/v2/alerts?receiver=run.*"
py "len(a) == 4"
spec gettableAlerts "/api/v2/alerts?receiver=mail"
py "a == []"
[ "$(status GET '/api/v2/alerts?active=maybe')" = 400 ] || fail "a bad boolean is not refused"
python3 "$HERE/apiv2_spec.py" BadRequest "$WORK/answer" || fail "400 is no BadRequest"
[ "$(status GET /api/v2/alerts -G --data-urlencode 'filter=HOST=="x')" = 400 ] ||
    fail "a bad filter is not refused"
python3 "$HERE/apiv2_spec.py" BadRequest "$WORK/answer" || fail "400 is no BadRequest"

spec alertGroups /api/v2/alerts/groups
py "[(g['receiver']['name'], len(g['alerts'])) for g in a] == [('runner', 4)]"
spec gettableSilences /api/v2/silences
py "[(s['id'], s['status']['state'], s['matchers'][0]['name']) for s in a] == [('$SID', 'active', 'HOST')]"
spec gettableSilence "/api/v2/silence/$SID"
spec gettableSilences /api/v2/silences -G --data-urlencode 'filter=HOST="web2"'
py "len(a) == 1"
spec gettableSilences /api/v2/silences -G --data-urlencode 'filter=HOST="web9"'
py "a == []"
spec alertmanagerStatus /api/v2/status
py "a['cluster']['status'] == 'disabled'"
spec receivers /api/v2/receivers
py "a == [{'name': 'runner'}]"
for p in /-/healthy /-/ready; do
    [ "$(curl -sS "$URL$p")" = OK ] || fail "$p is not OK"
done

# a silence on alertname (corral.event) silences the posted alert; updated as Alertmanager
# does: a new comment in place (the same id), new matchers in a new silence, the old expired
cat > "$WORK/silence2.json" <<EOF
{"matchers": [{"name": "alertname", "value": "DiskFull", "isRegex": false, "isEqual": true}],
 "startsAt": "$NOW", "endsAt": "$LATER", "createdBy": "test", "comment": "disk"}
EOF
[ "$(status POST /api/v2/silences -H "$AUTH" --data-binary @"$WORK/silence2.json")" = 200 ] ||
    fail "POST silence 2: $(cat "$WORK/answer")"
SID2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["silenceID"])' "$WORK/answer")
spec gettableAlerts /api/v2/alerts -G --data-urlencode 'filter=alertname="DiskFull"'
py "a[0]['status']['silencedBy'] == ['$SID2']"
# update ID COMMENT [REGEX]: silence 2 posted with that id, comment and (a regex) matcher
update() {
    python3 - "$WORK/silence2.json" "$@" > "$WORK/update.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["id"] = sys.argv[2]
s["comment"] = sys.argv[3]
if len(sys.argv) > 4:
    s["matchers"][0].update(value=sys.argv[4], isRegex=True)
print(json.dumps(s))
PY
    [ "$(status POST /api/v2/silences -H "$AUTH" --data-binary @"$WORK/update.json")" = 200 ] ||
        fail "updating a silence: $(cat "$WORK/answer")"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["silenceID"])' "$WORK/answer"
}
[ "$(update "$SID2" "disk, longer")" = "$SID2" ] || fail "a new comment: not in place"
spec gettableSilence "/api/v2/silence/$SID2"
py "a['status']['state'] == 'active' and a['comment'] == 'disk, longer'"
SID3=$(update "$SID2" "disk, longer" "DiskFull|DiskSlow")
[ -n "$SID3" ] && [ "$SID3" != "$SID2" ] || fail "new matchers kept the id"
spec gettableSilence "/api/v2/silence/$SID2"
py "a['status']['state'] == 'expired'"
spec gettableSilence "/api/v2/silence/$SID3"
py "a['status']['state'] == 'active' and a['comment'] == 'disk, longer' and a['matchers'][0]['name'] == 'alertname'"
UNKNOWN=00000000-0000-4000-8000-000000000000
[ "$(status GET "/api/v2/silence/$UNKNOWN")" = 404 ] || fail "an unknown silence is found"
[ "$(status POST /api/v2/silences -H "$AUTH" --data-binary \
    "$(sed "s/^{/{\"id\": \"$UNKNOWN\", /" "$WORK/silence2.json")")" = 404 ] ||
    fail "updating an unknown silence: $(cat "$WORK/answer")"

# writes need the token, as /api/v1's
[ "$(status POST /api/v2/alerts --data-binary @"$WORK/post.json")" = 401 ] || fail "POST alerts without the token"
[ "$(status DELETE "/api/v2/silence/$SID")" = 401 ] || fail "DELETE without the token"
[ "$(status POST /api/v2/silences -H "Authorization: Bearer wrong" \
    --data-binary @"$WORK/silence.json")" = 401 ] || fail "POST silences with a wrong token"

# a bad alert: 400, counted, and the good one beside it is not routed either
invalid=$(metric corral_api_alerts_invalid_total)
received=$(metric corral_api_alerts_received_total kind=alert)
[ "$(status POST /api/v2/alerts -H "$AUTH" --data-binary \
    '[{"labels": {"alertname": "Good"}}, {"labels": {"bad.name": "x"}}]')" = 400 ] ||
    fail "a bad label name is accepted: $(cat "$WORK/answer")"
python3 "$HERE/apiv2_spec.py" BadRequest "$WORK/answer" || fail "400 is no BadRequest"
grep -q 'bad.name' "$WORK/answer" || fail "the refusal does not say why: $(cat "$WORK/answer")"
[ "$(status POST /api/v2/alerts -H "$AUTH" --data-binary '{"labels": {}}')" = 400 ] ||
    fail "an object is accepted for an array"
[ "$(status POST /api/v2/alerts -H "$AUTH" --data-binary '[{"labels": {"TAGS": "x"}}]')" = 400 ] ||
    fail "a label named as corrald's JSON names the tags is accepted"
[ "$(status POST /api/v2/alerts -H "$AUTH" --data-binary '[{"labels": {"a": "b"}, "endsAt": "soon"}]')" = 400 ] ||
    fail "a bad endsAt is accepted"
[ "$(metric corral_api_alerts_invalid_total)" -eq $((invalid + 4)) ] || fail "bad alerts not counted"
[ "$(metric corral_api_alerts_received_total kind=alert)" -eq "$received" ] || fail "a refused request routed an alert"

# expired by DELETE: web2 fires again (sent to the executor now), a second DELETE is a 404
[ "$(status DELETE "/api/v2/silence/$SID" -H "$AUTH")" = 200 ] || fail "DELETE: $(cat "$WORK/answer")"
wait_grep "$WORK/delivered" "^lc/web2/sdb " 2 || fail "web2's alert not sent when its silence ended"
spec gettableSilence "/api/v2/silence/$SID"
py "a['status']['state'] == 'expired'"
[ "$(status DELETE "/api/v2/silence/$SID" -H "$AUTH")" = 404 ] || fail "an expired silence expired again"

# the posted alert resolved (endsAt passed): a clear, no longer listed
python3 - "$WORK/post.json" > "$WORK/clear.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
a[0]["endsAt"] = "2020-01-01T00:00:00.000Z"
print(json.dumps(a))
PY
[ "$(status POST /api/v2/alerts -H "$AUTH" --data-binary @"$WORK/clear.json")" = 200 ] ||
    fail "POST the clear: $(cat "$WORK/answer")"
[ "$(metric corral_api_alerts_received_total kind=clear)" -eq 1 ] || fail "the clear not counted"
spec gettableAlerts /api/v2/alerts
py "len(a) == 3 and not [x for x in a if x['labels'].get('instance')]"

# /api/v1 as it was
[ "$(status GET /api/v1/alerts)" = 200 ] && py "a['status'] == 'success' and len(a['data']) == 4" ||
    fail "/api/v1/alerts changed"
corrald_alive
stop_corrald
echo "ok"
