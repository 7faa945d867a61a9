#!/bin/sh
# The log lines an alert carries (corral.evidence), end to end by mail:
# eight failed logins on web1 raise an alert; the mail the SMTP server
# receives (tests/integration/smtp_server.py) has a "Log lines:" section
# with the first three and the last two lines around "... 3 more lines ...",
# the defaults (5 lines, 2 KiB), each as TIMESTAMP HOST PROGRAM[PID]:
# MESSAGE.  The alert store holds the same lines as the label
# corral.evidence (`corral alerts --json`, GET /api/v1/alerts), and the
# status page shows them under the alert id.  A mail with a <body> template
# gets the section after its text.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null ||
    { echo "skipped: /usr/bin/python3 lacks aiosmtpd (Debian: python3-aiosmtpd)"; exit 77; }

mkdir -p "$WORK/mail" "$WORK/spool"
/usr/bin/python3 "$HERE/smtp_server.py" --dir "$WORK/mail" > "$WORK/smtp.port" 2> "$WORK/smtp.log" &
track $!
wait_grep "$WORK/smtp.port" PORT || fail "the SMTP server did not start"
sport=$(sed -n 's/^PORT //p' "$WORK/smtp.port")

CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/evidence_rules.xml"/>
  <control socket="$CONTROL"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="ops@example.com"/>
    <smtp name="brief" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="brief@example.com">
      <body>Alert on \$HOST</body>
    </smtp>
  </executors>
  <routes><route tag="corral.alert" to="mail,brief"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"

python3 - "$(input_port udp)" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(8):
    line = "<38>Dec  6 10:00:0%d web1 app[77]: login failed for user%d from 192.0.2.%d" % (i, i, i)
    s.sendto(line.encode(), ("127.0.0.1", int(sys.argv[1])))
PY

delivered() {
    [ "$(metric corral_executor_delivered_total executor=mail)" -eq 1 ] &&
        [ "$(metric corral_executor_delivered_total executor=brief)" -eq 1 ]
}
wait_until delivered || fail "the alert was not mailed: $(metrics_text | grep delivered)"

python3 - "$WORK/mail" <<'PY' || fail "the mails lack the alert's log lines"
import base64, email, email.policy, glob, json, re, sys
stamp = r"\d{4}-\d\d-\d\dT10:00:0%d[+-]\d\d:\d\d"
want = [stamp % i + r" web1 app\[77\]: login failed for user%d from 192\.0\.2\.%d" % (i, i)
        for i in (0, 1, 2)]
want.append(r"\.\.\. 3 more lines \.\.\.")
want += [stamp % i + r" web1 app\[77\]: login failed for user%d from 192\.0\.2\.%d" % (i, i)
         for i in (6, 7)]
bodies = {}
for f in glob.glob(sys.argv[1] + "/msg-*.json"):
    rec = json.load(open(f))
    msg = email.message_from_bytes(base64.b64decode(rec["data"]), policy=email.policy.default)
    bodies[msg["To"]] = msg.get_content().replace("\r\n", "\n")
assert set(bodies) == {"ops@example.com", "brief@example.com"}, bodies.keys()
for to, body in bodies.items():
    lines = body.split("\n")
    assert "Log lines:" in lines, (to, body)
    at = lines.index("Log lines:")
    got = lines[at + 1:at + 7]
    assert len(got) == 6, (to, got)
    for g, w in zip(got, want):
        assert re.fullmatch("  " + w, g), (to, g, w)
    assert at + 7 == len(lines) or lines[at + 7] == "", (to, lines[at + 7:])
# the default body: the section after the alert's text, and not again among the values
ops = bodies["ops@example.com"]
assert ops.startswith("8 failed logins on web1\n"), ops
assert ops.index("Alert:") < ops.index("Log lines:"), ops
assert "corral.evidence" not in ops, ops
# a <body>: its text, then the section
assert bodies["brief@example.com"].startswith("Alert on web1\n\nLog lines:\n"), bodies["brief@example.com"]
PY

# the alert store: the lines are the label corral.evidence
"$CORRAL" alerts -s "$CONTROL" --json > "$WORK/alerts.json" || fail "corral alerts --json failed"
python3 - "$WORK/alerts.json" <<'PY' || fail "the alert store lacks the evidence: $(cat "$WORK/alerts.json")"
import json, sys
alerts = json.load(open(sys.argv[1]))
assert len(alerts) == 1, alerts
ev = alerts[0]["labels"]["corral.evidence"].split("\n")
assert len(ev) == 6 and ev[3] == "... 3 more lines ...", ev
assert ev[0].endswith(" web1 app[77]: login failed for user0 from 192.0.2.0"), ev
assert ev[5].endswith(" web1 app[77]: login failed for user7 from 192.0.2.7"), ev
PY

# the API and the page
python3 - "http://127.0.0.1:$(stats_port)" <<'PY' || fail "the API or the page lack the evidence"
import html, json, sys, urllib.request
base = sys.argv[1]
alerts = json.load(urllib.request.urlopen(base + "/api/v1/alerts"))["data"]
ev = alerts[0]["labels"]["corral.evidence"]
assert ev.split("\n")[3] == "... 3 more lines ...", ev
# the list links the alert to its own page, which shows the lines
page = urllib.request.urlopen(base + "/").read().decode()
assert 'href="/alert?id=test.evidence%2Fweb1"' in page, page
page = urllib.request.urlopen(base + "/alert?id=test.evidence%2Fweb1").read().decode()
assert '<pre class="evidence">' + html.escape(ev, quote=False) in page or \
    '<pre class="evidence">' + html.escape(ev) in page, page
PY

stop_corrald "$CORRALD_PID"
echo "ok: the mail, the alert store, the API and the page carry the alert's log lines"
