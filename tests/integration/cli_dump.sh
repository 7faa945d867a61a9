#!/bin/sh
# corral dump: the program tree and each program's pattern tree, as the
# matcher sees them: two program patterns sharing one ruleset list one
# tree; literals before parsers, as syslog-ng tries them; each pattern's
# last node names its rule.  -P PROGRAM prints only the tree that serves
# PROGRAM (the generic set for a program no ruleset names).  Without -r it
# exits 2, with a rule file it cannot read 1, saying which.
. "$(dirname "$0")/corrald_lib.sh"

cat > "$WORK/rules.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-07">
  <ruleset name="sshd" id="dump-sshd"><patterns><pattern>sshd</pattern></patterns><rules>
    <rule provider="test" id="dump.accepted" class="system">
      <patterns><pattern>Accepted @ESTRING:method: @for @ESTRING:user: @from @IPv4:addr@</pattern>
                <pattern>Accepted publickey for @ANYSTRING:user@</pattern></patterns>
    </rule>
    <rule provider="test" id="dump.failed" class="system">
      <patterns><pattern>Failed password for @ESTRING:user: @from @IPv4:addr@</pattern></patterns>
    </rule>
  </rules></ruleset>
  <ruleset name="cron" id="dump-cron"><patterns><pattern>CRON</pattern><pattern>crond</pattern></patterns><rules>
    <rule provider="test" id="dump.cron" class="system">
      <patterns><pattern>(root) CMD (@ANYSTRING:cmd@)</pattern></patterns>
    </rule>
  </rules></ruleset>
</patterndb>
XML

"$CORRAL" dump -r "$WORK/rules.xml" > "$WORK/all.txt" 2> "$WORK/err.txt" || fail "corral dump failed: $(cat "$WORK/err.txt")"
cat > "$WORK/want.txt" <<'TXT'
# program tree
'' => (generic rules)
 'CRON' => (rules)
 'crond' => (rules)
 'sshd' => (rules)

# generic rules
'' 

# rules for program pattern 'sshd'
'' 
 'Accepted ' 
  'publickey for ' 
   @ANYSTRING:user@ => dump.accepted
  @ESTRING:method: @ 
   'for ' 
    @ESTRING:user: @ 
     'from ' 
      @IPv4:addr@ => dump.accepted
 'Failed password for ' 
  @ESTRING:user: @ 
   'from ' 
    @IPv4:addr@ => dump.failed

# rules for program pattern 'CRON'
'' 
 '(root) CMD (' 
  @ANYSTRING:cmd@ 
   ')' => dump.cron
TXT
diff "$WORK/want.txt" "$WORK/all.txt" > "$WORK/diff.txt" || fail "corral dump: $(cat "$WORK/diff.txt")"

"$CORRAL" dump -r "$WORK/rules.xml" -P crond > "$WORK/crond.txt" || fail "corral dump -P crond failed"
head -n 1 "$WORK/crond.txt" | grep -qx "# rules for program 'crond' (CRON)" || fail "-P crond: $(cat "$WORK/crond.txt")"
grep -q "dump.cron" "$WORK/crond.txt" || fail "-P crond without its rule: $(cat "$WORK/crond.txt")"
! grep -q "dump.accepted\|program tree" "$WORK/crond.txt" || fail "-P crond printed more than its tree: $(cat "$WORK/crond.txt")"
"$CORRAL" dump -r "$WORK/rules.xml" -P nosuch > "$WORK/nosuch.txt" || fail "corral dump -P nosuch failed"
head -n 1 "$WORK/nosuch.txt" | grep -qx "# rules for program 'nosuch' (generic set)" || fail "-P nosuch: $(cat "$WORK/nosuch.txt")"

rc=0
"$CORRAL" dump > /dev/null 2> "$WORK/err.txt" || rc=$?
[ "$rc" = 2 ] && grep -q "no rules given" "$WORK/err.txt" || fail "corral dump without -r: exit $rc, $(cat "$WORK/err.txt")"
rc=0
"$CORRAL" dump -r "$WORK/missing.xml" > /dev/null 2> "$WORK/err.txt" || rc=$?
[ "$rc" = 1 ] && grep -q "missing.xml: error: cannot read" "$WORK/err.txt" || fail "corral dump of a missing file: exit $rc, $(cat "$WORK/err.txt")"
echo "ok: corral dump prints the trees the matcher uses"
