#!/bin/sh
# loghub_match: corral classifies real OpenSSH and Linux logs exactly as
# syslog-ng does.  For every line of the loghub samples and both public sshd
# rule sets, class and rule id from `corral match -f` must equal those from
# `pdbtool match -f` (syslog-ng 3.38), on one thread and on two (-j 2).
# Exits 77 without pdbtool.

top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
top_builddir=${top_builddir:-$top_srcdir}
CORRAL=$top_builddir/tools/corral
data=$top_srcdir/tests/data

if [ -z "$PDBTOOL" ] || [ ! -x "$PDBTOOL" ]; then
    echo "loghub_match: no pdbtool (PDBTOOL='$PDBTOOL'), skipped"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/loghub_match.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

tpl='${.classifier.class}|${.classifier.rule_id}|${usracct.username}\n'
status=0
for rules in "$data/patterndb/access/sshd.pdb" "$data/patterndb/applications/openssh/sshd.xml"; do
    for log in "$data/loghub/OpenSSH_2k.log" "$data/loghub/Linux_2k.log"; do
        "$PDBTOOL" match -p "$rules" -f "$log" -T "$tpl" > "$tmp/pdbtool" 2>/dev/null
        lines=$(wc -l < "$tmp/pdbtool")
        classified=$(grep -vc '^unknown|' "$tmp/pdbtool")
        # one thread, and the parallel pipeline
        for j in 1 2; do
            "$CORRAL" match -j $j -r "$rules" -f "$log" -T "$tpl" > "$tmp/corral" || status=1
            if cmp -s "$tmp/pdbtool" "$tmp/corral" && [ "$lines" -gt 1000 ]; then
                echo "ok: $(basename "$rules") on $(basename "$log"), -j $j: $lines lines agree ($classified classified)"
            else
                echo "MISMATCH: $(basename "$rules") on $(basename "$log"), -j $j ($lines lines from pdbtool)"
                diff "$tmp/pdbtool" "$tmp/corral" | head -20
                status=1
            fi
        done
    done
done
exit $status
