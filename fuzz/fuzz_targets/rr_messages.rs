//! plumb's request/response messages as a peer may send them: the stream
//! greeting, the UDP transaction datagram, and the `plumb.rr` parameters.
//! Parsing never panics; parameters that validate are inside the limits the
//! data paths size their buffers by.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_proto::rr::{self, RrParams};

fuzz_target!(|data: &[u8]| {
    if let Some(port) = rr::parse_greeting(data) {
        assert_eq!(&rr::greeting(port)[..], data, "greeting round trip");
    }
    if let Some(seq) = rr::seq_of(data) {
        let mut again = data.to_vec();
        rr::put_seq(&mut again, seq);
        assert_eq!(again, data, "sequence round trip");
    }
    let Ok(p) = serde_json::from_slice::<RrParams>(data) else {
        return;
    };
    for udp in [false, true] {
        if p.validate(udp).is_ok() {
            let max = if udp {
                rr::MAX_UDP_MESSAGE
            } else {
                rr::MAX_TCP_MESSAGE
            };
            assert!(p.request >= 1 && p.request <= max && p.response <= max);
            assert!((1..=rr::MAX_BURST).contains(&p.burst));
            assert!(p.busy_poll_us.map_or(true, |us| us <= rr::MAX_BUSY_POLL_US));
        }
    }
});
