#!/bin/sh
# Queries register no value names: the registry (at most 65536 names) is what
# rules and reloads need, and anyone who can reach the API or the control
# socket can send filters naming made-up labels.  Filters of the v1 and v2
# APIs and of `corral alerts` on names no message carries leave
# corral_value_names as it was, match nothing with =, everything with !=,
# and a silence (a write, with the token) still registers its name within
# the input budget and keeps working.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl

TOKEN=corral-test-token-$$-0123456789
printf '%s\n' "$TOKEN" > "$WORK/token"
chmod 600 "$WORK/token"
cat > "$WORK/runner.sh" <<SH
#!/bin/sh
echo "\$CORRAL_ALERT_ID" >> "$WORK/delivered"
SH
chmod +x "$WORK/runner.sh"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <control socket="$WORK/control.sock"/>
  <stats listen="127.0.0.1:0" api-token-file="$WORK/token"/>
  <alerts resolve-timeout="1h"/>
  <executors><exec name="runner" program="$WORK/runner.sh"/></executors>
  <routes><route tag="corral.alert" to="runner"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
URL=http://127.0.0.1:$(stats_port)

send_udp "$(input_port udp)" "<38>$(date '+%b %e %H:%M:%S') web1 lc: stuck sdx"
wait_metric corral_alerts state=firing -eq 1 || fail "the alert did not fire"
before=$(metric corral_value_names)

# 300 queries, each naming a label no message carries
python3 - "$URL" <<'PY' || fail "queries"
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port)
for i in range(100):
    for path in ("/api/v2/alerts?filter=" + urllib.parse.quote('made_up_v2_%d="x"' % i),
                 "/api/v2/silences?filter=" + urllib.parse.quote('made_up_s_%d="x"' % i),
                 "/api/v1/alerts?filter=" + urllib.parse.quote('made_up_v1_%d="x"' % i)):
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit("%s: %d %s" % (path, r.status, body[:200]))
PY
for i in 1 2 3; do
    $CORRAL alerts -s "$WORK/control.sock" "made_up_cli_$i=x" > "$WORK/cli.out" ||
        fail "corral alerts with a made-up name"
done
after=$(metric corral_value_names)
[ "$after" -eq "$before" ] || fail "queries registered $((after - before)) value names"

# an unknown name is absent: = "x" matches nothing, != "x" every alert
n=$(curl -sS "$URL/api/v2/alerts?filter=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("never_seen=\"x\""))')" |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$n" = 0 ] || fail "never_seen=\"x\" matched $n alerts"
n=$(curl -sS "$URL/api/v2/alerts?filter=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("never_seen!=\"x\""))')" |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$n" = 1 ] || fail "never_seen!=\"x\" matched $n alerts, not the one firing"

# a silence naming a new label registers it (within the input budget) and works
code=$(curl -sS -o "$WORK/answer" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' "$URL/api/v2/silences" -d "{
  \"matchers\": [{\"name\": \"HOST\", \"value\": \"web1\", \"isRegex\": false, \"isEqual\": true},
                 {\"name\": \"site_label\", \"value\": \"\", \"isRegex\": false, \"isEqual\": true}],
  \"startsAt\": \"2000-01-01T00:00:00Z\", \"endsAt\": \"2999-01-01T00:00:00Z\",
  \"createdBy\": \"test\", \"comment\": \"names\"}")
[ "$code" = 200 ] || fail "silence: $code $(cat "$WORK/answer")"
[ "$(metric corral_value_names)" -eq $((before + 1)) ] || fail "the silence's name was not registered"
wait_metric corral_alerts state=silenced -eq 1 || fail "the silence does not mute the alert"
corrald_alive
