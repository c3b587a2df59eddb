//! `plumb handshake`'s flags ([`HandshakeArgs`]).

use clap::Args;

/// Flags of `plumb handshake`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb handshake nas.example:445            does the NAS scale its window?\n  plumb handshake 198.18.0.2:22 -J           the same as a JSON document\n  plumb handshake web.example:443 --connect  what this host negotiates with it\n\nAs root (CAP_NET_RAW) it sends a raw SYN with every option and reads the SYN-ACK:\nwhat the peer offers. Otherwise it connects and reads TCP_INFO: what was negotiated.\nIt sends no data."
)]
pub struct HandshakeArgs {
    /// Services to read, as HOST:PORT ([ADDR]:PORT for IPv6)
    #[arg(required = true, value_name = "HOST:PORT")]
    pub targets: Vec<String>,
    /// Handshakes per target (the RTT's minimum and median)
    #[arg(short = 'n', long, default_value_t = 3, value_parser = count)]
    pub count: u8,
    /// Connect and read TCP_INFO even as root: what this host negotiates, not what the peer offers
    #[arg(long)]
    pub connect: bool,
    /// Output a JSON document
    #[arg(short = 'J', long)]
    pub json: bool,
}

/// `--count`: a few handshakes, never a flood (1 to 5).
fn count(s: &str) -> Result<u8, String> {
    match crate::args::whole::<u8>(s)? {
        n @ 1..=5 => Ok(n),
        _ => Err(format!(
            "invalid number '{s}': too many or too few (accepted: 1 to 5 handshakes)"
        )),
    }
}
