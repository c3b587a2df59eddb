# Small TCP applications whose class is known, for tests/classes_lab.rs.
# Usage: python3 classes.py MODE key=value...
#   rr-server port=P wait=S      one connection: each request (REQ bytes)
#                                is answered after S seconds (RESP bytes)
#   rr-client host=H port=P n=N  N requests, each sent once the answer to
#                                the one before has arrived
#   echo-server port=P           one connection: every keystroke is echoed
#   keys-client host=H port=P n=N every=S
#                                N keystrokes (KEY bytes) S seconds apart,
#                                each echo awaited
# Common: up=PATH (created once listening or connected, so a test can wait
# for it), secs=S (a hard limit on the whole run, default 30 s). Each runs
# at real-time priority when it may, so its timing is its own.
# Every loop is bounded: by its count, and by secs.
import os, socket, sys, time

o = dict(a.split("=", 1) for a in sys.argv[2:])
mode = sys.argv[1]
port = int(o["port"])
secs = float(o.get("secs", "30"))
deadline = time.time() + secs
REQ, RESP, KEY = 32, 64, b"k\x1b["


def timely():
    # Real-time priority (the lab runs as root): the answers' 20 ms and the
    # keystrokes' 200 ms are the program's, not the machine's load.
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
    except (AttributeError, OSError):
        pass


def ready():
    if "up" in o:
        open(o["up"], "w").close()


def recv_exactly(s, n):
    got = b""
    while len(got) < n:
        s.settimeout(max(0.01, deadline - time.time()))
        d = s.recv(n - len(got))
        if not d:
            return None
        got += d
    return got


def serve():
    l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("0.0.0.0", port))
    l.listen(1)
    ready()
    l.settimeout(secs)
    s, _ = l.accept()
    l.close()
    return s


def connect():
    s = socket.create_connection((o["host"], port), timeout=secs)
    ready()
    return s


timely()
if mode == "rr-server":
    s = serve()
    wait = float(o["wait"])
    while time.time() < deadline and recv_exactly(s, REQ):
        time.sleep(wait)
        s.sendall(b"r" * RESP)
elif mode == "rr-client":
    s = connect()
    for _ in range(int(o["n"])):
        s.sendall(b"q" * REQ)
        if not recv_exactly(s, RESP):
            sys.exit("classes.py: the server went away")
elif mode == "echo-server":
    s = serve()
    while time.time() < deadline:
        d = recv_exactly(s, len(KEY))
        if not d:
            break
        s.sendall(d)
elif mode == "keys-client":
    s = connect()
    every = float(o["every"])
    start = time.time()
    for i in range(int(o["n"])):
        ahead = start + i * every - time.time()
        if ahead > 0:
            time.sleep(ahead)
        s.sendall(KEY)
        if not recv_exactly(s, len(KEY)):
            sys.exit("classes.py: the server went away")
else:
    sys.exit(f"classes.py: unknown mode {mode}")
s.close()
