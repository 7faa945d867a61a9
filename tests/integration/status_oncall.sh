#!/bin/sh
# The status page as on-call reads it, in real headless Chromium at
# 1400x1000 and 420x900, with 30 alerts of mixed severity on a running
# corrald: 28 posted to /api/v2/alerts in two batches a second apart, one
# raised by a rule from log lines (with evidence), one silence and one alert
# inhibited by another.
#
#   The table (checked through the DOM): most severe first, then the most
#   recently seen (the second batch before the first); each row's class
#   sev-WORD matches its severity word; no <script>.  Layout (the rendered
#   page's DOM with its CSS, measured by Chromium in a copy that adds a
#   measuring script; a host's link, an inline box, has its rectangles on one line: the served page has none): 15 rows and more end
#   within the first 1000 pixels (and 900 on the narrow screen), no host
#   spans two lines, nothing is wider than the screen, and the summaries
#   keep 200 pixels (at 1000x800 too).
#   Filters: ?filter=HOST="..."&state=silenced shows the silenced alert
#   only, ?state=inhibited the inhibited one, a bad matcher or state gets
#   400 and a page saying why.
#   An alert's page (/alert?id=ID, the id percent-encoded): its labels, its
#   evidence lines, its notifications, the silence or the alert that mutes
#   it, and a `corral silence add` command that, run by sh as it is (a
#   summary with ' $(...) " in it), adds the silence that mutes the alert;
#   an unknown id gets 404.
#
# The screenshots are kept as $top_builddir/tests/integration/status_oncall_*.png
# (and copied to $SHOTS/ when SHOTS names a directory).
# Exit 77 without chromium or curl.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "$TEST: $CHROMIUM not installed, skipped"; exit 77; }

TOKEN=corral-test-token-$$-0123456789
printf '%s\n' "$TOKEN" > "$WORK/token"
chmod 600 "$WORK/token"
receiver_script
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/evidence_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <stats listen="127.0.0.1:0" api-token-file="$WORK/token"/>
  <alerts resolve-timeout="1h" evidence-lines="10"/>
  <inhibit source="corral.event=NodeDown" target="corral.event=DiskSlow" equal="HOST"/>
  <executors><exec name="runner" program="$WORK/receiver.sh"/></executors>
  <routes><route tag="corral.alert" to="runner"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
URL=http://127.0.0.1:$(stats_port)

# batch N FIRST LAST: posts alerts FIRST..LAST (see the python below for their labels)
batch() {
    python3 - "$1" "$2" > "$WORK/batch.json" <<'PY'
import json, sys
sev = ["critical", "major", "warning", "minor", "info", "warning", "critical"]
alerts = []
for i in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    host = "web-frontend-%02d.prod.example.net" % i
    summary = "HTTP 5xx ratio above 5%% on %s for 10 minutes (checkout and login pages)" % host
    if i == 7:  # the shell must take this as text
        summary = "it's $(touch pwned) \"quoted\" <b>bold</b> on web 7"
    alerts.append({"labels": {"alertname": "Http5xx%d" % i, "HOST": host, "severity": sev[i % 7]},
                   "annotations": {"summary": summary}})
if int(sys.argv[1]) == 0:  # db1: the node is down, so its slow disk alert is inhibited
    alerts.append({"labels": {"alertname": "NodeDown", "HOST": "db1", "severity": "critical"},
                   "annotations": {"summary": "db1 does not answer"}})
    alerts.append({"labels": {"alertname": "DiskSlow", "HOST": "db1", "severity": "warning"},
                   "annotations": {"summary": "db1 disk latency 800 ms"}})
print(json.dumps(alerts))
PY
    code=$(curl -sS -o "$WORK/post.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' --data-binary @"$WORK/batch.json" "$URL/api/v2/alerts")
    [ "$code" = 200 ] || fail "POST /api/v2/alerts: $code $(cat "$WORK/post.out")"
}
# the first batch (13 alerts, NodeDown and DiskSlow: 15) and the rule's alert from 8 log lines
batch 0 12
i=0
while [ $i -lt 8 ]; do
    send_udp "$(input_port udp)" "<38>$(date '+%b %e %H:%M:%S') mail1 app: login failed for root from 10.0.0.$i"
    i=$((i + 1))
done
wait_metric corral_alerts_inhibited_total -eq 1 || fail "db1's DiskSlow was not inhibited"
wait_grep "$WORK/delivered" "^test.evidence/mail1\$" || fail "the rule's alert was not delivered"
# the second batch, seen a second later than the first (the page shows it first within a severity)
t0=$(date +%s)
second_passed() { [ "$(date +%s)" -gt "$t0" ]; }
wait_until second_passed || fail "the clock"
batch 13 26
wait_metric corral_executor_delivered_total executor=runner -eq 29 ||
    fail "$(metric corral_executor_delivered_total executor=runner) alerts delivered, want 29"
"$CORRAL" silence -s "$CONTROL" add --duration 2h --author noc --comment "deploy <web-03>" \
    'HOST="web-frontend-03.prod.example.net"' > "$WORK/silence.id" || fail "corral silence add"
SID=$(cat "$WORK/silence.id")

chromium() {
    HOME=$WORK timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$(mktemp -d "$WORK/chromium.XXXXXX")" "$@" 2>> "$WORK/chromium.err"
}
# dom NAME URL [SIZE]: the rendered DOM of URL in $WORK/NAME.html
dom() {
    chromium --window-size="${3:-1400,1000}" --dump-dom "$2" > "$WORK/$1.html" ||
        fail "chromium --dump-dom $2: $(tail -n 5 "$WORK/chromium.err")"
    [ -s "$WORK/$1.html" ] || fail "chromium --dump-dom $2: nothing"
}
# shot NAME URL SIZE: a screenshot, kept
shot() {
    chromium --screenshot="$WORK/$1.png" --window-size="$3" "$2" > /dev/null ||
        fail "chromium --screenshot: $(tail -n 5 "$WORK/chromium.err")"
    [ -s "$WORK/$1.png" ] || fail "no screenshot $1"
    cp "$WORK/$1.png" "$top_builddir/tests/integration/status_oncall_$1.png" 2> /dev/null || true
}

# ---- the page, through the DOM
dom page "$URL/"
python3 - "$WORK/page.html" "$SID" <<'PY' || fail "the page (kept in $WORK/page.html)"
import sys, re
from html.parser import HTMLParser

class Rows(HTMLParser):
    """tr.alert rows: classes, cell texts by class, the datetime of the last-seen <time>."""
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.td, self.tags, self.skip = [], None, None, [], False
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "tr" and "alert" in (a.get("class") or "").split():
            self.row = {"class": a["class"].split(), "cells": {}}
        elif tag == "td" and self.row is not None:
            self.td = (a.get("class") or "").split()[0]
            self.row["cells"][self.td] = ""
        if tag == "span" and a.get("class") == "host2":
            self.skip = True  # the host again, for narrow screens
        if tag == "time" and self.row is not None:
            self.row.setdefault("times", []).append(a.get("datetime"))
    def handle_endtag(self, tag):
        if tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None
        elif tag == "td":
            self.td = None
        elif tag == "span":
            self.skip = False
    def handle_data(self, data):
        if self.row is not None and self.td and not self.skip:
            self.row["cells"][self.td] += data

dom, sid = open(sys.argv[1]).read(), sys.argv[2]
p = Rows()
p.feed(dom)
assert "script" not in p.tags, "a <script> element"
rows = p.rows
assert len(rows) == 30, "%d rows, want 30" % len(rows)
rank = {"critical": 0, "major": 1, "warning": 2, "minor": 2, "info": 3}
cls = {"critical": "sev-critical", "major": "sev-error", "warning": "sev-warning",
       "minor": "sev-warning", "info": "sev-info"}
keys = []
for r in rows:
    word = r["cells"]["sev"].strip()
    assert cls[word] in r["class"], (word, r["class"])
    keys.append((rank[word], r["times"][1]))
for a, b in zip(keys, keys[1:]):
    assert a[0] < b[0] or (a[0] == b[0] and a[1] >= b[1]), "out of order: %s then %s" % (a, b)
# within each severity the second batch (hosts 13..27) comes before the first
def num(r):
    m = re.search(r"web-frontend-(\d+)", r["cells"]["host"])
    return int(m.group(1)) if m else None
for sev in rank:
    seq = [num(r) >= 13 for r in rows if r["cells"]["sev"].strip() == sev and num(r) is not None]
    assert seq == sorted(seq, reverse=True), (sev, seq)
    if sev in ("critical", "major", "warning"):  # both batches have some: the order tells
        assert any(seq) and not all(seq), (sev, seq)
silenced = [r for r in rows if "st-silenced" in r["class"]]
inhibited = [r for r in rows if "st-inhibited" in r["class"]]
assert [r["cells"]["host"] for r in silenced] == ["web-frontend-03.prod.example.net"], silenced
assert silenced[0]["cells"]["by"] == "silence " + sid, silenced
assert '<a href="#silence-%s">silence %s</a>' % (sid, sid) in dom and 'id="silence-%s"' % sid in dom
assert [r["cells"]["summary"] for r in inhibited] == ["inhibited db1 disk latency 800 ms"], inhibited
assert inhibited[0]["cells"]["by"].startswith("am/"), inhibited
ev = [r for r in rows if r["cells"]["host"] == "mail1"]
assert len(ev) == 1 and ev[0]["cells"]["summary"] == "8 failed logins on mail1" and "sev-error" in ev[0]["class"], ev
# one symbol per executor: delivered, and not yet (the inhibited alert was sent nowhere)
assert [r["cells"]["ex"] for r in rows if r["cells"]["ex"] != "✓"] == ["·"], [r["cells"]["ex"] for r in rows]
assert all(re.fullmatch(r"\d+ s ago", r["cells"]["time"].strip()) for r in rows), [r["cells"]["time"] for r in rows]
assert "&lt;b&gt;bold&lt;/b&gt;" in dom, "the hostile summary is not text"
assert re.search(r'title="last seen \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(UTC\)"', dom), "no absolute time in a title"
# the charts have a scale and a time axis
assert dom.count('class="ymax"') == 2 and dom.count(">now</text>") == 2, "charts without axes"
# the alerts come before the debugging tables
assert dom.index('id="alerts"') < dom.index('id="rates"') < dom.index('id="contexts"')
PY

# ---- the layout, measured by Chromium on a copy of the rendered page with a measuring script
# (in a W x H frame: a headless window is 500 pixels wide at least; the frame's
# srcdoc is of the measuring page's origin, so its script reports there)
measure() {
    python3 - "$WORK/page.html" "$WORK/measure.html" "$1" "$2" <<'PY'
import sys, html
dom = open(sys.argv[1]).read().replace('<meta http-equiv="refresh" content="10">', "")
script = """<script>
const rows = [...document.querySelectorAll('tr.alert')];
const out = {w: innerWidth, h: innerHeight, scrollW: document.documentElement.scrollWidth,
  bottoms: rows.map(r => r.getBoundingClientRect().bottom + scrollY),
  sumW: Math.min(...rows.map(r => r.querySelector('td.summary').getBoundingClientRect().width)),
  hosts: rows.map(r => { let c = r.querySelector('td.host'), h = c.querySelector('a');
    if (!c.getClientRects().length) h = c = r.querySelector('td.summary .host2'); /* narrow */
    const tops = new Set([...h.getClientRects()].map(x => Math.round(x.top)));
    return {lines: tops.size, nowrap: getComputedStyle(c).whiteSpace,
            h: c.getBoundingClientRect().height,
            lh: parseFloat(getComputedStyle(c).lineHeight) || 20}; })};
const pre = parent.document.createElement('pre'); pre.id = 'measured';
pre.textContent = JSON.stringify(out); parent.document.body.appendChild(pre);
</script>"""
page = dom.replace("</body>", script + "</body>")
open(sys.argv[2], "w").write(
    '<!DOCTYPE html><html><body style="margin:0"><iframe style="border:0;display:block" '
    'width="%s" height="%s" srcdoc="%s"></iframe></body></html>' % (sys.argv[3], sys.argv[4], html.escape(page)))
PY
    chromium --window-size=1400,1000 --dump-dom "file://$WORK/measure.html" > "$WORK/measured.html" ||
        fail "chromium (measure): $(tail -n 5 "$WORK/chromium.err")"
}
# check_layout W H MINROWS
check_layout() {
    python3 - "$WORK/measured.html" "$1" "$2" "$3" <<'PY'
import sys, json, re, html
m = re.search(r'<pre id="measured">(.*?)</pre>', open(sys.argv[1]).read(), re.S)
assert m, "no measurement"
d = json.loads(html.unescape(m.group(1)))
w, h, want = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
assert d["w"] == w and d["h"] == h, ("viewport", d["w"], d["h"])
visible = sum(1 for b in d["bottoms"] if b <= h)
assert visible >= want, "%d rows within the first %d px, want %d: %s" % (visible, h, want, d["bottoms"][:20])
for x in d["hosts"]:
    assert x["nowrap"] == "nowrap" and x["lines"] == 1, ("a host wraps", x)
assert d["scrollW"] <= w, "the page is %d px wide in a %d px window" % (d["scrollW"], w)
assert d["sumW"] >= 200, "the summaries are %d px wide" % d["sumW"]
print("%dx%d: %d rows within the first screen, rows %.0f px high" % (
    w, h, visible, (d["bottoms"][-1] - d["bottoms"][0]) / (len(d["bottoms"]) - 1)))
PY
}
measure 1400 1000
check_layout 1400 1000 15 || fail "layout at 1400x1000 (kept in $WORK/measured.html)"
measure 1000 800
check_layout 1000 800 15 || fail "layout at 1000x800 (kept in $WORK/measured.html)"
dom narrow "$URL/" 420,900
cp "$WORK/narrow.html" "$WORK/page.html"
measure 420 900
check_layout 420 900 15 || fail "layout at 420x900 (kept in $WORK/measured.html)"
shot wide "$URL/" 1400,1000
shot narrow "$URL/" 420,900

# ---- filters
# rows PATH [CURL ARGS]: the hosts and states of the alert rows of the page at PATH, one a line
rows() {
    _p=$1
    shift
    curl -sS -o "$WORK/filtered.html" -w '%{http_code}\n' "$@" "$URL$_p" > "$WORK/code" || fail "GET $_p"
    python3 - "$WORK/filtered.html" <<'PY'
import sys, re
for tr in re.findall(r'<tr class="alert [^"]*st-(\w+)">.*?<td class="host wide" title="([^"]*)"', open(sys.argv[1]).read()):
    print(tr[1], tr[0])
PY
}
got=$(rows '/?filter=HOST%3D%22web-frontend-03.prod.example.net%22&state=silenced')
[ "$got" = "web-frontend-03.prod.example.net silenced" ] || fail "filter HOST=... state=silenced: '$got'"
got=$(rows '/?filter=HOST%3Ddb1&state=inhibited')
[ "$got" = "db1 inhibited" ] || fail "state=inhibited: '$got'"
got=$(rows '/?state=active' | grep -vc ' firing$')
[ "$got" = 0 ] || fail "state=active shows muted alerts"
got=$(rows '/?filter=corral.severity%3D%22critical%22&filter=HOST%3D~%22.*db.*%22' -H "Authorization: Bearer $TOKEN")
[ "$got" = "db1 firing" ] || fail "two filters, one a regular expression: '$got'"
# (a regular expression needs the token, as in the API: a page elsewhere cannot make a browser run one)
rows '/?filter=HOST%3D~%22.*db.*%22' > /dev/null
[ "$(cat "$WORK/code")" = 401 ] || fail "a regular expression without the token: $(cat "$WORK/code")"
rows '/?filter=HOST%3D%22web' > /dev/null
[ "$(cat "$WORK/code")" = 400 ] || fail "a bad filter: $(cat "$WORK/code")"
grep -q '<p class="error" role="alert">Bad URL: filter HOST=&quot;web: ' "$WORK/filtered.html" ||
    fail "the bad filter's message: $(grep -o '<p class="error".*</p>' "$WORK/filtered.html")"
rows '/?state=snoozed' > /dev/null
[ "$(cat "$WORK/code")" = 400 ] && grep -q 'state snoozed: active, silenced' "$WORK/filtered.html" ||
    fail "a bad state: $(cat "$WORK/code")"

# ---- an alert's page
# the alert ID's page (the link the table gives) in $WORK/NAME.html
alert_page() {
    href=$(python3 - "$WORK/page.html" "$2" <<'PY'
import sys, re
for host, href in re.findall(r'<td class="host wide" title="([^"]*)">.*?<td class="summary"[^>]*><span class="host2">[^<]*</span><a href="([^"]*)"', open(sys.argv[1]).read()):
    if host == sys.argv[2]:
        print(href.replace("&amp;", "&"))
        break
PY
)
    case "$href" in /alert\?id=*) ;; *) fail "no link to $2's page: '$href'" ;; esac
    dom "$1" "$URL$href"
}
alert_page mail1 mail1
shot evidence "$URL$href" 1400,1000
python3 - "$WORK/mail1.html" <<'PY' || fail "mail1's page (kept in $WORK/mail1.html)"
import sys, re
d = open(sys.argv[1]).read()
assert "<script" not in d
assert "<dt>Alert id</dt><dd>test.evidence/mail1</dd>" in d, "no id"
assert '<td class="name">HOST</td><td class="key">mail1</td>' in d, "no labels"
assert '<td class="name">corral.severity</td><td class="key">major</td>' in d
ev = re.search(r'<pre class="evidence">(.*?)</pre>', d, re.S)
assert ev and ev.group(1).count("login failed for root from 10.0.0.") == 8, "evidence lines"
assert re.search(r'<tr class="notification"><td class="time">[^<]+</td><td class="name">runner</td><td class="state">firing</td><td class="state">delivered</td>', d), "notifications"
cmd = re.search(r'<pre class="cmd" id="silence-command">(.*?)</pre>', d, re.S)
want = """corral silence add 'HOST="mail1"' 'corral.alert_id="test.evidence/mail1"' --duration 2h --comment 'mail1: 8 failed logins on mail1'"""
assert cmd and __import__("html").unescape(cmd.group(1)) == want, cmd and cmd.group(1)
PY
# has FILE TEXT: FILE's text (entities read) holds TEXT
has() {
    python3 -c 'import sys, html; sys.exit(sys.argv[2] not in html.unescape(open(sys.argv[1]).read()))' "$1" "$2"
}
alert_page web3 web-frontend-03.prod.example.net
has "$WORK/web3.html" "<dt>Silence</dt><dd>$SID</dd><dt>Matchers</dt><dd>HOST=\"web-frontend-03.prod.example.net\"</dd>" &&
    has "$WORK/web3.html" '<dt>Comment</dt><dd>deploy <web-03></dd>' ||
    fail "web3's page does not show its silence (kept in $WORK/web3.html)"
curl -sS -o "$WORK/db1.list" "$URL/?filter=corral.event%3DDiskSlow"
href=$(grep -o '<td class="summary"[^>]*><span class="host2">[^<]*</span><a href="[^"]*"><span[^>]*>inhibited</span>' "$WORK/db1.list" | sed 's/.*href="//; s/">.*//')
dom diskslow "$URL$href"
has "$WORK/diskslow.html" '</span></span> firing: db1 db1 does not answer. It holds this alert back' &&
    grep -q 'Inhibited by</h2><p><a href="/alert?id=am%2F[0-9a-f]*">am/[0-9a-f]*</a>' "$WORK/diskslow.html" ||
    fail "DiskSlow's page does not name what inhibits it (kept in $WORK/diskslow.html)"
shot alert "$URL$href" 1400,1000

# the command of web 7's page, run by sh as it is: it silences that alert and nothing else
alert_page web7 web-frontend-07.prod.example.net
cmd=$(python3 -c '
import sys, re, html
print(html.unescape(re.search(r"<pre class=\"cmd\" id=\"silence-command\">(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))' "$WORK/web7.html")
mkdir -p "$WORK/bin" "$WORK/run"
ln -s "$(realpath "$CORRAL")" "$WORK/bin/corral"
(cd "$WORK/run" && PATH="$WORK/bin:$PATH" sh -c "$cmd -s '$CONTROL'") > "$WORK/sid7" || fail "the silence command: $cmd"
[ -e "$WORK/run/pwned" ] && fail "the silence command ran the summary: $cmd"
"$CORRAL" silence -s "$CONTROL" list --json > "$WORK/silences.json" || fail "corral silence list"
python3 - "$WORK/silences.json" "$(cat "$WORK/sid7")" <<'PY' || fail "the silence the command added: $(cat "$WORK/silences.json")"
import sys, json
s = [x for x in json.load(open(sys.argv[1])) if x["id"] == sys.argv[2]]
assert len(s) == 1, s
assert s[0]["comment"] == "web-frontend-07.prod.example.net: it's $(touch pwned) \"quoted\" <b>bold</b> on web 7", s[0]
assert s[0]["matchersText"].startswith('HOST="web-frontend-07.prod.example.net",corral.alert_id="am/'), s[0]
PY
got=$(rows '/?state=silenced' | sort)
[ "$got" = "web-frontend-03.prod.example.net silenced
web-frontend-07.prod.example.net silenced" ] || fail "after the command, silenced: '$got'"

code=$(curl -sS -o "$WORK/nope.html" -w '%{http_code}' "$URL/alert")
[ "$code" = 400 ] && grep -q 'No alert id: the address is /alert?id=ID' "$WORK/nope.html" ||
    fail "no id: $code $(cat "$WORK/nope.html")"
code=$(curl -sS -o "$WORK/nope.html" -w '%{http_code}' "$URL/alert?id=no%2Fsuch")
[ "$code" = 404 ] && grep -q 'corrald has no alert with id <code>no/such</code>' "$WORK/nope.html" ||
    fail "an unknown id: $code $(cat "$WORK/nope.html")"
for f in wide narrow alert evidence; do
    if [ -n "${SHOTS:-}" ]; then cp "$WORK/$f.png" "$SHOTS/status_oncall_$f.png" || fail "cp to $SHOTS"; fi
done

corrald_alive
stop_corrald
echo "$TEST: ok"
