#!/bin/sh
# One validation path: `corrald -t`, `corral check-config` and a SIGHUP
# reload refuse the same bad configurations, each with the file and line
# that is wrong, because all three run what start-up runs (executors opened
# and closed again, routes compiled, rule actions' routes resolved, outputs
# and inputs checked short of binding).  A good configuration passes all
# three.  Everything runs from / so that nothing depends on the source tree.
. "$(dirname "$0")/corrald_lib.sh"
CORRAL=$(cd "$(dirname "$CORRAL")" && pwd)/corral
CORRALD=$(cd "$(dirname "$CORRALD")" && pwd)/corrald

mkdir -p "$WORK/rules" "$WORK/routed"
cp "$top_srcdir/tests/integration/session_rules.xml" "$WORK/rules/"
# a rule whose action routes to an executor named "ops"
cat > "$WORK/routed/routed.xml" <<'XML'
<?xml version="1.0"?>
<patterndb version="4" pub_date="2026-12-04">
  <ruleset name="routed" id="routed-set"><pattern>routed</pattern>
    <rules>
      <rule provider="test" id="routed.hello" class="system">
        <patterns><pattern>hello @ANYSTRING:who@</pattern></patterns>
        <actions>
          <action route="ops"><message><values><value name="MESSAGE">hi $who</value></values></message></action>
        </actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
XML
long=$WORK/$(printf 'a%.0s' $(seq 1 120))

# case NAME EXPECTED-LOCATION EXPECTED-TEXT: the bad configuration NAME.conf
# (its body on stdin, between <corrald> and </corrald>, on line 2)
cases=
bad() {
    { echo "<corrald>"; cat; echo "</corrald>"; } > "$WORK/$1.conf"
    echo "$1|$2|$3" >> "$WORK/cases"
}
: > "$WORK/cases"
R="<rules path=\"$WORK/rules\"/>"
bad timout 'CONF:2' 'unknown attribute timout= for exec' <<EOF
$R<executors><exec name="x" program="/bin/true" timout="3s"/></executors>
EOF
bad comunity 'CONF:2' 'unknown attribute comunity-file= for snmp' <<EOF
$R<executors><snmp name="s" target="udp:127.0.0.1:162" comunity-file="$WORK/c"/></executors>
EOF
bad pwfile 'CONF:2' "cannot read auth-password-file $WORK/none" <<EOF
$R<executors><snmp name="s" target="udp:127.0.0.1:162" version="3" user="u" auth-password-file="$WORK/none" priv-password-env="HOME"/></executors>
EOF
bad authproto 'CONF:2' 'bad auth-protocol="MD6"' <<EOF
$R<executors><snmp name="s" target="udp:127.0.0.1:162" version="3" user="u" auth-protocol="MD6" auth-password-env="PATH" priv-password-env="PATH"/></executors>
EOF
bad relative 'CONF:2' 'program="true" must be an absolute path' <<EOF
$R<executors><exec name="x" program="true"/></executors>
EOF
bad groupwait 'CONF:2' 'group-wait and group-interval need group-by' <<EOF
$R<executors><smtp name="m" url="smtp://127.0.0.1:25" from="a@example.com" to="b@example.com" group-wait="10s"/></executors>
EOF
bad rate 'CONF:2' 'bad rate="0/0"' <<EOF
$R<executors><exec name="x" program="/bin/true" rate="0/0"/></executors>
EOF
bad tlsuser 'CONF:2' 'tls="optional" would send the password in the clear' <<EOF
$R<executors><smtp name="m" url="smtp://127.0.0.1:25" from="a@example.com" to="b@example.com" tls="optional" user="bob" password-env="PATH"/></executors>
EOF
bad longsocket 'CONF:2' 'socket path longer than 107 bytes' <<EOF
$R<inputs><unix-stream path="$long"/></inputs>
EOF
bad nodir 'CONF:2' "no directory $WORK/none" <<EOF
$R<outputs><file path="$WORK/none/out.json"/></outputs>
EOF
deep=$(python3 -c 'print("(" * 100 + "\"${HOST}\" eq \"a\"" + ")" * 100)')
bad deepfilter 'CONF:2' 'bad route filter' <<EOF
$R<executors><exec name="x" program="/bin/true"/></executors><routes><route to="x" filter='$deep'/></routes>
EOF
bad route 'RULES:8' "rule routed.hello: action routes to executor 'ops', which the configuration does not define" <<EOF
<rules path="$WORK/routed"/><executors><exec name="x" program="/bin/true"/></executors>
EOF

# where CONF:N and RULES:N point
where() {
    case $2 in
    CONF:*) echo "$WORK/$1.conf:${2#CONF:}" ;;
    RULES:*) echo "$WORK/routed/routed.xml:${2#RULES:}" ;;
    esac
}

# 1. corrald -t and corral check-config, from /
while IFS='|' read -r name loc text; do
    at=$(where "$name" "$loc")
    for check in "$CORRALD -t -f" "$CORRAL check-config"; do
        if (cd / && $check "$WORK/$name.conf") > "$WORK/out.txt" 2>&1; then
            fail "$check accepted $name.conf: $(cat "$WORK/out.txt")"
        fi
        grep -qF "$at: " "$WORK/out.txt" && grep -qF "$text" "$WORK/out.txt" ||
            fail "$check $name.conf: expected '$at: ... $text', got: $(cat "$WORK/out.txt")"
    done
done < "$WORK/cases"

# 2. the good configuration passes both
cat > "$WORK/good.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <rules path="$WORK/routed"/>
  <inputs><udp name="u" listen="127.0.0.1:0"/></inputs>
  <outputs><file path="$WORK/out.json"/></outputs>
  <executors><exec name="ops" program="/bin/true"/></executors>
</corrald>
XML
for check in "$CORRALD -t -f" "$CORRAL check-config"; do
    (cd / && $check "$WORK/good.conf") > "$WORK/out.txt" 2>&1 ||
        fail "$check refused the good configuration: $(cat "$WORK/out.txt")"
done

# 3. a running corrald refuses each bad configuration on SIGHUP, with the
# same file:line, and keeps running the good one
cp "$WORK/good.conf" "$WORK/live.conf"
start_corrald corrald "$WORK/live.conf"
failed=0
while IFS='|' read -r name loc text; do
    case $loc in
    CONF:*) at=$WORK/live.conf:${loc#CONF:} ;;
    *) at=$(where "$name" "$loc") ;;
    esac
    cp "$WORK/$name.conf" "$WORK/live.conf"
    kill -HUP "$CORRALD_PID"
    failed=$((failed + 1))
    wait_until has_matching "$CORRALD_LOG" 'reload: reload failed' "$failed" ||
        fail "reload of $name.conf not refused: $(tail -n 5 "$CORRALD_LOG")"
    grep -F "reload: $at: " "$CORRALD_LOG" | grep -qF "$text" ||
        fail "reload of $name.conf: no '$at: ... $text' in the log: $(tail -n 5 "$CORRALD_LOG")"
    corrald_alive
done < "$WORK/cases"
# still running the good configuration: a classified message gets through
cp "$WORK/good.conf" "$WORK/live.conf"
send_udp "$(input_port u)" '<13>Dec  4 10:00:00 web1 routed: hello alice'
wait_grep "$WORK/out.json" 'routed.hello' || fail "the good configuration stopped working"
stop_corrald
echo "ok: $(wc -l < "$WORK/cases") bad configurations refused alike by corrald -t, corral check-config and reload"
