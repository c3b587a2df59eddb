//! One watched connection's row for one interval: its rate, direction,
//! resends, class and limit from two readings ([`row`]), and the row as a
//! reader sees it ([`RowView`]), which makes a `plumb top --json` line.

use plumb_record::class::FlowClass;
use plumb_record::diagnosis::Limit;
use plumb_record::TopLine;

use super::lookups::Lookups;
use crate::evidence::{explain_classed, Context};
use crate::sys::Owner;
use crate::{Conn, Role, Track};

/// One connection's row for one interval: the numbers, not yet text, so a
/// row nobody prints (past the screen's height) costs no formatting.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The interval's rate, the larger direction's, bit/s.
    pub rate: f64,
    /// Which way it moved data.
    pub role: Role,
    /// Segments retransmitted in the interval.
    pub retrans: u64,
    /// The limit named now.
    pub limit: Option<Limit>,
    /// The class over the interval (`None` for an idle row, which is not
    /// weighed).
    pub class: Option<FlowClass>,
}

/// A row for `now`, seen `prev` at `tp`. An idle connection (most of a busy
/// host's) is a subtraction and a look at its TCP state: no track, no rules,
/// no link lookup. A busy one, or a sender stuck in retransmission timeouts,
/// gets the same diagnosis as `plumb why`.
pub fn row(prev: &Conn, tp: f64, now: &Conn, t: f64, fresh: bool, look: &mut Lookups) -> Row {
    let (sent, received) = crate::track::moved(prev, now);
    let secs = t - tp;
    let bps = |n: u64| {
        if secs > 0.0 {
            n as f64 * 8.0 / secs
        } else {
            0.0
        }
    };
    let role = crate::track::role_of(bps(sent), bps(received));
    let retrans = {
        let r = |c: &Conn| c.tcp.map_or(0, |t| t.total_retrans);
        u64::from(r(now).saturating_sub(r(prev)))
    };
    let mut out = Row {
        rate: bps(sent).max(bps(received)),
        role,
        retrans,
        limit: None,
        class: None,
    };
    // A sender stuck in retransmission timeouts moves nothing either, but
    // it is not idle: its track says so.
    if role == Role::Idle && !crate::track::timed_out(prev, now) {
        return out;
    }
    let mut tr = Track::new(*prev, tp);
    tr.update(*now, t);
    out.role = tr.delta().role;
    if out.role == Role::Idle {
        return out;
    }
    let pid = look.owners.get(now.inode).map(|o| o.pid);
    let cpu = pid.and_then(|p| look.cpu(p, fresh));
    let ctx = Context {
        link: look.link_for(now.remote.ip()),
        cpu,
        pid,
        opened: look.listeners().opened(now.local),
        // top shows each row's limit, not its fixes.
        sysctls: Default::default(),
    };
    let (d, _, class) = explain_classed(&tr, &ctx);
    out.limit = d.limit;
    out.class = Some(class.class);
    out
}

/// The window a row shows: the one this host advertises when it receives,
/// else the peer's.
pub fn window(c: &Conn, role: Role) -> Option<u32> {
    let t = c.tcp?;
    match role {
        Role::Receiver => t.rcv_wnd,
        _ => t.snd_wnd,
    }
}

/// A row as its reader sees it: the connection as read, its numbers, and
/// its owner when known.
#[derive(Debug, Clone, Copy)]
pub struct RowView<'a> {
    /// The connection as last read.
    pub conn: &'a Conn,
    /// Its numbers this interval.
    pub row: &'a Row,
    /// The owning process, when known.
    pub owner: Option<&'a Owner>,
}

impl RowView<'_> {
    /// The window the row shows (see [`window`]).
    pub fn window(&self) -> Option<u32> {
        window(self.conn, self.row.role)
    }

    /// The row as one `plumb top --json` line of interval `interval`.
    pub fn line(&self, interval: u64, full_scan: bool) -> TopLine {
        let (r, c, owner) = (self.row, self.conn, self.owner);
        let tcp = c.tcp;
        // Without TCP_INFO (a dump that carried none) the RTT, congestion
        // window and window are unknown (`null`), not zero.
        TopLine {
            interval,
            local: c.local.to_string(),
            remote: c.remote.to_string(),
            pid: owner.map(|o| u64::from(o.pid)),
            command: owner.map(|o| o.command.clone()),
            direction: r.role.name().to_string(),
            rate_bps: r.rate,
            rtt_ms: tcp.map(|t| f64::from(t.rtt) / 1e3),
            cwnd_bytes: tcp.map(|t| u64::from(t.snd_cwnd) * u64::from(t.snd_mss)),
            window_bytes: window(c, r.role).map(u64::from),
            retransmits: Some(r.retrans),
            limit: r.limit.map(|l| l.name().to_string()),
            class: r.class.map(|k| k.name().to_string()),
            congestion: c.congestion.as_ref().map(|cc| cc.as_str().to_string()),
            full_scan,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owners::Owners;
    use plumb_model::Rate;

    fn conn(tcp: Option<plumb_tcpinfo::TcpInfo>) -> Conn {
        Conn {
            local: "127.0.0.1:5201".parse().expect("addr"),
            remote: "127.0.0.1:40000".parse().expect("addr"),
            state: 1,
            inode: 0,
            uid: 0,
            ifindex: 0,
            cookie: 7,
            recv_queue: 0,
            send_queue: 0,
            tcp,
            congestion: None,
            mem: None,
            bbr: None,
        }
    }

    /// A server socket behind a path-MTU black hole at `resends` total
    /// retransmissions: its HTTP headers (176 B and the SYN's byte)
    /// acknowledged, ten 1448-byte segments outstanding, a window of one,
    /// in Loss.
    fn stuck(resends: u32) -> Conn {
        conn(Some(plumb_tcpinfo::TcpInfo {
            bytes_acked: Some(177),
            bytes_received: Some(80),
            unacked: 10,
            snd_cwnd: 1,
            ca_state: 4,
            retransmits: 1,
            total_retrans: resends,
            snd_mss: 1448,
            pmtu: 1500,
            rtt: 15_000,
            ..plumb_tcpinfo::TcpInfo::default()
        }))
    }

    fn lookups() -> Lookups {
        Lookups::new(Owners::default(), Rate::from_bps(100e6))
    }

    /// A sender stuck in timeouts is a row with a role, not hidden as idle;
    /// its first second (a tail-loss probe and timeouts at 0.2 and 0.6 s:
    /// three resends) names the black hole, and so does a later second with
    /// one resend, from the five timeouts in a row behind it; one resend
    /// after a single timeout is a stalled sender with no limit named.
    #[test]
    fn a_sender_stuck_in_timeouts_is_a_sending_row() {
        let mut look = lookups();
        let first = row(&stuck(0), 0.0, &stuck(3), 1.0, true, &mut look);
        assert_eq!((first.rate, first.role), (0.0, Role::Sender));
        assert_eq!(first.limit, Some(Limit::PathMtu));
        let in_a_row = |c: Conn| {
            let mut c = c;
            c.tcp.as_mut().expect("tcp").retransmits = 5;
            c
        };
        let later = row(
            &in_a_row(stuck(5)),
            3.0,
            &in_a_row(stuck(6)),
            4.0,
            true,
            &mut look,
        );
        assert_eq!(later.role, Role::Sender);
        assert_eq!(later.limit, Some(Limit::PathMtu));
        let once = row(&stuck(5), 3.0, &stuck(6), 4.0, true, &mut look);
        assert_eq!(once.role, Role::Sender);
        assert_ne!(once.limit, Some(Limit::PathMtu));
        // A keep-alive connection with nothing outstanding stays idle.
        let mut quiet = stuck(0);
        let t = quiet.tcp.as_mut().expect("tcp");
        (t.unacked, t.snd_cwnd, t.ca_state, t.retransmits) = (0, 10, 0, 0);
        let idle = row(&quiet, 0.0, &quiet, 1.0, true, &mut look);
        assert_eq!((idle.role, idle.limit), (Role::Idle, None));
    }

    /// A connection the kernel sent no TCP_INFO for has an unknown RTT and
    /// window, not zero ones, in its NDJSON line.
    #[test]
    fn no_tcp_info_is_unknown_not_zero() {
        let r = Row {
            rate: 0.0,
            role: Role::Sender,
            retrans: 0,
            limit: None,
            class: None,
        };
        let json = |c: &Conn| {
            let v = RowView {
                conn: c,
                row: &r,
                owner: None,
            };
            serde_json::to_string(&v.line(1, true)).expect("one JSON line")
        };
        let v = json(&conn(None));
        assert!(v.contains(r#""rtt_ms":null"#), "{v}");
        assert!(v.contains(r#""cwnd_bytes":null"#), "{v}");
        let t = plumb_tcpinfo::TcpInfo {
            rtt: 15_000,
            snd_cwnd: 10,
            snd_mss: 1448,
            ..plumb_tcpinfo::TcpInfo::default()
        };
        let v = json(&conn(Some(t)));
        assert!(v.contains(r#""rtt_ms":15.0"#), "{v}");
        assert!(v.contains(r#""cwnd_bytes":14480"#), "{v}");
    }
}
