//! The prediction: every bound that the inputs allow, the smallest of them, and
//! which one binds.

use crate::ethernet::Framing;
use crate::tcp::{self, Bdp};
use crate::units::{Bytes, LossRate, Rate, Rtt};

/// What is known about a path. Unknown quantities stay `None`: the model never
/// guesses them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathInput {
    /// Line rate of the bottleneck link.
    pub rate: Option<Rate>,
    /// Round-trip time.
    pub rtt: Option<Rtt>,
    /// The largest window one stream gets (receive window or send buffer).
    pub window: Option<Bytes>,
    /// Packet loss probability.
    pub loss: Option<LossRate>,
    /// How segments are framed on the wire.
    pub framing: Framing,
    /// A data size to move, for the transfer time.
    pub size: Option<Bytes>,
}

/// Which bound sets the predicted rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// One window per round trip.
    Window,
    /// The Mathis loss bound.
    Loss,
    /// The link's TCP goodput.
    Link,
}

impl Limit {
    /// The name used in JSON: `window`, `loss`, `link`.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Window => "window",
            Limit::Loss => "loss",
            Limit::Link => "link",
        }
    }
}

/// Everything the model can say about a [`PathInput`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// rate × RTT, when both are known.
    pub bdp: Option<Bdp>,
    /// TCP goodput of the link (rate × framing efficiency).
    pub link_goodput: Option<Rate>,
    /// window / RTT.
    pub window_limited: Option<Rate>,
    /// Mathis bound for one stream.
    pub loss_limited: Option<Rate>,
    /// The smallest bound, and which it is.
    pub predicted: Option<(Rate, Limit)>,
    /// The window one stream needs to carry the line rate: the BDP.
    pub window_needed: Option<Bytes>,
    /// Streams of the given window (and loss) needed to carry the line rate.
    pub streams_needed: Option<u64>,
    /// Time to move `size` at the predicted rate, seconds.
    pub transfer_secs: Option<f64>,
}

impl Prediction {
    /// Applies every formula the inputs allow.
    pub fn of(p: &PathInput) -> Prediction {
        let bdp = p.rate.zip(p.rtt).map(|(r, t)| tcp::bdp(r, t));
        let link_goodput = p.rate.map(|r| p.framing.goodput(r));
        let window_limited = p
            .window
            .zip(p.rtt)
            .map(|(w, t)| tcp::window_limited_rate(w, t));
        let loss_limited = p
            .loss
            .zip(p.rtt)
            .map(|(l, t)| tcp::mathis_rate(p.framing.payload(), t, l));
        let candidates = [
            window_limited.map(|r| (r, Limit::Window)),
            loss_limited.map(|r| (r, Limit::Loss)),
            link_goodput.map(|r| (r, Limit::Link)),
        ];
        // Ties go to the earlier entry: a window exactly equal to the link is
        // reported as the window, the thing the user can change.
        let predicted = candidates.into_iter().flatten().fold(
            None,
            |best: Option<(Rate, Limit)>, c| match best {
                Some(b) if b.0 <= c.0 => Some(b),
                _ => Some(c),
            },
        );
        let per_stream = match (window_limited, loss_limited) {
            (Some(w), Some(l)) => Some(if w < l { w } else { l }),
            (w, l) => w.or(l),
        };
        let streams_needed = p
            .rate
            .zip(per_stream)
            .map(|(r, s)| (r.bps() / s.bps()).ceil().max(1.0) as u64);
        let transfer_secs = p.size.zip(predicted).map(|(s, (r, _))| s.bits() / r.bps());
        Prediction {
            bdp,
            link_goodput,
            window_limited,
            loss_limited,
            predicted,
            window_needed: bdp.map(Bdp::ceil_bytes),
            streams_needed,
            transfer_secs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The backup scenario: its old hosts send no TCP timestamps.
    fn backup() -> PathInput {
        PathInput {
            rate: Rate::parse("1Gbit").ok(),
            rtt: Rtt::parse("15ms").ok(),
            window: Some(Bytes(17_520)),
            framing: Framing {
                timestamps: false,
                ..Framing::default()
            },
            ..PathInput::default()
        }
    }

    #[test]
    fn backup_scenario() {
        let p = Prediction::of(&backup());
        let (rate, limit) = p.predicted.expect("predicted");
        assert_eq!(limit, Limit::Window);
        assert!((rate.bps() - 9_344_000.0).abs() < 1e-6);
        assert_eq!(p.streams_needed, Some(108));
        assert_eq!(p.window_needed, Some(Bytes(1_875_000)));
        assert!(p.loss_limited.is_none());
        assert_eq!(
            format!("{:.1}", p.link_goodput.map(Rate::bps).unwrap_or(0.0) / 1e6),
            "949.3"
        );
    }

    #[test]
    fn loss_binds() {
        let mut i = backup();
        i.window = Some(Bytes(16 << 20));
        i.rtt = Rtt::parse("100ms").ok();
        i.loss = LossRate::parse("0.01%").ok();
        let p = Prediction::of(&i);
        let (rate, limit) = p.predicted.expect("predicted");
        assert_eq!(limit, Limit::Loss);
        assert!((rate.bps() / 1e6 - 14.305).abs() < 0.001);
        // 1 Gbit/s / 14.3 Mbit/s per stream.
        assert_eq!(p.streams_needed, Some(70));
    }

    #[test]
    fn link_binds_and_transfer_time() {
        let mut i = backup();
        i.window = Some(Bytes(4 << 20));
        i.size = Bytes::parse("1TB").ok();
        let p = Prediction::of(&i);
        let (rate, limit) = p.predicted.expect("predicted");
        assert_eq!(limit, Limit::Link);
        let secs = p.transfer_secs.expect("size given");
        assert!((secs - 8e12 / rate.bps()).abs() < 1e-6);
    }

    #[test]
    fn nothing_known_predicts_nothing() {
        let p = Prediction::of(&PathInput::default());
        assert!(p.predicted.is_none() && p.bdp.is_none() && p.streams_needed.is_none());
    }

    proptest! {
        #[test]
        fn more_window_never_predicts_less(w in 1u64..(1 << 31), extra in 0u64..(1 << 31),
                                          rate in 1e3f64..1e12, rtt_ms in 0.01f64..1000.0,
                                          loss in proptest::option::of(1e-9f64..1.0)) {
            let mk = |w| PathInput {
                rate: Rate::from_bps(rate),
                rtt: Rtt::from_ms(rtt_ms),
                window: Some(Bytes(w)),
                loss: loss.and_then(LossRate::from_probability),
                ..PathInput::default()
            };
            let a = Prediction::of(&mk(w)).predicted.expect("rate given").0;
            let b = Prediction::of(&mk(w + extra)).predicted.expect("rate given").0;
            prop_assert!(b >= a);
        }

        #[test]
        fn more_loss_never_predicts_more(p in 1e-9f64..0.5, factor in 1.0f64..2.0, rtt_ms in 0.01f64..1000.0) {
            let mk = |p| PathInput {
                rtt: Rtt::from_ms(rtt_ms),
                loss: LossRate::from_probability(p),
                ..PathInput::default()
            };
            let a = Prediction::of(&mk(p)).predicted.expect("loss given").0;
            let b = Prediction::of(&mk(p * factor)).predicted.expect("loss given").0;
            prop_assert!(b <= a);
        }

        #[test]
        fn predicted_is_the_minimum(w in 1u64..(1 << 31), rate in 1e3f64..1e12, rtt_ms in 0.01f64..1000.0) {
            let p = Prediction::of(&PathInput {
                rate: Rate::from_bps(rate), rtt: Rtt::from_ms(rtt_ms), window: Some(Bytes(w)), ..PathInput::default()
            });
            let (r, _) = p.predicted.expect("given");
            prop_assert!(r <= p.window_limited.expect("given") && r <= p.link_goodput.expect("given"));
        }
    }
}
