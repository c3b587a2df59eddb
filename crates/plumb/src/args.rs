//! Value parsers shared by every command's flags: the model's unit types,
//! with their errors (which quote the input and say what is accepted) as
//! clap's one-line messages.

use plumb_model::{Bytes, Distance, LossRate, Rate, Rtt};

/// A rate: `1G`, `100Mbps`.
pub fn rate(s: &str) -> Result<Rate, String> {
    Rate::parse(s).map_err(|e| e.to_string())
}

/// A duration: `15ms`, `0.1s`.
pub fn rtt(s: &str) -> Result<Rtt, String> {
    Rtt::parse(s).map_err(|e| e.to_string())
}

/// A distance: `1000km`.
pub fn distance(s: &str) -> Result<Distance, String> {
    Distance::parse(s).map_err(|e| e.to_string())
}

/// A size: `17520`, `64K`, `1.25MB`.
pub fn bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse(s).map_err(|e| e.to_string())
}

/// A probability or share: `0.01%`, `1e-4`.
pub fn loss(s: &str) -> Result<LossRate, String> {
    LossRate::parse(s).map_err(|e| e.to_string())
}
