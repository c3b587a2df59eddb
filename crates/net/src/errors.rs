//! What can end a test early, worded for the person running it.

use std::io;

/// Why a test did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestError {
    /// The control connection could not be made.
    #[error("unable to connect to server: {0}")]
    Connect(io::Error),
    /// The server is running another test.
    #[error("the server is busy running a test; try again later")]
    Busy,
    /// The server reported an error.
    #[error("the server refused the test: {0}")]
    Server(String),
    /// Reading or writing the control connection failed.
    #[error("control connection failed: {0}")]
    Control(io::Error),
    /// The peer closed the control connection in the middle of the test.
    #[error("the control connection closed unexpectedly")]
    ControlClosed,
    /// A data stream could not be set up.
    #[error("cannot set up a data stream: {0}")]
    Stream(io::Error),
    /// The peer broke the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The peer stopped answering.
    #[error("the peer stopped responding")]
    Timeout,
    /// SIGINT or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// The server ended or refused a test for a reason of its own (the
    /// server's log line; the client was sent the matching iperf3 code).
    #[error("{0}")]
    Ended(String),
}

/// iperf3's error numbers (spec §7) as a sentence.
pub fn server_error_text(code: i32, errno: i32) -> String {
    let what = match code {
        5 => "test duration is invalid or above the server's maximum",
        6 => "too many parallel streams",
        7 => "block size is invalid",
        8 => "socket buffer size is invalid",
        10 => "MSS is invalid",
        11 => "the server cannot use zero-copy (sendfile)",
        12 => "omit time is invalid",
        15 => "burst size is invalid",
        20 => "UDP block size is invalid",
        21 => "TOS value is invalid",
        27 => "the requested bitrate exceeds the server's limit",
        37 => "the test duration exceeds the server's maximum",
        114 => "the server could not read the test parameters",
        119 => "the client terminated",
        120 => "the server terminated",
        121 => "the server is busy",
        127 => "flow label is invalid",
        132 => "the server cannot pin the test to the CPU asked for (-A n,m)",
        134 => "the server does not support the requested congestion control",
        142 => "authorization failed",
        144 => "no data was received for too long",
        160 => "the test ran longer than the server allows",
        202 => "the server could not listen for the data streams",
        250 => "the server refused the request/response parameters (sizes, burst or busy-poll out of range, or over its --max-rr-size or --max-rr-burst)",
        _ => "",
    };
    let errno_text = if errno != 0 {
        format!(" ({})", io::Error::from_raw_os_error(errno))
    } else {
        String::new()
    };
    if what.is_empty() {
        format!("error {code}{errno_text}")
    } else {
        format!("{what} (error {code}){errno_text}")
    }
}
