#!/usr/bin/python3
"""
smtp_check: checks one message stored by smtp_server.py, for the smtp
executor's tests.  Exits 0 when every check holds, else prints what failed
and exits 1.

Always checked, whatever the options: the raw message is 7-bit, every line
ends in CRLF and is at most 998 bytes, no line starts with '.', Python's
email package parses it without a defect, the header section has exactly
the fields the executor writes (each once, so nothing was injected), Date
parses, Message-ID is <...@DOMAIN-of-From>, and the body is text/plain in
UTF-8.  Options add expectations on the envelope, headers and decoded body.
"""
import argparse
import base64
import email
import email.policy
import email.utils
import json
import re
import sys

ALLOWED = {
    "date", "from", "to", "subject", "message-id", "mime-version", "content-type",
    "content-transfer-encoding", "auto-submitted", "x-mailer", "x-corral-executor",
    "x-corral-alert-id", "x-corral-severity", "x-corral-alerts",
}
REQUIRED = ["date", "from", "to", "subject", "message-id", "mime-version", "content-type",
            "content-transfer-encoding"]

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--mail-from")
    ap.add_argument("--rcpt", action="append", default=None)
    ap.add_argument("--to", action="append", default=None)
    ap.add_argument("--from-header")
    ap.add_argument("--subject")
    ap.add_argument("--subject-contains", action="append", default=[])
    ap.add_argument("--body-contains", action="append", default=[])
    ap.add_argument("--body-not-contains", action="append", default=[])
    ap.add_argument("--body-count", action="append", default=[],
                    help="TEXT=N: the decoded body holds TEXT exactly N times")
    ap.add_argument("--header", action="append", default=[], help="NAME=VALUE (decoded)")
    ap.add_argument("--no-header", action="append", default=[])
    ap.add_argument("--cte", help="expected Content-Transfer-Encoding")
    ap.add_argument("--tls", choices=["yes", "no"])
    ap.add_argument("--auth")
    ap.add_argument("--dump", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="only the exit status")
    o = ap.parse_args()

    rec = json.load(open(o.file))
    raw = base64.b64decode(rec["data"])
    if o.dump:
        sys.stdout.write(raw.decode("ascii", "replace"))

    # ---- the wire form ----
    check(all(b < 0x80 for b in raw), "the message is not 7-bit")
    check(raw.endswith(b"\r\n"), "the message does not end with CRLF")
    lines = raw.split(b"\r\n")
    for i, line in enumerate(lines[:-1]):
        check(b"\r" not in line and b"\n" not in line, "bare CR or LF in line %d: %r" % (i, line[:80]))
        check(len(line) <= 998, "line %d is %d bytes long" % (i, len(line)))
        check(not line.startswith(b"."), "line %d starts with '.': %r" % (i, line[:80]))
    head = raw.split(b"\r\n\r\n", 1)[0]
    names = [l.split(b":", 1)[0].decode().lower() for l in head.split(b"\r\n")
             if l and l[:1] not in (b" ", b"\t")]
    for n in names:
        check(n in ALLOWED, "unexpected header field %r" % n)
        check(names.count(n) == 1, "header field %r appears %d times" % (n, names.count(n)))
    for n in REQUIRED:
        check(n in names, "header field %r is missing" % n)

    # ---- what a mail reader sees ----
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    check(not msg.defects, "message defects: %r" % msg.defects)
    for k, v in msg.items():
        check(not getattr(v, "defects", None), "defects in %s: %r" % (k, getattr(v, "defects", None)))
        check("\r" not in str(v) and "\n" not in str(v), "line break in decoded %s: %r" % (k, str(v)))
    check(email.utils.parsedate_to_datetime(msg["date"]) is not None, "bad Date")
    sender = email.utils.parseaddr(msg["from"])[1]
    domain = sender.rsplit("@", 1)[-1]
    check(re.fullmatch(r"<[^<>@\s]+@" + re.escape(domain) + ">", msg["message-id"] or "")
          is not None, "bad Message-ID %r" % msg["message-id"])
    check(msg["mime-version"] == "1.0", "MIME-Version is not 1.0")
    check(msg.get_content_type() == "text/plain", "not text/plain")
    check((msg.get_content_charset() or "").lower() == "utf-8", "charset is not UTF-8")
    body = msg.get_content()
    check("\r" not in body.replace("\r\n", "\n"), "a bare CR in the decoded body")
    body = body.replace("\r\n", "\n")

    # ---- expectations ----
    if o.mail_from is not None:
        check(rec["mail_from"] == o.mail_from, "MAIL FROM %r" % rec["mail_from"])
    if o.rcpt is not None:
        check(rec["rcpt_tos"] == o.rcpt, "RCPT TO %r" % rec["rcpt_tos"])
    if o.to is not None:
        got = [a for _, a in email.utils.getaddresses([msg["to"]])]
        check(got == o.to, "To %r" % got)
    if o.from_header is not None:
        check(str(msg["from"]) == o.from_header, "From %r" % str(msg["from"]))
    if o.subject is not None:
        check(str(msg["subject"]) == o.subject, "Subject %r, not %r" % (str(msg["subject"]), o.subject))
    for s in o.subject_contains:
        check(s in str(msg["subject"]), "Subject %r lacks %r" % (str(msg["subject"]), s))
    for s in o.body_contains:
        check(s in body, "body lacks %r" % s[:200])
    for s in o.body_not_contains:
        check(s not in body, "body has %r" % s[:200])
    for spec in o.body_count:
        text, n = spec.rsplit("=", 1)
        check(body.count(text) == int(n), "body holds %r %d times, not %s" % (text, body.count(text), n))
    for spec in o.header:
        name, value = spec.split("=", 1)
        check(str(msg[name]) == value, "%s is %r, not %r" % (name, str(msg[name]), value))
    for name in o.no_header:
        check(msg[name] is None, "%s is present" % name)
    if o.cte:
        check(msg["content-transfer-encoding"] == o.cte,
              "Content-Transfer-Encoding %r" % msg["content-transfer-encoding"])
    if o.tls:
        check(rec["tls"] == (o.tls == "yes"), "tls=%r" % rec["tls"])
    if o.auth:
        check(rec["auth"] == o.auth, "auth=%r" % rec["auth"])

    if o.quiet:
        return 1 if problems else 0
    for p in problems:
        print("smtp_check %s: %s" % (o.file, p))
    if problems:
        print("--- subject: %r" % str(msg["subject"]))
        print("--- body (first 2000 characters):\n%s" % body[:2000])
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
