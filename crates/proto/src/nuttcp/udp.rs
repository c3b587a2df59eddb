//! nuttcp's UDP datagrams: four-byte markers around the data (`BOD0`,
//! `BOD1` before it, `EOD0` to `EOD4` after it) and data datagrams that
//! carry the sender's running byte count, little-endian, at offset 24 (a
//! receiver estimates an interval's loss from it). Nothing else in a data
//! datagram means anything.

/// Where a data datagram carries the sender's byte count.
pub const STAMP_AT: usize = 24;
/// The smallest datagram that is data, not a marker.
pub const MIN_DATA: usize = 5;
/// The smallest UDP buffer plumb sends or accepts (room for the stamp).
pub const MIN_BUFLEN: u32 = 32;
/// How many end markers a sender sends (`EOD0` to `EOD4`).
pub const END_MARKERS: u8 = 5;

/// A marker datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// `BODn`: the data begins (`BOD1` starts a receiver's clock).
    Begin(u8),
    /// `EODn`: the data has ended (`EOD0` right after the last datagram,
    /// the rest half a second apart for a receiver that lost it).
    End(u8),
}

impl Marker {
    /// The marker's four bytes.
    pub fn bytes(self) -> [u8; 4] {
        let (tag, n) = match self {
            Marker::Begin(n) => (b"BOD", n),
            Marker::End(n) => (b"EOD", n),
        };
        [tag[0], tag[1], tag[2], b'0' + n.min(9)]
    }

    /// Reads a datagram of at most four bytes as a marker; `None` for
    /// anything else (a receiver ignores it).
    pub fn parse(d: &[u8]) -> Option<Marker> {
        if d.len() != 4 || !d[3].is_ascii_digit() {
            return None;
        }
        let n = d[3] - b'0';
        match &d[..3] {
            b"BOD" => Some(Marker::Begin(n)),
            b"EOD" => Some(Marker::End(n)),
            _ => None,
        }
    }
}

/// Writes the running byte count into a data datagram.
pub fn stamp(datagram: &mut [u8], total_bytes: u64) {
    if let Some(s) = datagram.get_mut(STAMP_AT..STAMP_AT + 8) {
        s.copy_from_slice(&total_bytes.to_le_bytes());
    }
}

/// The running byte count a data datagram carries, if it is long enough.
pub fn read_stamp(datagram: &[u8]) -> Option<u64> {
    let s = datagram.get(STAMP_AT..STAMP_AT + 8)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_stamps() {
        // Captured from nuttcp 6.1.2 (`nuttcp -u -R 50m`): the markers as
        // sent, and the first data datagram's bytes 24..32 (8192, its own size).
        assert_eq!(Marker::parse(b"BOD0"), Some(Marker::Begin(0)));
        assert_eq!(Marker::parse(b"EOD3"), Some(Marker::End(3)));
        assert_eq!(Marker::End(4).bytes(), *b"EOD4");
        assert_eq!(Marker::parse(b"XOD1"), None);
        assert_eq!(Marker::parse(b"BODx"), None);
        let mut d = [0u8; 8192];
        d[..24].copy_from_slice(b"BOD1\x00.1.2\n\x00 v6.1.2\n\x004567");
        d[24..32].copy_from_slice(&[0x00, 0x20, 0, 0, 0, 0, 0, 0]);
        assert_eq!(read_stamp(&d), Some(8192));
        stamp(&mut d, 12_500_992);
        assert_eq!(read_stamp(&d), Some(12_500_992));
        assert_eq!(read_stamp(&d[..20]), None);
        stamp(&mut d[..10], 1);
    }
}
