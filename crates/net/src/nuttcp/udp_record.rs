//! The start and end of plumb's record for a nuttcp UDP test, on either
//! end: each data socket as connected, one stream of all their figures
//! (nuttcp counts a test's streams as one flow), this end's figures and
//! the peer's closing ones.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::request::Request;
use plumb_record::engine::{
    CpuUtil, EndRecord, Protocol, Role, StartRecord, StreamEnd, Totals, UdpEnd,
};

use super::params::params_of;
use super::udp::Figures;
use crate::host::CpuSnapshot;
use crate::session::{Plan, Session};
use crate::sockets;

/// The start of the record; `peer` is the data peer's address for the
/// first socket (port 0 where it is not known), one port up for each next.
pub fn start(role: Role, socks: &[UdpSocket], peer: SocketAddr, req: &Request) -> StartRecord {
    let p = params_of(req);
    let session = Session::new(Plan::of(&p), req.interval);
    let mut r = session.start_record(
        &plumb_proto::Cookie::from_random(&[b'0'; 36]),
        &p,
        0.0,
        req.seconds,
        req.interval,
    );
    r.role = role;
    r.cookie = String::new();
    r.connected = socks
        .iter()
        .zip(0u16..)
        .filter_map(|(sock, i)| {
            let l = sock.local_addr().ok()?;
            let port = if peer.port() == 0 {
                0
            } else {
                peer.port().saturating_add(i)
            };
            Some(plumb_record::Connected::new(
                sock.as_raw_fd(),
                sockets::host_string(&l),
                l.port(),
                sockets::host_string(&peer),
                port,
            ))
        })
        .collect();
    r
}

/// This process's CPU use since a snapshot, as the record's figures (the
/// peer's from its closing line).
pub fn cpu(since: Option<(CpuSnapshot, Instant)>, remote_percent: Option<u32>) -> CpuUtil {
    let mut c = CpuUtil::default();
    if let Some((c0, t0)) = since {
        if let Ok(c1) = CpuSnapshot::take() {
            let u = c1.usage_since(&c0, t0.elapsed().max(Duration::from_millis(1)));
            c.host_total = u.process_total;
            c.host_user = u.process_user;
            c.host_system = u.process_system;
        }
    }
    let remote = f64::from(remote_percent.unwrap_or(0));
    c.remote_total = remote;
    c.remote_system = remote;
    c
}

/// The end of the record: what the sender sent and the receiver received,
/// and the datagrams lost between them (by the sender's count and the
/// receiver's bytes, as nuttcp counts them). A peer that reported nothing
/// (a nuttcp client tells its server nothing) is taken to have moved what
/// this end did: the sender's count from the stamps when this end
/// received, this end's own when it sent.
pub fn end(
    sock: &UdpSocket,
    sends: bool,
    mine: Figures,
    theirs: Option<Figures>,
    buflen: u32,
    cpu: CpuUtil,
) -> EndRecord {
    let theirs = theirs.unwrap_or(if sends {
        mine
    } else {
        Figures {
            bytes: mine.stamped.max(mine.bytes),
            ..mine
        }
    });
    let (sent, received) = if sends {
        (mine, theirs)
    } else {
        (theirs, mine)
    };
    let sent_packets = if sends {
        sent.packets
    } else {
        sent.bytes / u64::from(buflen.max(1))
    };
    let got = received.bytes / u64::from(buflen.max(1));
    EndRecord {
        protocol: Protocol::Udp,
        bidir: false,
        streams: vec![StreamEnd {
            socket: sock.as_raw_fd(),
            sender: sends,
            sent: Totals {
                bytes: sent.bytes,
                seconds: sent.seconds,
            },
            received: Totals {
                bytes: received.bytes,
                seconds: received.seconds,
            },
            retransmits: None,
            tcp: None,
            udp: Some(UdpEnd {
                jitter_ms: 0.0,
                lost: sent_packets.saturating_sub(got) as i64,
                packets: sent_packets as i64,
                sent_packets: sent_packets as i64,
                out_of_order: 0,
            }),
        }],
        cpu,
        sender_tcp_congestion: None,
        receiver_tcp_congestion: None,
        plumb: None,
        server_output_text: None,
        server_output_json: None,
    }
}
