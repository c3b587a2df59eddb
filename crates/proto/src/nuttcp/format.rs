//! The output format a nuttcp client asks for: its `-f` options travel in
//! the request as one number (`format = N`), one bit per option, and a
//! server writes its report lines the way they say. Most of the options
//! shape only what the client prints itself; the ones that change what a
//! server sends are `-fparse` (every line as `key=value` pairs),
//! `-frunningtotal`, `-f-drops`, `-f-percentloss`, `-fxmitstats` and
//! `-fdebuginterval` (a receiving server's interval lines) and
//! `-fdebugretrans` (a transmitting TCP server's debug lines).

/// Every bit a 6.1.2 client can set, with the option that sets it.
const OPTIONS: [(u32, &str); 12] = [
    (Format::XMIT_STATS, "-fxmitstats"),
    (Format::DEBUG_INTERVAL, "-fdebuginterval"),
    (Format::RUNNING_TOTAL, "-frunningtotal"),
    (Format::NO_DROPS, "-f-drops"),
    (Format::NO_PERCENT_LOSS, "-f-percentloss"),
    (Format::DEBUG_POLL, "-fdebugpoll"),
    (Format::PARSE, "-fparse"),
    (Format::DEBUG_MTU, "-fdebugmtu"),
    (Format::NO_RETRANS, "-f-retrans"),
    (Format::DEBUG_RETRANS, "-fdebugretrans"),
    (Format::NO_BETA_MSG, "-f-beta"),
    (Format::WANT_RTT, "-frtt"),
];

/// A request's `format`: the client's `-f` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format(u32);

impl Format {
    /// `-fxmitstats`: a UDP receiver's interval lines add what the sender sent.
    pub const XMIT_STATS: u32 = 0x1;
    /// `-fdebuginterval`: with `-fxmitstats -frunningtotal`, the sender's
    /// latest count too.
    pub const DEBUG_INTERVAL: u32 = 0x2;
    /// `-frunningtotal`: interval lines add the figures since the start.
    pub const RUNNING_TOTAL: u32 = 0x4;
    /// `-f-drops`: UDP interval lines leave out the drop count.
    pub const NO_DROPS: u32 = 0x8;
    /// `-f-percentloss`: UDP interval lines leave out the loss percentage.
    pub const NO_PERCENT_LOSS: u32 = 0x10;
    /// `-fdebugpoll`: the client's own debugging of its poll loop.
    pub const DEBUG_POLL: u32 = 0x20;
    /// `-fparse`: every line as `key=value` pairs.
    pub const PARSE: u32 = 0x40;
    /// `-fdebugmtu`: the client's own note of the data connection's MSS.
    pub const DEBUG_MTU: u32 = 0x80;
    /// `-f-retrans`: no retransmissions in intervals or the summary.
    pub const NO_RETRANS: u32 = 0x100;
    /// `-fdebugretrans`: a TCP transmitter's dump of its TCP_INFO.
    pub const DEBUG_RETRANS: u32 = 0x200;
    /// `-f-beta`: no note about a beta version.
    pub const NO_BETA_MSG: u32 = 0x400;
    /// Set unless `-f-rtt`: the summary shows the RTT.
    pub const WANT_RTT: u32 = 0x800;

    /// What a stock client sends without `-f`: nuttcp's text, RTT shown.
    pub const DEFAULT: Format = Format(Format::WANT_RTT);

    /// The format a request's number stands for.
    ///
    /// # Errors
    /// A bit no 6.1.2 option sets, as one sentence (a later client's option
    /// plumb cannot know how to answer).
    pub fn from_bits(bits: u32) -> Result<Format, String> {
        let known = OPTIONS.iter().fold(0, |m, (bit, _)| m | bit);
        if bits & !known != 0 {
            return Err(format!(
                "nuttcp request's format {bits} has options nuttcp 6.1.2 does not define \
                 (bits {:#x}), which plumb does not answer",
                bits & !known
            ));
        }
        Ok(Format(bits))
    }

    /// The number the request carries.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether the option for `bit` is set.
    pub fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }

    /// `-fparse`: lines of `key=value` pairs.
    pub fn parse(self) -> bool {
        self.has(Format::PARSE)
    }

    /// The options set, as the client's flags (`-fparse -frunningtotal`),
    /// for a log line; empty for the default.
    pub fn names(self) -> String {
        OPTIONS
            .iter()
            .filter(|(bit, _)| *bit != Format::WANT_RTT && self.has(*bit))
            .map(|(_, name)| *name)
            .chain((!self.has(Format::WANT_RTT)).then_some("-f-rtt"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The client's flag for `bit`.
    pub fn name_of(bit: u32) -> &'static str {
        OPTIONS
            .iter()
            .find(|(b, _)| *b == bit)
            .map_or("-f", |(_, name)| *name)
    }
}

impl Default for Format {
    fn default() -> Format {
        Format::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_numbers_read() {
        // The `format` a stock 6.1.2 client sent for each option on its own
        // (captured on loopback): 2048 without -f, and -f-rtt clears 2048.
        for (bits, names) in [
            (2048, ""),
            (2049, "-fxmitstats"),
            (2052, "-frunningtotal"),
            (2056, "-f-drops"),
            (2064, "-f-percentloss"),
            (2112, "-fparse"),
            (2304, "-f-retrans"),
            (3072, "-f-beta"),
            (0, "-f-rtt"),
        ] {
            let f = Format::from_bits(bits).unwrap_or_default();
            assert_eq!((f.bits(), f.names()), (bits, names.to_string()));
        }
        assert!(Format::from_bits(2112).is_ok_and(Format::parse));
        assert!(!Format::DEFAULT.parse());
        assert_eq!(Format::name_of(Format::DEBUG_RETRANS), "-fdebugretrans");
    }

    #[test]
    fn unknown_bits_refused() {
        // 0x1000 is a later client's -fdebugjitter.
        let e = Format::from_bits(0x1000 | 2048);
        assert!(e.is_err_and(|e| e.contains("0x1000") && e.contains("6.1.2")));
    }
}
