//! `plumb handshake HOST:PORT…`: the TCP handshake of any service, and what
//! it means for a transfer. Glue only: the probe, the options, the sentences
//! and the document are `plumb_handshake`'s; here are the flags, the text
//! layout and the exit codes.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use plumb_handshake::probe::{handshake, resolve, HandshakeError, Probe};
use plumb_handshake::target::parse_target;
use plumb_model::units::{sig, thousands};
use plumb_record::handshake::{Handshake, HandshakeDocument, Method, OsGuess};

use crate::usage::usage_error;
use plumb_cli::handshake::HandshakeArgs;

/// Runs `plumb handshake`.
pub fn run(a: &HandshakeArgs) -> anyhow::Result<ExitCode> {
    // Every target is checked before any packet leaves: bad input is a
    // usage error, whatever its position.
    let mut addrs: Vec<(String, SocketAddr)> = Vec::new();
    for t in &a.targets {
        let (host, port) = match parse_target(t) {
            Ok(hp) => hp,
            Err(e) => return Ok(usage_error(e)),
        };
        match resolve(&host, port) {
            Ok(addr) => addrs.push((t.clone(), addr)),
            Err(e) => return Ok(usage_error(format!("{t}: {e}"))),
        }
    }
    let probe = Probe {
        count: a.count.into(),
        method: a.connect.then_some(Method::Connect),
        ..Probe::default()
    };
    let mut done = Vec::new();
    let mut failed = false;
    for (t, addr) in &addrs {
        match handshake(*addr, &probe) {
            Ok(seen) => {
                let h = plumb_handshake::entry(t, *addr, seen);
                if !a.json {
                    // A blank line between targets' blocks.
                    if !done.is_empty() {
                        println!();
                    }
                    print!("{}", text(&h));
                    std::io::stdout().flush()?;
                }
                done.push(h);
            }
            Err(e) => {
                failed = true;
                eprintln!("plumb: {t} ({addr}): {}", failure(&e, &probe));
            }
        }
    }
    if a.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &HandshakeDocument { handshakes: done })?;
        writeln!(out)?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The one line for a target that gave no handshake.
fn failure(e: &HandshakeError, p: &Probe) -> String {
    match e {
        HandshakeError::Timeout => format!(
            "no answer to {} SYNs, {} s each: the host is down, or a firewall drops them",
            p.attempts,
            p.timeout.as_secs_f64()
        ),
        HandshakeError::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::NetworkUnreachable | std::io::ErrorKind::HostUnreachable
            ) =>
        {
            "unreachable: this host has no route to it".to_string()
        }
        e => e.to_string(),
    }
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

/// The OS guess: the family and confidence, then why, always called a guess.
fn os_text(g: &OsGuess) -> String {
    let confidence = g.confidence.name();
    let mut s = format!(
        "\nOperating system, a guess from its SYN-ACK: {} ({confidence} confidence)\n",
        g.label
    );
    for r in &g.reasons {
        s.push_str(&format!("  {r}\n"));
    }
    s.push_str(&format!("  note: {}\n", g.note));
    s
}

/// The text: a headline, the fields, what they mean, the caveats.
fn text(h: &Handshake) -> String {
    let o = &h.offer;
    let how = match h.method {
        Method::Syn => "offered in its SYN-ACK to a raw SYN with every option",
        Method::Connect => "negotiated by connect() (TCP_INFO)",
    };
    let mut s = format!(
        "{} ({}): {}, {} handshake{}\n\n",
        h.target,
        h.address,
        how,
        h.handshakes,
        if h.handshakes == 1 { "" } else { "s" }
    );
    let scaling = match (o.window_scaling, o.wscale) {
        (Some(true), Some(shift)) => format!("yes, shift {shift}"),
        (v, _) => yes_no(v).to_string(),
    };
    let bytes = |v: Option<u32>| {
        v.map_or("unknown".to_string(), |b| {
            format!("{} B", thousands(b.into()))
        })
    };
    let mut rows = vec![
        ("window scaling", scaling),
        ("SACK", yes_no(o.sack).to_string()),
        ("timestamps", yes_no(o.timestamps).to_string()),
        ("ECN", yes_no(o.ecn).to_string()),
        ("MSS", bytes(o.mss)),
        ("initial window (SYN-ACK)", bytes(o.initial_window)),
        (
            "handshake RTT (min / median)",
            format!("{} / {} ms", sig(h.rtt_min_ms, 3), sig(h.rtt_median_ms, 3)),
        ),
    ];
    if let Some(ttl) = h.ttl {
        rows.push(("TTL on arrival", ttl.to_string()));
    }
    for (label, value) in rows {
        s.push_str(&format!("  {label:<61}{value}\n"));
    }
    if let Some(g) = &h.os_guess {
        s.push_str(&os_text(g));
    }
    if !h.meaning.is_empty() {
        s.push_str("\nWhat it means:\n");
        for m in &h.meaning {
            s.push_str(&format!("  {m}\n"));
        }
    }
    if !h.notes.is_empty() {
        s.push_str("\nNotes:\n");
        for n in &h.notes {
            s.push_str(&format!("  {n}\n"));
        }
    }
    s
}
