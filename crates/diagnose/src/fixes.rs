//! The fixes for each limit, per operating system, with what the model
//! expects them to yield.
//!
//! Buffer advice follows ESnet's host-tuning guidance: size buffers at twice
//! the bandwidth-delay product so that the window, not the buffer
//! bookkeeping, is what fills the pipe.

use plumb_model::units::thousands;
use plumb_model::{tcp, Bytes};

use crate::evidence::Evidence;
use crate::rules::{Figures, Finding, Fix, Limit};

fn fix(os: &str, note: &str, expected: Option<f64>, commands: &[String]) -> Fix {
    Fix {
        os: os.into(),
        commands: commands.to_vec(),
        expected_bps: expected,
        note: note.into(),
    }
}

/// What to change for `limit`. Every figure comes from `figures`, the one
/// set the whole answer uses: the window needed, the buffer to allow, the
/// streams needed and what to expect afterwards.
pub fn for_limit(limit: Limit, ev: &Evidence, figures: &Figures, findings: &[Finding]) -> Vec<Fix> {
    let expect = figures.expect_bps;
    let goodput = figures.goodput_bps;
    let window_needed = figures.window_needed_bytes;
    let buf = figures.buffer_bytes;
    let streams = figures.streams_needed;
    let loss_cap = findings
        .iter()
        .find(|f| f.limit == Limit::Loss)
        .and_then(|f| f.predicted_bps);
    let mut out = Vec::new();
    match limit {
        Limit::ReceiveWindow | Limit::SendBuffer => {
            let recv = limit == Limit::ReceiveWindow;
            let (side, core, tcp_key) = if recv {
                ("receiver", "rmem_max", "tcp_rmem")
            } else {
                ("sender", "wmem_max", "tcp_wmem")
            };
            let b = buf.unwrap_or(64 << 20);
            let need = window_needed.map_or_else(
                || "the bandwidth-delay product (give --link to compute it)".to_string(),
                |x| {
                    format!(
                        "{} B (the link's goodput for one round trip; {} B with ESnet's 2x margin)",
                        thousands(x),
                        thousands(b)
                    )
                },
            );
            let shift = window_needed
                .and_then(|x| tcp::window_shift(Bytes(x)))
                .unwrap_or(tcp::MAX_WINDOW_SHIFT);
            let sysctls = if recv {
                &ev.sysctl_receiver
            } else {
                &ev.sysctl_sender
            };
            let (mut commands, already) = raise_only(sysctls, core, tcp_key, recv, b);
            commands.push(format!(
                "{} the application from fixing its buffer (SO_{}BUF), or set it to {b}",
                if already { "stop" } else { "and stop" },
                if recv { "RCV" } else { "SND" }
            ));
            let note = if already {
                format!(
                    "on the {side}: autotuning may already reach {need}{}; the buffer the application fixed is what holds the window",
                    sysctls
                        .get(&format!("net.ipv4.{tcp_key}"))
                        .map_or(String::new(), |v| format!(": net.ipv4.{tcp_key} is {}", v.trim()))
                )
            } else {
                format!("on the {side}: let autotuning reach {need}")
            };
            out.push(fix("linux", &note, expect, &commands));
            if recv {
                out.push(fix(
                    "windows",
                    "turn receive-window autotuning (and with it RFC 7323 scaling) on",
                    expect,
                    &[
                        "netsh int tcp set global autotuninglevel=normal".into(),
                        "netsh int tcp show global   (check: Receive Window Auto-Tuning Level = normal)".into(),
                    ],
                ));
                out.push(fix(
                    "windows-legacy",
                    &format!(
                        "window scaling is off and the window is 17,520 B by default; turn on RFC 1323 scaling (window shift {shift}) and set the window"
                    ),
                    expect,
                    &[
                        "reg add HKLM\\SYSTEM\\CurrentControlSet\\Services\\Tcpip\\Parameters /v Tcp1323Opts /t REG_DWORD /d 1".into(),
                        format!(
                            "reg add HKLM\\SYSTEM\\CurrentControlSet\\Services\\Tcpip\\Parameters /v GlobalMaxTcpWindowSize /t REG_DWORD /d {}",
                            b.min(1 << 30)
                        ),
                        format!(
                            "reg add HKLM\\SYSTEM\\CurrentControlSet\\Services\\Tcpip\\Parameters /v TcpWindowSize /t REG_DWORD /d {}",
                            b.min(1 << 30)
                        ),
                        "reboot".into(),
                    ],
                ));
            } else {
                out.push(fix(
                    "windows",
                    "the send buffer is the application's: have it set SO_SNDBUF, or use overlapped sends (Windows autotunes sends since Vista)",
                    expect,
                    &[format!("setsockopt(SO_SNDBUF, {b}) in the sending application")],
                ));
            }
            let mac_key = if recv {
                "net.inet.tcp.autorcvbufmax"
            } else {
                "net.inet.tcp.autosndbufmax"
            };
            out.push(fix(
                "macos",
                "raise the socket-buffer ceiling and autotuning maximum",
                expect,
                &[
                    format!("sysctl -w kern.ipc.maxsockbuf={}", 2 * b),
                    format!("sysctl -w {mac_key}={b}"),
                ],
            ));
            let bsd_key = if recv {
                "net.inet.tcp.recvbuf_max"
            } else {
                "net.inet.tcp.sendbuf_max"
            };
            out.push(fix(
                "freebsd",
                "raise the socket-buffer ceiling and autotuning maximum",
                expect,
                &[
                    format!("sysctl kern.ipc.maxsockbuf={}", 2 * b),
                    format!("sysctl {bsd_key}={b}"),
                ],
            ));
            if let Some(n) = streams {
                out.push(fix(
                    "application",
                    "or, without touching the hosts: parallel streams, each with today's window",
                    expect,
                    &[format!("{n} parallel streams (plumb -c HOST -P {n}; rsync/backup tools: parallel jobs)")],
                ));
            }
        }
        Limit::Loss if ev.udp.is_some() => udp_loss(ev, &mut out),
        Limit::Loss => {
            out.push(fix(
                "path",
                "find where packets are lost and remove it: the model says loss, not the hosts, holds the rate",
                expect,
                &[
                    "ip -s link   (errors and drops on each interface on the path)".into(),
                    "ethtool -S IF | grep -i -E 'err|drop|crc'".into(),
                    "check duplex/speed negotiation, optics, and queue drops on switches and routers".into(),
                ],
            ));
            out.push(fix(
                "linux",
                "a congestion control that does not treat random loss as congestion",
                None,
                &[
                    "sysctl -w net.core.default_qdisc=fq".into(),
                    "sysctl -w net.ipv4.tcp_congestion_control=bbr".into(),
                ],
            ));
            if let Some(n) = streams {
                out.push(fix(
                    "application",
                    "parallel streams share the loss and multiply the Mathis bound",
                    loss_cap
                        .map(|l| l * n as f64 / ev.streams.len().max(1) as f64)
                        .map(|e| goodput.map_or(e, |g| g.min(e))),
                    &[format!("{n} parallel streams (plumb -c HOST -P {n})")],
                ));
            }
        }
        Limit::Link => {
            out.push(fix(
                "path",
                "nothing to fix: the link is full; only a faster link raises it",
                None,
                &[],
            ));
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
        }
        Limit::Cpu => {
            // A quota that ran out: the limit is the container's, not the
            // cycles each byte costs.
            let quotas: Vec<String> = [("receiver", ev.cpu_receiver), ("sender", ev.cpu_sender)]
                .into_iter()
                .filter_map(|(who, c)| {
                    let (q, _) = crate::rules::quota_binds(&c?)?;
                    Some(format!(
                        "{who}: {}% of one core",
                        plumb_model::units::sig(q, 3)
                    ))
                })
                .collect();
            if !quotas.is_empty() {
                out.push(fix(
                    "linux",
                    &format!(
                        "raise or remove the CPU quota of the cgroup that ran out ({})",
                        quotas.join("; ")
                    ),
                    None,
                    &[
                        "cgroup v2: echo max > /sys/fs/cgroup/GROUP/cpu.max   (or a larger QUOTA PERIOD)".into(),
                        "cgroup v1: echo -1 > /sys/fs/cgroup/cpu/GROUP/cpu.cfs_quota_us".into(),
                        "Kubernetes: raise resources.limits.cpu of the container, or remove the limit".into(),
                        "systemd: systemctl set-property UNIT CPUQuota=   (empty: no quota)".into(),
                    ],
                ));
            }
            out.push(fix(
                "linux",
                "spend fewer cycles per byte, or more cores",
                None,
                &[
                    "plumb -c HOST -Z   (zero-copy send)".into(),
                    "plumb -c HOST -P 2 (one stream per core)".into(),
                    "ethtool -K IF gso on gro on tso on   (segmentation offloads)".into(),
                    "spread interrupts: check /proc/interrupts and irqbalance, enable RSS".into(),
                ],
            ));
        }
        Limit::Application => {
            out.push(fix(
                "application",
                "the sender does not offer more data: raise or remove its rate cap, write larger blocks, keep more writes outstanding",
                expect,
                &["plumb -c HOST -b 0   (no cap)".into(), "in the application: larger write(2) sizes, asynchronous I/O".into()],
            ));
        }
        Limit::PathMtu => {
            out.push(fix(
                "linux",
                "let TCP find the path MTU even where ICMP is filtered, and check every hop's MTU",
                expect,
                &[
                    "sysctl -w net.ipv4.tcp_mtu_probing=1".into(),
                    "ip link show   (MTU of each interface; 1500 on Ethernet)".into(),
                    "tracepath HOST   (where the path MTU drops)".into(),
                ],
            ));
            out.push(fix(
                "windows",
                "check the interface MTU and PMTU discovery",
                expect,
                &[
                    "netsh interface ipv4 show subinterfaces".into(),
                    "netsh interface ipv4 set subinterface \"Ethernet\" mtu=1500 store=persistent"
                        .into(),
                ],
            ));
        }
        Limit::Congestion => {
            out.push(fix(
                "application",
                "a longer transfer lets slow start finish; short transfers never reach the link rate",
                expect,
                &["plumb -c HOST -t 30".into()],
            ));
            out.push(fix(
                "linux",
                "a larger initial window or BBR gets up to speed faster",
                None,
                &[
                    "ip route change DEST via GW initcwnd 32".into(),
                    "sysctl -w net.ipv4.tcp_congestion_control=bbr".into(),
                ],
            ));
        }
    }
    out
}

/// `-b` for `bps`, rounded down to three significant figures so the
/// command offers no more than was meant.
fn rate_arg(bps: f64) -> String {
    let (div, unit) = if bps >= 1e9 {
        (1e9, "G")
    } else if bps >= 1e6 {
        (1e6, "M")
    } else {
        (1e3, "K")
    };
    let v = bps / div;
    let scale = 10f64.powi(2 - v.max(1.0).log10().floor() as i32);
    format!("{}{unit}", (v * scale).floor() / scale)
}

/// The fixes for lost UDP datagrams: the receiving socket's, or the path's.
fn udp_loss(ev: &Evidence, out: &mut Vec<Fix>) {
    let Some(u) = ev.udp else { return };
    let in_socket = u.socket_drops.is_some_and(|d| d * 2 >= u.lost && d > 0);
    if in_socket {
        let want = u.rcvbuf_granted.map_or(8 << 20, |b| (b * 4).max(8 << 20));
        out.push(fix(
            "receiver",
            "a larger receive buffer rides out the reader's pauses; a reader that keeps up needs a core of its own",
            u.sent_bps,
            &[
                format!("plumb -c HOST -u -w {}M   (SO_RCVBUF at both ends)", want >> 20),
                format!("sysctl -w net.core.rmem_max={want}   (Linux caps SO_RCVBUF at it)"),
                "top -H on the receiver: is its reading thread at 100 % of a core?".into(),
            ],
        ));
    } else {
        out.push(fix(
            "application",
            "offer no more than the path delivers: UDP does not slow down for loss",
            Some(ev.measured_bps),
            &[format!("plumb -c HOST -u -b {}", rate_arg(ev.measured_bps))],
        ));
        out.push(fix(
            "path",
            "find where datagrams are dropped",
            None,
            &[
                "ip -s link   (errors and drops on each interface on the path)".into(),
                "tc -s qdisc   (queue drops at the sender's bottleneck)".into(),
            ],
        ));
    }
}

/// The Linux commands that let autotuning reach `b` bytes on one side,
/// raising only: where that side's sysctls are known (a plumb peer sends
/// its own), a setting already at or above `b` is left as it is, and the
/// `tcp_rmem`/`tcp_wmem` minimum and default are kept. The flag says that
/// nothing needed raising.
fn raise_only(
    sysctls: &std::collections::BTreeMap<String, String>,
    core: &str,
    tcp_key: &str,
    recv: bool,
    b: u64,
) -> (Vec<String>, bool) {
    let core_now = sysctls
        .get(&format!("net.core.{core}"))
        .and_then(|v| v.trim().parse::<u64>().ok());
    let triple: Option<Vec<u64>> = sysctls
        .get(&format!("net.ipv4.{tcp_key}"))
        .and_then(|v| v.split_whitespace().map(|x| x.parse().ok()).collect())
        .filter(|t: &Vec<u64>| t.len() == 3);
    let scaling_off = sysctls
        .get("net.ipv4.tcp_window_scaling")
        .is_some_and(|v| v.trim() == "0");
    let mut out = Vec::new();
    // SO_RCVBUF/SO_SNDBUF set by hand are capped at net.core.*mem_max;
    // autotuning is capped by the tcp_*mem maximum alone.
    if core_now.is_none_or(|c| c < b) {
        out.push(format!("sysctl -w net.core.{core}={b}"));
    }
    let tcp_low = triple.as_ref().is_none_or(|t| t[2] < b);
    if tcp_low {
        let (min, def) = triple
            .as_ref()
            .map_or((4096, if recv { 131_072 } else { 16_384 }), |t| {
                (t[0], t[1])
            });
        out.push(format!("sysctl -w net.ipv4.{tcp_key}=\"{min} {def} {b}\""));
    }
    if scaling_off || triple.is_none() {
        out.push("sysctl -w net.ipv4.tcp_window_scaling=1".into());
    }
    let already = out.is_empty();
    (out, already)
}

#[cfg(test)]
mod tests {
    use super::raise_only;
    use std::collections::BTreeMap;

    fn sysctls(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn buffer_fix_never_lowers_what_the_receiver_has() {
        // The lab's receiver: autotuning already reaches 32 MiB.
        let s = sysctls(&[
            ("net.core.rmem_max", "4194304"),
            ("net.ipv4.tcp_rmem", "4096 131072 33554432"),
            ("net.ipv4.tcp_window_scaling", "1"),
        ]);
        assert_eq!(
            raise_only(&s, "rmem_max", "tcp_rmem", true, 4 << 20),
            (vec![], true)
        );
        // A ceiling below the buffer needed is raised, keeping min and default.
        let (c, already) = raise_only(&s, "rmem_max", "tcp_rmem", true, 64 << 20);
        assert!(!already);
        assert_eq!(
            c,
            vec![
                "sysctl -w net.core.rmem_max=67108864".to_string(),
                "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 67108864\"".to_string(),
            ]
        );
    }

    #[test]
    fn buffer_fix_without_the_sides_sysctls_gives_every_command() {
        let (c, already) = raise_only(&BTreeMap::new(), "wmem_max", "tcp_wmem", false, 8 << 20);
        assert!(!already);
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!(c[1], "sysctl -w net.ipv4.tcp_wmem=\"4096 16384 8388608\"");
        // Scaling off is named even when the ceilings are high enough.
        let s = sysctls(&[
            ("net.core.wmem_max", "16777216"),
            ("net.ipv4.tcp_wmem", "4096 16384 16777216"),
            ("net.ipv4.tcp_window_scaling", "0"),
        ]);
        assert_eq!(
            raise_only(&s, "wmem_max", "tcp_wmem", false, 8 << 20),
            (
                vec!["sysctl -w net.ipv4.tcp_window_scaling=1".to_string()],
                false
            )
        );
    }
}
