//! The iperf3-style parameters plumb's session and socket options read,
//! made from a nuttcp request (and on the client, from its own flags).

use plumb_proto::nuttcp::request::Request;
use plumb_proto::params::{PlumbParams, Protocol as WireProtocol, TestParams};

use crate::config::ClientConfig;

/// The iperf3-style parameters plumb's session reads, from a nuttcp request.
pub fn params_of(req: &Request) -> TestParams {
    TestParams {
        protocol: if req.udp {
            WireProtocol::Udp
        } else {
            WireProtocol::Tcp
        },
        time: req.seconds.ceil() as i64,
        parallel: i64::from(req.streams),
        len: i64::from(req.buflen),
        window: (req.window > 0).then_some(i64::from(req.window)),
        bandwidth: req.rate_bps().map_or(0, |b| {
            i64::try_from(b / u64::from(req.streams.max(1))).unwrap_or(i64::MAX)
        }),
        reverse: !req.client_sends,
        ..TestParams::default()
    }
}

/// The client's parameters: the request's, with this end's own socket
/// options (`-M`, `-N`, `-C`, `-S`, `--rwin`, `--sndbuf`, `--fq-rate`).
pub fn client_params(cfg: &ClientConfig, req: &Request) -> TestParams {
    let s = &cfg.spec;
    let mut p = params_of(req);
    p.mss = s.mss.map(i64::from);
    p.nodelay = s.nodelay;
    p.congestion.clone_from(&s.congestion);
    p.tos = (s.tos != 0).then_some(i64::from(s.tos));
    p.fqrate = i64::try_from(s.fq_rate).unwrap_or(i64::MAX);
    p.plumb = Some(PlumbParams {
        rwin: s.rwin,
        sndbuf: s.sndbuf,
        skip_rx_copy: s.skip_rx_copy,
        version: env!("CARGO_PKG_VERSION").to_string(),
        ..PlumbParams::default()
    });
    p
}
