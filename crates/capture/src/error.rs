//! The errors that stop reading a capture: the file is not a capture at all,
//! or its container (pcap records, pcapng blocks) is broken so that nothing
//! after the break can be trusted. A capture that merely ends early is not
//! an error: it is read up to the cut. A bad *packet* inside a sound container is
//! not an error: the analysis skips it and counts it (see `DecodeStats`).

/// Why a capture could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Opening or reading the input failed.
    #[error("reading the capture: {0}")]
    Io(#[from] std::io::Error),
    /// The input (after gzip, if it was gzip) starts with neither a pcap
    /// nor a pcapng magic number.
    #[error("not a pcap or pcapng capture: it starts with {found:02x?}")]
    BadMagic {
        /// The first bytes found (up to four).
        found: Vec<u8>,
    },
    /// The input ends inside the file's own header (pcap's, or pcapng's
    /// first section header): nothing says it is a capture. A capture cut
    /// anywhere after it is read up to the cut, not an error
    /// (`ReadStats::truncated`).
    #[error("not a capture: it ends inside its file header")]
    CutHeader,
    /// A pcap record or pcapng block is malformed (e.g. a block length
    /// shorter than a block header, or two lengths that disagree).
    #[error("malformed {what} at byte {offset}")]
    Malformed {
        /// What was being parsed.
        what: &'static str,
        /// Bytes of the (decompressed) capture read before it.
        offset: u64,
    },
    /// A record or block claims more bytes than any real capture holds, which
    /// would make the reader buffer it whole.
    #[error("a record at byte {offset} is larger than {limit} bytes")]
    TooLarge {
        /// Bytes of the (decompressed) capture read before it.
        offset: u64,
        /// The largest record the reader buffers.
        limit: usize,
    },
}
