#!/usr/bin/env python3
"""nats_jwt.py: NATS decentralized authentication for a test, as nsc makes it.

    nats_jwt.py DIR

writes into DIR an operator, a system account and an account `corral`
with JetStream, each with its nkey and JWT, and two users' credentials:
DIR/corral.creds (a user of `corral`) and DIR/stranger.creds (a user of
an account the servers do not know).  It prints the lines a nats-server
configuration needs to trust them (operator, system_account, a MEMORY
resolver preloaded with the two accounts).

Debian 12 ships no nsc; the formats are NATS's: nkeys (ed25519 keys,
base32 with a type prefix and a CRC-16) and JWTs signed with them
("ed25519-nkey"), the credentials file holding the user's JWT and seed.
"""
import base64
import hashlib
import json
import os
import sys
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

PREFIX_SEED = 18 << 3
PREFIX = {"operator": 14 << 3, "account": 0, "user": 20 << 3}


def crc16(data):
    """CRC-16/XMODEM, as nkeys checks its keys."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def b32(raw):
    raw += crc16(raw).to_bytes(2, "little")
    return base64.b32encode(raw).decode().rstrip("=")


class NKey:
    def __init__(self, kind):
        self.kind = kind
        self.seed_raw = os.urandom(32)
        self.key = Ed25519PrivateKey.from_private_bytes(self.seed_raw)
        pub = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        p = PREFIX[kind]
        self.public = b32(bytes([p]) + pub)
        self.seed = b32(bytes([PREFIX_SEED | (p >> 5), (p & 31) << 3]) + self.seed_raw)


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(issuer, subject, name, nats):
    claims = {"iat": int(time.time()), "iss": issuer.public, "name": name, "sub": subject.public,
              "nats": dict(nats, version=2)}
    claims["jti"] = base64.b32encode(
        hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()).decode().rstrip("=")
    head = b64url(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = b64url(json.dumps(claims).encode())
    sig = issuer.key.sign((head + "." + body).encode())
    return head + "." + body + "." + b64url(sig)


UNLIMITED = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
             "wildcards": True, "conn": -1, "leaf": -1}
JETSTREAM = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1,
             "max_ack_pending": -1, "mem_max_stream_bytes": -1, "disk_max_stream_bytes": -1,
             "max_bytes_required": False}


def account(operator, name, js):
    key = NKey("account")
    limits = dict(UNLIMITED, **(JETSTREAM if js else {}))
    return key, jwt(operator, key, name, {"type": "account", "limits": limits,
                                          "default_permissions": {"pub": {}, "sub": {}}})


def creds(path, acct, name):
    user = NKey("user")
    token = jwt(acct, user, name, {"type": "user", "pub": {}, "sub": {}, "subs": -1,
                                   "data": -1, "payload": -1})
    with open(path, "w") as f:
        f.write("-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
                "************************* IMPORTANT *************************\n"
                "NKEY Seed printed below can be used to sign and prove identity.\n"
                "NKEYs are sensitive and should be treated as secrets.\n\n"
                "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n\n"
                "*************************************************************\n" %
                (token, user.seed))
    os.chmod(path, 0o600)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    op = NKey("operator")
    sys_key, sys_jwt = account(op, "SYS", False)
    acct, acct_jwt = account(op, "corral", True)
    op_jwt = jwt(op, op, "corraltest", {"type": "operator", "system_account": sys_key.public})
    with open(os.path.join(out, "operator.jwt"), "w") as f:
        f.write(op_jwt + "\n")
    creds(os.path.join(out, "corral.creds"), acct, "node")
    # a user of an account the servers were not told of
    stranger, _ = account(op, "stranger", True)
    creds(os.path.join(out, "stranger.creds"), stranger, "stranger")
    print('operator: "%s"' % os.path.join(out, "operator.jwt"))
    print("system_account: %s" % sys_key.public)
    print("resolver: MEMORY")
    print('resolver_preload: { %s: "%s", %s: "%s" }' % (sys_key.public, sys_jwt, acct.public, acct_jwt))


if __name__ == "__main__":
    main()
