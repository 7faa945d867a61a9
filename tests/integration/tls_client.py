#!/usr/bin/env python3
"""tls_client.py: a TLS syslog client for the TLS tests (RFC 5425 framing).

  tls_client.py PORT CA [--cert PEM --key KEY] [--server-name NAME] [--lines] MSG...

Connects to 127.0.0.1:PORT, verifies the server against CA (its certificate
must carry NAME, default 127.0.0.1), sends each MSG as an octet-counted
frame (--lines: as lines, the last one unterminated), then closes with
close_notify.  Prints "sent" when the server took
everything and closed cleanly, "refused: REASON" when it heard of an alert.
With TLS 1.3 a refused client may finish its side of the handshake, send
and close before the server's alert reaches it: "sent" does not prove
acceptance, the server's counters and output do.  Exit status 0 either
way, 2 on any other failure.
"""
import argparse
import socket
import ssl
import sys

p = argparse.ArgumentParser()
p.add_argument("port", type=int)
p.add_argument("ca")
p.add_argument("--cert")
p.add_argument("--key")
p.add_argument("--server-name", default="127.0.0.1")
p.add_argument("--lines", action="store_true")
p.add_argument("msg", nargs="*")
a = p.parse_intermixed_args()

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(a.ca)
if a.cert:
    ctx.load_cert_chain(a.cert, a.key)
raw = socket.create_connection(("127.0.0.1", a.port), timeout=60)
try:
    s = ctx.wrap_socket(raw, server_hostname=a.server_name)
    if a.lines:
        s.sendall("\n".join(a.msg).encode())
    for m in [] if a.lines else a.msg:
        b = m.encode()
        s.sendall(b"%d " % len(b) + b)
    # the server says nothing unless it refused us: close_notify back, or an alert
    s = s.unwrap()
    print("sent")
except ssl.SSLError as e:
    print("refused: %s" % e.reason)
except (ConnectionResetError, BrokenPipeError) as e:
    print("refused: %s" % e)
except OSError as e:
    print("failed: %s" % e)
    sys.exit(2)
