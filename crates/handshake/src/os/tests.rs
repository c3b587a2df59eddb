//! The OS guess against SYNs and SYN-ACKs built to each stack's published
//! defaults (docs/handshake.md names the sources), ambiguous inputs, and
//! the TTL's edges.

use super::*;

/// A SYN (or SYN-ACK) from the facts a capture shows; DF set, as every
/// stack in the table sets it.
fn syn(ttl: u8, window: u16, kinds: &[u8], wscale: Option<u8>) -> SynFacts {
    SynFacts {
        ttl,
        window,
        mss: kinds.contains(&M).then_some(1460),
        wscale,
        sack_permitted: kinds.contains(&S),
        timestamps: kinds.contains(&T),
        option_kinds: kinds.to_vec(),
        df: Some(true),
        syn_ack: false,
    }
}

fn syn_ack(ttl: u8, window: u16, kinds: &[u8], wscale: Option<u8>) -> SynFacts {
    SynFacts {
        syn_ack: true,
        ..syn(ttl, window, kinds, wscale)
    }
}

fn is(g: &OsGuess, family: Family, confidence: Confidence) {
    assert_eq!((g.family, g.confidence), (family, confidence), "{g:#?}");
    assert!(g.note.starts_with("a guess"), "{g:#?}");
}

#[test]
fn initial_ttl_is_the_next_common_value() {
    for (seen, initial) in [
        (0, 32),
        (32, 32),
        (33, 64),
        (61, 64),
        (64, 64),
        (65, 128),
        (116, 128),
        (128, 128),
        (129, 255),
        (250, 255),
        (255, 255),
    ] {
        assert_eq!(initial_ttl(seen), initial, "TTL {seen}");
    }
}

#[test]
fn linux_from_its_syn_and_its_syn_ack() {
    // Linux 4.19+: 64,240 B (44 × 1,460) in a SYN, 65,160 (45 × 1,448) in a
    // SYN-ACK with timestamps; MSS,SACK,TS,NOP,WS; shift 7 for a 6 MB rmem.
    let s = guess(&syn(64, 64_240, &[M, S, T, N, W], Some(7)));
    is(&s, Family::Linux, Confidence::High);
    assert_eq!((s.initial_ttl, s.hops), (64, 0));
    let a = guess(&syn_ack(61, 65_160, &[M, S, T, N, W], Some(7)));
    is(&a, Family::Linux, Confidence::High);
    assert_eq!(a.hops, 3);
    assert_eq!(fix_os(&a), Some("linux"));
    assert!(a.reasons[0].starts_with("initial TTL 64 (arrived as 61: 3 hops)"));
    assert!(
        a.reasons.iter().any(|r| r.contains("MSS,SACK,TS,NOP,WS")),
        "{a:#?}"
    );
}

#[test]
fn linux_without_timestamps_or_scaling_is_a_weaker_guess() {
    // tcp_timestamps=0, tcp_window_scaling=0: MSS,NOP,NOP,SACK, 44 × 1,460.
    let g = guess(&syn_ack(64, 64_240, &[M, N, N, S], None));
    is(&g, Family::Linux, Confidence::Low);
    assert_eq!(fix_os(&g), None, "a low-confidence guess reorders no fixes");
    assert!(
        g.reasons.iter().any(|r| r.contains("no window scaling")),
        "{g:#?}"
    );
    // The backup server's 17,520 B (12 × 1,460) is whole segments too.
    let b = guess(&syn_ack(64, 17_520, &[M, N, N, S], None));
    is(&b, Family::Linux, Confidence::Low);
}

#[test]
fn windows_vista_and_later() {
    // Windows 10: 64,240 B, shift 8, MSS,NOP,WS,NOP,NOP,SACK, no timestamps.
    let ten = guess(&syn(128, 64_240, &[M, N, W, N, N, S], Some(8)));
    is(&ten, Family::WindowsModern, Confidence::High);
    assert_eq!(fix_os(&ten), Some("windows"));
    // Windows 7: 8,192 B, four hops away.
    let seven = guess(&syn(124, 8_192, &[M, N, W, N, N, S], Some(8)));
    is(&seven, Family::WindowsModern, Confidence::High);
    assert_eq!(seven.label, "Windows (Vista or later)");
}

#[test]
fn windows_xp_and_2003() {
    // XP's SYN, 12 hops away: 65,535 B, MSS,NOP,NOP,SACK, no scaling, no timestamps.
    let xp = guess(&syn(116, 65_535, &[M, N, N, S], None));
    is(&xp, Family::WindowsLegacy, Confidence::Medium);
    assert_eq!((xp.initial_ttl, xp.hops), (128, 12));
    assert_eq!(fix_os(&xp), Some("windows-legacy"));
    // The running example's Windows 2003 server: 17,520 B (KB 224829).
    let w2003 = guess(&syn_ack(120, 17_520, &[M, N, N, S], None));
    is(&w2003, Family::WindowsLegacy, Confidence::Medium);
    assert_eq!(w2003.label, "Windows XP / Server 2003 or older");
}

#[test]
fn macos_and_freebsd() {
    let mac = guess(&syn(64, 65_535, &[M, N, W, N, N, T, S, E], Some(6)));
    is(&mac, Family::MacosBsd, Confidence::High);
    assert_eq!(mac.closest.as_deref(), Some("macOS / iOS"));
    assert_eq!(fix_os(&mac), Some("macos"));
    let bsd = guess(&syn(57, 65_535, &[M, N, W, S, T], Some(6)));
    is(&bsd, Family::MacosBsd, Confidence::High);
    assert_eq!(fix_os(&bsd), Some("freebsd"));
}

#[test]
fn initial_ttl_255_is_an_appliance() {
    // Cisco IOS: 4,128 B and a bare MSS, TTL 255 less 5 hops.
    let r = guess(&syn_ack(250, 4_128, &[M], None));
    is(&r, Family::Appliance, Confidence::Medium);
    assert_eq!((r.initial_ttl, r.hops), (255, 5));
    assert_eq!(fix_os(&r), None);
    let busy = guess(&syn_ack(255, 65_535, &[M, S, T, N, W], Some(7)));
    is(&busy, Family::Appliance, Confidence::Low);
}

#[test]
fn ambiguous_inputs_are_unknown_or_low() {
    // No options, an odd window: nothing fits.
    let none = guess(&syn(64, 5_000, &[], None));
    is(&none, Family::Unknown, Confidence::Low);
    assert_eq!(fix_os(&none), None);
    // A bare MSS with 65,535 B fits macOS a little better than Linux, no more.
    let bare = guess(&syn(64, 65_535, &[M], None));
    assert_eq!(bare.confidence, Confidence::Low, "{bare:#?}");
    assert_eq!(fix_os(&bare), None);
    // Initial TTL 32: not in the table.
    is(
        &guess(&syn(30, 8_192, &[M], None)),
        Family::Unknown,
        Confidence::Low,
    );
    // Options in an order no row writes.
    let odd = guess(&syn(64, 64_240, &[W, N, M, S, T], Some(7)));
    is(&odd, Family::Unknown, Confidence::Low);
}

#[test]
fn too_many_hops_lowers_the_confidence() {
    // TTL 70 rounds up to 128: 58 hops is more than a path has.
    let g = guess(&syn(70, 64_240, &[M, N, W, N, N, S], Some(8)));
    is(&g, Family::WindowsModern, Confidence::Low);
    assert!(g.reasons.iter().any(|r| r.contains("58 hops")), "{g:#?}");
}

#[test]
fn no_dont_fragment_counts_against() {
    let mut f = syn(128, 64_240, &[M, N, W, N, N, S], Some(8));
    let with = guess(&f);
    f.df = Some(false);
    let without = guess(&f);
    assert_eq!(without.family, Family::WindowsModern);
    assert!(
        without.reasons.iter().any(|r| r.contains("don't-fragment")),
        "{without:#?}"
    );
    assert!(with.reasons.len() < without.reasons.len());
}

#[test]
fn layouts_read_in_words() {
    assert_eq!(layout_name(&[M, S, T, N, W]), "MSS,SACK,TS,NOP,WS");
    assert_eq!(layout_name(&[M, 30, E]), "MSS,kind 30,EOL");
    assert_eq!(layout_name(&[]), "none");
}
