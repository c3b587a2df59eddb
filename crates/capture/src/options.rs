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
    /// The options in order, comma-separated, by tcpdump's names (`mss`,
    /// `nop`, `wscale`, `sackOK`, `TS`, `eol`, `sack`, or the kind number):
    /// one string, so a table of connections holds one allocation per SYN.
    pub order: String,
}

/// A list of options that overruns its header or has a wrong length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Parses the option bytes of a TCP header.
pub fn parse(mut bytes: &[u8]) -> Result<SynOptions, Malformed> {
    let mut o = SynOptions::default();
    while let Some(&kind) = bytes.first() {
        match kind {
            0 => {
                push(&mut o.order, "eol");
                break;
            }
            1 => {
                push(&mut o.order, "nop");
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
        let name = match (kind, len) {
            (2, 4) => {
                o.mss = Some(u16::from_be_bytes([body[0], body[1]]));
                "mss"
            }
            (3, 3) => {
                o.window_scale = Some(body[0].min(MAX_SHIFT));
                "wscale"
            }
            (4, 2) => {
                o.sack_permitted = true;
                "sackOK"
            }
            (8, 10) => {
                o.timestamps = true;
                "TS"
            }
            (5, _) => "sack",
            (2 | 3 | 4 | 8, _) => return Err(Malformed),
            _ => "",
        };
        if name.is_empty() {
            push(&mut o.order, &kind.to_string());
        } else {
            push(&mut o.order, name);
        }
        bytes = &bytes[len..];
    }
    Ok(o)
}

fn push(order: &mut String, name: &str) {
    if !order.is_empty() {
        order.push(',');
    }
    order.push_str(name);
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
        assert_eq!(o.order, "mss,sackOK,TS,nop,wscale");
    }

    #[test]
    fn malformed_lists_are_errors() {
        assert_eq!(parse(&[2, 4, 5]), Err(Malformed)); // overruns
        assert_eq!(parse(&[2, 3, 5]), Err(Malformed)); // MSS of length 3
        assert_eq!(parse(&[30, 0]), Err(Malformed)); // length 0 would loop
        assert_eq!(parse(&[3]), Err(Malformed)); // no length byte
        assert_eq!(parse(&[3, 3, 200]).map(|o| o.window_scale), Ok(Some(14)));
        assert_eq!(parse(&[1, 0, 2]).map(|o| o.order), Ok("nop,eol".into())); // eol ends
    }
}
