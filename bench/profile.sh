#!/bin/sh
# bench/profile.sh: where corral's classification time goes, by callgrind
# instruction counts.  See bench/README.md.
#
#   sh bench/profile.sh [-n LINES] [-s a|b] [-t TOP] [-d SCRATCH] [-C]
#
#   -n LINES   corpus size (default 100000), generated like classify.sh's
#   -s SET     rule set: a (the public rules of tests/data/patterndb) or
#              b (those plus 10000 generated rules; default)
#   -t TOP     functions to list (default 15)
#   -d DIR     scratch directory (default ${TMPDIR:-/tmp}/corral-profile)
#   -C         simulate the caches too (--cache-sim=yes, slower): prints data
#              reads and first-level (D1) and last-level (LL) cache misses a
#              message; instruction counts hide memory stalls, this does not
#
# Runs `corral match -j 1 -r RULES -f CORPUS -T ''` under valgrind --tool=callgrind
# with a dump when start-up ends (--dump-after=corr_new) and one
# before the end-of-input expiry (--dump-before=corr_expire_all), so the
# classification loop is profiled apart from start-up and tear-down; once
# more on an empty corpus, whose share is subtracted from the instruction count.
# Prints instructions a message, the start-up instructions, the top functions
# of the classification part, self (exclusive) and inclusive, and the top of
# start-up (inclusive).
# Environment: CORRAL (default tools/corral of this tree), PDBTOOL.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
lines=100000
set_=b
ntop=15
scratch=${TMPDIR:-/tmp}/corral-profile
cachesim=no

while getopts n:s:t:d:Ch opt; do
    case $opt in
    n) lines=$OPTARG ;;
    s) set_=$OPTARG ;;
    t) ntop=$OPTARG ;;
    d) scratch=$OPTARG ;;
    C) cachesim=yes ;;
    *) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
case $set_ in a|b) ;; *) echo "profile.sh: -s a or b" >&2; exit 2 ;; esac

CORRAL=${CORRAL:-$top/tools/corral}
PDBTOOL=${PDBTOOL:-$(command -v pdbtool || true)}
for t in valgrind callgrind_annotate python3; do
    command -v $t >/dev/null || { echo "profile.sh: needs $t" >&2; exit 1; }
done
[ -x "$CORRAL" ] || { echo "profile.sh: build corral first (make tools/corral)" >&2; exit 1; }
[ -x "$PDBTOOL" ] || { echo "profile.sh: needs pdbtool (syslog-ng-core) to merge the rules" >&2; exit 1; }

mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
cp "$CORRAL" "$scratch/corral"

params="{\"generated_share\": 0.25, \"lines\": $lines, \"miss_share\": 0.1, \"programs\": 500, \"rules\": 10000, \"seed\": 1}"
gen="$scratch/gen"
if [ ! -f "$gen/gen.json" ] || [ "$(cat "$gen/gen.json")" != "$params" ]; then
    python3 "$here/gen.py" --out "$gen" --lines "$lines" --rules 10000 --programs 500 --seed 1 \
        --generated-share 0.25 --miss-share 0.1
fi

# the rule set, merged as classify.sh does
stage="$scratch/stage"
rm -rf "$stage"
mkdir -p "$stage"
(cd "$top/tests/data/patterndb" && find . -type f \( -name '*.pdb' -o -name '*.xml' \)) | sort |
    while read -r f; do
        ln -s "$top/tests/data/patterndb/${f#./}" "$stage/$(echo "${f#./}" | tr / _).pdb"
    done
[ "$set_" = b ] && ln -s "$gen/big-rules.xml" "$stage/zz_generated.pdb"
rules="$scratch/rules-$set_.xml"
"$PDBTOOL" merge -r -s -G '*.pdb' -D "$stage" -p "$rules"
nrules=$(grep -c '<rule ' "$rules")

profile() { # name corpus
    rm -f "$scratch/callgrind.$1".*
    valgrind --tool=callgrind --cache-sim=$cachesim --dump-after=corr_new --dump-before=corr_expire_all \
        --callgrind-out-file="$scratch/callgrind.$1" \
        "$scratch/corral" match -j 1 -r "$rules" -f "$2" -T '' 2>"$scratch/valgrind.$1.log" ||
        { cat "$scratch/valgrind.$1.log" >&2; exit 1; }
}
total_ir() { # callgrind output file -> its instruction count
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$1"
}
counts() { # callgrind output file -> "event=count,..."
    awk '/^events:/ { for (i = 2; i <= NF; i++) ev[i] = $i }
         /^summary:/ { for (i = 2; i <= NF; i++) printf "%s%s=%s", (i > 2 ? "," : ""), ev[i], $i }' "$1"
}
# FILE.1: start-up, up to the end of corr_new (rules loaded, correlation
# state set up: what precedes the first message); FILE.2: classification,
# up to corr_expire_all (if corral still has it; otherwise the rest of the
# run, tear-down included, and the empty run's share is subtracted); FILE:
# the rest.
part() { # name -> the classification part
    if [ -f "$scratch/callgrind.$1.2" ]; then echo "$scratch/callgrind.$1.2"; else echo "$scratch/callgrind.$1"; fi
}
echo "profiling corral on $lines lines, rule set ($set_): $nrules rules"
profile empty /dev/null
profile full "$gen/corpus.log"
cls=$(part full)

python3 - "$lines" "$(counts "$scratch/callgrind.full.1")" "$(counts "$cls")" \
    "$(counts "$(part empty)")" <<'PY'
import sys
def parse(s):
    return {k: int(v) for k, v in (kv.split("=") for kv in s.split(","))}
n = int(sys.argv[1])
start, cls, empty = (parse(s) for s in sys.argv[2:])
f = "{:,}".format
print("start-up (rules, corr_new):   %15s instructions" % f(start["Ir"]))
print("classification:               %15s instructions for %s messages" % (f(cls["Ir"] - empty["Ir"]), f(n)))
print("                              %15s instructions a message" % "{:,.0f}".format((cls["Ir"] - empty["Ir"]) / n))
if "D1mr" in cls:
    per = lambda *ks: sum(cls[k] - empty[k] for k in ks) / n
    print("                              %15.1f data reads, %.2f D1 misses, %.3f LL misses a message"
          % (per("Dr"), per("D1mr", "D1mw"), per("DLmr", "DLmw")))
PY

# Functions on the stack when a part begins (main, cmd_match, ...) show up
# in callgrind_annotate with the whole part as their cost, even as self
# cost: rows of 99% or more are left out.
annotate() { # title options file
    echo
    echo "== top $ntop functions of $1 =="
    callgrind_annotate $2 --threshold=100 "$3" 2>/dev/null |
        awk -v n="$ntop" '/^-+$/ { sep++; next }
            sep >= 3 && /^ *[0-9]/ {
                if (match($0, /\( *[0-9.]+%\)/) && substr($0, RSTART + 1, RLENGTH - 3) + 0 >= 99) next
                # a function can be listed twice, under two spellings of its file
                fn = $0; sub(/ \[.*$/, "", fn); sub(/^.*:/, "", fn)
                if (seen[fn]++) next
                if (n-- > 0) print
            }'
}
annotate "the classification part, self (exclusive) instructions" --inclusive=no "$cls"
annotate "the classification part, inclusive instructions" --inclusive=yes "$cls"
annotate "start-up (loading the rules, corr_new), inclusive instructions" --inclusive=yes "$scratch/callgrind.full.1"
echo
echo "callgrind files: $cls (classification), $scratch/callgrind.full.1 (start-up); open with kcachegrind or callgrind_annotate"
