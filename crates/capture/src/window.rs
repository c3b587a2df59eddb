//! The advertised receive window: the raw 16-bit field scaled by the shift
//! the handshake agreed on (RFC 7323: only when both SYNs carried the
//! option). Without the handshake the shift is unknown: the raw values are
//! kept and the window is only known to lie between raw and raw << 14.

use serde::Serialize;

use crate::options::MAX_SHIFT;

/// How a side's window field scales.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum WindowScale {
    /// Both SYNs seen: multiply by `1 << shift` (0 when not negotiated).
    Known {
        /// The shift this side announced (0 if either side did not).
        shift: u8,
    },
    /// The handshake was not captured.
    #[default]
    Unknown,
}

impl WindowScale {
    /// The window in bytes, when the scale is known.
    pub fn bytes(self, raw: u16) -> Option<u64> {
        match self {
            WindowScale::Known { shift } => Some(u64::from(raw) << shift),
            WindowScale::Unknown => None,
        }
    }
}

/// Advertised windows, one sample per ACK.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct WindowStats {
    /// The scale applied (that of the last sample).
    pub scale: WindowScale,
    /// ACKs sampled (SYNs excluded: their window is never scaled).
    pub samples: u64,
    /// Smallest raw field.
    pub raw_min: u16,
    /// Largest raw field.
    pub raw_max: u16,
    /// Smallest window in bytes, over the samples with a known scale.
    pub min_bytes: Option<u64>,
    /// Largest window in bytes, over the samples with a known scale.
    pub max_bytes: Option<u64>,
    /// The last window in bytes, if its scale was known.
    pub last_bytes: Option<u64>,
    /// With an unknown scale: the bytes the windows lie between, from
    /// `raw_min` (shift 0) to `raw_max << 14` (the largest shift).
    pub unknown_bounds: Option<(u64, u64)>,
}

impl WindowStats {
    /// Adds one ACK's window field.
    pub fn sample(&mut self, raw: u16, scale: WindowScale) {
        if self.samples == 0 {
            self.raw_min = raw;
            self.raw_max = raw;
        }
        self.samples += 1;
        self.raw_min = self.raw_min.min(raw);
        self.raw_max = self.raw_max.max(raw);
        self.scale = scale;
        self.last_bytes = scale.bytes(raw);
        if let Some(b) = self.last_bytes {
            self.min_bytes = Some(self.min_bytes.map_or(b, |m| m.min(b)));
            self.max_bytes = Some(self.max_bytes.map_or(b, |m| m.max(b)));
        } else {
            self.unknown_bounds = Some((
                u64::from(self.raw_min),
                u64::from(self.raw_max) << MAX_SHIFT,
            ));
        }
    }
}
