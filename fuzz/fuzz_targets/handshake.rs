//! A peer's SYN-ACK as a raw socket hands it over (an IPv4 packet), through
//! `plumb handshake`'s decoder and the OS guess: never a panic; the option
//! layout never longer than the header's option bytes; the guess's initial
//! TTL at or above the TTL read, its hops the difference, and a fix named
//! only for a guess of medium confidence or more. The same bytes read as a
//! bare option list, or as a TCP segment without its IP header (IPv6's raw
//! socket), hold to the same bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_handshake::os::{fix_os, guess};
use plumb_handshake::wire::{parse_ipv4_tcp, parse_options, parse_tcp};
use plumb_record::handshake::{Confidence, Family};
use std::net::{IpAddr, Ipv6Addr};

fuzz_target!(|data: &[u8]| {
    if let Ok(o) = parse_options(data) {
        assert!(o.kinds.len() <= data.len());
    }
    let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
    if let Ok(seg) = parse_tcp(data, v6, v6, data.first().copied().unwrap_or(0), None) {
        assert!(seg.options.kinds.len() <= data.len().saturating_sub(20));
        let g = guess(&seg.facts());
        assert_eq!(g.hops, g.initial_ttl - seg.ttl);
    }
    let Ok(seg) = parse_ipv4_tcp(data) else { return };
    // 20 B of IPv4 header at least, 20 B of TCP header before the options.
    assert!(seg.options.kinds.len() <= data.len().saturating_sub(40));
    let f = seg.facts();
    assert_eq!(f.option_kinds, seg.options.kinds);
    let g = guess(&f);
    assert!(g.initial_ttl >= f.ttl);
    assert_eq!(g.hops, g.initial_ttl - f.ttl);
    assert!(!g.reasons.is_empty() && g.note.starts_with("a guess"));
    if fix_os(&g).is_some() {
        assert!(g.confidence >= Confidence::Medium);
        assert!(!matches!(g.family, Family::Unknown | Family::Appliance));
    }
});
