#!/bin/sh
# What an alert mail says, at the SMTP test server (smtp_server.py), with the
# built-in subject and body, and <stats external-url> set:
#   - one alert: "[CRITICAL] web1: SUMMARY"; the body gives the summary,
#     host, severity and since when first, then the log lines, the link to
#     the alert's page (its id percent-encoded: '/' as %2F), then a silence
#     command, which run by a POSIX shell creates a silence with exactly
#     the alert's HOST and id and the summary (both kinds of quotes) as its
#     comment, and that silence mutes the alert when it fires again;
#   - three alerts grouped into one mail: titled after the worst, "(+2 more)";
#   - resolved by hand: "[RESOLVED] web1: SUMMARY", no silence command;
#   - a summary longer than a subject: cut at a word, with "…";
#   - a script sees the link as CORRAL_URL;
#   - a bad external-url is refused with file:line.
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

cat > "$WORK/script.sh" <<SH
#!/bin/sh
echo "\$CORRAL_ALERT_ID \$CORRAL_URL" >> "$WORK/script.calls"
SH
chmod +x "$WORK/script.sh"

CONTROL=$WORK/control.sock
S="-s $CONTROL"
conf() { # conf EXTERNAL-URL
    cat <<XML
<corrald>
  <rules path="$HERE/mail_rules.xml"/>
  <control socket="$CONTROL"/>
  <stats listen="127.0.0.1:0"
         external-url="$1"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="ops@example.com"/>
    <smtp name="grouped" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="team@example.com" group-by="HOST" group-wait="10s"/>
    <exec name="script" program="$WORK/script.sh"/>
  </executors>
  <routes>
    <route tag="corral.alert" to="mail,script" send-resolved="yes" continue="yes"/>
    <route tag="corral.alert" to="grouped"/>
  </routes>
</corrald>
XML
}

# ---- a bad external-url: refused, with where it is
conf "ftp://corral.example.net/" > "$WORK/bad.conf"
"$CORRALD" -t -f "$WORK/bad.conf" --schema "$SCHEMA" > "$WORK/bad.out" 2>&1 && fail "corrald -t took external-url=ftp://"
grep -q "bad.conf:[45]: bad external-url \"ftp://corral.example.net/\"" "$WORK/bad.out" ||
    fail "no file:line error for a bad external-url: $(cat "$WORK/bad.out")"

conf "https://corral.example.net:9115/" > "$WORK/corrald.conf"
start_corrald corrald "$WORK/corrald.conf"
# send LINE...: the lines as syslog messages, in one go (the grouped ones meet in group-wait)
send() {
    _now=$(date '+%b %e %H:%M:%S')
    _p=$(input_port udp)
    for _l in "$@"; do
        shift
        set -- "$@" "<38>$_now $_l"
    done
    send_udp "$_p" "$@"
}

# mail TO [SUBJECT-PREFIX]: the file of the newest mail to TO whose subject starts so
mail() {
    /usr/bin/python3 - "$WORK/mail" "$1" "${2:-}" <<'PY'
import base64, email, email.policy, glob, json, sys
found = None
for f in sorted(glob.glob(sys.argv[1] + "/msg-*.json")):
    rec = json.load(open(f))
    m = email.message_from_bytes(base64.b64decode(rec["data"]), policy=email.policy.default)
    if m["To"] == sys.argv[2] and str(m["Subject"]).startswith(sys.argv[3]):
        found = f
if not found:
    sys.exit(1)
print(found)
PY
}

# ---- one alert, by itself
send "web1 mr: read-only sdb"
wait_until mail ops@example.com "[CRITICAL]" > /dev/null || fail "no mail for the critical alert"
first=$(mail ops@example.com "[CRITICAL]")
/usr/bin/python3 - "$first" > "$WORK/silence.cmd" <<'PY' || fail "the critical alert's mail is not right"
import base64, email, email.policy, json, sys
rec = json.load(open(sys.argv[1]))
m = email.message_from_bytes(base64.b64decode(rec["data"]), policy=email.policy.default)
subject = str(m["Subject"])
want = '[CRITICAL] web1: sdb is read-only: can\'t write "data"'
assert subject == want, (subject, want)
body = m.get_content().replace("\r\n", "\n")
lines = body.split("\n")
sys.stderr.write(body)
# what happened and since when, first
assert lines[0] == 'sdb is read-only: can\'t write "data"', lines[:3]
head = "\n".join(lines[:8])
for w in ("Host:     web1", "Severity: critical", "Since:    ", "Alert:    mr/web1/sdb"):
    assert "\n" + w in head, (w, head)
url = "https://corral.example.net:9115/alert?id=mr%2Fweb1%2Fsdb"
order = ["Since:", "file system on sdb remounted read-only on web1", "Log lines:",
         "Alert page:\n  " + url + "\n", "Silence it for 2h:\n  corral silence add ", "Values:"]
at = [body.find(w) for w in order]
assert all(a >= 0 for a in at) and at == sorted(at), list(zip(order, at))
cmd = [l for l in lines if l.startswith("  corral silence add ")]
assert len(cmd) == 1, cmd
assert cmd[0].startswith('  corral silence add HOST="web1" corral.alert_id="mr/web1/sdb" --duration 2h --comment '), cmd
print(cmd[0].strip())
PY
wait_grep "$WORK/script.calls" "^mr/web1/sdb https://corral.example.net:9115/alert?id=mr%2Fweb1%2Fsdb\$" ||
    fail "the script did not get CORRAL_URL: $(cat "$WORK/script.calls" 2>/dev/null)"

# ---- resolved by hand: a resolved mail, plainly marked, without a silence command
"$CORRAL" alerts $S resolve mr/web1/sdb || fail "corral alerts resolve failed"
wait_until mail ops@example.com "[RESOLVED]" > /dev/null || fail "no resolved mail"
/usr/bin/python3 - "$(mail ops@example.com "[RESOLVED]")" <<'PY' || fail "the resolved mail is not right"
import base64, email, email.policy, json, sys
rec = json.load(open(sys.argv[1]))
m = email.message_from_bytes(base64.b64decode(rec["data"]), policy=email.policy.default)
subject = str(m["Subject"])
assert subject == '[RESOLVED] web1: sdb is read-only: can\'t write "data"', subject
body = m.get_content().replace("\r\n", "\n")
assert body.startswith('RESOLVED: sdb is read-only: can\'t write "data"\n'), body[:200]
assert "\nResolved: " in body and "\nBy:       hand\n" in body, body
assert "https://corral.example.net:9115/alert?id=mr%2Fweb1%2Fsdb" in body, body
assert "corral silence add" not in body, body
PY

# ---- the silence command, as a shell runs it (told the control socket)
cmd=$(cat "$WORK/silence.cmd")
case $cmd in "corral silence add "*) ;; *) fail "not a silence command: $cmd" ;; esac
eval "\"\$CORRAL\" silence ${cmd#corral silence } $S" > "$WORK/silence.id" ||
    fail "the mailed silence command failed: $cmd"
"$CORRAL" silence $S list --json > "$WORK/silences.json" || fail "corral silence list failed"
/usr/bin/python3 - "$WORK/silences.json" <<'PY' || fail "the silence is not the mailed one: $(cat "$WORK/silences.json")"
import json, sys
sil = json.load(open(sys.argv[1]))
assert len(sil) == 1, sil
s = sil[0]
assert s["comment"] == 'sdb is read-only: can\'t write "data"', s["comment"]
got = sorted((m["name"], m["value"], m.get("isEqual", True), m.get("isRegex", False)) for m in s["matchers"])
assert got == [("HOST", "web1", True, False), ("corral.alert_id", "mr/web1/sdb", True, False)], got
PY
# it mutes the alert when it fires again
send "web1 mr: read-only sdb"
shows_silenced() {
    "$CORRAL" alerts $S show mr/web1/sdb > "$WORK/show.txt" 2>&1 && grep -q "^state: *silenced" "$WORK/show.txt"
}
wait_until shows_silenced || fail "the mailed silence does not mute the alert: $(cat "$WORK/show.txt")"

# ---- three alerts of one host, grouped: titled after the worst
send "web2 mr: full /var" "web2 mr: read-only sdc" "web2 mr: full /home"
wait_until mail team@example.com "[CRITICAL] web2:" > /dev/null || fail "no grouped mail for web2"
/usr/bin/python3 - "$(mail team@example.com "[CRITICAL] web2:")" <<'PY' || fail "the grouped mail is not right"
import base64, email, email.policy, json, sys
rec = json.load(open(sys.argv[1]))
m = email.message_from_bytes(base64.b64decode(rec["data"]), policy=email.policy.default)
subject = str(m["Subject"])
assert subject == '[CRITICAL] web2: sdc is read-only: can\'t write "data" (+2 more)', subject
assert m["X-Corral-Alerts"] == "3", m["X-Corral-Alerts"]
body = m.get_content().replace("\r\n", "\n")
assert body.startswith("3 alerts, grouped by HOST=web2.\n\n"), body[:200]
index = body.split("\n")[2:5]
assert sorted(index) == sorted(["  [WARNING] web2: /var is full", "  [WARNING] web2: /home is full",
                                "  [CRITICAL] web2: sdc is read-only: can't write \"data\""]), index
for id in ("mr%2Fweb2%2Ffull%2Fvar", "mr%2Fweb2%2Fsdc", "mr%2Fweb2%2Ffull%2Fhome"):
    assert "https://corral.example.net:9115/alert?id=" + id + "\n" in body, (id, body)
PY

# ---- a summary longer than a subject
words="the quick brown fox jumps over the lazy dog and keeps on running through the whole"
words="$words field until the subject line has no room left for anything more than this"
send "web3 mr: long $words"
wait_until mail ops@example.com "[MAJOR] web3:" > /dev/null || fail "no mail for the long summary"
/usr/bin/python3 - "$(mail ops@example.com "[MAJOR] web3:")" "$words" <<'PY' || fail "the long subject is not cut right"
import base64, email, email.policy, json, sys
rec = json.load(open(sys.argv[1]))
m = email.message_from_bytes(base64.b64decode(rec["data"]), policy=email.policy.default)
subject = str(m["Subject"])
assert subject.startswith("[MAJOR] web3: the quick brown fox") and subject.endswith("\u2026"), subject
assert len(subject) <= 120, (len(subject), subject)
kept = subject[len("[MAJOR] web3: "):-1].rstrip()
# whole words only: what is kept is the summary's beginning, up to a space
assert (sys.argv[2] + " ").startswith(kept + " "), (kept, sys.argv[2])
PY

stop_corrald "$CORRALD_PID"
echo "ok: subjects [SEVERITY] HOST: summary, (+N more), [RESOLVED], cut at a word; body order; link; silence command"
