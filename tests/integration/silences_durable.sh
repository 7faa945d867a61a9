#!/bin/sh
# Silence changes are on disk before they are acknowledged, against the
# real corrald:
#  1. A silence that matches every alert lacking its labels (HOST=~".*",
#     HOST!=web1, HOST="") is refused as Alertmanager refuses it (exit 2,
#     "at least one matcher must not match the empty string"); with one more
#     matcher that needs a value it is taken.
#  2. (root, the state on a small tmpfs) the disk is full: `silence add`
#     and `silence expire` exit 2 saying the file cannot be saved, the
#     silence is not listed and the expired one is still active, both
#     counted in corral_silences_save_errors_total; after a kill -9 the
#     restarted corrald has exactly the silences it acknowledged.  Once
#     there is room, adding works again.
. "$(dirname "$0")/corrald_lib.sh"
need python3

# config STATE_DIR
config() {
    cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/rules/sshd.xml"/>
  <state file="$1/state" interval="1h"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
</corrald>
XML
}
CONTROL=$WORK/control.sock
S="-s $CONTROL"

# ---- 1. silences that match everything
config "$WORK"
start_corrald first "$WORK/corrald.conf"
for m in 'HOST=~".*"' 'HOST!=web1' 'HOST=""' 'HOST!~"web.+"'; do
    "$CORRAL" silence $S add "$m" --duration 1h > "$WORK/out" 2> "$WORK/err" &&
        fail "silence $m accepted: $(cat "$WORK/out")"
    [ $? -eq 2 ] || fail "silence $m: not exit 2"
    grep -q "at least one matcher must not match the empty string" "$WORK/err" ||
        fail "silence $m: unclear message: $(cat "$WORK/err")"
done
"$CORRAL" silence $S add 'HOST=~".*"' 'PROGRAM!=cron' --duration 1h 2> "$WORK/err" && fail "two empty-matching matchers accepted"
[ "$("$CORRAL" silence $S list --expired --json)" = "[]" ] || fail "a refused silence was kept"
"$CORRAL" silence $S add 'HOST=~".*"' PROGRAM=sshd --duration 1h > /dev/null ||
    fail "a silence with a matcher that needs a value was refused"
stop_corrald
echo "ok: silences matching every alert refused"

# ---- 2. a full disk (root only)
MNT="$WORK/mnt"
mkdir -p "$MNT"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=256k tmpfs "$MNT" 2>/dev/null; then
    echo "ok (full-disk case skipped: cannot mount a tmpfs here)"
    exit 0
fi
trap 'umount "$MNT" 2>/dev/null; cleanup' EXIT HUP INT TERM
config "$MNT"
start_corrald second "$WORK/corrald.conf"
keep=$("$CORRAL" silence $S add HOST=web1 --duration 1h) || fail "first silence refused"
ending=$("$CORRAL" silence $S add HOST=web2 --duration 1h) || fail "second silence refused"
dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null
sync
"$CORRAL" silence $S add HOST=web3 --duration 1h > "$WORK/out" 2> "$WORK/err" &&
    fail "silence add acknowledged on a full disk: $(cat "$WORK/out")"
[ $? -eq 2 ] || fail "silence add on a full disk: not exit 2"
grep -q "cannot save the silences.*No space left on device.*not added" "$WORK/err" ||
    fail "silence add on a full disk: unclear message: $(cat "$WORK/err")"
"$CORRAL" silence $S expire "$ending" 2> "$WORK/err" && fail "silence expire acknowledged on a full disk"
[ $? -eq 2 ] || fail "silence expire on a full disk: not exit 2"
grep -q "cannot save the silences.*not expired" "$WORK/err" ||
    fail "silence expire on a full disk: unclear message: $(cat "$WORK/err")"
"$CORRAL" silence $S list > "$WORK/list"
grep -q web3 "$WORK/list" && fail "the silence not saved is listed"
grep -q "$ending" "$WORK/list" || fail "the silence whose expiry was not saved is not active"
[ "$(metric corral_silences_save_errors_total)" -eq 2 ] ||
    fail "$(metric corral_silences_save_errors_total) save errors counted, want 2"
kill_corrald
rm -f "$MNT/filler"
start_corrald third "$WORK/corrald.conf"
"$CORRAL" silence $S list --json > "$WORK/list.json"
python3 - "$WORK/list.json" "$keep" "$ending" <<'PY' || fail "after kill -9: $(cat "$WORK/list.json")"
import json, sys
got = {s["id"]: s for s in json.load(open(sys.argv[1]))}
assert set(got) == {sys.argv[2], sys.argv[3]}, got
assert all(s["status"]["state"] == "active" for s in got.values()), got
PY
"$CORRAL" silence $S add HOST=web3 --duration 1h > /dev/null || fail "silence add refused with room again"
"$CORRAL" silence $S expire "$ending" || fail "silence expire refused with room again"
stop_corrald
echo "ok: on a full disk silence add and expire fail, change nothing, and a kill -9 loses nothing"
