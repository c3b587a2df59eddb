//! Results JSON from either peer: decoding never panics and round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_proto::framing::{self, JsonLimits};
use plumb_proto::Results;

fuzz_target!(|data: &[u8]| {
    let limits = JsonLimits::default();
    let Ok(r) = framing::decode_json::<Results>(data, &limits, "results") else {
        return;
    };
    let again = framing::encode_json(&r, "results").expect("encodes");
    let back =
        framing::decode_json::<Results>(&again, &limits, "results").expect("own encoding decodes");
    assert_eq!(back, r, "round trip changed the results");
});
