#!/bin/sh
# corrald's silences and inhibition against the real Alertmanager 0.25 (the
# reference): the same alerts, the same silences and the same inhibit rule
# go to both, and after every step each alert has the same state in both
# (corrald: firing, silenced, inhibited; Alertmanager: active, or suppressed
# with silencedBy or inhibitedBy, silencedBy first as corrald does).  The
# steps change what already fires: silences added, then expired, and the
# inhibition source resolved.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl
AM=$(command -v prometheus-alertmanager || command -v alertmanager) ||
    { echo "skipped: prometheus-alertmanager missing"; exit 77; }

cat > "$WORK/am.yml" <<EOF
route:
  receiver: "null"
receivers:
  - name: "null"
inhibit_rules:
  - source_matchers: ['rule_id="test.lc.stuck"']
    target_matchers: ['rule_id="test.lc.fail"']
    equal: ["HOST"]
EOF
mkdir -p "$WORK/am"
"$AM" --config.file="$WORK/am.yml" --storage.path="$WORK/am" \
    --web.listen-address=127.0.0.1:0 --cluster.listen-address= > "$WORK/am.log" 2>&1 &
am_pid=$!
track $am_pid
wait_grep "$WORK/am.log" 'msg="Listening on" address=127.0.0.1:[0-9]' || fail "Alertmanager did not listen"
AMURL=http://$(sed -n 's/.*msg="Listening on" address=\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$WORK/am.log" | head -n 1)
wait_until curl -sf "$AMURL/-/ready" -o /dev/null || fail "Alertmanager not ready"

CONTROL=$WORK/control.sock
S="-s $CONTROL"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <alerts resolve-timeout="1h"/>
  <inhibit source="rule_id=test.lc.stuck" target="rule_id=test.lc.fail" equal="HOST"/>
  <executors><exec name="runner" program="/bin/true"/></executors>
  <routes><route tag="corral.alert" to="runner"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"

# fire HOST DEVICE VERB: the same alert to both
fire() {
    send_udp "$(input_port udp)" "<38>$(date '+%b %e %H:%M:%S') $1 lc: $3 $2"
    python3 - "$AMURL" "$1" "$2" "$3" <<'PY'
import json, sys, urllib.request
url, host, dev, verb = sys.argv[1:]
rule = {"failure on": "test.lc.fail", "stuck": "test.lc.stuck"}[verb]
labels = {"alertname": "lc", "rule_id": rule, "lc_dev": dev, "HOST": host}
req = urllib.request.Request(url + "/api/v2/alerts", json.dumps([{"labels": labels}]).encode(),
                             {"Content-Type": "application/json"})
urllib.request.urlopen(req).read()
PY
}
# silence MATCHER: the same silence in both; prints "CORRAL_ID AM_ID"
silence() {
    _c=$("$CORRAL" silence $S add "$1" --duration 1h) || fail "corral silence add $1"
    _a=$(python3 - "$AMURL" "$1" <<'PY'
import datetime, json, re, sys, urllib.request
url, text = sys.argv[1:]
name, op, value = re.match(r'(\w+)(=~|!~|!=|=)"?(.*?)"?$', text).groups()
now = datetime.datetime.now(datetime.timezone.utc)
s = {"matchers": [{"name": name, "value": value, "isRegex": "~" in op, "isEqual": "!" not in op}],
     "startsAt": now.isoformat(), "endsAt": (now + datetime.timedelta(hours=1)).isoformat(),
     "createdBy": "test", "comment": "compare"}
req = urllib.request.Request(url + "/api/v2/silences", json.dumps(s).encode(),
                             {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req))["silenceID"])
PY
) || fail "Alertmanager silence $1"
    echo "$_c $_a"
}
expire() {
    "$CORRAL" silence $S expire "$1" || fail "corral silence expire"
    curl -sf -X DELETE "$AMURL/api/v2/silence/$2" -o /dev/null || fail "Alertmanager silence expire"
}
# same N STEP: both have N alerts, each in the same state; the states go to $WORK/STEP
same() {
    "$CORRAL" alerts $S --json > "$WORK/corral.json" || return 1
    curl -sf "$AMURL/api/v2/alerts" -o "$WORK/am.json" || return 1
    python3 - "$WORK/corral.json" "$WORK/am.json" "$1" "$WORK/$2" <<'PY'
import json, sys
c = {(a["labels"].get("HOST", ""), a["labels"].get("lc.dev")): a["state"]
     for a in json.load(open(sys.argv[1])) if a["state"] != "resolved"}
am = {}
for a in json.load(open(sys.argv[2])):
    st = a["status"]
    state = ("silenced" if st["silencedBy"] else "inhibited" if st["inhibitedBy"] else "firing")
    am[(a["labels"].get("HOST", ""), a["labels"]["lc_dev"])] = state
open(sys.argv[4], "w").write("%s\n" % sorted(c.items()))
assert len(c) == int(sys.argv[3]) and c == am, (c, am)
PY
}
# the alerts: web1's failure and web1's stuck device (the inhibition source),
# web2's failure
fire web1 sda "failure on"
fire web2 sdb "failure on"
fire web1 sdx stuck
wait_until same 3 step1 || fail "step 1 differs: $(cat "$WORK/step1" "$WORK/corral.json" "$WORK/am.json")"
grep -q "('web1', 'sda'), 'inhibited'" "$WORK/step1" || fail "web1's failure not inhibited: $(cat "$WORK/step1")"

# silences added while they fire
ids1=$(silence 'HOST="web2"')
ids2=$(silence 'HOST=~"web1|web3"')
wait_until same 3 step2 || fail "step 2 differs: $(cat "$WORK/step2")"
grep -q "('web1', 'sdx'), 'silenced'" "$WORK/step2" || fail "web1's source not silenced: $(cat "$WORK/step2")"
fire web3 sdc "failure on"
wait_until same 4 step3 || fail "step 3 differs: $(cat "$WORK/step3")"

# expired: back to firing, web1's failure inhibited again
expire $ids1
expire $ids2
wait_until same 4 step4 || fail "step 4 differs: $(cat "$WORK/step4")"
grep -q "('web1', 'sda'), 'inhibited'" "$WORK/step4" || fail "web1's failure not inhibited again"

# the source resolved: web1's failure fires in both
"$CORRAL" alerts $S resolve lc/web1/sdx || fail "corral alerts resolve"
python3 - "$AMURL" <<'PY' || fail "Alertmanager: resolving the source"
import datetime, json, sys, urllib.request
now = datetime.datetime.now(datetime.timezone.utc).isoformat()
labels = {"alertname": "lc", "rule_id": "test.lc.stuck", "lc_dev": "sdx", "HOST": "web1"}
req = urllib.request.Request(sys.argv[1] + "/api/v2/alerts",
                             json.dumps([{"labels": labels, "endsAt": now}]).encode(),
                             {"Content-Type": "application/json"})
urllib.request.urlopen(req).read()
PY
# Alertmanager lists resolved alerts no more (after its resolve time); corrald
# keeps them as resolved, which same() leaves out
wait_until same 3 step5 || fail "step 5 differs: $(cat "$WORK/step5")"
grep -q "('web1', 'sda'), 'firing'" "$WORK/step5" || fail "web1's failure not released"
corrald_alive
stop_corrald
echo "ok"
