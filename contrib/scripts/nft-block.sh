#!/bin/sh
# nft-block.sh: block an IP address with an nftables set, for the exec executor.
#
# Usage: nft-block.sh [--dry-run] [--family F] [--table T] [--set S] [--set6 S6]
#                     [--timeout T] [--] [ADDRESS]
#
#   <exec name="block" program="/usr/share/corral/scripts/nft-block.sh">
#     <arg>--timeout</arg><arg>1h</arg>
#   </exec>
#
# ADDRESS defaults to CORRAL_USRACCT_DEVICE (the usracct.device value the
# shipped SSH rules set).  When it comes from a template, put "--" before it
# (<arg>--</arg><arg>${src_ip}</arg>): a value like "--dry-run" must not be
# taken for an option.
#
# The address is checked strictly: one IPv4 address in dotted decimal
# (no leading zeros) or one IPv6 address (hex groups, at most one "::",
# optionally a dotted IPv4 tail), nothing else: no prefixes, zones, spaces
# or names.  An IPv4-mapped IPv6 address (::ffff:192.0.2.7, as sshd logs
# them) is blocked as the IPv4 address.  Loopback and unspecified
# addresses (127.0.0.0/8, 0.0.0.0/8, ::1, ::) are refused.  Only checked
# text reaches nft, as separate arguments, never through a shell:
#
#   nft add element FAMILY TABLE SET { ADDRESS timeout TIMEOUT }
#
# Defaults: family inet, table filter, set blocklist (IPv4 addresses) and
# blocklist6 (IPv6), timeout 1h.  An nftables set holds one address type,
# hence two sets.  A matching ruleset (e.g. in /etc/nftables.conf):
#
#   table inet filter {
#     set blocklist  { type ipv4_addr; flags timeout; }
#     set blocklist6 { type ipv6_addr; flags timeout; }
#     chain input {
#       type filter hook input priority 0; policy accept;
#       ip saddr @blocklist drop
#       ip6 saddr @blocklist6 drop
#     }
#   }
#
# An address already in the set keeps its running timeout (nft's "add").
# nft needs CAP_NET_ADMIN: run corrald with it (systemd:
# AmbientCapabilities=CAP_NET_ADMIN) or corrald as root.
#
# --dry-run, or CORRAL_DRY_RUN=1 in the environment, prints the nft
# command instead of running it.  A message value named "dry_run" would
# arrive as CORRAL_DRY_RUN too: list CORRAL_DRY_RUN in the executor's
# env-pass to reserve the name for corrald's own environment.
#
# Exit status: 0 when blocked (or printed); 65 (EX_DATAERR) for an address
# that is not acceptable; 64 for a usage error; 69 if nft is missing;
# 1 if nft fails (its message goes to stderr, corrald's log).  None of
# these is worth retrying.
set -u

usage() {
    echo "usage: nft-block.sh [--dry-run] [--family F] [--table T] [--set S] [--set6 S6] [--timeout T] [--] [ADDRESS]" >&2
    exit 64
}

bad_address() {
    echo "nft-block.sh: refusing to block $(printf '%s' "$1" | head -c 100 | tr -c '[:alnum:].:_-' '?'): $2" >&2
    exit 65
}

# An nft identifier: a letter, then letters, digits, '_' or '-'; 1-32 characters.
check_name() {
    case $2 in
    '' | [!A-Za-z]* | *[!A-Za-z0-9_-]*) echo "nft-block.sh: bad $1 '$2'" >&2; exit 64 ;;
    esac
    [ ${#2} -le 32 ] || { echo "nft-block.sh: $1 too long" >&2; exit 64; }
}

# 0-255 in decimal without leading zeros
octet_ok() {
    case $1 in
    '' | *[!0-9]* | 0?*) return 1 ;;
    esac
    [ ${#1} -le 3 ] && [ "$1" -le 255 ]
}

ipv4_ok() {
    case $1 in
    '' | *[!0-9.]* | .* | *. | *..*) return 1 ;;
    esac
    (
        IFS=.
        set -f
        # shellcheck disable=SC2086 # splitting on dots is the point
        set -- $1
        [ $# -eq 4 ] && octet_ok "$1" && octet_ok "$2" && octet_ok "$3" && octet_ok "$4"
    )
}

ipv6_ok() {
    a=$1
    case $a in
    '' | *[!0-9A-Fa-f:.]*) return 1 ;;
    esac
    [ ${#a} -le 45 ] || return 1
    case $a in
    *.*)
        # a dotted IPv4 tail stands for the last two groups
        ipv4_ok "${a##*:}" || return 1
        case ${a%:*} in *.*) return 1 ;; esac
        a=${a%:*}:0:0
        ;;
    esac
    case $a in
    *::*::* | *:::*) return 1 ;;        # one "::" at most
    :[!:]* | *[!:]: | :) return 1 ;;    # a single colon at either end
    esac
    (
        IFS=:
        set -f
        # shellcheck disable=SC2086 # splitting on colons is the point
        set -- $a
        groups=0
        for g in "$@"; do
            [ -z "$g" ] && continue
            [ ${#g} -le 4 ] || exit 1
            groups=$((groups + 1))
        done
        case $a in
        *::*) [ "$groups" -le 7 ] ;;
        *) [ "$groups" -eq 8 ] ;;
        esac
    )
}

dry_run=no
[ "${CORRAL_DRY_RUN:-}" = 1 ] && dry_run=yes
family=inet
table=filter
set4=blocklist
set6=blocklist6
timeout=1h
while [ $# -gt 0 ]; do
    case $1 in
    --dry-run) dry_run=yes; shift ;;
    --family) [ $# -ge 2 ] || usage; family=$2; shift 2 ;;
    --table) [ $# -ge 2 ] || usage; table=$2; shift 2 ;;
    --set) [ $# -ge 2 ] || usage; set4=$2; shift 2 ;;
    --set6) [ $# -ge 2 ] || usage; set6=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; timeout=$2; shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -le 1 ] || usage
if [ $# -eq 1 ]; then
    addr=$1
else
    addr=${CORRAL_USRACCT_DEVICE-}
fi

case $family in
ip | ip6 | inet | bridge | netdev) ;;
*) echo "nft-block.sh: bad family '$family' (ip, ip6, inet, bridge, netdev)" >&2; exit 64 ;;
esac
check_name table "$table"
check_name set "$set4"
check_name set6 "$set6"
case $timeout in
'' | *[!0-9dhms]* | [!0-9]* | *[0-9]) echo "nft-block.sh: bad timeout '$timeout' (like 90s, 30m, 1h, 7d, 1h30m)" >&2; exit 64 ;;
esac
case $timeout in *[dhms][dhms]*) echo "nft-block.sh: bad timeout '$timeout'" >&2; exit 64 ;; esac

[ -n "$addr" ] || bad_address "" "no address (give one, or set CORRAL_USRACCT_DEVICE)"
[ ${#addr} -le 64 ] || bad_address "$addr" "too long for an address"
if ipv4_ok "$addr"; then
    set=$set4
else
    case $addr in
    ::[fF][fF][fF][fF]:*.*)
        # IPv4-mapped: the IPv4 address is what the firewall sees
        tail=${addr#::[fF][fF][fF][fF]:}
        ipv4_ok "$tail" || bad_address "$addr" "not an IPv4 or IPv6 address"
        addr=$tail
        set=$set4
        ;;
    *)
        ipv6_ok "$addr" || bad_address "$addr" "not an IPv4 or IPv6 address"
        set=$set6
        ;;
    esac
fi
# never the machine itself, nor "nobody": 127.0.0.0/8, 0.0.0.0/8, ::1, ::
case $addr in
127.* | 0.*) bad_address "$addr" "a loopback or unspecified address" ;;
*:*)
    case $addr in *[!0:]*) ;; *) bad_address "$addr" "the unspecified address" ;; esac
    case ${addr%:*} in *[!0:]*) ;; *)
        case ${addr##*:} in 1 | 01 | 001 | 0001) bad_address "$addr" "the loopback address" ;; esac
        ;;
    esac
    ;;
esac

# Every word below was checked above: none can carry anything but its value.
set -- add element "$family" "$table" "$set" "{" "$addr" timeout "$timeout" "}"
if [ "$dry_run" = yes ]; then
    echo "nft $*"
    exit 0
fi
command -v nft >/dev/null 2>&1 || { echo "nft-block.sh: nft is not installed (apt install nftables)" >&2; exit 69; }
if nft "$@"; then
    echo "blocked $addr for $timeout ($family $table $set)"
    exit 0
fi
echo "nft-block.sh: nft $* failed" >&2
exit 1
