#!/bin/sh
# bench/classify.sh: corral's classification throughput against syslog-ng
# 3.38's db-parser, side by side, on one core.  See bench/README.md.
#
#   sh bench/classify.sh [-n LINES] [-r RUNS] [-d SCRATCH] [-c CPU] [-s SHAPE] [-q]
#
#   -n LINES   corpus size (default 3000000)
#   -r RUNS    runs of each measurement (default 3)
#   -d DIR     scratch directory for the corpus, rules and outputs
#              (default ${TMPDIR:-/tmp}/corral-bench); reused while the
#              generator's parameters stay the same
#   -c CPU     the CPU to pin to (default 0; the corpus feeder uses another)
#   -s SHAPE   mixed (default) or apps: the corpus and rules of
#              bench/parallel.py (gen.py --shape apps: 400 application programs with 25
#              rules each, 40% sshd, 31% application lines; the agreement
#              check also compares the captured values; report:
#              classify-10k-DATE.md)
#   -q         quick smoke run: 200000 lines, 1 run (report: classify-DATE-quick.md)
#
# Environment: CORRAL (default: tools/corral of this tree, which must be
# built), SYSLOG_NG, PDBTOOL (default: from PATH).
#
# The report is printed and written to bench/results/classify-DATE.md (a
# later run the same day replaces it).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
lines=3000000
runs=3
scratch=${TMPDIR:-/tmp}/corral-bench
cpu=0
nrules=10000
nprograms=500
quick=
shape=mixed

while getopts n:r:d:c:s:qh opt; do
    case $opt in
    n) lines=$OPTARG ;;
    r) runs=$OPTARG ;;
    d) scratch=$OPTARG ;;
    c) cpu=$OPTARG ;;
    s) shape=$OPTARG ;;
    q) lines=200000 runs=1 quick=-quick ;;
    *) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
case $shape in
mixed) share=0.25 params_extra= report=classify ;;
apps)
    nprograms=400 share=0.31 params_extra=', "shape": "apps", "sshd_share": 0.4' report=classify-10k
    scratch=$scratch-apps ;;
*) echo "classify.sh: -s mixed or apps" >&2; exit 2 ;;
esac

CORRAL=${CORRAL:-$top/tools/corral}
SYSLOG_NG=${SYSLOG_NG:-$(command -v syslog-ng || echo /usr/sbin/syslog-ng)}
PDBTOOL=${PDBTOOL:-$(command -v pdbtool || true)}
for t in "$CORRAL" "$SYSLOG_NG" "$PDBTOOL"; do
    if [ ! -x "$t" ]; then
        echo "classify.sh: '$t' is missing: build corral (make tools/corral) and" \
             "install syslog-ng-core (syslog-ng, pdbtool)" >&2
        exit 1
    fi
done
command -v python3 >/dev/null || { echo "classify.sh: needs python3" >&2; exit 1; }

mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)

# A private copy of the binary: a rebuild of the tree during the run does not
# change what is measured.
cp "$CORRAL" "$scratch/corral"
corral_desc="built from $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "$(git -C "$top" status --porcelain -- engine tools 2>/dev/null)" ]; then
    corral_desc="$corral_desc with uncommitted changes to engine/ or tools/"
fi
corral_desc="$corral_desc, sha256 $(sha256sum "$scratch/corral" | cut -c1-12)"

# Inputs: generated rules and corpus (kept while the parameters hold).
params="{\"generated_share\": $share, \"lines\": $lines, \"miss_share\": 0.1, \"programs\": $nprograms, \"rules\": $nrules, \"seed\": 1$params_extra}"
gen="$scratch/gen"
if [ ! -f "$gen/gen.json" ] || [ "$(cat "$gen/gen.json")" != "$params" ] || [ ! -s "$gen/corpus.log" ]; then
    echo "generating $lines corpus lines and $nrules rules in $gen"
    python3 "$here/gen.py" --out "$gen" --shape "$shape" --lines "$lines" --rules "$nrules" \
        --programs "$nprograms" --seed 1 --generated-share "$share" --miss-share 0.1
fi
[ "$(cat "$gen/gen.json")" = "$params" ] || { echo "classify.sh: gen.json mismatch" >&2; exit 1; }

# Rule sets, each one file that both load: (a) every public rule file of
# tests/data/patterndb, merged by pdbtool as syslog-ng would have them;
# (b) the same files plus the generated rules.  pdbtool merge takes one
# --glob, so the files (.pdb and .xml) are linked into a staging directory.
stage() {
    rm -rf "$1"
    mkdir -p "$1"
    (cd "$top/tests/data/patterndb" && find . -type f \( -name '*.pdb' -o -name '*.xml' \)) | sort |
        while read -r f; do
            ln -s "$top/tests/data/patterndb/${f#./}" "$1/$(echo "${f#./}" | tr / _).pdb"
        done
}
stage "$scratch/stage-a"
"$PDBTOOL" merge -r -s -G '*.pdb' -D "$scratch/stage-a" -p "$scratch/rules-a.xml"
stage "$scratch/stage-b"
ln -s "$gen/big-rules.xml" "$scratch/stage-b/zz_generated.pdb"
"$PDBTOOL" merge -r -s -G '*.pdb' -D "$scratch/stage-b" -p "$scratch/rules-b.xml"
nfiles=$(ls "$scratch/stage-a" | wc -l)
nrules_a=$(grep -c '<rule ' "$scratch/rules-a.xml")
nrules_b=$(grep -c '<rule ' "$scratch/rules-b.xml")
[ "$nrules_b" -eq $((nrules_a + nrules)) ] || { echo "classify.sh: merge lost rules" >&2; exit 1; }
# both must load them without complaint
"$scratch/corral" match -r "$scratch/rules-b.xml" -P x -M y >/dev/null

# The corpus's loghub lines alone: the effect of the rule count on the same
# messages.
awk '$4 == "LabSZ" || $4 == "combo"' "$gen/corpus.log" > "$scratch/corpus-loghub.log"

if [ "$shape" = apps ]; then
    corpus_desc="bench/gen.py --shape apps, seed 1: 40% loghub OpenSSH_2k lines, 31% lines of $nprograms application programs written for the generated rules (10% of those near misses), 29% loghub Linux_2k lines, with fresh pids, drawn at random; loghub licence notice in $gen/LICENSE.loghub"
    # the captured values too: every name the generated rules and the public sshd rules set
    check_tpl='--check-template ${.classifier.class}|${.classifier.rule_id}|${app.id}|${app.user}|${app.addr}|${app.port}|${app.name}|${app.ms}|${app.detail}|${usracct.username}|${usracct.device}|${usracct.authmethod}\n'
else
    corpus_desc="bench/gen.py, seed 1: 75% loghub OpenSSH_2k and Linux_2k lines with fresh pids, 25% lines written for the generated rules (10% of those near misses), drawn at random; loghub licence notice in $gen/LICENSE.loghub"
    check_tpl=
fi

mkdir -p "$here/results"
out="$here/results/$report-$(date +%Y-%m-%d)$quick.md"
feed=1
[ "$cpu" -ne 0 ] && feed=0
[ "$(nproc)" -gt 1 ] || feed=$cpu

python3 "$here/bench.py" --scratch "$scratch" --corral "$scratch/corral" \
    --syslog-ng "$SYSLOG_NG" --pdbtool "$PDBTOOL" \
    --rules-a "$scratch/rules-a.xml" --rules-b "$scratch/rules-b.xml" \
    --corpus "$gen/corpus.log" --corpus-loghub "$scratch/corpus-loghub.log" --out "$out" --runs "$runs" --cpu "$cpu" --feed-cpu "$feed" \
    --nrules-a "$nrules_a" --nrules-b "$nrules_b" \
    --rules-a-desc "the $nfiles rule files of tests/data/patterndb (.pdb and .xml), $nrules_a rules, merged with pdbtool merge" \
    --rules-b-desc "$nrules generated rules over $nprograms programs (bench/gen.py), $nrules_b rules" \
    $check_tpl --corpus-desc "$corpus_desc" \
    --corral-desc "$corral_desc" \
    --syslog-ng-version "$("$SYSLOG_NG" --version | head -1)"
