//! iperf3's own pre-release command list, in the three pairings a user
//! meets: plumb's client with plumb's server, plumb's client with the
//! newest iperf3's server, and the newest iperf3's client with plumb's
//! server.
//!
//! The list is `test_commands.sh` of esnet/iperf at commit
//! c9b74229d0d9bfec6d2307b66b43c29a7665ad0b (2026-07-10): its 34 client
//! argument lists, read as facts and written out in [`COMMANDS`], with two
//! changes: `-t 2` where the script says `-t 5` or names no length (iperf3's
//! default is 10 s), and the host `::1` for the lines that force IPv6
//! (`-6`), `127.0.0.1` for the rest (the script takes one host name).
//!
//! First the newest iperf3 runs every line against itself. A line that
//! fails there is named and left out, since it says nothing about plumb
//! (here: `--sctp` on a kernel without SCTP, `-A 2/2` on a machine with
//! fewer than three CPUs, and `-n 5M -t 2`, which the script lists to see
//! it refused), but plumb's client must not report success on it either.
//! Every other line, in each pairing, must exit 0 on both ends, and the
//! server's `-J` (each server is `-s -1 -J`) and the client's, where the
//! line asks for it, must parse. Where the newest iperf3's own two counts
//! agree — the client's and the one the server reported back: TCP's bytes
//! within 1 % (plus half a unit in the last printed digit of each when
//! read from the text report), UDP's datagrams sent and expected by the
//! receiver within 1 %, or no more expected than sent when the receiver
//! reports loss (datagrams lost at the very end are never seen) — they
//! must agree in each pairing too. A paced line (`--fq-rate 5m`) is where
//! they need not: its sender counts what still sits in its socket buffer.
//!
//! The pairings run side by side, each in two halves side by side; the test
//! needs the newest iperf3 (`scripts/newest-iperf3`), else it is a counted
//! skip.

mod common;

use common::*;
use serde_json::Value;
use std::process::Output;
use std::time::Duration;

/// test_commands.sh's client lines, `-t 5` as `-t 2` and `-t 2` added
/// where no length is named; `HOST` is the loopback address.
const COMMANDS: [&str; 34] = [
    "-c HOST -V -t 2 -T test1",
    "-c HOST -u -V -t 2",
    "-c HOST -i .3 -O 2 -t 2",
    "-c HOST -i 1 -J -t 2",
    "-c HOST -4 -t 2",
    "-c HOST -4 -u -t 2",
    "-c HOST -6 -t 2",
    "-c HOST -6 -u -t 2",
    "-c HOST -V -t 2 --fq-rate 5m",
    "-c HOST -u -V -t 2 --fq-rate 5m",
    "-c HOST --sctp -V -t 2",
    "-c HOST -P 3 -t 2",
    "-c HOST -u -P 3 -t 2",
    "-c HOST -P 2 -t 2 -R",
    "-c HOST -u -P 2 -t 2 -R",
    "-c HOST -P 2 -t 2 --bidir",
    "-c HOST -u -P 2 -t 2 --bidir",
    "-c HOST -Z -t 2",
    "-c HOST -Z -t 2 -R",
    "-c HOST -t 2 -w 8M",
    "-c HOST -n 5M",
    "-c HOST -n 5M -u -b1G",
    "-c HOST -n 5M -R",
    "-c HOST -n 5M -u -b1G -R",
    "-c HOST -n 5M -t 2",
    "-c HOST -k 1K",
    "-c HOST -k 1K -u -b1G",
    "-c HOST -k 1K -R",
    "-c HOST -k 1K -u -b1G -R",
    "-c HOST -A 2/2 -t 2",
    "-c HOST -A 2/2 -u -b1G -t 2",
    "-c HOST -u -b1G/100 -t 2",
    "-c HOST -C reno -V -t 2",
    "-c HOST -M 1000 -V -t 2",
];

/// Who plays client and who server.
#[derive(Clone, Copy)]
struct Pairing {
    name: &'static str,
    client: &'static str,
    server: &'static str,
}

/// One line's run: both ends' output, or that one end ran past its time.
struct Ran {
    client: Result<Output, Output>,
    server: Output,
}

#[test]
fn iperf3_release_commands_in_three_pairings() {
    let newest = match newest_iperf3() {
        Ok(b) => b,
        Err(why) => {
            plumb_testkit::skip_tool!("{why}");
            return;
        }
    };
    let plumb = plumb_bin();
    let pairings = [
        Pairing {
            name: "newest iperf3 -> newest iperf3",
            client: newest,
            server: newest,
        },
        Pairing {
            name: "plumb -> plumb",
            client: plumb,
            server: plumb,
        },
        Pairing {
            name: "plumb -> newest iperf3",
            client: plumb,
            server: newest,
        },
        Pairing {
            name: "newest iperf3 -> plumb",
            client: newest,
            server: plumb,
        },
    ];
    let ports: Vec<Vec<u16>> = pairings
        .iter()
        .map(|_| COMMANDS.iter().map(|_| port()).collect())
        .collect();
    let runs: Vec<Vec<Ran>> = std::thread::scope(|s| {
        let handles: Vec<_> = pairings
            .iter()
            .zip(&ports)
            .map(|(p, ports)| s.spawn(move || run_pairing(*p, ports)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a pairing's thread"))
            .collect()
    });
    let baseline = &runs[0];
    let mut failures = Vec::new();
    let mut left_out = Vec::new();
    for (i, line) in COMMANDS.iter().enumerate() {
        let counts_hold = match outcome(line, &baseline[i]) {
            Ok(c) => counts_agree(c).is_ok(),
            Err(why) => {
                left_out.push(format!("{line}: {why}"));
                failures.extend(refused_alike(line, &pairings, &runs, i));
                continue;
            }
        };
        for (p, ran) in pairings.iter().zip(&runs).skip(1) {
            let verdict =
                outcome(line, &ran[i]).and_then(
                    |c| {
                        if counts_hold {
                            counts_agree(c)
                        } else {
                            Ok(())
                        }
                    },
                );
            if let Err(why) = verdict {
                failures.push(format!("{} | {line}: {why}", p.name));
            }
        }
    }
    eprintln!(
        "iperf3 commands: {} of {} lines in every pairing; left out (they fail for the newest iperf3 against itself here): {left_out:#?}",
        COMMANDS.len() - left_out.len(),
        COMMANDS.len()
    );
    assert!(
        left_out.len() <= 5,
        "the newest iperf3 fails too many of its own lines here: {left_out:#?}"
    );
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// On a line the newest iperf3's client fails (exit non-zero), plumb's
/// client must not report success either: the failures where it does.
fn refused_alike(line: &str, pairings: &[Pairing], runs: &[Vec<Ran>], i: usize) -> Vec<String> {
    pairings
        .iter()
        .zip(runs)
        .skip(1)
        .filter(|(p, ran)| {
            p.client == plumb_bin() && ran[i].client.as_ref().is_ok_and(|o| o.status.success())
        })
        .map(|(p, _)| {
            format!(
                "{} | {line}: plumb's client exits 0 where the newest iperf3's fails",
                p.name
            )
        })
        .collect()
}

/// Every line of [`COMMANDS`] in one pairing, each against a fresh
/// `-s -1 -J` server: the first half and the second side by side, each
/// half one line after the other.
fn run_pairing(p: Pairing, ports: &[u16]) -> Vec<Ran> {
    let lines: Vec<(&str, u16)> = COMMANDS
        .iter()
        .copied()
        .zip(ports.iter().copied())
        .collect();
    let (first, second) = lines.split_at(lines.len() / 2);
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            first
                .iter()
                .map(|&(l, port)| run_line(p, l, port))
                .collect::<Vec<_>>()
        });
        let mut runs: Vec<Ran> = second
            .iter()
            .map(|&(l, port)| run_line(p, l, port))
            .collect();
        let mut all = a.join().expect("a half's thread");
        all.append(&mut runs);
        all
    })
}

/// One line against a fresh `-s -1 -J` server on `port`.
fn run_line(p: Pairing, line: &str, port: u16) -> Ran {
    let server = Server::start(p.server, &["-s", "-1", "-J"], port);
    let args = client_args(line, port);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let client = try_run(p.client, &a, Duration::from_secs(30));
    Ran {
        client,
        server: server.finish(Duration::from_secs(10)),
    }
}

/// A line's arguments with its host and the server's port.
fn client_args(line: &str, port: u16) -> Vec<String> {
    let host = if line.contains(" -6") {
        "::1"
    } else {
        "127.0.0.1"
    };
    let mut args: Vec<String> = line
        .split_whitespace()
        .map(|w| {
            if w == "HOST" {
                host.to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    args.extend(["-p".to_string(), port.to_string()]);
    args
}

/// What a run counted, if both ends did what the line asks (exit 0, the
/// server's `-J` and the client's where asked for parse), or why not.
fn outcome(line: &str, ran: &Ran) -> Result<Counts, String> {
    let client = ran
        .client
        .as_ref()
        .map_err(|late| format!("client ran past 30 s: {}", tail(&late.stdout)))?;
    if !client.status.success() {
        return Err(format!(
            "client exit {}: {}{}",
            client.status,
            tail(&client.stderr),
            tail(&client.stdout)
        ));
    }
    let server: Value = serde_json::from_slice(&ran.server.stdout)
        .map_err(|e| format!("server -J: {e}: {}", tail(&ran.server.stdout)))?;
    if server.get("end").is_none() || server.get("error").is_some() {
        return Err(format!(
            "server -J: no end or an error: {}",
            tail(&ran.server.stdout)
        ));
    }
    let udp = line.contains(" -u");
    if line.contains(" -J") {
        let doc: Value = serde_json::from_slice(&client.stdout)
            .map_err(|e| format!("client -J: {e}: {}", tail(&client.stdout)))?;
        json_counts(&doc, udp)
    } else {
        text_counts(&String::from_utf8_lossy(&client.stdout), udp)
    }
}

/// What a client reported: its own count and the one the server reported
/// back (TCP bytes, or UDP datagrams sent and expected by the receiver),
/// each with the rounding of its printed form (0 when exact), and whether
/// the receiver reported UDP loss.
#[derive(Debug, Clone, Copy)]
struct Counts {
    sent: (f64, f64),
    received: (f64, f64),
    udp_loss: bool,
}

/// Whether the counts agree: within 1 % plus their rounding; for UDP with
/// loss reported, the receiver expects no more than was sent (datagrams
/// lost at the very end are never seen, so never counted).
fn counts_agree(c: Counts) -> Result<(), String> {
    let ((mine, u1), (theirs, u2)) = (c.sent, c.received);
    if mine <= 0.0 {
        return Err(format!("nothing counted: {mine} vs {theirs}"));
    }
    let room = 0.01 * mine.max(theirs) + u1 + u2;
    let within = (mine - theirs).abs() <= room;
    if within || (c.udp_loss && theirs <= mine) {
        Ok(())
    } else {
        Err(format!(
            "counts differ: sender {mine} vs receiver {theirs} (room {room:.0})"
        ))
    }
}

/// From a client's `-J`: TCP bytes sent and received (both directions of
/// `--bidir` summed), or UDP datagrams.
fn json_counts(doc: &Value, udp: bool) -> Result<Counts, String> {
    if doc["end"].is_null() {
        return Err("client -J: no end".into());
    }
    let key = if udp { "packets" } else { "bytes" };
    let get = |sum: &str| doc["end"][sum][key].as_f64().unwrap_or(0.0);
    let lost = |sum: &str| doc["end"][sum]["lost_packets"].as_u64().unwrap_or(0);
    Ok(Counts {
        sent: (get("sum_sent") + get("sum_sent_bidir_reverse"), 0.0),
        received: (get("sum_received") + get("sum_received_bidir_reverse"), 0.0),
        udp_loss: udp && lost("sum_received") + lost("sum_received_bidir_reverse") > 0,
    })
}

/// From a client's text report: the sender and receiver rows' transfers
/// (the `[SUM]` rows when there are several streams), or for UDP their
/// datagram totals (the `lost/total` column).
fn text_counts(text: &str, udp: bool) -> Result<Counts, String> {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| matches!(w.last(), Some(&"sender") | Some(&"receiver")))
        .collect();
    let sums: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|w| w.iter().any(|t| t.starts_with("[SUM")))
        .collect();
    let chosen: Vec<&Vec<&str>> = if sums.is_empty() {
        rows.iter().collect()
    } else {
        sums
    };
    if chosen.is_empty() {
        return Err(format!(
            "no sender/receiver rows: {}",
            tail(text.as_bytes())
        ));
    }
    let mut c = Counts {
        sent: (0.0, 0.0),
        received: (0.0, 0.0),
        udp_loss: false,
    };
    for w in &chosen {
        let receiver = w.last() == Some(&"receiver");
        let (v, u) = if udp {
            let (lost, total) = datagrams(w)?;
            c.udp_loss |= receiver && lost > 0;
            (total, 0.0)
        } else {
            transfer(w)?
        };
        let side = if receiver {
            &mut c.received
        } else {
            &mut c.sent
        };
        side.0 += v;
        side.1 += u;
    }
    Ok(c)
}

/// A row's transfer in bytes (the number and unit after `sec`) and half a
/// unit of its last digit.
fn transfer(w: &[&str]) -> Result<(f64, f64), String> {
    let at = w
        .iter()
        .position(|t| *t == "sec")
        .ok_or("no 'sec' in a row")?;
    let num = w.get(at + 1).copied().unwrap_or("");
    let unit = w.get(at + 2).copied().unwrap_or("");
    let scale = match unit {
        "Bytes" => 1.0,
        "KBytes" => 1024.0,
        "MBytes" => 1024.0 * 1024.0,
        "GBytes" => 1024.0 * 1024.0 * 1024.0,
        "TBytes" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("unit '{unit}' in {w:?}")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("number '{num}' in {w:?}"))?;
    let decimals = num.split_once('.').map_or(0, |(_, d)| d.len());
    let half = 0.5 * 10f64.powi(-(decimals as i32));
    Ok((v * scale, half * scale))
}

/// A UDP row's datagrams lost and in all (`lost/total`).
fn datagrams(w: &[&str]) -> Result<(u64, f64), String> {
    w.iter()
        .find_map(|t| {
            let (lost, total) = t.split_once('/')?;
            Some((lost.parse::<u64>().ok()?, total.parse::<f64>().ok()?))
        })
        .ok_or_else(|| format!("no lost/total in {w:?}"))
}

/// The last lines of an output, for a failure message.
fn tail(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}
