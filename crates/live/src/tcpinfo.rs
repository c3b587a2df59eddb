//! `struct tcp_info` as INET_DIAG_INFO carries it: bytes in, typed fields out.
//!
//! The layout is the kernel's uapi struct, decoded by `plumb-model`'s
//! `tcp_info` (the same decoder `plumb-net` reads `getsockopt` with), in host
//! byte order. The attribute is as long as the running kernel's struct; a
//! field whose bytes the attribute does not cover is `None`, never zero.

// One typed view for both ends of plumb: `plumb-net` reads its own sockets
// with it too.
pub use plumb_model::tcp_info::{TcpInfo, MIN_LEN, SIZE};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_payloads_leave_newer_fields_none() {
        assert_eq!(TcpInfo::decode(&[0u8; 103]), None);
        let mut b = vec![0u8; 120];
        b[0] = 1;
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[104..112].copy_from_slice(&7u64.to_ne_bytes());
        let t = TcpInfo::decode(&b).expect("104+ bytes decode");
        assert_eq!((t.state, t.snd_mss, t.pacing_rate), (1, 1448, Some(7)));
        assert_eq!(t.bytes_acked, None);
        assert_eq!(t.rcv_wnd, None);
        let mut full = vec![0u8; 248];
        full[232..236].copy_from_slice(&17_520u32.to_ne_bytes());
        let t = TcpInfo::decode(&full).expect("decode");
        assert_eq!(t.rcv_wnd, Some(17_520));
        assert_eq!(t.busy_time, Some(0));
    }
}
