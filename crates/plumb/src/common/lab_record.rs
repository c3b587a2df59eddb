//! The objects `plumb lab` adds to the client's document: `lab` (the link as
//! configured, as probed, and how the emulator kept up) and `model` (the
//! model's prediction for the link and the client's flags, beside what was
//! measured), each with the line printed for a person; and the line that
//! describes the link (`plumb lab`, `plumb demo`).

use std::time::Duration;

use plumb_model::latency::QueueSize;
use plumb_model::units::sig;
use plumb_model::{
    lab_prediction, Bytes, LabClient, LabLimit, LabLink, LabPrediction, Limit, LossRate, Rate, Rtt,
};
use plumb_record::{Document, Lab, LabConfigured, LabEmulator, LabMeasured, Model, Real};

use super::lab_flags::LabArgs;
use crate::measure::MeasureArgs;

/// The client flags the prediction depends on.
fn lab_client(m: &MeasureArgs) -> LabClient {
    LabClient {
        // A count the client refuses never reaches here; 0 counts as 1.
        streams: m.parallel.and_then(|p| u64::try_from(p).ok()).unwrap_or(1),
        rwin: m.rwin,
        sndbuf: m.sndbuf,
        mss: m.mss,
        // `-b RATE[/BURST]`; 0 (unlimited) is no rate.
        bitrate: m
            .bitrate
            .as_deref()
            .and_then(|v| Rate::parse(v.split('/').next().unwrap_or(v)).ok()),
    }
}

/// The test's measured goodput, bit/s; `None` when it ended before its
/// summary (interrupted).
pub fn measured_bps(doc: &Document) -> Option<f64> {
    let sum = doc.end.as_ref()?.sum_received.as_ref()?;
    Some(sum.bits_per_second().get()).filter(|b| !b.is_nan())
}

/// The model's prediction for this link and these client flags, as the
/// `model` object and a line.
pub fn model_for(a: &LabArgs, client: &MeasureArgs, measured: Option<f64>) -> (Model, String) {
    let link = LabLink {
        rate: a.rate,
        rtt: a.rtt,
        loss: a.loss,
    };
    let flags = lab_client(client);
    let p = lab_prediction(link, flags);
    let predicted = p.predicted_bps;
    let streams = p.streams;
    let why = match (p.limit, p.window, flags.bitrate) {
        (LabLimit::Path(Limit::Window), Some(w), _) => {
            format!("window {} / RTT {}", w.human(), a.rtt.human())
        }
        (LabLimit::Path(Limit::Loss), _, _) => format!(
            "Mathis at {}% loss, RTT {}",
            sig(a.loss.map_or(0.0, LossRate::probability) * 100.0, 3),
            a.rtt.human()
        ),
        (LabLimit::Application, _, Some(cap)) => format!("-b {} per stream", cap.human()),
        _ => format!(
            "link goodput, {}% of {}",
            sig(p.framing.efficiency() * 100.0, 3),
            a.rate.human()
        ),
    };
    let rate = |b: f64| Rate::from_bps(b).map_or_else(|| "0 bit/s".into(), Rate::human);
    let outcome = match measured {
        Some(m) => format!(
            "measured {} ({}% of the prediction)",
            rate(m),
            sig(m / predicted.max(1.0) * 100.0, 3)
        ),
        None => "no result to compare (the test ended before its summary)".into(),
    };
    let line = format!(
        "Model: {} predicted ({why}{}); {outcome}.",
        rate(predicted),
        if streams > 1 {
            format!(", {streams} streams")
        } else {
            String::new()
        },
    );
    (model_record(&p, measured), line)
}

/// The `model` object of a prediction and the goodput measured.
pub fn model_record(p: &LabPrediction, measured: Option<f64>) -> Model {
    Model {
        predicted_bps: Real::float(p.predicted_bps),
        limit: p.limit.name().to_string(),
        measured_bps: Some(measured.map(Real::float)),
        window_bytes: Some(p.window.map(Bytes::get)),
        streams: p.streams,
        link_goodput_bps: Some(p.path.link_goodput.map(|r| Real::float(r.bps()))),
        queue_delay_ms: None,
        loaded_rtt_ms: None,
        measured_increase_p50_ms: None,
        extra: Default::default(),
    }
}

/// The delay the link's full queue adds and the loaded RTT that follows,
/// beside what the client's latency probes measured (with --latency): set
/// in `model`, and said in the line returned.
pub fn queue_model(a: &LabArgs, doc: &Document, model: &mut Model) -> Option<String> {
    let latency = doc.end.as_ref()?.plumb.as_ref()?.latency.as_ref()?;
    latency.loaded.as_ref()?;
    let size = match a.queue.as_deref().map(QueueSize::parse) {
        None => QueueSize::Bdp(1.0),
        Some(Ok(size)) => size,
        Some(Err(_)) => return None,
    };
    let delay = plumb_model::latency::queue_delay_secs(size, a.rate, Some(a.rtt))?;
    let loaded = plumb_model::latency::loaded_rtt_secs(a.rtt, delay);
    let measured = latency
        .increase_p50_ms
        .flatten()
        .map(Real::get)
        .filter(|x| !x.is_nan());
    model.queue_delay_ms = Some(Real::float(delay * 1e3));
    model.loaded_rtt_ms = Some(Real::float(loaded * 1e3));
    model.measured_increase_p50_ms = Some(measured.map(Real::float));
    Some(format!(
        "Queue: full, it adds {} ms (loaded RTT {} ms predicted); the load added {} ms at the median.",
        sig(delay * 1e3, 3),
        sig(loaded * 1e3, 3),
        measured.map_or_else(|| "?".into(), |x| sig(x, 3))
    ))
}

/// The `lab` object: the link asked for, as probed before the test, and how
/// the emulator forwarded the near-to-far direction.
pub fn lab_record(
    a: &LabArgs,
    probe: Option<&plumb_lab::measure::Probe>,
    stats: &plumb_lab::LabStats,
) -> Lab {
    let d = &stats.near_to_far;
    let err = release_error_us(&d.release_error);
    let real = |v: Option<f64>| Some(v.map(Real::float));
    Lab {
        configured: LabConfigured {
            rate_bps: Real::float(a.rate.bps()),
            rtt_ms: Real::float(a.rtt.ms()),
            loss: real(a.loss.map(LossRate::probability)),
            loss_burst: real(a.loss_burst),
            queue: Some(a.queue.clone()),
            jitter_ms: real(a.jitter.map(Rtt::ms)),
            seed: Some(a.seed),
            drop_over_bytes: a.drop_over.map(u64::from),
            extra: Default::default(),
        },
        measured: Some(probe.map(|p| LabMeasured {
            rtt_min_ms: Real::float(p.rtt_min.as_secs_f64() * 1e3),
            rtt_median_ms: Real::float(p.rtt_median.as_secs_f64() * 1e3),
            rate_bps: Some(p.rate.map(|r| Real::from(r.bps()))),
            extra: Default::default(),
        })),
        emulator: LabEmulator {
            segments_delivered: d.link.delivered.segments,
            segments_dropped_queue: d.link.dropped_queue.segments,
            segments_dropped_loss: d.link.dropped_loss.segments,
            max_queue_bytes: d.link.max_queue_bytes,
            release_error_p50_us: real(err.map(|e| e[0])),
            release_error_p99_us: real(err.map(|e| e[1])),
            // A stall shows here first: one of 10–40 ms once a second (RT
            // throttling) left the p99 at 0.15–2 ms but the p99.9 at 20–40 ms.
            release_error_p999_us: real(err.map(|e| e[2])),
            release_error_max_us: real(err.map(|e| e[3])),
            realtime: Some(d.realtime),
            idle_poll: Some(stats.idle_poll),
            segments_dropped_too_big: a.drop_over.map(|_| d.link.dropped_too_big.segments),
            segments_dropped_too_big_far_to_near: a
                .drop_over
                .map(|_| stats.far_to_near.link.dropped_too_big.segments),
            extra: Default::default(),
        },
        extra: Default::default(),
    }
}

pub fn lab_line(a: &LabArgs, probe: Option<&plumb_lab::measure::Probe>) -> String {
    let mut s = format!(
        "Lab link: {} each way, RTT {}",
        a.rate.human(),
        a.rtt.human()
    );
    if let Some(l) = a.loss {
        s += &format!(", loss {}%", sig(l.probability() * 100.0, 3));
        if let Some(b) = a.loss_burst {
            s += &format!(" in bursts of {b}");
        }
    }
    if let Some(m) = a.drop_over {
        s += &format!(", packets over {m} B dropped without ICMP");
    }
    if let Some(p) = probe {
        s += &format!(
            "; measured before the test: RTT {} (min of {}), rate {}",
            Rtt::from_secs(p.rtt_min.as_secs_f64()).map_or_else(|| "?".into(), Rtt::human),
            p.rtt_samples,
            p.rate.map_or_else(
                || "unknown".into(),
                |r| format!("{} Mbit/s", sig(r.bps() as f64 / 1e6, 4))
            )
        );
    }
    s
}

/// The release error's p50, p99, p99.9 and maximum, µs; `None` for a link
/// that released nothing, which has no release error (not a 0 µs that
/// reads as a perfect emulator).
pub fn release_error_us(h: &plumb_lab::hist::Histogram) -> Option<[f64; 4]> {
    let us = |t: Duration| t.as_secs_f64() * 1e6;
    (h.count() > 0).then(|| {
        [
            us(h.quantile(0.5)),
            us(h.quantile(0.99)),
            us(h.quantile(0.999)),
            us(h.max()),
        ]
    })
}
