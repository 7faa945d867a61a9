#!/bin/sh
# The real Prometheus (2.42, Debian's prometheus) sends its alerts to
# corrald as to an Alertmanager (alerting: alertmanagers:, API v2, the
# bearer token in authorization:).  An alerting rule that always fires
# (vector(1) > 0, for: 0s) reaches corrald's exec executor through its
# routes (Prometheus finds its Alertmanagers some seconds after it starts,
# so it is told to send again every second: --rules.alert.resend-delay);
# sent again while it fires, it reaches the executor once.
# The rule changed so that it no longer fires (a reload), Prometheus sends
# the resolution, which ends the alert in corrald.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl
PROMETHEUS=$(command -v prometheus) || { echo "skipped: prometheus missing"; exit 77; }

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
  <stats listen="127.0.0.1:0" api-token-file="$WORK/token"/>
  <executors><exec name="runner" program="$WORK/runner.sh"/></executors>
  <routes><route tag="corral.alert" to="runner" send-resolved="yes"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
URL=http://127.0.0.1:$(stats_port)

# rules EXPR: Prometheus' rule file, the alert firing while EXPR has a value
rules() {
    cat > "$WORK/rules.yml.new" <<EOF
groups:
  - name: corral
    interval: 1s
    rules:
      - alert: AlwaysFiring
        expr: $1
        for: 0s
        labels:
          severity: critical
          instance: prom-host:9090
        annotations:
          summary: Prometheus says it always fires
EOF
    mv "$WORK/rules.yml.new" "$WORK/rules.yml"
}
rules "vector(1) > 0"
cat > "$WORK/prometheus.yml" <<EOF
global:
  evaluation_interval: 1s
rule_files:
  - $WORK/rules.yml
alerting:
  alertmanagers:
    - api_version: v2
      authorization:
        type: Bearer
        credentials_file: $WORK/token
      static_configs:
        - targets: ["127.0.0.1:$(stats_port)"]
EOF
mkdir -p "$WORK/tsdb"
"$PROMETHEUS" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address=127.0.0.1:0 --rules.alert.resend-delay=1s > "$WORK/prometheus.log" 2>&1 &
prom=$!
track $prom
wait_grep "$WORK/prometheus.log" 'Server is ready to receive web requests' ||
    fail "Prometheus did not start"

# the rule's alert, at the executor: HOST from instance, severity and summary from Prometheus
wait_grep "$WORK/delivered" '^am/[0-9a-f]\{16\} host=prom-host sev=critical status=firing summary=Prometheus says it always fires$' ||
    fail "Prometheus' alert did not reach the executor"
ID=$(sed -n 's/^\(am\/[0-9a-f]*\) .*/\1/p' "$WORK/delivered" | head -n 1)
# sent again every second while it fires: the store keeps it firing, the executor is told once
wait_metric corral_api_alerts_received_total kind=alert -ge 4 || fail "Prometheus does not send again"
[ "$(grep -c "^$ID .*status=firing" "$WORK/delivered")" -eq 1 ] ||
    fail "the executor was told again of an alert that still fires: $(cat "$WORK/delivered")"
curl -sS "$URL/api/v2/alerts" -o "$WORK/alerts.json" || fail "GET /api/v2/alerts"
python3 - "$WORK/alerts.json" "${ID#am/}" <<'PY' || fail "the alert in /api/v2/alerts: $(cat "$WORK/alerts.json")"
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a) == 1, a
x = a[0]
assert x["fingerprint"] == sys.argv[2], x
assert x["labels"]["alertname"] == "AlwaysFiring" and x["status"]["state"] == "active", x
assert x["generatorURL"].startswith("http"), x
PY
[ "$(metric corral_endpoint_unauthorized_total endpoint=stats)" -eq 0 ] ||
    fail "Prometheus' requests were refused"

# no longer firing: Prometheus sends the alert with its endsAt, a clear
rules "vector(1) < 0"
kill -HUP $prom
wait_grep "$WORK/delivered" "^$ID host=prom-host .*status=resolved" ||
    fail "the resolution did not reach the executor: $(cat "$WORK/delivered")"
resolved() {
    curl -sS "$URL/api/v2/alerts" -o "$WORK/alerts.json" &&
        python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != [])' "$WORK/alerts.json"
}
wait_until resolved || fail "the resolved alert is still listed: $(cat "$WORK/alerts.json")"
kill $prom
wait_exit $prom > /dev/null
untrack $prom
corrald_alive
stop_corrald
echo "ok"
