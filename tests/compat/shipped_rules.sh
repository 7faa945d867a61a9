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
else
    echo "no pdbtool: syslog-ng side not checked"
fi
exit $status
