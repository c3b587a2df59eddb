//! iperf3's client and server flags ([`MeasureArgs`]), shared by `plumb -s/-c`,
//! `plumb why HOST`, `plumb lab … -- FLAGS` and the exporter's probes, and
//! what they become: a checked [`TestSpec`], a [`ClientConfig`] (the
//! printer they ask for is the binary's).

use std::net::IpAddr;
use std::time::Duration;

use clap::Args;
use plumb_model::{Bytes, Rate};
use plumb_net::config::{ClientConfig, Family, TestSpec, Transport, DEFAULT_PORT, MAX_STREAMS};
use plumb_proto::tool::{Tool, ToolChoice};

mod file;
pub mod harden;
pub mod local;
pub mod refused;
pub mod stamp;
pub mod tools;

/// iperf3's client and server flags.
#[derive(Debug, Args, Clone, Default)]
pub struct MeasureArgs {
    /// Run as a server
    #[arg(short = 's', long = "server", conflicts_with = "client")]
    pub server: bool,
    /// Run as a client, connecting to HOST
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    pub client: Option<String>,
    /// Port to listen on or connect to [default: 5201]
    #[arg(short = 'p', long = "port", value_parser = crate::args::whole::<u16>)]
    pub port: Option<u16>,
    /// Seconds to transmit [default: 10]
    #[arg(short = 't', long = "time", value_parser = crate::args::seconds, allow_hyphen_values = true)]
    pub time: Option<f64>,
    /// Bytes to transmit instead of a time (64K, 1G, …)
    #[arg(short = 'n', long = "bytes", value_parser = crate::args::bytes, allow_hyphen_values = true)]
    pub bytes: Option<Bytes>,
    /// Blocks (packets) to transmit instead of a time
    #[arg(short = 'k', long = "blockcount", value_parser = parse_count, allow_hyphen_values = true)]
    pub blocks: Option<u64>,
    /// Seconds between periodic reports (0 = none) [default: 1]
    #[arg(short = 'i', long = "interval", value_parser = crate::args::seconds, allow_hyphen_values = true)]
    pub interval: Option<f64>,
    /// Parallel streams [default: 1]
    #[arg(short = 'P', long = "parallel", value_parser = crate::args::whole::<i64>, allow_hyphen_values = true)]
    pub parallel: Option<i64>,
    /// Reverse: the server sends
    #[arg(short = 'R', long = "reverse")]
    pub reverse: bool,
    /// Both directions at once
    #[arg(long = "bidir", conflicts_with = "reverse")]
    pub bidir: bool,
    /// UDP instead of TCP
    #[arg(short = 'u', long = "udp")]
    pub udp: bool,
    /// Multipath TCP data streams (IPPROTO_MPTCP), where the kernel has it
    #[arg(short = 'm', long = "mptcp", conflicts_with = "udp")]
    pub mptcp: bool,
    /// Bits/s per stream, 0 = unlimited [UDP: 1M]
    ///
    /// Target bitrate per stream, bits/s (0 = unlimited) [UDP default: 1M];
    /// RATE/BURST sends BURST packets at a time
    #[arg(short = 'b', long = "bitrate", alias = "bandwidth", allow_hyphen_values = true, value_parser = crate::args::valid(parse_bitrate))]
    pub bitrate: Option<String>,
    /// Block (TCP) or datagram (UDP) length [default: 128K TCP, 1460 UDP]
    #[arg(short = 'l', long = "length", value_parser = crate::args::bytes, allow_hyphen_values = true)]
    pub length: Option<Bytes>,
    /// Socket buffers, both ends (Linux doubles them)
    ///
    /// Socket buffer size for both ends (SO_SNDBUF/SO_RCVBUF; Linux doubles
    /// the value asked for)
    #[arg(short = 'w', long = "window", value_parser = crate::args::bytes, allow_hyphen_values = true)]
    pub window: Option<Bytes>,
    /// TCP maximum segment size
    #[arg(short = 'M', long = "set-mss", value_parser = crate::args::bytes, allow_hyphen_values = true)]
    pub mss: Option<Bytes>,
    /// TCP_NODELAY on the data streams
    #[arg(short = 'N', long = "no-delay")]
    pub nodelay: bool,
    /// TCP congestion control algorithm (cubic, bbr, reno, …)
    #[arg(short = 'C', long = "congestion", alias = "linux-congestion")]
    pub congestion: Option<String>,
    /// Seconds to omit from the start of the statistics
    #[arg(short = 'O', long = "omit", value_parser = crate::args::seconds, allow_hyphen_values = true)]
    pub omit: Option<f64>,
    /// iperf3's verbose output; plumb why: every flow, with everything known of it
    #[arg(short = 'V', long = "verbose")]
    pub verbose: bool,
    /// Start each line of the text output with the time, in strftime's FORMAT [default: "%c "]
    #[arg(long = "timestamps", num_args = 0..=1, require_equals = true, default_missing_value = stamp::DEFAULT_FORMAT, value_name = "FORMAT", value_parser = check_stamp)]
    pub timestamps: Option<String>,
    /// Bitrate unit of the text output: k m g t (bits/sec), K M G T (bytes/sec) [default: adaptive]
    #[arg(short = 'f', long = "format", value_name = "k|m|g|t|K|M|G|T", value_parser = plumb_report::format::RateFormat::parse)]
    pub format: Option<plumb_report::format::RateFormat>,
    /// Output iperf3's JSON
    #[arg(short = 'J', long = "json")]
    pub json: bool,
    /// Output iperf3's line-delimited JSON events as they happen (iperf3 3.17+)
    #[arg(long = "json-stream")]
    pub json_stream: bool,
    /// With --json-stream: also the whole -J document after the events (iperf3 3.19+)
    #[arg(long = "json-stream-full-output", requires = "json_stream")]
    pub json_stream_full_output: bool,
    /// Server: handle one test, then exit
    #[arg(short = '1', long = "one-off")]
    pub one_off: bool,
    /// Server: run in the background (returns once the pid file is written)
    #[arg(short = 'D', long = "daemon")]
    pub daemon: bool,
    /// Server: write the server's process id to this file (removed when it ends)
    #[arg(short = 'I', long = "pidfile", value_name = "FILE")]
    pub pidfile: Option<std::path::PathBuf>,
    /// Bind to this local address
    #[arg(short = 'B', long = "bind")]
    pub bind: Option<IpAddr>,
    /// IPv4 only
    #[arg(short = '4', long = "version4", conflicts_with = "v6")]
    pub v4: bool,
    /// IPv6 only
    #[arg(short = '6', long = "version6")]
    pub v6: bool,
    /// Client: first local port for the data streams
    #[arg(long = "cport", value_parser = crate::args::whole::<u16>)]
    pub cport: Option<u16>,
    /// Run on CPU n; a client's n,m also runs the server's side of this
    /// test on CPU m
    #[arg(short = 'A', long = "affinity", value_name = "n[,m]", value_parser = parse_affinity)]
    pub affinity: Option<Affinity>,
    /// IP type of service byte (decimal, 0x hex or 0 octal)
    #[arg(short = 'S', long = "tos", conflicts_with = "dscp", value_parser = crate::args::valid(parse_tos))]
    pub tos: Option<String>,
    /// DSCP value (0-63 or a name such as af11, ef, cs1)
    #[arg(long = "dscp", value_parser = crate::args::valid(parse_dscp))]
    pub dscp: Option<String>,
    /// Prefix every output line with this title
    #[arg(short = 'T', long = "title")]
    pub title: Option<String>,
    /// Data string to include in the JSON output
    #[arg(long = "extra-data")]
    pub extra_data: Option<String>,
    /// Write the output to this file
    #[arg(long = "logfile")]
    pub logfile: Option<std::path::PathBuf>,
    /// Flush output after every line
    #[arg(long = "forceflush")]
    pub forceflush: bool,
    /// Zero-copy send (splice from a memfd; iperf3 uses sendfile)
    #[arg(short = 'Z', long = "zerocopy")]
    pub zerocopy: bool,
    /// Client: give up connecting after this many milliseconds
    #[arg(long = "connect-timeout", value_name = "MS", value_parser = crate::args::millis)]
    pub connect_timeout: Option<u64>,
    /// Give up when no data has arrived for this many milliseconds [default: 120000]
    #[arg(long = "rcv-timeout", value_name = "MS", value_parser = crate::args::millis)]
    pub rcv_timeout: Option<u64>,
    /// Ask the server for its report and print it too
    #[arg(long = "get-server-output")]
    pub get_server_output: bool,
    /// 64-bit UDP sequence numbers
    #[arg(long = "udp-counters-64bit")]
    pub udp_counters_64bit: bool,
    /// Send the pattern 0123456789… instead of random bytes
    #[arg(long = "repeating-payload")]
    pub repeating_payload: bool,
    /// Clamp the receiver's advertised window to this
    ///
    /// Clamp the receiver's advertised TCP window to exactly this
    /// (TCP_WINDOW_CLAMP)
    #[arg(long = "rwin", value_parser = crate::args::bytes)]
    pub rwin: Option<Bytes>,
    /// Set only the sender's SO_SNDBUF
    #[arg(long = "sndbuf", value_parser = crate::args::bytes)]
    pub sndbuf: Option<Bytes>,
    /// Receiver discards data without copying it (MSG_TRUNC); counts stay exact
    #[arg(long = "skip-rx-copy")]
    pub skip_rx_copy: bool,
    /// The kernel's pacing rate for each sending stream, bits/s (SO_MAX_PACING_RATE; the server's too with -R)
    #[arg(long = "fq-rate", value_name = "RATE", value_parser = crate::args::rate)]
    pub fq_rate: Option<Rate>,
    /// -b is the rate of all -P streams together, shared by one pacer (a
    /// plumb server sending with -R splits it evenly instead)
    #[arg(long = "total-bitrate")]
    pub total_bitrate: bool,
    /// UDP: GSO on the sending end, GRO on the receiving end, as iperf3
    /// 3.21+'s --gsro (jitter then resolves per coalesced read)
    #[arg(long = "gsro", overrides_with = "no_gsro")]
    pub gsro: bool,
    /// UDP: one datagram per message and per-datagram receive times (the default)
    #[arg(long = "no-gsro", overrides_with = "gsro")]
    pub no_gsro: bool,
    /// Request/response latency test: -l byte requests (default 1), one in flight per stream
    #[arg(long = "rr", conflicts_with = "crr")]
    pub rr: bool,
    /// Connect/request/response: a new TCP connection per transaction (netperf's TCP_CRR)
    #[arg(long = "crr")]
    pub crr: bool,
    /// With --rr: transactions in flight per stream [default: 1]
    #[arg(long = "rr-burst", value_parser = crate::args::whole::<u32>)]
    pub rr_burst: Option<u32>,
    /// With --rr/--crr: response size [default: the request size]
    #[arg(long = "response-size", value_parser = crate::args::bytes)]
    pub response_size: Option<Bytes>,
    /// Measure idle and loaded latency beside a throughput test (a separate probe connection)
    #[arg(long = "latency")]
    pub latency: bool,
    /// With --rr: both ends poll the socket without sleeping this many microseconds before a read sleeps, and set SO_BUSY_POLL (at most 1000)
    #[arg(long = "busy-poll", value_parser = crate::args::whole::<u32>)]
    pub busy_poll: Option<u32>,
    /// iperf3's deprecated --no-fq-socket-pacing (its --fq-rate 0): plumb
    /// never sets a fair-queue pacing rate, so it asks for what already holds
    #[arg(long = "no-fq-socket-pacing", hide = true)]
    pub no_fq_socket_pacing: bool,
    /// Send a file's bytes, or with -R write what arrives to it (TCP)
    ///
    /// iperf3's -F: the sending streams send NAME's bytes (with no -t, -n
    /// or -k its size ends the test), or with -R the receiving streams
    /// write what they receive to NAME; TCP only
    #[arg(short = 'F', long = "file", value_name = "NAME")]
    pub file: Option<std::path::PathBuf>,
    /// Trace the control connection on stderr [LEVEL 1-4; 4, all, is the default]
    ///
    /// iperf3's debug output: each state message received and the bytes
    /// written on the control connection, on stderr (stdout, a -J document
    /// included, is unchanged); iperf3's levels 1-3 (errors, warnings,
    /// information) add nothing to what plumb prints anyway
    #[arg(short = 'd', long = "debug", num_args = 0..=1, require_equals = true, value_name = "LEVEL", value_parser = debug_level)]
    pub debug: Option<Option<u8>>,
    /// Peer tool: iperf3 (default), iperf2, nuttcp, or auto
    ///
    /// Client: the peer's wire protocol: iperf3 (the default), iperf2,
    /// nuttcp, or auto (tries iperf3, iperf 2 and nuttcp on their default
    /// ports, or each on -p's port, and says which answered)
    #[arg(long = "tool", value_name = "TOOL", value_parser = ToolChoice::parse)]
    pub tool: Option<ToolChoice>,
    /// With --tool nuttcp: turn the data connection round (nuttcp's -F)
    ///
    /// With --tool nuttcp: turn the data connection round, as nuttcp's -F
    /// does. nuttcp's transmitter connects to its receiver; with --flip the
    /// receiver connects instead, so a sending client behind a firewall
    /// that lets only outgoing connections through is reached by the
    /// server, and a receiving one (-R) connects out itself
    #[arg(long = "flip")]
    pub flip: bool,
    /// Server: answer these tools' clients [default: iperf3]
    ///
    /// Server: answer the clients of these tools, a comma-separated list of
    /// iperf3 (port 5201, or -p), iperf2 (5001) and nuttcp (5000), each
    /// with its own port as TOOL=PORT [default: iperf3]
    #[arg(long = "tools", value_name = "LIST", value_parser = crate::args::valid(Tool::parse_list))]
    pub tools: Option<String>,
    /// Server limits and authentication (see measure/harden.rs).
    #[command(flatten)]
    pub harden: harden::HardenArgs,
    /// This end's own socket options (measure/local.rs).
    #[command(flatten)]
    pub local: local::LocalArgs,
    /// iperf3's flags plumb refuses, each with its reason (measure/refused.rs).
    #[command(flatten)]
    pub refused: refused::RefusedArgs,
    /// After the test, say what limited it
    ///
    /// Client: after the test, say what limited it (see plumb why)
    #[arg(long = "why")]
    pub why: bool,
    /// With --why: the bottleneck's rate (1g, 100M)
    #[arg(long = "link", value_parser = crate::args::rate)]
    pub link: Option<Rate>,
    /// Client: also write an HTML report of the test (charts, verdict) to this file
    #[arg(long = "report", value_name = "FILE")]
    pub report: Option<std::path::PathBuf>,
    /// Also write the -J document to this file (used by plumb lab)
    #[arg(long = "json-file", hide = true)]
    pub json_file: Option<std::path::PathBuf>,
}

/// Flags (argument ids) only a server uses: hidden from `plumb client`'s
/// and `plumb why`'s help.
pub const SERVER_ONLY: &[&str] = &[
    "server",
    "one_off",
    "daemon",
    "pidfile",
    "max_tests",
    "max_duration",
    "max_parallel",
    "max_bitrate",
    "max_total_bitrate",
    "server_bitrate_limit",
    "idle_timeout",
    "tools",
    "max_rr_size",
    "max_rr_burst",
    "allow",
    "deny",
    "handshake_timeout",
    "max_handshakes",
    "rsa_private_key_path",
    "authorized_users_path",
    "time_skew_threshold",
];

/// Flags (argument ids) only a client uses: hidden from `plumb server`'s help.
pub const CLIENT_ONLY: &[&str] = &[
    "client",
    "file",
    "tool",
    "time",
    "bytes",
    "blocks",
    "parallel",
    "reverse",
    "bidir",
    "udp",
    "bitrate",
    "length",
    "window",
    "mss",
    "nodelay",
    "congestion",
    "omit",
    "cport",
    "tos",
    "dscp",
    "title",
    "extra_data",
    "zerocopy",
    "connect_timeout",
    "get_server_output",
    "udp_counters_64bit",
    "repeating_payload",
    "rwin",
    "sndbuf",
    "skip_rx_copy",
    "total_bitrate",
    "why",
    "link",
    "username",
    "rsa_public_key_path",
    "use_pkcs1_padding",
    "fq_rate",
    "mptcp",
    "cntl_ka",
    "dont_fragment",
    "flowlabel",
];

/// `-A n[,m]`: the CPU this end runs on, and the one a client asks the
/// server to run the test on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Affinity {
    /// n: this end's CPU.
    pub local: u32,
    /// m: the server's CPU for this test (client only).
    pub server: Option<u32>,
}

/// Parses `-A`'s `n` or `n,m`.
pub fn parse_affinity(s: &str) -> Result<Affinity, String> {
    let cpu = |x: &str| {
        x.trim().parse::<u32>().map_err(|_| {
            format!(
                "invalid CPU '{s}' (accepted: a CPU number n, or n,m on a client: -A 0 or -A 0,1)"
            )
        })
    };
    match s.split_once(',') {
        None => Ok(Affinity {
            local: cpu(s)?,
            server: None,
        }),
        Some((n, m)) => Ok(Affinity {
            local: cpu(n)?,
            server: Some(cpu(m)?),
        }),
    }
}

/// The first server-only flag given, by its long name, if any.
pub fn server_flag_given(a: &MeasureArgs) -> Option<&'static str> {
    if a.server {
        Some("-s")
    } else if a.one_off {
        Some("-1")
    } else if a.daemon {
        Some("-D")
    } else if a.pidfile.is_some() {
        Some("-I")
    } else if a.tools.is_some() {
        Some("--tools")
    } else {
        a.harden.server_flags_given()
    }
}

/// The first flag given that shapes a test's traffic, if any: without a
/// test to run (`plumb why` on a file, a capture or live connections) it
/// would be ignored, so it is refused instead.
pub fn traffic_flag_given(a: &MeasureArgs) -> Option<&'static str> {
    [
        (a.time.is_some(), "-t"),
        (a.bytes.is_some(), "-n"),
        (a.blocks.is_some(), "-k"),
        (a.parallel.is_some(), "-P"),
        (a.reverse, "-R"),
        (a.bidir, "--bidir"),
        (a.udp, "-u"),
        (a.bitrate.is_some(), "-b"),
        (a.omit.is_some(), "-O"),
        (a.zerocopy, "-Z"),
        (a.tool.is_some(), "--tool"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name))
}

/// iperf3's `-d` levels: 1 errors, 2 warnings, 3 information, 4 all.
fn debug_level(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(n @ 1..=4) => Ok(n),
        _ => Err(format!("invalid debug level '{s}' (accepted: 1 to 4)")),
    }
}

/// Whether `-d` asks for the trace (level 4, the default).
pub fn debug_on(a: &MeasureArgs) -> bool {
    a.debug.is_some_and(|l| l.unwrap_or(4) >= 4)
}

/// A `--timestamps` format strftime can read.
fn check_stamp(s: &str) -> Result<String, String> {
    stamp::check(s).map(|()| s.to_string())
}

fn parse_count(s: &str) -> Result<u64, String> {
    let b = Bytes::parse(s).map_err(|e| e.to_string().replace("invalid size", "invalid count"))?;
    Ok(b.get())
}

fn u32_of(what: &str, b: Bytes, max: u64) -> Result<u32, String> {
    if b.get() > max {
        // Exact and in the units a user types (`99 GiB`, `512 MiB`).
        return Err(format!("{what} {b} is too large (at most {})", Bytes(max)));
    }
    Ok(b.get() as u32)
}

/// Parses a TOS byte as iperf3 does: decimal, `0x` hex or leading-`0` octal.
fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u32::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<u32>()
    };
    match v {
        Ok(v) if v <= 255 => Ok(v as u8),
        _ => Err(format!(
            "invalid TOS '{s}': not 0 to 255 (accepted: 16, 0x10, 020: decimal, 0x hex or 0 octal)"
        )),
    }
}

/// DSCP by number or RFC 4594 name, shifted into the TOS byte.
fn parse_dscp(s: &str) -> Result<u8, String> {
    let t = s.trim().to_ascii_lowercase();
    let named = match t.as_str() {
        "ef" => Some(46),
        "va" => Some(44),
        "le" => Some(1),
        "df" | "be" => Some(0),
        _ => None,
    };
    let v = if let Some(v) = named {
        v
    } else if let Some(n) = t
        .strip_prefix("cs")
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| *n <= 7)
    {
        n * 8
    } else if let Some((c, d)) = t.strip_prefix("af").and_then(|r| {
        let mut ch = r.chars();
        Some((ch.next()?.to_digit(10)?, ch.next()?.to_digit(10)?)).filter(|_| ch.next().is_none())
    }) {
        if !(1..=4).contains(&c) || !(1..=3).contains(&d) {
            return Err(format!(
                "invalid DSCP '{s}': AF classes are af11 to af43 (accepted: 0 to 63, ef, af11…af43, cs0…cs7)"
            ));
        }
        c * 8 + d * 2
    } else {
        match parse_tos(&t) {
            Ok(v) if v <= 63 => u32::from(v),
            _ => {
                return Err(format!(
                    "invalid DSCP '{s}': not 0 to 63 or a name (accepted: 0 to 63, ef, af11…af43, cs0…cs7)"
                ))
            }
        }
    };
    Ok((v << 2) as u8)
}

/// Parses `-b RATE[/BURST]`; `0` means unlimited.
fn parse_bitrate(s: &str) -> Result<u64, String> {
    let rate = s.split('/').next().unwrap_or(s).trim();
    if let Some(b) = s.split('/').nth(1) {
        match b.trim().parse::<u32>() {
            Ok(n) if (1..=1000).contains(&n) => {}
            _ => {
                return Err(format!(
                    "invalid burst '{b}' in '{s}': not 1 to 1000 packets (accepted: 10M, 10M/32, 0 for unlimited)"
                ))
            }
        }
    }
    if rate
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<f64>()
        == Ok(0.0)
    {
        return Ok(0);
    }
    Rate::parse(rate)
        .map(|r| r.bps().round() as u64)
        .map_err(|e| e.to_string())
}

/// Checks the flags and builds the test the client asks for.
pub fn test_spec(a: &MeasureArgs) -> Result<TestSpec, String> {
    let mut t = TestSpec::default();
    if a.udp {
        t.transport = Transport::Udp;
    }
    end_spec(a, &mut t)?;
    stream_spec(a, &mut t)?;
    if let Some(b) = &a.bitrate {
        t.bandwidth = Some(parse_bitrate(b)?);
    }
    socket_spec(a, &mut t)?;
    t.reverse = a.reverse;
    t.bidir = a.bidir;
    t.nodelay = a.nodelay;
    t.title.clone_from(&a.title);
    t.extra_data.clone_from(&a.extra_data);
    t.get_server_output = a.get_server_output;
    t.udp_counters_64bit = a.udp_counters_64bit;
    t.repeating_payload = a.repeating_payload;
    t.zerocopy = a.zerocopy;
    transport_spec(a, &mut t)?;
    file::apply(&file_flags(a), &mut t)?;
    latency_spec(a, &mut t)?;
    Ok(t)
}

/// How the test ends: `-t`, `-n` or `-k`, one of them.
fn end_spec(a: &MeasureArgs, t: &mut TestSpec) -> Result<(), String> {
    let ends = [a.time.is_some(), a.bytes.is_some(), a.blocks.is_some()];
    if ends.into_iter().filter(|&e| e).count() > 1 {
        return Err("give one test end condition: -t, -n or -k (as iperf3 does)".into());
    }
    if let Some(time) = a.time {
        if !(0.0..=86_400.0).contains(&time) || !time.is_finite() {
            return Err(format!(
                "invalid time '{time}': expected 0 to 86400 seconds"
            ));
        }
        t.time = time;
        t.time_given = true;
    }
    t.bytes = a.bytes.map_or(0, Bytes::get);
    t.blocks = a.blocks.unwrap_or(0);
    if (t.bytes > 0 || t.blocks > 0) && !t.time_given {
        t.time = 0.0;
    }
    Ok(())
}

/// The streams and their reports: `-i`, `-P`, `-O`, `-l`.
fn stream_spec(a: &MeasureArgs, t: &mut TestSpec) -> Result<(), String> {
    if let Some(i) = a.interval {
        if !(i == 0.0 || (0.1..=60.0).contains(&i)) {
            return Err(format!(
                "invalid interval '{i}': expected 0 (none) or 0.1 to 60 seconds"
            ));
        }
        t.interval = i;
    }
    if let Some(p) = a.parallel {
        if !(1..=i64::from(MAX_STREAMS)).contains(&p) {
            return Err(format!(
                "invalid number of streams '{p}': expected 1 to {MAX_STREAMS}"
            ));
        }
        t.parallel = p as u32;
    }
    if let Some(o) = a.omit {
        if !(0.0..=600.0).contains(&o) {
            return Err(format!("invalid omit '{o}': expected 0 to 600 seconds"));
        }
        t.omit = o;
    }
    if let Some(l) = a.length {
        let udp = plumb_net::rr::UDP_LEN;
        let (lo, hi) = if a.udp {
            (*udp.start() as u64, *udp.end() as u64)
        } else {
            (1, 1 << 20)
        };
        if !(lo..=hi).contains(&l.get()) {
            return Err(format!(
                "invalid length {} B: {} blocks must be {lo} to {hi} bytes",
                l.get(),
                if a.udp { "UDP" } else { "TCP" }
            ));
        }
        t.len = Some(l.get() as u32);
    }
    Ok(())
}

/// The data sockets' options: `-w`, `-M`, `-C`, `-S`/`--dscp`.
fn socket_spec(a: &MeasureArgs, t: &mut TestSpec) -> Result<(), String> {
    if let Some(w) = a.window {
        t.window = Some(u32_of("window", w, 512 << 20)?);
    }
    if let Some(m) = a.mss {
        if !(88..=9216).contains(&m.get()) {
            return Err(format!("invalid MSS {} B: expected 88 to 9216", m.get()));
        }
        t.mss = Some(m.get() as u32);
    }
    if let Some(cc) = &a.congestion {
        if cc.is_empty()
            || cc.len() > 15
            || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(format!(
                "invalid congestion control '{cc}': expected a name such as cubic, bbr or reno"
            ));
        }
        t.congestion = Some(cc.clone());
    }
    if let Some(tos) = &a.tos {
        t.tos = parse_tos(tos)?;
    }
    if let Some(d) = &a.dscp {
        t.tos = parse_dscp(d)?;
    }
    Ok(())
}

/// What `-F` is checked against (measure/file.rs).
fn file_flags(a: &MeasureArgs) -> file::FileFlags<'_> {
    file::FileFlags {
        file: a.file.as_deref(),
        udp: a.udp,
        bidir: a.bidir,
        latency_test: a.rr || a.crr || a.latency,
        end_given: a.time.is_some() || a.bytes.is_some() || a.blocks.is_some(),
        reverse: a.reverse,
    }
}

/// The flags that belong to one transport — TCP's buffers, clamp, MSS,
/// zero-copy and flow label; UDP's GSO/GRO — and the sending streams'
/// pacing.
fn transport_spec(a: &MeasureArgs, t: &mut TestSpec) -> Result<(), String> {
    if a.udp
        && (a.rwin.is_some()
            || a.sndbuf.is_some()
            || a.zerocopy
            || a.mss.is_some()
            || a.local.flowlabel.is_some())
    {
        return Err("--rwin, --sndbuf, -M, -Z and -L apply to TCP, not UDP (-u)".into());
    }
    if let Some(r) = a.rwin {
        t.rwin = Some(u32_of("--rwin", r, 1 << 30)?);
    }
    if let Some(s) = a.sndbuf {
        t.sndbuf = Some(u32_of("--sndbuf", s, 1 << 30)?);
    }
    t.skip_rx_copy = a.skip_rx_copy;
    t.total_bitrate = a.total_bitrate;
    t.fq_rate = a.fq_rate.map_or(0, |r| r.bps().round() as u64);
    t.mptcp = a.mptcp;
    if a.gsro && !a.udp {
        return Err("--gsro applies to UDP (-u), not TCP".into());
    }
    t.gsro = a.gsro && a.udp;
    Ok(())
}

/// `--rr`, `--crr`, `--latency` and their options into the spec.
fn latency_spec(a: &MeasureArgs, t: &mut TestSpec) -> Result<(), String> {
    use plumb_net::rr::{RrMode, RrParams};
    let rr = a.rr || a.crr;
    if !rr && (a.rr_burst.is_some() || a.response_size.is_some() || a.busy_poll.is_some()) {
        return Err("--rr-burst, --response-size and --busy-poll need --rr or --crr".into());
    }
    if a.crr && a.rr_burst.is_some() {
        return Err("--rr-burst applies to --rr: a CRR transaction is one connection".into());
    }
    if a.latency && rr {
        return Err(
            "--latency measures a throughput test; --rr and --crr measure latency themselves"
                .into(),
        );
    }
    if rr && (a.reverse || a.bidir) {
        return Err("--rr and --crr have no direction: drop -R/--bidir".into());
    }
    t.latency = a.latency;
    t.busy_poll = a.busy_poll;
    t.server_affinity = a.affinity.and_then(|x| x.server);
    if !rr {
        return Ok(());
    }
    let udp = a.udp;
    let request = match a.length {
        Some(l) => u32::try_from(l.get()).unwrap_or(u32::MAX),
        // The shortest datagram a server takes in the parameters (iperf3's
        // own minimum), though the request/response header needs only
        // MIN_UDP_MESSAGE: a shorter default was refused with error 20.
        None if udp => *plumb_net::rr::UDP_LEN.start() as u32,
        None => 1,
    };
    let p = RrParams {
        mode: if a.crr { RrMode::Crr } else { RrMode::Rr },
        request,
        response: a
            .response_size
            .map_or(request, |r| u32::try_from(r.get()).unwrap_or(u32::MAX)),
        burst: a.rr_burst.unwrap_or(1),
        busy_poll_us: a.busy_poll,
    };
    p.validate(udp)
        .map_err(|e| format!("invalid request/response test: {e}"))?;
    t.len = Some(request);
    t.rr = Some(p);
    Ok(())
}

/// The address family `-4` or `-6` asks for.
pub fn family(a: &MeasureArgs) -> Family {
    if a.v4 {
        Family::V4
    } else if a.v6 {
        Family::V6
    } else {
        Family::Any
    }
}

/// The client run the flags describe, for a checked `spec`, with its
/// authentication (password from `IPERF3_PASSWORD`, as iperf3).
pub fn client_config(a: &MeasureArgs, spec: TestSpec) -> Result<ClientConfig, String> {
    if let Some(f) = [(a.daemon, "-D"), (a.pidfile.is_some(), "-I")]
        .into_iter()
        .find_map(|(given, f)| given.then_some(f))
    {
        return Err(format!("{f} is a server option (use it with -s)"));
    }
    let auth = a
        .harden
        .client_auth(std::env::var(harden::PASSWORD_ENV).ok())?;
    let tool = match a.tool {
        Some(ToolChoice::One(t)) => t,
        _ => Tool::Iperf3,
    };
    if a.flip && tool != Tool::Nuttcp {
        return Err("--flip is nuttcp's -F: give it with --tool nuttcp".into());
    }
    let default_port = if tool == Tool::Iperf3 {
        DEFAULT_PORT
    } else {
        tool.default_port()
    };
    Ok(ClientConfig {
        tool,
        host: a.client.clone().unwrap_or_default(),
        port: a.port.unwrap_or(default_port),
        bind: a.bind,
        cport: a.cport,
        family: family(a),
        connect_timeout: a.connect_timeout.map(Duration::from_millis),
        rcv_timeout: Duration::from_millis(a.rcv_timeout.unwrap_or(120_000)),
        spec,
        auth,
        local: a.local.options(),
        debug: debug_on(a),
        flip: a.flip,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_and_dscp() {
        assert_eq!(parse_tos("0x10"), Ok(16));
        assert_eq!(parse_tos("020"), Ok(16));
        assert_eq!(parse_tos("16"), Ok(16));
        assert!(parse_tos("256").is_err());
        assert_eq!(parse_dscp("ef"), Ok(184));
        assert_eq!(parse_dscp("af11"), Ok(40));
        assert_eq!(parse_dscp("cs1"), Ok(32));
        assert_eq!(parse_dscp("46"), Ok(184));
        assert!(parse_dscp("af51").is_err());
        assert!(parse_dscp("64").is_err());
    }

    #[test]
    fn bitrates() {
        assert_eq!(parse_bitrate("100M"), Ok(100_000_000));
        assert_eq!(parse_bitrate("0"), Ok(0));
        assert_eq!(parse_bitrate("1G/10"), Ok(1_000_000_000));
        assert!(parse_bitrate("1G/0").is_err());
        assert!(parse_bitrate("fast").is_err());
    }

    #[test]
    fn spec_checks() {
        let a = MeasureArgs {
            parallel: Some(0),
            ..MeasureArgs::default()
        };
        assert!(test_spec(&a).is_err());
        let a = MeasureArgs {
            bytes: Some(Bytes(1000)),
            ..MeasureArgs::default()
        };
        let t = test_spec(&a).expect("valid");
        assert_eq!((t.bytes, t.time), (1000, 0.0));
        let a = MeasureArgs {
            bytes: Some(Bytes(1000)),
            time: Some(2.0),
            ..MeasureArgs::default()
        };
        assert!(test_spec(&a).is_err_and(|e| e.contains("one test end condition")));
        let a = MeasureArgs {
            udp: true,
            rwin: Some(Bytes(17_520)),
            ..MeasureArgs::default()
        };
        assert!(test_spec(&a).is_err());
    }
}
