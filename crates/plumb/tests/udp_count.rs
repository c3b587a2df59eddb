//! Reverse UDP tests with a block or byte count (`-k`, `-n`) against
//! `plumb -s` across a lab link that loses datagrams: a stock iperf3 client
//! ends such a test only when it has *received* its count, so the server must
//! make up what the link lost by sending on until the client's TEST_END.
//!
//! Needs root and /dev/net/tun (CI has both); elsewhere the test is recorded
//! as skipped (`plumb_testkit`). The lab is checked to leave nothing behind,
//! and every client run is killed at its time bound.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// A client command run again and again across one lab.
struct Runs {
    /// Names its documents and its lines in the run log.
    tag: &'static str,
    /// The client program.
    bin: String,
    /// Its flags after `-c ADDR -p PORT`.
    args: &'static str,
    runs: usize,
    /// The count: 1,024 datagrams (`-k 1K`) or 1 MiB (`-n 1M`).
    count: Count,
}

#[derive(Clone, Copy, Debug)]
enum Count {
    Blocks(u64),
    Bytes(u64),
}

/// The lab link's datagrams are at most 1,472 bytes (a 1500-byte MTU).
const MAX_DATAGRAM: u64 = 1472;

impl Count {
    /// 2 s plus the count's own time at the 1 Gbit/s the clients ask for:
    /// how long a run may take before it counts as hung.
    fn bound(self) -> Duration {
        let bytes = match self {
            Count::Blocks(n) => n * MAX_DATAGRAM,
            Count::Bytes(n) => n,
        };
        Duration::from_secs(2) + Duration::from_secs_f64(bytes as f64 * 8.0 / 1e9)
    }
}

/// The shell loop, run in "far", that runs `r` one run after another, each
/// killed at its bound, and appends `TAG RUN EXIT MILLISECONDS` to `log`.
fn loop_of(r: &Runs, dir: &std::path::Path, log: &std::path::Path) -> String {
    format!(
        "for i in $(seq {n}); do s=$(date +%s%N); \
         timeout -s KILL {bound:.3} {bin} -c $PLUMB_NEAR -p 5201 {args} -J > {dir}/{tag}.$i.json 2> {dir}/{tag}.$i.err; \
         rc=$?; e=$(date +%s%N); echo \"{tag} $i $rc $(( (e - s) / 1000000 ))\" >> {log}; done; ",
        n = r.runs,
        bound = r.count.bound().as_secs_f64(),
        bin = r.bin,
        args = r.args,
        dir = dir.display(),
        tag = r.tag,
        log = log.display(),
    )
}

/// The plumb server's `-J` documents, one per test, by cookie.
fn server_documents(path: &std::path::Path) -> std::collections::HashMap<String, Value> {
    let bytes = std::fs::read(path).unwrap_or_default();
    serde_json::Deserializer::from_slice(&bytes)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .filter_map(|d| Some((d["start"]["cookie"].as_str()?.to_string(), d)))
        .collect()
}

/// What one run's client document says, checked against its count and the
/// server's own document: the client received its count; the bytes it
/// received and the datagrams it lost add up to no more than the server
/// says it sent; the server counts whole datagrams, and told the client what
/// its own report says.
fn check_run(at: &str, doc: &Value, count: Count, server: &Value) {
    assert!(doc.get("error").is_none(), "{at}: {}", doc["error"]);
    let len = num(doc, "start.test_start.blksize");
    let (sent, sent_packets) = (
        num(doc, "end.sum_sent.bytes"),
        num(doc, "end.sum_sent.packets"),
    );
    let (got, seen, lost) = (
        num(doc, "end.sum_received.bytes"),
        num(doc, "end.sum_received.packets"),
        num(doc, "end.sum_received.lost_packets"),
    );
    let received = seen - lost;
    assert_eq!(got, received * len, "{at}: {received} datagrams of {len} B");
    match count {
        Count::Blocks(n) => assert!(received >= n as f64, "{at}: {received} of {n} datagrams"),
        Count::Bytes(n) => assert!(got >= n as f64, "{at}: {got} of {n} B"),
    }
    assert_eq!(sent, sent_packets * len, "{at}: sent {sent} B");
    assert!(
        seen <= sent_packets,
        "{at}: the client saw datagram {seen}, the server says it sent {sent_packets}"
    );
    assert_eq!(
        num(server, "end.sum_sent.bytes"),
        sent,
        "{at}: the server's own report"
    );
}

/// The emulator's "M dropped by the queue" of the near-to-far direction.
fn queue_drops(notes: &str) -> u64 {
    notes
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("Emulator near->far: ")?;
            let before = rest.split(" dropped by the queue").next()?;
            before.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no emulator counters in the lab's notes: {notes}"))
}

/// 50 runs in a row of the newest iperf3's `-k 1K -u -b1G -R` and of
/// `-n 1M -u -b1G -R` against `plumb -s` (and 10 of plumb's own client's
/// `-k 1K`) each end within 2 s plus the count's time at 1 Gbit/s, with
/// counts that agree, on a link that lost some of every run's datagrams.
///
/// The loss is a 100 Mbit/s link's one-BDP drop-tail queue overflowing
/// under the 1 Gbit/s the clients ask for: it drops datagrams only while
/// they flow. Random loss (`--loss`) would also drop the control
/// connection's SYN-ACK (its SYN is sent again 1 s later) and iperf3's one
/// UDP connect reply (the client then gives up on the stream), neither of
/// which has to do with the count. `-i 0.1`: iperf3 3.22's client looks at
/// its count when its interval timer wakes it, by default after a second,
/// which would make each run 1 s long. Without the newest iperf3
/// (`scripts/newest-iperf3` needs Debian's archive) Debian's iperf3 runs:
/// its client ends on the same condition.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a table of runs (tool, flags, count) over one lab link, then one check per row"
)]
fn reverse_udp_counts_end_across_a_lossy_link() {
    if !can_lab() {
        return;
    }
    let iperf3 = newest_iperf3().unwrap_or_else(|why| {
        eprintln!("{why}; running Debian's iperf3 instead");
        iperf3_bin()
    });
    let dir = TempDir::new("udp-count");
    let all = [
        Runs {
            tag: "k",
            bin: iperf3.to_string(),
            args: "-k 1K -u -b1G -R -i 0.1",
            runs: 50,
            count: Count::Blocks(1024),
        },
        Runs {
            tag: "n",
            bin: iperf3.to_string(),
            args: "-n 1M -u -b1G -R -i 0.1",
            runs: 50,
            count: Count::Bytes(1 << 20),
        },
        Runs {
            tag: "plumb-k",
            bin: plumb_bin().to_string(),
            args: "-k 1K -u -b1G -R",
            runs: 10,
            count: Count::Blocks(1024),
        },
    ];
    let log = dir.join("runs");
    let (ready, done) = (dir.join("ready"), dir.join("done"));
    let far_exec = format!(
        "for i in $(seq 200); do [ -e {ready} ] && break; sleep 0.05; done; {}touch {done}",
        all.iter()
            .map(|r| loop_of(r, &dir, &log))
            .collect::<String>(),
        ready = ready.display(),
        done = done.display(),
    );
    let near_exec = format!(
        "{plumb} -s -J -p 5201 > {dir}/server.json 2> {dir}/server.err & S=$!; \
         for i in $(seq 200); do ss -Hltn 'sport = :5201' | grep -q . && break; sleep 0.02; done; \
         touch {ready}; \
         for i in $(seq 3000); do [ -e {done} ] && break; sleep 0.1; done; \
         kill $S; wait $S",
        plumb = plumb_bin(),
        dir = dir.display(),
        ready = ready.display(),
        done = done.display(),
    );
    let args = [
        "lab",
        "--rate",
        "100m",
        "--rtt",
        "2ms",
        "--exec",
        &near_exec,
        "--far-exec",
        &far_exec,
    ];
    let (out, notes) = run_lab(&args, Duration::from_secs(400));
    assert!(out.status.success(), "plumb lab: {notes}");
    let drops = queue_drops(&notes);
    let lines = std::fs::read_to_string(&log).unwrap_or_default();
    let server = server_documents(&dir.join("server.json"));
    // The scenario first: the queue overflowed, and every run that wrote a
    // document lost datagrams (a run that hung lost some, or it would have
    // ended).
    let docs: Vec<(String, Option<Value>)> = lines
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let path = dir.join(format!("{}.{}.json", f[0], f[1]));
            let doc = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            (l.to_string(), doc)
        })
        .collect();
    let lossless: Vec<&String> = docs
        .iter()
        .filter(|(_, d)| {
            d.as_ref()
                .is_some_and(|d| d["end"]["sum_received"]["lost_packets"].as_f64() == Some(0.0))
        })
        .map(|(l, _)| l)
        .collect();
    if drops == 0 || !lossless.is_empty() {
        plumb_testkit::skip_premise!(
            "the link's queue dropped {drops} datagrams; runs that lost none: {lossless:?}"
        );
        return;
    }
    // Every run ended: the runs killed at their bound (exit 137) or failed.
    let failed: Vec<&String> = docs
        .iter()
        .map(|(l, _)| l)
        .filter(|l| l.split(' ').nth(2) != Some("0"))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} runs did not end well (TAG RUN EXIT MS; 137: killed at the bound, hung): {failed:?}",
        failed.len(),
        docs.len()
    );
    let mut slowest = Duration::ZERO;
    for r in &all {
        let mine: Vec<&(String, Option<Value>)> = docs
            .iter()
            .filter(|(l, _)| l.split(' ').next() == Some(r.tag))
            .collect();
        assert_eq!(
            mine.len(),
            r.runs,
            "{} ran {} times: {lines}",
            r.tag,
            mine.len()
        );
        for (line, doc) in mine {
            let f: Vec<&str> = line.split(' ').collect();
            let took = Duration::from_millis(f[3].parse().expect("ms"));
            let at = format!("{} run {} ({})", r.args, f[1], r.bin);
            assert!(took <= r.count.bound(), "{at} took {took:?}");
            slowest = slowest.max(took);
            let doc = doc.as_ref().unwrap_or_else(|| panic!("{at}: no document"));
            let cookie = doc["start"]["cookie"].as_str().unwrap_or_default();
            let theirs = server
                .get(cookie)
                .unwrap_or_else(|| panic!("{at}: no server document for {cookie}"));
            check_run(&at, doc, r.count, theirs);
        }
    }
    eprintln!(
        "{} runs ended, the slowest in {slowest:?}; the queue dropped {drops} datagrams ({iperf3})",
        docs.len()
    );
}
