//! The cost of one live sample with many connections (bench/live runs it):
//! opens N loopback connections (2N sockets), then times R full samples —
//! sock_diag dump of IPv4 and IPv6 TCP, decode, and a port filter over every
//! socket — in wall time and in this thread's CPU time (schedstat). Prints
//! one JSON line, then holds the connections until stdin closes so the
//! caller can time `ss -tin` over the same sockets.
//!
//!     bench_sample N R
//!
//! The server ends live in a child process (`bench_sample serve N`), so
//! neither process needs more than N + a few descriptors.

use std::io::{BufRead, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use plumb_live::sys::Dumper;
use plumb_live::Filter;

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The child: accepts N connections, says so, holds them until stdin closes.
fn serve(n: usize) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", l.local_addr().expect("addr").port());
    let _ = std::io::stdout().flush();
    let mut keep = Vec::with_capacity(n);
    for _ in 0..n {
        keep.push(l.accept().expect("accept").0);
    }
    println!("accepted");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next().unwrap_or_default();
    if first == "serve" {
        serve(args.next().and_then(|s| s.parse().ok()).unwrap_or(0));
        return;
    }
    let n: usize = first.parse().unwrap_or(10_000);
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let exe = std::env::current_exe().expect("exe");
    let mut child = std::process::Command::new(exe)
        .args(["serve", &n.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("server child");
    let mut from_child = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    from_child.read_line(&mut line).expect("port");
    let port: u16 = line.trim().parse().expect("port number");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut keep = Vec::with_capacity(n);
    for i in 0..n {
        match TcpStream::connect(addr) {
            Ok(c) => keep.push(c),
            Err(e) => {
                eprintln!("bench_sample: connection {i}: {e} (raise ulimit -n)");
                let _ = child.kill();
                std::process::exit(1);
            }
        }
    }
    line.clear();
    from_child.read_line(&mut line).expect("accepted");
    let filter = Filter {
        port: Some(port),
        ..Filter::default()
    };
    let mut d = Dumper::open().expect("sock_diag");
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let mut seen = 0;
    for _ in 0..reps {
        let (t, c) = (Instant::now(), cpu_ns());
        let conns = d.dump().expect("dump");
        seen = conns.iter().filter(|c| filter.matches(c, None)).count();
        cpus.push((cpu_ns() - c) as f64 / 1e6);
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The decode alone, over one dump's recorded bytes: what of the sample
    // is plumb's own work rather than the kernel's.
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut sink = Vec::new();
    for fam in plumb_live::diag::FAMILIES {
        d.dump_family(fam, |b| chunks.push(b.to_vec()), &mut sink)
            .expect("dump");
    }
    let mut parse_cpus = Vec::new();
    for _ in 0..reps {
        let c = cpu_ns();
        let n: usize = chunks
            .iter()
            .map(|b| plumb_live::diag::parse(b).conns.len())
            .sum();
        assert!(n >= seen);
        parse_cpus.push((cpu_ns() - c) as f64 / 1e6);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{{\"port\":{port},\"connections\":{n},\"sockets_matched\":{seen},\"samples\":{reps},\"wall_ms_median\":{:.2},\"cpu_ms_median\":{:.2},\"decode_cpu_ms_median\":{:.2}}}",
        med(&mut walls),
        med(&mut cpus),
        med(&mut parse_cpus)
    );
    let _ = std::io::stdout().flush();
    // Hold the sockets until the caller is done with ss.
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    drop(keep);
    drop(child.stdin.take());
    let _ = child.wait();
}
