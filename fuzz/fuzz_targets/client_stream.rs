//! A (hostile) server's bytes into the client machine: plumb's client talks
//! to servers it does not control.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use plumb_proto::client::{ClientControl, ClientEvent};
use plumb_proto::{Cookie, Results, TestParams};

fuzz_target!(|data: &[u8]| {
    let mut m = ClientControl::new(Cookie::from_random(&[7; 36]), TestParams::default());
    let mut out = Vec::new();
    let chunk = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let mut now = Duration::ZERO;
    for piece in data.get(1..).unwrap_or_default().chunks(chunk) {
        now += Duration::from_millis(1);
        m.handle_input(piece, now);
        while let Some(ev) = m.poll_event() {
            match ev {
                ClientEvent::TestRunning => {
                    let _ = m.test_end();
                }
                ClientEvent::ResultsRequested => {
                    let _ = m.send_results(&Results::default());
                }
                _ => {}
            }
        }
        while m.poll_transmit(&mut out) {}
        out.clear();
    }
});
