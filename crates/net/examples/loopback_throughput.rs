//! Hand-run micro-measurement of the TCP send/receive paths over loopback.
//!
//! For each sender (`write`, `MSG_ZEROCOPY`, `sendfile` and `splice` from a
//! memfd) and each receiver (`read` into a buffer, `recv(MSG_TRUNC)`), a
//! sender thread pushes 128 KiB blocks to 127.0.0.1 for a fixed time and the
//! receiver counts bytes until EOF; the rate is bytes × 8 / elapsed.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target-net cargo run -p plumb-net --release \
//!     --example loopback_throughput -- [seconds=2] [block_kib=128]
//! ```
//!
//! Loopback numbers measure CPU cost per byte, not a network: both ends share
//! the machine's cores, and zero-copy sends are copied on delivery anyway.

use std::error::Error;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use plumb_net::host::CpuSnapshot;
use plumb_net::stream::{read_some, recv_trunc, write_some};
use plumb_net::zerocopy::{MemfdSource, ZeroCopySender};

#[derive(Clone, Copy, Debug)]
enum Sender {
    Write,
    ZeroCopy,
    Sendfile,
    Splice,
}

#[derive(Clone, Copy, Debug)]
enum Receiver {
    Read,
    Trunc,
}

fn pair() -> Result<(TcpStream, TcpStream), Box<dyn Error>> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let client = TcpStream::connect(listener.local_addr()?)?;
    let (server, _) = listener.accept()?;
    // A stuck run fails after this long instead of hanging.
    for s in [&client, &server] {
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.set_write_timeout(Some(Duration::from_secs(10)))?;
    }
    Ok((client, server))
}

/// Sends for `dur`; returns bytes sent.
fn send(kind: Sender, sock: TcpStream, block: usize, dur: Duration) -> std::io::Result<u64> {
    let payload: Vec<u8> = (0..block).map(|i| (i * 31) as u8).collect();
    let fd = sock.as_fd();
    let mut zc = match kind {
        Sender::ZeroCopy => Some(
            ZeroCopySender::new(fd, &payload, 8, 64, 2_000)
                .map_err(|e| std::io::Error::other(e.to_string()))?,
        ),
        _ => None,
    };
    let mut mf = match kind {
        Sender::Sendfile | Sender::Splice => Some(MemfdSource::new(&payload)?),
        _ => None,
    };
    let start = Instant::now();
    let mut sent = 0u64;
    let mut blocks = 0u64;
    loop {
        // Check the clock every 16 calls only, to keep it off the hot path.
        if blocks % 16 == 0 && start.elapsed() >= dur {
            break;
        }
        blocks += 1;
        let n = match (kind, zc.as_mut(), mf.as_mut()) {
            (Sender::Write, _, _) => write_some(fd, &payload)?,
            (Sender::ZeroCopy, Some(z), _) => z.send(fd, usize::MAX)?,
            (Sender::Sendfile, _, Some(m)) => m.sendfile(fd, usize::MAX)?,
            (Sender::Splice, _, Some(m)) => m.splice(fd, usize::MAX)?,
            _ => unreachable!("sender state matches its kind"),
        };
        sent += n as u64;
    }
    if let Some(z) = zc.as_mut() {
        z.drain(fd)?;
        eprintln!("    zerocopy: {:?}", z.stats());
    }
    Ok(sent)
}

/// Receives until EOF; returns bytes received.
fn receive(kind: Receiver, sock: &TcpStream, block: usize) -> std::io::Result<u64> {
    let mut buf = vec![0u8; block];
    let fd = sock.as_fd();
    let mut total = 0u64;
    loop {
        let n = match kind {
            Receiver::Read => read_some(fd, &mut buf)?,
            Receiver::Trunc => recv_trunc(fd, block)?,
        };
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

fn run(s: Sender, r: Receiver, block: usize, dur: Duration) -> Result<(), Box<dyn Error>> {
    let (client, server) = pair()?;
    let cpu0 = CpuSnapshot::take()?;
    let start = Instant::now();
    let sender = std::thread::spawn(move || send(s, client, block, dur));
    let got = receive(r, &server, block)?;
    let elapsed = start.elapsed();
    let sent = sender.join().map_err(|_| "sender thread panicked")??;
    let cpu = CpuSnapshot::take()?.usage_since(&cpu0, elapsed);
    assert_eq!(sent, got, "every byte sent must be received");
    let gbps = got as f64 * 8.0 / elapsed.as_secs_f64() / 1e9;
    println!(
        "{:<9} -> {:<6} {:>7.2} Gb/s  ({:.2} GB in {:.2} s, process CPU {:.0}%)",
        format!("{s:?}"),
        format!("{r:?}"),
        gbps,
        got as f64 / 1e9,
        elapsed.as_secs_f64(),
        cpu.process_total
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().map_or(Ok(2.0), |a| a.parse())?;
    let block_kib: usize = args.next().map_or(Ok(128), |a| a.parse())?;
    let dur = Duration::from_secs_f64(secs);
    let block = block_kib * 1024;
    println!("loopback TCP, {block_kib} KiB blocks, {secs} s per run");
    for s in [
        Sender::Write,
        Sender::ZeroCopy,
        Sender::Sendfile,
        Sender::Splice,
    ] {
        for r in [Receiver::Read, Receiver::Trunc] {
            run(s, r, block, dur)?;
        }
    }
    Ok(())
}
