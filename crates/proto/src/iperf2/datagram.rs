//! The 16 bytes at the start of every iperf 2 UDP datagram: the sequence
//! number's lower word, the send time (seconds, microseconds) and the
//! sequence number's upper word. A negative sequence number ends the flow.

use std::time::Duration;

use super::{be32, Iperf2Error};

/// The datagram header's length.
pub const DATAGRAM_LEN: usize = 16;

/// One datagram's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    /// Sequence number from 1; negative in the sender's final datagrams.
    pub id: i64,
    /// Send time, seconds (wall clock, as iperf 2 stamps it).
    pub sec: u32,
    /// Microseconds part of the send time.
    pub usec: u32,
}

impl Datagram {
    /// A header with sequence number `id` stamped with `since_epoch`.
    pub fn stamped(id: i64, since_epoch: Duration) -> Datagram {
        Datagram {
            id,
            sec: since_epoch.as_secs() as u32,
            usec: since_epoch.subsec_micros(),
        }
    }

    /// Writes the header over the first 16 bytes of `datagram`; the upper
    /// word is always written (2.1.8 sets 64-bit sequence numbers).
    ///
    /// # Errors
    /// A datagram shorter than 16 bytes.
    pub fn encode(&self, datagram: &mut [u8]) -> Result<(), Iperf2Error> {
        let Some(b) = datagram.get_mut(..DATAGRAM_LEN) else {
            return Err(short(datagram.len()));
        };
        let id = self.id as u64;
        b[0..4].copy_from_slice(&(id as u32).to_be_bytes());
        b[4..8].copy_from_slice(&self.sec.to_be_bytes());
        b[8..12].copy_from_slice(&self.usec.to_be_bytes());
        b[12..16].copy_from_slice(&((id >> 32) as u32).to_be_bytes());
        Ok(())
    }

    /// Reads the header; with `wide` the upper word extends the sequence
    /// number to 64 bits, else the lower word is a signed 32-bit number.
    ///
    /// # Errors
    /// A datagram shorter than 16 bytes.
    pub fn decode(datagram: &[u8], wide: bool) -> Result<Datagram, Iperf2Error> {
        if datagram.len() < DATAGRAM_LEN {
            return Err(short(datagram.len()));
        }
        let lo = be32(datagram, 0);
        let id = if wide {
            ((u64::from(be32(datagram, 12)) << 32) | u64::from(lo)) as i64
        } else {
            i64::from(lo as i32)
        };
        Ok(Datagram {
            id,
            sec: be32(datagram, 4),
            usec: be32(datagram, 8),
        })
    }
}

fn short(have: usize) -> Iperf2Error {
    Iperf2Error::Short {
        what: "UDP datagram",
        have,
        need: DATAGRAM_LEN,
    }
}
