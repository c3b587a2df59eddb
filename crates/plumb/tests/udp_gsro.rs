//! UDP with GSO/GRO (`--gsro`, iperf3 3.21+) and without (`--no-gsro`),
//! against the newest iperf3 (Debian sid's, unpacked by
//! `scripts/newest-iperf3`), and what every UDP result discloses
//! (`end.plumb.udp`, one text line).
//!
//! Loopback only (127.0.0.1); every process is killed when its handle drops.
mod common;

use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::{json, num, plumb_bin, port, run, Server};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

/// Records that a test did not run, and why (a counted skip, `plumb_testkit`):
/// the newest iperf3 comes from Debian's archive over the network, which a
/// machine may not reach, so its absence is never a failure.
fn skip(reason: &str) {
    plumb_testkit::skip!("{reason}");
}

/// The newest iperf3 ([`common::newest_iperf3`]) if it has `--gsro`
/// (3.21+), or why not.
fn newest_iperf3() -> Result<&'static str, &'static str> {
    static BIN: OnceLock<Result<&'static str, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = common::newest_iperf3().map_err(str::to_string)?;
        let help = Command::new(bin)
            .arg("--help")
            .output()
            .map_err(|e| format!("cannot run {bin}: {e}"))?;
        if !String::from_utf8_lossy(&help.stdout).contains("--gsro") {
            return Err(format!("{bin} has no --gsro (older than 3.21)"));
        }
        Ok(bin)
    })
    .as_ref()
    .copied()
    .map_err(String::as_str)
}

/// One 1 Gb/s measurement at a time: two in parallel on a 2-CPU machine
/// measure each other.
fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A value at a JSON path like `end.plumb.udp.gro`.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |cur, k| &cur[k])
}

/// Datagrams per GSO message a plumb sender reports: 128 where the kernel
/// takes that many (`UDP_MAX_SEGMENTS`, newer kernels), else its fallback 64.
fn gso_segments_taken(u: &Value) -> bool {
    matches!(u["gso_segments"].as_u64(), Some(64 | 128))
}

fn plumb_client(port: u16, args: &[&str]) -> Value {
    let p = port.to_string();
    let mut all = vec!["-c", "127.0.0.1", "-p", &p, "-u", "-J"];
    all.extend_from_slice(args);
    let out = run(plumb_bin(), &all, LIMIT);
    let v = json(&out, "plumb client");
    assert!(v.get("error").is_none(), "plumb client: {}", v["error"]);
    v
}

/// iperf3's client `-J` document against a server on `port`.
fn iperf3_client(bin: &str, port: u16, args: &[&str]) -> Value {
    let p = port.to_string();
    let mut all = vec!["-c", "127.0.0.1", "-p", &p, "-u", "-J"];
    all.extend_from_slice(args);
    let out = run(bin, &all, LIMIT);
    let v = json(&out, "iperf3 client");
    assert!(v.get("error").is_none(), "iperf3 client: {}", v["error"]);
    v
}

/// The kernel's cap on SO_RCVBUF requests.
fn rmem_max() -> u64 {
    std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `a` and `b` [`RUNS`] times each, alternating which goes first so
/// that drifting load hits both, and returns the least loss of each with
/// all the runs. A neighbour's burst of CPU only ever adds loss (on a
/// 2-CPU machine busy with other builds a single run of either tool lost
/// up to 22 %), so the best of three is the closest to the loss the path
/// itself has; a receiver that invents loss, as plumb's once did (50 % in
/// every run), shows it in every run.
const RUNS: usize = 3;
fn least_loss(
    mut a: impl FnMut() -> f64,
    mut b: impl FnMut() -> f64,
) -> (f64, f64, Vec<f64>, Vec<f64>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..RUNS {
        if i % 2 == 0 {
            xs.push(a());
            ys.push(b());
        } else {
            ys.push(b());
            xs.push(a());
        }
    }
    let least = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    (least(&xs), least(&ys), xs, ys)
}

/// The case the bug report measured: a stock iperf3 `--gsro` client at 64 B
/// and 1 Gb/s coalesces 128 datagrams per GSO message, which a GRO receiver
/// reads whole (8 KiB); plumb's slots were 4 KiB and it reported 50 % loss.
/// Both servers now report the same loss, within a percentage point
/// (the least of three alternating runs each).
///
/// `-w 4M` on the client gives both servers the same socket buffers
/// (plumb's default; iperf3 keeps the system default, 208 KiB here, and
/// with it a busy 2-CPU machine drops 20-40 % in iperf3's own server):
/// what is compared is the counting, not the buffer sizes.
#[test]
fn an_iperf3_gsro_client_sees_the_same_loss_from_plumb_as_from_iperf3() {
    let iperf3 = match newest_iperf3() {
        Ok(b) => b,
        Err(why) => return skip(why),
    };
    let _one = exclusive();
    let args = ["--gsro", "-l", "64", "-b", "1G", "-t", "2", "-w", "4M"];
    let theirs_srv = Server::start(iperf3, &["-s"], port());
    let ours_srv = Server::start(plumb_bin(), &["-s"], port());
    let loss = |port: u16| {
        let v = iperf3_client(iperf3, port, &args);
        let packets = num(&v, "end.sum.packets");
        assert!(packets > 100_000.0, "only {packets} datagrams counted");
        num(&v, "end.sum.lost_percent")
    };
    let (ours, theirs, all_ours, all_theirs) =
        least_loss(|| loss(ours_srv.port), || loss(theirs_srv.port));
    assert!(
        (ours - theirs).abs() <= 1.0,
        "least loss into plumb -s {ours:.2} % ({all_ours:?}) vs into iperf3 -s \
         {theirs:.2} % ({all_theirs:?})"
    );
    drop((theirs_srv, ours_srv));

    // The plumb server says what it did: GRO on, as the client asked, with
    // jitter per coalesced read and no read cut short.
    let srv = Server::start(plumb_bin(), &["-s", "-1", "-J"], port());
    iperf3_client(iperf3, srv.port, &args);
    let server_doc = json(&srv.finish(LIMIT), "plumb server");
    let u = at(&server_doc, "end.plumb.udp");
    assert_eq!(u["gsro"], true, "{u}");
    assert_eq!(u["gro"], true, "{u}");
    assert_eq!(u["jitter_resolution"], "gro_batch", "{u}");
    assert_eq!(u["receive_poll_us"], 50, "{u}");
    assert_eq!(u["truncated_reads"], 0, "{u}");
    assert_eq!(
        u["gso_segments"],
        Value::Null,
        "iperf3 does not report it: {u}"
    );
    assert_eq!(u["gso_segments_asked"], 128, "{u}");
}

/// plumb's `--gsro` asks an iperf3 3.21+ server for GSO and GRO with
/// iperf3's own keys, and that server turns them on (its `test_start` says
/// so); plumb sends 128 datagrams per GSO message (64 where the kernel
/// refuses 128). With `-R` the server
/// sends GSO messages and plumb reads them with GRO, reporting the loss
/// iperf3's own `--gsro -R` client reports, within a percentage point (the
/// least of three alternating runs each).
#[test]
fn plumb_gsro_against_an_iperf3_server_negotiates_gso_and_gro() {
    let iperf3 = match newest_iperf3() {
        Ok(b) => b,
        Err(why) => return skip(why),
    };
    let _one = exclusive();
    let srv = Server::start(iperf3, &["-s", "-1", "-J"], port());
    let ours = plumb_client(
        srv.port,
        &["--gsro", "-l", "64", "-b", "1G", "-t", "2", "-w", "4M"],
    );
    let theirs = json(&srv.finish(LIMIT), "iperf3 server");
    assert_eq!(num(&theirs, "start.test_start.gso"), 1.0);
    assert_eq!(num(&theirs, "start.test_start.gro"), 1.0);
    let u = at(&ours, "end.plumb.udp");
    assert_eq!(u["gsro"], true, "{u}");
    assert!(gso_segments_taken(u), "{u}");
    assert_eq!(u["gro"], Value::Null, "iperf3 does not report it: {u}");
    assert_eq!(u["receive_poll_us"], Value::Null, "nor this: {u}");
    let packets = num(&ours, "end.sum.packets");
    assert!(packets > 100_000.0, "only {packets} datagrams");
    // What iperf3's server counted is what plumb's client reports (the
    // server's own document may add datagrams that were still in flight).
    let counted = num(&theirs, "end.sum.packets");
    assert!(
        (counted - packets).abs() <= 0.01 * packets,
        "iperf3 server counted {counted} datagrams, plumb's client reports {packets}"
    );

    let srv = Server::start(iperf3, &["-s"], port());
    let args = [
        "--gsro", "-R", "-l", "64", "-b", "1G", "-t", "2", "-w", "4M",
    ];
    let mut last = Value::Null;
    let (ours, theirs, all_ours, all_theirs) = least_loss(
        || {
            last = plumb_client(srv.port, &args);
            assert!(num(&last, "end.sum.packets") > 100_000.0);
            num(&last, "end.sum.lost_percent")
        },
        || {
            num(
                &iperf3_client(iperf3, srv.port, &args),
                "end.sum.lost_percent",
            )
        },
    );
    assert!(
        (ours - theirs).abs() <= 1.0,
        "-R: least loss at plumb's GRO receiver {ours:.2} % ({all_ours:?}) vs at \
         iperf3's {theirs:.2} % ({all_theirs:?})"
    );
    let u = at(&last, "end.plumb.udp");
    assert_eq!(
        (&u["gro"], &u["truncated_reads"]),
        (&Value::Bool(true), &Value::from(0)),
        "{u}"
    );
    assert_eq!(u["jitter_resolution"], "gro_batch", "{u}");
}

/// `--no-gsro` (the default) moves one datagram per message and takes each
/// datagram's arrival time from the kernel; `--gsro` between two plumbs uses
/// 128-datagram GSO messages (64 on kernels that refuse 128) and GRO. Both ends' facts are in `end.plumb`,
/// and the text output says the same in one line.
#[test]
fn plumb_to_plumb_discloses_gso_gro_jitter_and_buffers() {
    let _one = exclusive();
    let srv = Server::start(plumb_bin(), &["-s"], port());
    for flags in [&[][..], &["--no-gsro"][..]] {
        let mut args = vec!["-l", "64", "-b", "100M", "-t", "1"];
        args.extend_from_slice(flags);
        let v = plumb_client(srv.port, &args);
        let u = at(&v, "end.plumb.udp");
        assert_eq!(u["gsro"], false, "{flags:?}: {u}");
        assert_eq!(u["gso_segments"], 1, "{flags:?}: {u}");
        assert_eq!(u["gro"], false, "{flags:?}: {u}");
        assert_eq!(u["jitter_resolution"], "datagram", "{flags:?}: {u}");
        assert_eq!(u["receive_poll_us"], 50, "{flags:?}: {u}");
        assert_eq!(u["truncated_reads"], 0, "{flags:?}: {u}");
        assert!(u["socket_drops"].is_u64(), "{flags:?}: {u}");
        assert_eq!(u["socket_buffer_requested"], 4 << 20, "{flags:?}: {u}");
        // Each end's own facts travel too.
        assert_eq!(at(&v, "end.plumb.local.udp.gso_segments"), 1);
        assert_eq!(at(&v, "end.plumb.remote.udp.gro"), false);
        assert!(num(&v, "end.sum.packets") > 1_000.0);
    }

    let v = plumb_client(srv.port, &["--gsro", "-l", "64", "-b", "100M", "-t", "1"]);
    let u = at(&v, "end.plumb.udp");
    assert_eq!(u["gsro"], true, "{u}");
    assert!(gso_segments_taken(u), "{u}");
    let segs = u["gso_segments"].clone();
    assert_eq!(u["gso_segments_asked"], 128, "{u}");
    assert_eq!(u["gro"], true, "{u}");
    assert_eq!(u["jitter_resolution"], "gro_batch", "{u}");
    assert_eq!(num(&v, "end.sum.lost_percent"), 0.0, "paced at 100M: {u}");
    assert_eq!(u["socket_drops"], 0, "{u}");

    // -w is what is asked for; the kernel reports twice what it grants.
    let v = plumb_client(
        srv.port,
        &["-w", "1M", "-l", "1000", "-b", "10M", "-t", "1"],
    );
    let u = at(&v, "end.plumb.udp");
    assert_eq!(u["socket_buffer_requested"], 1 << 20, "{u}");
    if rmem_max() >= 1 << 20 {
        assert_eq!(u["rcvbuf_granted"], 2 << 20, "{u}");
        assert_eq!(u["sndbuf_granted"], 2 << 20, "{u}");
    }

    let p = srv.port.to_string();
    let out = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-u",
            "--gsro",
            "-l",
            "64",
            "-b",
            "10M",
            "-t",
            "1",
        ],
        LIMIT,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("UDP --gsro: "))
        .unwrap_or_else(|| panic!("no UDP disclosure line in:\n{text}"));
    // The text names what the JSON reported for the same kind of run.
    let gso = format!("GSO {segs} datagrams/message");
    for part in [
        gso.as_str(),
        "GRO on",
        "jitter per GRO read",
        "receiver polls 50 µs before it sleeps",
        "0 truncated reads",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }
}

/// As iperf3: `--gsro` is the client's to ask, and it is about UDP.
#[test]
fn gsro_is_a_udp_client_flag() {
    let out = run(plumb_bin(), &["-s", "--gsro", "-p", "1"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "--gsro", "-p", "1"],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--gsro applies to UDP"), "{err}");
}
