//! A sock_diag dump's bytes as the kernel (or anything posing as it) hands
//! them over: parsing never panics, never loops, and never yields more
//! connections than whole messages fit in the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_live::diag::parse;
use plumb_live::TcpInfo;

fuzz_target!(|data: &[u8]| {
    let p = parse(data);
    // A response is at least a netlink header and the 72-byte inet_diag_msg.
    assert!(p.conns.len() <= data.len() / 88);
    if let Some(t) = TcpInfo::decode(data) {
        assert_eq!(t.len, data.len());
    }
});
