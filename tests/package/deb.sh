#!/bin/sh
# The Debian package as an admin gets it: built from the committed
# tree with dpkg-buildpackage, checked by lintian, installed with apt-get over
# an older build (an upgrade), run as its systemd unit runs it, fed syslog
# with logger, its event file rotated by logrotate, then removed and purged
# with nothing of it left behind.  piuparts-style, on the machine itself: it
# needs root and a machine where corral is not installed (CI's container).
#
# corrald is started as the unit's ExecStart= line under the unit's user,
# capabilities, umask and directories (setpriv), so it splits as under
# systemd: the executor process stays corral, the engine process becomes
# corral-engine with no capability and its own filter; and under the unit's
# seccomp directives (SystemCallFilter=, RestrictAddressFamilies=,
# MemoryDenyWriteExecute=), which tests/package/unit_sandbox.c installs as
# systemd would: so a machine without systemd as PID 1 (CI's container)
# checks them too.  The unit's namespaces and read-only mounts cannot be
# applied without systemd: only the unit file is checked for them
# (systemd-analyze security --offline).  Under all of that, corrald binds
# port 514, saves its state, reopens its event file for logrotate, and
# delivers an alert through each executor: an exec script (append.sh), a
# trap to snmptrapd and mail to an SMTP server.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
unit=/lib/systemd/system/corrald.service

skip() { echo "SKIP: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (it installs and purges the package)"
for t in git dpkg-buildpackage lintian apt-get logger logrotate setpriv systemd-analyze; do
    command -v "$t" >/dev/null || skip "$t is missing (sh contrib/setup-debian.sh installs it)"
done
if dpkg-query -W -f '${Status}' corral 2>/dev/null | grep -q 'installed\|config-files' || [ -e /etc/corral ]; then
    skip "corral is already installed here; this test installs and purges it"
fi

work=$(mktemp -d /tmp/corral-deb.XXXXXX)
pid=""
installed=""
peers=""
cleanup() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; fi
    for p in $peers; do kill "$p" 2>/dev/null || true; done
    rm -f /etc/corral/package-test.conf /etc/corral/package-test.community /etc/corral/package-test.token
    # a failed run does not leave the package behind to skip the next one
    if [ -n "$installed" ]; then apt-get purge -y corral >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    for f in "$work"/corrald.log /var/log/corral/events.json*; do
        [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }
    done
    exit 1
}
# wait_until SECONDS COMMAND...: retries COMMAND every 0.1 s (no fixed sleeps)
wait_until() {
    limit=$1
    shift
    i=0
    while [ "$i" -lt $((limit * 10)) ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# what is on the machine, by name: compared before install and after purge
# (apt's and dpkg's own bookkeeping and logs aside)
snapshot() {
    find /etc /usr /lib /var /run /opt /srv -xdev \
        \( -path /var/lib/apt -o -path /var/lib/dpkg -o -path /var/cache -o -path /var/tmp \
        -o -path /var/log/apt -o -path /var/log/dpkg.log -o -path /var/log/alternatives.log \
        -o -path /run/user -o -path /etc/ld.so.cache \) -prune -o -print 2>/dev/null | sort
}

echo "=== build the package from a clean checkout (git archive HEAD)"
git -C "$src" archive --prefix=corral/ HEAD | tar -xf - -C "$work"
# the unit tests ran in the main suite: nocheck keeps this test short
(cd "$work/corral" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" dpkg-buildpackage -us -uc -b) \
    > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "dpkg-buildpackage"; }
new=$(ls "$work"/corral_*_*.deb)
changes=$(ls "$work"/corral_*.changes)
version=$(dpkg-deb -f "$new" Version)
echo "built $(basename "$new")"

echo "=== lintian"
# (lintian says on stderr that it would rather not run as root: CI is root)
rc=0
lintian --fail-on error,warning "$changes" > "$work/lintian" 2>&1 || rc=$?
grep -v "running with root privileges" "$work/lintian" || true
[ "$rc" = 0 ] || fail "lintian reports errors or warnings"
echo "lintian: no error, no warning"

# The previous build: the same package with a lower Debian revision.
# Repacked rather than rebuilt, which would double the time of this test;
# what an upgrade exercises (maintainer scripts, conffile, state) is the same.
mkdir "$work/old"
dpkg-deb -R "$new" "$work/old/root"
old_version="${version%-*}-0"
sed -i "s/^Version: .*/Version: $old_version/" "$work/old/root/DEBIAN/control"
dpkg-deb -b "$work/old/root" "$work/old/corral_${old_version}_$(dpkg-deb -f "$new" Architecture).deb" >/dev/null
old=$(ls "$work"/old/corral_*.deb)

snapshot > "$work/before"

echo "=== install $old_version"
installed=1
apt-get install -y "$old" > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "install $old_version"; }
getent passwd corral >/dev/null || fail "no user corral after install"
# the engine process's user: another uid, in corral's group
[ "$(id -gn corral-engine 2>/dev/null)" = corral ] || fail "no user corral-engine in group corral after install"
for d in /var/lib/corral:770 /var/log/corral:770 /run/corrald:775; do
    [ "$(stat -c %n:%U:%a "${d%:*}" 2>/dev/null)" = "${d%:*}:corral:${d#*:}" ] ||
        fail "${d%:*} missing or not corral's with mode ${d#*:}"
done
dpkg-query -W -f '${Conffiles}\n' corral | grep -q /etc/corral/corrald.conf ||
    fail "/etc/corral/corrald.conf is not a conffile"
[ -L /etc/systemd/system/multi-user.target.wants/corrald.service ] || fail "unit not enabled"
# an admin's edit and corrald's state must survive the upgrade
echo "<!-- edited by the admin -->" >> /etc/corral/corrald.conf
echo "state" > /var/lib/corral/state
# as an older corrald, one process as corral, left it (postinst hands it to corral-engine)
chown corral:corral /var/lib/corral/state
chmod 0600 /var/lib/corral/state

echo "=== upgrade to $version"
apt-get install -y "$new" > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "upgrade to $version"; }
[ "$(dpkg-query -W -f '${Version}' corral)" = "$version" ] || fail "not upgraded"
grep -q "edited by the admin" /etc/corral/corrald.conf || fail "the upgrade lost the admin's edit"
[ "$(cat /var/lib/corral/state)" = state ] || fail "the upgrade lost the state"
[ "$(stat -c %U /var/lib/corral/state)" = corral-engine ] ||
    fail "the upgrade left the state file $(stat -c %U /var/lib/corral/state)'s, not the engine process's"
rm /var/lib/corral/state

echo "=== the installed unit"
systemd-analyze security --offline=yes "$unit" > "$work/security" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for corrald.service: \([0-9.]*\).*/\1/p' "$work/security")
[ -n "$exposure" ] || { cat "$work/security"; fail "systemd-analyze security gave no figure"; }
echo "systemd-analyze security --offline=yes: exposure $exposure"
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' || fail "exposure $exposure is above 2.0"
/usr/sbin/corrald -t -f /etc/corral/corrald.conf || fail "corrald -t on the installed configuration"

echo "=== run corrald as the unit does"
if [ -d /run/systemd/system ]; then
    echo "(systemd runs here, but this test starts corrald itself to read its log)"
fi
# ExecStartPre= and ExecStart= from the installed unit, run under its User=,
# Group=, AmbientCapabilities=, CapabilityBoundingSet=, NoNewPrivileges= and
# UMask=, with the directory variables systemd sets
pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
start=$(sed -n 's/^ExecStart=//p' "$unit")
# AmbientCapabilities=CAP_A CAP_B as setpriv's -all,+a,+b
caps=-all$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr ' ' '\n' | sed -n 's/^CAP_\(.*\)/,+\1/p' |
    tr 'A-Z' 'a-z' | tr -d '\n')
[ "$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")" = "$(sed -n 's/^AmbientCapabilities=//p' "$unit")" ] ||
    fail "the unit's CapabilityBoundingSet= is not its AmbientCapabilities=, which this test applies to both"
echo "capabilities as the unit: $caps"
# The seccomp directives: the system call groups expanded with systemd's own
# table, in the unit's order (a ~ line takes calls away again)
sandbox=$work/sandbox
mkdir -m 0755 "$sandbox"
chmod 0711 "$work" # the unit's user reaches the sandbox, and nothing else here
cc -Wall -O2 -o "$sandbox/unit_sandbox" "$src/tests/package/unit_sandbox.c" -lseccomp \
    > "$work/cc.log" 2>&1 || { cat "$work/cc.log"; fail "cannot build unit_sandbox (libseccomp-dev)"; }
# shellcheck disable=SC2046 # one argument per directive
python3 "$src/tests/package/syscall_set.py" $(sed -n 's/^SystemCallFilter=//p' "$unit") \
    > "$sandbox/allow" || fail "cannot expand the unit's SystemCallFilter="
[ "$(sed -n 's/^SystemCallErrorNumber=//p' "$unit")" = EPERM ] ||
    fail "the unit's SystemCallErrorNumber= is not the EPERM unit_sandbox applies"
families=$(sed -n 's/^RestrictAddressFamilies=//p' "$unit" | tr ' ' ',')
wx=
grep -q '^MemoryDenyWriteExecute=yes' "$unit" && wx=-w
echo "seccomp as the unit: $(grep -c . "$sandbox/allow") system calls, families $families${wx:+, no W+X memory}"
# (printf, not echo: dash's echo eats backslashes)
printf '%s\n' '#!/bin/sh' 'umask 0077' \
    'exec env RUNTIME_DIRECTORY=/run/corrald STATE_DIRECTORY=/var/lib/corral LOGS_DIRECTORY=/var/log/corral \' \
    '    setpriv --reuid=corral --regid=corral --init-groups --no-new-privs \' \
    "    --inh-caps=$caps --ambient-caps=$caps --bounding-set=$caps \\" \
    "    $sandbox/unit_sandbox -a $sandbox/allow -f $families $wx -- \"\$@\"" > "$work/as-unit"
chmod +x "$work/as-unit"
# shellcheck disable=SC2086 # the unit's command lines split on spaces, as systemd does
"$work/as-unit" $pre > /dev/null || fail "ExecStartPre: $pre"
# shellcheck disable=SC2086
"$work/as-unit" $start 2> "$work/corrald.log" &
pid=$!
wait_until 20 grep -q "started" "$work/corrald.log" || fail "corrald did not start"
[ "$(stat -c %U /proc/$pid)" = corral ] || fail "corrald does not run as corral"
# privilege separation, as corrald(8) says to check it
engine=$(sed -n 's/.*privilege separation: engine process \([0-9]*\) .*/\1/p' "$work/corrald.log")
[ -n "$engine" ] || fail "corrald did not split into executor and engine processes under the unit"
field() { awk -v f="$2:" '$1 == f {print $2}' "$1"; }
[ "$(stat -c %U /proc/"$engine")" = corral-engine ] || fail "the engine process does not run as corral-engine"
for t in /proc/"$engine"/task/*; do
    [ "$(field "$t/status" CapEff)$(field "$t/status" CapPrm)" = 00000000000000000000000000000000 ] ||
        fail "engine thread ${t##*/} kept capabilities: $(grep ^Cap "$t/status" | tr '\n' ' ')"
done
[ "$(field /proc/"$engine"/status NoNewPrivs)" = 1 ] || fail "engine NoNewPrivs is not 1"
# the unit's filter, and the engine's own on top
[ "$(field /proc/"$engine"/status Seccomp_filters)" = 2 ] ||
    fail "engine Seccomp_filters: $(field /proc/"$engine"/status Seccomp_filters), not the unit's and its own"
[ "$(field /proc/"$pid"/status CapEff)$(field /proc/"$pid"/status CapPrm)" = 00000000000000000000000000000000 ] ||
    fail "the executor process kept capabilities: $(grep ^Cap /proc/"$pid"/status | tr '\n' ' ')"
echo "executor $pid as corral (no capability), engine $engine as corral-engine (no capability, NoNewPrivs, its own filter)"
# the datagram inputs' 8 MiB receive buffer, which the engine (no
# CAP_NET_ADMIN) gets only up to net.core.rmem_max: the package's sysctl.d
# file raises that, and the postinst applied it; where /proc/sys is
# read-only (a container) the warning says what the host must set
[ "$(sed -n 's/^net\.core\.rmem_max = //p' /usr/lib/sysctl.d/30-corral.conf)" = 8388608 ] ||
    fail "/usr/lib/sysctl.d/30-corral.conf does not raise net.core.rmem_max to 8388608"
grep -q 'receive buffer' "$work/corrald.log" || fail "no receive buffer logged"
if [ "$(cat /proc/sys/net/core/rmem_max)" -ge 8388608 ]; then
    grep 'receive buffer .* not the' "$work/corrald.log" && fail "the inputs got less than they asked for"
    echo "net.core.rmem_max $(cat /proc/sys/net/core/rmem_max): the inputs got their 8 MiB, no warning"
else
    grep -q 'sysctl -w net.core.rmem_max=8388608' "$work/corrald.log" ||
        fail "the receive buffer warning does not say what to set"
    echo "net.core.rmem_max read-only here: the warning names the sysctl"
fi

# five failed logins from one address in a burst: the shipped sshd rules'
# brute-force alert.  logger -d sends UDP to the configured 127.0.0.1:514.
burst() { # address, then logger's destination options
    ip=$1
    shift
    for n in 1 2 3 4 5; do
        logger "$@" -t sshd --id=4242 "Failed password for root from $ip port 4000$n ssh2" ||
            fail "logger $*"
    done
}
events=/var/log/corral/events.json
burst 198.51.100.7 -n 127.0.0.1 -P 514 -d
wait_until 20 grep -q 'ssh.bruteforce.alert.*198.51.100.7\|198.51.100.7.*ssh.bruteforce.alert' "$events" ||
    fail "no brute-force alert for 198.51.100.7 in $events"
echo "event in $events: $(grep -c . "$events") line(s)"
[ "$(stat -c %U:%a "$events")" = corral-engine:600 ] ||
    fail "$events is $(stat -c %U:%a "$events"), not the engine process's (corral-engine:600)"

echo "=== the control socket: open to the group corral-ops"
sock=/run/corrald/control.sock
ops_gid=$(getent group corral-ops | cut -d: -f3)
[ -n "$ops_gid" ] || fail "no group corral-ops after install"
[ "$(stat -c %U:%G:%a "$sock")" = corral-engine:corral-ops:660 ] ||
    fail "$sock is $(stat -c %U:%G:%a "$sock"), not corral-engine:corral-ops:660"
# a member (nobody with the group) lists the silences without root; without it, the hint
setpriv --reuid=nobody --regid=nogroup --groups="$ops_gid" corral silence -s "$sock" list > /dev/null ||
    fail "a member of corral-ops cannot use $sock"
if setpriv --reuid=nobody --regid=nogroup --clear-groups corral silence -s "$sock" list \
    > /dev/null 2> "$work/outsider.err"; then
    fail "a user outside corral-ops used $sock"
fi
grep -q "add nobody to group corral-ops" "$work/outsider.err" ||
    fail "no hint for the outsider: $(cat "$work/outsider.err")"
echo "$sock: corral-engine:corral-ops 0660; a member uses it, others are told to join corral-ops"

echo "=== logrotate"
logrotate -f -s "$work/logrotate.status" /etc/logrotate.d/corral || fail "logrotate"
[ -f "$events.1" ] || fail "logrotate did not move $events aside"
wait_until 20 grep -q "reopened $events" "$work/corrald.log" || fail "corrald did not reopen $events"
# the next burst through the local socket; its alert goes to the new file
burst 198.51.100.8 -u /run/corrald/log.sock
wait_until 20 grep -q '198.51.100.8' "$events" || fail "no event for 198.51.100.8 in the new $events"
grep -q '198.51.100.8' "$events.1" && fail "the event after rotation went to $events.1"
grep -q '198.51.100.7' "$events" && fail "the event before rotation is in the new $events"
echo "after rotation: the next event is in the new $events"

kill -TERM "$pid"
wait "$pid" || fail "corrald exited with $? on SIGTERM"
pid=""

echo "=== the executors, as the unit runs them"
# The installed configuration with executors added, in /etc/corral where the
# unit's user can read it (removed again before the purge)
SNMP_PERSISTENT_DIR=$work/persist
export SNMP_PERSISTENT_DIR
mkdir -p "$SNMP_PERSISTENT_DIR" "$work/mail"
echo "authCommunity log public" > "$work/snmptrapd.conf"
echo go > "$work/go"
python3 "$src/tests/integration/held_port.py" udp "$work/trapd.port" "$work/go" \
    snmptrapd -f -Lo -C -c "$work/snmptrapd.conf" -n -On -Oq "udp:127.0.0.1:{port}" \
    > "$work/trapd.log" 2>&1 &
trapd=$!
peers=$trapd
/usr/bin/python3 "$src/tests/integration/smtp_server.py" --dir "$work/mail" > "$work/smtp.out" 2>&1 &
smtpd=$!
peers="$trapd $smtpd"
wait_until 20 test -s "$work/trapd.port" || fail "no port for snmptrapd"
wait_until 20 grep -q "^PORT" "$work/smtp.out" || fail "the SMTP server did not start"
wait_until 20 grep -q "NET-SNMP version" "$work/trapd.log" || fail "snmptrapd did not start"
exconf=/etc/corral/package-test.conf
printf 'public\n' > /etc/corral/package-test.community
# the executor process's secret, as corrald(8) says to keep one: corral's, 0600
chown corral:corral /etc/corral/package-test.community
chmod 0600 /etc/corral/package-test.community
if setpriv --reuid=corral-engine --regid=corral --init-groups cat /etc/corral/package-test.community \
    > /dev/null 2>&1; then
    fail "the engine's user can read the executor's secret"
fi
# the API token as corrald.conf(5) makes it: root:corral 0640, read at start by
# corral and at every reload by corral-engine
(umask 077; openssl rand -hex 32 > /etc/corral/package-test.token)
chgrp corral /etc/corral/package-test.token
chmod 0640 /etc/corral/package-test.token
sed '/^<\/corrald>/d; s|<stats listen="\([^"]*\)"/>|<stats listen="\1" api-token-file="/etc/corral/package-test.token"/>|' \
    /etc/corral/corrald.conf > "$exconf"
grep -q 'api-token-file="/etc/corral/package-test.token"' "$exconf" || fail "no api-token-file in $exconf"
cat >> "$exconf" <<EOF
  <executors spool="/var/lib/corral/spool">
    <exec name="file" program="/usr/share/corral/scripts/append.sh">
      <arg>--</arg><arg>/var/log/corral/alerts.log</arg>
    </exec>
    <snmp name="nms" target="udp:127.0.0.1:$(cat "$work/trapd.port")"
          community-file="/etc/corral/package-test.community"/>
    <smtp name="admins" url="smtp://127.0.0.1:$(sed -n 's/^PORT //p' "$work/smtp.out")" tls="none"
          from="corral@example.com" to="ops@example.com"/>
  </executors>
  <routes><route tag="corral.alert" to="file,nms,admins"/></routes>
</corrald>
EOF
chmod 0644 "$exconf"
"$work/as-unit" /usr/sbin/corrald -t -f "$exconf" > /dev/null || fail "corrald -t $exconf"
"$work/as-unit" /usr/sbin/corrald -F -f "$exconf" 2> "$work/corrald-ex.log" &
pid=$!
wait_until 20 grep -q "started" "$work/corrald-ex.log" || fail "corrald did not start with executors"
burst 198.51.100.9 -n 127.0.0.1 -P 514 -d
wait_until 30 grep -q "198.51.100.9" /var/log/corral/alerts.log ||
    fail "the exec executor's script wrote no alert for 198.51.100.9"
wait_until 30 grep -q "198.51.100.9" "$work/trapd.log" || fail "no trap for 198.51.100.9 at snmptrapd"
wait_until 30 sh -c 'ls "$1"/msg-*.json' sh "$work/mail" || fail "no mail at the SMTP server"
echo "exec script, trap and mail: each delivered an alert under the unit's sandbox"
# SIGHUP as systemctl reload sends it, to the main process: the engine reloads (a g frame)
kill -HUP "$pid"
wait_until 30 grep -q "reload: rules" "$work/corrald-ex.log" || fail "SIGHUP to the main process did not reload"
grep -q "reload failed" "$work/corrald-ex.log" && fail "the reload failed: $(grep -A3 'reload failed' "$work/corrald-ex.log")"
kill -TERM "$pid"
wait "$pid" || fail "corrald (executors) exited with $? on SIGTERM"
pid=""
kill "$trapd" "$smtpd" 2>/dev/null
wait "$trapd" "$smtpd" 2>/dev/null
peers=""
rm -f "$exconf" /etc/corral/package-test.community /etc/corral/package-test.token

echo "=== remove"
apt-get remove -y corral > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "remove"; }
[ ! -e /usr/sbin/corrald ] || fail "remove left /usr/sbin/corrald"
[ -f /etc/corral/corrald.conf ] || fail "remove took the conffile (only purge should)"

echo "=== purge"
apt-get purge -y corral > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "purge"; }
snapshot > "$work/after"
if ! diff "$work/before" "$work/after" > "$work/left"; then
    cat "$work/left"
    fail "purge left files behind (or the test removed some)"
fi
installed=""
echo "purge: nothing left (the system user corral stays, as Debian leaves system users)"
echo "=== package test passed"
