//! Latency arithmetic: the delay a full bottleneck queue adds, the loaded
//! round trip that follows, and responsiveness in round trips per minute.
//!
//! Owns only formulas; the measurements they are compared with come from
//! `net` (probes) and are judged in `diagnose`.

use crate::units::{Bytes, Rate, Rtt};

/// A bottleneck queue's size as the lab's `--queue` takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueSize {
    /// So many bytes on the wire.
    Bytes(u64),
    /// As many bytes as the link sends in this many seconds.
    Delay(f64),
    /// This multiple of the path's bandwidth-delay product.
    Bdp(f64),
}

impl QueueSize {
    /// Parses a queue as `plumb lab --queue` and `plumb calc --queue` take
    /// it: a BDP multiple (`1.5BDP`), a size (`2MB`, `64K`) or a delay
    /// (`20ms`, `0.1s`); every error names all three forms.
    pub fn parse(s: &str) -> Result<QueueSize, String> {
        let bad = |why: &str| {
            format!(
                "invalid queue '{s}': {why} (accepted: a BDP multiple 1.5BDP, a size 2MB or 64K, a delay 20ms or 0.1s)"
            )
        };
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        if let Some(n) = lower.strip_suffix("bdp") {
            let f: f64 = n
                .trim()
                .parse()
                .map_err(|_| bad(&format!("'{}' is not a number", n.trim())))?;
            if !(f > 0.0 && f <= 1000.0) {
                return Err(bad("a BDP multiple must be above 0 and at most 1000"));
            }
            return Ok(QueueSize::Bdp(f));
        }
        // A size's unit never ends in a bare "s" (`2MB`, `64K`, `1MiB`),
        // a delay's always does (`20ms`, `250us`, `0.1s`).
        if lower.ends_with("ms")
            || lower.ends_with("us")
            || (lower.ends_with('s') && !lower.ends_with("bs"))
        {
            let d = Rtt::parse(t).map_err(|e| bad(&e.reason))?;
            return Ok(QueueSize::Delay(d.secs()));
        }
        let b = Bytes::parse(t).map_err(|e| bad(&e.reason))?;
        Ok(QueueSize::Bytes(b.get()))
    }
}

/// The delay, in seconds, that a full queue of `size` adds at a link of
/// `rate`: every byte in it waits for all the bytes ahead of it to be sent.
/// A BDP multiple needs the round trip; `None` without it.
pub fn queue_delay_secs(size: QueueSize, rate: Rate, rtt: Option<Rtt>) -> Option<f64> {
    match size {
        QueueSize::Bytes(b) => Some(b as f64 * 8.0 / rate.bps()),
        QueueSize::Delay(s) => Some(s),
        // m × BDP bytes drain in m × RTT at the link rate.
        QueueSize::Bdp(m) => rtt.map(|r| m * r.secs()),
    }
}

/// The round trip a flow sees once a loss-based sender keeps the queue full:
/// the path's own round trip plus the queue's delay.
pub fn loaded_rtt_secs(rtt: Rtt, queue_delay_secs: f64) -> f64 {
    rtt.secs() + queue_delay_secs
}

/// The share of the slowest samples the IETF IPPM responsiveness draft
/// drops before averaging (its "95th percentile trimmed mean").
pub const RPM_TRIM: f64 = 0.05;

/// The mean of `samples` after dropping the largest `trim` share of them
/// (rounded down, so small sets keep every sample). `None` when empty or a
/// sample is not finite.
pub fn trimmed_mean(samples: &[f64], trim: f64) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let drop = (v.len() as f64 * trim.clamp(0.0, 1.0)).floor() as usize;
    let kept = &v[..v.len() - drop.min(v.len() - 1)];
    Some(kept.iter().sum::<f64>() / kept.len() as f64)
}

/// Round trips per minute from round-trip samples in milliseconds:
/// 60 000 over their 95th-percentile trimmed mean. The draft averages four
/// probe kinds (TCP, TLS and HTTP handshakes on new connections, HTTP on the
/// loaded ones); plumb has one kind, so its mean stands for all.
pub fn rpm(rtt_ms: &[f64]) -> Option<f64> {
    trimmed_mean(rtt_ms, RPM_TRIM)
        .filter(|m| *m > 0.0)
        .map(|m| 60_000.0 / m)
}

#[cfg(test)]
mod tests {
    #[test]
    fn queue_sizes_parse_in_three_forms() {
        assert_eq!(QueueSize::parse("1.5BDP"), Ok(QueueSize::Bdp(1.5)));
        assert_eq!(QueueSize::parse("2MB"), Ok(QueueSize::Bytes(2_000_000)));
        assert_eq!(QueueSize::parse("20ms"), Ok(QueueSize::Delay(0.02)));
        assert_eq!(QueueSize::parse("0.1s"), Ok(QueueSize::Delay(0.1)));
        for bad in ["0BDP", "lots", "xBDP", "2000BDP", "-1ms"] {
            let e = QueueSize::parse(bad).expect_err(bad);
            assert!(
                e.contains("1.5BDP") && e.contains("2MB") && e.contains("20ms"),
                "{e}"
            );
        }
    }

    use super::*;

    fn gbit() -> Rate {
        Rate::from_bps(1e9).expect("a rate")
    }

    #[test]
    fn a_queue_drains_at_the_link_rate() {
        // 12.5 MB at 1 Gb/s is 100 ms.
        let d = queue_delay_secs(QueueSize::Bytes(12_500_000), gbit(), None)
            .expect("bytes need no RTT");
        assert!((d - 0.1).abs() < 1e-12);
        assert_eq!(
            queue_delay_secs(QueueSize::Delay(0.1), gbit(), None),
            Some(0.1)
        );
        let rtt = Rtt::from_ms(15.0);
        let bdp = queue_delay_secs(QueueSize::Bdp(2.0), gbit(), rtt).expect("an RTT was given");
        assert!((bdp - 0.030).abs() < 1e-12);
        assert_eq!(queue_delay_secs(QueueSize::Bdp(1.0), gbit(), None), None);
        let loaded = loaded_rtt_secs(rtt.expect("15 ms"), 0.1);
        assert!((loaded - 0.115).abs() < 1e-12);
    }

    #[test]
    fn trimmed_mean_drops_the_slowest_twentieth() {
        let mut s: Vec<f64> = vec![10.0; 19];
        s.push(1000.0);
        assert_eq!(trimmed_mean(&s, RPM_TRIM), Some(10.0));
        // Fewer than 20 samples: nothing is dropped.
        assert_eq!(trimmed_mean(&[10.0, 20.0], RPM_TRIM), Some(15.0));
        assert_eq!(trimmed_mean(&[], RPM_TRIM), None);
        assert_eq!(trimmed_mean(&[f64::NAN], RPM_TRIM), None);
        // 100 ms round trips: 600 per minute.
        assert_eq!(rpm(&[100.0; 40]), Some(600.0));
        assert_eq!(rpm(&[0.0]), None);
    }
}
