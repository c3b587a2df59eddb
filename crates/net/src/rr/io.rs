//! Message I/O on a request/response socket: whole messages read and
//! written under a stop condition, and `--busy-poll`'s spinning read.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::datathread::transient;
use crate::sockopt;

pub(crate) fn tune(s: &TcpStream, busy_poll: Option<u32>) {
    let _ = s.set_nodelay(true);
    if let Some(us) = busy_poll {
        // Unprivileged callers may lower but not raise it: best effort.
        let _ = sockopt::set_busy_poll(s.as_fd(), us);
    }
}

/// `--busy-poll`'s time as the spin before each sleep.
pub(crate) fn spin_of(busy_poll_us: Option<u32>) -> Option<Duration> {
    busy_poll_us
        .filter(|us| *us > 0)
        .map(|us| Duration::from_micros(u64::from(us)))
}

/// A read that first polls the socket without sleeping for up to `spin`
/// (`--busy-poll`), then sleeps in the kernel as usual.
///
/// Why: `SO_BUSY_POLL` makes the kernel poll a device queue, which only a
/// NIC with NAPI has; loopback and most virtual devices have none, so there
/// the option changed nothing. Polling the socket itself takes the sleep and
/// the wake-up out of the round trip on any device, at the cost of a CPU
/// spinning on each end for up to `spin` per read.
pub(crate) fn read_spinning(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &mut [u8],
    spin: Option<Duration>,
    block: &mut dyn FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<usize> {
    if let Some(spin) = spin {
        let t0 = Instant::now();
        loop {
            match crate::sys::recv_nowait(fd, buf) {
                Ok(n) => return Ok(n),
                Err(e) if transient(&e) => {}
                Err(e) => return Err(e),
            }
            if t0.elapsed() >= spin {
                break;
            }
            std::hint::spin_loop();
        }
    }
    block(buf)
}

/// Reads exactly `buf.len()` bytes, spinning first for up to `spin` before
/// each read sleeps. `Ok(false)`: EOF before the first byte, or `give_up()`
/// turned true while nothing had arrived.
pub(crate) fn read_full(
    s: &TcpStream,
    buf: &mut [u8],
    give_up: &dyn Fn() -> bool,
    spin: Option<Duration>,
) -> io::Result<bool> {
    let mut off = 0;
    let mut r: &TcpStream = s;
    while off < buf.len() {
        match read_spinning(s.as_fd(), &mut buf[off..], spin, &mut |b| r.read(b)) {
            Ok(0) if off == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the peer closed {off} bytes into a {}-byte message",
                        buf.len()
                    ),
                ))
            }
            Ok(n) => off += n,
            Err(e) if transient(&e) => {
                if give_up() {
                    if off == 0 {
                        return Ok(false);
                    }
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "a message stalled"));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

pub(crate) fn write_full(s: &TcpStream, buf: &[u8], give_up: &dyn Fn() -> bool) -> io::Result<()> {
    let mut off = 0;
    let mut w: &TcpStream = s;
    while off < buf.len() {
        match w.write(&buf[off..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the peer stopped reading",
                ))
            }
            Ok(n) => off += n,
            Err(e) if transient(&e) => {
                if give_up() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "a message stalled"));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tcp_stream_pair;

    /// `--busy-poll`'s spin returns what arrives while it polls, and hands
    /// over to the sleeping read when its time is up with nothing there.
    #[test]
    fn a_spinning_read_takes_what_arrives_then_sleeps() {
        let (a, b) = tcp_stream_pair();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            (&a).write_all(b"x").expect("write");
            a
        });
        let mut buf = [0u8; 4];
        let mut slept = false;
        let n = read_spinning(
            b.as_fd(),
            &mut buf,
            Some(Duration::from_secs(5)),
            &mut |_| {
                slept = true;
                Ok(0)
            },
        )
        .expect("read");
        assert_eq!((n, buf[0], slept), (1, b'x', false));
        let _a = writer.join().expect("writer");
        // Nothing to read: after 1 ms of polling the sleeping read is called.
        let t0 = Instant::now();
        let n = read_spinning(
            b.as_fd(),
            &mut buf,
            Some(Duration::from_millis(1)),
            &mut |_| Ok(99),
        )
        .expect("fallback");
        assert_eq!(n, 99);
        assert!(t0.elapsed() >= Duration::from_millis(1));
        // No spin: straight to the sleeping read.
        assert_eq!(spin_of(None), None);
        assert_eq!(spin_of(Some(0)), None);
        assert_eq!(spin_of(Some(50)), Some(Duration::from_micros(50)));
    }
}
