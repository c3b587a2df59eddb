//! iperf3's number formatting: adaptive units with three significant figures;
//! and the names of the systems a diagnosis writes fixes for, shared by the
//! text (`plumb why`) and the HTML report.

/// Bytes with binary prefixes as iperf3 prints them: `1.43 GBytes`, ` 895 KBytes`.
pub fn bytes(n: f64) -> String {
    let units = ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"];
    let mut v = n;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", three(v), units[i])
}

/// Bits per second with decimal prefixes: `12.3 Gbits/sec`, ` 100 Mbits/sec`.
pub fn bitrate(bps: f64) -> String {
    let units = [
        "bits/sec",
        "Kbits/sec",
        "Mbits/sec",
        "Gbits/sec",
        "Tbits/sec",
    ];
    let mut v = bps;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}", three(v), units[i])
}

/// Three significant figures in a four-character field, as iperf3 does.
fn three(v: f64) -> String {
    if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    }
}

/// The name a person reads for the `os` of a diagnosis's fix (`"linux"`,
/// `"windows-legacy"`, …; `plumb_diagnose`'s ids); an unknown id as it is.
pub fn os_name(os: &str) -> &str {
    match os {
        "linux" => "Linux",
        "windows" => "Windows (Vista and later)",
        "windows-legacy" => "Windows 2000/2003/XP",
        "macos" => "macOS",
        "freebsd" => "FreeBSD",
        "application" => "Application",
        "path" => "Path",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_iperf3() {
        assert_eq!(bytes(1.43 * 1024.0 * 1024.0 * 1024.0), "1.43 GBytes");
        assert_eq!(bytes(895.0 * 1024.0), " 895 KBytes");
        assert_eq!(bytes(0.0), "0.00 Bytes");
        assert_eq!(bitrate(12.3e9), "12.3 Gbits/sec");
        assert_eq!(bitrate(100e6), " 100 Mbits/sec");
        assert_eq!(bitrate(9.344e6), "9.34 Mbits/sec");
    }

    #[test]
    fn os_names() {
        assert_eq!(os_name("windows-legacy"), "Windows 2000/2003/XP");
        assert_eq!(os_name("macos"), "macOS");
        assert_eq!(os_name("plan9"), "plan9");
    }
}
