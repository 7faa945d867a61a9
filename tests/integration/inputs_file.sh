#!/bin/sh
# inputs_file: following log files like tail -F.
#
#   A file that exists at start is read from its end (the default) or from
#   its start (from="start"); appended lines arrive; a line written in two
#   pieces arrives once, whole; rotation by rename and re-creation (with the
#   writer still appending to the renamed file for a moment) loses nothing
#   and keeps the order; truncation starts over from the start; a restart
#   resumes where the last run stopped (positions beside the state file by
#   default, or in the input's position-file), reading
#   the lines written meanwhile exactly once; a file rotated while corrald
#   was stopped is read from its start; a file deleted and created again is
#   picked up.

. "$(dirname "$0")/lib_inputs.sh"

mkdir -p "$tmp/state" "$tmp/pos" "$tmp/logs"
APP=$tmp/logs/app.log
START=$tmp/logs/start.log

# lines CONN FROM TO: syslog-file lines (no PRI, as in /var/log) seq FROM..TO
lines() {
    s=$2
    while [ "$s" -le "$3" ]; do
        printf 'Jan  1 00:00:00 filehost inputtest: conn=%d seq=%d file line\n' "$1" "$s"
        s=$((s + 1))
    done
}

lines 99 0 9 > "$APP"   # before corrald: not to be read (from the end)
lines 2 0 4 > "$START"  # read from the start
write_config "$tmp/corrald.conf" 'max-message-size="1k"' "
    <file path=\"$APP\" name=\"app\"/>
    <file path=\"$START\" from=\"start\" name=\"start\" position-file=\"$tmp/pos/start.pos\"/>" \
    "<state file=\"$tmp/state/corral.state\"/>"
start_corrald "$tmp/corrald.conf"
wait_lines 5 || fail "from=\"start\" file not read"

# appends, and a line in two pieces
lines 1 0 9 >> "$APP"
printf 'Jan  1 00:00:00 filehost inputtest: conn=1 seq=10 in two ' >> "$APP"
sleep 0.5
printf 'pieces\n' >> "$APP"
wait_lines 16 || fail "appended lines"
[ "$(check field "$OUT" '^conn=1 seq=10 ' MESSAGE)" = "conn=1 seq=10 in two pieces" ] ||
    fail "line written in two pieces: $(check field "$OUT" '^conn=1 seq=10 ' MESSAGE)"

# rotation: rename, the writer appends to the old file a little longer, then a new file
mv "$APP" "$APP.1"
lines 1 11 12 >> "$APP.1"
sleep 0.3
lines 1 13 14 >> "$APP.1"
lines 1 15 19 > "$APP"
wait_lines 25 || fail "lines around the rotation"
lines 1 20 24 >> "$APP"
wait_lines 30 || fail "lines after the rotation"

# truncation (copytruncate): start again from the start
: > "$APP"
sleep 1.5
lines 1 25 26 >> "$APP"
wait_lines 32 || fail "lines after the truncation"

# restart: lines written while corrald is stopped arrive once, after the others
stop_corrald
app_pos=$tmp/state/$(printf '%s' "$APP" | sed 's,%,%25,g; s,/,%2F,g').pos
[ -s "$app_pos" ] || fail "no position file $app_pos beside the state file: $(ls "$tmp/state")"
[ -s "$tmp/pos/start.pos" ] || fail "no position file $tmp/pos/start.pos (position-file)"
[ ! -e "$APP.corral-pos" ] && [ ! -e "$START.corral-pos" ] || fail "a position file beside a followed file"
lines 1 27 29 >> "$APP"
start_corrald "$tmp/corrald.conf"
lines 1 30 31 >> "$APP"
wait_lines 37 || fail "lines across the restart"
settle
check seq "$OUT" --conns 1-1 --per 32 --host filehost || fail "the followed file"
check seq "$OUT" --conns 2-2 --per 5 || fail "the from=start file (read once, also across the restart)"
[ "$(check count "$OUT" '^conn=99 ')" -eq 0 ] || fail "lines from before the start were read"

# rotated while stopped: the new file is read from its start
stop_corrald
mv "$APP" "$APP.2"
lines 3 0 2 > "$APP"
start_corrald "$tmp/corrald.conf"
wait_lines 40 || fail "file rotated while stopped"

# deleted, then created again
rm "$APP"
sleep 1.5
lines 3 3 4 > "$APP"
wait_lines 42 || fail "file created again"
settle
check seq "$OUT" --conns 3-3 --per 5 || fail "rotated while stopped, deleted, created again"
[ "$(metric corral_input_errors_total app)" -eq 0 ] || fail "errors counted"
stop_corrald
echo "$TEST: ok ($(check lines "$OUT") messages)"
