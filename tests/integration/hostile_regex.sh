#!/bin/sh
# Regular expressions from outside run within PCRE2 limits, against the
# real corrald with 40 alerts whose MESSAGE makes (?:(?:.|\s)+)+[0-9]{30}
# backtrack without end:
#  1. GET /api/v1/alerts?filter=MESSAGE=~"..." without the API token: 401
#     (an <img> on another site sends none), counted as unauthorized; a
#     filter without a regex needs no token.  With the token: 200, no
#     alert listed, and each stopped match counted in
#     corral_regex_limit_hits_total.
#  2. `corral alerts 'MESSAGE=~"..."'` on the control socket: the same.
#  3. A silence user=~".*admin.*test.*" and an alert whose user is 16 KiB
#     of "admintes": the match stops at the limit, is counted, and the
#     alert is not silenced: it is delivered.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl

mkdir -p "$WORK/rules"
cat > "$WORK/rules/app.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-06">
  <ruleset name="app" id="regex-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="regex.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@ by @ANYSTRING:user@</pattern></patterns>
      <actions><action route="runner"><message>
        <values>
          <value name="MESSAGE">alert ${n}@1 by ${user}@1</value>
          <value name="user">${user}@1</value>
          <value name="corral.alert_id">a-${n}@1</value>
        </values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
receiver_script
TOKEN=corral-test-token-$$-0123456789
printf '%s\n' "$TOKEN" > "$WORK/token"
chmod 600 "$WORK/token"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <stats listen="127.0.0.1:0" api-token-file="$WORK/token"/>
  <inputs><tcp listen="127.0.0.1:0" name="in"/></inputs>
  <executors><exec name="runner" program="$WORK/receiver.sh"/></executors>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
CONTROL=$WORK/control.sock
URL=http://127.0.0.1:$(stats_port)

# 40 alerts, each MESSAGE 60 bytes and more, with no 30 digits in a row
i=1
: > "$WORK/lines"
while [ $i -le 40 ]; do
    echo "<13>Dec  6 10:00:00 web1 app: alert $i by user$i from a host far away over the net" \
        >> "$WORK/lines"
    i=$((i + 1))
done
send_tcp_file "$(input_port in)" "$WORK/lines"
wait_metric corral_executor_delivered_total executor=runner -eq 40 ||
    fail "$(metric corral_executor_delivered_total executor=runner) alerts delivered, want 40"

EVIL='MESSAGE=~"(?:(?:.|\s)+)+[0-9]{30}"'
# get FILTER [TOKEN]: "STATUS BODY" of GET /api/v1/alerts?filter=FILTER
get() {
    if [ -n "${2:-}" ]; then
        set -- "$1" -H "Authorization: Bearer $2"
    else
        set -- "$1"
    fi
    _f=$1
    shift
    code=$(curl -sS -G -o "$WORK/get.out" -w '%{http_code}' "$@" --data-urlencode "filter=$_f" \
        "$URL/api/v1/alerts") || fail "curl failed"
    echo "$code $(cat "$WORK/get.out")"
}

# ---- 1. the API
unauth=$(metric corral_endpoint_unauthorized_total endpoint=stats)
got=$(get "$EVIL")
case "$got" in "401 "*"needs the API token"*) ;; *) fail "a regex filter without the token: $got" ;; esac
got=$(get "$EVIL" wrong-token-0123456789)
case "$got" in "401 "*"wrong API token"*) ;; *) fail "a regex filter with a wrong token: $got" ;; esac
got=$(get 'user!~"x"')
case "$got" in "401 "*) ;; *) fail "a !~ filter without the token: $got" ;; esac
[ "$(metric corral_endpoint_unauthorized_total endpoint=stats)" -eq $((unauth + 3)) ] ||
    fail "refusals not counted: $(metric corral_endpoint_unauthorized_total endpoint=stats), was $unauth"
[ "$(metric corral_regex_limit_hits_total)" -eq 0 ] ||
    fail "a refused filter ran: $(metric corral_regex_limit_hits_total) limit hits"
got=$(get 'corral.alert_id=a-7')
case "$got" in "200 "*'"a-7"'*) ;; *) fail "an equality filter without the token: $got" ;; esac
got=$(get "$EVIL" "$TOKEN")
case "$got" in '200 {"status":"success","data":[]}') ;; *) fail "a regex filter with the token: $got" ;; esac
[ "$(metric corral_regex_limit_hits_total)" -eq 40 ] ||
    fail "$(metric corral_regex_limit_hits_total) limit hits counted, want 40 (one per alert)"

# ---- 2. the control socket
[ "$("$CORRAL" alerts -s "$CONTROL" --json "$EVIL")" = "[]" ] || fail "corral alerts listed something"
[ "$(metric corral_regex_limit_hits_total)" -eq 80 ] ||
    fail "$(metric corral_regex_limit_hits_total) limit hits counted, want 80"

# ---- 3. a regex silence and an attacker's user name
id=$("$CORRAL" silence -s "$CONTROL" add 'user=~".*admin.*test.*"' --duration 1h) ||
    fail "silence add failed"
python3 - "$WORK/lines" <<'PY'
import sys
open(sys.argv[1], "w").write("<13>Dec  6 10:00:01 web1 app: alert 41 by %s\n" % ("admintes" * 2048))
PY
send_tcp_file "$(input_port in)" "$WORK/lines"
wait_grep "$WORK/delivered" '^a-41$' || fail "the alert the silence could not decide on was not delivered"
[ "$(metric corral_regex_limit_hits_total)" -ge 81 ] ||
    fail "$(metric corral_regex_limit_hits_total) limit hits counted, want 81 or more"
[ "$(metric corral_alerts_silenced_total)" -eq 0 ] || fail "the alert was silenced"
# the silence still works on an ordinary name
printf '<13>Dec  6 10:00:02 web1 app: alert 42 by xadminxtestx\n' > "$WORK/lines"
send_tcp_file "$(input_port in)" "$WORK/lines"
wait_metric corral_alerts_silenced_total -eq 1 || fail "an ordinary name was not silenced"
"$CORRAL" alerts -s "$CONTROL" user=xadminxtestx | grep -q "silenced.*$id" ||
    fail "alert 42 not shown silenced: $("$CORRAL" alerts -s "$CONTROL")"
corrald_alive
stop_corrald
echo "ok: regex filters need the token; limit hits counted and taken as no match"
