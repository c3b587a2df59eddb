//! Parameter JSON as a client sends it: decoding never panics, validation
//! gives iperf3 codes, and what decodes re-encodes to the same parameters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_proto::framing::{self, JsonLimits};
use plumb_proto::TestParams;

fuzz_target!(|data: &[u8]| {
    let limits = JsonLimits::default();
    let Ok(p) = framing::decode_json::<TestParams>(data, &limits, "parameters") else {
        return;
    };
    if let Err(e) = p.validate() {
        assert!(e.code() > 0);
    }
    let again = framing::encode_json(&p, "parameters").expect("encodes");
    let back = framing::decode_json::<TestParams>(&again, &limits, "parameters")
        .expect("own encoding decodes");
    assert_eq!(back, p, "round trip changed the parameters");
});
