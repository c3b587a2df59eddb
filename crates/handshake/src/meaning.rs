//! What a handshake means for a transfer: the sentences `plumb handshake`
//! prints under the options it read. Pure, with plumb-model's arithmetic.

use plumb_model::tcp::{
    window_limited_rate, MAX_SCALED_WINDOW, MAX_UNSCALED_WINDOW, MAX_WINDOW_SHIFT,
};
use plumb_model::units::thousands;
use plumb_model::{Bytes, Rtt};

use plumb_record::handshake::Offer;

/// Ethernet's MSS over IPv4 (1,500 B less 40 B of headers); IPv6's is 20 B less.
const ETHERNET_MSS_V4: u32 = 1460;
const ETHERNET_MSS_V6: u32 = 1440;

/// "9.344 Mbit/s at 15 ms": the most one window per round trip carries.
fn per_rtt(window: u64, rtt: Rtt) -> String {
    let rate = window_limited_rate(Bytes(window.max(1)), rtt);
    format!(
        "{} at {} ms",
        rate.human(),
        plumb_model::units::sig(rtt.ms(), 3)
    )
}

/// The largest receive window a shift allows (RFC 7323 §2.3: at most 2³⁰ B).
pub fn max_window(shift: u8) -> u64 {
    let s = u32::from(shift.min(MAX_WINDOW_SHIFT));
    (MAX_UNSCALED_WINDOW.get() << s).min(MAX_SCALED_WINDOW.get())
}

/// The sentence on the peer's receive window: what caps a single transfer
/// *to* it. `None` when window scaling is unknown.
fn window_sentence(o: &Offer, rtt: Rtt) -> Option<String> {
    let max = MAX_UNSCALED_WINDOW.get();
    let s = match (o.window_scaling?, o.wscale) {
        (false, _) => {
            let mut s = format!(
                "it does not scale its window: any single transfer *to* it is capped at {} B per round trip, {}",
                thousands(max),
                per_rtt(max, rtt)
            );
            // Linux's 65,160 B is the cap already; Windows 2003's 17,520 B is not.
            if let Some(w) = o.initial_window.filter(|&w| u64::from(w) < max * 3 / 4) {
                s.push_str(&format!(
                    "; it offers {} B to start, and while it stays there a transfer to it runs at most {}",
                    thousands(w.into()),
                    per_rtt(w.into(), rtt)
                ));
            }
            s
        }
        (true, Some(0)) => format!(
            "it scales its window with shift 0: transfers *from* it can use this host's scaled window, but one *to* it is capped at {} B per round trip, {}",
            thousands(max),
            per_rtt(max, rtt)
        ),
        (true, shift) => {
            let shift = shift.unwrap_or(MAX_WINDOW_SHIFT);
            let w = max_window(shift);
            format!(
                "it scales its window (shift {shift}): its receive window can reach {} B, {}, so its window limits a transfer to it only if it keeps it small",
                thousands(w),
                per_rtt(w, rtt)
            )
        }
    };
    Some(s)
}

/// What the handshake means, most important first. `rtt` is the handshake's
/// minimum RTT; `ipv6` sets the MSS a full Ethernet frame carries.
pub fn meaning(o: &Offer, rtt: Rtt, ipv6: bool) -> Vec<String> {
    let mut out: Vec<String> = window_sentence(o, rtt).into_iter().collect();
    if o.sack == Some(false) {
        out.push("it does not offer SACK: after losses in one window the sender learns of one hole per round trip, so a lossy path recovers slowly".into());
    }
    if o.timestamps == Some(false) {
        out.push("it does not offer timestamps: fewer RTT samples for the sender, and no protection against wrapped sequence numbers (PAWS) at multi-Gbit/s rates".into());
    }
    if o.ecn == Some(false) {
        out.push(
            "it does not accept ECN: the path can signal congestion to it only by dropping packets"
                .into(),
        );
    }
    let full = if ipv6 {
        ETHERNET_MSS_V6
    } else {
        ETHERNET_MSS_V4
    };
    if let Some(mss) = o.mss.filter(|&m| m < full) {
        out.push(format!(
            "its MSS is {} B, below Ethernet's {}: {:.1}× the packets for the same data, and under loss TCP's rate falls with the MSS (Mathis); a tunnel, a smaller MTU or an MSS clamp on the way",
            thousands(mss.into()),
            thousands(full.into()),
            f64::from(full) / f64::from(mss.max(1))
        ));
    }
    let limits = o.window_scaling == Some(false)
        || o.wscale == Some(0)
        || o.sack == Some(false)
        || o.mss.is_some_and(|m| m < full);
    if !limits && o.window_scaling == Some(true) {
        out.push("nothing in its handshake limits a transfer".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtt15() -> Rtt {
        Rtt::from_ms(15.0).expect("15 ms")
    }

    fn modern() -> Offer {
        Offer {
            window_scaling: Some(true),
            wscale: Some(7),
            sack: Some(true),
            timestamps: Some(true),
            ecn: Some(true),
            mss: Some(1460),
            initial_window: Some(65_160),
        }
    }

    #[test]
    fn no_window_scaling_caps_a_transfer_at_65535_per_round_trip() {
        let o = Offer {
            window_scaling: Some(false),
            wscale: None,
            initial_window: Some(65_535),
            ..modern()
        };
        let m = meaning(&o, rtt15(), false);
        assert_eq!(
            m[0],
            "it does not scale its window: any single transfer *to* it is capped at 65,535 B per round trip, 34.95 Mbit/s at 15 ms"
        );
    }

    /// The running example: Windows 2003's 17,520 B without scaling.
    #[test]
    fn the_backup_servers_window_is_named_with_its_rate() {
        let o = Offer {
            window_scaling: Some(false),
            wscale: None,
            timestamps: Some(false),
            ecn: Some(false),
            initial_window: Some(17_520),
            ..modern()
        };
        let m = meaning(&o, rtt15(), false);
        assert!(m[0].ends_with("it offers 17,520 B to start, and while it stays there a transfer to it runs at most 9.344 Mbit/s at 15 ms"), "{}", m[0]);
        assert!(m.iter().any(|l| l.contains("timestamps")));
        assert!(m.iter().any(|l| l.contains("ECN")));
        assert!(!m.iter().any(|l| l.contains("nothing")));
    }

    #[test]
    fn a_scaled_window_and_every_option_limit_nothing() {
        let m = meaning(&modern(), rtt15(), false);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(
            m[0].contains("shift 7") && m[0].contains("8,388,480 B"),
            "{}",
            m[0]
        );
        assert_eq!(m[1], "nothing in its handshake limits a transfer");
    }

    #[test]
    fn shift_zero_and_small_mss_and_no_sack_are_named() {
        let o = Offer {
            wscale: Some(0),
            sack: Some(false),
            mss: Some(536),
            ..modern()
        };
        let m = meaning(&o, rtt15(), false);
        assert!(
            m[0].contains("shift 0") && m[0].contains("65,535 B"),
            "{}",
            m[0]
        );
        assert!(m.iter().any(|l| l.contains("SACK")));
        assert!(
            m.iter()
                .any(|l| l.contains("MSS is 536 B") && l.contains("2.7×")),
            "{m:?}"
        );
        // 1,440 B is a full frame over IPv6, not a small MSS.
        let v6 = Offer {
            mss: Some(1440),
            ..modern()
        };
        assert!(!meaning(&v6, rtt15(), true)
            .iter()
            .any(|l| l.contains("MSS")));
    }

    #[test]
    fn unknown_options_say_nothing_about_the_peer() {
        let o = Offer {
            window_scaling: None,
            wscale: None,
            sack: None,
            timestamps: None,
            ecn: None,
            mss: None,
            initial_window: None,
        };
        assert!(meaning(&o, rtt15(), false).is_empty());
    }

    #[test]
    fn a_shift_past_14_is_read_as_14() {
        assert_eq!(max_window(0), 65_535);
        assert_eq!(max_window(7), 8_388_480);
        assert_eq!(max_window(14), 65_535 << 14);
        assert_eq!(max_window(15), 65_535 << 14);
    }
}
