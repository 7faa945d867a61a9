#!/bin/sh
# contrib/scripts/nft-block.sh without touching any firewall: the dry-run
# output (--dry-run and CORRAL_DRY_RUN=1), the nft argv in real mode with a
# stand-in `nft` first in PATH that only records its arguments, and the
# rejection of everything that is not exactly one IPv4 or IPv6 address
# ("1.2.3.4; rm -rf /" and friends), which must never reach nft.
. "$(dirname "$0")/corrald_lib.sh"

BLOCK=$top_srcdir/contrib/scripts/nft-block.sh
[ -x "$BLOCK" ] || fail "no $BLOCK"

# The stand-in nft: one argument per line into $WORK/nft.args
mkdir -p "$WORK/bin"
cat > "$WORK/bin/nft" <<EOF
#!/bin/sh
printf '%s\n' "\$@" > "$WORK/nft.args"
[ -z "\${NFT_FAIL:-}" ] || { echo "Error: No such file or directory" >&2; exit 1; }
EOF
chmod +x "$WORK/bin/nft"
STUB_PATH=$WORK/bin:/usr/sbin:/usr/bin:/sbin:/bin

blk() {
    env -i PATH="$STUB_PATH" "$@"
}

# dry_run WANT ARGS... : the printed command
dry_run() {
    want=$1
    shift
    rm -f "$WORK/nft.args"
    got=$(blk sh "$BLOCK" --dry-run "$@" 2> "$WORK/err.txt") || fail "dry run $*: exit $? ($(cat "$WORK/err.txt"))"
    [ "$got" = "$want" ] || fail "dry run $*: printed '$got', wanted '$want'"
    [ ! -e "$WORK/nft.args" ] || fail "dry run $*: nft ran"
}

dry_run 'nft add element inet filter blocklist { 192.0.2.7 timeout 1h }' 192.0.2.7
dry_run 'nft add element inet filter blocklist6 { 2001:db8::1 timeout 1h }' 2001:db8::1
dry_run 'nft add element inet filter blocklist6 { 2001:DB8:0:0:0:0:0:A timeout 1h }' 2001:DB8:0:0:0:0:0:A
dry_run 'nft add element inet filter blocklist6 { 64:ff9b::192.0.2.7 timeout 1h }' 64:ff9b::192.0.2.7
dry_run 'nft add element inet filter blocklist { 192.0.2.7 timeout 1h }' ::ffff:192.0.2.7
dry_run 'nft add element inet filter blocklist { 255.255.255.254 timeout 1h }' -- 255.255.255.254
dry_run 'nft add element ip fw bad { 198.51.100.1 timeout 30m }' \
    --family ip --table fw --set bad --timeout 30m 198.51.100.1
dry_run 'nft add element ip6 fw bad6 { fe80::1 timeout 1d12h }' \
    --family ip6 --table fw --set6 bad6 --timeout 1d12h fe80::1

# the address from the environment; CORRAL_DRY_RUN=1
got=$(blk CORRAL_DRY_RUN=1 CORRAL_USRACCT_DEVICE=203.0.113.9 sh "$BLOCK") || fail "CORRAL_DRY_RUN: exit $?"
[ "$got" = 'nft add element inet filter blocklist { 203.0.113.9 timeout 1h }' ] ||
    fail "CORRAL_DRY_RUN: printed '$got'"
[ ! -e "$WORK/nft.args" ] || fail "CORRAL_DRY_RUN: nft ran"

# ---- real mode, with the stand-in ----
out=$(blk CORRAL_USRACCT_DEVICE=203.0.113.9 sh "$BLOCK") || fail "real mode: exit $?"
printf 'add\nelement\ninet\nfilter\nblocklist\n{\n203.0.113.9\ntimeout\n1h\n}\n' > "$WORK/want.args"
cmp -s "$WORK/nft.args" "$WORK/want.args" || fail "real mode: nft got $(cat "$WORK/nft.args")"
echo "$out" | grep -q 'blocked 203.0.113.9 for 1h' || fail "real mode: said '$out'"
# an argument wins over the environment
blk CORRAL_USRACCT_DEVICE=203.0.113.9 sh "$BLOCK" -- 2001:db8::7 > /dev/null || fail "argument: exit $?"
grep -qx '2001:db8::7' "$WORK/nft.args" || fail "argument: nft got $(cat "$WORK/nft.args")"
grep -qx 'blocklist6' "$WORK/nft.args" || fail "argument: not the IPv6 set"
# nft fails: exit 1 with its message
blk NFT_FAIL=1 sh "$BLOCK" 192.0.2.7 > /dev/null 2> "$WORK/err.txt"
[ $? -eq 1 ] || fail "nft failing: not exit 1"
grep -q 'No such file' "$WORK/err.txt" || fail "nft failing: its message is lost"
# no nft at all: 69
env -i PATH=/nonexistent /bin/sh "$BLOCK" 192.0.2.7 > /dev/null 2>&1
[ $? -eq 69 ] || fail "without nft: not exit 69"

# ---- rejected addresses: exit 65, nft never runs, not even in dry-run ----
reject() {
    for mode in --dry-run real; do
        rm -f "$WORK/nft.args"
        if [ "$mode" = real ]; then
            blk sh "$BLOCK" -- "$1" > "$WORK/out.txt" 2> "$WORK/err.txt"
        else
            blk sh "$BLOCK" --dry-run -- "$1" > "$WORK/out.txt" 2> "$WORK/err.txt"
        fi
        rc=$?
        [ "$rc" -eq 65 ] || fail "'$1' ($mode): exit $rc, wanted 65 ($(cat "$WORK/out.txt"))"
        [ ! -e "$WORK/nft.args" ] || fail "'$1' ($mode): reached nft"
        [ ! -s "$WORK/out.txt" ] || fail "'$1' ($mode): printed $(cat "$WORK/out.txt")"
        grep -q 'refusing to block' "$WORK/err.txt" || fail "'$1' ($mode): no reason given"
    done
}
reject '1.2.3.4; rm -rf /'
reject '1.2.3.4 '
reject ' 1.2.3.4'
reject "$(printf '1.2.3.4\n5.6.7.8')"
reject '1.2.3.4}'
reject '1.2.3.4 timeout 100d'
reject '$(id)'
reject '`id`'
reject '1.2.3.4|id'
reject '1.2.3.256'
reject '01.2.3.4'
reject '1.2.3'
reject '1.2.3.4.5'
reject '1..2.3'
reject '.1.2.3'
reject '1.2.3.4.'
reject '192.0.2.0/24'
reject '2001:db8::/32'
reject 'fe80::1%eth0'
reject '2001:db8::1::2'
reject '12345::1'
reject ':::1'
reject ':1:2:3:4:5:6:7'
reject '1:2:3:4:5:6:7:'
reject '1:2:3:4:5:6:7:8:9'
reject '1:2:3:4:5:6:7'
reject 'g::1'
reject '::ffff:1.2.3.999'
reject '1.2.3.4::1'
reject 'example.com'
reject '--dry-run'
reject '-1'
reject ''
reject '127.0.0.1'
reject '127.1.2.3'
reject '0.0.0.0'
reject '::1'
reject '0:0:0:0:0:0:0:1'
reject '::'
reject '::ffff:127.0.0.1'
reject "$(head -c 300 /dev/zero | tr '\0' 1)"
# no address at all
rm -f "$WORK/nft.args"
blk sh "$BLOCK" > /dev/null 2>&1
[ $? -eq 65 ] || fail "no address: not 65"
[ ! -e "$WORK/nft.args" ] || fail "no address: reached nft"

# ---- bad options: exit 64 ----
usage_error() {
    blk sh "$BLOCK" --dry-run "$@" > /dev/null 2>&1
    rc=$?
    [ "$rc" -eq 64 ] || fail "$*: exit $rc, wanted 64"
}
usage_error --table 'filter;flush ruleset' 192.0.2.7
usage_error --table '' 192.0.2.7
usage_error --set 'a b' 192.0.2.7
usage_error --set6 '{x}' 192.0.2.7
usage_error --family 'inet filter' 192.0.2.7
usage_error --timeout forever 192.0.2.7
usage_error --timeout 10 192.0.2.7
usage_error --timeout '1h;' 192.0.2.7
usage_error --frobnicate 192.0.2.7
usage_error 192.0.2.7 198.51.100.1
usage_error --table

echo "nft-block.sh: all checks passed"
