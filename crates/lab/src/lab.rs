//! The lab: two network namespaces joined through the emulated link.
//!
//! Owns: the topology's life cycle — namespaces `plumb-<pid>-<n>-near` and
//! `…-far`, one TUN device in each (`near` has 198.18.0.1, `far` 198.18.0.2,
//! RFC 2544 benchmarking addresses, each a /32 with the other as peer), the
//! two forwarder threads, one cgroup per side holding every process started
//! there with [`Lab::command`] (see [`crate::cgroup`]), and removing all of
//! it again — processes first, so nothing lives on in a namespace that is
//! gone: on drop (so also on an error or a panic that unwinds), on
//! SIGINT/SIGTERM if [`Lab::install_signal_cleanup`] was called (a caller
//! that wants to finish its work first holds a [`SignalDeferral`]), and for
//! crashed earlier runs via [`Lab::cleanup_stale`].
//!
//! ```text
//!  netns near                       this process                      netns far
//!  198.18.0.1 ── tun plumbXn ──▶ [ read → Link near→far → write ] ──▶ tun plumbXf ── 198.18.0.2
//!             ◀──────────────── [ write ← Link far→near ← read ] ◀──
//! ```
//!
//! The TUN devices are created in the caller's namespace with offloads on and
//! then moved; their descriptors stay valid, and since the devices are not
//! persistent, closing them (even by crashing) deletes the devices.

use std::ffi::CString;
use std::fs;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::cgroup::{self, Cgroup, Hierarchies};
use crate::emu::{ConfigError, Link, LinkConfig, LossModel, QueueLimit, Rate, ETHERNET_OVERHEAD};
use crate::forward::{DirectionStats, Forwarder, Shared};
use crate::sys::{self, Tun};

/// Address of the near end.
pub const NEAR_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// Address of the far end.
pub const FAR_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

/// One end of the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The end at 198.18.0.1.
    Near,
    /// The end at 198.18.0.2.
    Far,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::Near => 0,
            Side::Far => 1,
        }
    }

    fn role(self) -> &'static str {
        match self {
            Side::Near => "near",
            Side::Far => "far",
        }
    }

    /// The other end.
    pub fn other(self) -> Side {
        match self {
            Side::Near => Side::Far,
            Side::Far => Side::Near,
        }
    }
}

/// One direction of the lab's link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Packets sent by the near end.
    NearToFar,
    /// Packets sent by the far end.
    FarToNear,
}

impl Direction {
    /// The side whose packets travel this way.
    pub fn from_side(self) -> Side {
        match self {
            Direction::NearToFar => Side::Near,
            Direction::FarToNear => Side::Far,
        }
    }
}

/// How to build a [`Lab`].
#[derive(Debug, Clone, PartialEq)]
pub struct LabConfig {
    /// The link for packets from near to far.
    pub near_to_far: LinkConfig,
    /// The link for packets from far to near.
    pub far_to_near: LinkConfig,
    /// MTU of both TUN devices (68–65535).
    pub mtu: u32,
    /// Ask TUN for `virtio_net_hdr` and TSO/USO offloads, so 64 KiB GSO packets
    /// cross the forwarder whole. Off = one MTU-sized packet per read.
    pub offload: bool,
    /// `txqueuelen` of the TUN devices: the ring the sending stack fills and
    /// the forwarder drains. Big, so that only the emulated queue drops.
    pub txqueuelen: u32,
    /// How long before a release the forwarder stops sleeping and polls (at
    /// most: half as long while reads and writes take over 30 % of its time,
    /// not at all while it is busy over 80 % of it).
    pub spin: Duration,
    /// Raise the maximum TCP socket buffers (`net.ipv4.tcp_rmem`/`tcp_wmem`,
    /// third field) in both namespaces to this many bytes. None keeps the
    /// kernel's defaults (4 MiB for sending), which cap one flow at about
    /// `4 MiB / RTT` — often exactly what a diagnosis wants to show.
    pub tcp_buffer_max: Option<u32>,
    /// `SCHED_FIFO` priority for the forwarder threads (None = normal
    /// scheduling). Default `Some(10)`: on a busy machine ordinary threads
    /// wait milliseconds for a CPU, which would show up as jitter the link
    /// was not configured to have. The forwarders sleep whenever nothing is
    /// due and spin at most [`spin`](LabConfig::spin) per release, and each
    /// keeps its busy share under 80 % so that the kernel's RT throttling
    /// (which stops real-time threads on a CPU for the rest of a second once
    /// they have run 95 % of it) does not step in. Ignored (silently) without
    /// CAP_SYS_NICE; see [`DirectionStats::realtime`](crate::forward::DirectionStats::realtime).
    pub realtime: Option<i32>,
    /// Hold a CPU latency request of 0 µs (`/dev/cpu_dma_latency`) while the
    /// lab runs, so that idle CPUs poll instead of halting. A halted vCPU
    /// wakes only when the host schedules it again: timed wake-ups of the
    /// forwarders landed up to 70 µs late at p99. At a 3 Gbit/s, 15 ms link,
    /// five alternating runs each gave a release-error p99 of 32–57 µs with
    /// the request and 43 µs–1 ms without. Idle CPUs burn cycles while it is
    /// held.
    /// Ignored (silently) where the device is missing or not writable; see
    /// [`LabStats::idle_poll`].
    pub idle_poll: bool,
    /// Limit the far side's processes (all of them together) to this share
    /// of one CPU, e.g. 0.05: cgroup v2 `cpu.max` where v2 has the cpu
    /// controller, else a v1 `cpu` group's CFS quota. None = no limit.
    pub far_cpu: Option<f64>,
    /// The enforcement period of [`far_cpu`](Self::far_cpu)'s quota: the
    /// far side runs at most `far_cpu × period` in each period, then waits
    /// for the next. The default 100 ms is the kernel's own. A longer period
    /// (up to 1 s) makes the quota bind whatever the machine's speed: a
    /// receiver asleep for most of a second drains at most one socket
    /// buffer per second, however fast it copies.
    pub far_cpu_period: Duration,
}

impl LabConfig {
    /// A symmetric link of `rate` each way with round-trip propagation delay
    /// `rtt` split half/half, a drop-tail queue of one BDP (`rate × rtt`) in
    /// each direction, no loss, MTU 1500, offloads on.
    pub fn new(rate: Rate, rtt: Duration) -> LabConfig {
        let mut near_to_far = LinkConfig::new(rate, rtt / 2);
        let mut far_to_near = LinkConfig::new(rate, rtt - rtt / 2);
        near_to_far.queue_bytes = QueueLimit::Bdp(1.0).to_bytes(rate, rtt);
        far_to_near.queue_bytes = near_to_far.queue_bytes;
        near_to_far.seed = 0x706c_756d_6201;
        far_to_near.seed = 0x706c_756d_6202;
        LabConfig {
            near_to_far,
            far_to_near,
            mtu: 1500,
            offload: true,
            txqueuelen: 20_000,
            spin: Duration::from_micros(50),
            tcp_buffer_max: None,
            realtime: Some(10),
            idle_poll: true,
            far_cpu: None,
            far_cpu_period: FAR_CPU_PERIOD,
        }
    }

    /// Round-trip propagation delay (the sum of the one-way delays).
    pub fn rtt(&self) -> Duration {
        self.near_to_far.delay + self.far_to_near.delay
    }

    /// Sets both queues, converting `limit` with each direction's rate and
    /// the round trip.
    pub fn with_queue(mut self, limit: QueueLimit) -> LabConfig {
        let rtt = self.rtt();
        self.near_to_far.queue_bytes = limit.to_bytes(self.near_to_far.rate, rtt);
        self.far_to_near.queue_bytes = limit.to_bytes(self.far_to_near.rate, rtt);
        self
    }

    /// Splits the round trip unevenly: `near_to_far` one way, `far_to_near`
    /// back. Queue limits are left as they are (set them afterwards with
    /// [`with_queue`](LabConfig::with_queue) to size them for the new RTT).
    pub fn with_delays(mut self, near_to_far: Duration, far_to_near: Duration) -> LabConfig {
        self.near_to_far.delay = near_to_far;
        self.far_to_near.delay = far_to_near;
        self
    }

    /// Sets the loss model of one direction.
    pub fn with_loss(mut self, dir: Direction, loss: LossModel) -> LabConfig {
        self.link_mut(dir).loss = loss;
        self
    }

    /// Drops, in both directions, every packet of more than `bytes` IP
    /// bytes without an ICMP reply: a path-MTU black hole.
    pub fn with_max_packet(mut self, bytes: u32) -> LabConfig {
        self.near_to_far.max_packet = Some(bytes);
        self.far_to_near.max_packet = Some(bytes);
        self
    }

    /// Seeds both directions' RNGs from one number.
    pub fn with_seed(mut self, seed: u64) -> LabConfig {
        self.near_to_far.seed = seed;
        self.far_to_near.seed = seed ^ 0x9e37_79b9_7f4a_7c15;
        self
    }

    /// The link of one direction.
    pub fn link(&self, dir: Direction) -> &LinkConfig {
        match dir {
            Direction::NearToFar => &self.near_to_far,
            Direction::FarToNear => &self.far_to_near,
        }
    }

    /// The link of one direction, mutably.
    pub fn link_mut(&mut self, dir: Direction) -> &mut LinkConfig {
        match dir {
            Direction::NearToFar => &mut self.near_to_far,
            Direction::FarToNear => &mut self.far_to_near,
        }
    }

    fn validate(&self) -> Result<(), LabError> {
        if !(68..=65_535).contains(&self.mtu) {
            return Err(LabError::Invalid(format!(
                "MTU {} is not in 68..=65535",
                self.mtu
            )));
        }
        for (name, l) in [
            ("near→far", &self.near_to_far),
            ("far→near", &self.far_to_near),
        ] {
            let frame = u64::from(self.mtu + ETHERNET_OVERHEAD);
            if l.queue_bytes < frame {
                return Err(LabError::Invalid(format!(
                    "{name} queue of {} B cannot hold one {frame} B frame",
                    l.queue_bytes
                )));
            }
            // A limit at or above the MTU never drops anything: the TUN
            // device hands the link nothing larger (GSO packets are judged
            // per MTU-sized segment).
            if let Some(m) = l.max_packet.filter(|m| *m >= self.mtu) {
                return Err(LabError::Invalid(format!(
                    "{name} largest packet {m} B is not below the MTU of {} B, so it would drop nothing",
                    self.mtu
                )));
            }
        }
        if self.txqueuelen == 0 {
            return Err(LabError::Invalid("txqueuelen 0".into()));
        }
        if let Some(share) = self.far_cpu {
            if !(share > 0.0 && share <= 1024.0) {
                return Err(LabError::Invalid(format!(
                    "far CPU share {share} is not above 0 and at most 1024 CPUs"
                )));
            }
            let period = self.far_cpu_period;
            if !(MIN_CPU_QUOTA..=MAX_CPU_PERIOD).contains(&period) {
                return Err(LabError::Invalid(format!(
                    "far CPU period {period:?} is not from 1 ms to 1 s"
                )));
            }
            if period.mul_f64(share) < MIN_CPU_QUOTA {
                return Err(LabError::Invalid(format!(
                    "far CPU share {}% of a {period:?} period is under the kernel's 1 ms \
                     minimum quota; give a longer period",
                    share * 100.0
                )));
            }
        }
        Ok(())
    }
}

/// The kernel's own CPU-quota period (`cpu.max`'s default).
pub const FAR_CPU_PERIOD: Duration = Duration::from_millis(100);
/// The least quota the kernel takes in one period.
const MIN_CPU_QUOTA: Duration = Duration::from_millis(1);
/// The longest period the kernel takes.
const MAX_CPU_PERIOD: Duration = Duration::from_secs(1);

/// Why the lab could not do something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// Missing privileges.
    #[error("plumb lab needs root (CAP_NET_ADMIN) to create network namespaces and TUN devices")]
    NotRoot,
    /// No TUN driver.
    #[error("/dev/net/tun is missing; load the tun module (modprobe tun)")]
    NoTun,
    /// A link parameter makes no sense.
    #[error("invalid link configuration: {0}")]
    Config(#[from] ConfigError),
    /// A lab parameter makes no sense.
    #[error("invalid lab configuration: {0}")]
    Invalid(String),
    /// An `ip` (or other) command failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A measurement did not complete.
    #[error("measurement failed: {0}")]
    Measure(String),
    /// The SIGINT/SIGTERM cleanup could not be installed.
    #[error("installing signal cleanup: {0}")]
    Signal(String),
}

pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> LabError {
    let context = context.into();
    move |source| LabError::Io { context, source }
}

/// Runs `ip ARGS…`, feeding `stdin` if given (for `-batch -`).
fn ip(args: &[&str], stdin: Option<&str>) -> Result<(), LabError> {
    let cmdline = format!("ip {}", args.join(" "));
    let mut child = Command::new("ip")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io_err(format!("running {cmdline}")))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes())
            .map_err(io_err(format!("writing to {cmdline}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(io_err(format!("waiting for {cmdline}")))?;
    if out.status.success() {
        Ok(())
    } else {
        let mut stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        if let Some(input) = stdin {
            stderr = format!("{stderr} (batch: {})", input.trim().replace('\n', "; "));
        }
        Err(LabError::Command {
            command: cmdline,
            stderr,
        })
    }
}

const NETNS_DIR: &str = "/run/netns";
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

static NEXT_LAB: AtomicU32 = AtomicU32::new(0);

/// Namespaces of live labs in this process, for the signal handler's thread.
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Cgroups of live labs in this process, for the signal handler's thread.
static LIVE_CGROUPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<String>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn live_cgroups() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE_CGROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Some lab of this process has no v2 cgroups: the signal path sweeps
/// namespaces for processes.
static SWEEP: AtomicBool = AtomicBool::new(false);

/// How many [`SignalDeferral`]s are held.
static DEFERRING: AtomicUsize = AtomicUsize::new(0);
/// The signal that arrived while deferred (0 = none).
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The signal thread is tearing every lab down and will end the process by
/// the signal itself.
static ENDING: AtomicBool = AtomicBool::new(false);

/// While held, the first SIGINT or SIGTERM does not tear the labs down and
/// end the process: it is recorded for [`Lab::pending_signal`], so the caller
/// can stop what runs, report what it has, and drop its lab. A second signal
/// still tears down and ends the process, as without a deferral.
#[derive(Debug)]
pub struct SignalDeferral(());

impl Drop for SignalDeferral {
    fn drop(&mut self) {
        DEFERRING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Kills the processes of every live lab and removes its cgroups and
/// namespaces: the signal handler's thread, on its way to ending the process.
fn tear_down_all() {
    let groups: Vec<PathBuf> = live_cgroups().clone();
    for g in &groups {
        let _ = cgroup::kill_and_remove(g);
    }
    let names: Vec<String> = live().clone();
    for ns in names {
        if SWEEP.load(Ordering::SeqCst) {
            let _ = cgroup::kill_in_netns(&PathBuf::from(NETNS_DIR).join(&ns));
        }
        let _ = ip(&["netns", "del", &ns], None);
    }
}

fn base36(mut n: u64, width: usize) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 || out.len() < width {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// Deletes namespaces when dropped, so a failure halfway through
/// [`Lab::start`] leaves nothing behind.
#[derive(Debug)]
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            // Best effort: if it is already gone there is nothing to do.
            let _ = ip(&["netns", "del", ns], None);
            live().retain(|n| n != ns);
        }
    }
}

/// Kills the processes in cgroups and removes the groups when dropped, so a
/// failure halfway through [`Lab::start`] leaves nothing behind.
#[derive(Debug, Default)]
struct Groups(Vec<Cgroup>);

impl Groups {
    fn add(&mut self, dir: PathBuf) -> std::io::Result<&Cgroup> {
        live_cgroups().push(dir.clone());
        match Cgroup::create(dir.clone()) {
            Ok(g) => {
                self.0.push(g);
                Ok(&self.0[self.0.len() - 1])
            }
            Err(e) => {
                live_cgroups().retain(|d| *d != dir);
                Err(e)
            }
        }
    }

    /// Kills and removes every group; the first error.
    fn remove_all(&mut self) -> Result<(), LabError> {
        let mut first = None;
        for g in self.0.drain(..) {
            if let Err(e) = cgroup::kill_and_remove(g.dir()) {
                first.get_or_insert(LabError::Io {
                    context: "ending the lab's processes".into(),
                    source: e,
                });
            }
            live_cgroups().retain(|d| d != g.dir());
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        let _ = self.remove_all();
    }
}

/// A running lab. Dropping it ends the processes started in it, stops the
/// forwarders and deletes the devices, cgroups and namespaces.
#[derive(Debug)]
pub struct Lab {
    config: LabConfig,
    netns: [String; 2],
    devices: [String; 2],
    offloads: u32,
    forwarders: Vec<JoinHandle<()>>,
    shared: [Arc<Shared>; 2],
    /// Dropped before `namespaces` (field order), so devices go first.
    tuns: Option<[Arc<Tun>; 2]>,
    namespaces: Namespaces,
    /// Every cgroup of this lab; empty where no v2 hierarchy can be used
    /// (then the namespaces are swept for processes instead).
    groups: Groups,
    /// Per side, the `cgroup.procs` files a process started there joins.
    joins: [Vec<CString>; 2],
    /// No v2 group holds the processes: sweep the namespaces at the end.
    sweep: bool,
    /// The CPU latency request, held while the lab lives ([`LabConfig::idle_poll`]).
    cpu_latency: Option<std::fs::File>,
}

impl Lab {
    /// Checks privileges, removes stale namespaces of dead processes, builds
    /// the topology and starts forwarding.
    ///
    /// Errors: [`LabError::NotRoot`] without CAP_NET_ADMIN and CAP_SYS_ADMIN,
    /// [`LabError::NoTun`] without `/dev/net/tun`, otherwise whatever step
    /// failed (everything created so far is removed again).
    pub fn start(config: LabConfig) -> Result<Lab, LabError> {
        Lab::check_privileges()?;
        config.validate()?;
        let links = [
            Link::new(config.near_to_far.clone())?,
            Link::new(config.far_to_near.clone())?,
        ];
        // Best effort: a stale namespace does not stop us, names are unique.
        Lab::cleanup_stale_cgroups();
        let _ = Lab::cleanup_stale();

        let pid = std::process::id();
        let n = NEXT_LAB.fetch_add(1, Ordering::Relaxed);
        let netns = [Side::Near, Side::Far].map(|s| format!("plumb-{pid}-{n}-{}", s.role()));
        // ≤ 15 bytes: "plumb" + 5 (pid) + ≤4 (counter) + 1.
        let devices = ["n", "f"].map(|r| {
            format!(
                "plumb{}{}{r}",
                base36(u64::from(pid), 5),
                base36(u64::from(n) % 1_679_616, 1)
            )
        });

        // Devices first: if anything below fails, dropping them deletes them.
        let tuns = [0, 1].map(|i| {
            Tun::create(&devices[i], config.offload, config.offload)
                .map(Arc::new)
                .map_err(io_err(format!("creating TUN device {}", devices[i])))
        });
        let [near_tun, far_tun] = tuns;
        let tuns = [near_tun?, far_tun?];

        let namespaces = Namespaces(Vec::new());
        let mut namespaces = namespaces;
        for ns in &netns {
            live().push(ns.clone());
            namespaces.0.push(ns.clone());
            ip(&["netns", "add", ns], None)?;
        }
        let far_cpu = config.far_cpu.map(|s| (s, config.far_cpu_period));
        let (groups, joins) = Lab::make_groups(&netns, far_cpu)?;
        if joins[0].is_empty() {
            SWEEP.store(true, Ordering::SeqCst);
        }
        for ns in &netns {
            configure_sysctls(ns, config.tcp_buffer_max)?;
        }
        let batch = format!(
            "link set dev {} netns {}\nlink set dev {} netns {}\n",
            devices[0], netns[0], devices[1], netns[1]
        );
        ip(&["-batch", "-"], Some(&batch))?;
        for (i, (local, peer)) in [(NEAR_ADDR, FAR_ADDR), (FAR_ADDR, NEAR_ADDR)]
            .into_iter()
            .enumerate()
        {
            let dev = &devices[i];
            let batch = format!(
                "link set dev lo up\n\
                 link set dev {dev} mtu {mtu} txqueuelen {q} up\n\
                 addr add {local}/32 peer {peer}/32 dev {dev}\n",
                mtu = config.mtu,
                q = config.txqueuelen,
            );
            ip(&["-n", &netns[i], "-batch", "-"], Some(&batch))?;
        }

        let epoch = Instant::now();
        let shared = [Arc::new(Shared::default()), Arc::new(Shared::default())];
        let mut lab = Lab {
            offloads: tuns[0].offloads(),
            config,
            netns,
            devices,
            forwarders: Vec::new(),
            shared,
            tuns: Some(tuns.clone()),
            namespaces,
            sweep: joins[0].is_empty(),
            groups,
            joins,
            cpu_latency: None,
        };
        if lab.config.idle_poll {
            lab.cpu_latency = sys::hold_cpu_latency(0).ok();
        }
        let [l0, l1] = links;
        for (i, link) in [l0, l1].into_iter().enumerate() {
            let fwd = Forwarder {
                src: tuns[i].clone(),
                dst: tuns[1 - i].clone(),
                link,
                spin: lab.config.spin,
                realtime: lab.config.realtime,
                epoch,
                shared: lab.shared[i].clone(),
            };
            let name = if i == 0 {
                "plumb-fwd-n2f"
            } else {
                "plumb-fwd-f2n"
            };
            let h = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || fwd.run())
                .map_err(io_err("spawning forwarder thread"))?;
            lab.forwarders.push(h);
        }
        Ok(lab)
    }

    /// One cgroup v2 group per side, named like its namespace, and the CPU
    /// quota of the far side (in its v2 group where v2 has the cpu
    /// controller, else in a v1 `cpu` group of its own).
    fn make_groups(
        netns: &[String; 2],
        far_cpu: Option<(f64, Duration)>,
    ) -> Result<(Groups, [Vec<CString>; 2]), LabError> {
        let h = Hierarchies::find();
        let mut groups = Groups::default();
        let mut joins: [Vec<CString>; 2] = [Vec::new(), Vec::new()];
        let procs = |g: &Cgroup| sys::cstring_path(&g.procs_file()).map_err(io_err("cgroup path"));
        if let Some(root) = &h.v2 {
            for (i, ns) in netns.iter().enumerate() {
                match groups.add(root.join(ns)) {
                    Ok(g) => joins[i].push(procs(g)?),
                    // Not ours to use (read-only, delegated elsewhere):
                    // fall back to sweeping the namespaces.
                    Err(_) if i == 0 => break,
                    Err(e) => return Err(io_err(format!("creating cgroup for {ns}"))(e)),
                }
            }
        }
        let Some((share, period)) = far_cpu else {
            return Ok((groups, joins));
        };
        // validate() holds the quota at 1 ms or more, the kernel's least.
        let quota = period.mul_f64(share).as_micros() as u64;
        let period = period.as_micros() as u64;
        let context = "limiting the far side's CPU";
        let far_v2 = groups.0.get(1).map(|g| g.dir().join("cpu.max"));
        if let Some(cpu_max) = far_v2.filter(|f| f.exists()) {
            fs::write(&cpu_max, format!("{quota} {period}")).map_err(io_err(context))?;
        } else if let Some(root) = &h.v1_cpu {
            let g = groups.add(root.join(&netns[1])).map_err(io_err(context))?;
            fs::write(g.dir().join("cpu.cfs_period_us"), period.to_string())
                .map_err(io_err(context))?;
            fs::write(g.dir().join("cpu.cfs_quota_us"), quota.to_string())
                .map_err(io_err(context))?;
            joins[1].push(procs(g)?);
        } else {
            return Err(LabError::Invalid(
                "a CPU limit needs the cgroup cpu controller (v2 cpu.max or a v1 cpu hierarchy)"
                    .into(),
            ));
        }
        Ok((groups, joins))
    }

    /// [`LabError::NotRoot`] unless the process may create namespaces and TUN
    /// devices; [`LabError::NoTun`] if the TUN driver is missing.
    pub fn check_privileges() -> Result<(), LabError> {
        let caps = sys::effective_capabilities().map_err(io_err("reading capabilities"))?;
        let need = (1u64 << CAP_NET_ADMIN) | (1u64 << CAP_SYS_ADMIN);
        if caps & need != need {
            return Err(LabError::NotRoot);
        }
        if !std::path::Path::new("/dev/net/tun").exists() {
            return Err(LabError::NoTun);
        }
        Ok(())
    }

    /// Removes `plumb-<pid>-…` namespaces left behind by processes that no
    /// longer exist (killed before they could clean up). Namespaces of live
    /// processes, including this one, are left alone. Returns how many were
    /// removed.
    pub fn cleanup_stale() -> Result<usize, LabError> {
        let entries = match fs::read_dir(NETNS_DIR) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io_err(format!("listing {NETNS_DIR}"))(e)),
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = stale_owner(&name) else {
                continue;
            };
            if pid == std::process::id() || PathBuf::from(format!("/proc/{pid}")).exists() {
                continue;
            }
            ip(&["netns", "del", &name], None)?;
            removed += 1;
        }
        Ok(removed)
    }

    /// Kills and removes `plumb-<pid>-…` cgroups of processes that no longer
    /// exist (their processes outlived a lab that was killed); returns how
    /// many groups were removed.
    fn cleanup_stale_cgroups() -> usize {
        let h = Hierarchies::find();
        let mut removed = 0;
        for root in [h.v2, h.v1_cpu].into_iter().flatten() {
            let Ok(entries) = fs::read_dir(&root) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                // Also `plumb-lab-<pid>`, the CPU-quota group of earlier versions.
                let old = name
                    .strip_prefix("plumb-lab-")
                    .and_then(|p| p.parse::<u32>().ok());
                let Some(pid) = stale_owner(&name).or(old) else {
                    continue;
                };
                if pid == std::process::id() || PathBuf::from(format!("/proc/{pid}")).exists() {
                    continue;
                }
                if cgroup::kill_and_remove(&entry.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// On SIGINT or SIGTERM, end the processes of every live lab in this
    /// process and delete its cgroups and namespaces, then let the signal
    /// take its default course (the process dies, which closes the TUN
    /// descriptors and so deletes the devices) — unless a [`SignalDeferral`]
    /// is held, which turns the first signal into [`Lab::pending_signal`].
    ///
    /// The handler itself only writes a byte to a pipe (async-signal-safe); a
    /// helper thread does the cleanup. Idempotent.
    pub fn install_signal_cleanup() -> Result<(), LabError> {
        static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
        let r = INSTALLED.get_or_init(|| {
            let rd = sys::install_signal_pipe(&[libc::SIGINT, libc::SIGTERM])
                .map_err(|e| e.to_string())?;
            std::thread::Builder::new()
                .name("plumb-lab-signals".into())
                .spawn(move || {
                    while let Some(sig) = sys::read_byte(std::os::fd::AsFd::as_fd(&rd)) {
                        let sig = libc::c_int::from(sig);
                        if DEFERRING.load(Ordering::SeqCst) > 0
                            && PENDING
                                .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok()
                        {
                            continue;
                        }
                        ENDING.store(true, Ordering::SeqCst);
                        tear_down_all();
                        sys::reraise_default(sig);
                    }
                })
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        r.clone().map_err(LabError::Signal)
    }

    /// Defers SIGINT/SIGTERM while the returned guard lives (see
    /// [`SignalDeferral`]); only meaningful after
    /// [`Lab::install_signal_cleanup`].
    pub fn defer_signals() -> SignalDeferral {
        DEFERRING.fetch_add(1, Ordering::SeqCst);
        SignalDeferral(())
    }

    /// Whether a signal is ending the process: the signal thread is tearing
    /// the labs down and will end it by that signal. Until then a caller
    /// must not end the process its own way: a `plumb lab` whose program
    /// died when the teardown killed its cgroup would otherwise exit with
    /// that program's status first, before the namespaces are gone (seen
    /// once on a loaded machine as exit 1 after a second Ctrl-C).
    pub fn ending_by_signal() -> bool {
        ENDING.load(Ordering::SeqCst)
    }

    /// The signal that arrived while a [`SignalDeferral`] was held, if any.
    pub fn pending_signal() -> Option<i32> {
        match PENDING.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The configuration the lab runs with.
    pub fn config(&self) -> &LabConfig {
        &self.config
    }

    /// Name of a side's network namespace (usable with `ip netns exec`).
    pub fn namespace_name(&self, side: Side) -> &str {
        &self.netns[side.index()]
    }

    /// Name of a side's TUN device (inside its namespace).
    pub fn device_name(&self, side: Side) -> &str {
        &self.devices[side.index()]
    }

    /// Path of a side's namespace, for `setns`.
    pub fn namespace_path(&self, side: Side) -> PathBuf {
        PathBuf::from(NETNS_DIR).join(self.namespace_name(side))
    }

    /// 198.18.0.1.
    pub fn near_addr(&self) -> Ipv4Addr {
        NEAR_ADDR
    }

    /// 198.18.0.2.
    pub fn far_addr(&self) -> Ipv4Addr {
        FAR_ADDR
    }

    /// A side's address.
    pub fn addr(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::Near => NEAR_ADDR,
            Side::Far => FAR_ADDR,
        }
    }

    /// `TUN_F_*` offload bits the kernel accepted (0 = offloads off).
    pub fn offloads(&self) -> u32 {
        self.offloads
    }

    /// A command that runs `program` inside a side's namespace (via
    /// `ip netns exec`); add arguments and spawn it as usual. The process
    /// joins the side's cgroup before it runs, so it and everything it starts
    /// end with the lab; it is also killed if the spawning thread dies first.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.namespace_name(side), program]);
        sys::kill_with_parent(&mut c);
        sys::join_cgroups_on_exec(&mut c, self.joins[side.index()].clone());
        c
    }

    /// The cgroups holding each side's processes (empty where cgroup v2 is
    /// not usable; the namespaces are then swept for processes instead).
    pub fn cgroups(&self) -> Vec<PathBuf> {
        self.groups
            .0
            .iter()
            .map(|g| g.dir().to_path_buf())
            .collect()
    }

    /// Ends every process started in the lab: kills and removes its cgroups,
    /// or, without them, kills whatever runs in its namespaces.
    fn end_processes(&mut self) -> Result<(), LabError> {
        if self.sweep {
            for ns in &self.namespaces.0 {
                let path = PathBuf::from(NETNS_DIR).join(ns);
                cgroup::kill_in_netns(&path).map_err(io_err(format!("sweeping {ns}")))?;
            }
            return Ok(());
        }
        self.groups.remove_all()
    }

    /// Moves the *calling thread* into a side's namespace: sockets it opens
    /// afterwards live there. Use a dedicated thread (see [`Lab::spawn_in`]).
    pub fn enter(&self, side: Side) -> Result<(), LabError> {
        let path = self.namespace_path(side);
        sys::enter_netns(&path).map_err(io_err(format!("entering {}", path.display())))
    }

    /// Runs `f` on a new thread inside a side's namespace.
    pub fn spawn_in<T: Send + 'static>(
        &self,
        side: Side,
        f: impl FnOnce() -> Result<T, LabError> + Send + 'static,
    ) -> Result<JoinHandle<Result<T, LabError>>, LabError> {
        let path = self.namespace_path(side);
        std::thread::Builder::new()
            .name(format!("plumb-{}", side.role()))
            .spawn(move || {
                sys::enter_netns(&path).map_err(io_err(format!("entering {}", path.display())))?;
                f()
            })
            .map_err(io_err("spawning thread"))
    }

    /// Per-direction counters (a few milliseconds old at most).
    pub fn stats(&self) -> LabStats {
        let get = |i: usize| {
            self.shared[i]
                .stats
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        };
        LabStats {
            near_to_far: get(0),
            far_to_near: get(1),
            idle_poll: self.cpu_latency.is_some(),
        }
    }

    /// The kernel's counters of a side's TUN device. `tx_dropped` counts
    /// packets the stack sent that the forwarder never saw (device queue full):
    /// it should stay 0, or losses happen outside the emulated link.
    pub fn device_counters(&self, side: Side) -> Result<DeviceCounters, LabError> {
        let dev = self.device_name(side);
        let files: Vec<String> = ["tx_packets", "tx_dropped", "rx_packets", "rx_dropped"]
            .iter()
            .map(|f| format!("/sys/class/net/{dev}/statistics/{f}"))
            .collect();
        let out = self
            .command(side, "cat")
            .args(&files)
            .stderr(Stdio::piped())
            .output()
            .map_err(io_err("reading device counters"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<u64> = text
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        match v[..] {
            [tx_packets, tx_dropped, rx_packets, rx_dropped] => Ok(DeviceCounters {
                tx_packets,
                tx_dropped,
                rx_packets,
                rx_dropped,
            }),
            _ => Err(LabError::Command {
                command: format!("cat {}", files.join(" ")),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }),
        }
    }

    /// Stops the forwarders and removes devices and namespaces, reporting the
    /// first error (dropping the lab does the same, silently).
    pub fn stop(mut self) -> Result<LabStats, LabError> {
        let ended = self.end_processes();
        self.halt();
        let stats = self.stats();
        self.tuns = None;
        let names = std::mem::take(&mut self.namespaces.0);
        let mut first = None;
        for ns in &names {
            if let Err(e) = ip(&["netns", "del", ns], None) {
                first.get_or_insert(e);
            }
            live().retain(|n| n != ns);
        }
        ended?;
        first.map_or(Ok(stats), Err)
    }

    fn halt(&mut self) {
        for s in &self.shared {
            s.stop.store(true, Ordering::Relaxed);
        }
        for h in self.forwarders.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Processes first: once the namespace is deleted they would live on
        // in it, unreachable.
        let _ = self.end_processes();
        self.halt();
        // Close the devices before deleting the namespaces they live in.
        self.tuns = None;
    }
}

/// `plumb-<pid>-<n>-<role>` → pid.
fn stale_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("plumb-")?;
    let mut parts = rest.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u32>().ok()?;
    matches!(parts.next()?, "near" | "far").then_some(pid)
}

/// IPv4 only (nothing may leave with an address outside 198.18.0.0/15, and
/// IPv6 would add link-local chatter), and no TCP metrics cache, so every
/// connection starts from scratch rather than from the last one's ssthresh.
fn configure_sysctls(ns: &str, tcp_buffer_max: Option<u32>) -> Result<(), LabError> {
    let path = PathBuf::from(NETNS_DIR).join(ns);
    let ns_name = ns.to_owned();
    // /proc/sys/net shows the namespace of the thread that opens it.
    let h = std::thread::Builder::new()
        .name("plumb-sysctl".into())
        .spawn(move || -> Result<(), LabError> {
            sys::enter_netns(&path).map_err(io_err(format!("entering {ns_name}")))?;
            let mut settings = vec![
                ("net/ipv6/conf/all/disable_ipv6", "1".to_owned()),
                ("net/ipv6/conf/default/disable_ipv6", "1".to_owned()),
                ("net/ipv4/tcp_no_metrics_save", "1".to_owned()),
            ];
            if let Some(max) = tcp_buffer_max {
                settings.push(("net/ipv4/tcp_rmem", format!("4096 131072 {max}")));
                settings.push(("net/ipv4/tcp_wmem", format!("4096 16384 {max}")));
            }
            for (key, val) in settings {
                let p = format!("/proc/sys/{key}");
                match fs::write(&p, &val) {
                    Ok(()) => {}
                    // No IPv6 in this kernel: nothing to disable.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && key.contains("ipv6") => {}
                    Err(e) => return Err(io_err(format!("writing {p} in {ns_name}"))(e)),
                }
            }
            Ok(())
        })
        .map_err(io_err("spawning sysctl thread"))?;
    h.join()
        .map_err(|_| LabError::Measure("sysctl thread panicked".into()))?
}

/// Counters of both directions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabStats {
    /// Packets sent by the near end.
    pub near_to_far: DirectionStats,
    /// Packets sent by the far end.
    pub far_to_near: DirectionStats,
    /// The lab held a CPU latency request of 0 µs, so idle CPUs polled
    /// ([`LabConfig::idle_poll`]).
    pub idle_poll: bool,
}

impl LabStats {
    /// One direction's counters.
    pub fn direction(&self, dir: Direction) -> &DirectionStats {
        match dir {
            Direction::NearToFar => &self.near_to_far,
            Direction::FarToNear => &self.far_to_near,
        }
    }
}

/// Kernel counters of a TUN device (`/sys/class/net/DEV/statistics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Packets the stack sent into the device.
    pub tx_packets: u64,
    /// Of those, dropped because the forwarder did not read fast enough.
    pub tx_dropped: u64,
    /// Packets the forwarder wrote into the device.
    pub rx_packets: u64,
    /// Of those, dropped by the device or stack on receipt.
    pub rx_dropped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_names_parse() {
        assert_eq!(stale_owner("plumb-123-4-near"), Some(123));
        assert_eq!(stale_owner("plumb-123-4-far"), Some(123));
        assert_eq!(stale_owner("plumb-123-4-mid"), None);
        assert_eq!(stale_owner("plumb-x-4-far"), None);
        assert_eq!(stale_owner("other-1-1-far"), None);
    }

    #[test]
    fn device_names_fit() {
        let name = format!("plumb{}{}n", base36(4_194_304, 5), base36(1_679_615, 1));
        assert!(name.len() <= 15, "{name}");
        assert_eq!(base36(0, 1), "0");
        assert_eq!(base36(35, 2), "0z");
    }

    #[test]
    fn config_defaults_and_validation() {
        let rate = Rate::from_gbps(1.0).expect("rate");
        let c = LabConfig::new(rate, Duration::from_millis(15));
        assert_eq!(c.rtt(), Duration::from_millis(15));
        assert_eq!(c.near_to_far.queue_bytes, 1_875_000);
        assert!(c.validate().is_ok());
        let c = c
            .with_delays(Duration::from_millis(5), Duration::from_millis(35))
            .with_queue(QueueLimit::Delay(Duration::from_millis(10)));
        assert_eq!(c.rtt(), Duration::from_millis(40));
        assert_eq!(c.far_to_near.queue_bytes, 1_250_000);
        let c = c.with_queue(QueueLimit::Bytes(100));
        assert!(matches!(c.validate(), Err(LabError::Invalid(_))));
    }

    /// A black hole must sit below the MTU (else it drops nothing) and at
    /// or above IPv4's 68 B.
    #[test]
    fn max_packet_must_be_below_the_mtu() {
        let rate = Rate::from_gbps(1.0).expect("rate");
        let c = LabConfig::new(rate, Duration::from_millis(15));
        assert!(c.clone().with_max_packet(1400).validate().is_ok());
        let e = c.clone().with_max_packet(1500).validate();
        assert!(
            matches!(&e, Err(LabError::Invalid(m)) if m.contains("not below the MTU")),
            "{e:?}"
        );
        let low = c.with_max_packet(60);
        assert!(Link::new(low.near_to_far.clone()).is_err());
    }

    #[test]
    fn not_root_message() {
        assert_eq!(
            LabError::NotRoot.to_string(),
            "plumb lab needs root (CAP_NET_ADMIN) to create network namespaces and TUN devices"
        );
    }
}
