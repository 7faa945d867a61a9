#!/usr/bin/env python3
"""nats_copy.py: what the cluster tests need of the NATS protocol, spoken by hand
(Debian 12 has no NATS client for Python): record the messages published on a
subject, and publish a recorded message again, headers and all.

  nats_copy.py record HOST:PORT USER PASSFILE SUBJECT OUT READY
      appends each message on SUBJECT to OUT (a JSON line: subject, headers,
      payload in hex); writes READY once subscribed; runs until killed
  nats_copy.py publish HOST:PORT USER PASSFILE IN
      publishes every message of IN again, as it was, each with a reply
      subject, and prints JetStream's answer to each (one JSON line)
  nats_copy.py messages HOST:PORT USER PASSFILE STREAM
      prints how many messages STREAM holds, as its leader says
"""
import json
import socket
import sys
import time


class Conn:
    def __init__(self, hostport, user, passfile):
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        self.buf = b""
        info = self.line()
        assert info.startswith(b"INFO "), info
        password = open(passfile).read().strip()
        self.send(b"CONNECT " + json.dumps({
            "verbose": False, "pedantic": False, "headers": True, "no_responders": True,
            "user": user, "pass": password, "protocol": 1}).encode() + b"\r\n")
        self.ping()

    def send(self, data):
        self.s.sendall(data)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def take(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def ping(self):
        self.send(b"PING\r\n")
        while True:
            msg = self.next()
            if msg == "PONG":
                return

    def next(self):
        """The next message as (subject, headers, payload); "PONG" for a PONG."""
        while True:
            line = self.line()
            if line == b"PING":
                self.send(b"PONG\r\n")
            elif line == b"PONG":
                return "PONG"
            elif line.startswith(b"-ERR"):
                raise RuntimeError(line.decode())
            elif line.startswith(b"HMSG "):
                f = line.split()
                hlen, tlen = int(f[-2]), int(f[-1])
                data = self.take(tlen)
                return f[1].decode(), data[:hlen], data[hlen:]
            elif line.startswith(b"MSG "):
                f = line.split()
                return f[1].decode(), b"", self.take(int(f[-1]))


def record(hostport, user, passfile, subject, out, ready):
    c = Conn(hostport, user, passfile)
    c.send(b"SUB %s 1\r\n" % subject.encode())
    c.ping()
    c.s.settimeout(None)  # then as long as publishes come
    open(ready, "w").close()
    with open(out, "a") as f:
        while True:
            m = c.next()
            if m == "PONG":
                continue
            subj, headers, payload = m
            f.write(json.dumps({"subject": subj, "headers": headers.decode(),
                                "payload": payload.hex()}) + "\n")
            f.flush()


def publish(hostport, user, passfile, path):
    c = Conn(hostport, user, passfile)
    c.send(b"SUB _COPY.reply 1\r\n")
    for line in open(path):
        m = json.loads(line)
        headers = m["headers"].encode()
        payload = bytes.fromhex(m["payload"])
        # again while the stream has no leader (just after a restart): no
        # responders (a 503 status), or a JetStream error
        for _ in range(600):
            c.send(b"HPUB %s _COPY.reply %d %d\r\n%s%s\r\n"
                   % (m["subject"].encode(), len(headers), len(headers) + len(payload),
                      headers, payload))
            while True:
                r = c.next()
                if r != "PONG":
                    break
            _, status, answer = r
            if b" 503" not in status.split(b"\r\n", 1)[0] and b'"error"' not in answer:
                break
            time.sleep(0.1)
        print(answer.decode())


def messages(hostport, user, passfile, stream):
    c = Conn(hostport, user, passfile)
    c.send(b"SUB _INFO.reply 1\r\n")
    c.send(b"PUB $JS.API.STREAM.INFO.%s _INFO.reply 0\r\n\r\n" % stream.encode())
    while True:
        r = c.next()
        if r != "PONG":
            break
    info = json.loads(r[2])
    if "error" in info:
        sys.exit("stream info: %s" % info["error"])
    print(info["state"]["messages"])


if __name__ == "__main__":
    if sys.argv[1] == "record":
        try:
            record(*sys.argv[2:8])
        except (EOFError, ConnectionError):
            pass  # the server stopped: what it sent is recorded
    elif sys.argv[1] == "publish":
        publish(*sys.argv[2:6])
    elif sys.argv[1] == "messages":
        messages(*sys.argv[2:6])
    else:
        sys.exit("usage: nats_copy.py record|publish|messages ...")
