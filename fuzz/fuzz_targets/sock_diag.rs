//! A sock_diag dump's bytes as the kernel (or anything posing as it) hands
//! them over: parsing never panics, never loops, never yields more
//! connections than whole messages fit in the input, and parsing into a
//! reused vector finds the same; a congestion name is 1-15 bytes or none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_live::diag::{parse, parse_into};
use plumb_live::CcName;
use plumb_tcpinfo::TcpInfo;

fuzz_target!(|data: &[u8]| {
    let p = parse(data);
    // A response is at least a netlink header and the 72-byte inet_diag_msg.
    assert!(p.conns.len() <= data.len() / 88);
    // Parsing into a reused vector appends the same sockets.
    let mut v = p.conns.clone();
    let st = parse_into(data, &mut v);
    assert_eq!(v.len(), 2 * p.conns.len());
    assert_eq!((st.done, st.error, st.bad), (p.done, p.error, p.bad));
    if let Some(c) = CcName::new(data) {
        assert!((1..=15).contains(&c.as_str().len()));
    }
    // The length is of the struct the bytes cover: all of them up to the
    // struct's size, which later kernels may exceed.
    if let Some(t) = TcpInfo::decode(data) {
        assert_eq!(t.len, data.len().min(plumb_tcpinfo::SIZE));
    }
});
