//! The lines `-V` adds to iperf3's text layout: the version and system, the
//! start time, the cookie and MSS, the test's parameters ("Starting Test:
//! …") and "Test Complete. Summary Results:" above the summary.

use plumb_record::engine::{Protocol, StartRecord};

/// The line `-V` prints above the summary.
pub const SUMMARY: &str = "Test Complete. Summary Results:";

/// The lines before the streams' "connected" lines.
pub fn start_lines(s: &StartRecord) -> Vec<String> {
    let mut v = vec![s.version.clone(), s.system_info.clone()];
    v.push(format!("Time: {}", crate::json::http_date(s.timesecs)));
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
