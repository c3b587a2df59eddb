//! Where a capture was taken, from the handshake: SYN → SYN-ACK is the
//! round trip from the capture point to the server and back, SYN-ACK → ACK
//! the one to the client and back. The side whose half is a small share of
//! the whole is the side the capture point sits beside.
//!
//! It shapes every RTT figure: data→ACK at the capture point covers only
//! the receiver's side of the path, and the flight seen there is the
//! sender's only when the capture sits beside the sender.

use plumb_record::capture::Position;

use crate::connection::Handshake;

/// A half under this share of the handshake RTT puts the capture beside
/// that side: a host answers its own SYN or SYN-ACK in microseconds, the
/// path takes milliseconds; a fifth leaves room for a LAN hop.
const NEAR_SHARE: f64 = 0.2;

/// The position for a flow whose data the client sends (`client_sends`).
pub fn of(h: &Handshake, client_sends: bool) -> Position {
    let (Some(to_server), Some(to_client), Some(rtt)) =
        (h.syn_to_syn_ack_ns, h.syn_ack_to_ack_ns, h.rtt_ns)
    else {
        return Position::Unknown;
    };
    let rtt = rtt.max(1) as f64;
    let (sender, receiver) = if client_sends {
        (to_client, to_server)
    } else {
        (to_server, to_client)
    };
    if (sender as f64) < NEAR_SHARE * rtt {
        Position::NearSender
    } else if (receiver as f64) < NEAR_SHARE * rtt {
        Position::NearReceiver
    } else {
        Position::Between
    }
}

/// The round trip from the capture point to the data's sender and back,
/// ns, when the handshake shows it.
pub fn sender_half_ns(h: &Handshake, client_sends: bool) -> Option<u64> {
    if client_sends {
        h.syn_ack_to_ack_ns
    } else {
        h.syn_to_syn_ack_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hs(a: u64, b: u64) -> Handshake {
        Handshake {
            complete: true,
            syn_to_syn_ack_ns: Some(a),
            syn_ack_to_ack_ns: Some(b),
            rtt_ns: Some(a + b),
            ..Handshake::default()
        }
    }

    #[test]
    fn the_short_half_names_the_near_side() {
        let near_client = hs(15_000_000, 50_000);
        assert_eq!(of(&near_client, true), Position::NearSender);
        assert_eq!(of(&near_client, false), Position::NearReceiver);
        assert_eq!(of(&hs(7_000_000, 8_000_000), true), Position::Between);
        assert_eq!(of(&Handshake::default(), true), Position::Unknown);
    }
}
