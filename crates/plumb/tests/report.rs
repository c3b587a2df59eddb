//! `plumb report` and `--report`: pages built from recorded documents of
//! plumb and iperf3 3.12 and 3.22, opened in a real browser (Debian's headless
//! Chromium, driven by `scripts/report-browser-check` with the network cut),
//! and hostile input. Without Chromium the browser checks are counted as
//! skipped (`plumb_testkit`), unless `PLUMB_REQUIRE_TOOLS=1` (as `scripts/test`
//! sets, after installing it) makes that a failure. The demo's report needs root and
//! /dev/net/tun; its screenshot is kept as `target/report-demo.png`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../report/tests/fixtures");
const CHECK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scripts/report-browser-check"
);
const TARGET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target");

/// One test at a time: Chromium and the demo's lab each want the two CPUs.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("plumb-report-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether Chromium is on PATH. When not, the calling test is recorded as
/// skipped once (`plumb_testkit`; a failure under `PLUMB_REQUIRE_TOOLS=1`,
/// as `scripts/test` sets after installing it), however often it asks.
fn have_browser() -> bool {
    let found = ["chromium", "chromium-browser"].iter().any(|b| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(b).exists()))
    });
    if !found {
        static RECORDED: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let test = std::thread::current().name().unwrap_or("?").to_string();
        let mut recorded = RECORDED.lock().unwrap_or_else(|e| e.into_inner());
        if !recorded.contains(&test) {
            recorded.push(test);
            plumb_testkit::skip_tool!(
                "no chromium on PATH (scripts/test installs it: apt-get install -y chromium)"
            );
        }
    }
    found
}

/// Writes a report of `files`, checking the command's exit and message.
fn report(files: &[String], out: &str) -> String {
    let mut args: Vec<&str> = vec!["report"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", out]);
    let o = run(plumb_bin(), &args, Duration::from_secs(30));
    assert!(
        o.status.success(),
        "plumb report failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).expect("the report was written")
}

/// What the page holds, counted in its source: the browser must render as many.
fn counts(html: &str) -> (usize, usize) {
    (
        html.matches("<svg class=\"chart\"").count(),
        html.matches("class=\"series ").count() - html.matches("<line class=\"series ").count(),
    )
}

/// What Chromium or the check could leave in the temp dir: Chromium's
/// `org.chromium.*` directories and the check's `plumb-chromium-*` scratch.
fn chromium_litter() -> std::collections::BTreeSet<String> {
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("org.chromium.") || n.starts_with("plumb-chromium-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `scripts/report-browser-check` (the command `c`) and asserts that it
/// left nothing new in the temp dir, whatever it found. A new entry must
/// still be there a moment later to count: a Chromium another program runs
/// at the same time (one that exits normally removes its own) is not this
/// check's litter, and what the check leaves stays.
fn run_check(c: &mut Command) -> std::process::Output {
    let before = chromium_litter();
    let o = c.output().expect("python3 runs the browser check");
    let mut left: Vec<String> = chromium_litter().difference(&before).cloned().collect();
    if !left.is_empty() {
        std::thread::sleep(Duration::from_secs(2));
        let now = chromium_litter();
        left.retain(|n| now.contains(n));
    }
    assert!(
        left.is_empty(),
        "the browser check left {left:?} in {}",
        std::env::temp_dir().display()
    );
    o
}

/// Runs the browser check; `None` when it was skipped.
fn browse(
    page: &str,
    charts: usize,
    series: usize,
    texts: &[&str],
    shot: Option<&str>,
    extra: &[&str],
) -> Option<Value> {
    if !have_browser() {
        return None;
    }
    let mut c = Command::new("python3");
    c.arg(CHECK).arg(page);
    c.args([
        "--charts",
        &charts.to_string(),
        "--series",
        &series.to_string(),
    ]);
    for t in texts {
        c.args(["--text", t]);
    }
    if let Some(s) = shot {
        c.args(["--screenshot", s, "--screenshot-height", "2600"]);
    }
    c.args(extra);
    let o = run_check(&mut c);
    let line = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "browser check failed ({:?}): {line}",
        o.status.code()
    );
    Some(serde_json::from_str(line.trim()).expect("the check prints one JSON line"))
}

#[test]
fn lab_run_report_renders_with_verdict_and_every_chart() {
    let _one = serial();
    let dir = Scratch::new("lab");
    let out = dir.path("lab.html");
    let html = report(&[fixture("plumb-lab-rwin.json")], &out);
    // One sending stream: throughput (stream + prediction), windows (cwnd +
    // receiver's), RTT, retransmits, limited share (rwnd + sndbuf).
    assert_eq!(counts(&html), (5, 8));
    assert!(html.contains("Lab link (emulated)") && html.contains("net.ipv4.tcp_rmem"));
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "the page links nothing"
    );
    if let Some(seen) = browse(
        &out,
        5,
        8,
        &[
            "Limited by the receive window",
            "What to change",
            "expect about 941 Mbit/s",
        ],
        None,
        &[],
    ) {
        assert!(seen["chart_colours"].as_u64().unwrap_or(0) >= 5, "{seen}");
        assert_eq!(seen["background"], "rgb(255, 255, 255)", "{seen}");
        // The same page for a reader who prefers dark: a dark background, charts still drawn.
        // Printed, it is A4 (the check fails otherwise).
        let dark = browse(
            &out,
            5,
            8,
            &["Limited by the receive window"],
            None,
            &["--dark", "--pdf"],
        )
        .expect("the browser ran a moment ago");
        assert_eq!(dark["background"], "rgb(21, 24, 28)", "{dark}");
        assert!(dark["pdf_pages"].as_u64().unwrap_or(0) >= 1, "{dark}");
        assert!(dark["chart_colours"].as_u64().unwrap_or(0) >= 5, "{dark}");
    }
}

#[test]
fn iperf3_and_json_stream_reports_render() {
    let _one = serial();
    let dir = Scratch::new("iperf3");
    for (name, streams) in [
        ("iperf3-3.12-p2.json", 2),
        ("iperf3-3.12-reverse.json", 1),
        ("iperf3-3.22-p2.json", 2),
        ("iperf3-3.22-reverse.json", 1),
        ("iperf3-3.22-udp.json", 1),
        ("iperf3-3.22-stream.jsonl", 1),
        ("plumb-stream.jsonl", 1),
        ("plumb-p2.json", 2),
    ] {
        let out = dir.path(&format!("{name}.html"));
        let html = report(&[fixture(name)], &out);
        let (charts, series) = counts(&html);
        assert!(
            charts >= 1 && series >= streams,
            "{name}: {charts} charts, {series} series"
        );
        if name.starts_with("iperf3") {
            // What iperf3 does not record is said, not drawn empty.
            assert!(html.contains("Not in this document"), "{name}");
            assert!(!html.contains("data-chart=\"limited\""), "{name}");
        } else {
            assert!(html.contains("data-chart=\"limited\""), "{name}");
        }
        // iperf3 keeps only its own system; the page says the far one is missing.
        let mut texts = vec!["Throughput over time", "Test configuration"];
        if name.starts_with("iperf3") {
            texts.push("not recorded: iperf3 does not exchange the hosts");
        }
        browse(&out, charts, series, &texts, None, &[]);
    }
}

#[test]
fn comparison_overlays_runs_and_sets_verdicts_side_by_side() {
    let _one = serial();
    let dir = Scratch::new("cmp");
    let out = dir.path("cmp.html");
    let html = report(
        &[
            fixture("plumb-lab-rwin.json"),
            fixture("iperf3-3.12-p2.json"),
        ],
        &out,
    );
    assert!(html.contains("data-chart=\"compare\""));
    assert_eq!(html.matches("<article class=\"run\">").count(), 2);
    let (charts, series) = counts(&html);
    browse(
        &out,
        charts,
        series,
        &[
            "Compared",
            "plumb-lab-rwin.json",
            "iperf3-3.12-p2.json",
            "Limited by the receive window",
        ],
        None,
        &[],
    );
}

#[test]
fn the_browser_check_catches_requests_and_console_errors() {
    let _one = serial();
    if !have_browser() {
        return;
    }
    let dir = Scratch::new("bad");
    let page = dir.path("bad.html");
    // A loopback port nothing listens on; the check cuts the network anyway.
    std::fs::write(
        &page,
        "<!DOCTYPE html><p>x</p><img src=\"http://127.0.0.1:9/x.png\"><script>console.error('boom')</script>",
    )
    .expect("write");
    let o = run_check(Command::new("python3").args([CHECK, &page, "--charts", "0"]));
    let line = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{line}");
    assert!(
        line.contains("requests attempted") && line.contains("boom"),
        "{line}"
    );
}

#[test]
fn bad_documents_exit_2_and_leave_no_file() {
    let _one = serial();
    let dir = Scratch::new("hostile");
    let good = std::fs::read_to_string(fixture("plumb-p2.json")).expect("fixture");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated.json", good.as_bytes()[..good.len() / 2].to_vec()),
        ("empty.json", Vec::new()),
        ("garbage.json", vec![0xff, 0x00, 0x13, 0x37]),
        ("array.json", b"[1,2,3]".to_vec()),
        ("nostart.json", br#"{"intervals":[]}"#.to_vec()),
        (
            "error.json",
            br#"{"start":{},"error":"unable to connect"}"#.to_vec(),
        ),
        (
            "badinterval.json",
            br#"{"start":{},"intervals":[{"streams":[{"socket":1}]}]}"#.to_vec(),
        ),
    ];
    for (name, bytes) in cases {
        let input = dir.path(name);
        std::fs::write(&input, bytes).expect("write");
        let out = dir.path("out.html");
        let o = run(
            plumb_bin(),
            &["report", &input, "-o", &out],
            Duration::from_secs(10),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(
            err.contains(name),
            "{name}: the error names the file: {err}"
        );
        assert!(!Path::new(&out).exists(), "{name}: no output file");
        // Nor a temporary one.
        let left: Vec<_> = std::fs::read_dir(&dir.0)
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
    }
    // A good file among bad ones writes nothing either, and an existing
    // report is left as it was.
    let out = dir.path("kept.html");
    std::fs::write(&out, "old").expect("write");
    let o = run(
        plumb_bin(),
        &[
            "report",
            &fixture("plumb-p2.json"),
            &dir.path("truncated.json"),
            "-o",
            &out,
        ],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "old");
    // A missing file and an unwritable output.
    let o = run(
        plumb_bin(),
        &["report", &dir.path("nope.json")],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    let o = run(
        plumb_bin(),
        &[
            "report",
            &fixture("plumb-p2.json"),
            "-o",
            &dir.path("no/such/dir.html"),
        ],
        Duration::from_secs(10),
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim().lines().count(), 1);
}

#[test]
fn client_report_flag_writes_the_page() {
    let _one = serial();
    let dir = Scratch::new("client");
    let port = port();
    let server = Server::start(plumb_bin(), &["-s", "-1"], port);
    let out = dir.path("client.html");
    let o = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-t",
            "2",
            "--report",
            &out,
        ],
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).expect("report written");
    assert!(html.contains("data-chart=\"throughput\"") && html.contains("data-chart=\"limited\""));
    // The far plumb server sent its system: this machine's, as both ends run here.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let far = html
        .split("<tr><td>the far host (server)</td><td>")
        .nth(1)
        .and_then(|r| r.split("</td>").next())
        .expect("a far host row");
    assert!(
        far.starts_with("Linux ") && far.contains(release.trim()),
        "{far}"
    );
    assert!(html.contains("<th>this host (client)</th><th>far host (server)</th>"));
    let o = run(
        plumb_bin(),
        &["-s", "--report", &out],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn demo_report_shows_before_and_after() {
    let _one = serial();
    if !can_lab() {
        return;
    }
    let dir = Scratch::new("demo");
    let out = dir.path("demo.html");
    let o = run(
        plumb_bin(),
        &["demo", "-t", "3", "--report", &out],
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).expect("demo report written");
    assert!(html.contains("data-chart=\"compare\""));
    assert_eq!(html.matches("<article class=\"run\">").count(), 2);
    // Both runs measured: each has its own throughput chart.
    assert_eq!(
        html.matches("data-chart=\"throughput\"").count(),
        2,
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let (charts, series) = counts(&html);
    // Each run's verdict, whatever this busy machine made of it, must be on screen.
    let verdicts: Vec<String> = html
        .split("<p class=\"summary\">")
        .skip(1)
        .filter_map(|v| v.split("</p>").next())
        .map(|v| v.replace("&#39;", "'").replace("&amp;", "&"))
        .collect();
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    let mut texts = vec!["before: 17,520-byte window", "after: autotuned window"];
    texts.extend(verdicts.iter().map(String::as_str));
    let shot = format!("{TARGET}/report-demo.png");
    if let Some(seen) = browse(&out, charts, series, &texts, Some(&shot), &["--pdf"]) {
        assert!(seen["chart_colours"].as_u64().unwrap_or(0) >= 5, "{seen}");
        assert!(std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0) > 10_000);
    }
}

#[test]
fn why_from_a_saved_document_writes_its_report() {
    let _one = serial();
    let dir = Scratch::new("why");
    let out = dir.path("why.html");
    let o = run(
        plumb_bin(),
        &[
            "why",
            "--from",
            &fixture("plumb-lab-rwin.json"),
            "--report",
            &out,
        ],
        Duration::from_secs(20),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let html = std::fs::read_to_string(&out).expect("report written");
    // The page's verdict is the one plumb why printed.
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("Limited by"), "{text}");
    assert!(html.contains(&first.replace('\'', "&#39;")), "{first}");
}

#[test]
fn lab_report_flag_shows_the_link() {
    let _one = serial();
    if !can_lab() {
        return;
    }
    let dir = Scratch::new("labflag");
    let out = dir.path("lab.html");
    let o = run(
        plumb_bin(),
        &[
            "lab", "--rate", "100m", "--rtt", "10ms", "--report", &out, "--", "-t", "2",
        ],
        Duration::from_secs(90),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).expect("report written");
    assert!(html.contains("Lab link (emulated)") && html.contains("100 Mbit/s"));
    // Both ends are this machine, each in its namespace, each with a system line.
    for side in ["client (this machine, near", "server (this machine, far"] {
        let row = html
            .split(&format!("<tr><td>{side} namespace of the lab)</td><td>"))
            .nth(1)
            .and_then(|r| r.split("</td>").next())
            .unwrap_or_else(|| panic!("no row for {side}"));
        assert!(row.starts_with("Linux "), "{side}: {row}");
    }
    assert!(html.contains("<p class=\"summary\">"), "a verdict");
    assert!(html.contains("data-chart=\"throughput\""));
    let o = run(
        plumb_bin(),
        &[
            "lab", "--rate", "1g", "--rtt", "1ms", "--hold", "--report", &out,
        ],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2), "--report and --hold conflict");
}

/// The verdict lines of a page (`<p class="summary">`), as the reader sees them.
fn summaries(html: &str) -> Vec<String> {
    html.split("<p class=\"summary\">")
        .skip(1)
        .filter_map(|v| v.split("</p>").next())
        .map(|v| {
            v.replace("&#39;", "'")
                .replace("&gt;", ">")
                .replace("&lt;", "<")
                .replace("&amp;", "&")
        })
        .collect()
}

/// The series drawn in the chart `id` of a page.
fn series_in(html: &str, id: &str) -> usize {
    html.split(&format!("data-chart=\"{id}\""))
        .nth(1)
        .and_then(|c| c.split("</svg>").next())
        .map_or(0, |c| c.matches("data-series=").count())
}

#[test]
fn live_connections_report_shows_each_verdict_in_the_browser() {
    let _one = serial();
    let dir = Scratch::new("live");
    let out = dir.path("live.html");
    let name = "plumb-live-lab.json";
    let html = report(&[fixture(name)], &out);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(name)).expect("fixture"))
            .expect("json");
    let conns = doc["connections"].as_array().expect("connections");
    // The document holds each connection's totals, not samples: no chart.
    assert_eq!(counts(&html), (0, 0));
    // One verdict per busy connection, busiest first, each under its identity.
    let mut busy: Vec<&Value> = conns
        .iter()
        .filter(|c| c["diagnosis"]["limit"].is_string())
        .collect();
    busy.sort_by(|a, b| {
        b["rate_bps"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a["rate_bps"].as_f64().unwrap_or(0.0))
    });
    assert!(busy.len() >= 2, "the fixture has two transfers");
    let want: Vec<String> = busy
        .iter()
        .map(|c| c["diagnosis"]["summary"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(summaries(&html), want);
    let ids: Vec<String> = busy
        .iter()
        .map(|c| {
            format!(
                "{} → {}",
                c["local"].as_str().unwrap_or("?"),
                c["remote"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let mut texts: Vec<&str> = vec!["Running connections", "No charts"];
    texts.extend(want.iter().map(String::as_str));
    texts.extend(ids.iter().map(String::as_str));
    if let Some(seen) = browse(&out, 0, 0, &texts, None, &[]) {
        assert_eq!(seen["background"], "rgb(255, 255, 255)", "{seen}");
        let dark =
            browse(&out, 0, 0, &texts, None, &["--dark"]).expect("the browser ran a moment ago");
        assert_eq!(dark["background"], "rgb(21, 24, 28)", "{dark}");
    }
}

#[test]
fn latency_reports_draw_their_panel_in_the_browser() {
    let _one = serial();
    let dir = Scratch::new("latency");
    // --latency: idle against loaded, one CDF line each; --rr: one line, and
    // its percentiles per interval.
    for (name, cdf_lines, per_interval) in [
        ("plumb-latency.json", 2, 0),
        ("plumb-rr.json", 1, 2),
        ("plumb-crr.json", 3, 4),
    ] {
        let out = dir.path(&format!("{name}.html"));
        let html = report(&[fixture(name)], &out);
        assert_eq!(series_in(&html, "latency"), cdf_lines, "{name}");
        assert_eq!(
            series_in(&html, "latency-intervals"),
            per_interval,
            "{name}"
        );
        let (charts, series) = counts(&html);
        // The throughput test's own charts come first, then the latency ones.
        let latency_charts = 1 + usize::from(per_interval > 0);
        assert!(charts > latency_charts, "{name}: {charts}");
        let verdict = summaries(&html);
        assert_eq!(verdict.len(), 1, "{name}: a verdict from the document");
        let mut texts = vec![
            "Latency",
            "Latency: cumulative distribution",
            verdict[0].as_str(),
        ];
        if per_interval > 0 {
            texts.push("Round trip per interval");
        } else {
            texts.extend(["idle", "loaded", "RPM loaded"]);
        }
        browse(&out, charts, series, &texts, None, &[]);
    }
}

#[test]
fn why_report_flag_writes_the_model_and_the_live_pages() {
    let _one = serial();
    let dir = Scratch::new("whyflag");
    // The model alone: a verdict-only page with the verdict plumb why printed.
    let out = dir.path("model.html");
    let o = run(
        plumb_bin(),
        &[
            "why", "--rate", "1g", "--rtt", "15ms", "-w", "64K", "--report", &out,
        ],
        Duration::from_secs(20),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("report written to"));
    let text = String::from_utf8_lossy(&o.stdout);
    // The path and the header assumed, then the verdict.
    let mut lines = text.lines().filter(|l| !l.is_empty());
    assert!(
        lines.next().is_some_and(|l| l.starts_with("Model: ")),
        "{text}"
    );
    let first = lines.next().unwrap_or_default().to_string();
    assert!(first.starts_with("Limited by"), "{text}");
    let html = std::fs::read_to_string(&out).expect("model report written");
    assert_eq!(summaries(&html), vec![first.clone()]);
    assert!(html.contains("the model alone") && html.contains("a diagnosis alone"));
    assert_eq!(counts(&html), (0, 0));
    browse(&out, 0, 0, &[&first, "What to change"], None, &[]);

    // Live: a paced transfer on loopback, explained while it runs.
    let port = port();
    let server = Server::start(plumb_bin(), &["-s", "-1"], port);
    let mut client = Command::new(plumb_bin())
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "5",
            "-b",
            "40M",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("client");
    std::thread::sleep(Duration::from_millis(1500));
    let out = dir.path("live.html");
    let o = run(
        plumb_bin(),
        &[
            "why",
            "--port",
            &port.to_string(),
            "--for",
            "1",
            "-J",
            "--report",
            &out,
        ],
        Duration::from_secs(30),
    );
    let _ = client.wait();
    drop(server);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("plumb why -J");
    let html = std::fs::read_to_string(&out).expect("live report written");
    assert!(html.contains("Running connections"));
    // The page holds the verdicts -J printed, one per busy connection.
    let conns = doc["connections"].as_array().expect("connections");
    let busy: Vec<String> = conns
        .iter()
        .filter(|c| c["diagnosis"]["limit"].is_string())
        .map(|c| c["diagnosis"]["summary"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(!busy.is_empty(), "the transfer was seen: {doc:#}");
    let mut shown = summaries(&html);
    let mut want = busy.clone();
    shown.sort();
    want.sort();
    assert_eq!(shown, want);
    // Both ends of the transfer run here: one sends, one receives.
    for end in ["this host sends", "this host receives"] {
        assert!(html.contains(end), "{end}");
    }
    let mut texts = vec!["Running connections"];
    texts.extend(busy.iter().map(String::as_str));
    browse(&out, 0, 0, &texts, None, &[]);
}

#[test]
fn top_log_report_draws_connections_over_time_in_the_browser() {
    let _one = serial();
    let dir = Scratch::new("top");
    let name = "plumb-top.ndjson";
    let text = std::fs::read_to_string(fixture(name)).expect("fixture");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a row"))
        .collect();
    // The connections that moved data, and those this host sent on.
    let mut busy: Vec<String> = rows
        .iter()
        .filter(|r| r["direction"] != "idle")
        .map(|r| format!("{} → {}", r["local"], r["remote"]).replace('"', ""))
        .collect();
    busy.sort();
    busy.dedup();
    let mut senders: Vec<&Value> = rows
        .iter()
        .filter(|r| r["direction"] == "sender")
        .map(|r| &r["local"])
        .collect();
    senders.sort_by_key(|v| v.to_string());
    senders.dedup();
    assert!(busy.len() >= 2 && !senders.is_empty(), "{busy:?}");
    let out = dir.path("top.html");
    let html = report(&[fixture(name)], &out);
    // Throughput (one line each), RTT (senders), windows (senders' cwnd and
    // everyone's advertised window), and the strip of limits.
    let series = busy.len() + senders.len() + senders.len() + busy.len();
    assert_eq!(counts(&html), (4, series));
    assert_eq!(series_in(&html, "top-throughput"), busy.len());
    assert_eq!(series_in(&html, "top-rtt"), senders.len());
    assert!(html.contains("data-chart=\"top-limits\""), "no limit strip");
    let marks = rows
        .iter()
        .filter(|r| busy.contains(&format!("{} → {}", r["local"], r["remote"]).replace('"', "")))
        .count();
    // Every reading of a drawn connection is under a mark of the strip.
    let under: usize = html
        .split("\" data-intervals=\"")
        .skip(1)
        .filter_map(|m| m.split('"').next()?.parse::<usize>().ok())
        .sum();
    assert_eq!(under, marks);
    assert!(!html.contains("src=") && !html.contains("href="));
    let mut texts = vec![
        "Connections over time",
        "Throughput of each connection",
        "Limit named in each interval",
        "application",
        "time (intervals)",
    ];
    texts.extend(busy.iter().map(String::as_str));
    if let Some(seen) = browse(&out, 4, series, &texts, None, &[]) {
        assert!(seen["chart_colours"].as_u64().unwrap_or(0) >= 5, "{seen}");
        assert_eq!(seen["background"], "rgb(255, 255, 255)", "{seen}");
        let dark = browse(&out, 4, series, &texts[..3], None, &["--dark", "--pdf"])
            .expect("the browser ran a moment ago");
        assert_eq!(dark["background"], "rgb(21, 24, 28)", "{dark}");
        assert!(dark["chart_colours"].as_u64().unwrap_or(0) >= 5, "{dark}");
    }

    // A log cut short, or with a stray line: one line naming the file,
    // exit 2, no page (and no temporary file).
    for (bad, why) in [
        ("cut.ndjson", text[..text.len() - 30].to_string()),
        ("stray.ndjson", format!("{text}not json\n")),
        ("joined.ndjson", format!("{text}{text}")),
    ] {
        let input = dir.path(bad);
        std::fs::write(&input, why).expect("write");
        let out = dir.path("bad.html");
        let o = run(
            plumb_bin(),
            &["report", &input, "-o", &out],
            Duration::from_secs(10),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
        assert!(
            err.contains(bad) && err.contains("plumb top --json log"),
            "{err}"
        );
        assert!(!Path::new(&out).exists(), "{bad}: no page");
        assert!(
            !std::fs::read_dir(&dir.0)
                .expect("dir")
                .filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().contains(".tmp")),
            "{bad}: no temporary file"
        );
    }
}

/// tcpdump writing a capture, stopped with SIGINT (so it flushes its file)
/// when dropped, passed or failed; killed if it does not exit in 5 s.
struct Tcpdump(std::process::Child);

impl Drop for Tcpdump {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts tcpdump on `lo` for TCP `port` into `file`, and waits until it
/// listens; `None` (with why) when it cannot capture here. Immediate mode:
/// a short capture stopped early holds every packet.
fn tcpdump(file: &str, port: u16, err: &str) -> Result<Tcpdump, String> {
    let child = Command::new("tcpdump")
        .args(["-i", "lo", "-n", "-U", "--immediate-mode", "-s", "128"])
        .args(["-B", "16384", "-w", file])
        .arg(format!("tcp port {port} and host 127.0.0.1"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(err).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("tcpdump does not start: {e}"))?;
    let mut guard = Tcpdump(child);
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let text = std::fs::read_to_string(err).unwrap_or_default();
        if text.contains("listening on") {
            return Ok(guard);
        }
        if let Ok(Some(_)) = guard.0.try_wait() {
            return Err(format!("tcpdump cannot capture on lo: {}", text.trim()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err("tcpdump did not start listening within 10 s".into())
}

/// The marks of the first time-sequence graph's data series in `html`.
fn tseq_marks(html: &str) -> usize {
    html.split("<svg class=\"chart\" data-chart=\"tseq\"")
        .nth(1)
        .and_then(|svg| svg.split_once("<title>data sent</title>"))
        .and_then(|(before, _)| before.rsplit(" d=\"").next())
        .and_then(|d| d.split('"').next())
        .map_or(0, |d| d.matches('M').count())
}

#[test]
fn a_capture_draws_each_flows_time_sequence_graph() {
    let _one = serial();
    let have_tcpdump = Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_tcpdump {
        plumb_testkit::skip_tool!(
            "no tcpdump on PATH (scripts/test installs it: apt-get install -y tcpdump)"
        );
        return;
    }
    let dir = Scratch::new("pcap");
    let (cap, out) = (dir.path("transfer.pcap"), dir.path("capture.html"));
    let port = port();
    let dump = match tcpdump(&cap, port, &dir.path("tcpdump.err")) {
        Ok(d) => d,
        Err(why) => {
            plumb_testkit::skip_tool!("{why}");
            return;
        }
    };
    let server = Server::start(plumb_bin(), &["-s", "-1"], port);
    let o = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "-b",
            "50M",
        ],
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    drop(server);
    drop(dump);
    // The scenario: the capture holds the transfer (control and data
    // connections, about 6 MB of data).
    let size = std::fs::metadata(&cap).map_or(0, |m| m.len());
    assert!(size > 10_000, "the capture holds {size} bytes");
    let html = report(std::slice::from_ref(&cap), &out);
    assert!(html.contains("transfer.pcap"));
    // Two connections, the data connection first: its graph has marks.
    assert_eq!(html.matches("<section class=\"flow\"").count(), 2, "{html}");
    let marks = tseq_marks(&html);
    assert!(marks > 10, "{marks} marks in the time-sequence graph");
    for id in [
        "tseq",
        "capture-throughput",
        "capture-rtt",
        "capture-window",
    ] {
        assert!(
            html.contains(&format!("svg class=\"chart\" data-chart=\"{id}\"")),
            "{id}"
        );
    }
    assert!(!html.contains("src=") && !html.contains("href="));
    // Both connections carried data: each shows its verdict, as plumb why
    // gives it.
    assert_eq!(html.matches("data-slot=\"verdict\"").count(), 2, "{html}");
    let verdict = html
        .split("data-slot=\"verdict\"><p class=\"summary\">")
        .nth(1)
        .and_then(|v| v.split([':', '<', '&']).next())
        .unwrap_or_default()
        .to_string();
    assert!(verdict.len() > 10, "{verdict:?}");
    let (charts, series) = counts(&html);
    let shot = format!("{TARGET}/report-capture.png");
    if let Some(seen) = browse(
        &out,
        charts,
        series,
        &[
            "Time-sequence graph",
            "127.0.0.1",
            "advertised window",
            &verdict,
        ],
        Some(&shot),
        // The data connection's section only (a later height wins).
        &["--screenshot-height", "1880"],
    ) {
        assert!(seen["chart_colours"].as_u64().unwrap_or(0) >= 3, "{seen}");
    }
}

#[test]
fn bad_captures_exit_2_and_leave_no_file() {
    let _one = serial();
    let dir = Scratch::new("badcap");
    let mut pcapng_bad_len = vec![0x0a, 0x0d, 0x0d, 0x0a, 0xff, 0xff, 0xff, 0x7f];
    pcapng_bad_len.extend_from_slice(&0x1a2b_3c4d_u32.to_le_bytes());
    pcapng_bad_len.extend_from_slice(&[0; 20]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("short.pcap", vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0]),
        ("badlen.pcapng", pcapng_bad_len),
        ("notgzip.pcap.gz", vec![0x1f, 0x8b, 0x08, 0x00, 1, 2, 3]),
    ];
    for (name, bytes) in cases {
        let input = dir.path(name);
        std::fs::write(&input, bytes).expect("write");
        let out = dir.path("out.html");
        let o = run(
            plumb_bin(),
            &["report", &input, "-o", &out],
            Duration::from_secs(10),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(
            err.contains(name),
            "{name}: the error names the file: {err}"
        );
        assert!(!Path::new(&out).exists(), "{name}: no output file");
        let left = std::fs::read_dir(&dir.0)
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .count();
        assert_eq!(left, 0, "{name}: a temporary file was left");
    }
    // A capture and a -J document do not share a page.
    let out = dir.path("mixed.html");
    let o = run(
        plumb_bin(),
        &[
            "report",
            &fixture("plumb-p2.json"),
            &dir.path("short.pcap"),
            "-o",
            &out,
        ],
        Duration::from_secs(10),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot share a page"), "{err}");
    assert!(!Path::new(&out).exists());
}
