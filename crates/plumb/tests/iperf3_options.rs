//! Every option of the newest iperf3 is either taken with iperf3's meaning
//! or refused in one line that names it and says why — never clap's
//! "unexpected argument", never a value iperf3 takes called invalid — and
//! `docs/measure.md`'s table says which, row for row.
//!
//! The option list is iperf3's own: the names and argument kinds of
//! `longopts` in esnet/iperf `src/iperf_api.c` at commit
//! c9b74229d0d9bfec6d2307b66b43c29a7665ad0b (2026-07-10), read as facts.

mod common;

use common::*;
use std::path::Path;
use std::time::Duration;

/// iperf3's options: long name, short letter, whether it takes a value
/// (`Some(true)` required, `Some(false)` optional with `=`, `None` none).
const IPERF3_LONGOPTS: &[(&str, Option<char>, Option<bool>)] = &[
    ("port", Some('p'), Some(true)),
    ("format", Some('f'), Some(true)),
    ("interval", Some('i'), Some(true)),
    ("daemon", Some('D'), None),
    ("one-off", Some('1'), None),
    ("verbose", Some('V'), None),
    ("json", Some('J'), None),
    ("json-stream", None, None),
    ("json-stream-full-output", None, None),
    ("version", Some('v'), None),
    ("server", Some('s'), None),
    ("client", Some('c'), Some(true)),
    ("udp", Some('u'), None),
    ("bitrate", Some('b'), Some(true)),
    ("bandwidth", Some('b'), Some(true)),
    ("server-bitrate-limit", None, Some(true)),
    ("server-max-duration", None, Some(true)),
    ("time", Some('t'), Some(true)),
    ("bytes", Some('n'), Some(true)),
    ("blockcount", Some('k'), Some(true)),
    ("length", Some('l'), Some(true)),
    ("parallel", Some('P'), Some(true)),
    ("reverse", Some('R'), None),
    ("bidir", None, None),
    ("window", Some('w'), Some(true)),
    ("bind", Some('B'), Some(true)),
    ("bind-dev", None, Some(true)),
    ("cport", None, Some(true)),
    ("set-mss", Some('M'), Some(true)),
    ("no-delay", Some('N'), None),
    ("version4", Some('4'), None),
    ("version6", Some('6'), None),
    ("tos", Some('S'), Some(true)),
    ("dscp", None, Some(true)),
    ("extra-data", None, Some(true)),
    ("flowlabel", Some('L'), Some(true)),
    ("zerocopy", Some('Z'), None),
    ("omit", Some('O'), Some(true)),
    ("file", Some('F'), Some(true)),
    ("repeating-payload", None, None),
    ("timestamps", None, Some(false)),
    ("affinity", Some('A'), Some(true)),
    ("title", Some('T'), Some(true)),
    ("congestion", Some('C'), Some(true)),
    ("linux-congestion", Some('C'), Some(true)),
    ("sctp", None, None),
    ("nstreams", None, Some(true)),
    ("xbind", Some('X'), Some(true)),
    ("pidfile", Some('I'), Some(true)),
    ("logfile", None, Some(true)),
    ("forceflush", None, None),
    ("get-server-output", None, None),
    ("udp-counters-64bit", None, None),
    ("no-fq-socket-pacing", None, None),
    ("dont-fragment", None, None),
    ("skip-rx-copy", None, None),
    ("username", None, Some(true)),
    ("rsa-public-key-path", None, Some(true)),
    ("rsa-private-key-path", None, Some(true)),
    ("authorized-users-path", None, Some(true)),
    ("time-skew-threshold", None, Some(true)),
    ("use-pkcs1-padding", None, None),
    ("fq-rate", None, Some(true)),
    ("pacing-timer", None, Some(true)),
    ("connect-timeout", None, Some(true)),
    ("idle-timeout", None, Some(true)),
    ("rcv-timeout", None, Some(true)),
    ("snd-timeout", None, Some(true)),
    ("cntl-ka", None, Some(false)),
    ("mptcp", Some('m'), None),
    ("gsro", None, None),
    ("debug", Some('d'), Some(false)),
    ("help", Some('h'), None),
];

/// The two walks share one pid file: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Options only a server takes: tried on `plumb -s`.
const SERVER: &[&str] = &[
    "server",
    "one-off",
    "daemon",
    "pidfile",
    "server-bitrate-limit",
    "server-max-duration",
    "idle-timeout",
    "rsa-private-key-path",
    "authorized-users-path",
    "time-skew-threshold",
];

/// A value iperf3 takes for each option that needs one.
fn sample(name: &str, closed: u16) -> String {
    match name {
        "port" => closed.to_string(),
        "format" => "m".into(),
        "client" | "bind" | "xbind" => "127.0.0.1".into(),
        "bitrate" | "bandwidth" | "server-bitrate-limit" | "fq-rate" => "10M".into(),
        "bytes" | "window" => "1M".into(),
        "length" => "1K".into(),
        "bind-dev" => "lo".into(),
        "cport" => "31240".into(),
        "set-mss" | "pacing-timer" | "rcv-timeout" | "snd-timeout" => "1000".into(),
        "tos" => "16".into(),
        "dscp" => "af11".into(),
        "congestion" | "linux-congestion" => "cubic".into(),
        "file" | "rsa-public-key-path" | "rsa-private-key-path" | "authorized-users-path" => {
            "/dev/null".into()
        }
        "pidfile" | "logfile" => std::env::temp_dir()
            .join(format!("plumb-iperf3-options-{}", std::process::id()))
            .display()
            .to_string(),
        "connect-timeout" => "300".into(),
        "omit" | "affinity" => "0".into(),
        "extra-data" | "title" | "username" => "x".into(),
        _ => "1".into(),
    }
}

/// `docs/measure.md`'s table: option name → plumb's column.
fn doc_rows() -> Vec<(String, String)> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/measure.md");
    let text = std::fs::read_to_string(doc).expect("docs/measure.md");
    // The rows of its own section only: other tables (nuttcp's, iperf 2's)
    // also start rows with a flag.
    text.lines()
        .skip_while(|l| *l != "## iperf3's flags, one by one")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix("`--")?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(4)?.to_string()))
        })
        .collect()
}

/// The command line that tries `name` (with its value) on the mode it
/// belongs to: a client against a closed port, or a server.
fn command_line(name: &str, takes: Option<bool>, closed: u16, free: u16) -> Vec<String> {
    let server = SERVER.contains(&name);
    let mut base: Vec<(&str, String)> = if server {
        // A daemon is found by its pid file, and ended ([`end_daemon`]).
        vec![
            ("server", String::new()),
            ("port", free.to_string()),
            ("pidfile", sample("pidfile", closed)),
        ]
    } else {
        vec![
            ("client", "127.0.0.1".into()),
            ("port", closed.to_string()),
            ("connect-timeout", "300".into()),
        ]
    };
    base.retain(|(b, _)| *b != name);
    let mut args: Vec<String> = Vec::new();
    for (b, v) in base {
        args.push(format!("--{b}"));
        if !v.is_empty() {
            args.push(v);
        }
    }
    args.push(format!("--{name}"));
    if takes == Some(true) {
        args.push(sample(name, closed));
    }
    args
}

/// Ends the server a line left behind (a `-D` daemon outlives its command)
/// and removes its pid file.
fn end_daemon() {
    let file = sample("pidfile", 0);
    if let Some(pid) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let _ = std::fs::remove_file(&file);
}

/// Runs the line: a server still running after a second took its flags.
fn outcome(args: &[String]) -> (Option<i32>, String) {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    match try_run(plumb_bin(), &refs, Duration::from_secs(1)) {
        Ok(out) => (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into(),
        ),
        Err(late) => (None, String::from_utf8_lossy(&late.stderr).into()),
    }
}

#[test]
fn every_iperf3_option_is_taken_or_refused_as_the_table_says() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let rows = doc_rows();
    let (closed, free) = (port(), port());
    let mut wrong = Vec::new();
    for &(name, _, takes) in IPERF3_LONGOPTS {
        let Some((_, plumb)) = rows.iter().find(|(n, _)| n == name) else {
            wrong.push(format!("--{name}: no row in docs/measure.md"));
            continue;
        };
        let args = command_line(name, takes, closed, free);
        let (code, err) = outcome(&args);
        end_daemon();
        let refused = code == Some(2)
            && err.lines().count() == 1
            && err.starts_with("plumb: ")
            && err.contains("iperf3's ")
            && err.contains(&format!("--{name}"));
        let unknown = err.contains("unexpected argument") || err.contains("invalid value");
        let says_refused = plumb.starts_with("refused");
        if says_refused != refused || (!says_refused && unknown) {
            wrong.push(format!("--{name} ({plumb}): {args:?} → {code:?} {err}"));
        }
    }
    let _ = std::fs::remove_file(sample("logfile", 0));
    assert_eq!(
        rows.len(),
        IPERF3_LONGOPTS.len(),
        "rows that are not iperf3's options"
    );
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        IPERF3_LONGOPTS.len(),
        wrong.join("\n")
    );
}

/// Each option's short letter means what iperf3's does: the short form
/// of every option that has one gives the same answer as the long form.
#[test]
fn short_letters_answer_as_the_long_options() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (closed, free) = (port(), port());
    let mut wrong = Vec::new();
    for &(name, short, takes) in IPERF3_LONGOPTS {
        let Some(c) =
            short.filter(|_| !matches!(name, "help" | "version" | "server" | "client" | "port"))
        else {
            continue;
        };
        let mut args = command_line(name, takes, closed, free);
        let Some(long) = args.iter().position(|a| *a == format!("--{name}")) else {
            panic!("--{name} missing from {args:?}");
        };
        let (lc, le) = outcome(&args);
        end_daemon();
        args[long] = format!("-{c}");
        let (sc, se) = outcome(&args);
        end_daemon();
        let same = |e: &str| {
            e.replace(&format!("-{c}/--{name}"), "")
                .replace(&format!("--{name}"), "")
        };
        if lc != sc || (lc == Some(2) && same(&le) != same(&se)) {
            wrong.push(format!("-{c} vs --{name}: {sc:?} {se} / {lc:?} {le}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `-f`: the bitrate column in the unit asked for, the transfer column
/// adaptive, as iperf3 prints them; a letter iperf3 refuses is refused.
#[test]
fn format_sets_the_bitrate_unit() {
    let p = port();
    for (f, unit) in [("m", "Mbits/sec"), ("K", "KBytes/sec"), ("g", "Gbits/sec")] {
        let server = Server::start(plumb_bin(), &["-s", "-1"], p);
        let out = run(
            plumb_bin(),
            &[
                "-c",
                "127.0.0.1",
                "-p",
                &p.to_string(),
                "-t",
                "0.5",
                "-f",
                f,
            ],
            Duration::from_secs(20),
        );
        drop(server);
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("sec") && l.starts_with("["))
            .collect();
        assert!(!lines.is_empty(), "{text}");
        assert!(
            lines
                .iter()
                .all(|l| l.contains(unit) && l.contains("Bytes  ")),
            "-f {f}: {text}"
        );
    }
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-f", "x"],
        Duration::from_secs(5),
    );
    assert_eq!(out.status.code(), Some(2));
}

/// `--cntl-ka` puts a keepalive timer on the control connection (ss shows
/// it while the test runs), `--bind-dev lo` reaches loopback, and a device
/// that does not exist is one line naming it.
#[test]
fn socket_options_reach_the_sockets() {
    let p = port();
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let ps = p.to_string();
    let mut client = std::process::Command::new(plumb_bin())
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &ps,
            "-t",
            "2",
            "-b",
            "10M",
            "--cntl-ka=60/5/3",
            "--bind-dev",
            "lo",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("client");
    let t0 = std::time::Instant::now();
    let mut seen = String::new();
    while t0.elapsed() < Duration::from_secs(3) && !seen.contains("keepalive") {
        std::thread::sleep(Duration::from_millis(200));
        let ss = std::process::Command::new("ss")
            .args([
                "-tno",
                "state",
                "established",
                &format!("( dport = :{ps} )"),
            ])
            .output()
            .expect("ss");
        seen = String::from_utf8_lossy(&ss.stdout).into_owned();
    }
    let status = client.wait().expect("client ends");
    drop(server);
    assert!(
        seen.contains("timer:(keepalive"),
        "no keepalive timer: {seen}"
    );
    assert!(status.success(), "a test bound to lo");
    let out = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &ps,
            "--bind-dev",
            "nosuchdev0",
            "--connect-timeout",
            "300",
        ],
        Duration::from_secs(10),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.lines().count() <= 2 && err.contains("--bind-dev nosuchdev0"),
        "{err}"
    );
}

/// `--json-stream-full-output`: the events, one a line, then the whole
/// `-J` document, as iperf3 3.19+ writes them; without `--json-stream` the
/// flag is refused, not ignored.
#[test]
fn json_stream_full_output_follows_the_events_with_the_document() {
    let p = port();
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let ps = p.to_string();
    let out = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &ps,
            "-t",
            "0.5",
            "--json-stream",
            "--json-stream-full-output",
        ],
        Duration::from_secs(20),
    );
    drop(server);
    let text = String::from_utf8_lossy(&out.stdout);
    let events: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with("{\"event\""))
        .collect();
    assert!(events.len() >= 3, "start, intervals, end: {text}");
    assert!(events
        .last()
        .is_some_and(|l| l.starts_with("{\"event\":\"end\"")));
    let rest: String = text
        .lines()
        .skip(events.len())
        .collect::<Vec<_>>()
        .join("\n");
    let doc: serde_json::Value =
        serde_json::from_str(&rest).expect("the whole document after the events");
    assert!(num(&doc, "end.sum_received.bytes") > 0.0, "{rest}");
    let alone = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "--json-stream-full-output"],
        Duration::from_secs(5),
    );
    assert_eq!(alone.status.code(), Some(2));
}

/// `--timestamps=FORMAT` and `-T TITLE` start every text line as iperf3's
/// do: the time in FORMAT, then `TITLE:  `; `-J` output is left alone.
#[test]
fn timestamps_and_title_prefix_every_text_line() {
    let p = port();
    let ps = p.to_string();
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let out = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &ps,
            "-t",
            "0.5",
            "--timestamps=%Y|%m ",
            "-T",
            "backup",
        ],
        Duration::from_secs(20),
    );
    drop(server);
    let text = String::from_utf8_lossy(&out.stdout);
    let shaped = |l: &str| {
        let b = l.as_bytes();
        l.len() > 16
            && b[..4].iter().all(u8::is_ascii_digit)
            && b[4] == b'|'
            && b[5..7].iter().all(u8::is_ascii_digit)
            && l[7..].starts_with(" backup:  ")
    };
    assert!(
        text.lines().count() > 3 && text.lines().all(shaped),
        "{text}"
    );
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let json = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &ps,
            "-t",
            "0.5",
            "--timestamps",
            "-J",
        ],
        Duration::from_secs(20),
    );
    drop(server);
    let doc = json_of(&json);
    assert!(num(&doc, "end.sum_received.bytes") > 0.0);
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("a -J document")
}

/// `-V` adds iperf3's verbose lines, in iperf3's order, and nothing
/// without it.
#[test]
fn verbose_adds_iperf3s_lines() {
    let p = port();
    let ps = p.to_string();
    let markers = [
        "Time: ",
        "      Cookie: ",
        "      TCP MSS: ",
        "Starting Test: protocol: TCP, 1 streams, 131072 byte blocks",
        "Test Complete. Summary Results:",
    ];
    for verbose in [true, false] {
        let server = Server::start(plumb_bin(), &["-s", "-1"], p);
        let mut args = vec!["-c", "127.0.0.1", "-p", &ps, "-t", "0.5"];
        if verbose {
            args.push("-V");
        }
        let out = run(plumb_bin(), &args, Duration::from_secs(20));
        drop(server);
        let text = String::from_utf8_lossy(&out.stdout);
        let at: Vec<Option<usize>> = markers.iter().map(|m| text.find(m)).collect();
        if verbose {
            assert!(at.iter().all(Option::is_some), "{text}");
            assert!(
                at.windows(2).all(|w| w[0] < w[1]),
                "out of iperf3's order: {text}"
            );
        } else {
            assert!(at.iter().all(Option::is_none), "{text}");
        }
    }
}

/// `--fq-rate 50M` paces each sending stream at 50 Mbit/s: the client's
/// own, and with `-R` the server's (the rate travels as `fqrate`). The
/// scenario first: unpaced, loopback carries far more.
#[test]
fn fq_rate_paces_the_sending_streams() {
    let p = port();
    let ps = p.to_string();
    let rate = |extra: &[&str]| {
        let server = Server::start(plumb_bin(), &["-s", "-1"], p);
        let mut args = vec!["-c", "127.0.0.1", "-p", &ps, "-t", "1", "-J"];
        args.extend_from_slice(extra);
        let out = run(plumb_bin(), &args, Duration::from_secs(20));
        drop(server);
        num(&json_of(&out), "end.sum_received.bits_per_second")
    };
    let unpaced = rate(&[]);
    if unpaced < 400e6 {
        plumb_testkit::skip_premise!(
            "loopback carried {unpaced} bit/s: too slow to show a 50M pace"
        );
        return;
    }
    for extra in [&["--fq-rate", "50M"][..], &["--fq-rate", "50M", "-R"][..]] {
        let r = rate(extra);
        assert!((40e6..=60e6).contains(&r), "{extra:?}: {r} bit/s");
    }
}

/// Whether `ss -Mn` lists an MPTCP connection to `port` within 3 s, while
/// `client` runs.
fn mptcp_seen(port: u16, client: &mut std::process::Child) -> bool {
    let t0 = std::time::Instant::now();
    let want = format!(":{port}");
    while t0.elapsed() < Duration::from_secs(3) {
        let ss = std::process::Command::new("ss")
            .args(["-Mn"])
            .output()
            .expect("ss");
        if String::from_utf8_lossy(&ss.stdout)
            .lines()
            .any(|l| l.contains("ESTAB") && l.contains(&want))
        {
            return true;
        }
        if client.try_wait().ok().flatten().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn spawn(bin: &str, args: &[&str]) -> std::process::Child {
    std::process::Command::new(bin)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// `-m`: the data streams are Multipath TCP (ss -M lists them) with a plumb
/// server and, both ways, with the newest iperf3; a plumb server that may
/// run several tests at once refuses it in words.
#[test]
fn mptcp_streams_are_multipath() {
    if !std::fs::read_to_string("/proc/sys/net/mptcp/enabled").is_ok_and(|s| s.trim() == "1") {
        plumb_testkit::skip!("this kernel has no MPTCP enabled");
        return;
    }
    let p = port();
    let ps = p.to_string();
    let client_args = ["-c", "127.0.0.1", "-p", &ps, "-t", "2", "-b", "50M", "-m"];
    let mut pairs: Vec<(&str, &str)> = vec![(plumb_bin(), plumb_bin())];
    match newest_iperf3() {
        Ok(i3) => pairs.extend([(plumb_bin(), i3), (i3, plumb_bin())]),
        Err(why) => plumb_testkit::skip!("the newest iperf3's half: {why}"),
    }
    for (client, server) in pairs {
        let srv = Server::start(server, &["-s", "-1"], p);
        let mut c = spawn(client, &client_args);
        let seen = mptcp_seen(p, &mut c);
        let ok = c.wait().expect("client").success();
        drop(srv);
        assert!(
            seen && ok,
            "{client} -m against {server}: seen {seen}, ok {ok}"
        );
    }
    let srv = Server::start(plumb_bin(), &["-s", "--max-tests", "2"], p);
    let out = run(plumb_bin(), &client_args, Duration::from_secs(20));
    drop(srv);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("MPTCP"), "{err}");
}

/// `-L 74565`: the TCP data stream to `::1` carries flow label 0x12345, as
/// tcpdump reads it; with IPv4 it is refused in one line.
#[test]
fn flowlabel_reaches_the_wire() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        plumb_testkit::skip!("no IPv6 loopback");
        return;
    }
    if tcpdump_missing() {
        return;
    }
    let p = port();
    let ps = p.to_string();
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let dump = std::process::Command::new("timeout")
        .args([
            "5",
            "tcpdump",
            "-i",
            "lo",
            "-n",
            "-v",
            "-c",
            "60",
            &format!("ip6 and tcp port {p}"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tcpdump");
    std::thread::sleep(Duration::from_millis(800));
    let out = run(
        plumb_bin(),
        &["-c", "::1", "-p", &ps, "-t", "0.5", "-L", "74565"],
        Duration::from_secs(20),
    );
    drop(server);
    let seen = String::from_utf8_lossy(&dump.wait_with_output().expect("tcpdump output").stdout)
        .into_owned();
    assert!(out.status.success());
    assert!(
        seen.contains("flowlabel 0x12345"),
        "no label 0x12345 in: {seen}"
    );
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let v4 = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-L", "1", "-t", "0.5"],
        Duration::from_secs(10),
    );
    drop(server);
    let err = String::from_utf8_lossy(&v4.stderr);
    assert!(
        v4.status.code() == Some(1) && err.contains("flow label is IPv6's"),
        "{err}"
    );
}

/// A server takes `--bind-dev` and `--snd-timeout` as iperf3's does (on
/// its listener, so on every connection it accepts): bound to `lo` it
/// serves a loopback test; a device that does not exist is one line; a
/// client-only flag is refused.
#[test]
fn a_server_binds_its_device_and_refuses_client_flags() {
    let p = port();
    let ps = p.to_string();
    let server = Server::start(
        plumb_bin(),
        &["-s", "-1", "--bind-dev", "lo", "--snd-timeout", "5000"],
        p,
    );
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-t", "0.3"],
        Duration::from_secs(20),
    );
    drop(server);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = run(
        plumb_bin(),
        &["-s", "-1", "-p", &ps, "--bind-dev", "nosuchdev0"],
        Duration::from_secs(10),
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        bad.status.code() == Some(1)
            && err.lines().count() == 1
            && err.contains("--bind-dev nosuchdev0"),
        "{err}"
    );
    let ka = run(
        plumb_bin(),
        &["-s", "-p", &ps, "--cntl-ka"],
        Duration::from_secs(10),
    );
    assert_eq!(ka.status.code(), Some(2));
}

/// `--server-bitrate-limit 20M/1`: a stock iperf3 client sending 100 Mbit/s
/// is ended with iperf3's "larger than server limit" error once a whole
/// second has been seen; one sending 5 Mbit/s runs its 3 s, asked for no
/// `-b` up front.
#[test]
fn server_bitrate_limit_ends_a_test_over_its_average() {
    let p = port();
    let ps = p.to_string();
    let client = |rate: &str| {
        let server = Server::start(
            plumb_bin(),
            &["-s", "-1", "--server-bitrate-limit", "20M/1"],
            p,
        );
        let out = run(
            iperf3_bin(),
            &["-c", "127.0.0.1", "-p", &ps, "-t", "3", "-b", rate, "-J"],
            Duration::from_secs(20),
        );
        (out, server.finish(Duration::from_secs(5)))
    };
    let (over, log) = client("100M");
    let doc = json_of(&over);
    // The scenario: the server saw the client send over the limit for a
    // whole second (the average it ended the test on, from its log; the
    // client may not have closed its own first interval by then).
    let log = String::from_utf8_lossy(&log.stdout).to_string();
    let avg: f64 = log
        .split("averaged ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    assert!(avg > 40e6, "the server's average {avg} bit/s: {log}");
    assert!(log.contains("--server-bitrate-limit"), "server log: {log}");
    let err = doc["error"].as_str().unwrap_or("");
    assert!(err.contains("larger than server limit"), "error: {err:?}");
    let (under, _) = client("5M");
    let doc = json_of(&under);
    assert!(under.status.success(), "under the limit: {doc}");
    let got = num(&doc, "end.sum_received.bits_per_second");
    assert!((4e6..=6e6).contains(&got), "received {got} bit/s");
}

/// `--idle-timeout 1`: a `-1` server with no client exits 0 after it, as
/// iperf3's does; any other server opens its listening socket anew, says
/// so, and still serves the client that comes after.
#[test]
fn idle_timeout_ends_a_one_off_server_and_renews_a_listener() {
    let p = port();
    let ps = p.to_string();
    let t0 = std::time::Instant::now();
    let out = run(
        plumb_bin(),
        &["-s", "-1", "-p", &ps, "--idle-timeout", "1"],
        Duration::from_secs(20),
    );
    let took = t0.elapsed();
    assert!(out.status.success(), "{out:?}");
    assert!(took >= Duration::from_secs(1), "ended after {took:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--idle-timeout): exiting"), "{text}");
    let server = Server::start(plumb_bin(), &["-s", "--idle-timeout", "1"], p);
    std::thread::sleep(Duration::from_millis(1600));
    let client = run(
        iperf3_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-t", "1", "-J"],
        Duration::from_secs(20),
    );
    let log = server.finish(Duration::from_secs(10));
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(
        client.status.success(),
        "{}",
        String::from_utf8_lossy(&client.stdout)
    );
    assert!(num(&json_of(&client), "end.sum_received.bytes") > 0.0);
    assert!(log.contains("--idle-timeout): listening anew"), "{log}");
}

/// `-d`: both ends trace the control connection's state messages on
/// stderr, and the client's `-J` on stdout still parses; `-d=2` (iperf3's
/// warnings level) traces nothing, `-d=5` is refused.
#[test]
fn debug_traces_the_control_connection_on_stderr() {
    let p = port();
    let ps = p.to_string();
    let server = Server::start(plumb_bin(), &["-s", "-1", "-d"], p);
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-t", "1", "-d", "-J"],
        Duration::from_secs(20),
    );
    let log = server.finish(Duration::from_secs(10));
    assert!(out.status.success(), "{out:?}");
    assert!(num(&json_of(&out), "end.sum_received.bytes") > 0.0);
    let err = String::from_utf8_lossy(&out.stderr);
    for state in [
        "CREATE_STREAMS",
        "TEST_START",
        "TEST_RUNNING",
        "EXCHANGE_RESULTS",
    ] {
        assert!(
            err.contains(&format!("plumb debug: received {state}")),
            "{err}"
        );
    }
    let log = String::from_utf8_lossy(&log.stderr);
    assert!(log.contains("received TEST_END"), "server: {log}");
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let quiet = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-t", "1", "-d=2"],
        Duration::from_secs(20),
    );
    drop(server);
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("plumb debug"));
    let bad = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-d=5"],
        Duration::from_secs(5),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid debug level '5'"));
}

/// `-F`: plumb's client sends a file's bytes (its size ending the test): a
/// stock iperf3 server given `-F` writes them (up to where it stopped
/// reading) and plumb's server counts them all; with `-R` plumb's
/// client writes exactly what an iperf3 server sends from its `-F` file;
/// the text report's "Sent" line counts the file; UDP, a server and a
/// missing file are each refused in one line.
#[test]
fn file_sends_and_receives_a_files_bytes() {
    let dir = TempDir::new("iperf3-file");
    let src = dir.join("src.bin");
    let data: Vec<u8> = (0..3_000_017u64).map(|i| (i * 131 % 251) as u8).collect();
    std::fs::write(&src, &data).expect("write the file");
    let (s, got, back) = (
        src.to_string_lossy(),
        dir.join("got.bin"),
        dir.join("back.bin"),
    );
    let p = port();
    let ps = p.to_string();
    let server = Server::start(iperf3_bin(), &["-s", "-1", "-F", &got.to_string_lossy()], p);
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-F", &s, "-J"],
        Duration::from_secs(30),
    );
    drop(server.finish(Duration::from_secs(10)));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(num(&json_of(&out), "end.sum_sent.bytes"), data.len() as f64);
    // iperf3's server stops reading at TEST_END, which comes once the last
    // byte is acknowledged, not read: what it wrote is the file's start.
    let g = std::fs::read(&got).unwrap_or_default();
    assert!(
        !g.is_empty() && data.starts_with(&g),
        "iperf3's copy differs"
    );
    // plumb's server reads to the end of the stream: all of it counted.
    let server = Server::start(plumb_bin(), &["-s", "-1"], p);
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-F", &s, "-J"],
        Duration::from_secs(30),
    );
    drop(server.finish(Duration::from_secs(10)));
    assert_eq!(
        num(&json_of(&out), "end.sum_received.bytes"),
        data.len() as f64
    );
    let server = Server::start(iperf3_bin(), &["-s", "-1", "-F", &s], p);
    let n = data.len().to_string();
    let b = back.to_string_lossy();
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &ps, "-R", "-F", &b, "-n", &n],
        Duration::from_secs(30),
    );
    drop(server.finish(Duration::from_secs(10)));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        std::fs::read(&back).is_ok_and(|g| g == data),
        "plumb's copy differs"
    );
    assert!(
        text.contains(&format!("Sent 2.86 MByte / 2.86 MByte (100%) of {b}")),
        "{text}"
    );
    for (args, says) in [
        (
            vec!["-c", "127.0.0.1", "-p", &ps, "-u", "-F", &s],
            "over TCP only",
        ),
        (vec!["-s", "-p", &ps, "-F", &s], "-F is a client flag"),
        (
            vec!["-c", "127.0.0.1", "-p", &ps, "-F", "/nonexistent/x"],
            "cannot read it",
        ),
    ] {
        let o = run(plumb_bin(), &args, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(says) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}
