#!/bin/sh
# perms_reload_check: `corrald -t` refuses exactly what a reload refuses,
# for the files the engine process reads again on every reload.  corrald
# runs as the packaged unit starts it (setpriv: the service user daemon
# with CAP_SETUID, CAP_SETGID and CAP_NET_BIND_SERVICE, <daemon
# user="nobody" group=DAEMON'S GROUP>, so the executor process is daemon and
# the engine nobody, in daemon's group).  For each owner and mode of a file,
# `corrald -t` as the service user (the unit's ExecStartPre=) gives a
# verdict and `corral ctl reload` the real one; they must agree:
#
#   api-token-file  root:root 0600    refused, refused
#                   daemon:daemon 0600  refused, refused
#                   root:daemon 0640  passes, passes   (corrald.conf(5)'s recipe)
#   rules file      daemon:daemon 0600  refused, refused (before: -t passed,
#                                       reading it as daemon, the reload failed)
#                   root:daemon 0640  passes, passes
#   corrald.conf    daemon:daemon 0600  refused, refused (before: -t passed)
#                   root:daemon 0640  passes, passes
#
# Needs root (to start corrald as another user); skipped (77) otherwise.
. "$(dirname "$0")/corrald_lib.sh"
need setpriv
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to start corrald as a service user"; exit 77; }
id nobody > /dev/null 2>&1 && id daemon > /dev/null 2>&1 ||
    { echo "skipped: no users nobody and daemon"; exit 77; }
group=$(id -gn daemon)
caps=-all,+setuid,+setgid,+net_bind_service
PROD=$CORRALD

chmod 755 "$WORK"
mkdir -p "$WORK/state"
# as the unit's StateDirectoryMode=0770: the executor's user owns it, the group (the engine's) writes
chown daemon:"$group" "$WORK/state"
chmod 0770 "$WORK/state"
printf 'abcdefghijklmnopqrstuvwxyz\n' > "$WORK/api-token"
cp "$top_srcdir/tests/integration/session_rules.xml" "$WORK/rules.xml"
CONTROL=$WORK/state/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules.xml"/>
  <daemon user="nobody" group="$group"/>
  <state file="$WORK/state/state"/>
  <control socket="$CONTROL"/>
  <stats listen="127.0.0.1:0" api-token-file="$WORK/api-token"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
</corrald>
XML
# what corrald.conf(5) gives: readable by the engine's group, not by others
for f in api-token rules.xml corrald.conf; do
    chown root:"$group" "$WORK/$f"
    chmod 0640 "$WORK/$f"
done

cat > "$WORK/as-service" <<SH
#!/bin/sh
exec setpriv --reuid=daemon --regid=$group --init-groups --no-new-privs \
    --inh-caps=$caps --ambient-caps=$caps --bounding-set=$caps "$PROD" "\$@"
SH
chmod 755 "$WORK/as-service"
CORRALD=$WORK/as-service
start_corrald corrald "$WORK/corrald.conf"
grep -q "privilege separation: engine process [0-9]* as user nobody" "$CORRALD_LOG" ||
    fail "corrald did not split as the unit's does"

# verdicts FILE OWNER MODE EXPECTED: -t's and the reload's, both EXPECTED (ok or refused)
verdicts() {
    chown "$2" "$WORK/$1"
    chmod "$3" "$WORK/$1"
    if "$WORK/as-service" -t -f "$WORK/corrald.conf" --schema "$SCHEMA" > "$WORK/check.out" 2>&1; then
        t=ok
    else
        t=refused
    fi
    if "$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1; then
        r=ok
    else
        r=refused
    fi
    echo "$TEST: $1 $2 $3: corrald -t $t, reload $r"
    [ "$t" = "$r" ] || fail "$1 $2 $3: corrald -t $t but the reload $r:
-t: $(cat "$WORK/check.out")
reload: $(cat "$WORK/reload.out")"
    [ "$r" = "$4" ] || fail "$1 $2 $3: the reload $r, expected $4: $(cat "$WORK/reload.out")"
    grep -q "FAILED\|failed" "$WORK/reload.out" && [ "$r" = ok ] && fail "a failed reload exits 0"
    # back to what works
    chown root:"$group" "$WORK/$1"
    chmod 0640 "$WORK/$1"
}

verdicts api-token root:root 0600 refused
grep -qF "$WORK/corrald.conf:6: api-token-file $WORK/api-token: Permission denied" "$WORK/check.out" ||
    fail "root:root 0600: -t does not say why: $(cat "$WORK/check.out")"
verdicts api-token daemon:"$group" 0600 refused
grep -qF "$WORK/corrald.conf:6: api-token-file $WORK/api-token: Permission denied" "$WORK/check.out" ||
    fail "daemon 0600: -t does not say why: $(cat "$WORK/check.out")"
grep -qF "(checked as user nobody, whom the engine process runs as)" "$WORK/check.out" ||
    fail "daemon 0600: -t does not say as whom it checked: $(cat "$WORK/check.out")"
verdicts api-token root:"$group" 0640 ok
verdicts rules.xml daemon:"$group" 0600 refused
grep -qF "$WORK/rules.xml" "$WORK/check.out" || fail "rules 0600: -t does not name the file: $(cat "$WORK/check.out")"
verdicts rules.xml root:"$group" 0640 ok
verdicts corrald.conf daemon:"$group" 0600 refused
verdicts corrald.conf root:"$group" 0640 ok
corrald_alive
stop_corrald
echo "$TEST: passed"
