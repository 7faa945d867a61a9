#!/bin/sh
# CORRAL-MIB: passes `smilint -l 6` without a single message, loads in
# net-snmp (`snmptranslate -m +CORRAL-MIB -Tp -IR corralAlert`), places every
# object and notification at the OID the SNMP executor sends, and every
# EVENT of contrib/mibs/corral.snmptt names a notification of the MIB.
#
# Debian ships the IETF modules the MIB imports (SNMPv2-SMI, SNMPv2-TC,
# SNMPv2-CONF) only in non-free (snmp-mibs-downloader).  Where the tools
# cannot find them, this test writes minimal stand-ins defining just the
# names CORRAL-MIB imports, in its private directory, and says so; both
# tools check the SMIv2 macros' clauses themselves, so the checks of
# CORRAL-MIB are the same.  Exit 77 if smilint or snmptranslate is missing.
. "$(dirname "$0")/corrald_lib.sh"
need smilint smiquery snmptranslate

MIBDIR=$top_srcdir/contrib/mibs
MIB=$MIBDIR/CORRAL-MIB.txt
[ -f "$MIB" ] || fail "no $MIB"

# net-snmp tools: no user or system snmp.conf, nothing written outside $WORK
mkdir -p "$WORK/snmpconf" "$WORK/persist"
SNMPCONFPATH=$WORK/snmpconf
SNMP_PERSISTENT_DIR=$WORK/persist
export SNMPCONFPATH SNMP_PERSISTENT_DIR

# ---- the IETF base modules, or stand-ins ----
stand=$WORK/stand-ins
mkdir -p "$stand"
write_stand_ins() {
    cat > "$stand/SNMPv2-SMI.txt" <<'EOF'
SNMPv2-SMI DEFINITIONS ::= BEGIN
-- corral test stand-in: only the names CORRAL-MIB imports
org            OBJECT IDENTIFIER ::= { iso 3 }
dod            OBJECT IDENTIFIER ::= { org 6 }
internet       OBJECT IDENTIFIER ::= { dod 1 }
private        OBJECT IDENTIFIER ::= { internet 4 }
enterprises    OBJECT IDENTIFIER ::= { private 1 }
MODULE-IDENTITY MACRO ::= BEGIN END
OBJECT-TYPE MACRO ::= BEGIN END
NOTIFICATION-TYPE MACRO ::= BEGIN END
Unsigned32 ::= [APPLICATION 2] IMPLICIT INTEGER (0..4294967295)
END
EOF
    cat > "$stand/SNMPv2-TC.txt" <<'EOF'
SNMPv2-TC DEFINITIONS ::= BEGIN
-- corral test stand-in: only the names CORRAL-MIB imports
TEXTUAL-CONVENTION MACRO ::= BEGIN END
END
EOF
    cat > "$stand/SNMPv2-CONF.txt" <<'EOF'
SNMPv2-CONF DEFINITIONS ::= BEGIN
-- corral test stand-in: only the names CORRAL-MIB imports
OBJECT-GROUP MACRO ::= BEGIN END
NOTIFICATION-GROUP MACRO ::= BEGIN END
MODULE-COMPLIANCE MACRO ::= BEGIN END
END
EOF
}

smi_path=
if [ -z "$(smiquery module SNMPv2-SMI 2>/dev/null)" ] ||
    [ -z "$(smiquery module SNMPv2-CONF 2>/dev/null)" ]; then
    echo "note: libsmi has no SNMPv2-SMI/TC/CONF here: smilint uses stand-ins"
    write_stand_ins
    smi_path=$stand
fi
snmp_dirs=
if [ "$(MIBS=SNMPv2-SMI snmptranslate -On SNMPv2-SMI::enterprises 2>/dev/null)" != ".1.3.6.1.4.1" ]; then
    echo "note: net-snmp has no SNMPv2-SMI here: snmptranslate uses stand-ins"
    [ -f "$stand/SNMPv2-SMI.txt" ] || write_stand_ins
    snmp_dirs=:$stand
fi

# ---- smilint -l 6: not one message ----
if [ -n "$smi_path" ]; then
    SMIPATH=$smi_path smilint -l 6 "$MIB" > "$WORK/smilint.out" 2>&1
else
    smilint -l 6 "$MIB" > "$WORK/smilint.out" 2>&1
fi
if [ -s "$WORK/smilint.out" ]; then
    cat "$WORK/smilint.out"
    fail "smilint -l 6 complains about CORRAL-MIB"
fi
echo "ok: smilint -l 6 CORRAL-MIB: no messages"

# ---- net-snmp loads it: only our module, so any message is about it ----
snmptranslate -M "$MIBDIR$snmp_dirs" -m CORRAL-MIB -Tp -IR corralMIB > "$WORK/tree.out" \
    2> "$WORK/tree.err" || { cat "$WORK/tree.err"; fail "snmptranslate cannot load CORRAL-MIB"; }
if [ -s "$WORK/tree.err" ]; then
    cat "$WORK/tree.err"
    fail "snmptranslate complains about CORRAL-MIB"
fi
# the receiver's usual command line (the default modules may be missing: only its result counts)
snmptranslate -M "+:$MIBDIR$snmp_dirs" -m +CORRAL-MIB -Tp -IR corralAlert > "$WORK/alert.out" \
    2> /dev/null || fail "snmptranslate -m +CORRAL-MIB -Tp -IR corralAlert failed"
grep -q "corralAlert(1)" "$WORK/alert.out" || fail "corralAlert not in: $(cat "$WORK/alert.out")"
echo "ok: snmptranslate loads CORRAL-MIB"

# ---- the OIDs the executor sends (actions/snmp.c) ----
check_oid() {
    got=$(snmptranslate -M "$MIBDIR$snmp_dirs" -m CORRAL-MIB -On "CORRAL-MIB::$1" 2>&1)
    [ "$got" = "$2" ] || fail "$1 is $got, the executor sends $2"
}
B=.1.3.6.1.4.1.32473
check_oid corralMIB $B
check_oid corralAlert $B.0.1
check_oid corralClear $B.0.2
check_oid corralAlertText.0 $B.1.1.0
check_oid corralAlertHost.0 $B.1.2.0
check_oid corralAlertProgram.0 $B.1.3.0
check_oid corralAlertClass.0 $B.1.4.0
check_oid corralAlertRuleId.0 $B.1.5.0
check_oid corralAlertContextId.0 $B.1.6.0
check_oid corralAlertId.0 $B.1.7.0
check_oid corralAlertSeverity.0 $B.1.8.0
check_oid corralAlertValue.3 $B.1.9.1.2.3
check_oid corralAlertEvidence.0 $B.1.10.0
for e in clear:1 info:2 warning:3 minor:4 major:5 critical:6; do
    grep -q "${e%:*}(${e#*:})" "$WORK/tree.out" || fail "CorralSeverity lacks ${e%:*}(${e#*:})"
done
echo "ok: every object and notification is where the executor sends it"

# ---- the snmptt definitions name the MIB's notifications ----
TT=$MIBDIR/corral.snmptt
[ -f "$TT" ] || fail "no $TT"
n=0
while read -r kw name oid rest; do
    [ "$kw" = EVENT ] || continue
    n=$((n + 1))
    case $name in
        corralAlert*) want=$B.0.1 ;;
        corralClear*) want=$B.0.2 ;;
        *) fail "snmptt EVENT $name is not a CORRAL-MIB notification" ;;
    esac
    [ "$oid" = "$want" ] || fail "snmptt EVENT $name has OID $oid, not $want"
done < "$TT"
[ "$n" -ge 2 ] || fail "corral.snmptt has $n EVENT lines"
echo "ok: corral.snmptt: $n EVENT definitions"
