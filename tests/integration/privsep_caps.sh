#!/bin/sh
# Privilege separation as the packaged systemd unit starts corrald: not as
# root, but as a service user holding CAP_SETUID, CAP_SETGID and
# CAP_NET_BIND_SERVICE (AmbientCapabilities=), here user daemon under
# setpriv, with <daemon user="nobody" group=DAEMON'S GROUP>.
#  1. corrald splits (before: it could not, not being root): the executor
#     process stays daemon with no capability left; the engine runs as nobody with no capability left,
#     NoNewPrivs 1 and Seccomp 2, and cannot regain the user it was.
#  2. The SNMP community file (daemon's, 0600) is out of the engine's reach
#     (Permission denied as nobody) and a trap still reaches snmptrapd: the
#     executor read it.
#  3. The script runs as daemon with no capability (CapEff 0, CapAmb 0).
#  4. SIGHUP to the executor process reaches the engine (it runs as another
#     user, which it has no right to signal: the g frame) and reloads, adding an exec executor: the executor
#     process, not root, opens it, and its script gets the next alert.
#  5. The engine's files are its user's from the start: the event file made
#     again after a rotation (SIGUSR2) and the state file; `corrald -t` as
#     the service user (the unit's ExecStartPre=) checks them as the engine
#     and passes, and a restart opens them and reads the state back (before:
#     the restart, opening them as the service user, failed).
# Needs root (to start corrald as another user); skipped (77) otherwise.
. "$(dirname "$0")/corrald_lib.sh"
need python3 snmptrapd setpriv
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to start corrald as a service user"; exit 77; }
id nobody > /dev/null 2>&1 && id daemon > /dev/null 2>&1 ||
    { echo "skipped: no users nobody and daemon"; exit 77; }
group=$(id -gn daemon)
caps=-all,+setuid,+setgid,+net_bind_service
PROD=$CORRALD

chmod 755 "$WORK"
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/persist" "$WORK/nomibs"
# as the unit's StateDirectoryMode=0770: the executor's user owns it, the group (the engine's) writes
chown daemon:"$group" "$WORK/state" "$WORK/spool"
chmod 0770 "$WORK/state"
chmod 0700 "$WORK/spool"
umask 077
printf 'public\n' > "$WORK/community" # the secret: the executor's user's, 0600
chown daemon "$WORK/community"
umask 022

start_snmptrapd

# the script records who ran it and with which capabilities
cat > "$WORK/receiver.sh" <<SH
#!/bin/sh
echo "\$CORRAL_ALERT_ID uid=\$(id -u) \$(awk '/^Cap(Eff|Amb):/ {printf "%s%s ", \$1, \$2}' /proc/self/status)" >> "$WORK/delivered"
SH
chmod 755 "$WORK/receiver.sh"
: > "$WORK/delivered"
chmod 666 "$WORK/delivered"
CONTROL=$WORK/state/control.sock # a directory the service user may write
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <daemon user="nobody" group="$group"/>
  <state file="$WORK/state/state"/>
  <control socket="$CONTROL"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/state/events.json" select="all"/></outputs>
  <absence after="1s"/>
  <executors spool="$WORK/spool">
    <snmp name="nms" target="udp:127.0.0.1:$TRAPD_PORT"
          community-file="$WORK/community" severity="major"/>
    <exec name="script" program="$WORK/receiver.sh"/>
  </executors>
  <routes><route tag="corral.alert" to="nms,script"/></routes>
</corrald>
XML
chmod 644 "$WORK/corrald.conf"

# corrald as the unit starts it: the service user with its capabilities, no_new_privs
cat > "$WORK/as-service" <<SH
#!/bin/sh
exec setpriv --reuid=daemon --regid=$group --init-groups --no-new-privs \
    --inh-caps=$caps --ambient-caps=$caps --bounding-set=$caps "$PROD" "\$@"
SH
chmod 755 "$WORK/as-service"
CORRALD=$WORK/as-service

status_field() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
now() { date '+%b %e %H:%M:%S'; }

# ---- 1. two processes; the capabilities each keeps
start_corrald corrald "$WORK/corrald.conf"
engine=$(sed -n 's/.*privilege separation: engine process \([0-9]*\) .*/\1/p' "$CORRALD_LOG" | tail -n 1)
[ -n "$engine" ] || fail "no engine process: started with CAP_SETUID and another user, corrald did not split"
uid=$(id -u nobody)
daemon_uid=$(id -u daemon)
[ "$(awk '/^Uid:/ {print $2 $3 $4 $5}' "/proc/$engine/status")" = "$uid$uid$uid$uid" ] ||
    fail "engine Uid: $(grep ^Uid: "/proc/$engine/status")"
[ "$(awk '/^Gid:/ {print $2}' "/proc/$engine/status")" = "$(getent group "$group" | cut -d: -f3)" ] ||
    fail "engine Gid: $(grep ^Gid: "/proc/$engine/status")"
# every thread's (capabilities are per thread; the workers run before the change of user)
for t in /proc/"$engine"/task/*; do
    for f in CapPrm CapEff CapAmb; do
        v=$(awk -v f="$f:" '$1 == f {print $2}' "$t/status")
        [ "$v" = 0000000000000000 ] || fail "engine thread ${t##*/} kept capabilities: $f $v"
    done
done
[ "$(status_field "$engine" CapInh)" = 0000000000000000 ] ||
    fail "the engine kept inheritable capabilities: $(status_field "$engine" CapInh)"
[ "$(status_field "$engine" NoNewPrivs)" = 1 ] || fail "engine NoNewPrivs not 1"
[ "$(status_field "$engine" Seccomp)" = 2 ] || fail "engine Seccomp not 2 (filter)"
[ "$(awk '/^Uid:/ {print $2}' "/proc/$CORRALD_PID/status")" = "$daemon_uid" ] ||
    fail "the executor process is not the service user"
for f in CapEff CapPrm CapInh CapAmb; do
    [ "$(status_field "$CORRALD_PID" $f)" = 0000000000000000 ] ||
        fail "the executor process kept capabilities: $f $(status_field "$CORRALD_PID" $f)"
done
echo "$TEST: engine $engine: $(grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' "/proc/$engine/status" | tr '\t\n' '  ')"
echo "$TEST: executor $CORRALD_PID: $(grep -E '^(Uid|CapEff|CapAmb):' "/proc/$CORRALD_PID/status" | tr '\t\n' '  ')"

# ---- 2. the secret is the executor's alone
if out=$(setpriv --reuid="$uid" --regid="$group" --clear-groups cat "$WORK/community" 2>&1); then
    fail "the engine's user can read the community file"
fi
case $out in *"Permission denied"*) ;; *) fail "not refused for want of permission: $out" ;; esac
send_udp "$(input_port udp)" "$(now) web1 app: hello"
wait_grep "$WORK/trapd.log" "BEGIN TRAP2, SNMP v2c, community public" || fail "snmptrapd did not get the trap"

# ---- 3. the script: the executor's user, no capability
wait_grep "$WORK/delivered" '^corral.absence/web1 ' || fail "the script did not get the alert"
grep -q "^corral.absence/web1 uid=$daemon_uid CapEff:0000000000000000 CapAmb:0000000000000000 \$" "$WORK/delivered" ||
    fail "the script ran as: $(cat "$WORK/delivered")"

# ---- 4. signals cross users; an executor added by the reload
cat > "$WORK/second.sh" <<SH
#!/bin/sh
echo "\$CORRAL_ALERT_ID uid=\$(id -u)" >> "$WORK/delivered2"
SH
chmod 755 "$WORK/second.sh"
: > "$WORK/delivered2"
chmod 666 "$WORK/delivered2"
sed -i "s|<exec name=\"script\" program=\"$WORK/receiver.sh\"/>|&<exec name=\"second\" program=\"$WORK/second.sh\"/>|; s|to=\"nms,script\"|to=\"nms,script,second\"|" \
    "$WORK/corrald.conf"
grep -q 'name="second"' "$WORK/corrald.conf" || fail "the test did not add the executor to its configuration"
kill -HUP "$CORRALD_PID"
wait_log "reload: rules: 0 added" || fail "SIGHUP to the executor process did not reload the engine"
wait_log 'privsep: the executor process reloaded its executors (3)' ||
    fail "the executor process (not root) did not reload its executors"
send_udp "$(input_port udp)" "$(now) web5 app: hello"
wait_grep "$WORK/delivered2" "^corral.absence/web5 uid=$daemon_uid\$" || fail "the added executor's script did not get web5"

# ---- 5. the engine's files: made, checked and opened again as its user
mv "$WORK/state/events.json" "$WORK/state/events.json.1"
kill -USR2 "$CORRALD_PID"
wait_log "reopened $WORK/state/events.json" || fail "the event file was not made again after SIGUSR2"
send_udp "$(input_port udp)" "$(now) web2 app: hello"
wait_grep "$WORK/state/events.json" "web2" || fail "no event in the new event file"
# an open context, for the state file to carry over
send_udp "$(input_port udp)" "$(now) web3 sshd[42]: Accepted password for alice from 192.0.2.1 port 5000 ssh2"
wait_grep "$WORK/state/events.json" "web3" || fail "no event for web3"
stop_corrald
for f in state events.json; do
    [ "$(stat -c %U "$WORK/state/$f")" = nobody ] || fail "$f is not the engine's: $(ls -l "$WORK/state")"
done
"$WORK/as-service" -t -f "$WORK/corrald.conf" --schema "$SCHEMA" > "$WORK/check.out" 2>&1 ||
    fail "corrald -t as the service user: $(cat "$WORK/check.out")"
start_corrald corrald "$WORK/corrald.conf"
has_matching "$CORRALD_LOG" "state $WORK/state/state: [1-9][0-9]* open contexts restored" ||
    fail "the restart did not restore the engine's state: $(grep "state $WORK" "$CORRALD_LOG")"
send_udp "$(input_port udp)" "$(now) web4 app: hello"
wait_grep "$WORK/state/events.json" "web4" || fail "the restarted engine does not write its event file"
stop_corrald
has_matching "$CORRALD_LOG" "Operation not permitted" && fail "a call was refused: $(grep 'not permitted' "$CORRALD_LOG")"
echo "$TEST: passed"
