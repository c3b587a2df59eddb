//! What the server's gate and its test threads share: the configuration,
//! the registry of tests taking data connections, the test slots, and the
//! way back to the gate to remake the listener; and the one-line log both
//! write to stderr.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use super::admission::{Registry, Slots};
use super::printer::Printer;
use crate::config::{canonical, ServerConfig};
use crate::sockets::DataOptions;

/// A data connection handed from the gate to its test.
pub(crate) type Incoming = mpsc::Sender<(TcpStream, SocketAddr)>;

/// Asks the gate to remake the listener (with a test's TCP options, or none).
pub(crate) struct Rebind {
    pub opts: Option<DataOptions>,
    pub done: mpsc::Sender<io::Result<()>>,
}

/// What the gate and the test threads share.
pub(crate) struct ServerState<'a> {
    pub cfg: &'a ServerConfig,
    pub printer: &'a dyn Printer,
    pub registry: Registry<Incoming>,
    pub slots: Arc<Slots>,
    /// One test at a time binds the unconnected UDP socket that takes hellos.
    pub udp_setup: Mutex<()>,
    pub port: u16,
    pub rebind_tx: Mutex<mpsc::Sender<Rebind>>,
    pub wake_tx: UnixDatagram,
}

impl ServerState<'_> {
    /// Remakes the listener through the gate and waits for it (bounded).
    pub(crate) fn rebind(&self, opts: Option<DataOptions>) -> io::Result<()> {
        let (tx, rx) = mpsc::channel();
        self.rebind_tx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Rebind { opts, done: tx })
            .map_err(|_| io::Error::other("the server is shutting down"))?;
        let _ = self.wake_tx.send(&[1]);
        rx.recv_timeout(Duration::from_secs(5))
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "listener rebind timed out"))?
    }
}

/// One line on stderr naming the peer and what happened.
pub(crate) fn log(peer: &SocketAddr, what: &str) {
    eprintln!(
        "plumb server: {} port {}: {what}",
        canonical(peer.ip()),
        peer.port()
    );
}
