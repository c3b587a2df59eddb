//! The options iperf3 sets on this end's own sockets without telling the
//! peer: `--bind-dev` (every socket), `--cntl-ka` (the control connection),
//! `--snd-timeout` (the control connection and TCP data streams) and `--dont-fragment` (UDP data
//! streams). They travel in [`crate::config::ClientConfig::local`] and are
//! applied before each socket connects.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Duration;

use socket2::{Socket, TcpKeepalive};

use crate::flowlabel;
use crate::sockopt::{self, PmtuDiscovery};

/// The flow label's 20 bits of `sin6_flowinfo`.
pub const FLOWLABEL_MASK: u32 = 0x000F_FFFF;

/// `--cntl-ka[=IDLE/INTV/CNT]`: each part the system's default when left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keepalive {
    /// Idle time before the first probe (TCP_KEEPIDLE).
    pub idle: Option<Duration>,
    /// Time between probes (TCP_KEEPINTVL).
    pub interval: Option<Duration>,
    /// Probes unanswered before the connection is dropped (TCP_KEEPCNT).
    pub count: Option<u32>,
}

/// This end's own socket options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalOptions {
    /// `--bind-dev`: SO_BINDTODEVICE on every socket.
    pub bind_dev: Option<String>,
    /// `--cntl-ka`: keepalive on the control connection.
    pub keepalive: Option<Keepalive>,
    /// `--snd-timeout`: TCP_USER_TIMEOUT on the control connection and the
    /// TCP data streams.
    pub snd_timeout: Option<Duration>,
    /// `--dont-fragment`: IP_PMTUDISC_DO on the UDP data streams.
    pub dont_fragment: bool,
    /// `-L`: the IPv6 flow label of the TCP data streams (20 bits).
    pub flowlabel: Option<u32>,
}

impl LocalOptions {
    /// Before the control connection connects (iperf3 sets its send
    /// timeout on the control connection too).
    pub fn control(&self, s: &Socket) -> io::Result<()> {
        self.tcp(s)?;
        if let Some(k) = self.keepalive {
            let mut ka = TcpKeepalive::new();
            if let Some(t) = k.idle {
                ka = ka.with_time(t);
            }
            if let Some(t) = k.interval {
                ka = ka.with_interval(t);
            }
            if let Some(n) = k.count {
                ka = ka.with_retries(n);
            }
            s.set_keepalive(true)?;
            s.set_tcp_keepalive(&ka)?;
        }
        Ok(())
    }

    /// Where a TCP data stream connects: `server`, carrying the flow label
    /// in its flow information when `-L` gives one (IPv6 only).
    pub fn data_addr(&self, server: SocketAddr) -> io::Result<SocketAddr> {
        match (self.flowlabel, server) {
            (None, a) => Ok(a),
            (Some(label), SocketAddr::V6(mut a)) => {
                // sin6_flowinfo is in network byte order.
                a.set_flowinfo((label & FLOWLABEL_MASK).to_be());
                Ok(SocketAddr::V6(a))
            }
            (Some(_), SocketAddr::V4(_)) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "-L: a flow label is IPv6's; the server's address is IPv4 (give -6 or an IPv6 address)",
            )),
        }
    }

    /// Before a TCP data stream connects to `server`.
    pub fn tcp_data(&self, s: &Socket, server: SocketAddr) -> io::Result<()> {
        self.tcp(s)?;
        if let (Some(label), SocketAddr::V6(a)) = (self.flowlabel, server) {
            flowlabel::lease(s.as_fd(), a.ip(), label & FLOWLABEL_MASK)
                .map_err(|e| io::Error::new(e.kind(), format!("-L {label}: {e}")))?;
        }
        Ok(())
    }

    /// A server's listener, before it binds: what accepted connections
    /// inherit from it (the device, the send timeout).
    pub fn listener(&self, s: &Socket) -> io::Result<()> {
        self.tcp(s)
    }

    /// What every TCP socket of this end takes: the device and the send
    /// timeout.
    fn tcp(&self, s: &Socket) -> io::Result<()> {
        self.device(s)?;
        if let Some(t) = self.snd_timeout {
            s.set_tcp_user_timeout(Some(t))?;
        }
        Ok(())
    }

    /// Before a UDP data stream connects.
    pub fn udp_data(&self, s: &Socket) -> io::Result<()> {
        self.device(s)?;
        if self.dont_fragment {
            sockopt::set_pmtu_discovery(s.as_fd(), PmtuDiscovery::Do)?;
        }
        Ok(())
    }

    fn device(&self, s: &Socket) -> io::Result<()> {
        match &self.bind_dev {
            Some(d) => s
                .bind_device(Some(d.as_bytes()))
                .map_err(|e| io::Error::new(e.kind(), format!("--bind-dev {d}: {e}"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Protocol, Type};

    #[test]
    fn each_option_lands_on_its_socket() {
        let opts = LocalOptions {
            bind_dev: None,
            keepalive: Some(Keepalive {
                idle: Some(Duration::from_secs(7)),
                interval: Some(Duration::from_secs(3)),
                count: Some(4),
            }),
            snd_timeout: Some(Duration::from_millis(2500)),
            dont_fragment: true,
            flowlabel: None,
        };
        let tcp = |()| Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP));
        let c = tcp(()).expect("socket");
        opts.control(&c).expect("control options");
        assert!(c.keepalive().expect("SO_KEEPALIVE"));
        assert_eq!(c.keepalive_time().ok(), Some(Duration::from_secs(7)));
        assert_eq!(c.keepalive_interval().ok(), Some(Duration::from_secs(3)));
        assert_eq!(c.keepalive_retries().ok(), Some(4));
        let d = tcp(()).expect("socket");
        opts.tcp_data(&d, "127.0.0.1:5201".parse().expect("addr"))
            .expect("data options");
        assert_eq!(
            d.tcp_user_timeout().ok().flatten(),
            Some(Duration::from_millis(2500))
        );
        assert!(
            !d.keepalive().expect("SO_KEEPALIVE"),
            "keepalive is the control's alone"
        );
        let u = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).expect("socket");
        opts.udp_data(&u).expect("udp options");
        assert_eq!(
            sockopt::pmtu_discovery(u.as_fd()).ok(),
            Some(PmtuDiscovery::Do)
        );
        let bad = LocalOptions {
            bind_dev: Some("no-such-dev0".into()),
            ..LocalOptions::default()
        };
        let e = bad
            .control(&tcp(()).expect("socket"))
            .expect_err("no such device");
        assert!(e.to_string().contains("--bind-dev no-such-dev0"), "{e}");
    }
}
