#!/usr/bin/env python3
"""
held_port: a receiver that is down, on a port nobody else can take, until
the test brings it up.

    held_port.py udp|tcp PORTFILE GOFILE COMMAND [ARG...]

Binds a socket on 127.0.0.1, port 0, and writes the port the kernel gave to
PORTFILE; the test configures corrald with it.  Until GOFILE exists, the
receiver is down: TCP connections are refused (the socket is bound, not
listening) and datagrams are read and thrown away.  Then it runs COMMAND in
its own place (exec, same pid), every "{port}" in the arguments replaced,
and hands it the socket as systemd socket activation does (fd 3,
LISTEN_FDS=1, LISTEN_PID): the port is never free for a moment, so no other
process can take it in between.  snmptrapd (net-snmp built with systemd
support) and smtp_server.py take the socket so.

Exits if the test that started it goes away before GOFILE appears.
"""
import os
import select
import socket
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[1] not in ("udp", "tcp"):
        sys.exit(__doc__)
    kind, portfile, gofile, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    udp = kind == "udp"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(portfile + ".tmp", portfile)  # a reader never sees half a file

    parent = os.getppid()
    while not os.path.exists(gofile):
        if os.getppid() != parent:
            sys.exit(1)
        # a bounded wait on the socket, not a sleep: what arrives meanwhile is
        # what a receiver that is down never sees
        if udp and select.select([s], [], [], 0.05)[0]:
            s.recv(65536)
        elif not udp:
            select.select([], [], [], 0.05)
    if not udp:
        s.listen(64)
    if s.fileno() != 3:
        os.dup2(s.fileno(), 3)
    os.set_inheritable(3, True)
    os.environ["LISTEN_FDS"] = "1"
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.execvp(cmd[0], [a.replace("{port}", str(port)) for a in cmd])


if __name__ == "__main__":
    main()
