#!/bin/sh
# perms_control_group: <control group mode> opens the control socket to an
# operators' group, so that its members run `corral silence add` without
# root.  corrald runs as the packaged unit starts it (setpriv: the service
# user daemon with CAP_SETUID, CAP_SETGID and CAP_NET_BIND_SERVICE; the
# engine process, which creates the socket, becomes nobody), and under the
# unit's system call filter when it can be built (it refuses chown: the
# socket is created with its group).  The operators' group is the system
# group operator; the operator and the outsider are the user games, with
# and without it (setpriv --groups).
#
#   1. <control group="operator">: the socket is nobody:operator 0660
#      (before: 0600, nobody's alone); the member's `corral silence add`
#      succeeds and the silence is listed; the outsider's fails (exit 1)
#      with a hint that names the socket's owner, group and mode and says
#      to add games to group operator (before: "run as corrald's user or
#      root", and root was the only way).
#   2. Without group=: the socket is nobody's, 0600; the hint says it is its
#      owner's only: run as nobody or root, or <control group=...>.
#   3. corrald -t refuses an unknown group and a mode other than 0600 or
#      0660, with the file:line.
#
# Needs root (to start corrald as another user); skipped (77) otherwise.
. "$(dirname "$0")/corrald_lib.sh"
need setpriv
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to start corrald as a service user"; exit 77; }
for u in nobody daemon games; do
    id "$u" > /dev/null 2>&1 || { echo "skipped: no user $u"; exit 77; }
done
ops=operator
ops_gid=$(getent group "$ops" | cut -d: -f3)
[ -n "$ops_gid" ] || { echo "skipped: no group $ops"; exit 77; }
id -nG nobody | tr ' ' '\n' | grep -qx "$ops" && { echo "skipped: nobody is in $ops"; exit 77; }
id -nG games | tr ' ' '\n' | grep -qx "$ops" && { echo "skipped: games is in $ops"; exit 77; }
group=$(id -gn daemon)
caps=-all,+setuid,+setgid,+net_bind_service
PROD=$CORRALD

chmod 755 "$WORK"
mkdir -p "$WORK/state" "$WORK/run"
chown daemon:"$group" "$WORK/state" "$WORK/run"
chmod 0770 "$WORK/state"
chmod 0775 "$WORK/run" # as the unit's RuntimeDirectoryMode=
CONTROL=$WORK/run/control.sock

# config FILE CONTROL-ATTRIBUTES
config() {
    cat > "$1" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <daemon user="nobody" group="$group"/>
  <state file="$WORK/state/state"/>
  <control socket="$CONTROL" $2/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
</corrald>
XML
    chmod 644 "$1"
}
# The unit's system call filter too, as tests/package/deb.sh applies it
# (unit_sandbox: chown is not in it), where it can be built; not with a
# sanitizer, whose runtime makes calls the unit never sees.
sandbox=
if command -v cc > /dev/null && command -v systemd-analyze > /dev/null &&
    ! ldd "$PROD" 2>/dev/null | grep -q 'libasan\|libtsan' &&
    cc -O2 -o "$WORK/unit_sandbox" "$top_srcdir/tests/package/unit_sandbox.c" -lseccomp 2> /dev/null; then
    # shellcheck disable=SC2046 # one argument per directive
    python3 "$top_srcdir/tests/package/syscall_set.py" \
        $(sed -n 's/^SystemCallFilter=//p' "$top_srcdir/etc/corrald.service") > "$WORK/allow" &&
        sandbox="$WORK/unit_sandbox -a $WORK/allow --"
fi
if [ -n "$sandbox" ]; then
    chmod 755 "$WORK/unit_sandbox"
    chmod 644 "$WORK/allow"
    echo "$TEST: under the unit's system call filter ($(grep -c . "$WORK/allow") calls)"
else
    echo "$TEST: without the unit's system call filter (no cc, libseccomp or systemd-analyze)"
fi
cat > "$WORK/as-service" <<SH
#!/bin/sh
exec setpriv --reuid=daemon --regid=$group --init-groups --no-new-privs \
    --inh-caps=$caps --ambient-caps=$caps --bounding-set=$caps $sandbox "$PROD" "\$@"
SH
chmod 755 "$WORK/as-service"
CORRALD=$WORK/as-service
# as_games [--groups GID] COMMAND...: as the user games, in its own group, and GID when given
as_games() {
    if [ "$1" = --groups ]; then
        g=$2
        shift 2
        setpriv --reuid=games --regid="$(id -g games)" --groups="$g" "$@"
    else
        setpriv --reuid=games --regid="$(id -g games)" --clear-groups "$@"
    fi
}

# ---- 1. the operators' group
config "$WORK/ops.conf" "group=\"$ops\""
"$WORK/as-service" -t -f "$WORK/ops.conf" --schema "$SCHEMA" > "$WORK/check.out" 2>&1 ||
    fail "-t refused group=$ops: $(cat "$WORK/check.out")"
start_corrald corrald "$WORK/ops.conf"
grep -q "privilege separation: engine process [0-9]* as user nobody" "$CORRALD_LOG" ||
    fail "corrald did not split as the unit's does"
has_matching "$CORRALD_LOG" "control socket" && fail "control socket trouble: $(grep 'control socket' "$CORRALD_LOG")"
[ "$(stat -c '%U:%G %a %F' "$CONTROL")" = "nobody:$ops 660 socket" ] ||
    fail "the socket is $(stat -c '%U:%G %a %F' "$CONTROL"), not nobody:$ops 660"
id=$(as_games --groups "$ops_gid" "$CORRAL" silence -s "$CONTROL" add HOST=web1 --duration 1h \
    --comment "maintenance" --author games 2> "$WORK/member.err") ||
    fail "a member of $ops could not add a silence: $(cat "$WORK/member.err")"
"$CORRAL" silence -s "$CONTROL" list | grep "$id" | grep -q 'HOST="web1"' ||
    fail "the member's silence $id is not listed"
st=0
as_games "$CORRAL" silence -s "$CONTROL" add HOST=web2 --duration 1h > /dev/null 2> "$WORK/outsider.err" || st=$?
[ $st -eq 1 ] || fail "the outsider's silence add exited $st: $(cat "$WORK/outsider.err")"
for expect in "$CONTROL: Permission denied" \
    "$CONTROL is nobody:$ops mode 0660; connecting needs write permission on it" \
    "add games to group $ops (adduser games $ops, then log in again), or run as nobody or root"; do
    grep -qF "$expect" "$WORK/outsider.err" || fail "no \"$expect\" in: $(cat "$WORK/outsider.err")"
done
"$CORRAL" silence -s "$CONTROL" list | grep -q 'HOST="web2"' && fail "the outsider's silence was added"
echo "$TEST: outsider: $(cat "$WORK/outsider.err")"
stop_corrald

# ---- 2. owner-only
config "$WORK/owner.conf" ""
start_corrald corrald "$WORK/owner.conf"
[ "$(stat -c '%U %a' "$CONTROL")" = "nobody 600" ] ||
    fail "without group= the socket is $(stat -c '%U:%G %a' "$CONTROL"), not nobody's 0600"
st=0
as_games --groups "$ops_gid" "$CORRAL" silence -s "$CONTROL" list > /dev/null 2> "$WORK/owner.err" || st=$?
[ $st -eq 1 ] || fail "games on an owner-only socket: exit $st: $(cat "$WORK/owner.err")"
grep -qF "it is its owner's only: run as nobody or root, or open it to an operators' group (<control group=\"corral-ops\"/>, corrald.conf(5)) and add games to it" \
    "$WORK/owner.err" || fail "owner-only hint: $(cat "$WORK/owner.err")"
stop_corrald

# ---- 3. what -t refuses
config "$WORK/bad-group.conf" 'group="no-such-group-corral"'
"$WORK/as-service" -t -f "$WORK/bad-group.conf" --schema "$SCHEMA" > "$WORK/check.out" 2>&1 &&
    fail "-t passed an unknown group"
grep -qF "$WORK/bad-group.conf:5: <control group=\"no-such-group-corral\">: unknown group" "$WORK/check.out" ||
    fail "unknown group: $(cat "$WORK/check.out")"
config "$WORK/bad-mode.conf" "group=\"$ops\" mode=\"0666\""
"$WORK/as-service" -t -f "$WORK/bad-mode.conf" --schema "$SCHEMA" > "$WORK/check.out" 2>&1 &&
    fail "-t passed mode 0666"
grep -qF "$WORK/bad-mode.conf:5: bad mode \"0666\"" "$WORK/check.out" || fail "mode 0666: $(cat "$WORK/check.out")"
echo "$TEST: passed"
