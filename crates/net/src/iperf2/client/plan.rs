//! What plumb's iperf 2 client asks of each stream ([`Plan`]), the test
//! header that says so to the server, and what each stream ends with
//! ([`Outcome`]): shared by the client and its TCP and UDP streams.

use std::time::Duration;

use plumb_proto::iperf2::{Amount, TestHeader};
use plumb_record::engine::{Totals, UdpEnd};

/// How long past the test's end a receiver waits for the sender to stop.
pub(super) const GRACE: Duration = Duration::from_secs(5);

/// What the test asks of each stream.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    pub(super) udp: bool,
    pub(super) reverse: bool,
    pub(super) streams: u32,
    pub(super) len: usize,
    pub(super) time: Duration,
    pub(super) rate: u64,
    pub(super) port: u16,
    pub(super) len_given: bool,
}

/// One stream's results.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub(super) sent: Totals,
    pub(super) received: Totals,
    pub(super) udp: Option<UdpEnd>,
    pub(super) peer_version: Option<String>,
}

/// The header every stream of this test sends.
pub(super) fn header(p: &Plan) -> TestHeader {
    let mut h = TestHeader::client(p.udp, p.reverse, p.streams, p.port, Amount::Time(p.time));
    if p.len_given {
        h.buf_len = p.len as u32;
    }
    h.rate = p.rate;
    h
}
