//! Bytes captured from a real iperf3 3.12 client and server (spec §11), shared by the tests.
// Float literals are the captured text digit for digit, 17 significant digits.
#![allow(clippy::excessive_precision)]

/// The control-connection cookie.
pub const COOKIE: &[u8; 37] = b"msxrfg3pyxzwys5sooc2raoot4nsd3dpnqdi\0";

/// The client's parameters for `-t 2 -b 200M` (145 bytes, sent after `00 00 00 91`).
pub const PARAMS: &str = concat!(
    r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"#,
    r#""bandwidth":200000000,"pacing_timer":1000,"client_version":"3.12"}"#
);

/// The client's results (266 bytes, sent after `00 00 01 0a`).
pub const CLIENT_RESULTS: &str = concat!(
    r#"{"cpu_util_total":4.7310405731833773,"cpu_util_user":0,"cpu_util_system":4.7310405731833773,"#,
    r#""sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":50069504,"#,
    r#""retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.000107}]}"#
);

/// The server's results (324 bytes, sent after `00 00 01 44`), with 3.12's unsigned −1.
pub const SERVER_RESULTS: &str = concat!(
    r#"{"cpu_util_total":0.99875517904982836,"cpu_util_user":0.38708884303612379,"#,
    r#""cpu_util_system":0.61156639053396367,"sender_has_retransmits":18446744073709551615,"#,
    r#""congestion_used":"bbr","streams":[{"id":1,"bytes":50069504,"#,
    r#""retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"#,
    r#""end_time":2.001074}]}"#
);

use crate::params::TestParams;
use crate::results::{Results, StreamResult};

/// [`PARAMS`], typed.
pub fn captured_params() -> TestParams {
    TestParams {
        time: 2,
        bandwidth: 200_000_000,
        client_version: "3.12".into(),
        ..TestParams::default()
    }
}

/// [`CLIENT_RESULTS`], typed.
pub fn captured_client() -> Results {
    Results {
        cpu_util_total: 4.7310405731833773,
        cpu_util_user: 0.0,
        cpu_util_system: 4.7310405731833773,
        sender_has_retransmits: 1,
        congestion_used: Some("bbr".into()),
        streams: vec![StreamResult {
            id: 1,
            bytes: 50_069_504,
            retransmits: 0,
            jitter: 0.0,
            errors: 0,
            packets: 0,
            start_time: 0.0,
            end_time: 2.000107,
            ..StreamResult::default()
        }],
        ..Results::default()
    }
}

/// [`SERVER_RESULTS`], typed.
pub fn captured_server() -> Results {
    Results {
        cpu_util_total: 0.99875517904982836,
        cpu_util_user: 0.38708884303612379,
        cpu_util_system: 0.61156639053396367,
        sender_has_retransmits: -1,
        congestion_used: Some("bbr".into()),
        streams: vec![StreamResult {
            id: 1,
            bytes: 50_069_504,
            retransmits: -1,
            jitter: 0.0,
            errors: 0,
            packets: 0,
            start_time: 0.0,
            end_time: 2.001074,
            ..StreamResult::default()
        }],
        ..Results::default()
    }
}

/// A length-prefixed frame around `json`.
pub fn frame(json: &str) -> Vec<u8> {
    let len = u32::try_from(json.len()).expect("test JSON fits a u32");
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out
}

#[test]
fn captured_lengths_match_the_prefixes() {
    assert_eq!(PARAMS.len(), 0x91);
    assert_eq!(CLIENT_RESULTS.len(), 0x10a);
    assert_eq!(SERVER_RESULTS.len(), 0x144);
    assert_eq!(&frame(PARAMS)[..4], &[0, 0, 0, 0x91]);
}
