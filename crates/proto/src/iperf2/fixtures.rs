//! Bytes captured on loopback with `tcpdump -i lo` between Debian 12's
//! iperf 2.1.8 client and server (`iperf -s -p 45001 [-u]` and
//! `iperf -c 127.0.0.1 -p 45001 -t 1 …`), each decoded and, where plumb
//! sends the same structure, encoded back to the same bytes.

use std::time::Duration;

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or(0))
        .collect()
}

/// `iperf -c 127.0.0.1 -p 45001 -t 1`: the first 60 bytes of the connection.
const TCP_HEADER: &str = "40010078000000010000afc90000000000000000ffffff9c000000000000000000000000000200010008000300000000000000000000000000000000";
/// The same with `-R`.
const TCP_REVERSE: &str = "44010078000000010000afc90000000000000000ffffff9c000000000000000004000000000200010008000300000000000000000000000000000000";
/// The same with `-d`.
const TCP_DUAL: &str = "c0010079000000010000afc90000000000000000ffffff9c000000000000000000000000000200010008000300000000000000000000000000000000";
/// The server's 28-byte answer to `TCP_HEADER`.
const ACK: &str = "000000020000001c0000000000020001000800030000000000000000";
/// `iperf -c … -u -t 1 -b 1M -l 100`: the first datagram's first 76 bytes.
const UDP_FIRST: &str = "000000016b0b6aaa000382c80000000048010098000000010000afc90000006400000000ffffff9c000000000000000000000000000200010008000300000000001000000000000000000000";
/// Its final datagram's first 16 bytes (sequence number -1314).
const UDP_FINAL: &str = "fffffade6b0b6aab00038717ffffffff";
/// The server's report for it: 128 bytes, 0/1314 lost, 131400 bytes.
const REPORT: &str = "0000000000000000000000000000000088000000000000000002014800000001000003f10000000000000000000005220000000000000001000000000000000200000000000000620000000000001f35000000000000000600004da600094d3500000000ffffffff000005220000052000000001000000000000000000000000";

#[test]
fn tcp_header_reads_and_is_what_plumb_sends() {
    let b = hex(TCP_HEADER);
    let flags = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(TestHeader::tcp_len(flags), Ok(60));
    let h = TestHeader::decode(&b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(h.threads, 1);
    assert_eq!(h.port, 45001);
    assert_eq!(h.amount, Amount::Time(Duration::from_secs(1)));
    assert_eq!(h.version, Some(VERSION_2_1_8));
    assert_eq!(h.mode(), Mode::Normal);
    assert!(h.wants_ack());
    let ours = TestHeader::client(false, false, 1, 45001, Amount::Time(Duration::from_secs(1)));
    assert_eq!(ours.encode().to_vec(), b);
}

#[test]
fn reverse_and_dual_are_told_apart() {
    let r = TestHeader::decode(&hex(TCP_REVERSE)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.mode(), Mode::Reverse);
    assert!(!r.wants_ack());
    let ours = TestHeader::client(false, true, 1, 45001, Amount::Time(Duration::from_secs(1)));
    assert_eq!(ours.encode().to_vec(), hex(TCP_REVERSE));
    let d = TestHeader::decode(&hex(TCP_DUAL)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.mode(), Mode::Dual);
}

#[test]
fn ack_reads_and_encodes() {
    let a = HeaderAck::decode(&hex(ACK)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.version_text(), "2.1.8");
    assert_eq!(a.encode().to_vec(), hex(ACK));
    assert_eq!(
        HeaderAck::decode(&hex(TCP_HEADER)),
        Err(Iperf2Error::NotAck(0x4001_0078))
    );
}

#[test]
fn udp_first_datagram() {
    let b = hex(UDP_FIRST);
    let d = Datagram::decode(&b, true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((d.id, d.sec, d.usec), (1, 0x6b0b_6aaa, 0x0003_82c8));
    let h = TestHeader::decode(&b[DATAGRAM_LEN..]).unwrap_or_else(|e| panic!("{e}"));
    assert!(h.wide_seq() && h.wants_report());
    assert_eq!((h.buf_len, h.rate), (100, 1 << 20));
    let mut ours = TestHeader::client(true, false, 1, 45001, Amount::Time(Duration::from_secs(1)));
    ours.buf_len = 100;
    ours.rate = 1 << 20;
    let mut out = vec![0u8; UDP_HEADER_LEN];
    d.encode(&mut out).unwrap_or_else(|e| panic!("{e}"));
    out[DATAGRAM_LEN..].copy_from_slice(&ours.encode());
    assert_eq!(out, b);
}

#[test]
fn udp_final_datagram_is_negative_in_64_bits() {
    let b = hex(UDP_FINAL);
    assert_eq!(Datagram::decode(&b, true).map(|d| d.id), Ok(-1314));
    assert_eq!(Datagram::decode(&b, false).map(|d| d.id), Ok(-1314));
    let mut out = [0u8; 16];
    let d = Datagram {
        id: -1314,
        sec: 0x6b0b_6aab,
        usec: 0x0003_8717,
    };
    assert!(d.encode(&mut out).is_ok());
    assert_eq!(out.to_vec(), b);
}

#[test]
fn server_report_reads_and_encodes() {
    let b = hex(REPORT);
    assert!(ServerReport::looks_like_report(&b));
    let r = ServerReport::decode(&b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.bytes, 131_400);
    assert_eq!(r.datagrams, 1314);
    assert_eq!((r.lost, r.out_of_order), (0, 0));
    assert_eq!(r.duration, Duration::from_micros(1_001_009));
    assert_eq!(r.jitter, Duration::from_micros(1));
    let back = ServerReport::decode(&r.encode()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, r);
    // The base and the 64-bit words are what 2.1.8 wrote; the latency
    // extension plumb leaves zero.
    let ours = r.encode();
    assert_eq!(ours[..56], b[..56]);
    assert_eq!(ours[116..], b[116..]);
}

#[test]
fn hostile_bytes_get_errors() {
    assert!(TestHeader::decode(&[0x40, 0, 0, 0]).is_err_and(|e| e.to_string().contains("shorter")));
    let mut ext = hex(TCP_HEADER);
    ext.truncate(40);
    assert!(TestHeader::decode(&ext).is_err_and(|e| e.to_string().contains("extended")));
    assert_eq!(
        TestHeader::tcp_len(0x1234_0000),
        Err(Iperf2Error::NoHeader(0x1234_0000))
    );
    assert!(TestHeader::tcp_len(0x4001_0002).is_err_and(|e| e.to_string().contains("length 1 ")));
    assert!(TestHeader::decode(&[0u8; 24]).is_err());
    let mut neg = hex(TCP_HEADER);
    neg[4] = 0xFF;
    assert!(TestHeader::decode(&neg).is_err_and(|e| e.to_string().contains("stream count")));
    assert!(Datagram::decode(&[0; 15], true).is_err());
    assert!(ServerReport::decode(&[0; 55]).is_err());
    let mut bad = hex(REPORT);
    bad[16 + 16..16 + 20].copy_from_slice(&2_000_000u32.to_be_bytes());
    assert!(ServerReport::decode(&bad).is_err_and(|e| e.to_string().contains("microseconds")));
}

#[test]
fn modes_from_flags() {
    let base = TestHeader::client(false, false, 1, 5001, Amount::Bytes(1000));
    let with = |flags: u32, upper: u16| TestHeader {
        flags,
        upper,
        ..base
    };
    assert_eq!(base.mode(), Mode::Normal);
    assert_eq!(
        with(flags::EXTEND | flags::VERSION1, 0).mode(),
        Mode::Tradeoff
    );
    assert_eq!(
        with(flags::EXTEND | flags::VERSION2, upper::FULLDUPLEX).mode(),
        Mode::FullDuplex
    );
    assert_eq!(with(flags::BOUNCEBACK, 0).mode(), Mode::BounceBack);
    assert_eq!(with(flags::EXTEND | flags::KEYCHECK, 0).mode(), Mode::Keyed);
    assert!(with(flags::EXTEND | flags::VERSION2 | flags::V2PEERDETECT, 0).wants_ack());
    // Bytes mode round-trips; a time over i32's hundredths saturates.
    let b = TestHeader::decode(&base.encode()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.amount, Amount::Bytes(1000));
    let long = TestHeader::client(
        false,
        false,
        1,
        5001,
        Amount::Time(Duration::from_secs(u64::MAX / 4)),
    );
    assert!(TestHeader::decode(&long.encode()).is_ok_and(|h| matches!(h.amount, Amount::Time(_))));
    // A 64-bit rate keeps its upper bits.
    let mut fast = base;
    fast.rate = (7 << 32) | 5;
    assert_eq!(
        TestHeader::decode(&fast.encode()).map(|h| h.rate),
        Ok((7 << 32) | 5)
    );
}

proptest::proptest! {
    /// Any bytes a peer sends decode or are refused, never panic, and what
    /// decodes encodes back (the fuzz target `fuzz/fuzz_targets/iperf2.rs`
    /// runs the same checks unbounded).
    #[test]
    fn any_bytes_decode_or_are_refused(data in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        if data.len() >= 4 {
            let flags = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
            if let Ok(len) = TestHeader::tcp_len(flags) {
                proptest::prop_assert!(len <= MAX_HEADER_LEN);
                let _ = TestHeader::decode(&data[..len.min(data.len())]).map(|h| h.mode());
            }
        }
        if let Ok(d) = Datagram::decode(&data, false) {
            let mut buf = [0u8; DATAGRAM_LEN];
            proptest::prop_assert!(d.encode(&mut buf).is_ok());
            proptest::prop_assert_eq!(Datagram::decode(&buf, true).map(|b| b.id), Ok(d.id));
            let _ = TestHeader::decode(&data[DATAGRAM_LEN..]);
        }
        if let Ok(a) = HeaderAck::decode(&data) {
            proptest::prop_assert_eq!(HeaderAck::decode(&a.encode()), Ok(a));
        }
        if let Ok(r) = ServerReport::decode(&data) {
            proptest::prop_assert_eq!(ServerReport::decode(&r.encode()), Ok(r));
        }
    }
}
