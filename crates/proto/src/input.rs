//! The input side both control machines share: the bytes read from the
//! control connection and not yet handled, cut into messages in order by
//! the machine's own [`Reader::step`], with input the driver must answer
//! first held back and the peer's close reported only after it.
//!
//! What a message means is each machine's business ([`crate::client`],
//! [`crate::server`]); when to read it, hold it or stop is this module's.

/// What one message at the start of the buffer came to.
pub(crate) enum Step {
    /// The message took this many bytes.
    Consumed(usize),
    /// The message is incomplete; more bytes are needed.
    NeedBytes,
    /// The driver owes a command before this input may be read.
    Held,
    /// Nothing more is read.
    Stop,
}

/// Bytes received and not yet handled, and whether the peer has closed.
#[derive(Debug, Default)]
pub(crate) struct Input {
    buf: Vec<u8>,
    eof: bool,
}

impl Input {
    /// Takes what is left unread, leaving nothing (the peer closed on it,
    /// or the machine stops reading).
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Drops what is left unread.
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
    }
}

/// A control machine as its input sees it.
pub(crate) trait Reader {
    /// The machine's input buffer.
    fn input(&mut self) -> &mut Input;
    /// Whether the machine has finished and reads nothing more.
    fn reads_no_more(&self) -> bool;
    /// Handles the message at the start of `buf` (never empty).
    fn step(&mut self, buf: &[u8]) -> Step;
    /// The peer closed with the machine still open: says what was cut off
    /// (what is left in [`Input::take`]) and closes.
    fn finish_at_eof(&mut self);
}

/// Feeds bytes read from the control connection: buffered, then handled
/// as far as the machine allows. Nothing is read after the machine closed
/// or the peer did.
pub(crate) fn feed<M: Reader>(m: &mut M, bytes: &[u8]) {
    if m.reads_no_more() || m.input().eof {
        return;
    }
    m.input().buf.extend_from_slice(bytes);
    process(m);
}

/// Reports that the peer closed the control connection; bytes already
/// given are handled first.
pub(crate) fn feed_eof<M: Reader>(m: &mut M) {
    m.input().eof = true;
    process(m);
}

/// Handles buffered input as far as the machine allows, then a pending EOF.
pub(crate) fn process<M: Reader>(m: &mut M) {
    let buf = m.input().take();
    let mut pos = 0;
    let mut held_for_driver = false;
    while pos < buf.len() {
        match m.step(&buf[pos..]) {
            Step::Consumed(n) => pos += n,
            Step::NeedBytes => break,
            Step::Held => {
                held_for_driver = true;
                break;
            }
            Step::Stop => pos = buf.len(),
        }
    }
    let input = m.input();
    input.buf = buf;
    input.buf.drain(..pos);
    let eof = input.eof;
    // EOF is reported once the held input has been read, not before.
    if eof && !m.reads_no_more() && !held_for_driver {
        m.finish_at_eof();
    }
}
