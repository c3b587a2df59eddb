//! A guess at a host's operating system from one SYN or SYN-ACK it sent:
//! its initial TTL, its window, and the layout of its TCP options, scored
//! against a small table of stacks' defaults (the table and its sources are
//! in docs/handshake.md, "Guessing the operating system"). Always a guess:
//! a load balancer, a SYN proxy, a middlebox that rewrites options, or a
//! changed default mislead it, and it says why it guessed what it did.
//!
//! The input, [`SynFacts`], is plain values, so a raw SYN-ACK
//! (`plumb handshake`) and a capture's SYN or SYN-ACK fill it alike;
//! [`fix_os`] names which operating system's fix to put first.

use plumb_model::units::thousands;
use plumb_record::handshake::{Confidence, Family, OsGuess};

/// What one SYN or SYN-ACK shows of its sender. Plain values: fill it from
/// any decoder.
///
/// A SYN-ACK carries only the options its SYN asked for (RFC 7323 §1.3,
/// RFC 2018 §2): its facts say most when the SYN offered every option, as
/// `plumb handshake`'s raw SYN does. From a capture, a SYN-ACK answering a
/// SYN without timestamps or window scaling scores lower, never wrongly
/// higher.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SynFacts {
    /// The IPv4 TTL (or IPv6 hop limit) as the packet arrived.
    pub ttl: u8,
    /// The window field (a SYN's or SYN-ACK's is never scaled).
    pub window: u16,
    /// The MSS option's value, if present.
    pub mss: Option<u16>,
    /// The window scale option's shift, if present.
    pub wscale: Option<u8>,
    /// The SACK-permitted option is present.
    pub sack_permitted: bool,
    /// The timestamps option is present.
    pub timestamps: bool,
    /// The option kinds in the order they appear, NOPs (1) included, up to
    /// and including an end-of-list (0): what follows an EOL is padding and
    /// is not listed.
    pub option_kinds: Vec<u8>,
    /// The IPv4 don't-fragment bit, if known (`None` for IPv6).
    pub df: Option<bool>,
    /// A SYN-ACK (`true`) or a SYN (`false`).
    pub syn_ack: bool,
}

const NOTE: &str = "a guess from one SYN or SYN-ACK (initial TTL, window, option layout, as p0f does): a load balancer, a SYN proxy, a middlebox rewriting options or a changed default makes it wrong";

/// Option kinds (RFC 793, 7323, 2018).
const E: u8 = 0;
const N: u8 = 1;
const M: u8 = 2;
const W: u8 = 3;
const S: u8 = 4;
const T: u8 = 8;

/// A row of the table: one stack's defaults.
struct Stack {
    name: &'static str,
    family: Family,
    ittl: u8,
    /// The order it writes MSS, window scale, SACK-permitted and timestamps.
    order: [u8; 4],
    /// The exact layouts (NOPs, EOL) of its SYNs: the default, then with
    /// options turned off.
    syn: &'static [&'static [u8]],
    /// The same for its SYN-ACKs.
    syn_ack: &'static [&'static [u8]],
    /// Windows its defaults give on Ethernet.
    windows: &'static [u16],
    /// It sizes its window in whole segments.
    mss_multiple: bool,
    /// Its default shifts; empty: it does not scale by default.
    shifts: &'static [u8],
    /// It offers timestamps by default.
    timestamps: bool,
}

/// Linux writes the same layouts in a SYN and a SYN-ACK (one writer of
/// options for both), dropping what is off and padding with NOPs.
const LINUX_LAYOUTS: &[&[u8]] = &[
    &[M, S, T, N, W],
    &[M, N, N, S, N, W],
    &[M, N, N, T, N, W],
    &[M, S, T],
    &[M, N, N, S],
    &[M, N, N, T],
    &[M, N, W],
    &[M],
];

const TABLE: &[Stack] = &[
    Stack {
        name: "Linux",
        family: Family::Linux,
        ittl: 64,
        order: [M, S, T, W],
        syn: LINUX_LAYOUTS,
        syn_ack: LINUX_LAYOUTS,
        windows: &[64_240, 65_160, 29_200, 14_600, 5_840, 65_483],
        mss_multiple: true,
        shifts: &[7],
        timestamps: true,
    },
    Stack {
        name: "Windows Vista or later",
        family: Family::WindowsModern,
        ittl: 128,
        order: [M, W, S, T],
        syn: &[&[M, N, W, N, N, S], &[M, N, N, S], &[M, N, W, S, T]],
        syn_ack: &[
            &[M, N, W, N, N, S],
            &[M, N, W, S, T],
            &[M, N, W, N, N, T],
            &[M, N, N, S],
            &[M, S, T],
            &[M, N, N, T],
            &[M, N, W],
            &[M],
        ],
        windows: &[8_192, 64_240, 65_535],
        mss_multiple: false,
        shifts: &[8],
        timestamps: false,
    },
    Stack {
        name: "Windows XP / 2003",
        family: Family::WindowsLegacy,
        ittl: 128,
        order: [M, W, T, S],
        syn: &[&[M, N, N, S], &[M, N, W, N, N, S], &[M]],
        syn_ack: &[
            &[M, N, N, S],
            &[M, N, W, N, N, S],
            &[M, N, N, T, N, N, S],
            &[M, N, W, N, N, T, N, N, S],
            &[M, N, N, T],
            &[M, N, W, N, N, T],
            &[M, N, W],
            &[M],
        ],
        windows: &[65_535, 64_240, 17_520, 16_384],
        mss_multiple: true,
        shifts: &[],
        timestamps: false,
    },
    Stack {
        name: "macOS / iOS",
        family: Family::MacosBsd,
        ittl: 64,
        order: [M, W, T, S],
        syn: MACOS_LAYOUTS,
        syn_ack: MACOS_LAYOUTS,
        windows: &[65_535],
        mss_multiple: false,
        shifts: &[2, 3, 4, 5, 6],
        timestamps: true,
    },
    Stack {
        name: "FreeBSD",
        family: Family::MacosBsd,
        ittl: 64,
        order: [M, W, S, T],
        syn: FREEBSD_LAYOUTS,
        syn_ack: FREEBSD_LAYOUTS,
        windows: &[65_535],
        mss_multiple: false,
        shifts: &[3, 6],
        timestamps: true,
    },
];

const MACOS_LAYOUTS: &[&[u8]] = &[
    &[M, N, W, N, N, T, S, E],
    &[M, N, W, S, E],
    &[M, N, N, T, S, E],
    &[M, N, W, N, N, T],
    &[M, S, E],
    &[M, N, N, T],
    &[M, N, W],
    &[M],
];

const FREEBSD_LAYOUTS: &[&[u8]] = &[
    &[M, N, W, S, T],
    &[M, N, W, S, E],
    &[M, N, W, N, N, T],
    &[M, S, T],
    &[M, S, E],
    &[M, N, N, T],
    &[M, N, W],
    &[M],
];

/// The initial TTL a packet left with: the observed TTL rounded up to the
/// next of the values stacks use (32, 64, 128, 255).
pub fn initial_ttl(observed: u8) -> u8 {
    match observed {
        0..=32 => 32,
        33..=64 => 64,
        65..=128 => 128,
        _ => 255,
    }
}

/// More routers than paths have: the initial TTL is likely another value.
const MAX_HOPS: u8 = 35;

/// An option list in words: `MSS,SACK,TS,NOP,WS`.
pub fn layout_name(kinds: &[u8]) -> String {
    if kinds.is_empty() {
        return "none".into();
    }
    let name = |k: &u8| match *k {
        E => "EOL".to_string(),
        N => "NOP".to_string(),
        M => "MSS".to_string(),
        W => "WS".to_string(),
        S => "SACK".to_string(),
        T => "TS".to_string(),
        k => format!("kind {k}"),
    };
    kinds.iter().map(name).collect::<Vec<_>>().join(",")
}

/// One row's score and the reasons behind it.
struct Fit {
    points: i32,
    reasons: Vec<String>,
}

impl Fit {
    fn add(&mut self, points: i32, reason: String) {
        self.points += points;
        self.reasons.push(reason);
    }
}

/// Whether `kinds` (NOPs and EOLs left out) come in `order`.
fn in_order(kinds: &[u8], order: &[u8; 4]) -> bool {
    let mut rest = order.iter();
    kinds
        .iter()
        .filter(|&&k| k != N && k != E)
        .all(|k| rest.any(|o| o == k))
}

/// How well `f` fits `s`.
fn fit(f: &SynFacts, s: &Stack) -> Fit {
    let mut fit = Fit {
        points: 0,
        reasons: Vec::new(),
    };
    let who = s.name;
    let layout = layout_name(&f.option_kinds);
    let known = if f.syn_ack { s.syn_ack } else { s.syn };
    let meaningful = f.option_kinds.iter().filter(|&&k| k != N && k != E).count();
    if !in_order(&f.option_kinds, &s.order) {
        fit.add(-3, format!("options {layout}: not in {who}'s order"));
    } else {
        if meaningful >= 3 {
            fit.add(2, format!("options in {who}'s order ({layout})"));
        }
        if known.contains(&f.option_kinds.as_slice()) {
            fit.add(
                2,
                format!("option layout {layout}, NOPs included, as {who} writes it"),
            );
        }
    }
    let multiple = f.mss.filter(|&m| m > 12).is_some_and(|m| {
        let w = u32::from(f.window);
        // Whole segments of the MSS, or of the MSS less 12 B of timestamps.
        w >= u32::from(m - 12) && (w % u32::from(m) == 0 || w % u32::from(m - 12) == 0)
    });
    if s.windows.contains(&f.window) {
        fit.add(1, format!("window {}: a default of {who}'s", f.window));
    } else if s.mss_multiple && multiple {
        fit.add(
            1,
            format!("window {}: whole segments, as {who} sizes it", f.window),
        );
    }
    match (s.shifts.is_empty(), f.wscale) {
        (true, None) => fit.add(1, format!("no window scaling: {who}'s default")),
        (true, Some(shift)) => fit.add(
            -2,
            format!("window scale shift {shift}: {who} does not scale by default"),
        ),
        (false, Some(shift)) if s.shifts.contains(&shift) => {
            fit.add(1, format!("window scale shift {shift}: a default of {who}'s"))
        }
        (false, Some(_)) => {}
        (false, None) => fit.add(
            -1,
            format!("no window scaling, which {who} offers by default: a changed setting, or a SYN that did not ask"),
        ),
    }
    if f.timestamps == s.timestamps {
        let does = if s.timestamps {
            "offers"
        } else {
            "does not offer"
        };
        fit.add(1, format!("{who} {does} timestamps by default, as here"));
    } else if !f.syn_ack {
        fit.add(
            -1,
            format!(
                "timestamps {}: not {who}'s default",
                if f.timestamps { "on" } else { "off" }
            ),
        );
    }
    if f.df == Some(false) {
        fit.add(
            -1,
            format!("don't-fragment unset: {who} sets it (path MTU discovery)"),
        );
    }
    fit
}

/// Guesses the operating system that sent `f`. Always a guess: see
/// [`OsGuess::note`] and its reasons.
pub fn guess(f: &SynFacts) -> OsGuess {
    let ittl = initial_ttl(f.ttl);
    let hops = ittl - f.ttl;
    let mut reasons = vec![format!(
        "initial TTL {ittl} (arrived as {}: {hops} hop{})",
        f.ttl,
        if hops == 1 { "" } else { "s" }
    )];
    let out = |family: Family, confidence, closest: Option<&str>, reasons| OsGuess {
        family,
        label: family.label().to_string(),
        confidence,
        closest: closest.map(str::to_string),
        initial_ttl: ittl,
        hops,
        reasons,
        note: NOTE.to_string(),
    };
    match ittl {
        255 => {
            // Routers (Cisco IOS), NAS and other embedded stacks, old
            // Solaris: too many to tell apart; a bare MSS-only SYN is
            // typical of the small ones.
            let bare = f.option_kinds.iter().all(|&k| k == M || k == N || k == E);
            reasons.push("initial TTL 255: routers and embedded stacks use it; desktop and server systems do not".into());
            let c = if bare {
                reasons.push(format!(
                    "options {}: a minimal stack's",
                    layout_name(&f.option_kinds)
                ));
                Confidence::Medium
            } else {
                Confidence::Low
            };
            return out(Family::Appliance, c, None, reasons);
        }
        32 => {
            reasons.push(
                "initial TTL 32: Windows 95/98/NT 4 and some embedded stacks, not in this table"
                    .into(),
            );
            return out(Family::Unknown, Confidence::Low, None, reasons);
        }
        _ => {}
    }
    // The best row of each family that shares the initial TTL.
    let mut best: Vec<(&Stack, Fit)> = Vec::new();
    for s in TABLE.iter().filter(|s| s.ittl == ittl) {
        let fs = fit(f, s);
        match best.iter_mut().find(|(b, _)| b.family == s.family) {
            Some(slot) if slot.1.points >= fs.points => {}
            Some(slot) => *slot = (s, fs),
            None => best.push((s, fs)),
        }
    }
    best.sort_by_key(|b| std::cmp::Reverse(b.1.points));
    let top = best.first().map_or(i32::MIN, |b| b.1.points);
    let runner = best.get(1).map_or(i32::MIN / 2, |b| b.1.points);
    let lead = top.saturating_sub(runner);
    let Some((stack, fit)) = best.into_iter().next().filter(|_| top >= 1 && lead >= 1) else {
        reasons.push(format!(
            "window {} B and options {}: no family in the table fits better than another",
            thousands(f.window.into()),
            layout_name(&f.option_kinds)
        ));
        return out(Family::Unknown, Confidence::Low, None, reasons);
    };
    let mut confidence = if top >= 6 && lead >= 3 {
        Confidence::High
    } else if top >= 4 && lead >= 2 {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    if hops > MAX_HOPS {
        reasons.push(format!(
            "{hops} hops is more than paths have: the initial TTL may be another value"
        ));
        confidence = Confidence::Low;
    }
    reasons.extend(fit.reasons);
    out(stack.family, confidence, Some(stack.name), reasons)
}

/// Which operating system's fix to put first (the `os` names of
/// plumb-diagnose's fixes: `windows`, `windows-legacy`, `linux`, `macos`,
/// `freebsd`), for a guess of medium confidence or more; `None` otherwise.
pub fn fix_os(g: &OsGuess) -> Option<&'static str> {
    if g.confidence < Confidence::Medium {
        return None;
    }
    match g.family {
        Family::WindowsModern => Some("windows"),
        Family::WindowsLegacy => Some("windows-legacy"),
        Family::Linux => Some("linux"),
        Family::MacosBsd if g.closest.as_deref() == Some("FreeBSD") => Some("freebsd"),
        Family::MacosBsd => Some("macos"),
        Family::Appliance | Family::Unknown => None,
    }
}

#[cfg(test)]
mod tests;
