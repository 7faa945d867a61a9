#!/bin/sh
# shipped_rules: every example of the shipped rule library passes in corral
# (each file alone and the directory as one database, as corrald loads it)
# and, when syslog-ng's pdbtool is installed, in syslog-ng 3.38 as well: the
# files are meant to stay loadable by syslog-ng.

top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
top_builddir=${top_builddir:-$top_srcdir}
CORRAL=$top_builddir/tools/corral
status=0

for f in "$top_srcdir"/rules/*.xml; do
    out=$("$CORRAL" test "$f" 2>&1) || { echo "$out"; status=1; }
    echo "corral test $(basename "$f"): $(echo "$out" | tail -n 1)"
    # the shipped rules must not have overlapping patterns either
    if echo "$out" | grep -q "matches several rules"; then
        echo "$out" | grep "matches several rules"
        status=1
    fi
done
out=$("$CORRAL" test "$top_srcdir/rules" 2>&1) || { echo "$out"; status=1; }
echo "corral test rules/: $(echo "$out" | tail -n 1)"
# corral's own extensions (fractional timeouts), beside the shipped rules
out=$("$CORRAL" test "$top_srcdir/tests/data/scenarios" 2>&1) || { echo "$out"; status=1; }
echo "corral test tests/data/scenarios/: $(echo "$out" | tail -n 1)"

# Every severity a shipped alert sets is one that contrib/mibs/corral.snmptt
# maps to its own EVENT (corrald would send an unknown one as warning); clears
# are corralClear notifications.
sevs=$(grep -ho "corral.severity'>[^<]*<" "$top_srcdir"/rules/*.xml | sed "s/.*'>//; s/<\$//" | sort -u)
for sev in $sevs; do
    # a clear is the MIB's corralClear notification, not a corralAlert of its own severity
    [ "$sev" = clear ] && continue
    if ! grep '^MATCH \$8: ' "$top_srcdir/contrib/mibs/corral.snmptt" | grep -qF "|$sev)\\b)"; then
        echo "severity '$sev' of a shipped rule has no EVENT in contrib/mibs/corral.snmptt"
        status=1
    fi
done
echo "shipped alert severities mapped by corral.snmptt: $(echo $sevs)"

if [ -n "$PDBTOOL" ] && [ -x "$PDBTOOL" ]; then
    for f in "$top_srcdir"/rules/*.xml; do
        if ! out=$("$PDBTOOL" test "$f" 2>&1) || echo "$out" | grep -q "Rule conflict"; then
            echo "pdbtool test $(basename "$f") failed:"
            echo "$out" | grep -v "^Testing message" | head -20
            status=1
        else
            echo "pdbtool test $(basename "$f"): ok"
        fi
    done

    # The shipped rules on real logs: corral and syslog-ng read the same
    # rule, user, address, port and key from every line (the user-name
    # patterns use PCRE lookaheads, so both engines must run them alike),
    # generate the same messages, and every OpenSSH line is classified.
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/shipped_rules.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT HUP INT TERM
    "$PDBTOOL" merge -D "$top_srcdir/rules" -G '*.xml' -p "$tmp/rules.pdb" || status=1
    tpl='${.classifier.class}|${.classifier.rule_id}|${usracct.username}|${usracct.device}|${usracct.port}|${usracct.authmethod}|${sshd.key_type}|${sshd.key_fingerprint}|${su.target_user}|${corral.event}|${MESSAGE}\n'
    # The samples' dates have no year, and both tools take a message dated
    # after the clock at the clock's time: then the rate limits would follow
    # how fast each tool runs.  Dated in 2025 (ISO 8601, which both read),
    # every message keeps its own time, on any day.
    in_2025() {
        awk 'BEGIN { split("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec", m, " ")
                     for (i = 1; i <= 12; i++) mon[m[i]] = i }
             ($1 in mon) && $3 ~ /^[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$/ {
                 d = sprintf("2025-%02d-%02dT%s+00:00", mon[$1], $2, $3)
                 sub(/^[A-Z][a-z][a-z] +[0-9]+ [0-9:]+ /, "")
                 print d " " $0; next }
             { print }' "$1"
    }
    for log in "$top_srcdir/tests/data/loghub/OpenSSH_2k.log" "$top_srcdir/tests/data/loghub/Linux_2k.log" \
               "$top_srcdir/contrib/samples/auth.log"; do
        name=$(basename "$log")
        in_2025 "$log" > "$tmp/$name"
        "$PDBTOOL" match -p "$tmp/rules.pdb" -f "$tmp/$name" -T "$tpl" > "$tmp/pdbtool" 2>/dev/null
        # one thread, and the parallel pipeline
        for j in 1 2; do
            "$CORRAL" match -j $j -r "$top_srcdir/rules" -f "$tmp/$name" -T "$tpl" > "$tmp/corral" || status=1
            if [ -s "$tmp/pdbtool" ] && cmp -s "$tmp/pdbtool" "$tmp/corral"; then
                echo "shipped rules on $name, -j $j: corral and pdbtool agree ($(grep -vc '^unknown|' "$tmp/corral") classified or generated of $(wc -l < "$tmp/corral"))"
            else
                echo "shipped rules on $name, -j $j: corral differs from pdbtool:"
                diff "$tmp/pdbtool" "$tmp/corral" | head -20
                status=1
            fi
        done
    done
    lines=$(awk 'END { print NR }' "$top_srcdir/tests/data/loghub/OpenSSH_2k.log")
    got=$("$CORRAL" match -r "$top_srcdir/rules" --keep-open -f "$top_srcdir/tests/data/loghub/OpenSSH_2k.log" \
        -T '${.classifier.class}\n' | grep -v '^$' | grep -vc '^unknown$')
    if [ "$got" -eq "$lines" ]; then
        echo "shipped rules classify $got of $lines lines of OpenSSH_2k.log"
    else
        echo "shipped rules classify only $got of $lines lines of OpenSSH_2k.log"
        status=1
    fi
else
    echo "no pdbtool: syslog-ng side not checked"
fi
exit $status
