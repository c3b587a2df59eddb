#!/usr/bin/env python3
"""bench/flow-replay.py - one synthetic TCP transfer, sent as Ethernet frames
out of a device at a set packet rate, for bench/capture-keepup.

The frames are what a 1 Gbit/s transfer with offload off puts on the wire:
a handshake (window scale 7, SACK, timestamps), then 1448-byte segments
from 198.18.7.1:40000 to 198.18.7.2:5201 with an ACK back for every second
one, 64 segments behind (a window in flight), and a FIN each way at the
end. Two thirds of the frames are 1514 bytes and one third 66 bytes.

They go out through a packet socket, addressed to a MAC no device has,
so the far end's stack drops them before IP (nothing answers) while a
capture on the far device sees each one. Only the checksums are left zero:
plumb does not read them. Pacing is by the clock, in batches of 32, so
the rate holds on average over each batch; PPS 0 sends as fast as it can.

Usage: flow-replay.py DEV PPS SECS   ->  prints "sent N in S.SSS s"
"""

import socket
import struct
import sys
import time

SRC_MAC = bytes.fromhex("020000000001")
DST_MAC = bytes.fromhex("020000000099")  # no device's: dropped before IP
A, B = socket.inet_aton("198.18.7.1"), socket.inet_aton("198.18.7.2")
A_PORT, B_PORT = 40000, 5201
MSS = 1448
BEHIND = 64  # segments in flight before the first ACK


def ip_checksum(h):
    s = sum(struct.unpack("!10H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def frame(src, dst, sport, dport, flags, opts, payload):
    """A template frame; seq, ack and the timestamp are patched in later."""
    thl = 20 + len(opts)
    total = 20 + thl + len(payload)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src, dst))
    struct.pack_into("!H", ip, 10, ip_checksum(bytes(ip)))
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 0, 0, (thl // 4) << 4, flags, 4096, 0, 0)
    return bytearray(DST_MAC + SRC_MAC + b"\x08\x00" + bytes(ip) + tcp + opts + payload)


TS = b"\x01\x01\x08\x0a" + bytes(8)  # NOP NOP TS(val, ecr): val at +4
SYN_OPTS = struct.pack("!BBH", 2, 4, MSS) + b"\x04\x02" + b"\x08\x0a" + bytes(8) + b"\x01\x03\x03\x07"
TCP_AT = 14 + 20  # the TCP header's offset in a frame


def patch(f, seq, ack, tsval):
    struct.pack_into("!II", f, TCP_AT + 4, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF)
    struct.pack_into("!I", f, TCP_AT + 20 + 4, tsval & 0xFFFFFFFF)


def frames():
    """The transfer's frames, each with the sequence number the next data
    segment takes, endless until the caller stops taking them."""
    syn = frame(A, B, A_PORT, B_PORT, 0x02, SYN_OPTS, b"")
    synack = frame(B, A, B_PORT, A_PORT, 0x12, SYN_OPTS, b"")
    third = frame(A, B, A_PORT, B_PORT, 0x10, TS, b"")
    patch(third, 1, 1, 0)
    data = frame(A, B, A_PORT, B_PORT, 0x18, TS, bytes(MSS))
    ack = frame(B, A, B_PORT, A_PORT, 0x10, TS, b"")
    for f in (syn, synack, third):
        yield bytes(f), 1
    n = 0
    while True:
        patch(data, 1 + n * MSS, 1, n)
        n += 1
        yield bytes(data), 1 + n * MSS
        if n > BEHIND and n % 2 == 0:
            patch(ack, 1, 1 + (n - BEHIND) * MSS, n)
            yield bytes(ack), 1 + n * MSS


def fin(seq_a):
    """FIN from each end, then the last ACK."""
    f1 = frame(A, B, A_PORT, B_PORT, 0x11, TS, b"")
    patch(f1, seq_a, 1, 0)
    f2 = frame(B, A, B_PORT, A_PORT, 0x11, TS, b"")
    patch(f2, 1, seq_a + 1, 0)
    f3 = frame(A, B, A_PORT, B_PORT, 0x10, TS, b"")
    patch(f3, seq_a + 1, 2, 0)
    return [bytes(f1), bytes(f2), bytes(f3)]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: flow-replay.py DEV PPS SECS")
    dev, pps, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    if pps < 0 or not 0 < secs <= 60:
        sys.exit("flow-replay.py: PPS >= 0 and 0 < SECS <= 60")
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0))
    send = s.send
    gen = frames()
    sent, start = 0, time.perf_counter()
    end = start + secs
    next_seq = 1
    while True:
        for _ in range(32):
            f, next_seq = next(gen)
            send(f)
        sent += 32
        now = time.perf_counter()
        if now >= end:
            break
        if pps:
            ahead = start + sent / pps - now
            if ahead > 0:
                time.sleep(ahead)
    for f in fin(next_seq):
        send(f)
        sent += 1
    print("sent %d in %.3f s" % (sent, time.perf_counter() - start))


if __name__ == "__main__":
    main()
