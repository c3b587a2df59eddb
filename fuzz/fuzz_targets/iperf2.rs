//! iperf 2 peers' bytes: a TCP test header (its length from the first
//! word, then the header), a UDP datagram with the header after it, a
//! header acknowledgement and a server report each decode or are refused
//! without a panic, and what decodes encodes back to the same fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_proto::iperf2::{
    Datagram, HeaderAck, ServerReport, TestHeader, DATAGRAM_LEN, MAX_HEADER_LEN,
};

fuzz_target!(|data: &[u8]| {
    if data.len() >= 4 {
        let flags = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        if let Ok(len) = TestHeader::tcp_len(flags) {
            assert!(len <= MAX_HEADER_LEN);
            if let Ok(h) = TestHeader::decode(&data[..len.min(data.len())]) {
                let _ = h.mode();
                let _ = h.wants_ack();
            }
        }
    }
    for wide in [false, true] {
        if let Ok(d) = Datagram::decode(data, wide) {
            let mut buf = [0u8; DATAGRAM_LEN];
            d.encode(&mut buf).expect("16 bytes fit");
            assert_eq!(Datagram::decode(&buf, true).map(|b| b.id), Ok(d.id));
            let _ = TestHeader::decode(&data[DATAGRAM_LEN..]);
        }
    }
    if let Ok(a) = HeaderAck::decode(data) {
        assert_eq!(HeaderAck::decode(&a.encode()), Ok(a));
    }
    if let Ok(r) = ServerReport::decode(data) {
        assert_eq!(ServerReport::decode(&r.encode()), Ok(r));
    }
});
