"""Shared code of the pScheduler tool plugin for plumb (throughput test).

pScheduler runs each executable of a tool plugin with JSON on stdin and reads
JSON from stdout; a non-zero exit with a message on stderr is a failure. This
module holds the parts the executables share: the ISO 8601 durations of a
test spec, the spec -> plumb flag mapping, and plumb's -J document -> the
throughput test's result. Standard library only.
"""

import datetime
import json
import os
import re
import subprocess
import sys
import time

NAME = "plumb"
# Participant 1 runs a one-off server on this port (not 5201, where an
# always-on iperf3 or plumb server may listen); PLUMB_PSCHEDULER_PORT overrides.
DEFAULT_PORT = 5202
DEFAULT_DURATION_S = 10
# Seconds the client waits after the scheduled start for the server to listen.
SERVER_START_WAIT_S = 2
# Seconds the server is given after the test to report and exit.
SERVER_SHUTDOWN_S = 2
# Setup grows with the round trip: about a second per 50 ms (connect, the
# parameter and results exchanges); pScheduler's default link RTT is 200 ms.
DEFAULT_LINK_RTT = "PT0.200S"

# Throughput spec keys plumb maps to its flags (or that only steer pScheduler).
SUPPORTED = {
    "schema", "source", "source-node", "dest", "dest-node", "duration",
    "interval", "link-rtt", "parallel", "window-size", "mss", "bandwidth",
    "udp", "buffer-length", "ip-tos", "ip-version", "local-address",
    "congestion", "zero-copy", "no-delay", "omit", "reverse",
    "single-ended", "single-ended-port", "loopback",
    "client-cpu-affinity", "server-cpu-affinity",
}


def plumb_bin():
    """The plumb executable: $PLUMB_BIN, else plumb on $PATH."""
    return os.environ.get("PLUMB_BIN", "plumb")


def server_port():
    try:
        return int(os.environ.get("PLUMB_PSCHEDULER_PORT", DEFAULT_PORT))
    except ValueError:
        return DEFAULT_PORT


def read_input():
    """The JSON object on stdin, or a failure."""
    try:
        v = json.load(sys.stdin)
    except ValueError as e:
        fail("input is not JSON: %s" % e)
    if not isinstance(v, dict):
        fail("input is not a JSON object")
    return v


def succeed(obj):
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.exit(0)


def fail(msg):
    sys.stderr.write("%s\n" % msg)
    sys.exit(1)


_ISO = re.compile(
    r"^P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


def iso_seconds(text):
    """Seconds in an ISO 8601 duration such as PT10S, PT1M30S, P0D, PT0.5S."""
    m = _ISO.match(text or "")
    if not m or text in ("P", "PT") or text.endswith("T"):
        raise ValueError("invalid ISO 8601 duration %r" % text)
    f = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
    return f["w"] * 604800 + f["d"] * 86400 + f["h"] * 3600 + f["m"] * 60 + f["s"]


def setup_seconds(spec):
    rtt = iso_seconds(spec.get("link-rtt") or DEFAULT_LINK_RTT)
    return max(rtt * 1000.0 / 50.0, 1.0)


def test_seconds(spec):
    d = spec.get("duration")
    return int(iso_seconds(d)) if d else DEFAULT_DURATION_S


def omit_seconds(spec):
    return int(iso_seconds(spec["omit"])) if spec.get("omit") else 0


def unsupported(spec):
    """Reasons this spec cannot run with plumb ([] if it can)."""
    reasons = ["plumb does not support the %s option" % k for k in sorted(spec) if k not in SUPPORTED]
    for k in ("duration", "interval", "omit", "link-rtt"):
        if k in spec:
            try:
                iso_seconds(spec[k])
            except (ValueError, TypeError):
                reasons.append("invalid %s %r: expected an ISO 8601 duration" % (k, spec[k]))
    for k in ("client-cpu-affinity", "server-cpu-affinity"):
        v = spec.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            reasons.append("invalid %s %r: expected a CPU number (0 or more)" % (k, v))
    if spec.get("single-ended") and spec.get("server-cpu-affinity") is not None \
            and spec.get("client-cpu-affinity") is None:
        # The far server is not ours to start: only the client's -A n,m can
        # ask it, and that form needs the client's own CPU too.
        reasons.append("single-ended: server-cpu-affinity needs client-cpu-affinity as well")
    if "dest" not in spec:
        reasons.append("the spec has no dest")
    return reasons


def client_args(spec, port):
    """plumb -c flags for a throughput spec (participant 0)."""
    a = ["-c", str(spec["dest"]), "-p", str(port), "-t", str(test_seconds(spec)), "-J", "--why"]
    if spec.get("interval"):
        a += ["-i", "%g" % iso_seconds(spec["interval"])]
    simple = [
        ("parallel", "-P"), ("window-size", "-w"), ("mss", "-M"),
        ("bandwidth", "-b"), ("buffer-length", "-l"), ("ip-tos", "-S"),
        ("congestion", "-C"),
    ]
    for key, flag in simple:
        if spec.get(key) is not None:
            a += [flag, str(spec[key])]
    if omit_seconds(spec):
        a += ["-O", str(omit_seconds(spec))]
    for key, flag in (("udp", "-u"), ("zero-copy", "-Z"), ("no-delay", "-N"), ("reverse", "-R")):
        if spec.get(key):
            a.append(flag)
    if spec.get("ip-version") in (4, 6):
        a.append("-%d" % spec["ip-version"])
    bind = spec.get("local-address") or spec.get("source")
    if bind:
        a += ["-B", str(bind)]
    # -A n, or n,m: the server then runs this test's threads on CPU m
    # (a plumb or an iperf3 server alike).
    if spec.get("client-cpu-affinity") is not None:
        cpus = str(spec["client-cpu-affinity"])
        if spec.get("server-cpu-affinity") is not None:
            cpus += ",%d" % spec["server-cpu-affinity"]
        a += ["-A", cpus]
    return a


def server_args(spec, port):
    """plumb -s flags for participant 1: one test, then exit."""
    a = ["-s", "-1", "-J", "-p", str(port)]
    if spec.get("ip-version") in (4, 6):
        a.append("-%d" % spec["ip-version"])
    if spec.get("server-cpu-affinity") is not None:
        a += ["-A", str(spec["server-cpu-affinity"])]
    return a


def sleep_until(start_iso, limit_s):
    """Sleeps until the scheduled start (at most limit_s seconds)."""
    if not start_iso:
        return
    try:
        start = datetime.datetime.fromisoformat(start_iso.replace("Z", "+00:00"))
    except ValueError:
        fail("invalid schedule start %r" % start_iso)
    if start.tzinfo is None:
        start = start.replace(tzinfo=datetime.timezone.utc)
    wait = (start - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    if wait > 0:
        time.sleep(min(wait, limit_s))


def run_plumb(args, timeout):
    """Runs plumb; (exit status, stdout, stderr). A timeout kills it."""
    argv = [plumb_bin()] + args
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out, "plumb ran past %d s and was stopped" % timeout
    except OSError as e:
        return 127, "", "cannot run %s: %s" % (argv[0], e)


def _int(v):
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def throughput_data(s):
    """One iperf3-style -J summary (stream or sum) as the test's throughput-data."""
    out = {}
    for src, dst, conv in (
        ("socket", "stream-id", _int), ("start", "start", _num), ("end", "end", _num),
        ("bytes", "throughput-bytes", _num), ("bits_per_second", "throughput-bits", _num),
        ("retransmits", "retransmits", _int), ("snd_cwnd", "tcp-window-size", _int),
        ("packets", "sent", _int), ("lost_packets", "lost", _int), ("jitter_ms", "jitter", _num),
    ):
        v = conv(s.get(src))
        if v is not None:
            out[dst] = v
    rtt = _num(s.get("rtt", s.get("mean_rtt")))
    if rtt is not None:
        out["rtt"] = rtt  # microseconds, as iperf3 reports and pScheduler's iperf3 tool passes on
    if isinstance(s.get("omitted"), bool):
        out["omitted"] = s["omitted"]
    return out


def diagnosis_field(d):
    """plumb's diagnosis, trimmed to what an archive or dashboard uses."""
    keep = ("limit", "secondary", "summary", "measured_bps", "predicted_bps", "link_bps", "link_source", "confidence")
    return {k: d.get(k) for k in keep if k in d}


def result_from_document(doc, diags):
    """plumb's -J document (with --why's diagnosis) as a throughput result."""
    if not isinstance(doc, dict):
        return {"succeeded": False, "error": "plumb gave no JSON document", "diags": diags}
    if doc.get("error"):
        return {"succeeded": False, "error": "plumb: %s" % doc["error"], "diags": diags}
    end = doc.get("end")
    if not isinstance(end, dict) or "intervals" not in doc:
        return {"succeeded": False, "error": "plumb's document has no end or intervals", "diags": diags}
    intervals = []
    for iv in doc.get("intervals") or []:
        intervals.append({
            "streams": [throughput_data(s) for s in iv.get("streams", [])],
            "summary": throughput_data(iv.get("sum", {})),
        })
    sent = end.get("sum_sent") or end.get("sum")
    if not isinstance(sent, dict):
        return {"succeeded": False, "error": "plumb's document has no end summary", "diags": diags}
    summary = throughput_data(sent)
    udp = end.get("sum")
    if isinstance(udp, dict) and "jitter_ms" in udp:
        # Loss and jitter as the receiver saw them.
        for k, v in throughput_data(udp).items():
            if k in ("lost", "jitter", "sent"):
                summary[k] = v
    rcvd = end.get("sum_received")
    if isinstance(rcvd, dict) and _num(rcvd.get("bits_per_second")) is not None:
        summary["receiver-throughput-bits"] = float(rcvd["bits_per_second"])
    streams = []
    for s in end.get("streams", []):
        side = s.get("udp") or s.get("sender")
        if isinstance(side, dict):
            streams.append(throughput_data(side))
    result = {
        "succeeded": True,
        "diags": diags,
        "intervals": intervals,
        "summary": {"streams": streams, "summary": summary},
    }
    if isinstance(doc.get("diagnosis"), dict):
        d = diagnosis_field(doc["diagnosis"])
        result["plumb-diagnosis"] = d
        if d.get("summary"):
            result["diags"] = "plumb why: %s\n\n%s" % (d["summary"], diags)
    return result
