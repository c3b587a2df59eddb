//! The TCP server's answer to a client's header (iperf 2 calls it the
//! client header ack): message type 2, its length, zero flags and the
//! server's version, 28 bytes (52 with trip-time stamps, which plumb never
//! asks for).

use super::{be32, Iperf2Error};

/// The acknowledgement's length without trip-time stamps.
pub const ACK_LEN: usize = 28;
/// Its message type.
const TYPE_ACK: u32 = 2;

/// A header acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderAck {
    /// The sender's version words.
    pub version: (u32, u32),
}

impl HeaderAck {
    /// The 28 bytes on the wire.
    pub fn encode(&self) -> [u8; ACK_LEN] {
        let mut b = [0u8; ACK_LEN];
        b[0..4].copy_from_slice(&TYPE_ACK.to_be_bytes());
        b[4..8].copy_from_slice(&(ACK_LEN as u32).to_be_bytes());
        b[12..16].copy_from_slice(&self.version.0.to_be_bytes());
        b[16..20].copy_from_slice(&self.version.1.to_be_bytes());
        b
    }

    /// Reads the first 28 bytes of `b`.
    ///
    /// # Errors
    /// Fewer than 28 bytes or another message type.
    pub fn decode(b: &[u8]) -> Result<HeaderAck, Iperf2Error> {
        if b.len() < ACK_LEN {
            return Err(Iperf2Error::Short {
                what: "header acknowledgement",
                have: b.len(),
                need: ACK_LEN,
            });
        }
        let t = be32(b, 0);
        if t != TYPE_ACK {
            return Err(Iperf2Error::NotAck(t));
        }
        Ok(HeaderAck {
            version: (be32(b, 12), be32(b, 16)),
        })
    }

    /// `2.1.8` from the version words (major.minor in the first, patch in
    /// the second's upper half).
    pub fn version_text(&self) -> String {
        let (u, l) = self.version;
        format!("{}.{}.{}", u >> 16, u & 0xFFFF, l >> 16)
    }
}
