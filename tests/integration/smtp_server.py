#!/usr/bin/python3
"""
smtp_server: a throw-away SMTP server for the smtp executor's tests, built on
aiosmtpd (Debian's python3-aiosmtpd).

It listens on 127.0.0.1 on a port the kernel picks, or on the listening
socket it is handed as fd 3 (LISTEN_FDS=1, as from held_port.py or systemd),
and prints "PORT n" on standard output once it accepts connections.  Every accepted message is
stored as DIR/msg-NNNN.json: the envelope, whether the session used TLS and
who authenticated, and the raw DATA (base64, after the transparent dot has
been removed, exactly as the server received it).  What the client did is
appended to DIR/events.log, one line per command, so that a test can tell
whether credentials went out before TLS.

Options select the behaviour a test needs: STARTTLS offered or not, implicit
TLS (smtps), AUTH required, recipients rejected with 550 or 450, a reply to
the end of DATA, QUIT answered late or once the test says so (a file it
creates), or a server that accepts connections and never answers.
It exits on SIGTERM or when standard input is closed, so a test that dies
does not leave it behind.
"""
import argparse
import asyncio
import base64
import json
import os
import signal
import socket
import ssl
import stat
import sys

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


class Recorder:
    def __init__(self, opts):
        self.opts = opts
        self.count = 0

    def event(self, text):
        with open(os.path.join(self.opts.dir, "events.log"), "a") as f:
            f.write(text + "\n")

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self.event("EHLO %s tls=%d" % (hostname, session.ssl is not None or self.opts.implicit_tls))
        session.host_name = hostname
        return responses

    def handle_STARTTLS(self, server, session, envelope):  # aiosmtpd calls it without await
        self.event("STARTTLS")
        return True

    async def handle_MAIL(self, server, session, envelope, address, options):
        self.event("MAIL %s" % address)
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, options):
        self.event("RCPT %s" % address)
        if address in self.opts.reject_rcpt:
            return "550 5.1.1 <%s>: Recipient address rejected: User unknown" % address
        if address in self.opts.tempfail_rcpt:
            return "450 4.2.0 <%s>: Mailbox busy, try again later" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.event("DATA %d bytes" % len(envelope.original_content))
        if self.opts.data_reply:
            return self.opts.data_reply
        self.count += 1
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "tls": session.ssl is not None or self.opts.implicit_tls,
            "auth": session.auth_data.login.decode() if session.authenticated else None,
            "data": base64.b64encode(envelope.original_content).decode(),
        }
        path = os.path.join(self.opts.dir, "msg-%04d.json" % self.count)
        with open(path + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(path + ".tmp", path)  # a reader never sees half a file
        return "250 2.0.0 Ok: queued as %d" % self.count


class LoggingSMTP(SMTP):
    """Records AUTH commands, even those refused before TLS (no authenticator call then)."""

    recorder = None
    active = 0

    def connection_made(self, transport):
        if not getattr(self, "counted", False):  # STARTTLS makes it again
            self.counted = True
            LoggingSMTP.active += 1
            self.recorder.event("ACTIVE %d" % LoggingSMTP.active)
        super().connection_made(transport)

    def connection_lost(self, error):
        if getattr(self, "counted", False):
            self.counted = False
            LoggingSMTP.active -= 1
        super().connection_lost(error)

    async def smtp_QUIT(self, arg):
        self.recorder.event("QUIT")
        if self.recorder.opts.quit_delay:
            await asyncio.sleep(self.recorder.opts.quit_delay)
        hold = self.recorder.opts.quit_hold
        # held until the test makes the file (bounded: a test that died makes none)
        for _ in range(6000):
            if not hold or os.path.exists(hold):
                break
            await asyncio.sleep(0.01)
        return await super().smtp_QUIT(arg)

    async def smtp_AUTH(self, arg):
        mech = arg.split()[0] if arg else ""
        tls = self.session.ssl is not None or self.recorder.opts.implicit_tls
        self.recorder.event("AUTH %s tls=%d" % (mech, tls))
        return await super().smtp_AUTH(arg)


def make_authenticator(user, password):
    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login == user.encode()
              and auth_data.password == password.encode())
        # handled=False: aiosmtpd answers 535 itself
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)
    return authenticator


async def hang(rec, reader, writer):
    rec.event("CONNECT")
    await asyncio.sleep(3600)


async def main(opts):
    loop = asyncio.get_running_loop()
    rec = Recorder(opts)
    LoggingSMTP.recorder = rec
    ctx = None
    if opts.cert:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(opts.cert, opts.key)
    if os.environ.get("LISTEN_FDS") == "1" and os.environ.get("LISTEN_PID") == str(os.getpid()):
        # handed a listening socket (held_port.py, or systemd socket activation)
        sock = socket.socket(fileno=3)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
    port = sock.getsockname()[1]

    if opts.hang:
        server = await asyncio.start_server(lambda r, w: hang(rec, r, w), sock=sock)
    else:
        kwargs = {"hostname": "smtp.test", "data_size_limit": 10 * 1024 * 1024}
        if ctx and not opts.implicit_tls:
            kwargs["tls_context"] = ctx
            kwargs["require_starttls"] = opts.require_starttls
        if opts.auth:
            user, password = opts.auth.split(":", 1)
            kwargs["authenticator"] = make_authenticator(user, password)
            kwargs["auth_required"] = True
            # Offer AUTH before TLS too when asked, to see whether the client bites.
            kwargs["auth_require_tls"] = not opts.auth_plaintext

        def connected():
            rec.event("CONNECT")
            return LoggingSMTP(rec, **kwargs)

        server = await loop.create_server(connected, sock=sock,
                                          ssl=ctx if opts.implicit_tls else None)

    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    # The test that started us is gone when its end of our standard input
    # (a pipe) closes or we are handed to another parent.
    if stat.S_ISFIFO(os.fstat(0).st_mode):
        loop.add_reader(0, lambda: stop.set() if not os.read(0, 512) else None)
    parent = os.getppid()

    async def watch_parent():
        while os.getppid() == parent:
            await asyncio.sleep(0.5)
        stop.set()

    watcher = asyncio.ensure_future(watch_parent())
    print("PORT %d" % port, flush=True)
    await stop.wait()
    watcher.cancel()
    server.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--require-starttls", action="store_true")
    ap.add_argument("--implicit-tls", action="store_true")
    ap.add_argument("--auth", help="USER:PASSWORD; AUTH is then required")
    ap.add_argument("--auth-plaintext", action="store_true",
                    help="offer AUTH before STARTTLS")
    ap.add_argument("--reject-rcpt", action="append", default=[])
    ap.add_argument("--tempfail-rcpt", action="append", default=[])
    ap.add_argument("--data-reply", help="reply to the end of DATA, e.g. '451 4.3.0 later'")
    ap.add_argument("--quit-delay", type=float, default=0,
                    help="seconds to wait before answering QUIT")
    ap.add_argument("--quit-hold", metavar="FILE",
                    help="answer QUIT once FILE exists (at most 60 s on)")
    ap.add_argument("--hang", action="store_true", help="accept connections, never answer")
    asyncio.run(main(ap.parse_args()))
