//! The objects a lab adds to the client's document: `lab` (the link as
//! configured, as probed, and how the emulator kept up) and `model` (the
//! model's prediction for the link and the client's flags, beside what was
//! measured), each with the line printed for a person; the line that
//! describes the link and the emulator's line after a run (`plumb lab`,
//! `plumb demo`). The link is as asked ([`LinkAsked`]), in the model's
//! units; the client's flags as the model takes them ([`LabClient`]).

use std::time::Duration;

use plumb_model::latency::QueueSize;
use plumb_model::units::sig;
use plumb_model::{
    lab_prediction, Bytes, LabClient, LabLimit, LabLink, LabPrediction, Limit, LossRate, Rate, Rtt,
};
use plumb_record::{Document, Lab, LabConfigured, LabEmulator, LabMeasured, Model, Real};

pub use crate::asked::LinkAsked;
use crate::hist::Histogram;
use crate::measure::Probe;
use crate::LabStats;

/// The test's measured goodput, bit/s; `None` when it ended before its
/// summary (interrupted).
pub fn measured_bps(doc: &Document) -> Option<f64> {
    let sum = doc.end.as_ref()?.sum_received.as_ref()?;
    Some(sum.bits_per_second().get()).filter(|b| !b.is_nan())
}

/// The model's prediction for this link and these client flags, as the
/// `model` object and a line.
pub fn model_for(a: &LinkAsked, flags: LabClient, measured: Option<f64>) -> (Model, String) {
    let link = LabLink {
        rate: a.rate,
        rtt: a.rtt,
        loss: a.loss,
    };
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
pub fn queue_model(a: &LinkAsked, doc: &Document, model: &mut Model) -> Option<String> {
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
pub fn lab_record(a: &LinkAsked, probe: Option<&Probe>, stats: &LabStats) -> Lab {
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

/// The line that describes the link: as asked, and as probed before the test.
pub fn lab_line(a: &LinkAsked, probe: Option<&Probe>) -> String {
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
pub fn release_error_us(h: &Histogram) -> Option<[f64; 4]> {
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

/// How the emulator forwarded the near-to-far direction, in one line:
/// segments delivered and dropped (by the queue, by loss, and by the black
/// hole when `max_packet` set one, both directions), and the release error.
pub fn emulator_line(stats: &LabStats, max_packet: Option<u32>) -> String {
    let d = &stats.near_to_far;
    let too_big = match max_packet {
        Some(m) => format!(
            ", {} over {m} B (no ICMP sent; far->near: {})",
            d.link.dropped_too_big.segments, stats.far_to_near.link.dropped_too_big.segments
        ),
        None => String::new(),
    };
    format!(
        "Emulator near->far: {} segments delivered, {} dropped by the queue, {} by loss{too_big}; {}",
        d.link.delivered.segments,
        d.link.dropped_queue.segments,
        d.link.dropped_loss.segments,
        release_error_us(&d.release_error).map_or_else(
            || "nothing released, so no release error".to_string(),
            |e| format!("release error p99 {} us", sig(e[1], 3))
        )
    )
}

/// What `--hold` says while the link stays up: where each end is, and how
/// to run plumb (or a shell) on either side.
pub fn hold_text(lab: &crate::Lab) -> String {
    let (near, far) = (
        lab.namespace_name(crate::Side::Near),
        lab.namespace_name(crate::Side::Far),
    );
    format!(
        "The link is up until Ctrl-C. Near {} is in namespace {near}, far {} in {far}.\n  ip netns exec {far} plumb -s\n  ip netns exec {near} plumb -c {} -t 10\n  ip netns exec {near} bash      # a shell on the near side\n",
        lab.near_addr(),
        lab.far_addr(),
        lab.far_addr()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(rate: &str, rtt: &str) -> LinkAsked {
        LinkAsked::plain(
            Rate::parse(rate).expect("rate"),
            Rtt::parse(rtt).expect("rtt"),
        )
    }

    /// The `model` and `lab` objects and the lines, key for key and digit
    /// for digit as `plumb lab` prints them (tests/lab.rs reads these keys).
    #[test]
    fn model_and_lab_objects_as_printed() {
        let mut a = LinkAsked {
            loss: Some(LossRate::parse("0.5%").expect("loss")),
            queue: Some("64k".into()),
            ..link("100m", "40ms")
        };
        let client = LabClient {
            streams: 4,
            rwin: Some(Bytes(65_536)),
            ..LabClient::default()
        };
        let doc = Document::parse(include_str!(
            "../../report/tests/fixtures/plumb-latency.json"
        ))
        .expect("document");
        let (mut model, line) = model_for(&a, client, measured_bps(&doc));
        let queue = queue_model(&a, &doc, &mut model).expect("--latency probes");
        assert_eq!(
            serde_json::to_string(&model).expect("serializes"),
            r#"{"predicted_bps":20064076.554877874,"limit":"loss","measured_bps":99901184.0712153,"window_bytes":65536,"streams":4,"link_goodput_bps":94148244.473342,"queue_delay_ms":5.24288,"loaded_rtt_ms":45.24288,"measured_increase_p50_ms":-0.006400000000000003}"#
        );
        assert_eq!(line, "Model: 20.06 Mbit/s predicted (Mathis at 0.5% loss, RTT 40 ms, 4 streams); measured 99.9 Mbit/s (498% of the prediction).");
        assert_eq!(queue, "Queue: full, it adds 5.24 ms (loaded RTT 45.2 ms predicted); the load added -0.0064 ms at the median.");

        let probe = crate::measure::Probe {
            configured_rtt: Duration::from_millis(15),
            rtt_min: Duration::from_micros(15_123),
            rtt_median: Duration::from_micros(15_456),
            rtt_samples: 10,
            rtt_lost: 0,
            configured_rate: crate::emu::Rate::from_mbps(1000.0).expect("rate"),
            rate: crate::emu::Rate::from_mbps(990.0),
            burst_sent: 10,
            burst_received: 10,
        };
        let mut stats = crate::LabStats::default();
        stats
            .near_to_far
            .release_error
            .record(Duration::from_micros(17));
        assert_eq!(
            serde_json::to_string(&lab_record(&a, Some(&probe), &stats)).expect("serializes"),
            r#"{"configured":{"rate_bps":100000000.0,"rtt_ms":40.0,"loss":0.005,"loss_burst":null,"queue":"64k","jitter_ms":null,"seed":null},"measured":{"rtt_min_ms":15.123,"rtt_median_ms":15.456,"rate_bps":990000000},"emulator":{"segments_delivered":0,"segments_dropped_queue":0,"segments_dropped_loss":0,"max_queue_bytes":0,"release_error_p50_us":17.0,"release_error_p99_us":17.0,"release_error_p999_us":17.0,"release_error_max_us":17.0,"realtime":false,"idle_poll":false}}"#
        );
        // With a black hole: its size and both directions' drops.
        a.drop_over = Some(1400);
        stats.near_to_far.link.dropped_too_big.segments = 7;
        stats.far_to_near.link.dropped_too_big.segments = 2;
        let v = serde_json::to_value(lab_record(&a, Some(&probe), &stats)).expect("serializes");
        assert_eq!(v["configured"]["drop_over_bytes"], 1400);
        assert_eq!(v["emulator"]["segments_dropped_too_big"], 7);
        assert_eq!(v["emulator"]["segments_dropped_too_big_far_to_near"], 2);
    }

    /// The line names the bound that binds: window, application or link.
    #[test]
    fn model_lines_name_the_binding_limit() {
        let doc = Document::parse(include_str!("../../report/tests/fixtures/plumb-p2.json"))
            .expect("document");
        let a = link("1g", "15ms");
        let one = LabClient {
            streams: 1,
            ..LabClient::default()
        };
        for (client, line) in [
            (
                LabClient {
                    rwin: Some(Bytes(17_520)),
                    ..one
                },
                "Model: 9.344 Mbit/s predicted (window 17,520 B / RTT 15 ms); measured 22.2 Gbit/s (237634% of the prediction).",
            ),
            (
                LabClient {
                    streams: 2,
                    bitrate: Rate::from_bps(10e6),
                    ..one
                },
                "Model: 20 Mbit/s predicted (-b 10 Mbit/s per stream, 2 streams); measured 22.2 Gbit/s (111023% of the prediction).",
            ),
            (
                LabClient { streams: 4, ..one },
                "Model: 941.5 Mbit/s predicted (link goodput, 94.1% of 1 Gbit/s, 4 streams); measured 22.2 Gbit/s (2358% of the prediction).",
            ),
        ] {
            assert_eq!(model_for(&a, client, measured_bps(&doc)).1, line);
        }
    }

    /// `-J` prints the client's document through [`Document`]: a lab
    /// document plumb wrote reads and prints back to the same text, its
    /// `diagnosis` (an older plumb's) aside, which reads into today's keys
    /// and prints back to the same diagnosis.
    #[test]
    fn a_lab_document_prints_back_as_written() {
        let text = include_str!("../../report/tests/fixtures/plumb-lab-rwin.json");
        let doc = Document::parse(text).expect("document");
        assert!(doc.lab.is_some() && doc.model.is_some());
        let printed = serde_json::to_string_pretty(&doc).expect("serializes");
        let mut want: serde_json::Value = serde_json::from_str(text).expect("JSON");
        want.as_object_mut().map(|o| o.shift_remove("diagnosis"));
        let bare = Document {
            diagnosis: None,
            ..doc.clone()
        };
        assert_eq!(
            serde_json::to_string_pretty(&bare).expect("serializes"),
            serde_json::to_string_pretty(&want).expect("serializes")
        );
        let again = Document::parse(&printed).expect("document");
        assert!(again.diagnosis.is_some());
        assert_eq!(again.diagnosis, doc.diagnosis);
    }

    #[test]
    fn a_link_that_released_nothing_has_no_release_error() {
        let a = link("1g", "15ms");
        let mut stats = crate::LabStats::default();
        let errors = |e: &plumb_record::LabEmulator| {
            [
                e.release_error_p50_us,
                e.release_error_p99_us,
                e.release_error_p999_us,
                e.release_error_max_us,
            ]
        };
        let none = errors(&lab_record(&a, None, &stats).emulator);
        assert!(none.iter().all(|e| *e == Some(None)), "{none:?}");
        for us in [3, 5, 40] {
            stats
                .near_to_far
                .release_error
                .record(Duration::from_micros(us));
        }
        let got: Vec<f64> = errors(&lab_record(&a, None, &stats).emulator)
            .iter()
            .map(|e| e.flatten().expect("a number").get())
            .collect();
        assert!(got.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
        assert_eq!(got[3], 40.0);
    }
}
