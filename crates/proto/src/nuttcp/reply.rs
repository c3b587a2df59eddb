//! The server's side of the control text: the greeting both ends send, the
//! `OK`/`KO` answer to a request, and the closing figures a nuttcp server
//! writes back after the data, written by plumb's server in the format its
//! client asked for and read (in nuttcp's default format) by plumb's client,
//! which also reads the interval lines ([`super::interval`] writes them).

use super::format::Format;
use super::{MB, VERSION};

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
    /// The lines a server writes for these figures, in the client's
    /// format; `sent` picks nuttcp's `-t` (transmitter) prefix over `-r`.
    /// A stock client reads the bytes and seconds, the CPU percentage and
    /// the retransmissions from them; the RTT only in its default format.
    pub fn to_lines(&self, sent: bool, format: Format) -> String {
        let parse = format.parse();
        let mb = self.bytes as f64 / MB;
        let secs = self.seconds.max(0.000_001);
        let kbps = self.bytes as f64 / 1024.0 / secs;
        let mbps = rate_mbps(self.bytes, secs);
        let whole = secs.round() as u64;
        let (min, sec) = (whole / 60, whole % 60);
        let cpu = self.cpu_percent.unwrap_or(0);
        let mut lines = Vec::new();
        if let Some(rtt) = self.rtt_ms {
            lines.push(if parse {
                format!("rtt_ms={rtt:.3}")
            } else {
                format!("connected with RTT={rtt:.3} ms")
            });
        }
        lines.push(if parse {
            format!(
                "megabytes={mb:.4} real_seconds={secs:.2} rate_KBps={kbps:.2} rate_Mbps={mbps:.4}"
            )
        } else {
            format!("{mb:.4} MB in {secs:.2} real seconds = {kbps:.2} KB/sec = {mbps:.4} Mbps")
        });
        if let Some(r) = self.retrans {
            lines.push(if parse {
                format!("retrans={r}")
            } else {
                format!("retrans = {r}")
            });
        }
        lines.push(if parse {
            format!(
                "stats=cpu user=0.0 system=0.0 elapsed={min}:{sec:02} cpu={cpu}% \
                 memory=0i+0d-0maxrss io=0+0pf swaps=0+0csw"
            )
        } else {
            format!("0.0user 0.0sys {min}:{sec:02}real {cpu}% 0i+0d 0maxrss 0+0pf 0+0csw")
        });
        let who = if sent { 't' } else { 'r' };
        lines
            .iter()
            .map(|l| format!("nuttcp-{who}: {l}\n"))
            .collect()
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
        let back = read(&c.to_lines(true, Format::DEFAULT));
        assert!((back.bytes as f64 - 123_456_789.0).abs() < 60.0);
        assert_eq!(
            (back.cpu_percent, back.retrans, back.rtt_ms),
            (Some(12), Some(7), Some(0.25))
        );
        assert_eq!(parse_interval("garbage MB / x sec = "), None);
        // What plumb's server writes in nuttcp's default format, its own
        // client reads.
        let iv = super::super::interval::Stretch {
            bytes: 2_428_174_336,
            seconds: 1.0,
            udp: None,
        };
        let line = super::super::interval::line(Format::DEFAULT, &iv, &iv);
        assert_eq!(parse_interval(&line), Some((2_428_174_336, 1.0)));
    }

    #[test]
    fn parse_format_closing_as_nuttcp_writes_it() {
        let parse = Format::from_bits(Format::WANT_RTT | Format::PARSE).unwrap_or_default();
        // `nuttcp -fparse -T2 -r` against `nuttcp -S` (6.1.2, loopback):
        // the server's figures after its setup notes ("stats=cpu" then its
        // own rusage figures, which plumb leaves at 0).
        let sent = Closing {
            bytes: 3_525_640_192,
            seconds: 2.000_045,
            cpu_percent: Some(91),
            retrans: Some(0),
            rtt_ms: None,
        };
        assert_eq!(
            sent.to_lines(true, parse),
            "nuttcp-t: megabytes=3362.3125 real_seconds=2.00 rate_KBps=1721465.27 rate_Mbps=14102.2435\n\
             nuttcp-t: retrans=0\n\
             nuttcp-t: stats=cpu user=0.0 system=0.0 elapsed=0:02 cpu=91% memory=0i+0d-0maxrss io=0+0pf swaps=0+0csw\n"
        );
        // `nuttcp -fparse -T2 -u -R 10m`: the receiver's.
        let got = Closing {
            bytes: 305 * 8192,
            seconds: 2.002_051,
            cpu_percent: Some(0),
            ..Closing::default()
        };
        assert!(got.to_lines(false, parse).starts_with(
            "nuttcp-r: megabytes=2.3828 real_seconds=2.00 rate_KBps=1218.75 rate_Mbps=9.9840\n"
        ));
        // The RTT, which a stock client reads only in its default format.
        let rtt = Closing {
            rtt_ms: Some(0.108),
            ..sent
        };
        assert!(rtt
            .to_lines(true, parse)
            .starts_with("nuttcp-t: rtt_ms=0.108\n"));
        // A test over an hour keeps minutes:seconds, which the client reads.
        let long = Closing {
            seconds: 3_725.0,
            ..got
        };
        assert!(long
            .to_lines(false, parse)
            .contains(" elapsed=62:05 cpu=0% "));
    }
}
