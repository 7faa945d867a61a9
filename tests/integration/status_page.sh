#!/bin/sh
# The status page (GET /) and the HTTP API, on a running corrald with open
# contexts, a delivering executor, an input, and alerts that are firing,
# silenced (corral silence add) and inhibited (<inhibit>).
#
#   Real headless Chromium loads the page (--dump-dom, and a screenshot
#   kept as $top_builddir/tests/integration/status_page.png): the rows are
#   in the rendered DOM, and a message whose HOST is
#   <script>alert(1)</script> opens a context whose row shows that host as
#   text: no element came from it.  The page is served with a strict
#   Content-Security-Policy; /api/v1/status holds the same data as JSON.
#   The alerts table shows each alert's severity, state and host, the
#   silence and what inhibits web1's disk alert; the hostile host's alert
#   is text (status_oncall.sh checks the table and the alerts' pages).
#
#   API writes: without <stats api-token-file> a POST gets 403; once a
#   reload has read a token, no token or a wrong one gets 401, bad JSON
#   with the right token 400 with jansson's reason, and every refusal is
#   counted.  A token file anyone may read is refused by the reload with
#   file:line.  With the token, a silence is added (200 and its id), a bad
#   matcher refused (400), the silences and the alerts (filtered) listed,
#   a silence deleted (200, then 404 for the same id).
#
#   A connection that sends no request, or stalls in its body, is closed
#   after 5 s and counted; one kept alive after its answer is closed too,
#   but that is no fault.
#
# Exit 77 without chromium (contrib/setup-debian.sh installs it) or curl.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "$TEST: $CHROMIUM not installed (contrib/setup-debian.sh), skipped"; exit 77; }

HOSTILE='<script>alert(1)</script>'
mkdir -p "$WORK/rules"
cat > "$WORK/rules/login.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-04">
  <ruleset name="app" id="status-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="status.login" class="violation" context-id="login-failures"
          context-timeout="3600" context-scope="host">
      <patterns><pattern>login failed for @ANYSTRING:user@</pattern></patterns>
      <actions><action route="runner"><message>
        <values>
          <value name="MESSAGE">login failure of ${user}@1 on ${HOST}@1</value>
          <value name="corral.alert_id">login-${HOST}@1</value>
        </values>
      </message></action></actions>
    </rule>
    <rule provider="test" id="status.disk" class="system" context-id="disk" context-timeout="3600"
          context-scope="host">
      <patterns><pattern>disk full on @ESTRING:dev: @now</pattern></patterns>
      <actions><action route="runner"><message>
        <values>
          <value name="MESSAGE">disk ${dev}@1 full on ${HOST}@1</value>
          <value name="corral.alert_id">disk-${HOST}@1</value>
        </values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
receiver_script
config() {
    cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <stats listen="127.0.0.1:0" $1/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors>
    <exec name="runner" program="$WORK/receiver.sh"/>
  </executors>
  <inhibit source="rule_id=status.login" target="rule_id=status.disk" equal="HOST"/>
</corrald>
XML
}
config ""
start_corrald corrald "$WORK/corrald.conf"
CONTROL=$WORK/control.sock
URL=http://127.0.0.1:$(stats_port)

python3 - "$(input_port udp)" "$HOSTILE" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for host, n in (("web1", 3), ("web2", 2), (sys.argv[2], 1)):
    for i in range(n):
        s.sendto(("<13>Dec  4 10:00:00 %s app: login failed for user%d" % (host, i)).encode(),
                 ("127.0.0.1", int(sys.argv[1])))
PY
wait_metric corral_contexts_open -eq 3 || fail "$(metric corral_contexts_open) contexts open, want 3"
wait_metric corral_executor_delivered_total executor=runner -eq 6 ||
    fail "$(metric corral_executor_delivered_total executor=runner) alerts delivered, want 6"
# web2 is silenced, and its next login failure with it; web1's disk alert is
# inhibited by web1's firing login alert
"$CORRAL" silence -s "$CONTROL" add --duration 2h --author noc --comment "web2 <maintenance>" HOST=web2 \
    > "$WORK/silence.id" || fail "corral silence add"
python3 - "$(input_port udp)" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for line in ("web2 app: login failed for user9", "web1 app: disk full on sda1 now"):
    s.sendto(("<13>Dec  4 10:00:01 " + line).encode(), ("127.0.0.1", int(sys.argv[1])))
PY
wait_metric corral_alerts_silenced_total -eq 1 || fail "web2's alert was not silenced"
wait_metric corral_alerts_inhibited_total -eq 1 || fail "web1's disk alert was not inhibited"
[ "$(metric corral_executor_delivered_total executor=runner)" -eq 6 ] || fail "a muted alert was delivered"

# ---- the page's headers: HTML, a strict CSP
curl -sS -D "$WORK/page.headers" -o "$WORK/page.html" "$URL/" || fail "GET / failed"
tr -d '\r' < "$WORK/page.headers" > "$WORK/headers"
head -n 1 "$WORK/headers" | grep -q '^HTTP/1.1 200' || fail "GET /: $(head -n 1 "$WORK/headers")"
grep -qi '^content-type: text/html; charset=utf-8$' "$WORK/headers" || fail "not HTML: $(cat "$WORK/headers")"
csp=$(sed -n 's/^[Cc]ontent-[Ss]ecurity-[Pp]olicy: //p' "$WORK/headers")
case "$csp" in
"default-src 'none'; "*) ;;
*) fail "Content-Security-Policy: '$csp', want default-src 'none' first" ;;
esac
for d in "style-src 'unsafe-inline'" "frame-ancestors 'none'" "form-action 'none'"; do
    echo "$csp" | grep -q "$d" || fail "Content-Security-Policy lacks $d: $csp"
done
echo "$csp" | grep -Eq "script-src|unsafe-eval|http:|https:|\\*" && fail "the CSP allows too much: $csp"
grep -q '<meta http-equiv="refresh" content="10">' "$WORK/page.html" || fail "the page does not refresh itself"
grep -Eqi '<script|src="http|href="http|@import' "$WORK/page.html" && fail "the page has a script or an external resource"

# ---- the page in a real browser
chromium() {
    HOME=$WORK timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$WORK/chromium.XXXXXX")" "$@" 2>> "$WORK/chromium.err"
}
chromium --dump-dom "$URL/" > "$WORK/dom.html" || fail "chromium --dump-dom: $(tail -n 5 "$WORK/chromium.err")"
chromium --screenshot="$WORK/status.png" --window-size=1280,1024 "$URL/" > /dev/null ||
    fail "chromium --screenshot: $(tail -n 5 "$WORK/chromium.err")"
[ -s "$WORK/status.png" ] || fail "no screenshot"
cp "$WORK/status.png" "$top_builddir/tests/integration/status_page.png" 2> /dev/null ||
    cp "$WORK/status.png" "$top_builddir/status_page.png"

python3 - "$WORK/dom.html" "$HOSTILE" <<'PY' || fail "the rendered page (kept in $WORK/dom.html)"
import sys
from html.parser import HTMLParser

class Page(HTMLParser):
    """The rows of the page's tables, as lists of cell texts, by row class; every element seen."""
    def __init__(self):
        super().__init__()
        self.rows, self.tags, self.cls, self.cell, self.cells = {}, [], None, None, None
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "tr":
            self.cls, self.cells = a.get("class"), []
        elif tag == "td" and self.cells is not None:
            self.cell = ""
    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.cells.append(self.cell)
            self.cell = None
        elif tag == "tr" and self.cells is not None:
            self.rows.setdefault(self.cls, []).append(self.cells)
            self.cells = None
    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

dom, hostile = open(sys.argv[1]).read(), sys.argv[2]
p = Page()
p.feed(dom)
assert "script" not in p.tags, "a <script> element in the DOM"
contexts = [r for r in p.rows.get("context", []) if r[0] == "status.login"]
assert [r[2] for r in p.rows.get("context", []) if r[0] == "status.disk"] == ["web1"], p.rows["context"]
hosts = sorted(r[2] for r in contexts)
assert hosts == sorted(["web1", "web2", hostile]), hosts
for r in contexts:
    assert r[0] == "status.login", r
    assert r[5] == {"web1": "3", "web2": "3", hostile: "1"}[r[2]], r
rules = p.rows.get("rule", [])
assert sorted(rules) == [["status.disk", "1", "0", "0", "0", "0", "0"],
                         ["status.login", "3", "0", "0", "0", "0", "0"]], rules
queues = p.rows.get("queue", [])
assert len(queues) == 1 and queues[0][0] == "runner" and queues[0][3] == "6", queues
inputs = p.rows.get("input", [])
assert len(inputs) == 1 and inputs[0][0] == "udp" and inputs[0][1] == "8", inputs
# the alerts, one table: severity, state, host, summary, id, since, last seen, count, sent, muted by
alerts = {r[4]: (cls, r) for cls, rs in p.rows.items() if cls and cls.split()[0] == "alert" for r in rs}
assert sorted(alerts) == sorted(["login-web1", "login-web2", "login-" + hostile, "disk-web1"]), alerts
# the severity is the alert's (the executors' default, warning, when it sets none), not syslog's
cls, web1 = alerts["login-web1"]
assert cls == "alert sev-warning st-firing" and web1[:3] == ["warning", "firing", "web1"], alerts["login-web1"]
assert "login failure of" in web1[3] and web1[7] == "3" and web1[8] == "✓", web1
assert alerts["login-web2"][1][1] == "silenced" and alerts["login-web2"][1][9], alerts["login-web2"]
assert alerts["login-" + hostile][1][2] == hostile, alerts
assert alerts["disk-web1"][1][1] == "inhibited" and alerts["disk-web1"][1][9] == "login-web1", alerts["disk-web1"]
silences = p.rows.get("silence", [])
assert len(silences) == 1 and silences[0][1] == "active" and silences[0][2] == 'HOST="web2"', silences
assert silences[0][4] == "noc" and silences[0][5] == "web2 <maintenance>", silences
assert alerts["login-web2"][1][9] == "silence " + silences[0][0], (alerts["login-web2"], silences)
assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom, "the hostile host is not shown as text"
for sec in ("alerts", "silences", "rates", "queues", "contexts", "inputs"):
    assert 'id="%s"' % sec in dom, sec
assert dom.count("<svg") == 2, "want two charts"
PY

# ---- the same data as JSON
curl -sS -o "$WORK/status.json" "$URL/api/v1/status" || fail "GET /api/v1/status"
python3 - "$WORK/status.json" "$HOSTILE" <<'PY' || fail "/api/v1/status: $(head -c 600 "$WORK/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert sorted(c["host"] for c in s["contexts"]["open"]) == sorted(["web1", "web1", "web2", sys.argv[2]])
assert sorted(s["contexts"]["rules"], key=lambda r: r["rule"]) == [
    {"rule": "status.disk", "open": 1, "refused": 0, "dropped": 0, "evicted": 0,
     "rateLimited": 0, "rateEvicted": 0},
    {"rule": "status.login", "open": 3, "refused": 0, "dropped": 0, "evicted": 0,
     "rateLimited": 0, "rateEvicted": 0}]
assert [q["name"] for q in s["queues"]] == ["runner"] and s["queues"][0]["delivered"] == 6
assert s["inputs"][0]["name"] == "udp" and s["inputs"][0]["received"] == 8
assert s["rates"]["received_total"] == 8 and len(s["rates"]["received"]) == 60
assert sorted(a["id"] for a in s["alerts"]) == sorted(["login-web1", "login-web2", "login-" + sys.argv[2]])
assert [a["id"] for a in s["inhibited"]] == ["disk-web1"] and s["inhibited"][0]["mutedBy"] == "login-web1"
assert [x["matchersText"] for x in s["silences"]] == ['HOST="web2"']
PY

# ---- API writes
# post TOKEN BODY: "STATUS BODY" of a POST to /api/v1/silences (no token: TOKEN empty)
post() {
    if [ -n "$1" ]; then
        curl -sS -o "$WORK/post.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
            -H 'Content-Type: application/json' --data-binary "$2" "$URL/api/v1/silences"
    else
        curl -sS -o "$WORK/post.out" -w '%{http_code}' -X POST \
            -H 'Content-Type: application/json' --data-binary "$2" "$URL/api/v1/silences"
    fi
    printf ' %s' "$(cat "$WORK/post.out")"
}
unauth0=$(metric corral_endpoint_unauthorized_total endpoint=stats)
got=$(post "" '{"matchers":["HOST=web1"]}')
case "$got" in "403 "*"no api-token-file"*) ;; *) fail "POST without a token configured: $got" ;; esac
got=$(post "whatever-token-12345" '{"matchers":["HOST=web1"]}')
case "$got" in "403 "*) ;; *) fail "POST with a token, none configured: $got" ;; esac

# a token anyone may read: the reload is refused, with where it is configured
TOKEN=corral-test-token-$$-0123456789
printf '%s\n' "$TOKEN" > "$WORK/token"
chmod 644 "$WORK/token"
config "api-token-file=\"$WORK/token\""
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1 && fail "reload accepted a world-readable token file"
grep -q "corrald.conf:4: api-token-file $WORK/token is readable by everyone" "$WORK/reload.out" ||
    fail "reload: $(cat "$WORK/reload.out")"
got=$(post "$TOKEN" '{"matchers":["HOST=web1"]}')
case "$got" in "403 "*) ;; *) fail "POST after a refused reload: $got" ;; esac

chmod 600 "$WORK/token"
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1 || fail "reload: $(cat "$WORK/reload.out")"
got=$(post "" '{"matchers":["HOST=web1"]}')
case "$got" in "401 "*"Bearer token is required"*) ;; *) fail "POST without a token: $got" ;; esac
got=$(post "wrong-$TOKEN" '{"matchers":["HOST=web1"]}')
case "$got" in "401 "*"wrong API token"*) ;; *) fail "POST with a wrong token: $got" ;; esac
got=$(post "$TOKEN" '{"matchers": [')
case "$got" in "400 "*"not JSON: line 1 column"*) ;; *) fail "POST of bad JSON: $got" ;; esac
# a body over 64 KiB: 413 before it is read
bad0=$(metric corral_endpoint_bad_requests_total endpoint=stats)
python3 -c 'print("[" + "1," * 40000 + "1]")' > "$WORK/big.json"
got=$(post "$TOKEN" "@$WORK/big.json")
case "$got" in "413 "*"larger than 65536 bytes"*) ;; *) fail "POST of 80 KB: $got" ;; esac
[ "$(metric corral_endpoint_bad_requests_total endpoint=stats)" -eq $((bad0 + 1)) ] ||
    fail "the 413 was not counted"
# past the checks: the silences API, as `corral silence` has it
got=$(post "$TOKEN" '{"matchers":["HOST=web1"]}')
case "$got" in "400 "*"endsAt or duration expected"*) ;; *) fail "POST of a silence without an end: $got" ;; esac
got=$(post "$TOKEN" '{"matchers":["HOST=~(web"],"duration":"1h"}')
case "$got" in "400 "*"regular expression"*) ;; *) fail "POST of a bad matcher: $got" ;; esac
got=$(post "$TOKEN" '{"matchers":["HOST=web1",{"name":"rule_id","value":"status\\..*","isRegex":true}],"duration":"1h","createdBy":"api"}')
case "$got" in "200 "*'"silenceID":"'*) ;; *) fail "POST of a silence: $got" ;; esac
sid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["silenceID"])' "$WORK/post.out")
curl -sS -o "$WORK/silences.json" "$URL/api/v1/silences" || fail "GET /api/v1/silences"
python3 - "$WORK/silences.json" "$sid" <<'PY' || fail "GET /api/v1/silences: $(head -c 600 "$WORK/silences.json")"
import json, sys
d = json.load(open(sys.argv[1]))["data"]
assert sorted(x["matchersText"] for x in d) == ['HOST="web1",rule_id=~"status\\..*"', 'HOST="web2"'], d
assert [x for x in d if x["id"] == sys.argv[2]][0]["createdBy"] == "api", d
PY
curl -sS -o "$WORK/alerts.json" "$URL/api/v1/alerts?filter=HOST%3Dweb1" || fail "GET /api/v1/alerts"
python3 - "$WORK/alerts.json" "$sid" <<'PY' || fail "GET /api/v1/alerts?filter=HOST=web1: $(head -c 600 "$WORK/alerts.json")"
import json, sys
d = json.load(open(sys.argv[1]))["data"]
# the silence just added mutes web1's alerts already firing (or inhibited) at once
assert sorted((a["id"], a["state"], a["mutedBy"]) for a in d) == [
    ("disk-web1", "silenced", sys.argv[2]), ("login-web1", "silenced", sys.argv[2])], d
PY
# (a regular expression filter needs the token, see hostile_regex.sh)
code=$(curl -sS -o "$WORK/bad.json" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    "$URL/api/v1/alerts?filter=HOST%3D~(")
[ "$code" = 400 ] || fail "GET /api/v1/alerts with a bad filter: $code $(cat "$WORK/bad.json")"
curl -sS -o "$WORK/queues.json" "$URL/api/v1/queues?executor=runner" || fail "GET /api/v1/queues"
python3 - "$WORK/queues.json" <<'PY' || fail "GET /api/v1/queues: $(head -c 600 "$WORK/queues.json")"
import json, sys
d = json.load(open(sys.argv[1]))["data"]["executors"]
assert [e["executor"] for e in d] == ["runner"] and d[0]["queued_total"] == 0 and d[0]["dead"] == [], d
PY
code=$(curl -sS -o "$WORK/bad.json" -w '%{http_code}' "$URL/api/v1/queues?executor=nope")
[ "$code" = 404 ] || fail "GET /api/v1/queues of an unknown executor: $code $(cat "$WORK/bad.json")"
# delete: no token 401; the token 200; the same id again 404
delete() {
    curl -sS -o "$WORK/delete.out" -w '%{http_code}' -X DELETE ${1:+-H "Authorization: Bearer $1"} \
        "$URL/api/v1/silences/$2"
}
[ "$(delete "" "$sid")" = 401 ] || fail "DELETE without a token: $(cat "$WORK/delete.out")"
[ "$(delete "$TOKEN" "$sid")" = 200 ] || fail "DELETE of $sid: $(cat "$WORK/delete.out")"
[ "$(delete "$TOKEN" "$sid")" = 404 ] || fail "DELETE of $sid again: $(cat "$WORK/delete.out")"
"$CORRAL" silence -s "$CONTROL" list > "$WORK/list.out" || fail "corral silence list"
grep -q "$sid" "$WORK/list.out" && fail "the deleted silence is still listed: $(cat "$WORK/list.out")"
wait_metric corral_endpoint_unauthorized_total endpoint=stats -eq $((unauth0 + 6)) ||
    fail "$(metric corral_endpoint_unauthorized_total endpoint=stats) refusals counted, want $((unauth0 + 6))"
[ "$(metric corral_endpoint_bad_requests_total endpoint=stats)" -ge 1 ] || fail "bad JSON not counted"
wait_log 'stats: POST /api/v1/silences from 127.0.0.1 refused (403): writes are disabled' ||
    fail "the refusal was not logged"

# idle connections: one that sent no request and one whose body stalls are
# closed after 5 s and counted; a keep-alive one idling after its answer is
# closed, not counted
timeouts0=$(metric corral_endpoint_timeouts_total endpoint=stats)
python3 - "$(stats_port)" <<'PY' || fail "idle connections"
import socket, sys
port = int(sys.argv[1])
silent = socket.create_connection(("127.0.0.1", port), timeout=60)
kept = socket.create_connection(("127.0.0.1", port), timeout=60)
stalled = socket.create_connection(("127.0.0.1", port), timeout=60)
stalled.sendall(b"POST /api/v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
kept.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
data = b""
while b"corral_uptime_seconds" not in data:
    d = kept.recv(65536)
    assert d, "no answer on the keep-alive connection"
    data += d
for s in (silent, kept, stalled):
    while True:  # until corrald closes it
        try:
            if not s.recv(65536):
                break
        except ConnectionResetError:
            break
PY
wait_metric corral_endpoint_timeouts_total endpoint=stats -eq $((timeouts0 + 2)) ||
    fail "$(metric corral_endpoint_timeouts_total endpoint=stats) stats timeouts, want $((timeouts0 + 2))"
wait_log 'stats: a client sent no complete request within 5 s, closed' || fail "the timeout was not logged"

# /metrics is as before
curl -sS -o "$WORK/metrics.txt" "$URL/metrics" || fail "GET /metrics"
grep -q '^corral_messages_received_total 8$' "$WORK/metrics.txt" || fail "/metrics: $(head -c 300 "$WORK/metrics.txt")"

corrald_alive
stop_corrald
echo "$TEST: ok"
