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

/// Says a test did not run, and why. One place, so that a counted-skip
/// mechanism can take these over.
fn skip(reason: &str) {
    eprintln!("SKIPPED: {reason}");
}

/// The newest iperf3 with `--gsro` (3.21+), from `scripts/newest-iperf3`
/// (which downloads Debian sid's packages the first time), or why not.
fn newest_iperf3() -> Result<&'static str, &'static str> {
    static BIN: OnceLock<Result<String, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/newest-iperf3");
        let out = run(script, &[], Duration::from_secs(300));
        if !out.status.success() {
            return Err(format!(
                "no iperf3 with --gsro: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let bin = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let help = Command::new(&bin)
            .arg("--help")
            .output()
            .map_err(|e| format!("cannot run {bin}: {e}"))?;
        if !String::from_utf8_lossy(&help.stdout).contains("--gsro") {
            return Err(format!("{bin} has no --gsro (older than 3.21)"));
        }
        Ok(bin)
    })
    .as_ref()
    .map(String::as_str)
    .map_err(String::as_str)
}

/// A value at a JSON path like `end.plumb.udp.gro`.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |cur, k| &cur[k])
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

/// The case the bug report measured: a stock iperf3 `--gsro` client at 64 B
/// and 1 Gb/s coalesces 128 datagrams per GSO message, which a GRO receiver
/// reads whole (8 KiB); plumb's slots were 4 KiB and it reported 50 % loss.
/// Both servers now report the same loss, within a percentage point.
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
    let args = ["--gsro", "-l", "64", "-b", "1G", "-t", "2", "-w", "4M"];
    let theirs = {
        let _srv = Server::start(iperf3, &["-s", "-1"], port(29_000));
        iperf3_client(iperf3, _srv.port, &args)
    };
    let srv = Server::start(plumb_bin(), &["-s", "-1", "-J"], port(29_000));
    let ours = iperf3_client(iperf3, srv.port, &args);
    let server_doc = json(&srv.finish(LIMIT), "plumb server");

    let loss_theirs = num(&theirs, "end.sum.lost_percent");
    let loss_ours = num(&ours, "end.sum.lost_percent");
    let packets = num(&ours, "end.sum.packets");
    assert!(packets > 100_000.0, "only {packets} datagrams counted");
    assert!(
        (loss_ours - loss_theirs).abs() <= 1.0,
        "loss into plumb -s {loss_ours:.2} % vs into iperf3 -s {loss_theirs:.2} %"
    );
    // The plumb server says what it did: GRO on, as the client asked, with
    // jitter per coalesced read and no read cut short.
    let u = at(&server_doc, "end.plumb.udp");
    assert_eq!(u["gsro"], true, "{u}");
    assert_eq!(u["gro"], true, "{u}");
    assert_eq!(u["jitter_resolution"], "gro_batch", "{u}");
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
/// so); plumb sends 64 datagrams per GSO message. With `-R` the server
/// sends GSO messages and plumb reads them with GRO, losing none.
#[test]
fn plumb_gsro_against_an_iperf3_server_negotiates_gso_and_gro() {
    let iperf3 = match newest_iperf3() {
        Ok(b) => b,
        Err(why) => return skip(why),
    };
    let srv = Server::start(iperf3, &["-s", "-1", "-J"], port(29_000));
    let ours = plumb_client(
        srv.port,
        &["--gsro", "-l", "64", "-b", "1G", "-t", "2", "-w", "4M"],
    );
    let theirs = json(&srv.finish(LIMIT), "iperf3 server");
    assert_eq!(num(&theirs, "start.test_start.gso"), 1.0);
    assert_eq!(num(&theirs, "start.test_start.gro"), 1.0);
    let u = at(&ours, "end.plumb.udp");
    assert_eq!(u["gsro"], true, "{u}");
    assert_eq!(u["gso_segments"], 64, "{u}");
    assert_eq!(u["gro"], Value::Null, "iperf3 does not report it: {u}");
    let packets = num(&ours, "end.sum.packets");
    assert!(packets > 100_000.0, "only {packets} datagrams");
    // What iperf3's server received is what plumb's client reports.
    assert_eq!(
        num(&theirs, "end.sum.packets"),
        packets,
        "iperf3 server and plumb client disagree on the datagrams"
    );

    let srv = Server::start(iperf3, &["-s", "-1"], port(29_000));
    let rev = plumb_client(
        srv.port,
        &[
            "--gsro", "-R", "-l", "64", "-b", "1G", "-t", "2", "-w", "4M",
        ],
    );
    let u = at(&rev, "end.plumb.udp");
    assert_eq!(
        (&u["gro"], &u["truncated_reads"]),
        (&Value::Bool(true), &Value::from(0)),
        "{u}"
    );
    assert_eq!(u["jitter_resolution"], "gro_batch", "{u}");
    assert!(num(&rev, "end.sum.packets") > 100_000.0);
    let loss = num(&rev, "end.sum.lost_percent");
    assert!(
        loss < 1.0,
        "plumb's GRO receiver lost {loss:.2} % from iperf3's GSO sender"
    );
}

/// `--no-gsro` (the default) moves one datagram per message and takes each
/// datagram's arrival time from the kernel; `--gsro` between two plumbs uses
/// 64-datagram GSO messages and GRO. Both ends' facts are in `end.plumb`,
/// and the text output says the same in one line.
#[test]
fn plumb_to_plumb_discloses_gso_gro_jitter_and_buffers() {
    let srv = Server::start(plumb_bin(), &["-s"], port(29_000));
    for flags in [&[][..], &["--no-gsro"][..]] {
        let mut args = vec!["-l", "64", "-b", "100M", "-t", "1"];
        args.extend_from_slice(flags);
        let v = plumb_client(srv.port, &args);
        let u = at(&v, "end.plumb.udp");
        assert_eq!(u["gsro"], false, "{flags:?}: {u}");
        assert_eq!(u["gso_segments"], 1, "{flags:?}: {u}");
        assert_eq!(u["gro"], false, "{flags:?}: {u}");
        assert_eq!(u["jitter_resolution"], "datagram", "{flags:?}: {u}");
        assert_eq!(u["truncated_reads"], 0, "{flags:?}: {u}");
        assert_eq!(u["socket_buffer_requested"], 4 << 20, "{flags:?}: {u}");
        // Each end's own facts travel too.
        assert_eq!(at(&v, "end.plumb.local.udp.gso_segments"), 1);
        assert_eq!(at(&v, "end.plumb.remote.udp.gro"), false);
        assert!(num(&v, "end.sum.packets") > 1_000.0);
    }

    let v = plumb_client(srv.port, &["--gsro", "-l", "64", "-b", "100M", "-t", "1"]);
    let u = at(&v, "end.plumb.udp");
    assert_eq!(u["gsro"], true, "{u}");
    assert_eq!(u["gso_segments"], 64, "{u}");
    assert_eq!(u["gso_segments_asked"], 64, "{u}");
    assert_eq!(u["gro"], true, "{u}");
    assert_eq!(u["jitter_resolution"], "gro_batch", "{u}");
    assert_eq!(num(&v, "end.sum.lost_percent"), 0.0, "paced at 100M: {u}");

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
    for part in [
        "GSO 64 datagrams/message",
        "GRO on",
        "jitter per GRO read",
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
