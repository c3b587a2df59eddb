//! Frames a capture holds twice are not retransmissions: where `editcap`
//! finds duplicates in a file, plumb's retransmissions there must not
//! exceed tshark's on the file without them.
//!
//! A duplicate is a frame byte for byte equal to one at most 10 ms before
//! it (`editcap -w 0.01`): what a capture taken on both sides of a bridge,
//! on two interfaces or through a mirror port records. `editcap -D N`
//! (equal to one of the N − 1 frames before it, however long before) also
//! drops a genuine retransmission that happens to be byte-identical to its
//! original, as in zeek's `tcp/retransmit-timeout.pcapng` (a resend 300 s
//! later, no timestamps, IP ID 0); a resend within 10 ms of its original
//! needs a round trip under 10 ms and, even then, differs in its IP ID or
//! TCP timestamp from every stack that sets them.
//!
//! plumb's figure is the sum over the file's explained flows of
//! `retransmits` and `out_of_order`; tshark's the frames with data it flags
//! `tcp.analysis.retransmission`, `fast_retransmission`,
//! `spurious_retransmission` or `out_of_order` (as `public.rs` compares
//! them). plumb may exceed tshark's count by 5 % of it or 2 frames,
//! whichever is more (`public.rs`'s tolerance), and no more.

use std::path::Path;
use std::process::{Command, Stdio};

use super::checks::{Check, Violation};
use super::{captures_dir, Run};

/// The time window within which an equal frame is a duplicate, in seconds.
pub const WINDOW_S: &str = "0.01";

/// tshark's frames with data it counts as resent or late.
const RESENT: &str = "tcp.len > 0 && (tcp.analysis.retransmission || \
    tcp.analysis.fast_retransmission || tcp.analysis.spurious_retransmission || \
    tcp.analysis.out_of_order)";

/// Whether editcap and tshark both run here.
pub fn tools_present() -> bool {
    ["editcap", "tshark"].iter().all(|t| {
        Command::new(t)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// plumb's retransmissions (and segments seen late) in one run's flows.
pub fn plumb_resent(r: &Run) -> u64 {
    r.flows()
        .iter()
        .map(|x| {
            let f = &x["flow"];
            f["retransmits"].as_u64().unwrap_or(0) + f["out_of_order"].as_u64().unwrap_or(0)
        })
        .sum()
}

/// What one file with duplicates came to: frames editcap dropped, plumb's
/// count, tshark's count without the duplicates.
#[derive(Debug)]
pub struct Compared {
    pub file: String,
    pub dropped: u64,
    pub plumb: u64,
    pub tshark: u64,
}

/// Compares one run whose flows hold retransmissions; `None` when editcap
/// finds no duplicate in the file. `scratch` holds the copy without them.
pub fn compare(r: &Run, scratch: &Path) -> Option<Compared> {
    let plumb = plumb_resent(r);
    let src = captures_dir().join(&r.file);
    let dst = scratch.join(r.file.replace('/', "_") + ".pcapng");
    let out = Command::new("editcap")
        .args(["-w", WINDOW_S])
        .arg(&src)
        .arg(&dst)
        .output()
        .expect("editcap runs");
    assert!(out.status.success(), "editcap on {}: {out:?}", r.file);
    let dropped = skipped(&String::from_utf8_lossy(&out.stdout))
        .or_else(|| skipped(&String::from_utf8_lossy(&out.stderr)))
        .unwrap_or_else(|| panic!("editcap on {} said nothing of duplicates: {out:?}", r.file));
    if dropped == 0 {
        let _ = std::fs::remove_file(&dst);
        return None;
    }
    let t = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&dst)
        .args(["-Y", RESENT, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("tshark runs");
    assert!(t.status.success(), "tshark on {}: {t:?}", dst.display());
    let _ = std::fs::remove_file(&dst);
    let tshark = String::from_utf8_lossy(&t.stdout).lines().count() as u64;
    Some(Compared {
        file: r.file.clone(),
        dropped,
        plumb,
        tshark,
    })
}

/// editcap's "N packets skipped" (or "1 packet skipped").
fn skipped(said: &str) -> Option<u64> {
    let i = said
        .find(" packet skipped")
        .or_else(|| said.find(" packets skipped"))?;
    let head = &said[..i];
    let start = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |j| j + 1);
    head[start..].parse().ok()
}

/// The violation, if plumb counted more than tshark allows.
pub fn judge(c: &Compared) -> Option<Violation> {
    let allowed = c.tshark + (c.tshark / 20).max(2);
    (c.plumb > allowed).then(|| Violation {
        check: Check::DuplicateAsRetransmission,
        file: c.file.clone(),
        flow: String::new(),
        what: format!(
            "{} duplicate frame(s) (editcap -w {WINDOW_S}); plumb counts {} retransmitted or late \
             segments, tshark {} without the duplicates",
            c.dropped, c.plumb, c.tshark
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editcap_counts_are_read() {
        assert_eq!(skipped("377 packets seen, 280 packets skipped with duplicate time window equal to or less than 0.010000000 seconds."), Some(280));
        assert_eq!(
            skipped("3 packets seen, 1 packet skipped with duplicate window of 5 packets."),
            Some(1)
        );
        assert_eq!(skipped("nothing"), None);
    }
}
