//! The server's side of the control text: the greeting both ends send, the
//! `OK`/`KO` answer to a request, and the report a nuttcp server writes
//! back (setup notes, interval lines, `DONE`, closing figures), written by
//! plumb's server and read by plumb's client.

use super::VERSION;

/// Bytes in a nuttcp "MB" (a mebibyte).
const MB: f64 = 1_048_576.0;

/// The greeting either end sends first.
pub fn hello() -> String {
    format!("HELO nuttcp v{VERSION}\n")
}

/// Reads a peer's greeting: the version it announces.
///
/// # Errors
/// A line that is not a nuttcp greeting.
pub fn parse_hello(line: &str) -> Result<(u32, u32, u32), String> {
    line.strip_prefix("HELO nuttcp v")
        .and_then(version)
        .ok_or_else(|| {
            format!(
                "peer is not a nuttcp server or client (it said '{}')",
                clip(line)
            )
        })
}

/// The server's acceptance of a request.
pub fn ok() -> String {
    format!("OK v{VERSION}\n")
}

/// The server's refusal, as a stock server frames one: `KO` in place of
/// the answer, the reason, and `KO` again (the client prints what lies
/// between).
pub fn refusal(reason: &str) -> String {
    format!("KO\nnuttcp-r: Error: {reason}\nKO\n")
}

/// The answer to a request, read by the client: `Ok(())` for `OK vX.Y.Z`.
///
/// # Errors
/// The server's refusal or anything else, as one sentence.
pub fn parse_answer(line: &str) -> Result<(), String> {
    if line.strip_prefix("OK v").and_then(version).is_some() {
        return Ok(());
    }
    Err(format!("nuttcp server refused the test: {}", clip(line)))
}

/// A version `X.Y.Z`.
fn version(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s.trim().split('.').map(|p| p.parse::<u32>().ok());
    let v = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(v)
}

/// At most 80 characters of a peer's text, for an error message.
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

/// One interval line as a nuttcp receiver writes it (no newline): bytes in
/// the interval, its length, and the sender's retransmits when known.
pub fn interval_line(bytes: u64, seconds: f64, retrans: Option<u64>) -> String {
    let mbps = rate_mbps(bytes, seconds);
    let mut s = format!(
        "{:10.4} MB / {:6.2} sec = {:9.4} Mbps",
        bytes as f64 / MB,
        seconds,
        mbps
    );
    if let Some(r) = retrans {
        s.push_str(&format!(" {r:5} retrans"));
    }
    s
}

/// A UDP receiver's interval line (no newline): the interval's bytes and
/// length, then datagrams dropped of those expected, estimated from the
/// sender's byte counts.
pub fn udp_interval_line(bytes: u64, seconds: f64, dropped: u64, expected: u64) -> String {
    let loss = if expected > 0 {
        dropped as f64 * 100.0 / expected as f64
    } else {
        0.0
    };
    format!(
        "{} {dropped:5} / {expected:5} ~drop/pkt {loss:5.2} ~%loss",
        interval_line(bytes, seconds, None)
    )
}

/// Megabits per second, 0 for an empty interval.
pub fn rate_mbps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds / 1e6
    } else {
        0.0
    }
}

/// A nuttcp server's closing figures for one test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Closing {
    /// Bytes moved.
    pub bytes: u64,
    /// Seconds the data moved for.
    pub seconds: f64,
    /// Process CPU use, percent of one CPU.
    pub cpu_percent: Option<u32>,
    /// TCP retransmits of the sending end.
    pub retrans: Option<u64>,
    /// The sending end's RTT at connect, milliseconds.
    pub rtt_ms: Option<f64>,
}

impl Closing {
    /// The lines a server writes for these figures; `sent` picks nuttcp's
    /// `-t` (transmitter) prefix over `-r`.
    pub fn to_lines(&self, sent: bool) -> String {
        let who = if sent { 't' } else { 'r' };
        let mb = self.bytes as f64 / MB;
        let secs = self.seconds.max(0.000_001);
        let mut s = String::new();
        if let Some(rtt) = self.rtt_ms {
            s.push_str(&format!("nuttcp-{who}: connected with RTT={rtt:.3} ms\n"));
        }
        s.push_str(&format!(
            "nuttcp-{who}: {mb:.4} MB in {secs:.2} real seconds = {:.2} KB/sec = {:.4} Mbps\n",
            self.bytes as f64 / 1024.0 / secs,
            rate_mbps(self.bytes, secs)
        ));
        if let Some(r) = self.retrans {
            s.push_str(&format!("nuttcp-{who}: retrans = {r}\n"));
        }
        let whole = secs.round() as u64;
        s.push_str(&format!(
            "nuttcp-{who}: 0.0user 0.0sys {}:{:02}real {}% 0i+0d 0maxrss 0+0pf 0+0csw\n",
            whole / 60,
            whole % 60,
            self.cpu_percent.unwrap_or(0)
        ));
        s
    }

    /// Reads one line of a server's closing report into the figures it
    /// carries; lines that carry none (setup notes) are skipped.
    pub fn read_line(&mut self, line: &str) {
        let body = line.split_once(": ").map_or(line, |(_, b)| b);
        if let Some((mb, rest)) = body.split_once(" MB in ") {
            if let (Ok(mb), Some((secs, _))) =
                (mb.trim().parse::<f64>(), rest.split_once(" real seconds"))
            {
                if mb.is_finite() && mb >= 0.0 {
                    self.bytes = (mb * MB).round() as u64;
                }
                let secs: f64 = secs.trim().parse().unwrap_or(0.0);
                self.seconds = finer_seconds(mb, secs, rest).unwrap_or(secs);
            }
        } else if body.contains("sys ") && body.contains("real ") {
            self.cpu_percent = body
                .split_once("real ")
                .and_then(|(_, r)| r.split('%').next())
                .and_then(|p| p.trim().parse().ok());
        } else if let Some(r) = body.strip_prefix("retrans = ") {
            self.retrans = r.trim().parse().ok();
        }
        if let Some((_, r)) = body.split_once("RTT=") {
            self.rtt_ms = r.split_whitespace().next().and_then(|v| v.parse().ok());
        }
    }
}

/// The seconds of a closing line to more digits than its two decimals:
/// its `KB/sec` figure (KB = 1024 bytes) divides into its kilobytes.
/// `None` when there is none, or when it disagrees with the printed
/// seconds beyond their rounding (then the line is not what it seems).
fn finer_seconds(mb: f64, secs: f64, rest: &str) -> Option<f64> {
    let kbps: f64 = rest
        .split_once(" real seconds = ")?
        .1
        .split_once(" KB/sec")?
        .0
        .trim()
        .parse()
        .ok()?;
    let kb = mb * 1024.0;
    let finer = kb / kbps;
    (finer.is_finite() && kb > 0.0 && (finer - secs).abs() <= 0.0051).then_some(finer)
}

/// Reads a receiver's interval line: (bytes, seconds), or `None` for any
/// other line.
pub fn parse_interval(line: &str) -> Option<(u64, f64)> {
    let (mb, rest) = line.split_once(" MB / ")?;
    let (secs, _) = rest.split_once(" sec = ")?;
    let mb: f64 = mb.trim().parse().ok()?;
    let secs: f64 = secs.trim().parse().ok()?;
    (mb.is_finite() && mb >= 0.0 && secs.is_finite()).then(|| ((mb * MB).round() as u64, secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stock `nuttcp -S` (Debian 12, 6.1.2) receiving, captured on
    /// loopback after `nuttcp -i1 -T3 127.0.0.1` had sent its request.
    const RECEIVER_LINES: &str = "nuttcp-r: v6.1.2: socket\nnuttcp-r: buflen=65536, nstream=1, port=25001 tcp\nnuttcp-r: interval reporting every 1.00 second\nnuttcp-r: accept from 127.0.0.1\nnuttcp-r: send window size = 4194304, receive window size = 131072\nnuttcp-r: available send window = 2097152, available receive window = 65536\n 2315.6875 MB /   1.00 sec = 19417.4724 Mbps     0 retrans\n";
    /// Its closing lines after `DONE`.
    const RECEIVER_CLOSING: &str = "nuttcp-r: 7278.6250 MB in 3.00 real seconds = 2480973.07 KB/sec = 20324.1314 Mbps\nnuttcp-r: 7278.6250 MB in 1.15 CPU seconds = 6492675.25 KB/cpu sec\nnuttcp-r: 117157 I/O calls, msec/call = 0.03, calls/sec = 38997.88\nnuttcp-r: 0.0user 1.1sys 0:03real 37% 0i+0d 888maxrss 0+0pf 16232+1598csw\n";
    /// The same server sending (the client's `-r`), all of it at the end.
    const SENDER_CLOSING: &str = "nuttcp-t: v6.1.2: socket\nnuttcp-t: buflen=65536, nstream=1, port=25011 tcp -> 127.0.0.1\nnuttcp-t: time limit = 3.00 seconds\nnuttcp-t: connect to 127.0.0.1 with mss=32741, RTT=0.203 ms\nnuttcp-t: send window size = 4194304, receive window size = 131072\nnuttcp-t: available send window = 2097152, available receive window = 65536\nnuttcp-t: 2594.5000 MB in 3.01 real seconds = 882946.09 KB/sec = 7233.0943 Mbps\nnuttcp-t: 2594.5000 MB in 0.85 CPU seconds = 3137461.63 KB/cpu sec\nnuttcp-t: retrans = 0\nnuttcp-t: 41512 I/O calls, msec/call = 0.07, calls/sec = 13796.03\nnuttcp-t: 0.0user 0.8sys 0:03real 28% 0i+0d 928maxrss 0+0pf 352+430csw\n";

    fn read(text: &str) -> Closing {
        let mut c = Closing::default();
        text.lines().for_each(|l| c.read_line(l));
        c
    }

    #[test]
    fn greetings() {
        assert_eq!(parse_hello("HELO nuttcp v6.1.2"), Ok((6, 1, 2)));
        assert!(parse_hello("SSH-2.0-OpenSSH").is_err_and(|e| e.contains("not a nuttcp")));
        assert_eq!(parse_answer(ok().trim_end()), Ok(()));
        assert!(parse_answer("nuttcp-r: Error: no").is_err_and(|e| e.contains("refused")));
        assert_eq!(refusal("why"), "KO\nnuttcp-r: Error: why\nKO\n");
        assert!(parse_answer("KO").is_err());
    }

    #[test]
    fn stock_receiver_read() {
        let iv: Vec<_> = RECEIVER_LINES.lines().filter_map(parse_interval).collect();
        assert_eq!(iv, [((2315.6875 * MB) as u64, 1.0)]);
        let c = read(RECEIVER_CLOSING);
        assert_eq!(c.bytes, (7278.625 * MB) as u64);
        assert_eq!((c.cpu_percent, c.retrans), (Some(37), None));
        // 7453312 KB at 2480973.07 KB/sec: 3.00419 s, printed as 3.00.
        assert!((c.seconds - 3.004_19).abs() < 1e-5, "{}", c.seconds);
        // Without a rate, or with one that contradicts the seconds, the
        // printed seconds stand.
        assert_eq!(
            read("nuttcp-r: 10.0000 MB in 2.50 real seconds").seconds,
            2.5
        );
        let odd = "nuttcp-r: 10.0000 MB in 2.50 real seconds = 1.00 KB/sec = 0.0080 Mbps";
        assert_eq!(read(odd).seconds, 2.5);
    }

    #[test]
    fn stock_sender_read() {
        let c = read(SENDER_CLOSING);
        assert_eq!(c.bytes, (2594.5 * MB) as u64);
        assert_eq!(
            (c.cpu_percent, c.retrans, c.rtt_ms),
            (Some(28), Some(0), Some(0.203))
        );
    }

    #[test]
    fn written_lines_read_back() {
        let c = Closing {
            bytes: 123_456_789,
            seconds: 2.5,
            cpu_percent: Some(12),
            retrans: Some(7),
            rtt_ms: Some(0.25),
        };
        let back = read(&c.to_lines(true));
        assert!((back.bytes as f64 - 123_456_789.0).abs() < 60.0);
        assert_eq!(
            (back.cpu_percent, back.retrans, back.rtt_ms),
            (Some(12), Some(7), Some(0.25))
        );
        assert_eq!(
            interval_line(2_428_174_336, 1.0, Some(0)),
            " 2315.6875 MB /   1.00 sec = 19425.3947 Mbps     0 retrans"
        );
        assert_eq!(parse_interval("garbage MB / x sec = "), None);
        // nuttcp 6.1.2's receiver wrote, for `-u -R 50m -i1`:
        // "    5.9609 MB /   1.00 sec =   50.0021 Mbps     0 /   763 ~drop/pkt  0.00 ~%loss"
        assert_eq!(
            udp_interval_line(763 * 8192, 1.000_037_4, 0, 763),
            "    5.9609 MB /   1.00 sec =   50.0021 Mbps     0 /   763 ~drop/pkt  0.00 ~%loss"
        );
    }
}
