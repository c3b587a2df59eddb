//! A receiving nuttcp server's interval lines, in the format the client
//! asked for ([`Format`]): nuttcp's right-aligned text or `key=value`
//! pairs (`-fparse`), with the figures since the start (`-frunningtotal`),
//! and for UDP the drops and loss (unless `-f-drops`, `-f-percentloss`)
//! and what the sender sent (`-fxmitstats`).

use super::format::Format;
use super::reply::rate_mbps;
use super::MB;

/// A receiver's count over one stretch of the test: one interval, or
/// everything since the start.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stretch {
    /// Bytes received.
    pub bytes: u64,
    /// Seconds the stretch lasted.
    pub seconds: f64,
    /// UDP: the sender's side of the same stretch.
    pub udp: Option<Sent>,
}

/// What a UDP sender's byte counts (stamped in its datagrams) say of a
/// stretch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sent {
    /// Datagrams that did not arrive.
    pub dropped: u64,
    /// Datagrams sent.
    pub expected: u64,
    /// Bytes sent.
    pub bytes: u64,
}

/// One interval line (no newline): the interval's figures, then as the
/// format asks the totals since the start and the sender's bytes.
pub fn line(format: Format, interval: &Stretch, total: &Stretch) -> String {
    let mut s = figures(format, interval, false);
    if format.has(Format::RUNNING_TOTAL) {
        s.push_str(&figures(format, total, true));
    }
    if let (Some(now), Some(all)) = (interval.udp, total.udp) {
        if format.has(Format::XMIT_STATS) {
            s.push_str(&sent(format, now.bytes, false));
            if format.has(Format::RUNNING_TOTAL) {
                s.push_str(&sent(format, all.bytes, true));
                if format.has(Format::DEBUG_INTERVAL) {
                    // The sender's latest count, which here is its total.
                    s.push_str(&format!(" Pre: {:.4} MB", all.bytes as f64 / MB));
                }
            }
        }
    }
    s
}

/// A stretch's bytes, time and rate, and for UDP its drops and loss.
fn figures(format: Format, st: &Stretch, total: bool) -> String {
    let mb = st.bytes as f64 / MB;
    let secs = st.seconds;
    let mbps = rate_mbps(st.bytes, secs);
    let mut s = match (format.parse(), total) {
        (false, false) => format!("{mb:10.4} MB / {secs:6.2} sec = {mbps:9.4} Mbps"),
        (false, true) => format!(" Tot: {mb:10.4} MB / {secs:6.2} sec = {mbps:9.4} Mbps"),
        (true, false) => format!("megabytes={mb:.4} real_sec={secs:.2} rate_Mbps={mbps:.4}"),
        (true, true) => {
            format!(" total_megabytes={mb:.4} total_real_sec={secs:.2} total_rate_Mbps={mbps:.4}")
        }
    };
    if let Some(u) = st.udp {
        s.push_str(&loss(format, &u));
    }
    s
}

/// A UDP stretch's drops and loss percentage, each unless the format
/// leaves it out.
fn loss(format: Format, u: &Sent) -> String {
    let mut s = String::new();
    if !format.has(Format::NO_DROPS) {
        s.push_str(&if format.parse() {
            format!(" drop={} pkt={}", u.dropped, u.expected)
        } else {
            format!(" {:5} / {:5} ~drop/pkt", u.dropped, u.expected)
        });
    }
    if !format.has(Format::NO_PERCENT_LOSS) {
        let fraction = if u.expected > 0 {
            u.dropped as f64 / u.expected as f64
        } else {
            0.0
        };
        let pct = fraction * 100.0;
        s.push_str(&if format.parse() {
            format!(" data_loss={pct:.5}")
        } else if fraction > 0.0 && fraction < 0.001 {
            // Under a tenth of a percent shows five decimals, as nuttcp's.
            format!(" {pct:7.5} ~%loss")
        } else {
            format!(" {pct:5.2} ~%loss")
        });
    }
    s
}

/// The sender's bytes over the interval, or since the start.
fn sent(format: Format, bytes: u64, total: bool) -> String {
    let mb = bytes as f64 / MB;
    match (format.parse(), total) {
        (false, false) => format!(" Trans: {mb:10.4} MB"),
        (false, true) => format!(" Tot: {mb:10.4} MB"),
        (true, false) => format!(" tx_megabytes={mb:.4}"),
        (true, true) => format!(" tx_total_megabytes={mb:.4}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(bits: u32) -> Format {
        Format::from_bits(Format::WANT_RTT | bits).unwrap_or_default()
    }

    /// `mb` MiB in a second.
    fn tcp(mb: f64, seconds: f64) -> Stretch {
        Stretch {
            bytes: (mb * MB) as u64,
            seconds,
            udp: None,
        }
    }

    /// 8192-byte datagrams: `got` of `sent` arrived, over `seconds`.
    fn udp(got: u64, sent: u64, seconds: f64) -> Stretch {
        Stretch {
            bytes: got * 8192,
            seconds,
            udp: Some(Sent {
                dropped: sent - got,
                expected: sent,
                bytes: sent * 8192,
            }),
        }
    }

    // Each expected line is what `nuttcp -S` (Debian 12, 6.1.2) sent its
    // client on loopback for the options named (tcpdump -i lo); the
    // seconds are the ones that give its rate.

    #[test]
    fn tcp_lines_as_nuttcp_writes_them() {
        // `-T2 -i1 -N2` (two streams: no retransmission stamp to show).
        let one = tcp(2437.5, 1.003_174);
        assert_eq!(
            line(fmt(0), &one, &one),
            " 2437.5000 MB /   1.00 sec = 20382.5378 Mbps"
        );
        // `-fparse -T2 -i1 -N2`.
        let p = tcp(2926.9375, 1.000_412);
        assert_eq!(
            line(fmt(Format::PARSE), &p, &p),
            "megabytes=2926.9375 real_sec=1.00 rate_Mbps=24542.8197"
        );
        // `-fparse -frunningtotal -T2 -i1 -N2`, its second interval.
        assert_eq!(
            line(
                fmt(Format::PARSE | Format::RUNNING_TOTAL),
                &tcp(2355.8125, 0.999_981),
                &tcp(4991.0, 2.000_021)
            ),
            "megabytes=2355.8125 real_sec=1.00 rate_Mbps=19762.3631 \
             total_megabytes=4991.0000 total_real_sec=2.00 total_rate_Mbps=20933.5515"
        );
        // `-frunningtotal -T2 -i1 -N2`.
        let first = tcp(3439.1875, 1.000_058);
        assert_eq!(
            line(fmt(Format::RUNNING_TOTAL), &first, &first),
            " 3439.1875 MB /   1.00 sec = 28848.3226 Mbps \
             Tot:  3439.1875 MB /   1.00 sec = 28848.3226 Mbps"
        );
        // `-fxmitstats -T2 -i1 -N2`: for UDP only, a TCP line is the plain one.
        assert_eq!(
            line(fmt(Format::XMIT_STATS), &one, &one),
            line(fmt(0), &one, &one)
        );
    }

    #[test]
    fn udp_lines_as_nuttcp_writes_them() {
        // `-u -R 10m -i1`.
        let first = udp(152, 152, 1.000_03);
        assert_eq!(
            line(fmt(0), &first, &first),
            "    1.1875 MB /   1.00 sec =    9.9612 Mbps     0 /   152 ~drop/pkt  0.00 ~%loss"
        );
        // `-fparse -u -R 10m -i1`.
        let p = udp(152, 152, 1.000_05);
        assert_eq!(
            line(fmt(Format::PARSE), &p, &p),
            "megabytes=1.1875 real_sec=1.00 rate_Mbps=9.9610 drop=0 pkt=152 data_loss=0.00000"
        );
        // `-fparse -frunningtotal -fxmitstats -fdebuginterval -u -R 10m
        // -i1`, the second interval.
        let all = Format::PARSE | Format::RUNNING_TOTAL | Format::XMIT_STATS;
        assert_eq!(
            line(
                fmt(all | Format::DEBUG_INTERVAL),
                &udp(153, 153, 0.999_97),
                &udp(305, 305, 2.000_03)
            ),
            "megabytes=1.1953 real_sec=1.00 rate_Mbps=10.0273 drop=0 pkt=153 data_loss=0.00000 \
             total_megabytes=2.3828 total_real_sec=2.00 total_rate_Mbps=9.9941 drop=0 pkt=305 \
             data_loss=0.00000 tx_megabytes=1.1953 tx_total_megabytes=2.3828 Pre: 2.3828 MB"
        );
        // `-fparse -f-drops -f-percentloss -fxmitstats -u -R 10m -i1`.
        let none = Format::PARSE | Format::NO_DROPS | Format::NO_PERCENT_LOSS;
        assert_eq!(
            line(fmt(none | Format::XMIT_STATS), &first, &first),
            "megabytes=1.1875 real_sec=1.00 rate_Mbps=9.9612 tx_megabytes=1.1875"
        );
        // `-f-percentloss -frunningtotal -u -R 10m -i1`, the second interval.
        assert_eq!(
            line(
                fmt(Format::NO_PERCENT_LOSS | Format::RUNNING_TOTAL),
                &udp(153, 153, 0.999_99),
                &udp(305, 305, 2.000_03)
            ),
            "    1.1953 MB /   1.00 sec =   10.0271 Mbps     0 /   153 ~drop/pkt \
             Tot:     2.3828 MB /   2.00 sec =    9.9941 Mbps     0 /   305 ~drop/pkt"
        );
        // `-f-drops -fxmitstats -u -R 10m -i1`.
        assert_eq!(
            line(fmt(Format::NO_DROPS | Format::XMIT_STATS), &first, &first),
            "    1.1875 MB /   1.00 sec =    9.9612 Mbps  0.00 ~%loss Trans:     1.1875 MB"
        );
    }

    #[test]
    fn loss_under_a_tenth_of_a_percent_shows_five_decimals() {
        let few = udp(9_999, 10_000, 1.0);
        let line_of = |bits, s: &Stretch| line(fmt(bits), s, s);
        assert!(line_of(0, &few).ends_with("    1 / 10000 ~drop/pkt 0.01000 ~%loss"));
        let many = udp(90, 100, 1.0);
        assert!(line_of(0, &many).ends_with("   10 /   100 ~drop/pkt 10.00 ~%loss"));
        assert!(line_of(Format::PARSE, &many).ends_with(" drop=10 pkt=100 data_loss=10.00000"));
        let nothing = udp(0, 0, 0.0);
        assert!(line_of(0, &nothing).ends_with("0 /     0 ~drop/pkt  0.00 ~%loss"));
    }
}
