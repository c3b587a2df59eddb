//! One stream's thread body: what a data thread of a [`super::Session`]
//! runs, by the stream's socket, its direction and the plan (a
//! request/response loop, a file or a block sent, bytes received, UDP
//! each way), with everything it needs moved in.

use std::sync::Arc;

use crate::buf::{DiscardBuf, PageBuf};
use crate::datapath::{self, Drain, TcpSource};
use crate::datathread::{Counters, StopAndBudget};
use crate::pacing::Pacer;
use crate::plan::Plan;
use crate::sockets::StreamSocket;

/// A stream's work, moved into its thread.
pub(super) struct StreamJob {
    pub sock: StreamSocket,
    pub sender: bool,
    pub plan: Plan,
    pub rr: crate::rr::RrContext,
    pub shared: Arc<StopAndBudget>,
    pub counters: Arc<Counters>,
    pub pacer: Option<Pacer>,
    /// The senders' shared payload block, if there is one.
    pub block: Option<Arc<PageBuf>>,
    /// A receiver's landing place for bytes it discards.
    pub sink: Option<Arc<DiscardBuf>>,
    /// The CPUs a receiver sizes its reads by.
    pub cpus: usize,
    pub drain: Drain,
    /// Whether the thread runs in the batch class (a sender after its
    /// first block).
    pub batch: bool,
}

impl StreamJob {
    /// Runs the stream to its end.
    pub fn run(self) {
        let StreamJob {
            sock,
            sender,
            plan,
            rr,
            shared,
            counters: c,
            pacer,
            block,
            sink,
            cpus,
            drain,
            batch,
        } = self;
        match (sock, sender) {
            (sock, client) if plan.rr.is_some() => {
                let p = plan.rr.unwrap_or_default();
                crate::rr::run_stream(&sock, client, p, &rr, &shared, &c);
            }
            (StreamSocket::Tcp(t), true) if plan.file.is_some() => {
                send_file(&t, &plan, &shared, &c, pacer, batch);
            }
            (StreamSocket::Tcp(t), true) => {
                let src = tcp_source(block, &plan);
                // Into the batch class after the first block.
                datapath::tcp_send(&t, src, &shared, &c, pacer, batch);
            }
            (StreamSocket::Tcp(t), false) => match recv_how(&plan, cpus) {
                Ok(how) => datapath::tcp_recv(&t, how, sink.as_deref(), &shared, &c, drain),
                Err(e) => c.fail(e),
            },
            (StreamSocket::Udp(u), true) => {
                datapath::udp_send(
                    &u,
                    plan.len,
                    plan.seq64,
                    plan.repeating,
                    plan.gso,
                    &shared,
                    &c,
                    pacer,
                );
            }
            (StreamSocket::Udp(u), false) => {
                datapath::udp_recv(&u, plan.len, plan.seq64, plan.gro, &shared, &c)
            }
        }
    }
}

/// What a TCP sender writes: the shared block (or one of its own), moved
/// into a pipe or memfd for `-Z` where that works.
fn tcp_source(block: Option<Arc<PageBuf>>, plan: &Plan) -> TcpSource {
    let buf = block.unwrap_or_else(|| Arc::new(datapath::payload_block(plan.len, plan.repeating)));
    if !plan.zerocopy {
        return TcpSource::Copy(buf);
    }
    match TcpSource::zero_copy(&buf) {
        // The pipe or memfd holds its own copy.
        Ok(z) => {
            drop(buf);
            z
        }
        Err(_) => TcpSource::Copy(buf),
    }
}

/// A TCP sender of `-F`'s file: the stream ends where the file does.
fn send_file(
    t: &std::net::TcpStream,
    plan: &Plan,
    shared: &StopAndBudget,
    c: &Counters,
    pacer: Option<Pacer>,
    batch: bool,
) {
    let path = plan.file.as_deref().unwrap_or(std::path::Path::new(""));
    match crate::diskfile::FileSource::open(path, plan.len) {
        Ok(f) => datapath::tcp_send(t, TcpSource::File(f), shared, c, pacer, batch),
        Err(e) => c.fail(format!("cannot read {}: {e}", path.display())),
    }
}

/// How a TCP receiver of this plan reads (into `-F`'s file when given).
fn recv_how(plan: &Plan, cpus: usize) -> Result<datapath::TcpRecv, String> {
    let file = match plan.file.as_deref() {
        None => None,
        Some(p) => Some(
            crate::diskfile::open_for_writing(p)
                .map_err(|e| format!("cannot write {}: {e}", p.display()))?,
        ),
    };
    Ok(datapath::TcpRecv {
        len: plan.len.max(64 * 1024),
        skip_copy: plan.skip_rx_copy,
        clamp: plan.rwin,
        lowat: plan.recv_lowat(cpus),
        file,
    })
}
