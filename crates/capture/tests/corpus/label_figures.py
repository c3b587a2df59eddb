#!/usr/bin/env python3
"""tshark's figures for one TCP flow of a capture, as labels.json holds them.

Usage: label_figures.py FILE CLIENT SERVER
  (CLIENT and SERVER as plumb why -r -J names them: 10.0.0.1:80,
  [2001:db8::1]:443)

Prints the "tshark" object of a label. The capture is first rid of
duplicate frames (editcap -w 0.01: a frame equal to one at most 10 ms
before it), then read once by tshark (the command is printed on stderr).
Figures:
  bytes_client_to_server, bytes_server_to_client: sums of tcp.len
    (payload on the wire, retransmissions included);
  duration_s: the flow's first frame to its last;
  initial_rtt_ms: tcp.analysis.initial_rtt (null without a handshake);
  data_segments: frames with tcp.len > 0;
  retransmissions: frames with data flagged tcp.analysis.retransmission,
    fast_retransmission or spurious_retransmission;
  exchanges: runs of data from the client each followed by a run of data
    from the server (a request and its response);
  longest_idle_s: the longest time between two frames of the flow;
  median_segment_bytes: the median tcp.len of the data frames.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

FIELDS = [
    "frame.time_epoch", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst",
    "ipv6.dst", "tcp.dstport", "tcp.len", "tcp.analysis.initial_rtt",
    "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
    "tcp.analysis.spurious_retransmission",
]


def endpoint(addr4, addr6, port):
    """An address and port as plumb prints a SocketAddr."""
    a6 = addr6.split(",")[0]
    if a6:
        return f"[{a6}]:{port}"
    return f"{addr4.split(',')[0]}:{port}"


def frames(path):
    """Every TCP frame of the capture without duplicates, as field lists."""
    with tempfile.TemporaryDirectory() as d:
        dedup = os.path.join(d, "dedup.pcapng")
        subprocess.run(["editcap", "-w", "0.01", path, dedup], check=True,
                       capture_output=True)
        cmd = ["tshark", "-n", "-r", dedup, "-Y", "tcp", "-T", "fields",
               "-E", "separator=/t"]
        for f in FIELDS:
            cmd += ["-e", f]
        print("editcap -w 0.01 " + path + " dedup.pcapng; " +
              " ".join(cmd).replace(dedup, "dedup.pcapng"), file=sys.stderr)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return [line.split("\t") for line in out.stdout.splitlines()]


def figures(path, client, server):
    rows = []
    for f in frames(path):
        src = endpoint(f[1], f[2], f[3].split(",")[0])
        dst = endpoint(f[4], f[5], f[6].split(",")[0])
        if {src, dst} == {client, server}:
            rows.append((float(f[0]), src == client, int(f[7] or 0), f))
    if not rows:
        sys.exit(f"no frame between {client} and {server} in {path}")
    times = sorted(r[0] for r in rows)
    data = [r for r in rows if r[2] > 0]
    rtt = next((float(r[3][8]) for r in rows if r[3][8]), None)
    exchanges, last = 0, None
    for r in data:
        if last is True and not r[1]:
            exchanges += 1
        last = r[1]
    return {
        "bytes_client_to_server": sum(r[2] for r in rows if r[1]),
        "bytes_server_to_client": sum(r[2] for r in rows if not r[1]),
        "duration_s": round(times[-1] - times[0], 6),
        "initial_rtt_ms": None if rtt is None else round(rtt * 1000, 3),
        "data_segments": len(data),
        "retransmissions": sum(1 for r in data if any(r[3][9:12])),
        "exchanges": exchanges,
        "longest_idle_s": round(max((b - a for a, b in zip(times, times[1:])),
                                    default=0.0), 6),
        "median_segment_bytes": statistics.median(r[2] for r in data) if data else 0,
    }


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    print(json.dumps(figures(*sys.argv[1:]), indent=2))
