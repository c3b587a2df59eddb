//! How much of the wire, or of a send buffer, is payload: the framing
//! shares the rules and the figures turn a line rate or a buffer size into
//! goodput with.

/// The payload a send buffer keeps in flight: the lab's prediction uses it
/// too, so it is defined with the model.
pub use plumb_model::lab::sndbuf_payload;

/// TCP payload share of the wire for `payload` bytes per segment (IPv4, with
/// or without the 12 B of timestamps), as `plumb-model` frames it.
pub fn efficiency(payload: u64, timestamps: bool) -> f64 {
    let f = plumb_model::Framing {
        mtu: payload + 40 + if timestamps { 12 } else { 0 },
        ipv6: false,
        timestamps,
        vlan: false,
    };
    f.efficiency()
}

/// Payload bytes of a UDP datagram when the document does not say: the
/// most an IPv4 datagram carries in a 1500-byte MTU.
pub const UDP_PAYLOAD: u64 = 1472;

/// The share of an Ethernet link a UDP datagram of `payload` bytes uses as
/// payload: IPv4 (20 B) and UDP (8 B) headers, 38 B of Ethernet framing, one
/// frame per datagram up to the 1500-byte MTU (larger ones go as IP
/// fragments, each with its own 20 B IP header and framing).
pub fn udp_efficiency(payload: u64) -> f64 {
    let ip = payload + 8;
    let frames = ip.div_ceil(1480).max(1);
    let wire = ip + frames * (20 + 38);
    payload as f64 / wire as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_payload_share_of_the_wire() {
        // One frame: 1472 B of payload in 1472 + 8 + 20 + 38 on the wire.
        assert!((udp_efficiency(1472) - 1472.0 / 1538.0).abs() < 1e-12);
        // 64 B datagrams: 64 / 130.
        assert!((udp_efficiency(64) - 64.0 / 130.0).abs() < 1e-12);
        // 8 KiB goes as six fragments, each with its IP header and framing.
        assert!((udp_efficiency(8192) - 8192.0 / (8200.0 + 6.0 * 58.0)).abs() < 1e-12);
    }
}
