//! The data connections one server's listener takes for another in the
//! same process: with `--tools iperf2,nuttcp` a nuttcp client's data
//! connection arrives on its data port, 5001 by default, where the iperf 2
//! listener already listens. The nuttcp session says, before it answers its
//! client, which peer and port it expects a connection on; the listener
//! that owns the port hands each connection from that peer to the waiting
//! session and treats every other as its own client. The decision is by the
//! open session, never by the connection's bytes.

use std::collections::HashMap;
use std::net::{IpAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Ports another listener owns, and the sessions waiting for a connection
/// on one of them, keyed by the peer's address and the port.
#[derive(Debug, Default)]
pub struct Handoff {
    shared: Vec<u16>,
    waiting: Mutex<HashMap<(IpAddr, u16), Sender<TcpStream>>>,
}

impl PartialEq for Handoff {
    /// The same registry, not an equal one.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Handoff {
    /// A registry for connections on `shared`, the ports other listeners
    /// of this process own.
    pub fn new(shared: Vec<u16>) -> Arc<Handoff> {
        Arc::new(Handoff {
            shared,
            waiting: Mutex::new(HashMap::new()),
        })
    }

    /// Whether another listener owns `port`.
    pub fn shares(&self, port: u16) -> bool {
        self.shared.contains(&port)
    }

    /// Registers a session's wait for one connection from `peer` on
    /// `port`; the wait ends when the returned [`Expected`] is dropped.
    pub fn expect(self: &Arc<Self>, peer: IpAddr, port: u16) -> Expected {
        let (tx, rx) = mpsc::channel();
        let key = (peer.to_canonical(), port);
        self.lock().insert(key, tx);
        Expected {
            owner: Arc::clone(self),
            key,
            rx,
        }
    }

    /// Gives `conn` (accepted on `port` from `peer`) to the session waiting
    /// for it, or back to the caller when none is.
    pub fn offer(&self, conn: TcpStream, peer: IpAddr, port: u16) -> Option<TcpStream> {
        let key = (peer.to_canonical(), port);
        let Some(tx) = self.lock().remove(&key) else {
            return Some(conn);
        };
        // A session that stopped waiting leaves the connection unclaimed:
        // the listener serves it as its own.
        tx.send(conn).err().map(|e| e.0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(IpAddr, u16), Sender<TcpStream>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One session's wait for a handed-over connection.
#[derive(Debug)]
pub struct Expected {
    owner: Arc<Handoff>,
    key: (IpAddr, u16),
    rx: Receiver<TcpStream>,
}

impl Expected {
    /// The port the connection is expected on.
    pub fn port(&self) -> u16 {
        self.key.1
    }

    /// The connection, once the owning listener hands it over, within `wait`.
    ///
    /// # Errors
    /// None arrived in time.
    pub fn take(&self, wait: Duration) -> std::io::Result<TcpStream> {
        self.rx.recv_timeout(wait).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "no data connection from {} on port {} within {}s",
                    self.key.0,
                    self.key.1,
                    wait.as_secs()
                ),
            )
        })
    }
}

impl Drop for Expected {
    fn drop(&mut self) {
        self.owner.lock().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (s, _) = l.accept().expect("accept");
        (c, s)
    }

    #[test]
    fn only_the_expected_peer_and_port_are_handed_over() {
        let h = Handoff::new(vec![5001]);
        assert!(h.shares(5001) && !h.shares(5000));
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let other = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let wait = h.expect(peer, 5001);
        let (_c1, s1) = pair();
        assert!(h.offer(s1, other, 5001).is_some(), "a stranger stays");
        let (_c2, s2) = pair();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert!(h.offer(s2, mapped, 5001).is_none(), "the peer is taken");
        assert!(wait.take(Duration::ZERO).is_ok());
        let (_c3, s3) = pair();
        assert!(h.offer(s3, peer, 5001).is_some(), "one connection per wait");
    }

    #[test]
    fn a_dropped_wait_takes_nothing() {
        let h = Handoff::new(vec![5001]);
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        drop(h.expect(peer, 5001));
        let (_c, s) = pair();
        assert!(h.offer(s, peer, 5001).is_some());
    }
}
