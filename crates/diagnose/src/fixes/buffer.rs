//! The fixes for a window or buffer limit: let autotuning reach twice the
//! bandwidth-delay product on the receiver (the window) or the sender (the
//! buffer), per operating system, or use parallel streams.
//!
//! A fix never lowers a setting: where the side's sysctls are known (a
//! plumb peer sends its own, and this host's are read), a value already high
//! enough is left alone; where they are not, the Linux commands go no lower
//! than a stock kernel's own maximum and the note says the value is a floor.

use std::collections::BTreeMap;

use plumb_model::units::thousands;
use plumb_model::{tcp, Bytes};

use super::command::fix;
use crate::evidence::Evidence;
use plumb_record::diagnosis::Figures;
use plumb_record::diagnosis::Fix;

/// The fixes for the receive window (`recv`) or the send buffer.
pub(super) fn fixes(recv: bool, ev: &Evidence, figures: &Figures) -> Vec<Fix> {
    let expect = figures.expect_bps;
    let window_needed = figures.window_needed_bytes;
    let b = figures.buffer_bytes.unwrap_or(64 << 20);
    let mut out = vec![linux(
        recv,
        ev,
        (window_needed, figures.window_goodput_bytes),
        b,
        expect,
    )];
    out.extend(windows(recv, window_needed, b, expect));
    out.extend(bsd(recv, b, expect));
    if let Some(n) = figures.streams_needed {
        out.push(fix(
            "application",
            "or, without touching the hosts: parallel streams, each with today's window",
            expect,
            &[format!(
                "{n} parallel streams (plumb -c HOST -P {n}; rsync/backup tools: parallel jobs)"
            )],
        ));
    }
    out
}

/// Linux: let autotuning reach `b` bytes, raising only what is below it,
/// and stop the application from fixing its buffer.
fn linux(
    recv: bool,
    ev: &Evidence,
    (window_needed, window_goodput): (Option<u64>, Option<u64>),
    b: u64,
    expect: Option<f64>,
) -> Fix {
    let (side, core, tcp_key) = if recv {
        ("receiver", "rmem_max", "tcp_rmem")
    } else {
        ("sender", "wmem_max", "tcp_wmem")
    };
    let need = window_needed.map_or_else(
        || "the bandwidth-delay product (give --link to compute it)".to_string(),
        |x| {
            format!(
                "{} B (the bandwidth-delay product, line rate x RTT{}; {} B with ESnet's 2x margin)",
                thousands(x),
                window_goodput.map_or(String::new(), |g| format!(
                    ", of which {} B is TCP payload",
                    thousands(g)
                )),
                thousands(b)
            )
        },
    );
    let sysctls = if recv {
        &ev.sysctl_receiver
    } else {
        &ev.sysctl_sender
    };
    let (mut commands, already) = raise_only(sysctls, core, tcp_key, recv, b);
    let floor = if sysctls.contains_key(&format!("net.ipv4.{tcp_key}")) {
        String::new()
    } else {
        format!(
            " (at least: its settings are not known here, so keep any larger value it has; a stock kernel's net.ipv4.{tcp_key} maximum is {} B)",
            thousands(stock_max(recv))
        )
    };
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
        format!("on the {side}: let autotuning reach {need}{floor}")
    };
    fix("linux", &note, expect, &commands)
}

/// The `tcp_rmem` (`recv`) or `tcp_wmem` maximum a stock Linux kernel sets
/// on a host with memory to spare (`tcp_init` in `net/ipv4/tcp.c`: 6 MiB
/// to receive, 4 MiB to send): a command written without the side's own
/// value asks for no less.
fn stock_max(recv: bool) -> u64 {
    if recv {
        6 << 20
    } else {
        4 << 20
    }
}

/// Windows: receive-window autotuning (with the registry settings of a
/// release without it), or the application's own send buffer.
fn windows(recv: bool, window_needed: Option<u64>, b: u64, expect: Option<f64>) -> Vec<Fix> {
    let shift = window_needed
        .and_then(|x| tcp::window_shift(Bytes(x)))
        .unwrap_or(tcp::MAX_WINDOW_SHIFT);
    if recv {
        vec![fix(
            "windows",
            "turn receive-window autotuning (and with it RFC 7323 scaling) on",
            expect,
            &[
                "netsh int tcp set global autotuninglevel=normal".into(),
                "netsh int tcp show global   (check: Receive Window Auto-Tuning Level = normal)".into(),
            ],
        ),
        fix(
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
        )]
    } else {
        vec![fix(
            "windows",
            "the send buffer is the application's: have it set SO_SNDBUF, or use overlapped sends (Windows autotunes sends since Vista)",
            expect,
            &[format!("setsockopt(SO_SNDBUF, {b}) in the sending application")],
        )]
    }
}

/// macOS and FreeBSD: the socket-buffer ceiling and autotuning maximum.
fn bsd(recv: bool, b: u64, expect: Option<f64>) -> Vec<Fix> {
    let mac_key = if recv {
        "net.inet.tcp.autorcvbufmax"
    } else {
        "net.inet.tcp.autosndbufmax"
    };
    let macos = fix(
        "macos",
        "raise the socket-buffer ceiling and autotuning maximum",
        expect,
        &[
            format!("sysctl -w kern.ipc.maxsockbuf={}", 2 * b),
            format!("sysctl -w {mac_key}={b}"),
        ],
    );
    let bsd_key = if recv {
        "net.inet.tcp.recvbuf_max"
    } else {
        "net.inet.tcp.sendbuf_max"
    };
    let freebsd = fix(
        "freebsd",
        "raise the socket-buffer ceiling and autotuning maximum",
        expect,
        &[
            format!("sysctl kern.ipc.maxsockbuf={}", 2 * b),
            format!("sysctl {bsd_key}={b}"),
        ],
    );
    vec![macos, freebsd]
}

/// The Linux commands that let autotuning reach `b` bytes on one side,
/// raising only: where that side's sysctls are known (a plumb peer sends
/// its own), a setting already at or above `b` is left as it is, and the
/// `tcp_rmem`/`tcp_wmem` minimum and default are kept. The flag says that
/// nothing needed raising.
fn raise_only(
    sysctls: &BTreeMap<String, String>,
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
        // Unknown settings: no lower than the stock maximum, which the
        // host most likely has.
        let (min, def, max) = triple.as_ref().map_or(
            (
                4096,
                if recv { 131_072 } else { 16_384 },
                b.max(stock_max(recv)),
            ),
            |t| (t[0], t[1], b),
        );
        out.push(format!(
            "sysctl -w net.ipv4.{tcp_key}=\"{min} {def} {max}\""
        ));
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

    /// Without the receiver's settings, 4 MiB (twice the backup link's
    /// BDP, rounded up) is asked for as no less than a stock kernel's 6 MiB
    /// autotuning maximum, which it would otherwise lower.
    #[test]
    fn buffer_fix_never_lowers_a_stock_kernel() {
        let (c, _) = raise_only(&BTreeMap::new(), "rmem_max", "tcp_rmem", true, 4 << 20);
        assert_eq!(c[0], "sysctl -w net.core.rmem_max=4194304");
        assert_eq!(c[1], "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 6291456\"");
        // Known settings are raised only to what is needed.
        let s = sysctls(&[
            ("net.core.rmem_max", "212992"),
            ("net.ipv4.tcp_rmem", "4096 131072 2097152"),
        ]);
        let (c, _) = raise_only(&s, "rmem_max", "tcp_rmem", true, 4 << 20);
        assert_eq!(c[1], "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 4194304\"");
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
