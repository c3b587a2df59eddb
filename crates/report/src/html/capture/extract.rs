//! From a capture's evidence to what its page draws: the flows busiest
//! first (payload bytes, then packets), at most [`MAX_FLOWS`], each with its
//! figures and, per direction that carried data, the points of its charts
//! in seconds since the flow's first segment.

use plumb_capture::{Analysis, Connection, Direction, Series};

/// Flows drawn per capture; the others are counted.
pub const MAX_FLOWS: usize = 12;
/// Throughput bins across a flow's duration, at most (fewer when the
/// series' own bins are wider).
const RATE_BINS: u64 = 120;
/// Data points per throughput bin, at least (on average): a bin shorter
/// than a few segments' spacing reads as on/off, not as a rate.
const POINTS_PER_RATE_BIN: u64 = 8;

/// The flows of one capture the page draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Flows {
    /// The busiest flows, busiest first.
    pub flows: Vec<Flow>,
    /// Flows in the capture not drawn (past [`MAX_FLOWS`]).
    pub more: usize,
    /// Connections the analysis dropped to stay under its ceiling.
    pub dropped: u64,
    /// TCP segments in the capture.
    pub segments: u64,
}

/// One flow's figures and charts.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Its index among the capture's connections (by first segment).
    pub index: usize,
    /// The client (the SYN's sender) and the server.
    pub client: String,
    /// The server.
    pub server: String,
    /// Segments each way: client → server, server → client.
    pub packets: (u64, u64),
    /// Payload bytes each way.
    pub bytes: (u64, u64),
    /// Retransmitted segments each way.
    pub retransmissions: (u64, u64),
    /// First to last segment, seconds.
    pub duration_s: f64,
    /// The handshake's RTT from the capture point, ms.
    pub handshake_rtt_ms: Option<f64>,
    /// The directions that carried data, the busier first.
    pub directions: Vec<DataDirection>,
    /// The flow's verdict, already written, when one was given.
    pub verdict: Option<String>,
}

/// One direction's charts, x in seconds since the flow's first segment.
#[derive(Debug, Clone, PartialEq)]
pub struct DataDirection {
    /// "sender → receiver".
    pub label: String,
    /// New data sent: (time, first byte, one past the last), relative.
    pub sent: Vec<(f64, f64, f64)>,
    /// Retransmitted data, likewise.
    pub resent: Vec<(f64, f64, f64)>,
    /// The receiver's ACK line: (time, relative ACK).
    pub ack: Vec<(f64, f64)>,
    /// The advertised window's right edge: (time, ACK + window).
    pub edge: Vec<(f64, f64)>,
    /// Throughput: (bin start, bit/s), every bin from the first to the last.
    pub rate: Vec<(f64, f64)>,
    /// RTT from the capture point: (time, mean ms in the bin).
    pub rtt_ms: Vec<(f64, f64)>,
    /// The advertised window: (time, smallest bytes in the bin).
    pub window: Vec<(f64, f64)>,
    /// The width of the series' bins, s (how far it was thinned).
    pub bin_s: f64,
}

/// The flows of `a`, busiest first; `verdicts[i]` is connection `i`'s
/// verdict, when there is one.
pub fn flows(a: &Analysis, verdicts: &[Option<String>]) -> Flows {
    let mut order: Vec<usize> = (0..a.connections.len()).collect();
    let weight = |c: &Connection| (c.client.payload_bytes + c.server.payload_bytes, c.packets());
    order.sort_by_key(|&i| std::cmp::Reverse(weight(&a.connections[i])));
    let more = order.len().saturating_sub(MAX_FLOWS);
    let flows = order
        .into_iter()
        .take(MAX_FLOWS)
        .map(|i| flow(i, &a.connections[i], verdicts.get(i).cloned().flatten()))
        .collect();
    Flows {
        flows,
        more,
        dropped: a.dropped.connections,
        segments: a.decode.tcp,
    }
}

fn flow(index: usize, c: &Connection, verdict: Option<String>) -> Flow {
    let t0 = c.first_ns();
    let mut dirs: Vec<(&Direction, &Direction)> =
        vec![(&c.client, &c.server), (&c.server, &c.client)];
    dirs.retain(|(d, _)| d.payload_bytes > 0);
    dirs.sort_by_key(|(d, _)| std::cmp::Reverse(d.payload_bytes));
    let directions = dirs
        .into_iter()
        .filter_map(|(d, peer)| {
            let s = d.series.as_deref()?;
            Some(direction(format!("{} → {}", d.sender, peer.sender), s, t0))
        })
        .collect();
    Flow {
        index,
        client: c.client.sender.clone(),
        server: c.server.sender.clone(),
        packets: (c.client.packets, c.server.packets),
        bytes: (c.client.payload_bytes, c.server.payload_bytes),
        retransmissions: (
            c.client.retransmissions.total,
            c.server.retransmissions.total,
        ),
        duration_s: c.last_ns().saturating_sub(t0) as f64 / 1e9,
        handshake_rtt_ms: c.handshake.rtt_ns.map(|n| n as f64 / 1e6),
        directions,
        verdict,
    }
}

/// Seconds since `t0` of a time in ns since the epoch.
fn secs(ts: u64, t0: u64) -> f64 {
    ts.saturating_sub(t0) as f64 / 1e9
}

/// One direction's charts from its series.
pub fn direction(label: String, s: &Series, t0: u64) -> DataDirection {
    let range = |r: plumb_capture::SeqRange| (r.start as f64, r.end as f64);
    let mut d = DataDirection {
        label,
        sent: Vec::new(),
        resent: Vec::new(),
        ack: Vec::new(),
        edge: Vec::new(),
        rate: rate(s, t0),
        rtt_ms: Vec::new(),
        window: Vec::new(),
        bin_s: s.data.width_ns as f64 / 1e9,
    };
    for (_, p) in &s.data.bins {
        let t = secs(p.ts, t0);
        if let Some((a, b)) = p.sent.map(range) {
            d.sent.push((t, a, b));
        }
        if let Some((a, b)) = p.resent.map(range) {
            d.resent.push((t, a, b));
        }
    }
    for (_, p) in &s.acks.bins {
        let t = secs(p.ts, t0);
        d.ack.push((t, p.ack as f64));
        if let Some(e) = p.edge {
            d.edge.push((t, e as f64));
        }
        if let Some(w) = p.window {
            d.window.push((t, w as f64));
        }
    }
    for (_, p) in &s.rtt.bins {
        if p.count > 0 {
            let mean = p.sum_ns as f64 / p.count as f64;
            d.rtt_ms.push((secs(p.ts, t0), mean / 1e6));
        }
    }
    d
}

/// Throughput per display bin: the data bins' bytes summed into bins a
/// whole number of series bins wide, between 10 and [`RATE_BINS`] across
/// the data (fewer for fewer points), empty bins included (as zero).
fn rate(s: &Series, t0: u64) -> Vec<(f64, f64)> {
    let d = &s.data;
    let Some(&(last, _)) = d.bins.last() else {
        return Vec::new();
    };
    let span = (last + 1).saturating_mul(d.width_ns);
    let points = u64::try_from(d.bins.len()).unwrap_or(u64::MAX);
    let bins = (points / POINTS_PER_RATE_BIN).clamp(10, RATE_BINS);
    let per = (span / bins / d.width_ns.max(1)).max(1);
    let width = per.saturating_mul(d.width_ns);
    let n = usize::try_from(last / per + 1).unwrap_or(usize::MAX);
    let mut bytes = vec![0u64; n];
    for (k, p) in &d.bins {
        if let Some(b) = usize::try_from(k / per).ok().and_then(|i| bytes.get_mut(i)) {
            *b += p.bytes;
        }
    }
    let w_s = width as f64 / 1e9;
    bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let start = d.origin_ns + i as u64 * width;
            (secs(start, t0), *b as f64 * 8.0 / w_s)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use plumb_capture::{read_records, Analyzer};
    use plumb_record::capture::Limits;

    /// A pcap of one flow: 10.0.0.1:40000 sends `n` segments of 1000 bytes
    /// 1 ms apart (no handshake), 10.0.0.2:5201 ACKs each 5 ms later with a
    /// window of 3000; segment 3 is resent, with its own IP ID (the same
    /// bytes with the same ID half a millisecond later would be the
    /// capture's copy of it, not a resend).
    pub(crate) fn capture(n: u32) -> Vec<u8> {
        let mut recs: Vec<(u64, Vec<u8>)> = Vec::new();
        let frame = |from_client: bool, seq: u32, ack: u32, len: usize| {
            let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
            let (src, dst, sp, dp) = if from_client {
                (a, b, 40000, 5201)
            } else {
                (b, a, 5201, 40000)
            };
            let mut v = Vec::new();
            let t = etherparse::PacketBuilder::ethernet2([2; 6], [4; 6])
                .ipv4(src, dst, 64)
                .tcp(sp, dp, seq, 3000)
                .ack(ack);
            t.write(&mut v, &vec![0u8; len]).expect("frame");
            v
        };
        let t0 = 1_700_000_000_000_000_000u64;
        for i in 0..n {
            let t = t0 + u64::from(i) * 1_000_000;
            let seq = 100 + i * 1000;
            recs.push((t, frame(true, seq, 7, 1000)));
            if i == 3 {
                let mut again = frame(true, seq, 7, 1000);
                set_ipv4_id(&mut again[14..34], 1);
                recs.push((t + 500_000, again));
            }
            recs.push((t + 5_000_000, frame(false, 7, seq + 1000, 0)));
        }
        recs.sort_by_key(|r| r.0);
        let mut out = Vec::new();
        for w in [0xa1b2c3d4u32, 0x0002_0004, 0, 0, 65535, 1] {
            let bytes = w.to_le_bytes();
            // Magic, version (2.4 as two u16), zone, sigfigs, snaplen, link.
            if w == 0x0002_0004 {
                out.extend_from_slice(&2u16.to_le_bytes());
                out.extend_from_slice(&4u16.to_le_bytes());
            } else {
                out.extend_from_slice(&bytes);
            }
        }
        for (t, f) in recs {
            let len = u32::try_from(f.len()).expect("small");
            for w in [
                u32::try_from(t / 1_000_000_000).expect("secs"),
                u32::try_from(t % 1_000_000_000 / 1000).expect("us"),
                len,
                len,
            ] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(&f);
        }
        out
    }

    /// Writes `id` into the 20-byte IPv4 header `ip`, and its checksum again.
    fn set_ipv4_id(ip: &mut [u8], id: u16) {
        ip[4..6].copy_from_slice(&id.to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let mut sum: u32 = ip
            .chunks_exact(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    }

    pub(crate) fn analysis(bytes: &[u8]) -> Analysis {
        let mut a = Analyzer::new(Limits::default()).with_series(1000);
        let read = read_records(bytes, |r| a.record(r)).expect("a capture");
        a.finish(read)
    }

    #[test]
    fn a_flow_becomes_its_charts_points() {
        let a = analysis(&capture(50));
        assert_eq!(a.connections.len(), 1);
        let f = flows(&a, &[Some("the verdict".into())]);
        assert_eq!((f.flows.len(), f.more, f.dropped), (1, 0, 0));
        let flow = &f.flows[0];
        assert_eq!(flow.verdict.as_deref(), Some("the verdict"));
        assert_eq!(flow.bytes, (51_000, 0));
        assert_eq!(flow.packets, (51, 50));
        // Only the client carried data: one direction drawn.
        assert_eq!(flow.directions.len(), 1);
        let d = &flow.directions[0];
        assert_eq!(d.label, "10.0.0.1:40000 → 10.0.0.2:5201");
        assert_eq!(d.sent.len(), 50);
        assert_eq!(d.sent[0], (0.0, 0.0, 1000.0));
        assert_eq!(d.resent, vec![(0.0035, 3000.0, 4000.0)]);
        // Without the handshake the window scale is unknown: no edge, no
        // window, but the ACK line.
        assert_eq!(d.ack.len(), 50);
        assert_eq!(d.ack[0], (0.005, 1000.0));
        assert!(d.edge.is_empty() && d.window.is_empty());
        assert!(d.rtt_ms.iter().all(|&(_, ms)| (ms - 5.0).abs() < 1e-9));
        // Throughput: 51 points make 10 bins over the 49 ms of data, and
        // together they carry every byte sent.
        assert!((10..=11).contains(&d.rate.len()), "{}", d.rate.len());
        let width = d.rate[1].0 - d.rate[0].0;
        let bits: f64 = d.rate.iter().map(|&(_, r)| r * width).sum();
        assert!((bits - 51_000.0 * 8.0).abs() < 1.0, "{bits}");
    }

    #[test]
    fn the_busiest_flows_come_first_and_the_rest_are_counted() {
        let a = analysis(&capture(5));
        let mut many = a.clone();
        for k in 0..20u64 {
            let mut c = a.connections[0].clone();
            c.client.payload_bytes = k;
            many.connections.push(c);
        }
        let f = flows(&many, &[]);
        assert_eq!(f.flows.len(), MAX_FLOWS);
        assert_eq!(f.more, 21 - MAX_FLOWS);
        assert_eq!(f.flows[0].index, 0);
        assert_eq!(f.flows[1].bytes.0, 19);
        assert!(f.flows.iter().all(|fl| fl.verdict.is_none()));
    }
}
