//! The cost of one live sample with many connections (bench/live runs it):
//! opens N loopback connections (2N sockets), then times R full samples —
//! sock_diag dump of IPv4 and IPv6 TCP, decode, and a port filter over every
//! socket — in wall time and in this thread's CPU time (schedstat), and the
//! CPU of reading sockets again one by one (the lookup `plumb top` uses for
//! busy connections). Prints
//! one JSON line, then holds the connections until stdin closes so the
//! caller can time `ss -tin` and `plumb top` over the same sockets, with one
//! paced transfer of about 100 Mb/s running among them.
//!
//!     bench_sample N R
//!
//! The server ends live in a child process (`bench_sample serve N`), so
//! neither process needs more than N + a few descriptors.

use std::io::{BufRead, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use plumb_live::sys::Dumper;
use plumb_live::{Conn, Filter};

/// This thread's CPU time, ns, brought up to date (see
/// `plumb_net::host::thread_schedstat`: without the yield inside it, the
/// figure moved only at scheduler ticks, 4 ms here).
fn cpu_ns() -> u64 {
    plumb_net::host::thread_schedstat().map_or(0, |(run, _)| run)
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
    let keep = connect_all(port, n, &mut child);
    line.clear();
    from_child.read_line(&mut line).expect("accepted");
    // One more connection on a port of its own: what a `--port` filter on a
    // busy host looks for.
    let lone = TcpListener::bind("127.0.0.1:0").expect("bind");
    let lone_port = lone.local_addr().expect("addr").port();
    let lone_c = TcpStream::connect(lone.local_addr().expect("addr")).expect("connect");
    let lone_s = lone.accept().expect("accept");
    let m = measure(port, lone_port, reps);
    println!(
        "{{\"port\":{port},\"connections\":{n},\"sockets_matched\":{},\"samples\":{reps},\"wall_ms_median\":{:.2},\"cpu_ms_median\":{:.2},\"info_only_cpu_ms_median\":{:.2},\"one_port_cpu_ms_median\":{:.2},\"decode_cpu_ms_median\":{:.2},\"recv_buffers\":{},\"lookup_cpu_us_per_socket_of_2\":{:.1},\"lookup_cpu_us_per_socket_of_1000\":{:.1}}}",
        m.seen,
        m.wall,
        m.cpu,
        m.info_cpu,
        m.lone_cpu,
        m.decode_cpu,
        m.recv_buffers,
        m.lookup_2,
        m.lookup_1000
    );
    hold_with_transfer(lone_c, lone_s.0);
    drop(keep);
    drop(child.stdin.take());
    let _ = child.wait();
}

/// N connections to the child's port; the child is killed and the bench
/// ends when one cannot be opened.
fn connect_all(port: u16, n: usize, child: &mut std::process::Child) -> Vec<TcpStream> {
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
    keep
}

/// What one run measures: medians over R repetitions.
struct Measured {
    /// Sockets the full sample's filter kept.
    seen: usize,
    /// The full sample, wall and CPU, ms.
    wall: f64,
    cpu: f64,
    /// TCP_INFO alone, CPU ms.
    info_cpu: f64,
    /// One port filtered by the kernel, CPU ms.
    lone_cpu: f64,
    /// Decoding one dump's recorded bytes, CPU ms, and how many buffers.
    decode_cpu: f64,
    recv_buffers: usize,
    /// Reading sockets again by lookup, CPU µs per socket.
    lookup_2: f64,
    lookup_1000: f64,
}

fn med(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The samples, lookups and decode this bench times, with the server's
/// connections on `port` and one more on `lone_port`.
fn measure(port: u16, lone_port: u16, reps: usize) -> Measured {
    let filter = Filter {
        port: Some(port),
        ..Filter::default()
    };
    let mut d = Dumper::open().expect("sock_diag");
    let mut conns = Vec::new();
    // Every socket, everything asked for: the full sample.
    let (wall, cpu, seen) = time_samples(&mut d, &mut conns, &filter, reps);
    // TCP_INFO alone: what the rates need.
    d.ext = plumb_live::diag::ext::INFO;
    let (_, info_cpu, _) = time_samples(&mut d, &mut conns, &filter, reps);
    d.ext = plumb_live::diag::ext::ALL;
    // One port among the 10,000, filtered by the kernel.
    let lone_filter = Filter {
        port: Some(lone_port),
        ..Filter::default()
    };
    d.port = Some(lone_port);
    let (_, lone_cpu, lone_seen) = time_samples(&mut d, &mut conns, &lone_filter, reps);
    assert_eq!(
        lone_seen, 2,
        "the kernel's port filter kept the wrong sockets"
    );
    // The lone connection's two ends read again by lookup (what `plumb
    // top` does every interval for busy connections), and 1000 of the idle
    // ones: CPU per lookup, µs.
    d.dump_into(&mut conns).expect("dump");
    let lone_ends: Vec<_> = conns.clone();
    d.port = None;
    d.dump_into(&mut conns).expect("dump");
    let idle: Vec<_> = conns.iter().take(1000).copied().collect();
    let lookup_2 = lookup_cpu(&mut d, &lone_ends, reps);
    let lookup_1000 = lookup_cpu(&mut d, &idle, reps);
    let (decode_cpu, recv_buffers) = decode_cpu(&mut d, seen, reps);
    Measured {
        seen,
        wall,
        cpu,
        info_cpu,
        lone_cpu,
        decode_cpu,
        recv_buffers,
        lookup_2,
        lookup_1000,
    }
}

/// R samples as `plumb why`/`top` take them: median wall and CPU, ms,
/// and the sockets the filter kept.
fn time_samples(
    d: &mut Dumper,
    conns: &mut Vec<Conn>,
    f: &Filter,
    reps: usize,
) -> (f64, f64, usize) {
    let (mut walls, mut cpus, mut seen) = (Vec::new(), Vec::new(), 0);
    for _ in 0..reps {
        let (t, c) = (Instant::now(), cpu_ns());
        d.dump_into(conns).expect("dump");
        seen = conns.iter().filter(|c| f.matches(c, None)).count();
        cpus.push((cpu_ns() - c) as f64 / 1e6);
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (med(&mut walls), med(&mut cpus), seen)
}

/// The median CPU of reading `set` again by lookup, µs per socket.
fn lookup_cpu(d: &mut Dumper, set: &[Conn], reps: usize) -> f64 {
    let (mut found, mut gone) = (Vec::new(), Vec::new());
    let mut v = Vec::new();
    for _ in 0..reps {
        let c = cpu_ns();
        d.lookup(set, &mut found, &mut gone).expect("lookup");
        assert_eq!(found.len(), set.len(), "a lookup missed a socket");
        v.push((cpu_ns() - c) as f64 / 1e3 / set.len() as f64);
    }
    med(&mut v)
}

/// The decode alone, over one dump's recorded bytes: what of the sample
/// is plumb's own work rather than the kernel's. Median CPU ms, and the
/// number of receive buffers decoded.
fn decode_cpu(d: &mut Dumper, seen: usize, reps: usize) -> (f64, usize) {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut sink = Vec::new();
    for fam in plumb_live::diag::FAMILIES {
        d.dump_family(fam, |b| chunks.push(b.to_vec()), &mut sink)
            .expect("dump");
    }
    let mut parse_cpus = Vec::new();
    for _ in 0..reps {
        let c = cpu_ns();
        sink.clear();
        for b in &chunks {
            plumb_live::diag::parse_into(b, &mut sink);
        }
        assert!(sink.len() >= seen);
        parse_cpus.push((cpu_ns() - c) as f64 / 1e6);
    }
    (med(&mut parse_cpus), chunks.len())
}

/// One busy transfer among the idle ones, for `plumb top`: about
/// 100 Mb/s (64 KiB every 5 ms) from `tx` to `rx`, read by a second
/// thread; both stop when stdin closes, or after 10 minutes.
fn hold_with_transfer(mut tx: TcpStream, mut rx: TcpStream) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_w = stop.clone();
    let writer = std::thread::spawn(move || {
        let buf = vec![0u8; 64 << 10];
        let t0 = Instant::now();
        let mut k = 0u32;
        while !stop_w.load(std::sync::atomic::Ordering::Relaxed)
            && t0.elapsed().as_secs() < 600
            && tx.write_all(&buf).is_ok()
        {
            k += 1;
            let due = std::time::Duration::from_millis(5) * k;
            if let Some(w) = due.checked_sub(t0.elapsed()) {
                std::thread::sleep(w);
            }
        }
    });
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        while matches!(std::io::Read::read(&mut rx, &mut buf), Ok(n) if n > 0) {}
    });
    let _ = std::io::stdout().flush();
    // Hold the sockets until the caller is done with ss and plumb top.
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = writer.join();
    let _ = reader.join();
}
