//! TCP options of a SYN or SYN-ACK: what each side offered (MSS, window scale,
//! SACK permitted, timestamps) and in which order, which tells stacks apart.
//! Parsed by hand because the order and unknown kinds matter here, and a
//! malformed list must be told apart from one that simply ends.

use serde::Serialize;

/// The largest window scale shift RFC 7323 allows; larger ones count as 14.
pub const MAX_SHIFT: u8 = 14;

/// The options a SYN carried.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SynOptions {
    /// Maximum segment size offered.
    pub mss: Option<u16>,
    /// Window scale shift offered (clamped to 14).
    pub window_scale: Option<u8>,
    /// SACK permitted.
    pub sack_permitted: bool,
    /// Timestamps (TSopt) present.
    pub timestamps: bool,
    /// The options' kind numbers (RFC 793/7323/2018) in order, up to an
    /// end-of-list, for whoever compares layouts (an OS guesser); written
    /// as `order`, tcpdump's names comma-separated ([`SynOptions::order`]).
    #[serde(rename = "order", serialize_with = "as_names")]
    pub kinds: Vec<u8>,
}

impl SynOptions {
    /// The options in order by tcpdump's names (`mss`, `nop`, `wscale`,
    /// `sackOK`, `TS`, `eol`, `sack`, or the kind number), comma-separated.
    pub fn order(&self) -> String {
        let names: Vec<String> = self.kinds.iter().map(|&k| name(k)).collect();
        names.join(",")
    }
}

fn name(kind: u8) -> String {
    match kind {
        0 => "eol".into(),
        1 => "nop".into(),
        2 => "mss".into(),
        3 => "wscale".into(),
        4 => "sackOK".into(),
        5 => "sack".into(),
        8 => "TS".into(),
        k => k.to_string(),
    }
}

fn as_names<S: serde::Serializer>(kinds: &[u8], s: S) -> Result<S::Ok, S::Error> {
    let names: Vec<String> = kinds.iter().map(|&k| name(k)).collect();
    s.serialize_str(&names.join(","))
}

/// A list of options that overruns its header or has a wrong length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Parses the option bytes of a TCP header.
pub fn parse(mut bytes: &[u8]) -> Result<SynOptions, Malformed> {
    let mut o = SynOptions::default();
    while let Some(&kind) = bytes.first() {
        o.kinds.push(kind);
        match kind {
            0 => break,
            1 => {
                bytes = &bytes[1..];
                continue;
            }
            _ => {}
        }
        let len = usize::from(*bytes.get(1).ok_or(Malformed)?);
        if len < 2 || len > bytes.len() {
            return Err(Malformed);
        }
        let body = &bytes[2..len];
        match (kind, len) {
            (2, 4) => o.mss = Some(u16::from_be_bytes([body[0], body[1]])),
            (3, 3) => o.window_scale = Some(body[0].min(MAX_SHIFT)),
            (4, 2) => o.sack_permitted = true,
            (8, 10) => o.timestamps = true,
            (2 | 3 | 4 | 8, _) => return Err(Malformed),
            _ => {}
        }
        bytes = &bytes[len..];
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_syn_options_in_order() {
        let b = [
            2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
        ];
        let o = parse(&b).expect("valid");
        assert_eq!(o.mss, Some(1460));
        assert_eq!(o.window_scale, Some(7));
        assert!(o.sack_permitted && o.timestamps);
        assert_eq!(o.order(), "mss,sackOK,TS,nop,wscale");
        assert_eq!(o.kinds, [2, 4, 8, 1, 3]);
    }

    #[test]
    fn malformed_lists_are_errors() {
        assert_eq!(parse(&[2, 4, 5]), Err(Malformed)); // overruns
        assert_eq!(parse(&[2, 3, 5]), Err(Malformed)); // MSS of length 3
        assert_eq!(parse(&[30, 0]), Err(Malformed)); // length 0 would loop
        assert_eq!(parse(&[3]), Err(Malformed)); // no length byte
        assert_eq!(parse(&[3, 3, 200]).map(|o| o.window_scale), Ok(Some(14)));
        assert_eq!(parse(&[1, 0, 2]).map(|o| o.order()), Ok("nop,eol".into())); // eol ends
    }
}
