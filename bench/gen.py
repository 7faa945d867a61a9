#!/usr/bin/env python3
"""Generate the classification benchmark's inputs (see bench/README.md).

    gen.py --out DIR [--shape mixed|apps] [--lines N] [--rules R]
           [--programs P] [--seed S] [--generated-share F] [--miss-share F]
           [--sshd-share F] [--loghub DIR]

writes into DIR:

  big-rules.xml   R generated patterndb rules (version 4) over P programs,
                  each with a pattern of literals and parsers and an example
  corpus.log      N RFC 3164 lines: loghub lines (OpenSSH_2k, Linux_2k, with
                  fresh pids) and, a share F of them, lines written for the
                  generated rules (most match one, a share --miss-share are
                  near misses that should match none), in random order
  LICENSE.loghub  the loghub licence notice, which must stay with the corpus
  gen.json        the parameters, so classify.sh can tell whether DIR is stale

Two shapes.  "mixed" (the default): R rules over P real and made-up
daemons (sshd, kernel, ... included), tails of every parser kind, and
loghub lines (OpenSSH and Linux mixed) for the rest of the corpus.  "apps"
(the corpus of bench/parallel.py and bench/workers.py; defaults 400
programs, 10,000 rules, 31% generated):
application programs such as inventoryd, 25 rules each, every pattern a
literal head with prefixes shared within the program ("[auth] Granted
session ", "[auth] Granted token ", "[auth] Denied session ") and a tail of
ESTRING/NUMBER/IPv4/QSTRING/ANYSTRING parsers whose values all go to app.*
names; the corpus takes --sshd-share (40%) OpenSSH lines and Linux lines
for what is left, e.g.
"inventoryd[23441]: [auth] Granted session #193 (sierra)".

Everything is deterministic for a given seed.  Lines are drawn independently
(uniformly from the loghub lines, uniformly over the generated rules), which
is the same as replicating and shuffling, without holding the corpus in memory.
"""
import argparse
import json
import os
import random
import re
import shutil
import sys

# ---------------------------------------------------------------------------
# vocabulary

# Programs of the loghub samples that also get generated rules, so that (b)
# grows some rule sets the loghub lines are looked up in.
SHARED_PROGRAMS = ["sshd", "kernel", "su", "ftpd", "named", "cups", "udev",
                   "klogind", "logrotate"]

REAL_PROGRAMS = [
    "nginx", "haproxy", "dovecot", "postfix/smtpd", "postfix/qmgr",
    "postfix/cleanup", "postfix/smtp", "crond", "systemd-logind", "dhclient",
    "dnsmasq", "ntpd", "chronyd", "rsyslogd", "auditd", "squid", "slapd",
    "mysqld", "postgres", "redis-server", "memcached", "httpd", "vsftpd",
    "proftpd", "openvpn", "strongswan", "charon", "racoon", "zebra", "bgpd",
    "ospfd", "keepalived", "corosync", "pacemakerd", "snmpd", "smartd",
    "mdadm", "multipathd", "iscsid", "nslcd", "sssd", "winbindd", "smbd",
    "nmbd", "cupsd", "avahi-daemon", "NetworkManager", "wpa_supplicant",
    "containerd", "dockerd", "kubelet", "etcd", "consul", "vault", "nomad",
    "prometheus", "grafana-server", "elasticsearch", "logstash", "kafka",
    "zookeeper", "rabbitmq", "mosquitto", "asterisk", "freeradius", "named-pkcs11",
    "unbound", "pdns_server", "exim", "sendmail", "spamd", "clamd", "amavisd",
    "opendkim", "fail2ban", "ufw", "firewalld", "iptables", "sudo", "polkitd",
    "gdm-session", "lightdm", "xinetd", "tftpd", "in.telnetd", "rpcbind",
    "rpc.mountd", "nfsd", "automount", "puppet-agent", "chef-client",
    "salt-minion", "ansible-pull", "jenkins", "gitlab-workhorse", "sshguard",
]

PREFIXES = ["acme", "corp", "edge", "core", "data", "pay", "auth", "ops",
            "mesh", "grid", "cloud", "net", "store", "media", "search", "mail"]
COMPONENTS = ["billing", "inventory", "orders", "users", "catalog", "ledger",
              "gateway", "session", "ingest", "report", "notify", "audit",
              "cache", "queue", "scheduler", "render", "backup", "sync",
              "index", "metrics", "quota", "license", "policy", "token"]
SUFFIXES = ["api", "worker", "daemon", "agent", "proxy", "svc", "cron", "db",
            "broker", "relay"]

SUBJECTS = ["session", "connection", "job", "request", "worker", "client",
            "transaction", "lease", "backup", "replica", "channel", "tunnel",
            "device", "volume", "certificate", "token", "account", "policy",
            "queue", "message", "upload", "download", "task", "service",
            "module", "peer", "route", "interface", "cluster", "node",
            "snapshot", "import", "export", "handshake", "login", "cache",
            "index", "stream", "socket", "resource"]
VERBS = ["opened", "closed", "started", "stopped", "failed", "accepted",
         "rejected", "expired", "renewed", "created", "deleted", "updated",
         "completed", "aborted", "timed out", "retried", "queued", "dropped",
         "restored", "suspended", "resumed", "registered", "unregistered",
         "authenticated", "denied", "granted", "revoked", "synchronized",
         "migrated", "throttled", "blocked", "unblocked", "reset",
         "initialized", "degraded", "recovered", "scheduled", "cancelled",
         "verified", "rotated", "flushed", "mounted", "unmounted", "attached",
         "detached", "promoted", "demoted", "elected", "paused", "purged"]
CLASSES = ["system", "violation", "error", "security", "network", "storage",
           "application", "audit"]

USERS = ["root", "admin", "alice", "bob", "carol", "dave", "www-data",
         "backup", "nobody", "postgres", "svc_batch", "j.smith", "m.jones"]
STATUSES = ["ok", "failed", "pending", "done", "partial", "retry", "skipped"]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]
REASONS = ["connection reset by peer", "quota exceeded for tenant",
           "invalid credentials supplied", "upstream did not answer in time",
           "checksum mismatch on block", "certificate chain incomplete",
           "disk full while writing journal", "protocol violation detected"]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
         "hotel", "india", "juliet", "kilo", "lima", "mike", "november"]
DOMAINS = ["example.com", "example.net", "corp.example.org", "lab.local"]
IFACES = ["eth0", "eth1", "ens3", "bond0", "wlan0", "br0", "vlan42", "tun0"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
          "Oct", "Nov", "Dec"]

# ---------------------------------------------------------------------------
# value generators: each parser of a pattern comes with one, so that a
# message for the rule can be written

def v_ipv4(r):
    return "%d.%d.%d.%d" % (r.randint(1, 223), r.randint(0, 255),
                            r.randint(0, 255), r.randint(1, 254))

def v_ipvany(r):
    if r.random() < 0.7:
        return v_ipv4(r)
    return "2001:db8:%x::%x:%x" % (r.randint(1, 0xffff), r.randint(1, 0xffff),
                                   r.randint(1, 0xffff))

def v_number(r):
    return str(r.choice([r.randint(0, 9), r.randint(10, 9999),
                         r.randint(10000, 4000000000)]))

def v_float(r):
    return "%d.%03d" % (r.randint(0, 5000), r.randint(0, 999))

def v_user(r):
    return r.choice(USERS)

def v_host(r):
    return "%s%d.%s" % (r.choice(WORDS), r.randint(1, 99), r.choice(DOMAINS))

def v_email(r):
    return "%s@%s" % (r.choice(USERS).replace("_", "."), r.choice(DOMAINS))

def v_word(r):
    return "%s%d" % (r.choice(WORDS), r.randint(1, 999))

def v_path(r):
    return "/%s/%s/%s.%s" % (r.choice(["var", "srv", "opt", "data"]),
                             r.choice(WORDS), v_word(r),
                             r.choice(["log", "db", "json", "tar.gz"]))

def v_mac(r):
    return ":".join("%02x" % r.randint(0, 255) for _ in range(6))

def v_qstring(r):
    return "'%s %s'" % (r.choice(WORDS), r.choice(WORDS))

def v_reason(r):
    return r.choice(REASONS)

# A tail: the part of a pattern after "<subject> <verb> ".  Each element is a
# literal string or (parser, name, arg, value generator).  Every tail starts
# with a literal and only ANYSTRING ends one without a literal after it.
P = lambda kind, name, arg, gen: (kind, name, arg, gen)
TAILS = [
    ["for user ", P("ESTRING", "usracct.username", " ", v_user), "from ",
     P("IPvANY", "usracct.device", "", v_ipvany), " port ",
     P("NUMBER", "net.src_port", "", v_number)],
    ["id=", P("NUMBER", "job.id", "", v_number), " status=",
     P("ESTRING", "job.status", " ", lambda r: r.choice(STATUSES)),
     "duration=", P("FLOAT", "job.duration", "", v_float), "ms"],
    ["object ", P("QSTRING", "obj.name", "'", v_qstring), " on ",
     P("HOSTNAME", "net.host", "", v_host), ": ",
     P("ANYSTRING", "detail", "", v_reason)],
    ["from ", P("EMAIL", "mail.from", "", v_email), " to ",
     P("EMAIL", "mail.to", "", v_email), " size=",
     P("NUMBER", "mail.size", "", v_number)],
    ["on interface ", P("STRING", "net.iface", "", lambda r: r.choice(IFACES)),
     " (", P("IPv4", "net.addr", "", v_ipv4), ")"],
    ["hwaddr ", P("MACADDR", "net.mac", "", v_mac), " lease ",
     P("NUMBER", "net.lease", "", v_number), "s"],
    ["path ", P("ESTRING", "file.path", " ", v_path), "mode ",
     P("NUMBER", "file.mode", "", v_number), " owner ",
     P("ESTRING", "file.owner", ",", v_user), " size ",
     P("NUMBER", "file.size", "", v_number)],
    ["reason: ", P("ANYSTRING", "reason", "", v_reason)],
    ["after ", P("NUMBER", "retries", "", v_number), " attempts (code ",
     P("NUMBER", "code", "", v_number), ")"],
    ["request ", P("ESTRING", "http.method", " ", lambda r: r.choice(METHODS)),
     P("ESTRING", "http.path", " ", v_path), "-> ",
     P("NUMBER", "http.status", "", v_number), " in ",
     P("FLOAT", "http.time", "", v_float), "s"],
    ["by ", P("ESTRING", "usracct.username", " ", v_user), "on host ",
     P("HOSTNAME", "net.host", "", v_host), " tty ",
     P("STRING", "tty", "", v_word)],
    ["name=", P("ESTRING", "obj.name", " ", v_word), "peer=",
     P("IPv4", "net.peer", "", v_ipv4), ":",
     P("NUMBER", "net.peer_port", "", v_number), " bytes=",
     P("NUMBER", "bytes", "", v_number)],
]


# ---------------------------------------------------------------------------
# the "apps" shape: many application programs, most of the rules generated

APP_AREAS = ["auth", "db", "api", "sched", "io", "net", "cache", "store",
             "audit", "sync"]
APP_VERBS = ["Granted", "Denied", "Opened", "Closed", "Started", "Finished",
             "Failed", "Retried", "Expired", "Renewed", "Accepted", "Rejected"]
APP_OBJECTS = ["session", "token", "connection", "job", "lease", "request",
               "transaction", "lock"]
NAMES = ["sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee",
         "zulu"] + WORDS

def v_name(r):
    return r.choice(NAMES)

def v_qname(r):
    return "'%s %s'" % (r.choice(NAMES), r.choice(NAMES))

APP_TAILS = [
    ["#", P("NUMBER", "app.id", "", v_number), " (",
     P("ESTRING", "app.user", ")", v_name)],
    ["#", P("NUMBER", "app.id", "", v_number), ": ",
     P("ANYSTRING", "app.detail", "", v_reason)],
    ["#", P("NUMBER", "app.id", "", v_number), " from ",
     P("IPv4", "app.addr", "", v_ipv4)],
    ["for ", P("ESTRING", "app.user", " ", v_name), "from ",
     P("IPv4", "app.addr", "", v_ipv4), " port ",
     P("NUMBER", "app.port", "", v_number)],
    ["for ", P("ESTRING", "app.user", " ", v_name), "in ",
     P("NUMBER", "app.ms", "", v_number), "ms"],
    ["name=", P("QSTRING", "app.name", "'", v_qname), " by ",
     P("ESTRING", "app.user", " ", v_name), "(",
     P("ANYSTRING", "app.detail", "", v_reason)],
    ["to ", P("IPv4", "app.addr", "", v_ipv4), ":",
     P("NUMBER", "app.port", "", v_number), " after ",
     P("NUMBER", "app.ms", "", v_number), "ms"],
    ["id=", P("NUMBER", "app.id", "", v_number), " user=",
     P("ESTRING", "app.user", " ", v_name), "reason: ",
     P("ANYSTRING", "app.detail", "", v_reason)],
]

# values the check template prints: every capture name of the apps rules
APP_NAMES = ["app.id", "app.user", "app.addr", "app.port", "app.name",
             "app.ms", "app.detail"]


def app_program_names(n):
    names = ["%sd" % c for c in COMPONENTS]
    names += ["%s-%sd" % (p, c) for p in PREFIXES for c in COMPONENTS]
    names += ["%s-%s-%sd" % (p, c, s) for s in SUFFIXES for p in PREFIXES for c in COMPONENTS]
    return names[:n]


def make_app_rules(r, nrules, nprograms):
    """Like make_rules, with heads "[area] Verb object " drawn from 3 areas and
    4 objects per program, so that a program's patterns share prefixes."""
    programs = app_program_names(nprograms)
    rules = []
    per = [nrules // nprograms + (1 if i < nrules % nprograms else 0)
           for i in range(nprograms)]
    for pi, prog in enumerate(programs):
        areas, objects = r.sample(APP_AREAS, 3), r.sample(APP_OBJECTS, 4)
        seen = set()
        while len(seen) < per[pi]:
            key = (r.choice(areas), r.choice(APP_VERBS), r.choice(objects),
                   r.randrange(len(APP_TAILS)))
            if key in seen:
                continue
            seen.add(key)
            head = "[%s] %s %s " % key[:3]
            rid = "app-%04d-%02d" % (pi, len(seen))
            rules.append((prog, rid, r.choice(CLASSES), head, APP_TAILS[key[3]]))
    return programs, rules


def xml_escape(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("'", "&apos;").replace('"', "&quot;"))


def pattern_text(literal_head, tail):
    """The patterndb pattern: literals have '@' doubled."""
    out = [literal_head.replace("@", "@@")]
    for el in tail:
        if isinstance(el, str):
            out.append(el.replace("@", "@@"))
        else:
            kind, name, arg, _ = el
            out.append("@%s:%s:%s@" % (kind, name, arg) if arg else
                       "@%s:%s@" % (kind, name))
    return "".join(out)


def value_text(r, el):
    """A value the parser of el accepts, with the delimiter an ESTRING eats."""
    kind, _, arg, gen = el
    return gen(r) + arg if kind == "ESTRING" else gen(r)


def message_text(r, literal_head, tail):
    out = [literal_head]
    for el in tail:
        out.append(el if isinstance(el, str) else value_text(r, el))
    return "".join(out)


def miss_text(r, literal_head, tail):
    """A near miss: the head matches, the tail breaks on its last literal or
    on a parser that cannot match (a letter where a number must be)."""
    out = [literal_head]
    broke = False
    for el in tail:
        if isinstance(el, str):
            out.append(el)
        elif not broke and el[0] in ("NUMBER", "IPv4", "IPvANY", "FLOAT", "MACADDR"):
            out.append("x" + el[3](r))
            broke = True
        else:
            out.append(value_text(r, el))
    if not broke:
        out.append(" [truncated")  # e.g. ANYSTRING tails still match: fine
    return "".join(out)


def program_names(r, n):
    names = list(SHARED_PROGRAMS) + [p for p in REAL_PROGRAMS if p not in SHARED_PROGRAMS]
    seen = set(names)
    while len(names) < n:
        name = "%s-%s-%s" % (r.choice(PREFIXES), r.choice(COMPONENTS), r.choice(SUFFIXES))
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names[:n]


def make_rules(r, nrules, nprograms):
    """[(program, rule_id, class, literal_head, tail)] with nrules entries,
    spread evenly over nprograms programs; patterns unique per program."""
    programs = program_names(r, nprograms)
    rules = []
    per = [nrules // nprograms + (1 if i < nrules % nprograms else 0)
           for i in range(nprograms)]
    for pi, prog in enumerate(programs):
        subjects = r.sample(SUBJECTS, 6)
        seen = set()
        while len(seen) < per[pi]:
            subj, verb, ti = r.choice(subjects), r.choice(VERBS), r.randrange(len(TAILS))
            if (subj, verb, ti) in seen:
                continue
            seen.add((subj, verb, ti))
            head = "%s %s " % (subj, verb)
            rid = "gen-%04d-%02d" % (pi, len(seen))
            rules.append((prog, rid, r.choice(CLASSES), head, TAILS[ti]))
    return programs, rules


def write_rules(path, r, programs, rules):
    by_prog = {}
    for rule in rules:
        by_prog.setdefault(rule[0], []).append(rule)
    with open(path, "w") as f:
        f.write("<?xml version='1.0' encoding='UTF-8'?>\n")
        f.write("<!-- generated by corral bench/gen.py: %d rules over %d programs -->\n"
                % (len(rules), len(by_prog)))
        f.write("<patterndb version='4' pub_date='2026-01-01'>\n")
        for pi, prog in enumerate(programs):
            if prog not in by_prog:
                continue
            f.write("  <ruleset name='gen-%s' id='gen-ruleset-%04d'>\n" % (xml_escape(prog), pi))
            f.write("    <patterns><pattern>%s</pattern></patterns>\n" % xml_escape(prog))
            f.write("    <rules>\n")
            for _, rid, cls, head, tail in by_prog[prog]:
                f.write("      <rule provider='corral-bench' id='%s' class='%s'>\n" % (rid, cls))
                f.write("        <patterns><pattern>%s</pattern></patterns>\n"
                        % xml_escape(pattern_text(head, tail)))
                f.write("        <examples><example><test_message program='%s'>%s"
                        "</test_message></example></examples>\n"
                        % (xml_escape(prog), xml_escape(message_text(r, head, tail))))
                f.write("      </rule>\n")
            f.write("    </rules>\n  </ruleset>\n")
        f.write("</patterndb>\n")


def read_loghub(loghub, names=("OpenSSH_2k.log", "Linux_2k.log")):
    lines = []
    for name in names:
        with open(os.path.join(loghub, name), encoding="utf-8", errors="surrogateescape") as f:
            lines += [l.rstrip("\n") for l in f if l.strip()]
    # split each line around its "[pid]" so that every copy gets a fresh pid
    hdr = re.compile(r"^(\w{3} +\d+ [\d:]{8} \S+ [^\s\[]+\[)(\d+)(\]:.*)$")
    out = []
    for l in lines:
        m = hdr.match(l)
        out.append((m.group(1), m.group(3)) if m else (l, None))
    return out


def write_corpus(path, r, nlines, loghub_lines, rules, gen_share, miss_share,
                 sshd_lines=None, sshd_share=0.0):
    """sshd_lines: with the apps shape, a share sshd_share of all lines comes
    from them and loghub_lines (Linux) gets the rest."""
    hosts = ["host%02d" % i for i in range(1, 41)]
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        buf = []
        for _ in range(nlines):
            x = r.random()
            if x < gen_share:
                prog, _, _, head, tail = rules[r.randrange(len(rules))]
                msg = (miss_text if r.random() < miss_share else message_text)(r, head, tail)
                buf.append("%s %2d %02d:%02d:%02d %s %s[%d]: %s\n" % (
                    r.choice(MONTHS), r.randint(1, 28), r.randint(0, 23),
                    r.randint(0, 59), r.randint(0, 59), r.choice(hosts), prog,
                    r.randint(100, 65000), msg))
            else:
                pool = sshd_lines if sshd_lines and x < gen_share + sshd_share else loghub_lines
                a, b = pool[r.randrange(len(pool))]
                buf.append(a + "\n" if b is None else "%s%d%s\n" % (a, r.randint(100, 65000), b))
            if len(buf) >= 10000:
                f.write("".join(buf))
                buf = []
        f.write("".join(buf))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shape", choices=("mixed", "apps"), default="mixed")
    ap.add_argument("--lines", type=int, default=3000000)
    ap.add_argument("--rules", type=int, default=10000)
    ap.add_argument("--programs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--generated-share", type=float, default=None)
    ap.add_argument("--miss-share", type=float, default=0.1)
    ap.add_argument("--sshd-share", type=float, default=None)
    ap.add_argument("--loghub", default=os.path.join(here, "..", "tests", "data", "loghub"))
    a = ap.parse_args()
    apps = a.shape == "apps"
    if a.programs is None:
        a.programs = 400 if apps else 500
    if a.generated_share is None:
        a.generated_share = 0.31 if apps else 0.25
    if a.sshd_share is None:
        a.sshd_share = 0.40 if apps else 0.0
    if apps and not (0 < a.programs <= len(app_program_names(10 ** 6))):
        sys.exit("gen.py: --shape apps needs 1 <= --programs <= %d"
                 % len(app_program_names(10 ** 6)))
    if not apps and a.programs < len(SHARED_PROGRAMS) + 1:
        sys.exit("gen.py: need --programs >= %d" % (len(SHARED_PROGRAMS) + 1))
    if a.rules < a.programs:
        sys.exit("gen.py: need --rules >= --programs")
    if a.generated_share + a.sshd_share > 1:
        sys.exit("gen.py: --generated-share plus --sshd-share exceeds 1")

    os.makedirs(a.out, exist_ok=True)
    r = random.Random(a.seed)
    programs, rules = (make_app_rules if apps else make_rules)(r, a.rules, a.programs)
    write_rules(os.path.join(a.out, "big-rules.xml"), random.Random(a.seed + 1), programs, rules)
    if apps:
        write_corpus(os.path.join(a.out, "corpus.log"), random.Random(a.seed + 2), a.lines,
                     read_loghub(a.loghub, ("Linux_2k.log",)), rules, a.generated_share,
                     a.miss_share, read_loghub(a.loghub, ("OpenSSH_2k.log",)), a.sshd_share)
    else:
        write_corpus(os.path.join(a.out, "corpus.log"), random.Random(a.seed + 2), a.lines,
                     read_loghub(a.loghub), rules, a.generated_share, a.miss_share)
    shutil.copyfile(os.path.join(a.loghub, "LICENSE"), os.path.join(a.out, "LICENSE.loghub"))
    with open(os.path.join(a.out, "gen.json"), "w") as f:
        params = {"lines": a.lines, "rules": a.rules, "programs": a.programs,
                  "seed": a.seed, "generated_share": a.generated_share,
                  "miss_share": a.miss_share}
        if apps:
            params.update(shape="apps", sshd_share=a.sshd_share)
        json.dump(params, f, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
