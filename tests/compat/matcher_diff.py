#!/usr/bin/env python3
"""
matcher_diff: differential test of corral's pattern matcher against
syslog-ng 3.38's pdbtool.

It generates (from a seed, reproducibly) pattern databases whose rules share
prefixes and put several parsers at the same radix node, plus messages
derived from those patterns with edge-case values and random mutations.
Every message is classified by both `corral match` and `pdbtool match`; the
rule id, the class and every capture name of the database must agree.

Messages go through `-f` (syslog lines, one run per database) when the tool
parses the line back into the intended PROGRAM and MESSAGE; otherwise (line
breaks, very long messages, a tool whose syslog parser disagrees) through
`-P`/`-M`, one run per message.  pdbtool refuses -M arguments that are not
UTF-8: such cases are counted as skipped.

Not generated, because syslog-ng's answer there depends on memory outside the
message (corral gives a fixed answer instead, see engine/parsers.c):
  - a parser that may consume the message's terminating NUL (SET, OPTIONALSET,
    EMAIL with skip characters, ESTRING with an empty stop) directly followed
    by a parser other than ANYSTRING or OPTIONALSET;
  - a message starting with '@' (an EMAIL at the root would look at the byte
    before the message);
  - a bad regular expression (pdbtool keeps the node and crashes on it).

Exit status: 0 when everything agrees, 1 on any mismatch (the differing cases
are printed), 2 on usage or tool errors.
"""

import argparse
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading

ENC = "latin-1"  # bytes <-> str one to one


def u8(s):
    """Non-ASCII text as its UTF-8 bytes, one str character per byte."""
    return s.encode("utf-8").decode(ENC)


E_ACUTE = u8("\u00e9")

# ---------------------------------------------------------------- parsers


class P:
    """A parser reference @TYPE:name:arg@ in a pattern."""

    def __init__(self, typ, name=None, arg=None):
        self.typ = typ
        self.name = name
        self.arg = arg

    def spec(self):
        s = "@" + self.typ
        if self.name is not None or self.arg is not None:
            s += ":" + (self.name or "")
        if self.arg is not None:
            s += ":" + self.arg
        return s + "@"

    def base_type(self):
        if self.typ.startswith("QSTRING"):
            return "QSTRING"
        return "FLOAT" if self.typ == "DOUBLE" else self.typ


class Lit:
    """Literal pattern text (a '@' in it is written '@@' in the pattern)."""

    def __init__(self, text):
        self.text = text

    def spec(self):
        return self.text.replace("@", "@@")


ESTRING_STOPS = [" ", ",", ":", ";", "]", "x", "/", ", ", "--", "::", "ab", " from ",
                 "\n", "", "", u8("\u00ef")]
QSTRING_QUOTES = ["", "abc", '"', "'", "<>", "[]", "()", "{}", "''", "|", u8("\u00ab\u00bb")]
STRING_EXTRAS = [None, None, None, "", ".-_", ":/", ".", "-", " ", E_ACUTE, ":.", "_", "%$#"]
SET_CHARS = ["", "abc", "0123456789", " \t", ".-", "xyz:", "a-", "01", E_ACUTE, ":."]
EMAIL_SKIPS = [None, None, "", "<>", "[]", "\"'", "<>()", "<", ">."]
LLADDR_ARGS = [None, None, "6", "8", "20", "2", "1", "0", "3x", "", "17", "4294967297",
               "2147483648", "1431655765"]
PCRES = ["", r"x?", r"[a-z]+", r"\d+(\.\d+)?", r"a|ab", r"x*", r"[A-Z][a-z]*", r"(?:ab)+c?",
         r".{3}", r"[^ ]*", r"\w+", r"[0-9a-f]{2}(:[0-9a-f]{2})*", r"(?i)abc", r"a.c", r"[a-z]+?"]

PARSER_WEIGHTS = [
    ("STRING", 8), ("ESTRING", 8), ("QSTRING", 5), ("NUMBER", 8), ("FLOAT", 6), ("IPv4", 6),
    ("IPv6", 7), ("IPvANY", 5), ("MACADDR", 4), ("LLADDR", 4), ("EMAIL", 5), ("HOSTNAME", 5),
    ("ANYSTRING", 3), ("SET", 5), ("OPTIONALSET", 5), ("NLSTRING", 3), ("PCRE", 4),
    ("DOUBLE", 1), ("QSTRINGX", 1),
]


def weighted(rng, pairs):
    total = sum(w for _, w in pairs)
    x = rng.uniform(0, total)
    for v, w in pairs:
        x -= w
        if x <= 0:
            return v
    return pairs[-1][0]


def gen_parser(rng, name):
    typ = weighted(rng, PARSER_WEIGHTS)
    arg = None
    if typ == "STRING":
        arg = rng.choice(STRING_EXTRAS)
    elif typ == "ESTRING":
        arg = rng.choice(ESTRING_STOPS)
    elif typ.startswith("QSTRING"):
        arg = rng.choice(QSTRING_QUOTES)
    elif typ in ("SET", "OPTIONALSET"):
        arg = rng.choice(SET_CHARS)
    elif typ == "EMAIL":
        arg = rng.choice(EMAIL_SKIPS)
    elif typ == "LLADDR":
        arg = rng.choice(LLADDR_ARGS)
    elif typ == "PCRE":
        arg = rng.choice(PCRES)
    elif typ not in ("NLSTRING",) and rng.random() < 0.05:
        arg = rng.choice(["", "x", "1:2"])  # ignored, but makes it a different node
    if rng.random() < 0.12:
        name = None  # unnamed: matches without storing
    return P(typ, name, arg)


# ---------------------------------------------------------------- values

def rand_word(rng, alphabet="abcdefghijklmnopqrstuvwxyz0123456789", lo=1, hi=8):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def hexs(rng, lo=1, hi=4):
    return rand_word(rng, "0123456789abcdefABCDEF", lo, hi)


def ipv4(rng):
    def octet():
        r = rng.random()
        if r < 0.1:
            return str(rng.choice([0, 255, 256, 999, 1000, 300]))
        if r < 0.15:
            return "0" + str(rng.randint(0, 99))
        return str(rng.randint(0, 255))
    return ".".join(octet() for _ in range(4))


def ipv6(rng):
    r = rng.random()
    groups = [hexs(rng, 1, 4) for _ in range(8)]
    if r < 0.2:
        return ":".join(groups)
    if r < 0.45:
        k = rng.randint(0, 7)
        j = rng.randint(k, 7)
        return ":".join(groups[:k]) + "::" + ":".join(groups[j + 1:])
    if r < 0.6:
        return rng.choice(["::ffff:", "::", "64:ff9b::", "1:2:3:4:5:6:"]) + ipv4(rng)
    return rng.choice(["::", "::1", "fe80::1", "fe80::1%eth0", "::ffff:1.2.3.4", "2001:db8::1:443",
                       "1:2:3:4:5:6:7:8:9", "1::2::3", "::1.", "::1:", "1:2:3:4:5:6:7::",
                       "abcd::12345", "1:2:3:4:5:6:1.2.3.4", "::1.2.3", "::1.2.3.4.5",
                       "::fff.1.2.3", "::256.1.1.1", "1:2", "1:2:3", "a:b:c:d:e:f:0:1",
                       "::ffff:1.2.3.4:80", "fe80::", "fe80:::1", ":::", "::598.1.2.3",
                       "::597.1.2.3", "::255.1.2.3", "1::", "1.2.3.4", "::g", "ffff::ffff",
                       "10000::1", "::1.2.3.4.", "1:2:3:4:5:6:7:8.", "0:0:0:0:0:0:0:0",
                       "1:2:3:4:5:6:7:1.2.3.4", "::a.b", "1::2:3.4.5.6"])


def gen_value(rng, p):
    """A value for parser p, valid most of the time, edge cases often."""
    t = p.base_type()
    r = rng.random()
    if t == "STRING":
        extra = p.arg or ""
        if r < 0.1:
            return ""
        alphabet = "abcXYZ0189" + extra
        return rand_word(rng, alphabet, 1, 10)
    if t == "ESTRING":
        stop = p.arg or ""
        if r < 0.15:
            body = ""
        elif r < 0.25 and len(stop) > 1:
            body = rand_word(rng, lo=1, hi=4) + stop[:-1] + rand_word(rng, lo=1, hi=3)
        else:
            body = rand_word(rng, "abc xyz,:019", 1, 10)
        if stop and stop in body:
            body = body.replace(stop, "")
        return body + stop if rng.random() < 0.9 else body
    if t == "QSTRING":
        q = p.arg or '"'
        o, c = (q[0], q[1]) if len(q) == 2 else (q[0], q[0])
        if r < 0.15:
            return o + c
        if r < 0.25:
            return o + rand_word(rng, lo=1, hi=5)  # unterminated
        if r < 0.32:
            return o + "a" + o + "b" + c + "d" + c  # nested
        body = rand_word(rng, "abc xyz019,.", 1, 8).replace(c, "")
        return o + body + c
    if t == "NUMBER":
        if r < 0.45:
            return rng.choice(["", "-"]) + str(rng.randint(0, 10 ** rng.randint(1, 12)))
        if r < 0.6:
            return rng.choice(["0x", "0X"]) + hexs(rng, 0, 8)
        return rng.choice(["-", "+5", "-0x5", "0x", "0X", "007", "12.5", "1e5", "0xg", "-x",
                           "99999999999999999999", "--1", "0", "-0", "0x1.5", "1,000", "x1",
                           "0xfffffffffffffffff"])
    if t == "FLOAT":
        if r < 0.4:
            return (rng.choice(["", "-"]) + str(rng.randint(0, 10000)) + "." +
                    str(rng.randint(0, 999)))
        return rng.choice(["1.5", ".5", "3.", "-", "-.", ".", "1e5", "1e-5", "2e+5", "1.2.3", "e5",
                           "1E", "-1.5e-3", "0", "12", "-.e", "1.e5", "1.5E+3", "1ee5", "1e5.5",
                           "-0.0", "+1.5", "inf", "1e", ".e1", "5-"])
    if t == "IPv4":
        if r < 0.6:
            return ipv4(rng)
        return rng.choice(["1.2.3", "1.2.3.4.5", "1.2.3.4.", "1..2.3", "01.02.03.004",
                           "255.255.255.255", "256.1.1.1", "1.2.3.256", ".1.2.3.4", "1.2.3.4:80",
                           "1.2.3.4a", "999999999999.1.1.1", "1.2.3.4.5.6", "0.0.0.0"])
    if t == "IPv6":
        return ipv6(rng)
    if t == "IPvANY":
        return ipv4(rng) if r < 0.4 else ipv6(rng)
    if t in ("MACADDR", "LLADDR"):
        if t == "LLADDR" and p.arg and p.arg.isdigit() and int(p.arg) < 30 and r < 0.5:
            n = max(1, int(p.arg) + rng.randint(-1, 1))
        else:
            n = rng.choice([1, 2, 3, 5, 6, 6, 6, 7, 8, 20, 21])
        v = ":".join(hexs(rng, 2, 2) for _ in range(n))
        r2 = rng.random()
        if r2 < 0.1:
            v += ":"
        elif r2 < 0.15:
            v = v.replace(":", "-")
        elif r2 < 0.2:
            v = v[:-1]
        elif r2 < 0.25:
            v = v[:-1] + "g"
        return v
    if t == "EMAIL":
        skip = p.arg or ""
        core = rng.choice(["a@b.c", "a.b@c.d", ".a@b.c", "a.@b.c", "a@b", "a@b.", "a@b.c.",
                           "a+b@c-d.e", "@b.c", "x_y%z@h.example.com", "a..b@c.d", "a@-b.c",
                           "a@b..c", "'q'@w.e", "a@b.c-", "a@@b.c", "a{b}@c.d"])
        if skip and r < 0.6:
            core = skip[0] + core + skip[-1]
        return core
    if t == "HOSTNAME":
        return rng.choice(["a.b", "a", "a.b.", "a-b.c-d", "-a.b", "a..b", "a.b.c.d.e",
                           "host.example.com", "x1.y2", "a_b.c", "a.b-", "1.2.3.4", "a-.b", ".a.b"])
    if t == "ANYSTRING":
        return "" if r < 0.1 else rand_word(rng, "abc xyz019,.:@", 1, 12)
    if t in ("SET", "OPTIONALSET"):
        if r < 0.15:
            return ""
        return rand_word(rng, p.arg or "a", 1, 6)
    if t == "NLSTRING":
        body = "" if r < 0.15 else rand_word(rng, "abc xyz019", 1, 8)
        return body + rng.choice(["\n", "\n", "\r\n", "", "\r"])
    if t == "PCRE":
        return rng.choice(["abc", "ABc", "123", "1.5", "ab", "abab", "ababc", "xxx", "", "a-c",
                           "aXc", "12:ab:cd", "Hello", "zz top", E_ACUTE])
    return "?"


FUZZ_ALPHABETS = {
    "STRING": "aZ09 .-_:/%$#@\t",
    "ESTRING": "ab x,:;/-]\n",
    "QSTRING": "\"'<>[](){}|ab ",
    "NUMBER": "0123456789xXaf-+.e ",
    "FLOAT": "0123456789.-+eE ",
    "IPv4": "0123456789.:a",
    "IPv6": "0123456789abcdefABCDEFg:.%[] ",
    "IPvANY": "0123456789abcdef:. ",
    "MACADDR": "0123456789abcdefABCDEF:-g.",
    "LLADDR": "0123456789abcdefABCDEF:-g.",
    "EMAIL": "ab.@-+_<>()[]'\"c1",
    "HOSTNAME": "ab-.1_:",
    "ANYSTRING": "ab .",
    "SET": "abcxyz0123456789 \t.-:",
    "OPTIONALSET": "abcxyz0123456789 \t.-:",
    "NLSTRING": "ab \r\n",
    "PCRE": "abcABC0123 .:-x",
}


def fuzz_value(rng, p):
    """A short random string over the bytes that matter to parser p."""
    return rand_word(rng, FUZZ_ALPHABETS[p.base_type()], 0, 14)


# ---------------------------------------------------------------- patterns

LITERAL_PIECES = [" ", " ", " ", ",", ":", ".", "-", "/", "[", "]", "(", ")", "'", '"', "x",
                  "user ", " from ", " port ", "id", "a", "ab", "0", "1", "@", "\n", "\t", ": ",
                  "; ", E_ACUTE, "::", "..", "0x", "e", "<", ">", "&", "\r\n", "\r"]


def gen_literal(rng):
    n = rng.randint(1, 3)
    return "".join(rng.choice(LITERAL_PIECES) for _ in range(n))


def gen_tokens(rng, names, nparsers):
    toks = []
    if rng.random() < 0.85:
        toks.append(Lit(rand_word(rng, "abcdefgh", 1, 4) + rng.choice([" ", ":", "", "-"])))
    for _ in range(nparsers):
        toks.append(gen_parser(rng, rng.choice(names)))
        if rng.random() < 0.75:
            toks.append(Lit(gen_literal(rng)))
    return toks


def merge_tokens(toks):
    """Joins adjacent literals, so a pattern's text is canonical."""
    out = []
    for t in toks:
        if isinstance(t, Lit) and out and isinstance(out[-1], Lit):
            out[-1] = Lit(out[-1].text + t.text)
        elif isinstance(t, Lit) and not t.text:
            continue
        else:
            out.append(t)
    return defined_tokens(out)


def may_pass_end(t):
    """
    True for a parser that, in syslog-ng, can consume the message's terminating
    NUL (see parsers.c).  The parser after it then reads memory past the
    message: only ANYSTRING and OPTIONALSET give a defined result there.
    """
    return isinstance(t, P) and (
        t.typ in ("SET", "OPTIONALSET") or (t.typ == "EMAIL" and t.arg is not None) or
        (t.typ == "ESTRING" and t.arg == ""))


def defined_tokens(toks):
    """Puts a literal between a may_pass_end() parser and one whose result would be undefined."""
    out = []
    for t in toks:
        if (out and may_pass_end(out[-1]) and isinstance(t, P) and
                t.typ not in ("ANYSTRING", "OPTIONALSET")):
            out.append(Lit(" "))
        out.append(t)
    return out


def pattern_text(toks):
    return "".join(t.spec() for t in toks)


def render_message(rng, toks):
    out = []
    for t in toks:
        out.append(t.text if isinstance(t, Lit) else gen_value(rng, t))
    return "".join(out)


MUTATION_CHARS = " .:-x0a9@\"'<>,/\n\r\tEe+_Ff[]"


def mutate(rng, msg, samples):
    kind = rng.randrange(9)
    pos = rng.randint(0, len(msg))
    if kind == 0 and msg:
        return msg[:pos] + msg[pos + 1:]
    if kind == 1:
        return msg[:pos] + rng.choice(MUTATION_CHARS) + msg[pos:]
    if kind == 2 and msg:
        pos = min(pos, len(msg) - 1)
        return msg[:pos] + rng.choice(MUTATION_CHARS) + msg[pos + 1:]
    if kind == 3:
        return msg[:pos]
    if kind == 4:
        return msg + rng.choice([" ", " extra", ".", ":", "\n", "x", "1", ":80", ".5", "\r\n"])
    if kind == 5 and samples:
        return msg[:pos] + rng.choice(samples) + msg[pos:]
    if kind == 6:
        return msg.replace("\n", "\r\n", 1)
    if kind == 7:
        # Past 65535 bytes syslog-ng's 16-bit capture offsets and lengths wrap;
        # corral deliberately keeps captures whole, so messages stay below that.
        return msg + "a" * rng.choice([100, 300, 1000, 20000])
    return msg


# ---------------------------------------------------------------- groups

def xml_escape(s):
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return "".join("&#%d;" % ord(c) if c in "\n\r\t" else c for c in s)


class Group:
    def __init__(self, gid):
        self.gid = gid
        self.rulesets = []  # (name, [program patterns], [(rule id, class, [patterns])])
        self.names = set()
        self.cases = []  # (program, message)
        self.nmatched = 0  # cases pdbtool found a rule for

    def xml(self):
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<patterndb version="4" pub_date="2024-01-01">']
        for name, progs, rules in self.rulesets:
            out.append(' <ruleset name="%s" id="%s">' % (name, name))
            if progs:
                out.append("  <patterns>")
                for p in progs:
                    out.append("   <pattern>%s</pattern>" % xml_escape(p))
                out.append("  </patterns>")
            out.append("  <rules>")
            for rid, cls, pats in rules:
                c = ' class="%s"' % cls if cls else ""
                out.append('   <rule provider="md" id="%s"%s><patterns>' % (rid, c))
                for p in pats:
                    out.append("    <pattern>%s</pattern>" % xml_escape(p))
                out.append("   </patterns></rule>")
            out.append("  </rules>")
            out.append(" </ruleset>")
        out.append("</patterndb>")
        return "\n".join(out) + "\n"


PROGRAM_PATTERNS = [
    ([Lit("prog")], ["prog", "prog", "progx", "pro", "prog2"]),
    ([Lit("app"), P("NUMBER", "pnum")], ["app1", "app-5", "app0x1f", "app", "appx", "app12x"]),
    ([Lit("svc-"), P("STRING", "pname", "._")], ["svc-a", "svc-a.b", "svc-", "svc-x_1"]),
    ([Lit("ssh")], ["ssh", "sshd", "ssh2"]),
    ([P("ESTRING", "pe", "-"), Lit("d")], ["abc-d", "-d", "x-dd", "xd"]),
    ([Lit("n"), P("IPv4", "pip")], ["n1.2.3.4", "n1.2.3", "n1.2.3.4x"]),
    ([Lit("q"), P("SET", "pset", "ab")], ["qab", "qa", "qabx", "q"]),
]


def literal_cuts(text):
    """Where a literal may be split without breaking a UTF-8 sequence (the XML must stay valid)."""
    return [i for i in range(1, len(text)) if not 0x80 <= ord(text[i]) < 0xc0]


# Parser references that do not load (a bad regular expression is left out:
# pdbtool keeps such a node and crashes when it reaches it).
BAD_PARSERS = ["@", " @", "@FOO:x@", "@ESTRING:x@", "@SET:s@", "@NLSTRING:n:x@", "@QSTRING:q@",
               "@PCRE:p@", "@:x@", "@string@"]

PROBE_SUFFIXES = ["", " ", ".", ":", "x", "0", "-", "a", "e", "::", ". ", ": ", "@", "\n", ">"]


def build_probe_group(rng, gid, nmsgs):
    """
    One parser at one node with many continuations, among them an ANYSTRING
    that shows exactly how much the parser consumed.
    """
    g = Group(gid)
    p = gen_parser(rng, "v")
    if p.name is None:
        p.name = "v"
    rest = P("ANYSTRING", "rest")
    pats = [[Lit("k "), p], [Lit("k "), p, rest]]
    for suffix in rng.sample(PROBE_SUFFIXES, 5):
        if suffix:
            pats.append([Lit("k "), p, Lit(suffix)])
            if rng.random() < 0.5:
                pats.append([Lit("k "), p, Lit(suffix), rest])
    if rng.random() < 0.5:
        other = gen_parser(rng, "w")
        pats.insert(rng.randrange(len(pats) + 1), [Lit("k "), other, rest])
    rules = []
    for i, toks in enumerate(pats):
        rules.append(("g%d.r%d" % (gid, i), None, [pattern_text(merge_tokens(toks))]))
    g.rulesets.append(("g%d.gen" % gid, [], rules))
    g.names.update(["v", "w", "rest"])
    others = [P(t, None, None) for t in ("NUMBER", "FLOAT", "IPv4", "IPv6", "HOSTNAME")]
    for _ in range(nmsgs):
        r = rng.random()
        if r < 0.5:
            val = gen_value(rng, p)
        elif r < 0.85:
            val = fuzz_value(rng, p)
        else:
            val = gen_value(rng, rng.choice(others))
        msg = "k " + val + rng.choice(PROBE_SUFFIXES + ["", "", "", " tail"])
        g.cases.append(("generic", sanitize_message(msg)))
    return g


def sanitize_message(msg):
    msg = msg.replace("\0", "")
    if msg.startswith("@"):
        # An EMAIL at the root would look at the byte before the message (see
        # parsers.c): undefined in syslog-ng.
        msg = "x" + msg
    if "\n" in msg:
        # It will go through -M, and pdbtool refuses arguments that are not UTF-8.
        msg = msg.encode(ENC).decode("utf-8", "ignore").encode("utf-8").decode(ENC)
    return msg


def build_group(rng, gid, nrules, nmsgs):
    if rng.random() < 0.3:
        return build_probe_group(rng, gid, nmsgs)
    g = Group(gid)
    names = ["v%d" % i for i in range(rng.randint(2, 6))]
    if rng.random() < 0.15:
        names.append(".dot.%d" % gid)
    g.names.update(names)

    # A base pattern; the others branch off it so they share nodes.
    nparsers = rng.randint(1, 4)
    base = merge_tokens(gen_tokens(rng, names, nparsers))
    patterns = [base]
    for _ in range(nrules - 1):
        src = rng.choice(patterns)
        r = rng.random()
        k = rng.randint(0, len(src))
        if r < 0.15:
            new = list(src)  # duplicate pattern: the first rule keeps it
        elif r < 0.3:
            new = src[:max(1, k)]  # a prefix of another pattern
        elif r < 0.55:
            # a different parser (or the same spec) at a shared node
            new = src[:k] + [gen_parser(rng, rng.choice(names))] + (
                [Lit(gen_literal(rng))] if rng.random() < 0.6 else [])
        elif r < 0.7 and k < len(src) and isinstance(src[k], Lit) and literal_cuts(src[k].text):
            # split a literal: literal vs parser at the same node
            cut = rng.choice(literal_cuts(src[k].text))
            new = (src[:k] + [Lit(src[k].text[:cut]), gen_parser(rng, rng.choice(names))] +
                   src[k + 1:])
        else:
            new = src[:k] + gen_tokens(rng, names, rng.randint(0, 2))
        new = merge_tokens(new)
        if not new:
            new = [Lit("z")]
        patterns.append(new)
    # a pattern made only of a parser at the root, sometimes
    if rng.random() < 0.3:
        patterns.append(merge_tokens([gen_parser(rng, rng.choice(names))] +
                                     ([Lit(gen_literal(rng))] if rng.random() < 0.5 else [])))

    for toks in patterns:
        for t in toks:
            if isinstance(t, P) and t.name:
                g.names.add(t.name)
    # A bad pattern: syslog-ng keeps the part before the error in the tree.
    bad = []
    if rng.random() < 0.2:
        src = rng.choice(patterns)
        bad.append(pattern_text(src[:rng.randint(0, len(src))]) + rng.choice(BAD_PARSERS) +
                   pattern_text(rng.choice(patterns)))

    # Split the rules between a program-specific and a generic ruleset.
    rules_prog, rules_gen = [], []
    classes = [None, None, "c1", "c2", "system"]
    for i, toks in enumerate(patterns):
        pats = [pattern_text(toks)]
        if bad and rng.random() < 0.3:
            pats.insert(0, bad.pop())
        if rng.random() < 0.1:
            pats.append(pattern_text(rng.choice(patterns)))
        rule = ("g%d.r%d" % (gid, i), rng.choice(classes), pats)
        (rules_gen if rng.random() < 0.25 else rules_prog).append(rule)

    prog_pat, prog_names = rng.choice(PROGRAM_PATTERNS)
    progs = [pattern_text(prog_pat)]
    for t in prog_pat:
        if isinstance(t, P):
            g.names.add(t.name)
    if rng.random() < 0.3:
        progs.append("other%d" % gid)
        prog_names = prog_names + ["other%d" % gid]
    g.rulesets.append(("g%d.prog" % gid, progs, rules_prog))
    if rules_gen:
        g.rulesets.append(("g%d.gen" % gid, [], rules_gen))
    prog_names = prog_names + ["generic"]

    # Messages: rendered from the patterns, then mutated.
    samples = []
    for toks in patterns:
        for t in toks:
            if isinstance(t, P):
                samples.append(gen_value(rng, t))
    for _ in range(nmsgs):
        toks = rng.choice(patterns)
        msg = render_message(rng, toks)
        r = rng.random()
        nmut = 0 if r < 0.35 else (1 if r < 0.75 else rng.randint(2, 4))
        for _ in range(nmut):
            msg = mutate(rng, msg, samples)
        g.cases.append((rng.choice(prog_names), sanitize_message(msg)))
    return g


# ---------------------------------------------------------------- running

KEY_FIXED = ("MESSAGE", "PROGRAM", "TAGS", ".classifier.class", ".classifier.rule_id")


def parse_pairs(text, names):
    """Parses one NAME=value record; a line not starting with a known name continues the value."""
    known = set(names) | set(KEY_FIXED) | {"HOST", "PID", "LEGACY_MSGHDR", "SOURCE", "HOST_FROM",
                                            "MSGID", "DATE"}
    vals = {}
    cur = None
    for line in text.split("\n"):
        k, sep, v = line.partition("=")
        if sep and k in known:
            cur = k
            vals[k] = v
        elif cur is not None:
            vals[cur] += "\n" + line
    return vals


def split_records(out):
    recs = out.split("\n\n")
    if recs and recs[-1] == "":
        recs.pop()
    return recs


def valid_utf8(s):
    try:
        s.encode(ENC).decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def syslog_line(program, msg):
    return "Jan  1 00:00:00 host %s: %s" % (program, msg)


class Tool:
    def __init__(self, name, path, kind):
        self.name = name
        self.path = path
        self.kind = kind  # "corral" or "pdbtool"
        # pdbtool converts its arguments from the locale's charset: make that UTF-8.
        self.env = dict(os.environ, LC_ALL="C.UTF-8")
        self.nsingle = 0  # messages run one by one
        self.lock = threading.Lock()

    def cmd(self, rules, extra):
        if self.kind == "corral":
            return [self.path, "match", "-r", rules] + extra
        return [self.path, "match", "-p", rules] + extra

    def run(self, rules, extra):
        argv = [a.encode(ENC) for a in self.cmd(rules, extra)]
        p = subprocess.run(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        if p.returncode not in (0, 1) or (p.returncode and not p.stdout):
            raise RuntimeError("%s exited %d: %s" % (self.name, p.returncode,
                                                     p.stderr.decode(ENC)[-2000:]))
        return p.stdout.decode(ENC)

    def classify(self, rules, cases, names, workdir, use_file=True):
        """Returns one dict of values per case."""
        results = [None] * len(cases)
        todo = []
        if use_file:
            # pdbtool -f splits lines longer than its 64 KiB message size
            idx = [i for i, (prog, msg) in enumerate(cases)
                   if "\n" not in msg and len(msg) < 60000]
            if idx:
                logf = os.path.join(workdir, "%s.log" % self.kind)
                with open(logf, "wb") as f:
                    for i in idx:
                        f.write((syslog_line(*cases[i]) + "\n").encode(ENC))
                recs = split_records(self.run(rules, ["-f", logf]))
                if len(recs) == len(idx):
                    for i, rec in zip(idx, recs):
                        vals = parse_pairs(rec, names)
                        prog, msg = cases[i]
                        if vals.get("MESSAGE") == msg and vals.get("PROGRAM") == prog:
                            results[i] = vals
        for i, r in enumerate(results):
            if r is None:
                todo.append(i)
        for i in todo:
            prog, msg = cases[i]
            if not valid_utf8(msg):
                # pdbtool refuses such arguments; the case is skipped.
                results[i] = None
                continue
            with self.lock:
                self.nsingle += 1
            out = self.run(rules, ["-P", prog, "-M", msg])
            if out.endswith("\n\n"):
                out = out[:-2]
            results[i] = parse_pairs(out, names)
        return results


def compare_group(g, corral, pdbtool, workdir, use_file):
    d = os.path.join(workdir, "g%d" % g.gid)
    os.makedirs(d, exist_ok=True)
    rules = os.path.join(d, "rules.xml")
    with open(rules, "wb") as f:
        f.write(g.xml().encode(ENC))
    names = sorted(g.names)
    want = pdbtool.classify(rules, g.cases, names, d, use_file)
    got = corral.classify(rules, g.cases, names, d, use_file)
    diffs = []
    keys = [".classifier.rule_id", ".classifier.class"] + names
    nskipped = 0
    for (prog, msg), w, c in zip(g.cases, want, got):
        if w is None or c is None:
            nskipped += 1
            continue
        if w.get(".classifier.rule_id") is not None:
            g.nmatched += 1
        bad = [(k, w.get(k), c.get(k)) for k in keys if w.get(k) != c.get(k)]
        if bad:
            diffs.append((prog, msg, bad))
    return diffs, nskipped


def shorten(v, limit=300):
    """repr() of a value, cut in the middle when long."""
    if v is None or len(v) <= limit:
        return repr(v)
    return "%r...(%d bytes)...%r" % (v[:limit // 2], len(v), v[-limit // 2:])


def fmt_case(g, rules_path, prog, msg, bad):
    lines = ["--- group %d (%s) program %r message %s" % (g.gid, rules_path, prog, shorten(msg))]
    for k, w, c in bad:
        lines.append("    %-22s pdbtool=%s corral=%s" % (k, shorten(w), shorten(c)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corral", required=True)
    ap.add_argument("--pdbtool", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--groups", type=int, default=500, help="pattern databases")
    ap.add_argument("--rules", type=int, default=8, help="rules per group")
    ap.add_argument("--messages", type=int, default=40, help="messages per group")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--workdir", help="keep generated files here")
    ap.add_argument("--no-file", action="store_true", help="always use -P/-M, never -f")
    ap.add_argument("--max-report", type=int, default=50)
    ap.add_argument("--show-rules", action="store_true", help="print the rules of failing groups")
    args = ap.parse_args()

    for path in (args.corral, args.pdbtool):
        if not os.access(path, os.X_OK):
            print("matcher_diff: %s is not executable" % path, file=sys.stderr)
            return 2
    workdir = args.workdir or tempfile.mkdtemp(prefix="matcher_diff.")
    os.makedirs(workdir, exist_ok=True)
    corral = Tool("corral", args.corral, "corral")
    pdbtool = Tool("pdbtool", args.pdbtool, "pdbtool")

    rng = random.Random(args.seed)
    groups = []
    for gid in range(args.groups):
        grng = random.Random(rng.getrandbits(64))
        groups.append(build_group(grng, gid, args.rules, args.messages))

    ncases = sum(len(g.cases) for g in groups)
    failures = []
    nskipped = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
            futs = {ex.submit(compare_group, g, corral, pdbtool, workdir, not args.no_file): g
                    for g in groups}
            for fut in concurrent.futures.as_completed(futs):
                g = futs[fut]
                diffs, skipped = fut.result()
                nskipped += skipped
                for prog, msg, bad in diffs:
                    failures.append((g, prog, msg, bad))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("matcher_diff: %s" % e, file=sys.stderr)
        return 2

    failures.sort(key=lambda f: f[0].gid)
    shown_rules = set()
    for g, prog, msg, bad in failures[:args.max_report]:
        print(fmt_case(g, os.path.join(workdir, "g%d" % g.gid, "rules.xml"), prog, msg, bad))
        if args.show_rules and g.gid not in shown_rules:
            shown_rules.add(g.gid)
            print(g.xml())
    print("matcher_diff: seed %d, %d groups, %d cases compared (%d matched a rule, %d skipped, "
          "%d/%d run one by one by pdbtool/corral), %d mismatches"
          % (args.seed, len(groups), ncases - nskipped, sum(g.nmatched for g in groups), nskipped,
             pdbtool.nsingle, corral.nsingle, len(failures)))
    if not failures and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    elif failures:
        print("matcher_diff: generated files kept in %s" % workdir)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
