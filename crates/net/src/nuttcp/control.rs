//! The nuttcp control connection on either end: text lines out, capped
//! lines in, every read bounded by a deadline.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::lines::Lines;
use plumb_proto::nuttcp::reply::Closing;

use crate::errors::TestError;

/// How long a peer has to send its closing figures after the data ends
/// (a stock server waits for its last data to be acknowledged first).
const CLOSING_WAIT: Duration = Duration::from_secs(20);

/// The most lines a peer may send after the test before the connection
/// closes (a stock server sends about a dozen).
pub const MAX_TRAILING_LINES: usize = 256;

/// One control connection.
pub struct Control {
    /// The socket.
    pub stream: TcpStream,
    lines: Lines,
    eof: bool,
}

impl Control {
    /// Wraps a connected socket.
    pub fn new(stream: TcpStream) -> Control {
        let _ = stream.set_nodelay(true);
        Control {
            stream,
            lines: Lines::new(),
            eof: false,
        }
    }

    /// Sends text.
    ///
    /// # Errors
    /// The write's failure.
    pub fn send(&mut self, text: &str) -> Result<(), TestError> {
        self.stream
            .write_all(text.as_bytes())
            .map_err(TestError::Control)
    }

    /// The next line, waiting until `deadline`; `Ok(None)` at the deadline
    /// or when the peer has closed.
    ///
    /// # Errors
    /// A read error, or a line the peer should not have sent (too long, not text).
    pub fn line_by(&mut self, deadline: Instant) -> Result<Option<String>, TestError> {
        loop {
            if let Some(l) = self.lines.next_line().map_err(TestError::Protocol)? {
                return Ok(Some(l));
            }
            if self.eof {
                return Ok(None);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(TestError::Control)?;
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => self.lines.push(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(None),
                Err(e) => return Err(TestError::Control(e)),
            }
        }
    }

    /// The next line, which must come by `deadline`.
    ///
    /// # Errors
    /// As [`Control::line_by`], and a timeout or close before the line, named by `what`.
    pub fn expect(&mut self, deadline: Instant, what: &str) -> Result<String, TestError> {
        match self.line_by(deadline)? {
            Some(l) => Ok(l),
            None if self.eof => Err(TestError::Protocol(format!(
                "nuttcp peer closed the control connection before its {what}"
            ))),
            None => Err(TestError::Protocol(format!(
                "nuttcp peer sent no {what} in time"
            ))),
        }
    }

    /// Closes after a refusal so that the peer reads it: this side's
    /// write end first, then what the peer still sends is read and dropped
    /// (at most 64 KiB, for at most half a second), for a close with unread
    /// bytes would reset the connection and could take the refusal with it.
    pub fn close_gently(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let until = Instant::now() + Duration::from_millis(500);
        let mut buf = [0u8; 4096];
        for _ in 0..16 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                break;
            }
            match self.stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }

    /// Whether the peer has closed its side.
    pub fn closed(&self) -> bool {
        self.eof
    }
}

/// The server's lines after the data, up to its close: its closing figures.
pub fn read_closing(ctl: &mut Control) -> Result<Closing, TestError> {
    let mut c = Closing::default();
    let deadline = Instant::now() + CLOSING_WAIT;
    let mut seen = false;
    for _ in 0..MAX_TRAILING_LINES {
        match ctl.line_by(deadline)? {
            Some(l) => {
                if l.contains("Error") {
                    return Err(TestError::Server(l));
                }
                seen |= l.contains(" real seconds");
                c.read_line(&l);
            }
            None => break,
        }
    }
    if !seen {
        return Err(TestError::Protocol(
            "the nuttcp server sent no closing figures".into(),
        ));
    }
    Ok(c)
}
