#!/bin/sh
# The shipped Sigma rules in corrald: the <rules> and <sigma> elements of
# etc/corrald.conf (the library of rules/, the SigmaHQ rules of rules/sigma
# with etc/sigma-mapping.yml, at their source paths) load every shipped
# Sigma rule; an access line with a path traversal in its query (read by
# rules/http-access.xml) and a sudo command run as user id -1 (read by
# rules/sudo.xml) raise alerts with the label contract (title as summary,
# level as severity, the rule's id in the alert id, HOST, the rule's
# authors as the Detection Rule License asks, the fields it read), and
# ordinary lines of the same programs raise none.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }

shipped=$top_srcdir/etc/corrald.conf
to_src() { sed -e "s|/usr/share/corral/rules|$top_srcdir/rules|g" \
               -e "s|/usr/share/corral/sigma-mapping.yml|$top_srcdir/etc/sigma-mapping.yml|g"; }
rules=$(grep -o '<rules path="/usr/share/corral/rules"/>' "$shipped" | to_src)
sigma=$(grep -o '<sigma rules="[^"]*" mapping="[^"]*"/>' "$shipped" | to_src)
[ -n "$rules" ] || fail "no <rules> of the shipped library in etc/corrald.conf"
[ -n "$sigma" ] || fail "no <sigma> element in etc/corrald.conf"
nrules=$(ls "$top_srcdir"/rules/sigma/*.yml | wc -l)

cat > "$WORK/hook.sh" <<SH
#!/bin/sh
cat >> "$WORK/alerts.json"
SH
chmod +x "$WORK/hook.sh"
CONTROL=$WORK/control.sock
# one engine thread: the lines are processed in the order sent, so that when
# the alert of the last line has arrived, the lines before it are done
cat > "$WORK/corrald.conf" <<XML
<corrald>
  $rules
  $sigma
  <engine workers="1"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="hook" program="$WORK/hook.sh" stdin="json"/>
  </executors>
  <routes>
    <route tag="corral.alert" to="hook"/>
  </routes>
</corrald>
XML
mkdir -p "$WORK/spool"
start_corrald corrald "$WORK/corrald.conf"
wait_log "sigma: $nrules rules loaded, 0 refused" || fail "corrald did not load the $nrules shipped Sigma rules"
[ "$(metric corral_sigma_rules)" = "$nrules" ] || fail "corral_sigma_rules: $(metric corral_sigma_rules), not $nrules"
echo "ok: corrald loads the $nrules shipped Sigma rules with the shipped mapping"

port=$(input_port udp)
# negative lines: ordinary requests (one with a query), a sudo command as root
# (carl has used sudo on web1 before: rules/sudo.xml's first-use alert is for
# his first command only), a crontab listing, an sshd line
send_udp "$port" "<38>Dec  6 10:00:00 web1 sudo:     carl : TTY=pts/1 ; PWD=/home/carl ; USER=root ; COMMAND=/usr/bin/id"
wait_lines "$WORK/alerts.json" 1 || fail "no first-use alert for carl's first sudo command"
send_udp "$port" \
    "<190>Dec  6 10:00:01 web1 nginx: 192.0.2.10 - - [06/Dec/2026:10:00:01 +0000] \"GET /index.html HTTP/1.1\" 200 612 \"-\" \"Mozilla/5.0\"" \
    "<190>Dec  6 10:00:02 web1 nginx: 192.0.2.11 - - [06/Dec/2026:10:00:02 +0000] \"GET /search?q=etc%2Fpasswd&page=2 HTTP/1.1\" 200 5120 \"-\" \"Mozilla/5.0\"" \
    "<85>Dec  6 10:00:03 web1 sudo:     carl : TTY=pts/1 ; PWD=/home/carl ; USER=root ; COMMAND=/usr/bin/apt update" \
    "<78>Dec  6 10:00:04 web1 crontab[3121]: (alice) LIST (alice)" \
    "<38>Dec  6 10:00:05 web1 sshd[105]: Connection closed by 192.0.2.9 port 2205 [preauth]"
# positive lines
send_udp "$port" \
    "<190>Dec  6 10:00:06 web1 nginx: 198.51.100.23 - - [06/Dec/2026:10:00:06 +0000] \"GET /cgi-bin/view?file=../../../etc/passwd HTTP/1.1\" 404 196 \"-\" \"curl/8.1.2\""
wait_lines "$WORK/alerts.json" 2 || fail "no alert for the path traversal"
python3 - "$WORK/alerts.json" <<'PY' || fail "not the alerts expected: $(cat "$WORK/alerts.json")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert len(lines) == 2, lines
assert lines[0]["corral.alert_id"] == "sudo.first_use/web1/carl", lines[0]
a = lines[1]
assert a["corral.summary"] == "Path Traversal Exploitation Attempts", a
assert a["corral.severity"] == "minor" and a["sigma.level"] == "medium", a
assert a["corral.alert_id"] == "sigma/7745c2ea-24a5-4290-b680-04359cb84b35/web1", a
assert a["HOST"] == "web1" and a["PROGRAM"] == "nginx", a
assert a[".classifier.class"] == "sigma", a
assert a[".classifier.rule_id"] == "7745c2ea-24a5-4290-b680-04359cb84b35", a
assert a["sigma.author"].startswith("Subhash Popuri (@pbssubhash), Florian Roth"), a
assert a["http.query"] == "file=../../../etc/passwd", a
PY
echo "ok: a path traversal in an access line raises its alert with the labels; ordinary lines none"

send_udp "$port" "<85>Dec  6 10:00:07 web1 sudo:     carl : TTY=pts/1 ; PWD=/home/carl ; USER=#-1 ; COMMAND=/usr/bin/id"
wait_lines "$WORK/alerts.json" 3 || fail "no alert for sudo -u#-1"
python3 - "$WORK/alerts.json" <<'PY' || fail "not the alert expected: $(cat "$WORK/alerts.json")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert len(lines) == 3, lines
a = lines[2]
assert a["corral.summary"] == "Sudo Privilege Escalation CVE-2019-14287 - Builtin", a
assert a["corral.severity"] == "critical", a
assert a["corral.alert_id"] == "sigma/7fcc54cb-f27d-4684-84b7-436af096f858/web1", a
assert a["sudo.runas_user"] == "#-1" and a["HOST"] == "web1", a
assert a["sigma.author"] == "Florian Roth (Nextron Systems)", a
PY
stop_corrald "$CORRALD_PID"
echo "ok: sudo run as user id -1 raises its alert (USER mapped to sudo.runas_user)"
