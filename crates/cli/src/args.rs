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

/// A share of packets (`--reorder`, `--duplicate`): `0.1%`, `1e-3`.
pub fn packet_share(s: &str) -> Result<LossRate, String> {
    LossRate::parse(s).map_err(|mut e| {
        e.what = "share of packets";
        e.accepted = "0.1%, 1e-3, 0.001";
        e.to_string()
    })
}

/// A share of one CPU (`--far-cpu`): `5%`, `0.5`.
pub fn cpu_share(s: &str) -> Result<LossRate, String> {
    LossRate::parse(s).map_err(|mut e| {
        e.what = "CPU share";
        e.accepted = "5%, 50%, 0.5 of one CPU";
        e.to_string()
    })
}

/// A time where a bare number is seconds (`-t`, `-i`, `-O`): `10`, `500ms`.
pub fn seconds(s: &str) -> Result<f64, String> {
    plumb_model::units::parse_seconds(s).map_err(|e| e.to_string())
}

/// A whole number of seconds (`--max-duration`): `60`, `1min`.
pub fn whole_seconds(s: &str) -> Result<u64, String> {
    plumb_model::units::parse_whole_seconds(s).map_err(|e| e.to_string())
}

/// A timeout where a bare number is milliseconds (`--rcv-timeout`): `5000`, `5s`.
pub fn millis(s: &str) -> Result<u64, String> {
    plumb_model::units::parse_millis(s).map_err(|e| e.to_string())
}

/// A whole number without a unit (`-P 4`, `--seed 7`, `-p 5201`), with one
/// message that says what is wrong and what is accepted.
pub fn whole<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr<Err = std::num::ParseIntError>,
{
    use std::num::IntErrorKind;
    s.trim().parse::<T>().map_err(|e| {
        let why = match e.kind() {
            IntErrorKind::Empty => "no number",
            IntErrorKind::PosOverflow => "too large",
            IntErrorKind::NegOverflow => "too small",
            _ => "not a whole number",
        };
        format!("invalid number '{s}': {why} (accepted: a whole number such as 4)")
    })
}

/// Checks a value with `parse` while clap reads the command line, so a bad
/// one is refused in the same one-line message as every other flag's (which
/// names the flag), and keeps its text for flags whose value is used as
/// written (`-b 10M/32`, `--queue 1.5BDP`).
pub fn valid<T: 'static>(
    parse: fn(&str) -> Result<T, String>,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s: &str| parse(s).map(|_| s.to_string())
}

/// A number without a unit that may have a fraction (`--loss-burst 2.5`).
pub fn number(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!(
            "invalid number '{s}': not a number (accepted: a number such as 3 or 2.5)"
        )),
    }
}

/// `on` or `off` (`--tcp-timestamps`).
pub fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{s}' is neither on nor off; accepted: on, off")),
    }
}
