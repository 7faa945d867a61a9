#!/bin/sh
# Absence tracking against made-up hosts and reloads: with
# max-absence-sources=3, three hosts seen twice and two more give three
# sources and two untracked messages, counted and logged (a host seen once
# would have made room: see hostile_absence_spoof.sh); a reload keeps the sources (an absence due
# soon after it is still reported); sources silent for forget= are
# forgotten, which makes room for a new host.
. "$(dirname "$0")/corrald_lib.sh"
need python3

CONTROL=$WORK/control.sock
# conf AFTER FORGET
conf() {
    cat > "$WORK/corrald.conf.tmp" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <control socket="$CONTROL"/>
  <limits max-absence-sources="3"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
  <absence after="$1" forget="$2"/>
</corrald>
XML
    mv "$WORK/corrald.conf.tmp" "$WORK/corrald.conf"
}
reload() { "$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1 || fail "reload failed: $(cat "$WORK/reload.out")"; }
now() { date '+%b %e %H:%M:%S'; }

conf 1h 2h
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port udp)
send_udp "$port" "$(now) h1 app: one" "$(now) h2 app: two" "$(now) h3 app: three" \
    "$(now) h1 app: one" "$(now) h2 app: two" "$(now) h3 app: three" \
    "$(now) h4 app: four" "$(now) h5 app: five"
wait_metric corral_absence_untracked_total -eq 2 ||
    fail "untracked: $(metric corral_absence_untracked_total), sources $(metric corral_absence_sources)"
[ "$(metric corral_absence_sources)" = 3 ] || fail "sources: $(metric corral_absence_sources)"
wait_log 'sources not tracked' || fail "untracked sources not logged"

# a reload that changes nothing of them keeps the sources
reload
[ "$(metric corral_absence_sources)" = 3 ] || fail "sources after a reload: $(metric corral_absence_sources)"
[ "$(metric corral_absence_untracked_total)" = 2 ] || fail "untracked count lost at reload"

# after= now 1 s: the kept sources are overdue; reported, then forgotten 2 s after last seen
conf 1s 2s
reload
wait_grep "$WORK/out.json" 'has been silent for' 3 || fail "absences due after the reload not reported"
for h in h1 h2 h3; do
    grep -q "\"$h has been silent for" "$WORK/out.json" || fail "$h absence not reported"
done
if grep -q '"h[45] has been' "$WORK/out.json"; then fail "an untracked host was reported"; fi
wait_metric corral_absence_forgotten_total -eq 3 || fail "forgotten: $(metric corral_absence_forgotten_total)"
[ "$(metric corral_absence_sources)" = 0 ] || fail "sources after forgetting: $(metric corral_absence_sources)"
[ "$(metric corral_absence_down)" = 0 ] || fail "silent after forgetting: $(metric corral_absence_down)"

# room again: a new host is tracked, and reported
send_udp "$port" "$(now) h6 app: six"
wait_grep "$WORK/out.json" '"h6 has been silent for' || fail "new host h6 not tracked"
[ "$(metric corral_absence_untracked_total)" = 2 ] || fail "untracked: $(metric corral_absence_untracked_total)"
wait_metric corral_absence_forgotten_total -eq 4 || fail "h6 not forgotten"
# reported once each (h6 may be forgotten by now, not reported again)
[ "$(grep -c 'has been silent for' "$WORK/out.json")" = 4 ] || fail "absences reported: $(grep 'has been silent' "$WORK/out.json")"
corrald_alive
stop_corrald "$CORRALD_PID"
echo "ok: 3 of 5 hosts tracked, 2 untracked counted, sources kept across reloads, forgotten, room again"
