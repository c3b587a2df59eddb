//! nuttcp across the lab (issue 34): the guides' nuttcp commands against
//! `plumb -s --tools nuttcp` report what they report against a stock
//! `nuttcp -S` on the same emulated path, and plumb's client with `-R
//! --rwin` against `nuttcp -S` names the receive window.
//!
//! The tuning guides the issue quotes run `nuttcp -i5 -T15 ADDR`,
//! `nuttcp -r -F -i5 -T15 ADDR` and `nuttcp -w128 -i5 -T15 ADDR`; here each
//! is shortened to 4 s with 1 s intervals (`-i1 -T4`), so that the six runs
//! fit CI's time, and nuttcp's own summary line is compared. Both servers
//! wait in the far namespace, and each command runs against one and then
//! the other, so the two runs of a command see the machine in the same
//! state. The machine must be the test's: other builds and labs on the
//! same two CPUs move single 4 s runs by more than 5 % (and a receiving
//! plumb, whose data thread is in the batch scheduling class, more than
//! nuttcp).
//!
//! Each comparison first checks its scenario: the lab measured the link it
//! was asked for, and the stock server's run was held by what the command
//! is about (the path for the first two, 128 KB per round trip for
//! `-w128`); otherwise it is a counted skip (a failure in CI). Lab runs are
//! serialised (they share two CPUs) and checked to leave nothing behind.
//! Needs root, /dev/net/tun and nuttcp; elsewhere a counted skip.

mod common;

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The lab's link: the guides' 1 Gbit/s and 15 ms.
const RATE: &str = "1gbit";
const RATE_BPS: f64 = 1e9;
const RTT: &str = "15ms";
const RTT_S: f64 = 0.015;

/// nuttcp -S's control and data ports, and plumb's, in the far namespace
/// (the lab's own: no other test's ports are there).
const NUTTCP_CTL: u16 = 5000;
const PLUMB_CTL: u16 = 6000;

/// The guides' commands, shortened to 4 s with 1 s intervals: (name, flags).
const COMMANDS: [(&str, &str); 3] = [
    ("send", ""),
    ("receive-flip", "-r -F"),
    ("window-128k", "-w128"),
];

/// How far plumb's figure may stray from the stock server's: the 5 %.
const AGREE: f64 = 0.05;

/// Whether the lab and nuttcp are here; a counted skip otherwise.
fn can_run() -> bool {
    if !can_lab() {
        return false;
    }
    let nuttcp = Command::new("nuttcp")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !nuttcp {
        plumb_testkit::skip_tool!("nuttcp is not installed (apt-get install nuttcp)");
    }
    nuttcp
}

/// The link's TCP goodput: 1448 B of payload per 1538 B on the wire
/// (Ethernet framing, IP and TCP headers with timestamps).
fn goodput_bps() -> f64 {
    RATE_BPS * 1448.0 / 1538.0
}

/// A far-side script: `nuttcp -S` on [`NUTTCP_CTL`] (data on the port
/// after) and `plumb -s --tools nuttcp` on [`PLUMB_CTL`] (or only nuttcp),
/// then `$D/ready` once they listen.
fn far_script(d: &str, with_plumb: bool) -> String {
    let plumb = if with_plumb {
        format!(
            "{} -s --tools nuttcp={PLUMB_CTL} >$D/plumb-s.log 2>&1 &\n",
            plumb_bin()
        )
    } else {
        String::new()
    };
    let wait = |port: u16| format!("ss -ltnH 'sport = :{port}' | grep -q .");
    let ready = if with_plumb {
        format!("{} && {}", wait(NUTTCP_CTL), wait(PLUMB_CTL))
    } else {
        wait(NUTTCP_CTL)
    };
    format!(
        "D={d}\n\
         nuttcp -S --nofork -P {NUTTCP_CTL} -p {} >$D/nuttcp-s.log 2>&1 &\n\
         {plumb}\
         for i in $(seq 200); do {ready} && break; sleep 0.05; done\n\
         touch $D/ready; wait",
        NUTTCP_CTL + 1
    )
}

/// A near-side script that waits for `$D/ready` and runs `body`.
fn near_script(d: &str, body: &str) -> String {
    format!(
        "D={d}\n\
         for i in $(seq 200); do [ -e $D/ready ] && break; sleep 0.05; done\n\
         [ -e $D/ready ] || exit 3\n\
         {body}"
    )
}

/// One nuttcp client run against `server` ("stock" or "plumb", control
/// port `ctl`) with `flags`, its output in `$D/NAME-SERVER.out`.
fn nuttcp_run(name: &str, server: &str, ctl: u16, flags: &str) -> String {
    format!(
        "nuttcp -P {ctl} -p {} -i1 -T4 {flags} $PLUMB_FAR >$D/{name}-{server}.out 2>&1\n",
        ctl + 1
    )
}

/// The lab at [`RATE`] and [`RTT`] with `far` and `near`; its notes. The
/// lab must have measured the round trip it was asked for (within 5 %),
/// and when `rate` the rate too, or the scenario does not hold and the
/// caller returns (a counted skip).
fn lab(far: &str, near: &str, limit: Duration, rate: bool) -> Option<String> {
    let args = [
        "lab",
        "--rate",
        RATE,
        "--rtt",
        RTT,
        "--far-exec",
        far,
        "--exec",
        near,
    ];
    let (out, notes) = run_lab(&args, limit);
    assert!(out.status.success(), "plumb lab: {notes}");
    let (rtt_ms, rate_mbps) = lab_measured(&notes);
    let off = |v: f64, want: f64| (v / want - 1.0).abs() > 0.05;
    if off(rtt_ms, RTT_S * 1e3) || (rate && off(rate_mbps, RATE_BPS / 1e6)) {
        plumb_testkit::skip_premise!(
            "the lab measured RTT {rtt_ms} ms and {rate_mbps} Mbit/s, not {RTT} and {RATE}"
        );
        return None;
    }
    Some(notes)
}

/// The lab's own measurement before the run, from its "Lab link:" note
/// ("… measured before the test: RTT 15.08 ms (min of 8), rate 1001
/// Mbit/s"): (RTT ms, rate Mbit/s).
fn lab_measured(notes: &str) -> (f64, f64) {
    let after = |key: &str| -> f64 {
        notes
            .split_once("measured before the test:")
            .and_then(|(_, r)| r.split_once(key))
            .and_then(|(_, r)| r.split_whitespace().next())
            .and_then(|n| n.trim_end_matches(',').parse().ok())
            .unwrap_or_else(|| panic!("no {key:?} in the lab's notes: {notes}"))
    };
    (after("RTT "), after("rate "))
}

/// The rate on nuttcp's summary line, Mbit/s: the one line with `%TX`,
/// "  376.7500 MB /   4.03 sec =  785.1323 Mbps 3 %TX 1 %RX 0 retrans …".
fn summary_mbps(text: &str, who: &str) -> f64 {
    text.lines()
        .find(|l| l.contains(" Mbps ") && l.contains("%TX"))
        .and_then(|l| l.split_once('='))
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{who}: no nuttcp summary line in: {text}"))
}

/// The command as run, `nuttcp -r -F -i1 -T4 ADDR`.
fn shown(flags: &str) -> String {
    ["nuttcp", flags, "-i1 -T4 ADDR"]
        .into_iter()
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// One command's two figures, Mbit/s.
struct Pair {
    name: &'static str,
    flags: &'static str,
    stock: f64,
    plumb: f64,
}

/// The stock server's figure as the command's scenario needs it: the
/// path's for an unlimited run (at least 90 % of the link's goodput, slow
/// start included; unhurried runs here gave 95-97 %), the window's for
/// `-w128`: 128 KB per round trip is 70 Mbit/s, and the kernel grants
/// twice the buffer asked for and lets the window take part of it, so
/// between 0.8 and 2.2 times that, far below the link.
fn premise(p: &Pair) -> Result<(), String> {
    let goodput = goodput_bps() / 1e6;
    if p.flags.contains("-w128") {
        let window = 128.0 * 1024.0 * 8.0 / RTT_S / 1e6;
        if (0.8 * window..=2.2 * window).contains(&p.stock) {
            return Ok(());
        }
        return Err(format!(
            "{}: the stock server's {} Mbit/s is not held by 128 KB per {RTT} ({window:.1} Mbit/s)",
            shown(p.flags),
            p.stock
        ));
    }
    if p.stock >= 0.9 * goodput {
        return Ok(());
    }
    Err(format!(
        "{}: the stock server's {} Mbit/s is below 90 % of the link's {goodput:.1} Mbit/s goodput",
        shown(p.flags),
        p.stock
    ))
}

#[test]
fn the_guides_nuttcp_commands_measure_plumb_as_they_measure_nuttcp() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("nuttcp-lab-guides");
    let d = dir.display().to_string();
    let mut body = String::new();
    for (name, flags) in COMMANDS {
        for (server, ctl) in [("stock", NUTTCP_CTL), ("plumb", PLUMB_CTL)] {
            body += &nuttcp_run(name, server, ctl, flags);
        }
    }
    let Some(notes) = lab(
        &far_script(&d, true),
        &near_script(&d, &body),
        Duration::from_secs(120),
        true,
    ) else {
        return;
    };
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let pairs: Vec<Pair> = COMMANDS
        .iter()
        .map(|(name, flags)| {
            let figure = |server: &str| {
                let who = format!("{} against {server}", shown(flags));
                summary_mbps(&read(&format!("{name}-{server}.out")), &who)
            };
            Pair {
                name,
                flags,
                stock: figure("stock"),
                plumb: figure("plumb"),
            }
        })
        .collect();
    for p in &pairs {
        eprintln!(
            "{}: nuttcp -S {:.2} Mbit/s, plumb -s {:.2} Mbit/s ({:+.1} %)",
            shown(p.flags),
            p.stock,
            p.plumb,
            (p.plumb / p.stock - 1.0) * 100.0
        );
    }
    let mut skipped = Vec::new();
    for p in &pairs {
        if let Err(why) = premise(p) {
            skipped.push(why);
            continue;
        }
        assert!(
            (p.plumb / p.stock - 1.0).abs() <= AGREE,
            "{}: {} reported {} Mbit/s against plumb, {} against nuttcp -S; plumb's log: {}\n{notes}",
            p.name,
            shown(p.flags),
            p.plumb,
            p.stock,
            read("plumb-s.log")
        );
    }
    if !skipped.is_empty() {
        plumb_testkit::skip_premise!("{}", skipped.join("; "));
    }
}

/// The receive-window verdict of `lab.rs`'s backup scenario, with a stock
/// `nuttcp -S` sending: plumb's client receives (`-R`) with its window
/// clamped to 17,520 B, and `--why` names the window from its own socket
/// (the sender, not plumb, records nothing of its TCP), predicting the
/// rate 17,520 B per the socket's round trip allows.
#[test]
fn why_names_the_receive_window_with_nuttcp_sending() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("nuttcp-lab-why");
    let d = dir.display().to_string();
    let body = format!(
        "{} -c $PLUMB_FAR --tool nuttcp -p {NUTTCP_CTL} -R --rwin 17520 -t 3 --why -J >$D/why.json 2>$D/why.err",
        plumb_bin()
    );
    let Some(notes) = lab(
        &far_script(&d, false),
        &near_script(&d, &body),
        Duration::from_secs(60),
        // 9.3 Mbit/s: the window's rate, whatever the link's.
        false,
    ) else {
        return;
    };
    let text = std::fs::read(dir.join("why.json")).unwrap_or_default();
    let v: Value = serde_json::from_slice(&text).unwrap_or_else(|e| {
        panic!(
            "no -J from plumb -c --tool nuttcp ({e}): {} {}\n{notes}",
            String::from_utf8_lossy(&text),
            std::fs::read_to_string(dir.join("why.err")).unwrap_or_default()
        )
    });
    assert_clean(&v, "plumb -c --tool nuttcp -R");
    // The scenario: plumb received, through a window clamped as asked.
    assert_eq!(v["start"]["test_start"]["reverse"], 1);
    assert_eq!(
        num(&v, "end.plumb.local.streams.0.window_clamp"),
        17_520.0,
        "the receiving socket's clamp"
    );
    let d = &v["diagnosis"];
    assert_eq!(d["limit"], "receive_window", "{}", d["summary"]);
    let (m, p) = (num(d, "measured_bps"), num(d, "predicted_bps"));
    let tolerance = num(d, "tolerance");
    assert!(
        m <= p * (1.0 + tolerance) && m >= p / (1.0 + tolerance),
        "predicted {p}, measured {m}, tolerance {tolerance}"
    );
    // The prediction is 17,520 B per the round trip the receiving socket
    // timed in its handshake (15 ms, or more on a busy machine).
    let rtt_s = num(&v, "end.plumb.local.streams.0.tcp_info.min_rtt_us") / 1e6;
    let want = 17_520.0 * 8.0 / rtt_s;
    assert!(
        (p / want - 1.0).abs() <= 1e-3,
        "predicted {p}, 17,520 B per {rtt_s} s is {want}"
    );
    // Its evidence is the receiving socket's window.
    let finding = d["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["limit"] == "receive_window"))
        .expect("the window's finding");
    let window = finding["evidence"]
        .as_array()
        .and_then(|e| {
            e.iter()
                .find(|l| l["what"] == "most the receiver can advertise (its window clamp)")
        })
        .unwrap_or_else(|| panic!("no window in {finding}"));
    assert_eq!(window["value"], 17_520.0, "{finding}");
}
