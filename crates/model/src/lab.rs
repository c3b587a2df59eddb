//! The rate a lab link's settings and a client's flags predict: the path
//! prediction of [`predict`](crate::predict) for one stream, multiplied over
//! the streams, and capped by the application's own rate.
//!
//! `plumb lab` prints it beside each measurement and `plumb demo` beside its
//! before and after, so both state the same figure for the same settings.

use crate::ethernet::Framing;
use crate::predict::{Limit, PathInput, Prediction};
use crate::units::{Bytes, LossRate, Rate, Rtt};

/// The emulated link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabLink {
    /// Line rate, each direction.
    pub rate: Rate,
    /// Round-trip propagation delay.
    pub rtt: Rtt,
    /// Random loss on the data direction.
    pub loss: Option<LossRate>,
}

/// The client flags that bound the rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LabClient {
    /// Parallel streams (`-P`); 0 counts as 1.
    pub streams: u64,
    /// The receiver's window clamp (`--rwin`).
    pub rwin: Option<Bytes>,
    /// The sender's SO_SNDBUF as asked for (`--sndbuf`; the kernel doubles it).
    pub sndbuf: Option<Bytes>,
    /// The MSS (`-M`).
    pub mss: Option<Bytes>,
    /// The application's rate per stream (`-b`).
    pub bitrate: Option<Rate>,
}

/// What binds the lab's predicted rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabLimit {
    /// A bound of the path: window, loss or link.
    Path(Limit),
    /// The application's rate cap (`-b` per stream).
    Application,
}

impl LabLimit {
    /// The name used in JSON: `window`, `loss`, `link`, `application`.
    pub fn name(self) -> &'static str {
        match self {
            LabLimit::Path(l) => l.name(),
            LabLimit::Application => "application",
        }
    }
}

/// The prediction for a lab link and a client's flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabPrediction {
    /// Predicted goodput of all streams, bit/s.
    pub predicted_bps: f64,
    /// What binds it.
    pub limit: LabLimit,
    /// The window one stream gets, when one binds: the receiver's clamp, or
    /// what a fixed send buffer holds in flight.
    pub window: Option<Bytes>,
    /// Streams (at least 1).
    pub streams: u64,
    /// How the segments are framed.
    pub framing: Framing,
    /// The path's prediction for one stream.
    pub path: Prediction,
}

/// Payload bytes a send buffer of `granted` bytes (SO_SNDBUF as read back)
/// keeps in flight. Linux charges each buffer's own overhead (its truesize)
/// against SO_SNDBUF; with full-size GSO buffers about four fifths of the
/// granted size is payload. Measured on Linux 6.18 in the lab (1 Gb/s,
/// 15 ms, 3 s tests): rate × RTT / granted was 0.72–0.83 under bbr and
/// 0.75–0.99 under cubic, for 131,072 B and 524,288 B granted.
pub fn sndbuf_payload(granted: u64) -> f64 {
    granted as f64 * 0.8
}

/// The rate `client` gets across `link`.
pub fn lab_prediction(link: LabLink, client: LabClient) -> LabPrediction {
    let streams = client.streams.max(1);
    // Autotuned (no window limit) unless the receiver clamps its window or
    // the sender fixes its buffer, which the kernel doubles.
    let sndbuf = client
        .sndbuf
        .map(|b| Bytes(sndbuf_payload(2 * b.get()) as u64));
    let window = client.rwin.or(sndbuf);
    let framing = match client.mss {
        Some(m) => Framing::with_mss(m, false, true, false),
        // Both ends of a lab are Linux: timestamps on, the default.
        None => Framing::default(),
    };
    let path = Prediction::of(&PathInput {
        rate: Some(link.rate),
        rtt: Some(link.rtt),
        window,
        loss: link.loss,
        framing,
        size: None,
    });
    // The link's goodput is always known (its rate is), so a bound always is.
    let goodput = framing.goodput(link.rate);
    let (per_stream, limit) = path.predicted.unwrap_or((goodput, Limit::Link));
    // n streams multiply the window and loss limits, never the link.
    let mut predicted_bps = if limit == Limit::Link {
        per_stream.bps()
    } else {
        (per_stream.bps() * streams as f64).min(path.link_goodput.map_or(f64::INFINITY, Rate::bps))
    };
    let mut limit = LabLimit::Path(limit);
    // An application rate cap (per stream) binds when it is the smallest.
    if let Some(cap) = client.bitrate {
        let total = cap.bps() * streams as f64;
        if total < predicted_bps {
            predicted_bps = total;
            limit = LabLimit::Application;
        }
    }
    LabPrediction {
        predicted_bps,
        limit,
        window,
        streams,
        framing,
        path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> LabLink {
        LabLink {
            rate: Rate::parse("1gbit").expect("rate"),
            rtt: Rtt::parse("15ms").expect("rtt"),
            loss: None,
        }
    }

    #[test]
    fn the_backup_window_binds_per_stream() {
        let one = lab_prediction(
            link(),
            LabClient {
                rwin: Some(Bytes(17_520)),
                ..LabClient::default()
            },
        );
        assert_eq!(one.limit, LabLimit::Path(Limit::Window));
        assert!((one.predicted_bps - 9_344_000.0).abs() < 1e-6);
        assert_eq!(one.streams, 1);
        let four = lab_prediction(
            link(),
            LabClient {
                streams: 4,
                rwin: Some(Bytes(17_520)),
                ..LabClient::default()
            },
        );
        assert!((four.predicted_bps - 4.0 * 9_344_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_send_buffer_is_doubled_then_charged_its_overhead() {
        let p = lab_prediction(
            link(),
            LabClient {
                sndbuf: Some(Bytes(65_536)),
                ..LabClient::default()
            },
        );
        assert_eq!(p.window, Some(Bytes(104_857)));
    }

    #[test]
    fn the_application_cap_binds_when_smallest() {
        let p = lab_prediction(
            link(),
            LabClient {
                streams: 2,
                bitrate: Rate::parse("10m").ok(),
                ..LabClient::default()
            },
        );
        assert_eq!(p.limit.name(), "application");
        assert!((p.predicted_bps - 20e6).abs() < 1e-6);
        let autotuned = lab_prediction(link(), LabClient::default());
        assert_eq!(autotuned.limit.name(), "link");
        assert_eq!(
            Some(autotuned.predicted_bps),
            autotuned.path.link_goodput.map(Rate::bps)
        );
    }
}
