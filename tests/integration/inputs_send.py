#!/usr/bin/env python3
"""Test client for corrald's inputs (tests/integration/inputs_*.sh).

  inputs_send.py stream ADDR --conns A-B --per N [--framing newline|octet]
                 [--crlf] [--unterminated-last] [--expect-active STATS_PORT INPUT]
      Opens connections A..B at once (ADDR is tcp:HOST:PORT or unix:PATH),
      then sends round after round one message on each connection, every
      message cut at a random point into two writes, and closes them all.
      Message: "<13>Jan  1 00:00:00 testhost inputtest: conn=C seq=S ...".
      --unterminated-last: the last message of each connection has no
      newline (it must still arrive: EOF ends it).  --expect-active: once all
      are connected, wait until corrald's stats say that many are open.
  inputs_send.py dgram ADDR --conns A-B --per N
      The same messages as datagrams (ADDR is udp:HOST:PORT or unix:PATH).
"""
import random
import resource
import socket
import sys
import time
import urllib.request


def opt(args, name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


def conn_range(s):
    a, _, b = s.partition('-')
    return range(int(a), int(b or a) + 1)


def message(c, s):
    return b'<13>Jan  1 00:00:00 testhost inputtest: conn=%d seq=%d payload %s' % (
        c, s, b'p' * ((c * 7 + s) % 50))


def connect(addr):
    kind, _, rest = addr.partition(':')
    if kind == 'unix':
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(rest)
        return s
    host, _, port = rest.rpartition(':')
    return socket.create_connection((host.strip('[]'), int(port)), timeout=30)


def active(stats_port, name):
    body = urllib.request.urlopen('http://127.0.0.1:%s/metrics' % stats_port, timeout=5).read()
    want = ('corral_input_connections_active{input="%s"} ' % name).encode()
    for line in body.splitlines():
        if line.startswith(want):
            return int(float(line.split()[-1]))
    return -1


def stream(args):
    conns = conn_range(opt(args, '--conns'))
    per = int(opt(args, '--per'))
    octet = opt(args, '--framing', 'newline') == 'octet'
    eol = b'\r\n' if '--crlf' in args else b'\n'
    unterminated = '--unterminated-last' in args
    # thousands of sockets need more than the usual 1024 descriptors
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = len(conns) + 64
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard) if hard != resource.RLIM_INFINITY else need, hard))
    socks = {}
    for c in conns:
        for attempt in range(50):
            try:
                socks[c] = connect(sys.argv[2])
                break
            except (ConnectionRefusedError, BlockingIOError, socket.timeout):
                time.sleep(0.05)
        else:
            sys.exit('cannot connect %d' % c)
    if '--expect-active' in args:
        i = args.index('--expect-active')
        port, name = args[i + 1], args[i + 2]
        deadline = time.time() + 60
        while active(port, name) != len(conns):
            if time.time() > deadline:
                sys.exit('corrald reports %d connections open, want %d' % (active(port, name), len(conns)))
            time.sleep(0.2)
        print('%d connections open' % len(conns))
    rnd = random.Random(1)
    for s in range(per):
        for c in conns:
            m = message(c, s)
            if octet:
                data = b'%d ' % len(m) + m
            elif unterminated and s == per - 1:
                data = m
            else:
                data = m + eol
            cut = rnd.randint(0, len(data))
            sk = socks[c]
            sk.sendall(data[:cut])
            if cut < len(data):
                sk.sendall(data[cut:])
    for sk in socks.values():
        sk.close()
    return 0


def dgram(args):
    conns = conn_range(opt(args, '--conns'))
    per = int(opt(args, '--per'))
    kind, _, rest = sys.argv[2].partition(':')
    if kind == 'unix':
        sk = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        dest = rest
    else:
        host, _, port = rest.rpartition(':')
        sk = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET, socket.SOCK_DGRAM)
        dest = (host.strip('[]'), int(port))
    for s in range(per):
        for c in conns:
            for attempt in range(100):
                try:
                    sk.sendto(message(c, s), dest)
                    break
                except (BlockingIOError, ConnectionRefusedError):
                    time.sleep(0.01)  # a unix datagram queue that is full: wait, as syslog(3) does
        if s % 50 == 49:
            time.sleep(0.01)
    return 0


if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(stream(sys.argv[3:]) if sys.argv[1] == 'stream' else dgram(sys.argv[3:]))
