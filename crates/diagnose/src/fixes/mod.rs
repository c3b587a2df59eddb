//! The fixes for each limit, per operating system, with what the model
//! expects them to yield: this module picks them by limit and holds the
//! small ones; a window or buffer limit's are in `buffer`, loss's in
//! `loss`, a CPU's in `cpu`, and `command` builds them.
//!
//! Buffer advice follows ESnet's host-tuning guidance: size buffers at twice
//! the bandwidth-delay product so that the window, not the buffer
//! bookkeeping, is what fills the pipe.

mod buffer;
mod command;
mod cpu;
mod loss;

use crate::evidence::Evidence;
use command::{fix, rate_arg};
use plumb_record::diagnosis::Figures;
use plumb_record::diagnosis::{Finding, Fix, Limit};

/// What to change for `limit`. Every figure comes from `figures`, the one
/// set the whole answer uses: the window needed, the buffer to allow, the
/// streams needed and what to expect afterwards.
pub fn for_limit(limit: Limit, ev: &Evidence, figures: &Figures, findings: &[Finding]) -> Vec<Fix> {
    let expect = figures.expect_bps;
    match limit {
        Limit::ReceiveWindow | Limit::SendBuffer => {
            buffer::fixes(limit == Limit::ReceiveWindow, ev, figures)
        }
        Limit::Loss if ev.udp.is_some() => loss::udp(ev),
        Limit::Loss => loss::tcp(ev, figures, findings),
        Limit::Link => link(ev, figures.goodput_bps),
        Limit::Cpu => cpu::fixes(ev),
        Limit::Application => application(expect),
        Limit::PathMtu => path_mtu(expect),
        Limit::Congestion => congestion(expect),
    }
}

/// The link is full: nothing to fix, but UDP offered beyond it is lost.
fn link(ev: &Evidence, goodput: Option<f64>) -> Vec<Fix> {
    let mut out = vec![fix(
        "path",
        "nothing to fix: the link is full; only a faster link raises it",
        None,
        &[],
    )];
    // UDP offered beyond the link is lost, not queued for later.
    if let (Some(u), Some(g)) = (ev.udp, goodput) {
        if u.sent_bps.is_some_and(|s| s > g * 1.05) {
            out.push(fix(
                "application",
                "offer no more than the link carries: what UDP sends beyond it is lost",
                Some(g),
                &[format!("plumb -c HOST -u -b {}", rate_arg(g))],
            ));
        }
    }
    out
}

/// The sender does not offer more data.
fn application(expect: Option<f64>) -> Vec<Fix> {
    vec![
        fix(
        "application",
        "the sender does not offer more data: raise or remove its rate cap, write larger blocks, keep more writes outstanding",
        expect,
        &["plumb -c HOST -b 0   (no cap)".into(), "in the application: larger write(2) sizes, asynchronous I/O".into()],
    ),
    ]
}

/// Segments far smaller than the path allows.
fn path_mtu(expect: Option<f64>) -> Vec<Fix> {
    vec![
        fix(
            "linux",
            "let TCP find the path MTU even where ICMP is filtered, and check every hop's MTU",
            expect,
            &[
                "sysctl -w net.ipv4.tcp_mtu_probing=1".into(),
                "ip link show   (MTU of each interface; 1500 on Ethernet)".into(),
                "tracepath HOST   (where the path MTU drops)".into(),
            ],
        ),
        fix(
            "windows",
            "check the interface MTU and PMTU discovery",
            expect,
            &[
                "netsh interface ipv4 show subinterfaces".into(),
                "netsh interface ipv4 set subinterface \"Ethernet\" mtu=1500 store=persistent"
                    .into(),
            ],
        ),
    ]
}

/// A congestion window that never grew.
fn congestion(expect: Option<f64>) -> Vec<Fix> {
    vec![
        fix(
            "application",
            "a longer transfer lets slow start finish; short transfers never reach the link rate",
            expect,
            &["plumb -c HOST -t 30".into()],
        ),
        fix(
            "linux",
            "a larger initial window or BBR gets up to speed faster",
            None,
            &[
                "ip route change DEST via GW initcwnd 32".into(),
                "sysctl -w net.ipv4.tcp_congestion_control=bbr".into(),
            ],
        ),
    ]
}
