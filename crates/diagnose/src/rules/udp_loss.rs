//! The UDP loss rule: datagrams that never arrived. Nothing predicts a rate
//! from it; the share lost is how much of what was sent it took. Drops in
//! the receiving socket (its buffer full: the reader fell behind) are the
//! receiver's. The rest were lost on the path; when the link explains what
//! arrived, the sender offered more than the link carries and the loss is
//! the link's doing, shown but not binding on its own.

use plumb_model::units::thousands;

use super::context::Context;
use crate::finding::line;
use crate::human::pct;
use crate::seen::Seen;
use crate::tolerance::{explains, TOLERANCE};
use plumb_record::diagnosis::Limit;

/// A UDP receiver that lost at least this share of the datagrams sent is
/// shown with the loss; below it, loss is noise for a rate question.
pub const UDP_LOSS_SEEN: f64 = 0.01;

/// The loss a UDP receiver counted, when it reaches [`UDP_LOSS_SEEN`].
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let u = cx.ev.udp.filter(|u| u.lost_fraction() >= UDP_LOSS_SEEN)?;
    let lost = u.lost_fraction();
    let in_socket = u.socket_drops.filter(|d| *d * 2 >= u.lost && *d > 0);
    let link_explains = cx
        .link_goodput()
        .filter(|_| cx.stated_link().is_some())
        .is_some_and(|g| explains(cx.measured, g, TOLERANCE));
    let mut e = vec![
        line("datagrams sent", u.datagrams as f64, "datagrams"),
        line("datagrams lost", lost * 100.0, "% of those sent"),
    ];
    if let Some(d) = u.socket_drops {
        e.push(line(
            "dropped by the receiving socket (buffer full)",
            d as f64,
            "datagrams",
        ));
    }
    if let Some(b) = u.rcvbuf_granted {
        e.push(line("receiver SO_RCVBUF granted", b as f64, "B"));
    }
    if let Some(sent) = u.sent_bps {
        e.push(line("sent", sent / 1e6, "Mbit/s"));
    }
    let (what, sentence) = match in_socket {
        Some(d) => (
            "datagrams dropped by the receiving socket",
            format!(
                "{}% of the datagrams sent were lost, {} of {} of them in the receiving socket, whose buffer was full: the reader did not keep up",
                pct(lost),
                thousands(d),
                thousands(u.lost)
            ),
        ),
        None => (
            "datagram loss",
            format!(
                "{}% of the datagrams sent were lost on the way; UDP does not slow down for loss",
                pct(lost)
            ),
        ),
    };
    let mut s = Seen::new(Limit::Loss, what, sentence);
    if in_socket.is_some() || !link_explains {
        s = s.counters(Some(lost));
    }
    if u.socket_drops.is_none() {
        s.missing
            .push("where the datagrams were lost: the receiver is not plumb".into());
    }
    s.evidence = e;
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn udp_documents_read_their_datagram_counts() {
        // iperf3 3.12 as client and server: sum_received carries the loss.
        let e = fixture("iperf3-3.12-udp-cap.json", None);
        let u = e.udp.expect("UDP evidence");
        assert!(!e.tcp);
        assert_eq!((u.datagrams, u.lost), (382, 2));
        assert_eq!(u.socket_drops, None, "a stock iperf3 receiver counts none");
        assert!((u.sent_bps.unwrap_or(0.0) - 50_067_701.56).abs() < 1.0);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application), "{}", d.summary);
        assert!(status(&d, Limit::Loss).is_none(), "0.5 % is below the bar");
        no_tcp_claims(&d);
    }

    #[test]
    fn udp_socket_drops_name_the_receiving_socket_not_the_sender_cpu() {
        // Loopback, -u -b 0 -w 8K: 2.1 Gbit/s sent, 73 % dropped by a
        // 16 KiB receive buffer.
        let e = fixture("loopback-udp-socket-drops.json", None);
        let u = e.udp.expect("UDP evidence");
        assert_eq!(u.socket_drops, Some(274_031));
        assert_eq!(u.rcvbuf_granted, Some(16_384));
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Loss), "{}", d.summary);
        let p = d.primary().expect("primary");
        assert_eq!(p.what, "datagrams dropped by the receiving socket");
        assert!(p.counters_bind && !p.explains);
        assert_eq!(status(&d, Limit::Cpu), Some(Status::NotBinding));
        let fix = d
            .fixes
            .iter()
            .find(|f| f.os == "receiver")
            .expect("buffer fix");
        assert!(
            fix.commands[0].starts_with("plumb -c HOST -u -w 8M"),
            "{:?}",
            fix.commands
        );
        no_tcp_claims(&d);
    }
}
