#!/usr/bin/env python3
"""bench/capture's premises: do tshark, tcptrace and plumb describe the same
capture? Usage: capture-check.py PLUMB_JSON TSHARK_OUT TCPTRACE_OUT PACKETS

- the capture holds at least 1,000,000 packets (PACKETS, from capinfos);
- tshark's `-z conv,tcp` and plumb list the same TCP connections, with the
  same frames each way and the same bytes each way (tshark rounds its byte
  columns to whole kB/MB/GB, so within one unit of its figure);
- tcptrace traced as many connections and TCP packets as plumb.

plumb's output is read in either of two shapes:
- `plumb why -J -r FILE` (the bench's default command): the number of
  connections, and per connection that carried data (`explained[].flow`)
  its two ends and its frames both ways. Those are checked against tshark
  (count; frames per connection, both ways together) and tcptrace (count;
  TCP packets, when every connection carried data);
- any document holding connections as objects with a `client` and a
  `server` direction, each with `sender`, `packets` and `wire_bytes` (the
  analyze example's evidence): frames and bytes each way are checked too.
Prints one line per check; exits 1 when one fails."""

import json
import re
import sys

UNITS = {"bytes": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9}
ROW = re.compile(
    r"^(\S+)\s+<->\s+(\S+)\s+(\d+)\s+([\d.,]+)\s+(bytes|kB|MB|GB)\s+(\d+)\s+([\d.,]+)\s+(bytes|kB|MB|GB)\s"
)


def plumb_connections(doc):
    """Each connection as {sender: (packets, wire_bytes)}, found anywhere."""
    found = []

    def is_dir(d):
        return isinstance(d, dict) and {"sender", "packets", "wire_bytes"} <= d.keys()

    def walk(v):
        if isinstance(v, dict):
            if is_dir(v.get("client")) and is_dir(v.get("server")):
                found.append(
                    {d["sender"]: (d["packets"], d["wire_bytes"]) for d in (v["client"], v["server"])}
                )
                return
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc)
    return found


def tshark_connections(text):
    """Each conversation as {sender: (frames, bytes, unit)}."""
    convs = []
    for line in text.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        a, b = m.group(1), m.group(2)
        num = lambda s: float(s.replace(",", ""))
        # "<-" is what B sent to A; "->" what A sent to B.
        convs.append(
            {
                b: (int(m.group(3)), num(m.group(4)) * UNITS[m.group(5)], UNITS[m.group(5)]),
                a: (int(m.group(6)), num(m.group(7)) * UNITS[m.group(8)], UNITS[m.group(8)]),
            }
        )
    return convs


def why_document(doc):
    """`plumb why -J -r`: (connections, {frozenset(ends): frames}) or None."""
    if not isinstance(doc, dict) or not isinstance(doc.get("connections"), int):
        return None
    flows = {}
    for x in doc.get("explained") or []:
        f = x.get("flow") or {}
        if {"client", "server", "packets"} <= f.keys():
            flows[frozenset((f["client"], f["server"]))] = f["packets"]
    return doc["connections"], flows


def check_why(say, why, ts, tcptrace_text):
    count, flows = why
    say(len(ts) == count, "TCP connections: tshark %d, plumb %d" % (len(ts), count))
    by_ends = {frozenset(t): t for t in ts}
    off, missing = [], 0
    for ends, frames in flows.items():
        t = by_ends.get(ends)
        if t is None:
            missing += 1
            continue
        theirs = sum(v[0] for v in t.values())
        if theirs != frames:
            off.append("%s: %d vs %d" % (" <-> ".join(sorted(ends)), theirs, frames))
    say(missing == 0, "plumb's explained connections tshark does not list: %d" % missing)
    say(not off, "frames per connection, tshark vs plumb: %s" % ("; ".join(off[:3]) or "all equal"))
    tpk, tcn = tcptrace_counts(tcptrace_text)
    say(tcn == count, "TCP connections: tcptrace %s, plumb %d" % (tcn, count))
    if len(flows) == count:
        ppk = sum(flows.values())
        say(tpk == ppk, "TCP packets: tcptrace %s, plumb %d" % (tpk, ppk))
    else:
        print("check: TCP packets: not compared (%d of %d connections carried data)" % (len(flows), count))


def tcptrace_counts(text):
    pk = re.search(r"(\d+) TCP packets traced", text)
    cn = re.search(r"(\d+) TCP connections? traced", text)
    return (int(pk.group(1)) if pk else None, int(cn.group(1)) if cn else None)


def main():
    plumb_path, tshark_path, tcptrace_path, packets = sys.argv[1:5]
    ok = True

    def say(good, text):
        nonlocal ok
        ok &= good
        print("check: %s%s" % ("" if good else "MISMATCH: ", text))

    n = int(packets) if packets.isdigit() else 0
    say(n >= 1_000_000, "the 1x capture holds %d packets (>= 1,000,000 wanted)" % n)
    try:
        doc = json.load(open(plumb_path))
    except (OSError, ValueError) as e:
        say(False, "cannot read plumb's output as JSON: %s" % e)
        return 1
    pl = plumb_connections(doc)
    why = why_document(doc)
    if not pl and why is not None:
        check_why(say, why, tshark_connections(open(tshark_path).read()), open(tcptrace_path).read())
        return 0 if ok else 1
    if not pl:
        say(False, "plumb's output holds no per-connection counts (client/server sender, packets, wire_bytes)")
        return 1
    ts = tshark_connections(open(tshark_path).read())
    say(len(ts) == len(pl), "TCP connections: tshark %d, plumb %d" % (len(ts), len(pl)))
    by_ends = {frozenset(c): c for c in pl}
    frames_off, bytes_off, missing = [], [], 0
    for t in ts:
        p = by_ends.get(frozenset(t))
        if p is None:
            missing += 1
            continue
        for sender, (frames, nbytes, unit) in t.items():
            pf, pb = p[sender]
            if pf != frames:
                frames_off.append("%s: %d vs %d" % (sender, frames, pf))
            if abs(pb - nbytes) >= unit:
                bytes_off.append("%s: %.0f vs %d" % (sender, nbytes, pb))
    say(missing == 0, "tshark's conversations plumb does not list: %d" % missing)
    say(not frames_off, "frames each way, tshark vs plumb: %s" % ("; ".join(frames_off[:3]) or "all equal"))
    say(
        not bytes_off,
        "bytes each way, tshark (rounded to its unit) vs plumb: %s" % ("; ".join(bytes_off[:3]) or "all agree"),
    )
    tpk, tcn = tcptrace_counts(open(tcptrace_path).read())
    ppk = sum(sum(d[0] for d in c.values()) for c in pl)
    say(tcn == len(pl), "TCP connections: tcptrace %s, plumb %d" % (tcn, len(pl)))
    say(tpk == ppk, "TCP packets: tcptrace %s, plumb %d" % (tpk, ppk))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
