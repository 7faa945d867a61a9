#!/bin/sh
# A file output's path made a link by whoever can write the output's
# directory: the user a root-started corrald drops to (<daemon user>) owns
# /var/log/corral, and a compromised engine could leave a link there for
# the next start, which opens its outputs as root before the drop.
#  1. A symbolic link to a root-only file: corrald, started as root with
#     <daemon user="nobody">, refuses to start; the log names the output and
#     says why; the target is unchanged.
#  2. A hard link to that file: the same.
#  3. A regular file: corrald starts and writes the message into it.
#  4. corrald run as root throughout (no user=): the file replaced by a
#     symbolic link, then SIGUSR2 (reopen after rotation): the reopen is
#     refused, counted (corral_output_errors_total) and logged, and corrald
#     goes on writing to the file it had open; the target is unchanged.
# Needs root; skipped (77) otherwise.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (the links matter to a root-started corrald)"; exit 77; }
id nobody > /dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }

chmod 755 "$WORK"
mkdir "$WORK/out"
chown nobody "$WORK/out" # the unprivileged user's directory, as /var/log/corral
umask 077
printf 'root only\n' > "$WORK/victim"
umask 022
victim_sum=$(cksum < "$WORK/victim")

config() { # config USER_ATTRIBUTE
    cat > "$WORK/corrald.conf" <<XML
<corrald>
  $1
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out/events.log" name="events"/></outputs>
</corrald>
XML
}
config '<daemon user="nobody"/>'

# refused REASON: corrald does not start, and says why
refused() {
    CORRALD_LOG=$WORK/refused.log
    : > "$CORRALD_LOG"
    "$CORRALD" -F -f "$WORK/corrald.conf" --schema "$SCHEMA" < /dev/null > /dev/null 2>> "$CORRALD_LOG" &
    _pid=$!
    track $_pid
    wait_exit $_pid
    _st=$?
    [ $_st -ne 0 ] || fail "corrald started with a linked output"
    grep -q "output events: $WORK/out/events.log: $1" "$CORRALD_LOG" ||
        fail "no refusal naming the output: $(cat "$CORRALD_LOG")"
    [ "$(cksum < "$WORK/victim")" = "$victim_sum" ] || fail "the link's target was written"
}

# 1. a symbolic link
ln -s "$WORK/victim" "$WORK/out/events.log"
refused "a symbolic link, which corrald running as root does not follow"
echo "1. symbolic link: refused"

# 2. a hard link
rm "$WORK/out/events.log"
ln "$WORK/victim" "$WORK/out/events.log"
refused "the file has other names (hard links)"
echo "2. hard link: refused"

# 3. a regular file
rm "$WORK/out/events.log"
now=$(date '+%b %e %H:%M:%S')
start_corrald plain "$WORK/corrald.conf"
CONTROL=$WORK/control.sock
send_udp "$(input_port udp)" "$now web1 sshd[7]: Accepted password for alice from 10.0.0.1 port 1 ssh2"
wait_grep "$WORK/out/events.log" "Accepted password for alice" || fail "the message was not written"
stop_corrald
echo "3. regular file: written"

# 4. a reopen as root, after the file was swapped for a link
config ''
start_corrald root "$WORK/corrald.conf"
send_udp "$(input_port udp)" "$now web1 sshd[8]: Accepted password for bob from 10.0.0.1 port 1 ssh2"
wait_grep "$WORK/out/events.log" "for bob" || fail "the message was not written"
mv "$WORK/out/events.log" "$WORK/out/events.log.1"
ln -s "$WORK/victim" "$WORK/out/events.log"
kill -USR2 "$CORRALD_PID"
wait_log "output events: cannot reopen $WORK/out/events.log, still writing to the old file: a symbolic link" ||
    fail "the reopen through the link was not refused"
wait_metric corral_output_errors_total output=events -ge 1 || fail "the refused reopen was not counted"
send_udp "$(input_port udp)" "$now web1 sshd[9]: Accepted password for carol from 10.0.0.1 port 1 ssh2"
wait_grep "$WORK/out/events.log.1" "for carol" || fail "corrald stopped writing to the file it had open"
[ "$(cksum < "$WORK/victim")" = "$victim_sum" ] || fail "the link's target was written"
stop_corrald
echo "4. reopen through a link: refused, still writing to the old file"
