#!/bin/sh
# Per-executor limits that keep a flood of events from flooding a receiver:
# dedupe (an alert whose key was seen within the window is dropped) and rate
# (a token bucket: N alerts, then one per SECONDS/N).  Checked with real
# scripts that record what they get, and with the counters of `corral ctl
# stats`.  The windows are an hour, longer than any run: what goes through
# does not depend on how fast the machine is.  A key going through again
# after its window is a unit test on a clock the test moves (test_queue,
# test_dedupe_window).
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cat > "$WORK/rules/alerts.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-03">
  <ruleset name="app" id="limits-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="limits.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@ key @STRING:k@</pattern></patterns>
      <actions><action route="deduped,limited"><message>
        <values>
          <value name="MESSAGE">alert ${n}@1</value>
          <value name="key">${k}@1</value>
        </values>
      </message></action></actions>
    </rule>
    <rule provider="test" id="limits.flood" class="violation">
      <patterns><pattern>flood @NUMBER:n@</pattern></patterns>
      <actions><action route="flood"><message>
        <values><value name="MESSAGE">flood ${n}@1</value></values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
for name in deduped limited flood; do
    cat > "$WORK/$name.sh" <<SH
#!/bin/sh
echo "\$CORRAL_MESSAGE \$CORRAL_KEY" >> "$WORK/$name.out"
SH
    chmod +x "$WORK/$name.sh"
done
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <executors>
    <exec name="deduped" program="$WORK/deduped.sh" dedupe="1h" dedupe-key="\${key}"/>
    <exec name="limited" program="$WORK/limited.sh" rate="3/3600"/>
    <exec name="flood" program="$WORK/flood.sh" dedupe="1h" rate="1/3600"/>
  </executors>
</corrald>
XML

CONTROL=$WORK/control.sock
stat() { metric "$1" "executor=$2"; }
lines() { if [ -f "$WORK/$1.out" ]; then sort "$WORK/$1.out" | tr '\n' ','; fi; }

start_corrald corrald "$WORK/corrald.conf"
send_udp "$(input_port udp)" \
    "<13>Dec  3 10:00:00 web1 app: alert 1 key k1" \
    "<13>Dec  3 10:00:00 web1 app: alert 2 key k2" \
    "<13>Dec  3 10:00:00 web1 app: alert 3 key k1" \
    "<13>Dec  3 10:00:00 web1 app: alert 4 key k3" \
    "<13>Dec  3 10:00:00 web1 app: alert 5 key k2" \
    "<13>Dec  3 10:00:00 web1 app: alert 6 key k1" \
    "<13>Dec  3 10:00:00 web1 app: alert 7 key k4" \
    "<13>Dec  3 10:00:00 web1 app: alert 8 key k1" \
    "<13>Dec  3 10:00:00 web1 app: alert 9 key k2" \
    "<13>Dec  3 10:00:00 web1 app: alert 10 key k5"
all_seen() { [ "$(stat corral_executor_submitted_total limited)" = 10 ]; }
wait_until all_seen || fail "not all 10 alerts reached the executors"
delivered() { [ "$(stat corral_executor_delivered_total "$1")" = "$2" ]; }
wait_until delivered deduped 5 || fail "deduped: $(lines deduped)"
wait_until delivered limited 3 || fail "limited: $(lines limited)"

# dedupe: the first alert of each key, and only that
[ "$(lines deduped)" = "alert 1 k1,alert 10 k5,alert 2 k2,alert 4 k3,alert 7 k4," ] ||
    fail "deduped executor ran for: $(lines deduped)"
[ "$(stat corral_executor_deduplicated_total deduped)" = 5 ] ||
    fail "deduplicated counter: $(stat corral_executor_deduplicated_total deduped)"
# rate 3/3600: the first three, the other seven dropped and counted
[ "$(lines limited)" = "alert 1 k1,alert 2 k2,alert 3 k1," ] || fail "limited executor ran for: $(lines limited)"
[ "$(stat corral_executor_rate_limited_total limited)" = 7 ] ||
    fail "rate-limited counter: $(stat corral_executor_rate_limited_total limited)"
[ "$(stat corral_executor_rate_limited_total deduped)" = 0 ] || fail "deduped executor rate-limited"

# more of a known key: counted as duplicates, never run (the window is an hour)
send_udp "$(input_port udp)" "<13>Dec  3 10:00:00 web1 app: alert 11 key k1" "<13>Dec  3 10:00:00 web1 app: alert 12 key k1"
twelve_seen() { [ "$(stat corral_executor_submitted_total deduped)" = 12 ]; }
wait_until twelve_seen || fail "alerts 11 and 12 did not reach the executors"
[ "$(stat corral_executor_deduplicated_total deduped)" = 7 ] ||
    fail "deduplicated counter: $(stat corral_executor_deduplicated_total deduped)"
[ "$(stat corral_executor_delivered_total deduped)" = 5 ] || fail "deduped: $(lines deduped)"
[ "$(grep -c ' k1$' "$WORK/deduped.out")" = 1 ] || fail "deduped executor let k1 through within its hour"

# a flood of distinct alerts: the dedupe memory stays bounded (the newest
# 65,536 keys kept, at most 98,304), the oldest keys forgotten early and counted
# (the flood executor's rate keeps its queue short: a full queue would make
# the TCP input wait for 100,000 deliveries, back-pressure)
i=0
while [ $i -lt 100000 ]; do
    echo "<13>Dec  3 10:00:00 web1 app: flood $i"
    i=$((i + 1))
done > "$WORK/flood.log.txt"
send_tcp_file "$(input_port tcp)" "$WORK/flood.log.txt"
flooded() { [ "$(stat corral_executor_submitted_total flood)" -eq 100000 ]; }
wait_until flooded || fail "flood: only $(stat corral_executor_submitted_total flood) of 100000 alerts submitted"
submitted=100000
forgotten=$(stat corral_executor_dedupe_forgotten_total flood)
[ "$forgotten" -gt 0 ] && [ "$forgotten" -le $((submitted - 65536)) ] ||
    fail "flood: $submitted distinct alerts, $forgotten dedupe keys forgotten"
grep -q "executor flood: more than 65536 distinct dedupe keys" "$WORK/corrald.log" ||
    fail "the early forgetting was not logged"
# every metric served is documented in corrald(8)
documented=0
for name in $("$CORRAL" ctl -s "$WORK/control.sock" stats | sed -n 's/^# HELP \([a-z_]*\) .*/\1/p'); do
    grep -q "^\.B $name\$" "$top_srcdir/doc/corrald.8" || fail "metric $name is not in doc/corrald.8"
    documented=$((documented + 1))
done
[ "$documented" -ge 30 ] || fail "only $documented metrics served"
stop_corrald "$CORRALD_PID"
echo "ok: dedupe by key within a window, rate 3/3600, counted; dedupe memory bounded"
