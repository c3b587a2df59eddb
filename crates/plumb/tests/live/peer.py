# A small TCP application that is not plumb, for the live `plumb why` tests.
# Usage: python3 peer.py role=connect|listen dir=send|recv [host=H] [port=P]
#   [secs=S] [v6=1] [rcvbuf=B] [sndbuf=B] [clamp=B] [cc=NAME] [mss=B]
#   [rate=BITS_PER_S] [slow=1] [idle=1] [up=PATH]
# up=PATH: create PATH once connected (or accepted), so a test can wait for it.
# Every loop is bounded by secs (sending) or by the peer closing (receiving,
# with a hard limit of secs + 20 s).
import socket, sys, time

o = dict(a.split("=", 1) for a in sys.argv[1:])
port = int(o.get("port", "5201"))
secs = float(o.get("secs", "8"))
fam = socket.AF_INET6 if o.get("v6") else socket.AF_INET
T = socket.IPPROTO_TCP

def setup(s):
    if "rcvbuf" in o:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(o["rcvbuf"]))
    if "sndbuf" in o:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(o["sndbuf"]))
    if "clamp" in o:
        s.setsockopt(T, socket.TCP_WINDOW_CLAMP, int(o["clamp"]))
    if "cc" in o:
        s.setsockopt(T, socket.TCP_CONGESTION, o["cc"].encode())
    if "mss" in o:
        s.setsockopt(T, socket.TCP_MAXSEG, int(o["mss"]))

if o["role"] == "listen":
    l = socket.socket(fam, socket.SOCK_STREAM)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    setup(l)
    l.bind((o.get("host", "::" if o.get("v6") else "0.0.0.0"), port))
    l.listen(1)
    l.settimeout(20)
    s, _ = l.accept()
else:
    deadline = time.time() + 10
    while True:
        s = socket.socket(fam, socket.SOCK_STREAM)
        setup(s)
        try:
            s.connect((o["host"], port))
            break
        except OSError:
            s.close()
            if time.time() > deadline:
                sys.exit("peer.py: cannot connect")
            time.sleep(0.1)

if "up" in o:
    open(o["up"], "w").close()
start = time.time()
if o.get("idle"):
    time.sleep(secs)
elif o["dir"] == "send":
    block = b"x" * 65536
    rate = float(o.get("rate", "0"))
    sent = 0
    while time.time() - start < secs:
        if rate > 0:
            ahead = sent * 8 / rate - (time.time() - start)
            if ahead > 0:
                time.sleep(ahead)
            n = s.send(block[:16384])
        else:
            n = s.send(block)
        sent += n
else:
    s.settimeout(secs + 20)
    while time.time() - start < secs + 20:
        d = s.recv(4096 if o.get("slow") else 65536)
        if not d:
            break
        if "clamp" in o:
            # Linux raises the clamp as data flows; hold it, as plumb --rwin does.
            s.setsockopt(T, socket.TCP_WINDOW_CLAMP, int(o["clamp"]))
        if o.get("slow"):
            time.sleep(0.01)
s.close()
