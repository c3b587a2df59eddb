//! Each end's operating system, guessed from its SYN (or SYN-ACK) by a
//! guesser the caller plugs in ([`OsGuess`]), and what the guess changes:
//! a sentence beside the verdict, always worded as a guess, and, where the
//! guess is confident, that system's fix put first. The guesser is the
//! caller's so that this crate needs no table of stacks: `plumb` joins it
//! to `plumb-handshake`'s.

use plumb_record::capture::{HostGuess, OsReading, Role};
use plumb_record::diagnosis::{Diagnosis, Limit};

use crate::connection::Connection;
use crate::direction::Syn;

/// A guesser: an end's SYN (`true`: a SYN-ACK) to what it reads of its
/// operating system, `None` when it reads nothing.
pub type OsGuess<'a> = &'a dyn Fn(&Syn, bool) -> Option<OsReading>;

/// The guesses for `c`'s two ends whose SYN was captured, sender first.
pub fn guesses(c: &Connection, client_sends: bool, os: OsGuess<'_>) -> Vec<HostGuess> {
    // The client sent the SYN, the server the SYN-ACK.
    let ends = [(&c.client, false), (&c.server, true)];
    let mut out: Vec<HostGuess> = ends
        .into_iter()
        .filter_map(|(d, syn_ack)| {
            let guess = os(d.syn.as_ref()?, syn_ack)?;
            let role = if syn_ack != client_sends {
                Role::Sender
            } else {
                Role::Receiver
            };
            Some(HostGuess {
                host: d.sender.clone(),
                role,
                from_syn_ack: syn_ack,
                guess,
            })
        })
        .collect();
    out.sort_by_key(|g| g.role != Role::Sender);
    out
}

/// The sentence for one guess, worded as a guess, with its reasons.
pub fn sentence(g: &HostGuess) -> String {
    let r = &g.guess;
    let from = if g.from_syn_ack { "SYN-ACK" } else { "SYN" };
    let what = if r.fix_os.is_some() {
        format!("{}, a guess of {} confidence", r.os, r.confidence)
    } else if r.os == "unknown" {
        "operating system unknown, no confident guess".to_string()
    } else {
        format!(
            "perhaps {}, a guess of {} confidence, too weak to act on",
            r.os, r.confidence
        )
    };
    format!(
        "{} ({}): {what} from its {from}: {}",
        g.host,
        g.role.word(),
        r.reasons.join("; ")
    )
}

/// What misleads the guesses, said once under them.
pub fn caveat(guesses: &[HostGuess]) -> Option<String> {
    let g = guesses.first()?;
    Some(format!("each operating system above is {}", g.guess.note))
}

/// The end whose system the answer's fixes are made on: the receiver for a
/// receive window (its buffer), the sender otherwise.
fn fixed_at(limit: Option<Limit>) -> Role {
    match limit {
        Some(Limit::ReceiveWindow) => Role::Receiver,
        _ => Role::Sender,
    }
}

/// Puts first the fixes for the system confidently guessed at the end the
/// answer's fixes are made on, keeping the rest in order; returns that
/// system's `os` when a fix moved.
pub fn fix_first(dg: &mut Diagnosis, guesses: &[HostGuess]) -> Option<String> {
    let at = fixed_at(dg.limit);
    let os = guesses
        .iter()
        .find(|g| g.role == at)
        .and_then(|g| g.guess.fix_os.clone())?;
    if !dg.fixes.iter().any(|f| f.os == os) {
        return None;
    }
    // A stable sort: the guessed system's fixes first, the others as the
    // rules ordered them.
    dg.fixes.sort_by_key(|f| f.os != os);
    Some(os)
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_record::diagnosis::Fix;

    fn reading(os: &str, fix: Option<&str>) -> OsReading {
        OsReading {
            os: os.into(),
            confidence: if fix.is_some() { "high" } else { "low" }.into(),
            fix_os: fix.map(Into::into),
            reasons: vec!["initial TTL 128".into()],
            note: "a guess".into(),
        }
    }

    fn end(role: Role, r: OsReading) -> HostGuess {
        HostGuess {
            host: "10.0.0.2:445".into(),
            role,
            from_syn_ack: role == Role::Receiver,
            guess: r,
        }
    }

    fn diagnosis(limit: Limit, oses: &[&str]) -> Diagnosis {
        let mut dg = plumb_diagnose::diagnose(&plumb_diagnose::Evidence::default());
        dg.limit = Some(limit);
        dg.fixes = oses
            .iter()
            .map(|os| Fix {
                os: (*os).into(),
                commands: vec![],
                expected_bps: None,
                note: String::new(),
            })
            .collect();
        dg
    }

    fn order(dg: &Diagnosis) -> Vec<&str> {
        dg.fixes.iter().map(|f| f.os.as_str()).collect()
    }

    #[test]
    fn a_confident_guess_at_the_limited_end_puts_its_fix_first() {
        let g = [
            end(Role::Sender, reading("Linux", Some("linux"))),
            end(
                Role::Receiver,
                reading("Windows XP", Some("windows-legacy")),
            ),
        ];
        let mut dg = diagnosis(
            Limit::ReceiveWindow,
            &["linux", "windows", "windows-legacy", "application"],
        );
        assert_eq!(fix_first(&mut dg, &g).as_deref(), Some("windows-legacy"));
        assert_eq!(
            order(&dg),
            ["windows-legacy", "linux", "windows", "application"]
        );
        // A send buffer is the sender's: its system's fix stays first.
        let mut dg = diagnosis(Limit::SendBuffer, &["windows", "linux"]);
        assert_eq!(fix_first(&mut dg, &g).as_deref(), Some("linux"));
        assert_eq!(order(&dg), ["linux", "windows"]);
    }

    #[test]
    fn a_weak_guess_moves_nothing_and_says_so() {
        let g = [end(Role::Receiver, reading("Windows XP", None))];
        let mut dg = diagnosis(Limit::ReceiveWindow, &["linux", "windows-legacy"]);
        assert_eq!(fix_first(&mut dg, &g), None);
        assert_eq!(order(&dg), ["linux", "windows-legacy"]);
        let s = sentence(&g[0]);
        assert!(
            s.contains("perhaps Windows XP") && s.contains("too weak to act on"),
            "{s}"
        );
        let unknown = end(Role::Receiver, reading("unknown", None));
        let s = sentence(&unknown);
        assert!(
            s.contains("operating system unknown, no confident guess"),
            "{s}"
        );
        assert!(s.contains("from its SYN-ACK: initial TTL 128"), "{s}");
        let once = caveat(&[g[0].clone(), unknown]).expect("a caveat");
        assert_eq!(once, "each operating system above is a guess");
    }
}
