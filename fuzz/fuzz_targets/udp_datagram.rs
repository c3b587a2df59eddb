//! UDP datagrams as a receiver sees them: the header decodes or is refused
//! for both sequence widths, headers round-trip, and any sequence of them
//! keeps the loss/out-of-order arithmetic sane.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use plumb_proto::udp::{self, SeqWidth, UdpHeader, UdpReceiver};

fuzz_target!(|data: &[u8]| {
    let _ = udp::is_reply(data);
    let mut rx = UdpReceiver::new();
    for (i, dgram) in data.chunks(17).enumerate() {
        for width in [
            SeqWidth::from_counters_64bit(false),
            SeqWidth::from_counters_64bit(true),
        ] {
            if let Ok(h) = UdpHeader::decode(dgram, width) {
                let mut buf = vec![0u8; dgram.len()];
                h.encode(width, &mut buf).expect("fits where it came from");
                assert_eq!(UdpHeader::decode(&buf, width).ok(), Some(h));
                rx.record_header(&h, Duration::from_micros(i as u64 * 10));
            }
        }
    }
    let s = rx.stats();
    assert!(s.lost_percent().is_finite() || s.max_seq == 0);
});
