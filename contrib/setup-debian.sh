#!/bin/sh
# Installs what corral needs to build and to run its whole test suite on
# Debian 12: the libraries, the build tools, and the real peers the tests
# talk to (syslog-ng's pdbtool, snmptrapd, an SMTP server, logger,
# Alertmanager as the reference for silences and inhibition, nats-server
# for the cluster tests, python3-cryptography to sign their NATS
# credentials), libfaketime, under which corr_diff runs
# pdbtool with a frozen clock, and strace, with which match_heap counts
# corral match's system calls.
set -eu
if [ "$(id -u)" != 0 ]; then
    exec sudo sh "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends \
    build-essential autoconf automake pkg-config clang clang-format \
    libuv1-dev libxml2-dev libsnmp-dev libcurl4-openssl-dev libpcre2-dev check \
    libmicrohttpd-dev libjansson-dev libssl-dev libseccomp-dev libyaml-dev libnats-dev chromium \
    python3 syslog-ng-core snmp snmptrapd snmptt smitools python3-aiosmtpd python3-cryptography \
    openssl curl strace \
    prometheus-alertmanager prometheus nats-server \
    bsdutils procps nftables gcovr libfaketime \
    git dpkg-dev debhelper dh-autoreconf lintian logrotate systemd
