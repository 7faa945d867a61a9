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

. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/state" "$WORK/pos" "$WORK/logs"
APP=$WORK/logs/app.log
START=$WORK/logs/start.log

# lines CONN FROM TO: syslog-file lines (no PRI, as in /var/log) seq FROM..TO
lines() {
    s=$2
    while [ "$s" -le "$3" ]; do
        printf 'Jan  1 00:00:00 filehost inputtest: conn=%d seq=%d file line\n' "$1" "$s"
        s=$((s + 1))
    done
}

# marker FILE N: appends marker line N (conn=98) to FILE and waits until it
# is out: a file is read in order, so everything before it is out too
marker() {
    printf 'Jan  1 00:00:00 filehost inputtest: conn=98 seq=%d marker\n' "$2" >> "$1"
    wait_until check_has "$OUT" "^conn=98 seq=$2 " || fail "marker $2 in $1 not read"
}

# pool_read: bytes read by corrald's libuv worker threads, where its file reads run
pool_read() {
    for t in /proc/"$CORRALD_PID"/task/*; do
        [ "${t##*/}" = "$CORRALD_PID" ] || awk '/^rchar:/ {print $2}' "$t/io"
    done | awk '{n += $1} END {print n + 0}'
}
read_at_least() { [ "$(pool_read)" -ge "$1" ]; }

lines 99 0 9 > "$APP"   # before corrald: not to be read (from the end)
lines 2 0 4 > "$START"  # read from the start
inputs_config "$WORK/corrald.conf" 'max-message-size="1k"' "
    <file path=\"$APP\" name=\"app\"/>
    <file path=\"$START\" from=\"start\" name=\"start\" position-file=\"$WORK/pos/start.pos\"/>" \
    "<state file=\"$WORK/state/corral.state\"/>"
start_corrald corrald "$WORK/corrald.conf"
wait_lines "$OUT" 5 || fail "from=\"start\" file not read"

# appends, and a line in two pieces: the second written once corrald has read the first
lines 1 0 9 >> "$APP"
wait_until check_has "$OUT" '^conn=1 seq=9 ' || fail "appended lines"
piece='Jan  1 00:00:00 filehost inputtest: conn=1 seq=10 in two '
before=$(pool_read)
printf '%s' "$piece" >> "$APP"
wait_until read_at_least $((before + ${#piece})) || fail "the first piece of a line not read"
printf 'pieces\n' >> "$APP"
wait_lines "$OUT" 16 || fail "appended lines"
[ "$(check field "$OUT" '^conn=1 seq=10 ' MESSAGE)" = "conn=1 seq=10 in two pieces" ] ||
    fail "line written in two pieces: $(check field "$OUT" '^conn=1 seq=10 ' MESSAGE)"

# rotation: rename, the writer appends to the old file a little longer (read
# while no new file is there), then a new file
mv "$APP" "$APP.1"
lines 1 11 12 >> "$APP.1"
wait_until check_has "$OUT" '^conn=1 seq=12 ' || fail "lines appended to the renamed file"
lines 1 13 14 >> "$APP.1"
lines 1 15 19 > "$APP"
wait_lines "$OUT" 25 || fail "lines around the rotation"
lines 1 20 24 >> "$APP"
wait_lines "$OUT" 30 || fail "lines after the rotation"

# truncation (copytruncate): start again from the start
: > "$APP"
wait_log 'app.log was truncated' || fail "truncation not noticed"
lines 1 25 26 >> "$APP"
wait_lines "$OUT" 32 || fail "lines after the truncation"

# restart: lines written while corrald is stopped arrive once, after the others
stop_corrald
app_pos=$WORK/state/$(printf '%s' "$APP" | sed 's,%,%25,g; s,/,%2F,g').pos
[ -s "$app_pos" ] || fail "no position file $app_pos beside the state file: $(ls "$WORK/state")"
[ -s "$WORK/pos/start.pos" ] || fail "no position file $WORK/pos/start.pos (position-file)"
[ ! -e "$APP.corral-pos" ] && [ ! -e "$START.corral-pos" ] || fail "a position file beside a followed file"
lines 1 27 29 >> "$APP"
start_corrald corrald2 "$WORK/corrald.conf"
lines 1 30 31 >> "$APP"
wait_lines "$OUT" 37 || fail "lines across the restart"
marker "$APP" 0
marker "$START" 1
check seq "$OUT" --conns 1-1 --per 32 --host filehost || fail "the followed file"
check seq "$OUT" --conns 2-2 --per 5 || fail "the from=start file (read once, also across the restart)"
[ "$(check count "$OUT" '^conn=99 ')" -eq 0 ] || fail "lines from before the start were read"

# rotated while stopped: the new file is read from its start
stop_corrald
mv "$APP" "$APP.2"
lines 3 0 2 > "$APP"
start_corrald corrald3 "$WORK/corrald.conf"
wait_lines "$OUT" 42 || fail "file rotated while stopped"

# deleted, then created again
rm "$APP"
wait_log 'app.log was deleted' || fail "deletion not noticed"
lines 3 3 4 > "$APP"
wait_lines "$OUT" 44 || fail "file created again"
marker "$APP" 2
marker "$START" 3
check seq "$OUT" --conns 3-3 --per 5 || fail "rotated while stopped, deleted, created again"
[ "$(metric corral_input_errors_total input=app)" -eq 0 ] || fail "errors counted"
stop_corrald
echo "$TEST: ok ($(check lines "$OUT") messages)"
