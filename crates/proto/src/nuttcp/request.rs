//! The nuttcp client's request: one line of `key = value` pairs separated
//! by commas, sent after the greeting. plumb writes the keys a stock 6.1.2
//! client writes, in its order, and reads back the ones that shape a test;
//! a request for a feature plumb does not answer (third-party tests,
//! multicast, traceroute, block counts, an output option it cannot honour)
//! is refused by name.

use super::format::Format;

/// `nbuf` of a test limited by time, not by a block count.
const NBUF_TIMED: u64 = 2_147_483_647;
/// `rate` of a test with no rate limit.
pub const RATE_UNLIMITED: u64 = 4_294_967_295;
/// The most streams a request may ask for.
pub const MAX_STREAMS: u32 = 128;
/// The largest buffer (TCP write, UDP datagram) a request may ask for.
pub const MAX_BUFLEN: u32 = 1 << 20;
/// The longest test a request may ask for, seconds (a server's own
/// `--server-max-duration` may lower it).
pub const MAX_SECONDS: f64 = 86_400.0;

/// What a nuttcp client asks of the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Bytes per write (TCP) or per datagram (UDP).
    pub buflen: u32,
    /// Socket buffer size in bytes, 0 for the system's.
    pub window: u32,
    /// Parallel data connections, each on the next port up.
    pub streams: u32,
    /// Rate limit in kbit/s, [`RATE_UNLIMITED`] for none.
    pub rate_kbps: u64,
    /// The first data port.
    pub port: u16,
    /// The client transmits (nuttcp's `-t`, the default); else it receives (`-r`).
    pub client_sends: bool,
    /// Test length in seconds.
    pub seconds: f64,
    /// UDP instead of TCP.
    pub udp: bool,
    /// Seconds between interval reports, 0 for none.
    pub interval: f64,
    /// The server opens the data connections (nuttcp's `-F`).
    pub flip: bool,
    /// The client's `-f` options: the form of the server's report lines.
    pub format: Format,
}

impl Request {
    /// The line a stock client sends for this request, `\n` included.
    pub fn to_line(&self) -> String {
        format!(
            "buflen = {}, nbuf = {NBUF_TIMED}, win = {}, nstream = {}, rate = {}, port = {}, \
             trans = {}, braindead = 0, timeout = {:.6}, udp = {}, vers = {}, interval = {:.6}, \
             reverse = {}, format = {}, traceroute = 0, irate = 0, thirdparty = _NULL_ , \
             multicast = 0 , datamss = 0 , tos = 0 , nbuf_bytes = 0 , rate_pps = 0 , nodelay = 0\n",
            self.buflen,
            self.window,
            self.streams,
            self.rate_kbps,
            self.port,
            u8::from(self.client_sends),
            self.seconds,
            u8::from(self.udp),
            super::VERSION,
            self.interval,
            u8::from(self.flip),
            self.format.bits(),
        )
    }

    /// Reads a client's request line (without its `\n`).
    ///
    /// # Errors
    /// One sentence naming the first key that is missing, not a number, out
    /// of range, or asks for what plumb does not answer.
    pub fn parse(line: &str) -> Result<Request, String> {
        let pairs = Pairs::of(line)?;
        for (key, off) in [
            ("traceroute", "traceroute"),
            ("multicast", "multicast"),
            ("irate", "instantaneous rate limits"),
            ("rate_pps", "packet-rate limits"),
            ("nbuf_bytes", "byte counts"),
        ] {
            if pairs.get(key).is_some_and(|v| v != "0") {
                return Err(format!(
                    "nuttcp request asks for {off}, which plumb does not answer"
                ));
            }
        }
        if pairs.get("thirdparty").is_some_and(|v| v != "_NULL_") {
            return Err("nuttcp request asks for a third-party test, which plumb refuses".into());
        }
        if pairs.number::<u64>("nbuf")? != NBUF_TIMED {
            return Err("nuttcp request limits the test by a block count (-n), which plumb does not answer; use -T".into());
        }
        let req = Request {
            buflen: pairs.ranged("buflen", 1, MAX_BUFLEN)?,
            window: pairs.ranged("win", 0, 1 << 30)?,
            streams: pairs.ranged("nstream", 1, MAX_STREAMS)?,
            rate_kbps: pairs.number("rate")?,
            port: pairs.ranged("port", 1, u16::MAX)?,
            client_sends: pairs.flag("trans")?,
            seconds: pairs.seconds("timeout", MAX_SECONDS)?,
            udp: pairs.flag("udp")?,
            interval: pairs.optional_seconds("interval")?,
            flip: pairs.optional_flag("reverse")?,
            format: match pairs.get("format") {
                // A client older than the option sends none: nuttcp's text.
                None => Format::default(),
                Some(_) => Format::from_bits(pairs.number("format")?)?,
            },
        };
        if req.format.has(Format::DEBUG_RETRANS) && !req.udp && !req.client_sends {
            return Err(format!(
                "nuttcp request asks for {} (a TCP transmitter's kernel dump), \
                 which plumb does not answer",
                Format::name_of(Format::DEBUG_RETRANS)
            ));
        }
        if req.seconds <= 0.0 {
            return Err("nuttcp request has no time limit (timeout = 0)".into());
        }
        if req.udp && req.flip {
            // nuttcp's own client says "flip option not supported for UDP".
            return Err(
                "nuttcp request flips a UDP test (-F -u), which nuttcp has no form of".into(),
            );
        }
        if req.udp && req.buflen > 65_507 {
            return Err(format!(
                "nuttcp request's UDP buflen {} is over 65507",
                req.buflen
            ));
        }
        Ok(req)
    }

    /// The data ports: the first, and one up for each further stream (a
    /// port past 65535 is left out; a server refuses such a request).
    pub fn data_ports(&self) -> impl Iterator<Item = u16> + '_ {
        (0..self.streams).filter_map(move |i| u16::try_from(u32::from(self.port) + i).ok())
    }

    /// The rate limit in bit/s, if there is one.
    pub fn rate_bps(&self) -> Option<u64> {
        (self.rate_kbps != RATE_UNLIMITED && self.rate_kbps > 0)
            .then(|| self.rate_kbps.saturating_mul(1000))
    }
}

/// A request line's pairs, in order.
struct Pairs<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Pairs<'a> {
    fn of(line: &'a str) -> Result<Pairs<'a>, String> {
        let mut out = Vec::new();
        for part in line.split(',') {
            let Some((k, v)) = part.split_once('=') else {
                return Err(format!(
                    "nuttcp request is not 'key = value, …' (at '{}')",
                    clip(part)
                ));
            };
            out.push((k.trim(), v.trim()));
        }
        Ok(Pairs(out))
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn number<T: std::str::FromStr>(&self, key: &str) -> Result<T, String> {
        let v = self
            .get(key)
            .ok_or_else(|| format!("nuttcp request lacks '{key}'"))?;
        v.parse()
            .map_err(|_| format!("nuttcp request's {key} '{}' is not a number", clip(v)))
    }

    fn ranged<T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy>(
        &self,
        key: &str,
        lo: T,
        hi: T,
    ) -> Result<T, String> {
        let n: T = self.number(key)?;
        if n < lo || n > hi {
            return Err(format!(
                "nuttcp request's {key} {n} is out of range ({lo} to {hi})"
            ));
        }
        Ok(n)
    }

    fn flag(&self, key: &str) -> Result<bool, String> {
        Ok(self.ranged::<u8>(key, 0, 1)? == 1)
    }

    fn optional_flag(&self, key: &str) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(false),
            Some(_) => self.flag(key),
        }
    }

    fn seconds(&self, key: &str, max: f64) -> Result<f64, String> {
        let s: f64 = self.number(key)?;
        if !s.is_finite() || !(0.0..=max).contains(&s) {
            return Err(format!(
                "nuttcp request's {key} {s} is out of range (0 to {max})"
            ));
        }
        Ok(s)
    }

    fn optional_seconds(&self, key: &str) -> Result<f64, String> {
        match self.get(key) {
            None => Ok(0.0),
            Some(_) => self.seconds(key, 3600.0),
        }
    }
}

/// At most 40 characters of a peer's text, for an error message.
fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured on loopback from Debian 12's nuttcp 6.1.2 client:
    /// `nuttcp -P 25000 -p 25001 -i1 -T3 127.0.0.1` (tcpdump -i lo).
    const STOCK_SEND: &str = "buflen = 65536, nbuf = 2147483647, win = 0, nstream = 1, rate = 4294967295, port = 25001, trans = 1, braindead = 0, timeout = 3.000000, udp = 0, vers = 6.1.2, interval = 1.000000, reverse = 0, format = 2048, traceroute = 0, irate = 0, thirdparty = _NULL_ , multicast = 0 , datamss = 0 , tos = 0 , nbuf_bytes = 0 , rate_pps = 0 , nodelay = 0";
    /// The same client with `-N 2 -T2 -i1 -w128 -l 8192`.
    const STOCK_N2: &str = "buflen = 8192, nbuf = 2147483647, win = 131072, nstream = 2, rate = 4294967295, port = 25041, trans = 1, braindead = 0, timeout = 2.000000, udp = 0, vers = 6.1.2, interval = 1.000000, reverse = 0, format = 2048, traceroute = 0, irate = 0, thirdparty = _NULL_ , multicast = 0 , datamss = 0 , tos = 0 , nbuf_bytes = 0 , rate_pps = 0 , nodelay = 0";
    /// The same client with `-u -r -R 50m -T2 -i1`.
    const STOCK_UDP_R: &str = "buflen = 8192, nbuf = 2147483647, win = 0, nstream = 1, rate = 50000, port = 25061, trans = 0, braindead = 0, timeout = 2.000000, udp = 1, vers = 6.1.2, interval = 1.000000, reverse = 0, format = 2048, traceroute = 0, irate = 0, thirdparty = _NULL_ , multicast = 0 , datamss = 0 , tos = 0 , nbuf_bytes = 0 , rate_pps = 0 , nodelay = 0";

    fn send() -> Request {
        Request {
            buflen: 65536,
            window: 0,
            streams: 1,
            rate_kbps: RATE_UNLIMITED,
            port: 25001,
            client_sends: true,
            seconds: 3.0,
            udp: false,
            interval: 1.0,
            flip: false,
            format: Format::DEFAULT,
        }
    }

    #[test]
    fn stock_lines_read() {
        assert_eq!(Request::parse(STOCK_SEND), Ok(send()));
        let n2 = Request::parse(STOCK_N2).unwrap_or_else(|_| send());
        assert_eq!((n2.streams, n2.window, n2.buflen), (2, 131_072, 8192));
        let u = Request::parse(STOCK_UDP_R).unwrap_or_else(|_| send());
        assert!(u.udp && !u.client_sends);
        assert_eq!(u.rate_bps(), Some(50_000_000));
        assert_eq!(send().rate_bps(), None);
    }

    #[test]
    fn the_clients_format_read() {
        // `nuttcp -fparse -T2` (captured on loopback): format = 2112.
        let p = Request::parse(&STOCK_SEND.replace("format = 2048", "format = 2112"));
        assert!(p.as_ref().is_ok_and(|r| r.format.parse()), "{p:?}");
        // 0x200 is -fdebugretrans: a TCP transmitter's extra lines, which
        // plumb's server cannot write when it sends; when it receives (and
        // over UDP) the option changes nothing the server sends.
        let dr = STOCK_SEND.replace("format = 2048", "format = 2560");
        assert!(Request::parse(&dr).is_ok());
        let e = Request::parse(&dr.replace("trans = 1", "trans = 0"));
        assert!(e.is_err_and(|e| e.contains("-fdebugretrans")));
        let u = STOCK_UDP_R.replace("format = 2048", "format = 2560");
        assert!(Request::parse(&u).is_ok());
        // A later client's option: refused by its bit.
        let later = Request::parse(&STOCK_SEND.replace("format = 2048", "format = 6144"));
        assert!(later.is_err_and(|e| e.contains("0x1000")));
        // No format at all (a client from before the option): the default.
        let none = Request::parse(&STOCK_SEND.replace("format = 2048, ", ""));
        assert!(none.is_ok_and(|r| r.format == Format::DEFAULT));
        let bad = Request::parse(&STOCK_SEND.replace("format = 2048", "format = -1"));
        assert!(bad.is_err_and(|e| e.contains("format '-1' is not a number")));
    }

    #[test]
    fn streams_take_the_ports_up_from_the_first_and_udp_is_never_flipped() {
        let n2 = Request::parse(STOCK_N2).unwrap_or_else(|_| send());
        assert_eq!(n2.data_ports().collect::<Vec<_>>(), [25041, 25042]);
        let top = Request {
            port: 65_535,
            streams: 2,
            ..send()
        };
        assert_eq!(top.data_ports().collect::<Vec<_>>(), [65_535]);
        // nuttcp's own client refuses -u -F; a request for it is refused.
        let flipped = STOCK_UDP_R.replace("reverse = 0", "reverse = 1");
        assert!(Request::parse(&flipped).is_err_and(|e| e.contains("-F -u")));
        assert!(Request::parse(&STOCK_N2.replace("reverse = 0", "reverse = 1")).is_ok());
    }

    #[test]
    fn written_as_the_stock_client_writes() {
        assert_eq!(send().to_line(), format!("{STOCK_SEND}\n"));
    }

    #[test]
    fn hostile_lines_refused() {
        let bad = [
            ("garbage", "not 'key = value"),
            (
                &STOCK_SEND.replace("nstream = 1", "nstream = 100000"),
                "nstream 100000 is out of range",
            ),
            (&STOCK_SEND.replace("port = 25001", "port = 0"), "port 0"),
            (
                &STOCK_SEND.replace("buflen = 65536", "buflen = x"),
                "buflen 'x' is not a number",
            ),
            (
                &STOCK_SEND.replace("thirdparty = _NULL_", "thirdparty = 10.0.0.1"),
                "third-party",
            ),
            (
                &STOCK_SEND.replace("multicast = 0", "multicast = 1"),
                "multicast",
            ),
            (
                &STOCK_SEND.replace("nbuf = 2147483647", "nbuf = 10"),
                "block count",
            ),
            (
                &STOCK_SEND.replace("timeout = 3.000000", "timeout = 0.000000"),
                "no time limit",
            ),
            (
                &STOCK_SEND.replace("timeout = 3.000000", "timeout = nan"),
                "timeout",
            ),
            (
                &STOCK_SEND.replace("buflen = 65536, ", ""),
                "lacks 'buflen'",
            ),
            (
                &STOCK_UDP_R.replace("buflen = 8192", "buflen = 65536"),
                "over 65507",
            ),
        ];
        for (line, want) in bad {
            let got = Request::parse(line);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(want)),
                "{line}: {got:?}"
            );
        }
    }
}
