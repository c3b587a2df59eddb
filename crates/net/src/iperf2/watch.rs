//! TCP_INFO of a sending iperf 2 stream, read by the reporting thread at
//! each interval: the same per-interval sample and end summary an iperf3
//! test's sender gives, so `--why` has the sender's counters whichever the
//! peer. The stream is shared (`Arc`), so its descriptor stays open until
//! the last sample is read.

use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::Arc;

use plumb_proto::TcpInfoSummary;
use plumb_record::engine::{LimitedTime, TcpEnd, TcpSample};
use plumb_tcpinfo::{tcp_info, TcpInfo};

/// One sending stream's TCP_INFO over the test.
pub(crate) struct Watch {
    stream: Arc<TcpStream>,
    retrans: u64,
    limited: LimitedTime,
    max_cwnd: u64,
    max_wnd: u64,
    max_rtt: u64,
    min_rtt: u64,
    sum_rtt: u64,
    samples: u64,
}

impl Watch {
    pub(crate) fn new(stream: Arc<TcpStream>) -> Watch {
        Watch {
            stream,
            retrans: 0,
            limited: LimitedTime::default(),
            max_cwnd: 0,
            max_wnd: 0,
            max_rtt: 0,
            min_rtt: u64::MAX,
            sum_rtt: 0,
            samples: 0,
        }
    }

    /// This interval's sample (retransmits and limited times since the
    /// last one), or `None` where TCP_INFO cannot be read.
    pub(crate) fn sample(&mut self) -> Option<TcpSample> {
        let i = tcp_info(self.stream.as_fd()).ok()?;
        let total = u64::from(i.total_retrans);
        let s = TcpSample {
            retransmits: total.saturating_sub(self.retrans),
            snd_cwnd: u64::from(i.snd_cwnd) * u64::from(i.snd_mss),
            snd_wnd: u64::from(i.snd_wnd.unwrap_or(0)),
            rtt: u64::from(i.rtt),
            rttvar: u64::from(i.rttvar),
            pmtu: u64::from(i.pmtu),
            limited: self.limited_since(&i),
        };
        self.retrans = total;
        self.max_cwnd = self.max_cwnd.max(s.snd_cwnd);
        self.max_wnd = self.max_wnd.max(s.snd_wnd);
        self.max_rtt = self.max_rtt.max(s.rtt);
        self.min_rtt = self.min_rtt.min(s.rtt);
        self.sum_rtt += s.rtt;
        self.samples += 1;
        Some(s)
    }

    fn limited_since(&mut self, i: &TcpInfo) -> Option<LimitedTime> {
        let now = LimitedTime {
            busy_us: i.busy_time?,
            rwnd_limited_us: i.rwnd_limited?,
            sndbuf_limited_us: i.sndbuf_limited?,
        };
        let last = std::mem::replace(&mut self.limited, now);
        Some(LimitedTime {
            busy_us: now.busy_us.saturating_sub(last.busy_us),
            rwnd_limited_us: now.rwnd_limited_us.saturating_sub(last.rwnd_limited_us),
            sndbuf_limited_us: now.sndbuf_limited_us.saturating_sub(last.sndbuf_limited_us),
        })
    }

    /// Retransmits over the whole test, read now.
    pub(crate) fn retransmits(&self) -> Option<i64> {
        tcp_info(self.stream.as_fd())
            .ok()
            .map(|i| i64::from(i.total_retrans))
    }

    /// The stream's TCP_INFO now, as `end.plumb` keeps it (the limit
    /// counters `--why` weighs among it).
    pub(crate) fn info(&self) -> Option<TcpInfoSummary> {
        tcp_info(self.stream.as_fd())
            .ok()
            .map(|i| crate::session::info_summary(&i))
    }

    /// The summary of the samples taken, if any were.
    pub(crate) fn end(&self) -> Option<TcpEnd> {
        (self.samples > 0).then(|| TcpEnd {
            max_snd_cwnd: self.max_cwnd,
            max_snd_wnd: self.max_wnd,
            max_rtt: self.max_rtt,
            min_rtt: self.min_rtt,
            mean_rtt: self.sum_rtt / self.samples,
        })
    }
}
