//! A capture file's bytes (pcap or pcapng, maybe gzip) through the reader,
//! the link and IP/TCP decoders and the connection table: never a panic or
//! a hang, a typed error or an analysis; never more records than 16-byte
//! record headers fit in the input (for plain input), never more tracked
//! connections than the ceiling, and every TCP segment either in a tracked
//! connection, dropped with one, or a capture duplicate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_capture::analyze;
use plumb_record::capture::Limits;

fuzz_target!(|data: &[u8]| {
    let limits = Limits { max_connections: 16 };
    let Ok(a) = analyze(data, limits) else { return };
    if !a.read.gzip {
        assert!(a.read.records as usize <= data.len() / 16);
    }
    assert!(a.connections.len() <= 16);
    let tracked: u64 = a.connections.iter().map(|c| c.packets()).sum();
    assert_eq!(tracked + a.dropped.packets + a.duplicates.packets, a.decode.tcp);
    if let Some(t) = a.read.truncated {
        assert!(t.after_packet >= a.read.records);
    }
    for c in &a.connections {
        let h = &c.handshake;
        // With timestamps in order (a merged capture's may not be), the two
        // halves of the handshake add up to its RTT.
        if let (Some(s), Some(sa), Some(ack)) = (h.syn_ns, h.syn_ack_ns, h.ack_ns) {
            if s <= sa && sa <= ack {
                let halves = h.syn_to_syn_ack_ns.zip(h.syn_ack_to_ack_ns);
                assert_eq!(halves.map(|(a, b)| a + b), h.rtt_ns);
            }
        }
        let copies: u64 = c.client.duplicates + c.server.duplicates;
        assert!(copies <= a.duplicates.packets);
        for d in [&c.client, &c.server] {
            assert!(d.retransmissions.total <= d.packets);
            let r = &d.retransmissions;
            assert_eq!(r.fast + r.timeout + r.other, r.total);
            assert!(d.flight.window_full <= d.flight.samples);
        }
    }
});
