#!/bin/sh
# bench/daemon.sh: corrald's end-to-end throughput on loopback against
# syslog-ng 3.38 with db-parser and the same rules, driven by loggen and, when
# it is built, by bench/loadgen (which is not the bottleneck); with openssl,
# also over TLS (corrald's <tls> input beside syslog-ng's TLS sources).  See
# bench/README.md.
#
#   sh bench/daemon.sh [-r RUNS] [-w SECONDS] [-u SECONDS] [-n CONNS] [-W WORKERS]
#                      [-d DIR] [-k] [-q | -t] [-m NOTE]
#
#   -r RUNS     repetitions of each measurement (default 3)
#   -w SECONDS  TCP measuring window (default 10; after 2 s of warm-up)
#   -u SECONDS  length of each UDP step (default 8; the steady part starts
#               3 s in)
#   -n CONNS    TCP connection counts, comma-separated (default 1,4)
#   -W WORKERS  corrald worker counts for the loadgen runs, comma-separated
#               (default 1,2: <engine workers="2"/>, reported only if corrald
#               accepts it)
#   -d DIR      scratch directory (default: a new private one under
#               ${TMPDIR:-/tmp}, removed at the end unless -k)
#   -k          keep the scratch directory (daemon logs, configurations, outputs)
#   -q          quick smoke run: 1 run, 4 s windows, 4 s UDP steps, 1
#               connection (report: daemon-DATE-quick.md)
#   -t          TLS only, with bench/loadgen: corrald's <tls> input beside
#               syslog-ng's syslog(transport("tls")) (RFC 5425) and
#               network(transport("tls")) (lines) sources, plain TCP in the
#               same run for reference, and loadgen's own TCP and TLS
#               ceilings; 1 run, 4 s windows, 1 and 4 connections unless
#               -r/-w/-n come after it (about 2.5 minutes; report:
#               daemon-tls-DATE.md)
#   -m NOTE     a line for the report about the machine (e.g. that it is shared)
#
# The daemons run pinned to CPU 0, loggen and the tools that read counters to
# CPU 1 (as taskset -c does).  Environment: CORRALD, CORRAL (default:
# agent/corrald and tools/corral of this tree, which must be built),
# SYSLOG_NG, SYSLOG_NG_CTL, LOGGEN, PDBTOOL (default: from PATH), CORRAL_LOADGEN
# (default: bench/loadgen beside CORRALD's agent/ directory; without it the
# loadgen runs are left out, with a warning), OPENSSL (default: from PATH;
# without it the TLS rows are left out, with a warning).  The certificate is
# a throwaway self-signed P-256 one for 127.0.0.1, made in the scratch
# directory; both daemons present it.
#
# The report is printed and written to bench/results/daemon-DATE.md (-t:
# daemon-tls-DATE.md; a later run the same day replaces it).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
runs=3
window=10
udp_secs=8
conns=1,4
workers=1,2
scratch=
keep=
quick=
tls_only=
note=

while getopts r:w:u:n:W:d:kqtm:h opt; do
    case $opt in
    r) runs=$OPTARG ;;
    w) window=$OPTARG ;;
    u) udp_secs=$OPTARG ;;
    n) conns=$OPTARG ;;
    W) workers=$OPTARG ;;
    d) scratch=$OPTARG ;;
    k) keep=1 ;;
    q) runs=1 window=4 udp_secs=4 conns=1 quick=-quick ;;
    t) runs=1 window=4 conns=1,4 tls_only=1 ;;
    m) note=$OPTARG ;;
    *) sed -n '2,45s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done

CORRALD=${CORRALD:-$top/agent/corrald}
CORRAL=${CORRAL:-$top/tools/corral}
SYSLOG_NG=${SYSLOG_NG:-$(command -v syslog-ng || echo /usr/sbin/syslog-ng)}
SYSLOG_NG_CTL=${SYSLOG_NG_CTL:-$(command -v syslog-ng-ctl || echo /usr/sbin/syslog-ng-ctl)}
LOGGEN=${LOGGEN:-$(command -v loggen || echo /usr/bin/loggen)}
PDBTOOL=${PDBTOOL:-$(command -v pdbtool || echo /usr/bin/pdbtool)}
CORRAL_LOADGEN=${CORRAL_LOADGEN:-$(dirname "$CORRALD")/../bench/loadgen}
for t in "$CORRALD" "$CORRAL" "$SYSLOG_NG" "$SYSLOG_NG_CTL" "$LOGGEN" "$PDBTOOL"; do
    if [ ! -x "$t" ]; then
        echo "daemon.sh: '$t' is missing: build corral (make) and install" \
             "syslog-ng-core (syslog-ng, syslog-ng-ctl, loggen, pdbtool)" >&2
        exit 1
    fi
done
command -v python3 >/dev/null || { echo "daemon.sh: needs python3" >&2; exit 1; }
OPENSSL=${OPENSSL:-$(command -v openssl || true)}
[ "$(nproc)" -ge 2 ] || echo "daemon.sh: warning: one CPU only: daemon and loggen share it" >&2

if [ -n "$scratch" ]; then
    mkdir -p "$scratch"
    scratch=$(cd "$scratch" && pwd)
else
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/corral-daemon-bench.XXXXXX")
fi
cleanup() {
    if [ -z "$keep" ]; then rm -rf "$scratch"; else echo "scratch kept in $scratch"; fi
}
trap cleanup EXIT

# Private copies of the binaries and the schema: a rebuild of the tree during
# the run does not change what is measured.
cp "$CORRALD" "$scratch/corrald"
cp "$CORRAL" "$scratch/corral"
cp "$top/etc/corrald.xsd" "$scratch/corrald.xsd"
cloadgen=
if [ -x "$CORRAL_LOADGEN" ]; then
    cp "$CORRAL_LOADGEN" "$scratch/loadgen"
    cloadgen=$scratch/loadgen
else
    echo "daemon.sh: warning: $CORRAL_LOADGEN not built (make bench/loadgen): loggen only" >&2
    [ -z "$tls_only" ] || { echo "daemon.sh: -t needs bench/loadgen" >&2; exit 1; }
fi

# TLS: a throwaway self-signed certificate for 127.0.0.1 (EC P-256, as
# tests/integration/tls_lib.sh makes them), its key private (corrald refuses
# a key others may read)
tls_cert= tls_key= tls_desc=
if [ -n "$OPENSSL" ] && [ -n "$cloadgen" ]; then
    tls_cert=$scratch/tls-cert.pem tls_key=$scratch/tls-key.pem
    (umask 077 && "$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$tls_key" -out "$tls_cert" -subj /CN=localhost -days 2 \
        -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >"$scratch/openssl.log" 2>&1) ||
        { echo "daemon.sh: openssl could not make a certificate:" >&2; cat "$scratch/openssl.log" >&2; exit 1; }
    tls_desc="self-signed, EC P-256 (ecdsa-with-SHA256), CN=localhost, made by $("$OPENSSL" version | cut -d' ' -f1-2)"
else
    echo "daemon.sh: warning: no openssl or no bench/loadgen: no TLS rows" >&2
    [ -z "$tls_only" ] || { echo "daemon.sh: -t needs openssl" >&2; exit 1; }
fi
corral_desc="built from $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "$(git -C "$top" status --porcelain -- engine agent 2>/dev/null)" ]; then
    corral_desc="$corral_desc with uncommitted changes to engine/ or agent/"
fi
corral_desc="$corral_desc, sha256 $(sha256sum "$scratch/corrald" | cut -c1-12)"

# The rules: corral's shipped rule library (rules/*.xml), merged into one file
# by pdbtool as syslog-ng needs them; both daemons load that file.
# pdbtool merge takes one --glob, so the files are linked as *.pdb.
rm -rf "$scratch/stage"
mkdir -p "$scratch/stage"
for f in "$top"/rules/*.xml; do
    ln -s "$f" "$scratch/stage/$(basename "$f" .xml).pdb"
done
"$PDBTOOL" merge -r -s -G '*.pdb' -D "$scratch/stage" -p "$scratch/rules.xml"
nrules=$(grep -c '<rule ' "$scratch/rules.xml")
nfiles=$(ls "$scratch/stage" | wc -l)
"$scratch/corral" match -r "$scratch/rules.xml" -P x -M y >/dev/null

# The corpus: loghub's OpenSSH_2k.log with its CRs removed and a <38>
# (auth.info) priority in front, which makes loggen --read-file parse each line
# as RFC 3164 and send it with the current time stamp (its --dont-parse mode,
# which would send the lines verbatim, is 3x slower: a third of the rate).
corpus="$scratch/OpenSSH_2k.log"
awk '{ sub(/\r$/, ""); print "<38>" $0 }' "$top/tests/data/loghub/OpenSSH_2k.log" > "$corpus"
cp "$top/tests/data/loghub/LICENSE" "$scratch/LICENSE.loghub"
# loadgen sends lines verbatim, so its copy gets the current time stamp in
# place of loghub's (corrald's correlation time is the messages' own, clamped
# by its clock): as with loggen, no context times out during a run because
# the replayed stamps jump about.
lcorpus="$scratch/OpenSSH_2k-now.log"
awk -v now="$(LC_ALL=C date +'%b %e %H:%M:%S')" \
    '{ sub(/\r$/, ""); print "<38>" now substr($0, 16) }' \
    "$top/tests/data/loghub/OpenSSH_2k.log" > "$lcorpus"

mkdir -p "$here/results"
if [ -n "$tls_only" ]; then
    out="$here/results/daemon-tls-$(date +%Y-%m-%d).md"
else
    out="$here/results/daemon-$(date +%Y-%m-%d)$quick.md"
fi

# In the background, so that a SIGTERM or SIGINT to this script reaches it: it
# then stops the daemons and loggens it started.
python3 "$here/daemon.py" --scratch "$scratch" --corrald "$scratch/corrald" \
    --corral "$scratch/corral" --schema "$scratch/corrald.xsd" \
    --syslog-ng "$SYSLOG_NG" --syslog-ng-ctl "$SYSLOG_NG_CTL" --loggen "$LOGGEN" \
    --rules "$scratch/rules.xml" --corpus "$corpus" --out "$out" \
    --runs "$runs" --window "$window" --udp-seconds "$udp_secs" --conns "$conns" \
    --cloadgen "$cloadgen" --cloadgen-corpus "$lcorpus" --workers "$workers" \
    --tls-cert "$tls_cert" --tls-key "$tls_key" --tls-desc "$tls_desc" ${tls_only:+--tls-only} \
    --machine-note "$note" \
    --rules-desc "corral's rule library, the $nfiles files rules/*.xml, $nrules rules, merged with pdbtool merge" \
    --corral-desc "$corral_desc" \
    --syslog-ng-version "$("$SYSLOG_NG" --version | head -1)" \
    --loggen-version "$(dpkg-query -W -f '${Package} ${Version}' syslog-ng-core 2>/dev/null || echo '?')" &
py=$!
trap 'kill -TERM $py 2>/dev/null; wait $py; cleanup; trap - EXIT; exit 130' INT TERM
wait $py
