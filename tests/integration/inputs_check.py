#!/usr/bin/env python3
"""Checks corrald's JSON output for the input tests (tests/integration/inputs_*.sh).

Every line of the output file must be one JSON object.  Subcommands:

  seq OUT --conns A-B --per N [--program P] [--unordered] [--host H] [--sourceip IP]
      Messages "conn=C seq=S ..." of program P (default inputtest): every
      connection C in A..B sent seq 0..N-1; each must arrive exactly once, in
      order (unless --unordered: datagrams), classified by the test rules
      (.classifier.class "inputs", tag "inputs").
  loggen OUT --groups G --per N
      loggen's messages ("seq: S, thread: T, runid: R"): G (runid, thread)
      groups, each with seq 0..N-1 exactly once and in order, classified
      "loggen".
  count OUT REGEX
      Prints how many MESSAGE values match REGEX (Python re.search).
  field OUT REGEX NAME
      Prints member NAME of the first message whose MESSAGE matches REGEX
      ("<none>" if there is none); NAME "MESSAGE-LEN" prints its length.
  lines OUT
      Prints the number of lines (0 for a missing file).
"""
import json
import re
import sys


def load(path):
    out = []
    try:
        with open(path, 'rb') as f:
            for n, raw in enumerate(f, 1):
                try:
                    out.append(json.loads(raw.decode('utf-8', 'surrogateescape')))
                except ValueError as e:
                    sys.exit('%s:%d: not JSON (%s): %r' % (path, n, e, raw[:200]))
    except FileNotFoundError:
        pass
    return out


def conn_range(s):
    a, _, b = s.partition('-')
    return range(int(a), int(b or a) + 1)


def opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        return args[i + 1]
    return default


def classified(m, cls):
    tags = m.get('TAGS', '')
    return m.get('.classifier.class') == cls and cls in tags.split(',')


def check_seq(msgs, args):
    conns = conn_range(opt(args, '--conns'))
    per = int(opt(args, '--per'))
    program = opt(args, '--program', 'inputtest')
    host = opt(args, '--host')
    sourceip = opt(args, '--sourceip')
    unordered = '--unordered' in args
    seen = {c: [] for c in conns}
    problems = []
    for m in msgs:
        if m.get('PROGRAM') != program:
            continue
        r = re.match(r'conn=(\d+) seq=(\d+)\b', m.get('MESSAGE', ''))
        if not r or int(r.group(1)) not in seen:
            continue
        c, s = int(r.group(1)), int(r.group(2))
        seen[c].append(s)
        if not classified(m, 'inputs') and len(problems) < 10:
            problems.append('conn=%d seq=%d not classified: class %r tags %r'
                            % (c, s, m.get('.classifier.class'), m.get('TAGS')))
        if host and m.get('HOST') != host and len(problems) < 10:
            problems.append('conn=%d seq=%d: HOST %r, want %r' % (c, s, m.get('HOST'), host))
        if sourceip and m.get('SOURCEIP') != sourceip and len(problems) < 10:
            problems.append('conn=%d seq=%d: SOURCEIP %r, want %r'
                            % (c, s, m.get('SOURCEIP'), sourceip))
    want = list(range(per))
    bad = 0
    for c, got in seen.items():
        ok = (sorted(got) if unordered else got) == want
        if not ok:
            bad += 1
            if len(problems) < 10:
                missing = sorted(set(want) - set(got))
                dups = len(got) - len(set(got))
                problems.append('conn=%d: %d messages, %d missing (first %s), %d duplicates, %s'
                                % (c, len(got), len(missing), missing[:5], dups,
                                   'in order' if got == sorted(got) else 'OUT OF ORDER'))
    total = sum(len(v) for v in seen.values())
    print('seq: %d connections, %d messages (want %d), %d connections wrong'
          % (len(seen), total, len(seen) * per, bad))
    for p in problems:
        print('  ' + p)
    return 0 if not problems else 1


def check_loggen(msgs, args):
    groups = int(opt(args, '--groups'))
    per = int(opt(args, '--per'))
    seen = {}
    problems = []
    for m in msgs:
        r = re.search(r'seq: (\d+), thread: (\d+), runid: (\d+)', m.get('MESSAGE', ''))
        if not r:
            continue
        key = (r.group(3), int(r.group(2)))
        seen.setdefault(key, []).append(int(r.group(1)))
        if not classified(m, 'loggen') and len(problems) < 10:
            problems.append('loggen message not classified: %r' % m.get('MESSAGE', '')[:80])
    if len(seen) != groups:
        problems.append('%d loggen connections seen, want %d' % (len(seen), groups))
    for key, got in seen.items():
        if got != list(range(per)) and len(problems) < 10:
            problems.append('runid %s thread %d: %d messages, want %d in order'
                            % (key[0], key[1], len(got), per))
    print('loggen: %d connections, %d messages' % (len(seen), sum(len(v) for v in seen.values())))
    for p in problems:
        print('  ' + p)
    return 0 if not problems else 1


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == 'lines':
        try:
            with open(path, 'rb') as f:
                print(sum(1 for _ in f))
        except FileNotFoundError:
            print(0)
        return 0
    msgs = load(path)
    if cmd == 'seq':
        return check_seq(msgs, args)
    if cmd == 'loggen':
        return check_loggen(msgs, args)
    if cmd == 'count':
        rx = re.compile(args[0], re.S)
        print(sum(1 for m in msgs if rx.search(m.get('MESSAGE', ''))))
        return 0
    if cmd == 'field':
        rx = re.compile(args[0], re.S)
        for m in msgs:
            if rx.search(m.get('MESSAGE', '')):
                if args[1] == 'MESSAGE-LEN':
                    print(len(m.get('MESSAGE', '').encode('utf-8', 'surrogateescape')))
                else:
                    print(m.get(args[1], '<none>'))
                return 0
        print('<none>')
        return 0
    sys.exit('unknown command %s' % cmd)


if __name__ == '__main__':
    sys.exit(main())
