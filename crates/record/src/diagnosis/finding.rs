//! The finding types: what limits a transfer ([`Limit`]), one cause the
//! evidence shows weighed against the measured rate ([`Finding`]), the
//! numbers behind it ([`EvidenceLine`], [`EvidenceKind`]), how sure it is ([`Confidence`]),
//! where it stands ([`Status`]) and a change to make ([`Fix`]).
//!
//! Plain data: `plumb-diagnose` builds them, every printer reads them.

use serde::{Deserialize, Serialize};

/// What limits a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The receiver's advertised window.
    ReceiveWindow,
    /// The sender's socket buffer.
    SendBuffer,
    /// The congestion window, held down without loss.
    Congestion,
    /// Packet loss, as Mathis predicts for loss-based congestion control.
    Loss,
    /// The link itself: nothing to fix.
    Link,
    /// A CPU at either end.
    Cpu,
    /// The sending application (a rate cap, or it did not write fast enough).
    Application,
    /// Segments far smaller than the path allows.
    PathMtu,
}

impl Limit {
    /// The JSON name (`receive_window`, …).
    pub fn name(self) -> &'static str {
        match self {
            Limit::ReceiveWindow => "receive_window",
            Limit::SendBuffer => "send_buffer",
            Limit::Congestion => "congestion",
            Limit::Loss => "loss",
            Limit::Link => "link",
            Limit::Cpu => "cpu",
            Limit::Application => "application",
            Limit::PathMtu => "path_mtu",
        }
    }
}

/// How sure a finding is, in words: a band of the numeric confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Below 0.45.
    Low,
    /// 0.45 to 0.75.
    Medium,
    /// 0.75 and above.
    High,
}

impl Confidence {
    /// The band a numeric confidence falls in.
    pub fn of(c: f64) -> Confidence {
        if c >= 0.75 {
            Confidence::High
        } else if c >= 0.45 {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }

    /// `high`, `medium`, `low`.
    pub fn word(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// Where a finding stands against the measured rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// The answer.
    #[serde(rename = "primary")]
    Primary,
    /// Explains the rate or binds by its counters too, with less confidence.
    #[serde(rename = "binding")]
    Binding,
    /// Its evidence is there, but it neither explains the rate nor binds.
    #[serde(rename = "seen, not binding")]
    NotBinding,
}

impl Status {
    /// As the JSON and the text say it.
    pub fn word(self) -> &'static str {
        match self {
            Status::Primary => "primary",
            Status::Binding => "binding",
            Status::NotBinding => "seen, not binding",
        }
    }
}

/// One number behind a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "LineWords")]
pub struct EvidenceLine {
    /// What was measured.
    pub what: String,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// What the number is, for code that keeps or drops lines by it.
    #[serde(skip)]
    pub kind: EvidenceKind,
}

/// What an [`EvidenceLine`] states: the measurement or the path, which an
/// answer shows whatever its cause, or a figure of one finding.
///
/// The JSON does not carry it: a line read back is known by the words the
/// rules write for it ([`EvidenceKind::of`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EvidenceKind {
    /// The measured goodput.
    Goodput,
    /// The link's line rate.
    LinkRate,
    /// The path's RTT as TCP saw it (smoothed or minimum).
    Rtt,
    /// A figure behind one finding.
    #[default]
    Figure,
}

impl EvidenceKind {
    /// The kind of a line the rules worded `what`.
    pub fn of(what: &str) -> EvidenceKind {
        if what == "measured" || what == "measured goodput (receiver)" {
            EvidenceKind::Goodput
        } else if what.starts_with("link rate") {
            EvidenceKind::LinkRate
        } else if what.ends_with("RTT (TCP)") {
            EvidenceKind::Rtt
        } else {
            EvidenceKind::Figure
        }
    }
}

impl EvidenceLine {
    /// A figure behind a finding.
    pub fn new(what: &str, value: f64, unit: &str) -> EvidenceLine {
        EvidenceLine {
            what: what.into(),
            value,
            unit: unit.into(),
            kind: EvidenceKind::Figure,
        }
    }

    /// The line, stating what `kind` says.
    pub fn stating(self, kind: EvidenceKind) -> EvidenceLine {
        EvidenceLine { kind, ..self }
    }
}

/// An [`EvidenceLine`] as the JSON has it: its words, from which its kind
/// follows.
#[derive(Default, Deserialize)]
#[serde(default)]
struct LineWords {
    what: String,
    value: f64,
    unit: String,
}

impl From<LineWords> for EvidenceLine {
    fn from(w: LineWords) -> EvidenceLine {
        EvidenceLine {
            kind: EvidenceKind::of(&w.what),
            what: w.what,
            value: w.value,
            unit: w.unit,
        }
    }
}

/// One cause the evidence shows, weighed against the measured rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Which limit.
    pub limit: Limit,
    /// The cause in a few words (`the receive window`).
    pub what: String,
    /// What the evidence says about it, one clause.
    pub sentence: String,
    /// The rate its model predicts from the evidence, bit/s; `None` for a
    /// cause with no rate model (CPU, a sender that sat idle, BBR's loss).
    pub predicted_bps: Option<f64>,
    /// How far the measurement may stray from the prediction (a factor of
    /// 1 + tolerance either way) for the prediction to explain it.
    pub tolerance: Option<f64>,
    /// The prediction explains the measured rate within the tolerance.
    pub explains: bool,
    /// The share of the test TCP's counters (or, for CPU, the data thread)
    /// show this limit binding, when known.
    pub binding_share: Option<f64>,
    /// The counters show it binding (`plumb_diagnose::rules::BINDING_SHARE`
    /// of the test or more).
    pub counters_bind: bool,
    /// Primary, binding, or seen but not binding.
    pub status: Status,
    /// 0–1, from how close prediction and measurement are, how much of the
    /// test the counters cover, and what evidence is missing.
    pub confidence: f64,
    /// The band [`Self::confidence`] falls in.
    pub level: Confidence,
    /// Evidence this finding would have used that the test did not record.
    pub missing: Vec<String>,
    /// The numbers.
    pub evidence: Vec<EvidenceLine>,
}

impl Finding {
    /// Can be the answer: it explains the rate or its counters bind.
    pub fn candidate(&self) -> bool {
        self.explains || self.counters_bind
    }

    /// The answer for a cause plumb has no rate model for, seen binding
    /// for `share` of the transfer (a capture's evidence: a zero window, a
    /// sender holding its data, a black hole): no prediction, and the
    /// sentence says so. `missing` and `evidence` start empty.
    pub fn unmodelled(
        limit: Limit,
        what: &str,
        sentence: &str,
        share: f64,
        confidence: f64,
    ) -> Finding {
        Finding {
            limit,
            what: what.into(),
            sentence: format!("{sentence} (no rate model: plumb predicts no rate for it)"),
            predicted_bps: None,
            tolerance: None,
            explains: false,
            binding_share: Some(share),
            counters_bind: true,
            status: Status::Primary,
            confidence,
            level: Confidence::of(confidence),
            missing: Vec::new(),
            evidence: Vec::new(),
        }
    }
}

/// A change to make, and what the model expects from it. Read, a key left
/// out takes its empty value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fix {
    /// `linux`, `windows`, `windows-legacy`, `macos`, `freebsd`, `application`, `path`.
    pub os: String,
    /// What to run or change, one item per line.
    pub commands: Vec<String>,
    /// What the model expects afterwards, bit/s.
    pub expected_bps: Option<f64>,
    /// Why, in a few words.
    pub note: String,
}
