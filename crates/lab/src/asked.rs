//! The link a lab is asked for, in the model's units and as the command
//! line gives it ([`LinkAsked`]), and the emulator configuration it
//! describes, checked: every refusal is one line naming the flag.

use std::time::Duration;

use plumb_model::latency::QueueSize;
use plumb_model::{Bytes, LossRate, Rate, Rtt};

use crate::emu::{GilbertElliott, LossModel, QueueLimit, Reorder};
use crate::{Direction, LabConfig};

/// The link a lab is asked for, as `plumb lab`'s flags give it.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkAsked {
    /// `--rate`: link rate, each direction.
    pub rate: Rate,
    /// `--rtt`: round-trip propagation delay.
    pub rtt: Rtt,
    /// `--loss`: random loss, near to far.
    pub loss: Option<LossRate>,
    /// `--loss-burst`: mean loss burst, packets (Gilbert-Elliott).
    pub loss_burst: Option<f64>,
    /// `--queue` as given (`1.5BDP`, `2MB`, `20ms`); `None`: one BDP.
    pub queue: Option<String>,
    /// `--jitter`: extra delay per packet, up to this much.
    pub jitter: Option<Rtt>,
    /// `--reorder`: share of packets that skip ahead.
    pub reorder: Option<LossRate>,
    /// `--duplicate`: share of packets sent twice.
    pub duplicate: Option<LossRate>,
    /// `--drop-over`: packets over this many IP bytes dropped without ICMP.
    pub drop_over: Option<u32>,
    /// `--seed`: the random numbers' seed.
    pub seed: Option<u64>,
    /// `--far-cpu`: the far side's share of one CPU.
    pub far_cpu: Option<LossRate>,
    /// `--far-cpu-period`: that quota's period.
    pub far_cpu_period: Rtt,
    /// `--tcp-buffer-max`: both namespaces' TCP buffer maximum.
    pub tcp_buffer_max: Option<Bytes>,
}

impl LinkAsked {
    /// A link of `rate` and `rtt` and nothing else: no loss, one BDP of
    /// queue, the far side's CPU unlimited.
    pub fn plain(rate: Rate, rtt: Rtt) -> LinkAsked {
        LinkAsked {
            rate,
            rtt,
            loss: None,
            loss_burst: None,
            queue: None,
            jitter: None,
            reorder: None,
            duplicate: None,
            drop_over: None,
            seed: None,
            far_cpu: None,
            far_cpu_period: Rtt::from_secs(crate::FAR_CPU_PERIOD.as_secs_f64())
                .expect("FAR_CPU_PERIOD is a positive duration"),
            tcp_buffer_max: None,
        }
    }
}

/// `--queue` as the emulator takes it.
fn queue_limit(s: &str) -> Result<QueueLimit, String> {
    Ok(match QueueSize::parse(s)? {
        QueueSize::Bytes(b) => QueueLimit::Bytes(b),
        QueueSize::Delay(d) => QueueLimit::Delay(Duration::from_secs_f64(d)),
        QueueSize::Bdp(m) => QueueLimit::Bdp(m),
    })
}

/// The emulator configuration the link describes, or the one-line refusal.
pub fn lab_config(a: &LinkAsked) -> Result<LabConfig, String> {
    let rate = crate::emu::Rate::from_mbps(a.rate.bps() / 1e6).ok_or_else(|| {
        format!(
            "invalid rate '{}': the lab needs at least 1 kbit/s",
            a.rate.human()
        )
    })?;
    if a.rtt.secs() > 10.0 {
        return Err(format!(
            "invalid RTT {}: the lab emulates at most 10 s",
            a.rtt.human()
        ));
    }
    let mut cfg = LabConfig::new(rate, Duration::from_secs_f64(a.rtt.secs()));
    if let Some(q) = &a.queue {
        cfg = cfg.with_queue(queue_limit(q)?);
    }
    if let Some(l) = a.loss {
        let model = match a.loss_burst {
            Some(b) => LossModel::GilbertElliott(
                GilbertElliott::from_loss_and_burst(l.probability(), b)
                    .map_err(|e| format!("invalid --loss-burst: {e}"))?,
            ),
            None => LossModel::Bernoulli(l.probability()),
        };
        cfg = cfg.with_loss(Direction::NearToFar, model);
    }
    if let Some(seed) = a.seed {
        cfg = cfg.with_seed(seed);
    }
    if let Some(m) = a.drop_over {
        if !(crate::emu::MIN_IP_PACKET..cfg.mtu).contains(&m) {
            return Err(format!(
                "invalid --drop-over {m}: expected {} to {} bytes (below the lab's MTU of {} B, or nothing is dropped)",
                crate::emu::MIN_IP_PACKET,
                cfg.mtu - 1,
                cfg.mtu
            ));
        }
        cfg = cfg.with_max_packet(m);
    }
    cfg.far_cpu = a.far_cpu.map(LossRate::probability);
    cfg.far_cpu_period = Duration::from_secs_f64(a.far_cpu_period.secs());
    if let Some(b) = a.tcp_buffer_max {
        if !(4096..=1 << 30).contains(&b.get()) {
            return Err(format!(
                "invalid --tcp-buffer-max {}: expected 4K to 1G",
                b.human()
            ));
        }
        cfg.tcp_buffer_max = u32::try_from(b.get()).ok();
    }
    for dir in [Direction::NearToFar, Direction::FarToNear] {
        let link = cfg.link_mut(dir);
        if let Some(j) = a.jitter {
            link.jitter = Duration::from_secs_f64(j.secs());
        }
        if let Some(r) = a.reorder {
            link.reorder = Some(Reorder {
                probability: r.probability(),
                advance: Duration::from_millis(1),
            });
        }
        if let Some(d) = a.duplicate {
            link.duplicate = d.probability();
        }
    }
    Ok(cfg)
}
