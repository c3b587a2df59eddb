//! One plumb server for iperf3, iperf 2 and nuttcp clients at once
//! (`plumb -s --tools iperf3,iperf2,nuttcp`), and the client's `--tool
//! auto`, on loopback test ports: the stock clients (iperf3, Debian's
//! iperf 2.1.8, nuttcp 6.1.2) each get their test from the one server,
//! nuttcp's data connection on iperf 2's port included, with the bytes the
//! client counted within 1 % of the server's; `--tool auto` names the tool
//! of plumb's servers and of stock ones and runs its test; the flag
//! combinations that cannot work are refused in one line (exit 2), a port
//! that is taken stops the whole server (exit 1), `--deny` holds for every
//! tool, and `-1` ends all the servers after the first test of any.

mod common;

use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(40);

/// Whether `bin ARG` runs and its output contains `want`.
fn has(bin: &str, arg: &str, want: &str) -> bool {
    Command::new(bin)
        .arg(arg)
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| {
            let t = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            t.contains(want)
        })
}

/// The stock peers all present, or the test records a skip.
macro_rules! need_peers {
    () => {
        if !has(iperf3_bin(), "-v", "iperf 3") {
            plumb_testkit::skip_tool!("iperf3 is not installed");
            return;
        }
        if !has("iperf", "-v", "iperf version 2.") {
            plumb_testkit::skip_tool!("iperf 2 (Debian's iperf) is not installed");
            return;
        }
        if !has("nuttcp", "-V", "nuttcp") {
            plumb_testkit::skip_tool!("nuttcp is not installed (apt-get install nuttcp)");
            return;
        }
    };
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn within_1pct(a: f64, b: f64) -> bool {
    a > 0.0 && b > 0.0 && (a - b).abs() <= 0.01 * a.max(b)
}

/// Ends a server with SIGINT, as Ctrl-C does, and returns its output.
fn interrupt(srv: Server) -> Output {
    let _ = Command::new("kill")
        .args(["-INT", &srv.pid().to_string()])
        .status();
    srv.finish(Duration::from_secs(15))
}

/// Every `-J` document in a server's output, in order.
fn documents(out: &Output) -> Vec<Value> {
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .map(|d| d.unwrap_or_else(|e| panic!("server output is not JSON documents: {e}")))
        .collect()
}

/// The bytes a nuttcp client reports on its summary line (`N MB / …`,
/// nuttcp's MB being 2^20 bytes).
fn nuttcp_bytes(out: &str) -> f64 {
    out.lines()
        .find_map(|l| {
            l.split_once(" MB /")
                .map(|(mb, _)| mb.trim().parse::<f64>().ok())
        })
        .flatten()
        .map(|mb| mb * 1_048_576.0)
        .unwrap_or_else(|| panic!("no nuttcp summary in {out}"))
}

/// The bytes of an iperf 2 client's `-y C` line.
fn iperf2_bytes(out: &str) -> f64 {
    out.lines()
        .find_map(|l| l.split(',').nth(7).and_then(|b| b.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no iperf 2 -y C line in {out}"))
}

#[test]
fn one_server_answers_iperf3_iperf2_and_nuttcp_clients() {
    need_peers!();
    // nuttcp -N2's second data port is the one after iperf 2's.
    let (p3, p2, _second, pn) = (port(), port(), port(), port());
    let tools = format!("iperf3,iperf2={p2},nuttcp={pn}");
    // -p is iperf3's port among several tools.
    let srv = Server::start(plumb_bin(), &["-s", "-J", "--tools", &tools], p3);
    wait_listening(p2);
    wait_listening(pn);
    let (s3, s2, sn) = (p3.to_string(), p2.to_string(), pn.to_string());
    let mut clients: Vec<(&str, f64)> = Vec::new();

    let o = run(
        iperf3_bin(),
        &["-c", "127.0.0.1", "-p", &s3, "-t", "2", "-J"],
        LIMIT,
    );
    assert!(o.status.success(), "iperf3: {}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("iperf3 -J");
    clients.push(("iperf3", num(&v, "end.sum_sent.bytes")));

    let o = run(
        "iperf",
        &["-c", "127.0.0.1", "-p", &s2, "-t", "2", "-y", "C"],
        LIMIT,
    );
    assert!(o.status.success(), "iperf: {}", text(&o));
    clients.push(("iperf 2", iperf2_bytes(&String::from_utf8_lossy(&o.stdout))));

    // nuttcp's data connection on iperf 2's port: handed over by the session.
    let o = run("nuttcp", &["-P", &sn, "-p", &s2, "-T2", "127.0.0.1"], LIMIT);
    assert!(o.status.success(), "nuttcp: {}", text(&o));
    clients.push(("nuttcp", nuttcp_bytes(&String::from_utf8_lossy(&o.stdout))));

    // Two streams: the first handed over, the second on a listener of its own.
    let o = run(
        "nuttcp",
        &["-N2", "-P", &sn, "-p", &s2, "-T2", "127.0.0.1"],
        LIMIT,
    );
    assert!(o.status.success(), "nuttcp -N2: {}", text(&o));
    clients.push((
        "nuttcp -N2",
        nuttcp_bytes(&String::from_utf8_lossy(&o.stdout)),
    ));

    // iperf 2's listener still serves its own clients afterwards.
    let o = run(
        "iperf",
        &["-c", "127.0.0.1", "-p", &s2, "-t", "2", "-y", "C"],
        LIMIT,
    );
    assert!(o.status.success(), "iperf again: {}", text(&o));
    clients.push((
        "iperf 2 again",
        iperf2_bytes(&String::from_utf8_lossy(&o.stdout)),
    ));

    let out = interrupt(srv);
    assert!(
        out.status.success(),
        "SIGINT ends the server cleanly: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents(&out);
    assert_eq!(docs.len(), clients.len(), "one document per test");
    for ((what, theirs), doc) in clients.iter().zip(&docs) {
        assert_clean(doc, what);
        let ours = num(doc, "end.sum_received.bytes");
        assert!(
            within_1pct(ours, *theirs),
            "{what}: the client counted {theirs}, the server {ours}"
        );
    }
    for p in [p3, p2, pn] {
        assert!(!listening(p), "port {p} still listens after SIGINT");
    }
}

#[test]
fn a_udp_nuttcp_test_on_iperf2s_port_is_refused_with_the_reason() {
    need_peers!();
    let (p2, pn) = (port(), port());
    let tools = format!("iperf2={p2},nuttcp={pn}");
    let tools = format!("iperf3,{tools}");
    let _srv = Server::start(plumb_bin(), &["-s", "--tools", &tools], port());
    wait_listening(p2);
    let (s2, sn) = (p2.to_string(), pn.to_string());
    let o = run(
        "nuttcp",
        &["-u", "-R", "1m", "-P", &sn, "-p", &s2, "-T1", "127.0.0.1"],
        LIMIT,
    );
    assert!(
        text(&o).contains("is this server's iperf 2 port"),
        "{}",
        text(&o)
    );
}

#[test]
fn one_off_ends_every_server_after_the_first_test() {
    need_peers!();
    let (p3, p2, pn) = (port(), port(), port());
    let tools = format!("iperf3,iperf2={p2},nuttcp={pn}");
    let srv = Server::start(plumb_bin(), &["-s", "-1", "--tools", &tools], p3);
    wait_listening(p2);
    wait_listening(pn);
    let s2 = p2.to_string();
    let o = run("iperf", &["-c", "127.0.0.1", "-p", &s2, "-t", "1"], LIMIT);
    assert!(o.status.success(), "iperf: {}", text(&o));
    let out = srv.finish(Duration::from_secs(15));
    assert!(
        out.status.success(),
        "-1 exits 0 after iperf 2's test: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for p in [p3, p2, pn] {
        assert!(!listening(p), "port {p} still listens after -1's test");
    }
}

#[test]
fn deny_refuses_each_tools_client() {
    need_peers!();
    let (p3, p2, pn) = (port(), port(), port());
    let tools = format!("iperf3,iperf2={p2},nuttcp={pn}");
    let args = ["-s", "--deny", "127.0.0.1", "--tools", tools.as_str()];
    let srv = Server::start(plumb_bin(), &args, p3);
    wait_listening(p2);
    wait_listening(pn);
    let (s3, s2, sn) = (p3.to_string(), p2.to_string(), pn.to_string());
    let o = run(
        iperf3_bin(),
        &["-c", "127.0.0.1", "-p", &s3, "-t", "1"],
        LIMIT,
    );
    assert!(!o.status.success(), "iperf3 ran: {}", text(&o));
    // iperf 2's client sees only a reset; the server's log says why.
    let _ = run("iperf", &["-c", "127.0.0.1", "-p", &s2, "-t", "1"], LIMIT);
    let o = run("nuttcp", &["-P", &sn, "-p", &s2, "-T1", "127.0.0.1"], LIMIT);
    assert!(text(&o).contains("--allow/--deny"), "nuttcp: {}", text(&o));
    let out = interrupt(srv);
    let err = String::from_utf8_lossy(&out.stderr);
    let refusals = err.lines().filter(|l| l.contains("--allow/--deny")).count();
    assert_eq!(refusals, 3, "one refusal per tool: {err}");
}

#[test]
fn a_taken_port_stops_all_servers_in_one_line() {
    let (p3, p2) = (port(), port());
    let _taken = TcpListener::bind(("0.0.0.0", p2)).expect("hold the port");
    let tools = format!("iperf3={p3},iperf2={p2}");
    let o = run(plumb_bin(), &["-s", "--tools", &tools], LIMIT);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("plumb:")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(
        errors[0].contains("iperf2") && errors[0].contains(&p2.to_string()),
        "names the tool and the port: {err}"
    );
    assert!(!listening(p3), "iperf3's server stopped too");
}

#[test]
fn impossible_combinations_are_refused_in_one_line() {
    let p = port().to_string();
    let same = format!("iperf3={p},iperf2={p}");
    for (args, says) in [
        (vec!["-s", "--tools", same.as_str()], "both on port"),
        (
            vec!["-s", "-p", p.as_str(), "--tools", "iperf2,nuttcp"],
            "TOOL=PORT",
        ),
        (vec!["-s", "--tool", "auto"], "--tools LIST"),
        (
            vec!["-c", "127.0.0.1", "--tools", "iperf3,nuttcp"],
            "server flag",
        ),
        (
            vec!["-c", "127.0.0.1", "--tool", "auto", "--flip"],
            "--tool nuttcp",
        ),
    ] {
        let o = run(plumb_bin(), &args, LIMIT);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `plumb -c 127.0.0.1 --tool auto -p PORT -t 1 -J`: the line naming the
/// tool, and the document.
fn auto(port: u16) -> (String, Value) {
    let p = port.to_string();
    let o = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "--tool",
            "auto",
            "-p",
            &p,
            "-t",
            "1",
            "-J",
        ],
        LIMIT,
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        o.status.success(),
        "auto on {port}: {err}{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let v = json(&o, "plumb --tool auto");
    assert_clean(&v, "plumb --tool auto");
    assert!(num(&v, "end.sum_received.bytes") > 0.0, "the test ran");
    (err, v)
}

#[test]
fn auto_names_the_tool_of_each_plumb_server() {
    for (tool, name) in [
        ("iperf3", "an iperf3"),
        ("iperf2", "an iperf 2"),
        ("nuttcp", "a nuttcp"),
    ] {
        // nuttcp's data port is the next one.
        let p = port_block(2);
        let _srv = Server::start(plumb_bin(), &["-s", "--tools", tool], p);
        let (err, _) = auto(p);
        let want = format!("plumb: found {name} server on 127.0.0.1 port {p}");
        assert_eq!(err.lines().next(), Some(want.as_str()), "{err}");
    }
}

#[test]
fn auto_names_stock_servers() {
    need_peers!();
    let p = port();
    let srv = Server::start(iperf3_bin(), &["-s"], p);
    let (err, _) = auto(p);
    let want = format!("plumb: found an iperf3 server on 127.0.0.1 port {p}");
    assert_eq!(err.lines().next(), Some(want.as_str()), "{err}");
    drop(srv);

    let p = port();
    let srv = Server::start("iperf", &["-s"], p);
    let want = format!("plumb: found an iperf 2 server on 127.0.0.1 port {p}");
    // Twice: the probe leaves a stock iperf 2 server serving.
    for _ in 0..2 {
        let (err, _) = auto(p);
        assert_eq!(err.lines().next(), Some(want.as_str()), "{err}");
    }
    drop(srv);

    // plumb's nuttcp client takes the control port + 1 for data, as
    // nuttcp's own; nuttcp listens on its data port only during a test.
    let (ctl, data) = (port(), port());
    assert_eq!(data, ctl + 1, "consecutive test ports");
    let c = ctl.to_string();
    let _n = Server::start_ready("nuttcp", &["-S", "--nofork", "-P", &c], data, |_| true);
    wait_listening(ctl);
    let (err, _) = auto(ctl);
    let want = format!("plumb: found a nuttcp server on 127.0.0.1 port {ctl}");
    assert_eq!(err.lines().next(), Some(want.as_str()), "{err}");
}

#[test]
fn auto_with_nothing_there_is_one_line_and_exit_1() {
    let p = port().to_string();
    let o = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "--tool", "auto", "-p", &p, "-t", "1"],
        LIMIT,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no iperf3, iperf 2 or nuttcp server"), "{err}");
}

#[test]
fn why_with_auto_tests_the_tool_it_found() {
    let p = port();
    let _srv = Server::start(plumb_bin(), &["-s", "--tools", "iperf2"], p);
    let s = p.to_string();
    let o = run(
        plumb_bin(),
        &[
            "why",
            "127.0.0.1",
            "--tool",
            "auto",
            "-p",
            &s,
            "-t",
            "1",
            "-J",
        ],
        LIMIT,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let want = format!("plumb: found an iperf 2 server on 127.0.0.1 port {p}");
    assert_eq!(err.lines().next(), Some(want.as_str()), "{err}");
    let v = json(&o, "plumb why --tool auto");
    assert!(v.is_object(), "one document");
}
