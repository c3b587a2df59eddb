//! nuttcp's one-line summary (its default "brief" output), built from a
//! test's figures so that a plumb client measuring against a nuttcp peer
//! prints what a nuttcp client would.

/// The figures the summary shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Brief {
    /// Bytes the receiver counted.
    pub bytes: u64,
    /// Seconds the receiver counted them over.
    pub seconds: f64,
    /// The transmitter's CPU use, percent.
    pub tx_cpu: u32,
    /// The receiver's CPU use, percent.
    pub rx_cpu: u32,
    /// TCP: the sender's retransmits, when known.
    pub retrans: Option<u64>,
    /// TCP: the sender's RTT, milliseconds, when known.
    pub rtt_ms: Option<f64>,
    /// UDP: datagrams the sender sent and their size, for the drop count.
    pub udp_sent: Option<(u64, u64)>,
}

impl Brief {
    /// The line, without a newline.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{:10.4} MB / {:6.2} sec = {:9.4} Mbps {} %TX {} %RX",
            self.bytes as f64 / 1_048_576.0,
            self.seconds,
            super::reply::rate_mbps(self.bytes, self.seconds),
            self.tx_cpu,
            self.rx_cpu
        );
        if let Some((sent, size)) = self.udp_sent {
            let got = self.bytes / size.max(1);
            let dropped = sent.saturating_sub(got);
            let loss = if sent > 0 {
                dropped as f64 * 100.0 / sent as f64
            } else {
                0.0
            };
            s.push_str(&format!(" {dropped} / {sent} drop/pkt {loss:.2} %loss"));
        } else {
            if let Some(r) = self.retrans {
                s.push_str(&format!(" {r} retrans"));
            }
            if let Some(rtt) = self.rtt_ms {
                s.push_str(&format!(" {rtt:.2} msRTT"));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_nuttcp_prints() {
        // nuttcp 6.1.2's own client printed, for the same figures:
        // " 7278.6250 MB /   3.00 sec = 20324.1314 Mbps 42 %TX 37 %RX 0 retrans 0.10 msRTT"
        let b = Brief {
            bytes: 7_632_191_488,
            seconds: 3.004_189,
            tx_cpu: 42,
            rx_cpu: 37,
            retrans: Some(0),
            rtt_ms: Some(0.1),
            udp_sent: None,
        };
        assert_eq!(
            b.line(),
            " 7278.6250 MB /   3.00 sec = 20324.1314 Mbps 42 %TX 37 %RX 0 retrans 0.10 msRTT"
        );
        let u = Brief {
            bytes: 1526 * 8192,
            seconds: 2.0,
            udp_sent: Some((1526, 8192)),
            ..Brief::default()
        };
        assert!(
            u.line().ends_with(" 0 / 1526 drop/pkt 0.00 %loss"),
            "{}",
            u.line()
        );
    }
}
