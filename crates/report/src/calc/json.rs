//! `plumb calc --json`: the object it prints, one key per figure. A figure
//! the flags leave unknown is `null`; a group of keys about a flag not given
//! (`--distance`, `--rate`, `--window`, `--loss`, `--frame`, `--size`,
//! `--queue`) is left out.

use plumb_model::{ethernet, tcp, Bytes, Rate, Rtt};
use serde::Serialize;

use plumb_model::{PathInput, Prediction};

use super::query::{QueuePrediction, RttSource};

/// The `--json` object.
#[derive(Debug, Serialize)]
pub struct CalcOutput {
    bdp_bytes: Option<f64>,
    bdp_bits: Option<f64>,
    window_limited_bps: Option<f64>,
    loss_limited_bps: Option<f64>,
    link_goodput_bps: Option<f64>,
    predicted_bps: Option<f64>,
    limit: Option<&'static str>,
    window_needed_bytes: Option<u64>,
    streams_needed: Option<u64>,
    rtt_ms: Option<f64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    distance: Option<DistanceKeys>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_bps: Option<f64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    window: Option<WindowKeys>,
    #[serde(skip_serializing_if = "Option::is_none")]
    loss: Option<f64>,
    mtu_bytes: u64,
    tcp_timestamps: bool,
    mss_bytes: u64,
    payload_bytes: u64,
    wire_bytes_per_frame: u64,
    efficiency: f64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    frame: Option<FrameKeys>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    size: Option<SizeKeys>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    queue: Option<QueueKeys>,
}

/// `--distance`: the RTT it implies.
#[derive(Debug, Serialize)]
struct DistanceKeys {
    distance_km: f64,
    rtt_fibre_ms: f64,
    rtt_typical_ms: Option<f64>,
}

/// `--window`: its size and the scaling it needs.
#[derive(Debug, Serialize)]
struct WindowKeys {
    window_bytes: u64,
    window_needs_scaling: bool,
    window_scale_shift: Option<u8>,
}

/// `--frame` with `--rate`: frames per second at line rate, and the band
/// ±100 ppm of clock allows.
#[derive(Debug, Serialize)]
struct FrameKeys {
    frame_bytes: u64,
    frames_per_second: u64,
    frames_per_second_min: u64,
    frames_per_second_max: u64,
}

/// `--size`: the time to move it.
#[derive(Debug, Serialize)]
struct SizeKeys {
    size_bytes: u64,
    transfer_seconds: Option<f64>,
}

/// `--queue`: the delay a full queue adds, its size, and the loaded RTT.
#[derive(Debug, Serialize)]
struct QueueKeys {
    queue_delay_ms: f64,
    queue_bytes: u64,
    loaded_rtt_ms: Option<f64>,
}

impl CalcOutput {
    /// The object for a path and its prediction (the RTT from `source`;
    /// `frame` and `queue` when asked about).
    pub fn of(
        i: &PathInput,
        p: &Prediction,
        source: Option<&RttSource>,
        frame: Option<Bytes>,
        queue: Option<&QueuePrediction>,
    ) -> Self {
        let f = i.framing;
        CalcOutput {
            bdp_bytes: p.bdp.map(|b| b.bytes()),
            bdp_bits: p.bdp.map(|b| b.bits),
            window_limited_bps: p.window_limited.map(Rate::bps),
            loss_limited_bps: p.loss_limited.map(Rate::bps),
            link_goodput_bps: p.link_goodput.map(Rate::bps),
            predicted_bps: p.predicted.map(|(r, _)| r.bps()),
            limit: p.predicted.map(|(_, l)| l.name()),
            window_needed_bytes: p.window_needed.map(Bytes::get),
            streams_needed: p.streams_needed,
            rtt_ms: i.rtt.map(Rtt::ms),
            distance: match source {
                Some(RttSource::Distance { d, floor }) => Some(DistanceKeys {
                    distance_km: d.km(),
                    rtt_fibre_ms: floor.ms(),
                    rtt_typical_ms: i.rtt.map(Rtt::ms),
                }),
                _ => None,
            },
            rate_bps: i.rate.map(Rate::bps),
            window: i.window.map(|w| WindowKeys {
                window_bytes: w.get(),
                window_needs_scaling: tcp::needs_scaling(w),
                window_scale_shift: tcp::window_shift(w),
            }),
            loss: i.loss.map(|l| l.probability()),
            mtu_bytes: f.mtu,
            tcp_timestamps: f.timestamps,
            mss_bytes: f.mss().get(),
            payload_bytes: f.payload().get(),
            wire_bytes_per_frame: f.wire_bytes(),
            efficiency: f.efficiency(),
            frame: frame.zip(i.rate).map(|(frame, rate)| {
                let (lo, hi) = ethernet::frame_rate_band(rate, frame);
                FrameKeys {
                    frame_bytes: frame.get(),
                    frames_per_second: ethernet::frame_rate(rate, frame).floor() as u64,
                    frames_per_second_min: lo.floor() as u64,
                    frames_per_second_max: hi.floor() as u64,
                }
            }),
            size: i.size.map(|s| SizeKeys {
                size_bytes: s.get(),
                transfer_seconds: p.transfer_secs,
            }),
            queue: queue.map(|q| QueueKeys {
                queue_delay_ms: q.delay * 1e3,
                queue_bytes: (q.delay * i.rate.map_or(0.0, Rate::bps) / 8.0).round() as u64,
                loaded_rtt_ms: q.loaded_rtt.map(|s| s * 1e3),
            }),
        }
    }
}
