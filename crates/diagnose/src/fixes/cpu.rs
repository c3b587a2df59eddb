//! The fixes for a CPU limit: a cgroup quota that ran out, and fewer
//! cycles per byte or more cores.

use plumb_model::units::sig;

use super::command::fix;
use crate::evidence::Evidence;
use crate::rules::cpu::quota_binds;
use plumb_record::diagnosis::Fix;

/// A quota that ran out first (the limit is then the container's, not the
/// cycles each byte costs), then the cycles.
pub(super) fn fixes(ev: &Evidence) -> Vec<Fix> {
    let mut out = Vec::new();
    let quotas: Vec<String> = [("receiver", ev.cpu_receiver), ("sender", ev.cpu_sender)]
        .into_iter()
        .filter_map(|(who, c)| {
            let (q, _) = quota_binds(&c?)?;
            Some(format!("{who}: {}% of one core", sig(q, 3)))
        })
        .collect();
    if !quotas.is_empty() {
        out.push(fix(
            "linux",
            &format!(
                "raise or remove the CPU quota of the cgroup that ran out ({})",
                quotas.join("; ")
            ),
            None,
            &[
                "cgroup v2: echo max > /sys/fs/cgroup/GROUP/cpu.max   (or a larger QUOTA PERIOD)"
                    .into(),
                "cgroup v1: echo -1 > /sys/fs/cgroup/cpu/GROUP/cpu.cfs_quota_us".into(),
                "Kubernetes: raise resources.limits.cpu of the container, or remove the limit"
                    .into(),
                "systemd: systemctl set-property UNIT CPUQuota=   (empty: no quota)".into(),
            ],
        ));
    }
    out.push(fix(
        "linux",
        "spend fewer cycles per byte, or more cores",
        None,
        &[
            "plumb -c HOST -Z   (zero-copy send)".into(),
            "plumb -c HOST -P 2 (one stream per core)".into(),
            "ethtool -K IF gso on gro on tso on   (segmentation offloads)".into(),
            "spread interrupts: check /proc/interrupts and irqbalance, enable RSS".into(),
        ],
    ));
    out
}
