//! A client's bytes on the control connection, in arbitrary chunks, into
//! the server machine; the "driver" answers every event as a real one would,
//! so the input reaches every phase. Nothing may panic, and the machine's
//! output stays bounded.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use plumb_proto::server::{ServerControl, ServerEvent, ServerLimits};
use plumb_proto::Results;

fuzz_target!(|data: &[u8]| {
    let mut m = ServerControl::new(ServerLimits::default(), Duration::ZERO);
    let mut out = Vec::new();
    let mut now = Duration::ZERO;
    // The first byte sets the chunk size so splits vary with the input.
    let chunk = usize::from(data.first().copied().unwrap_or(1)).max(1);
    for piece in data.get(1..).unwrap_or_default().chunks(chunk) {
        now += Duration::from_millis(1);
        m.handle_input(piece, now);
        while let Some(ev) = m.poll_event() {
            let _ = match ev {
                ServerEvent::Params(_) => m.create_streams().and_then(|()| m.start_test()),
                ServerEvent::TestEnd => m.request_results(),
                ServerEvent::ClientResults(_) => m.send_results(&Results::default()),
                _ => Ok(()),
            };
        }
        while m.poll_transmit(&mut out) {}
        assert!(out.len() < 1 << 20, "output grew without bound");
        out.clear();
    }
    m.handle_eof(now);
    while m.poll_event().is_some() {}
    m.handle_timeout(now + Duration::from_secs(3600));
    assert!(m.poll_timeout().is_none() || !m.is_closed());
});
