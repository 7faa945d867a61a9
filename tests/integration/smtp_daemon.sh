#!/bin/sh
# The smtp executor inside corrald, end to end: absence detection raises two
# alerts, the route sends them to two smtp executors against a real SMTP
# server (aiosmtpd, tests/integration/smtp_server.py).  "mail" groups them
# into one mail, which the server stores and Python's email package checks;
# "gone" mails a recipient the server rejects with 550, so its alerts land
# in the dead-letter file with the server's reply as the reason.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null ||
    { echo "skipped: /usr/bin/python3 lacks aiosmtpd (Debian: python3-aiosmtpd)"; exit 77; }

mkdir -p "$WORK/mail" "$WORK/spool"
/usr/bin/python3 "$top_srcdir/tests/integration/smtp_server.py" --dir "$WORK/mail" \
    --reject-rcpt gone@example.com > "$WORK/smtp.port" 2> "$WORK/smtp.log" &
track $!
wait_grep "$WORK/smtp.port" PORT || fail "the SMTP server did not start"
sport=$(sed -n 's/^PORT //p' "$WORK/smtp.port")

CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence after="1s"/>
  <executors spool="$WORK/spool">
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="Corral &lt;corral@example.com&gt;"
          to="ops@example.com, oncall@example.com" group-by="" group-wait="3s"
          subject="[corral] \$MESSAGE"/>
    <smtp name="gone" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="gone@example.com" attempts="2" backoff="100ms">
      <body>
        Host: \$HOST
        \$MESSAGE
      </body>
    </smtp>
  </executors>
  <routes><route to="mail,gone"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
now() { date '+%b %e %H:%M:%S'; }
send_udp "$(input_port udp)" "$(now) web1 app: hello" "$(now) web2 app: hello"

wait_until test -f "$WORK/mail/msg-0001.json" || fail "no mail arrived"
# both alerts delivered, none waiting: a second mail, had the grouping
# failed, would be stored by now
mail_done() {
    [ "$(metric corral_executor_delivered_total executor=mail)" -eq 2 ] &&
        [ "$(metric corral_executor_queued executor=mail)" -eq 0 ] &&
        [ "$(metric corral_executor_inflight executor=mail)" -eq 0 ]
}
wait_until mail_done || fail "the mail executor did not deliver both alerts: $(metrics_text | grep 'executor="mail"')"
[ -f "$WORK/mail/msg-0002.json" ] && fail "the two alerts were not grouped into one mail"
/usr/bin/python3 "$top_srcdir/tests/integration/smtp_check.py" "$WORK/mail/msg-0001.json" \
    --mail-from corral@example.com --rcpt ops@example.com --rcpt oncall@example.com \
    --from-header "Corral <corral@example.com>" --header X-Corral-Alerts=2 \
    --header X-Corral-Executor=mail --subject-contains "(+1 more)" \
    --body-contains "web1 has been silent for" --body-contains "web2 has been silent for" \
    --body-contains "2 alerts." || fail "the grouped mail is not right"

dead="$WORK/spool/gone.dead.jsonl"
wait_until test -s "$dead" || fail "the rejected alerts did not reach the dead-letter file"
wait_grep "$dead" . 2 || fail "not both alerts are dead letters"
grep -q "550 5.1.1 <gone@example.com>: Recipient address rejected" "$dead" ||
    fail "the dead letters lack the server's reply: $(head -c 400 "$dead")"
[ "$(grep -c '^RCPT gone@example.com' "$WORK/mail/events.log")" -eq 2 ] ||
    fail "a 550 was retried: $(grep -c '^RCPT gone' "$WORK/mail/events.log") attempts"

stop_corrald "$CORRALD_PID"
echo "ok: grouped mail delivered, 550 dead-lettered without retry"
