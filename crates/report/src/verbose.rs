//! The lines `-V` adds to iperf3's text layout: the version and system, the
//! start time, the cookie and MSS, the test's parameters ("Starting Test:
//! …") and "Test Complete. Summary Results:" above the summary.

use plumb_record::engine::{Protocol, StartRecord};

/// The line `-V` prints above the summary.
pub const SUMMARY: &str = "Test Complete. Summary Results:";

/// The lines before the streams' "connected" lines.
pub fn start_lines(s: &StartRecord) -> Vec<String> {
    let mut v = vec![s.version.clone(), s.system_info.clone()];
    v.push(format!("Time: {}", http_date(s.timesecs)));
    if !s.cookie.is_empty() {
        v.push(format!("      Cookie: {}", s.cookie));
    }
    match (s.tcp_mss, s.tcp_mss_default) {
        (Some(m), _) => v.push(format!("      TCP MSS: {m}")),
        (None, Some(m)) if s.test.protocol == Protocol::Tcp => {
            v.push(format!("      TCP MSS: {m} (default)"));
        }
        _ => {}
    }
    if s.test.protocol == Protocol::Udp && s.test.target_bitrate > 0 {
        v.push(format!("      Target Bitrate: {}", s.test.target_bitrate));
    }
    v
}

/// "Starting Test: …", after the "connected" lines.
pub fn starting_test(s: &StartRecord) -> String {
    let t = &s.test;
    let protocol = match t.protocol {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
    };
    let bound = if t.bytes > 0 {
        format!("{} bytes to send", t.bytes)
    } else if t.blocks > 0 {
        format!("{} blocks to send", t.blocks)
    } else {
        format!("{} second test", t.duration.round() as u64)
    };
    format!(
        "Starting Test: protocol: {protocol}, {} streams, {} byte blocks, omitting {} seconds, {bound}, tos {}",
        t.num_streams,
        t.blksize,
        t.omit.round() as u64,
        t.tos
    )
}

/// Seconds since the epoch as an RFC 1123 date in GMT, as iperf3's "Time:".
pub fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let (y, m, d) = civil(days);
    let t = secs % 86_400;
    format!(
        "{}, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// Year, month (1–12) and day of the `days`-th day after 1970-01-01, by
/// counting 400-year eras of 146,097 days from 0000-03-01.
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_iperf3_writes_them() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        // 2026-11-28 20:30:45 UTC, a Saturday.
        assert_eq!(http_date(1_795_897_845), "Sat, 28 Nov 2026 20:30:45 GMT");
        // A leap day.
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    }
}
