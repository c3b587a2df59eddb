//! Who gets in, decided without I/O: the operator's limits on parameters,
//! the test slots (`--max-tests`) with their bitrate reservations, and the
//! routing of a new connection's 37-byte cookie to a running test.
//!
//! A connection holds a slot only from the moment its parameters are
//! accepted until its test ends: a client that connects and says nothing
//! holds nothing, so it cannot lock anyone out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use plumb_proto::cookie::COOKIE_LEN;
use plumb_proto::params::TestParams;

use crate::config::Limits;

/// iperf3's error codes for refusals (spec §7).
pub mod code {
    /// Test duration over the server's maximum (iperf3 3.20+).
    pub const MAX_DURATION: i32 = 37;
    /// Bad test duration (what clients before 3.20 understand for a maximum).
    pub const DURATION: i32 = 5;
    /// Too many parallel streams.
    pub const STREAMS: i32 = 6;
    /// Requested total rate over the server's limit.
    pub const TOTAL_RATE: i32 = 27;
    /// Authentication failed.
    pub const AUTH: i32 = 142;
    /// No data received for `--rcv-timeout`.
    pub const IDLE: i32 = 144;
    /// The test ran past what the server allows.
    pub const EXPIRED: i32 = 160;
    /// plumb's request/response parameters out of range (no iperf3 code).
    pub const RR: i32 = 250;
}

/// Why a test is refused: the iperf3 code for the client and a line for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// SERVER_ERROR code.
    pub code: i32,
    /// What was over which limit.
    pub message: String,
}

/// The total bit/s a test asks for: per-stream `bandwidth` × streams in
/// both directions; 0 = unlimited.
pub fn requested_rate(p: &TestParams) -> u64 {
    let per_stream = u64::try_from(p.bandwidth).unwrap_or(0);
    let streams = u64::try_from(p.parallel.clamp(1, 128)).unwrap_or(1);
    let dirs = if p.bidirectional { 2 } else { 1 };
    per_stream.saturating_mul(streams * dirs)
}

/// Checks (already range-validated) parameters against the operator's
/// limits; returns the rate to reserve.
pub fn check_limits(p: &TestParams, limits: &Limits) -> Result<u64, Refusal> {
    if let Some(rr) = p.plumb.as_ref().and_then(|x| x.rr) {
        let udp = p.protocol == plumb_proto::params::Protocol::Udp;
        rr.validate(udp).map_err(|e| Refusal {
            code: code::RR,
            message: format!("request/response test refused: {e}"),
        })?;
        if let Some(max) = limits.max_rr_size {
            let asked = rr.request.max(rr.response);
            if asked > max {
                return Err(Refusal {
                    code: code::RR,
                    message: format!(
                        "request/response test refused: messages of {asked} bytes asked, \
                         this server allows {max}"
                    ),
                });
            }
        }
        if let Some(max) = limits.max_rr_burst.filter(|m| rr.burst > *m) {
            return Err(Refusal {
                code: code::RR,
                message: format!(
                    "request/response test refused: a burst of {} asked, this server allows {max}",
                    rr.burst
                ),
            });
        }
    }
    if let Some(max) = limits.max_parallel {
        if p.parallel > i64::from(max) {
            return Err(Refusal {
                code: code::STREAMS,
                message: format!("{} streams asked, this server allows {max}", p.parallel),
            });
        }
    }
    if let Some(max) = limits.max_duration {
        let asked = p.time.saturating_add(p.omit);
        if u64::try_from(asked).unwrap_or(u64::MAX) > max.as_secs() {
            // Code 37 is iperf3 3.20's; older clients print it as a bare
            // number, so they get 5, "bad duration", which they can word.
            let code = if iperf3_minor_at_least(&p.client_version, 20) {
                code::MAX_DURATION
            } else {
                code::DURATION
            };
            return Err(Refusal {
                code,
                message: format!(
                    "{asked} s (time + omit) asked, this server allows {} s",
                    max.as_secs()
                ),
            });
        }
    }
    let rate = requested_rate(p);
    if limits.max_bitrate.is_some() || limits.max_total_bitrate.is_some() {
        if rate == 0 {
            return Err(Refusal {
                code: code::TOTAL_RATE,
                message: "an unlimited rate asked; this server needs -b RATE within its limit"
                    .into(),
            });
        }
        if let Some(max) = limits.max_bitrate.filter(|m| rate > *m) {
            return Err(Refusal {
                code: code::TOTAL_RATE,
                message: format!("{rate} bit/s asked, this server allows {max} bit/s per test"),
            });
        }
    }
    Ok(rate)
}

/// Whether a `client_version` such as `"3.12"` or `"3.21+"` is an iperf3 3.x
/// release at least `3.minor`; unknown strings (plumb sends "3.12") are not.
pub fn iperf3_minor_at_least(client_version: &str, minor: u32) -> bool {
    let mut parts = client_version.trim_end_matches('+').split('.');
    match (
        parts.next().and_then(|m| m.parse::<u32>().ok()),
        parts.next().and_then(|m| m.parse::<u32>().ok()),
    ) {
        (Some(3), Some(m)) => m >= minor,
        (Some(major), _) => major > 3,
        _ => false,
    }
}

/// Why no slot was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoSlot {
    /// Every slot is held: iperf3's "busy".
    Busy,
    /// The rate does not fit in what the running tests leave of `--max-total-bitrate`.
    Rate(Refusal),
}

#[derive(Debug, Default)]
struct SlotState {
    held: usize,
    reserved_bps: u64,
    /// Held slots whose client has had its last word (results or an error):
    /// they free themselves as soon as their thread has cleaned up.
    winding_down: usize,
}

/// The test slots and the server-wide rate budget.
#[derive(Debug)]
pub struct Slots {
    max_tests: usize,
    max_total_bps: Option<u64>,
    state: Mutex<SlotState>,
    /// Tests admitted so far; with the count at admission it tells how many
    /// other tests overlapped a given one.
    admitted: AtomicU64,
}

impl Slots {
    /// `max_tests` slots (at least 1) sharing `max_total_bps`.
    pub fn new(max_tests: usize, max_total_bps: Option<u64>) -> Arc<Slots> {
        Arc::new(Slots {
            max_tests: max_tests.max(1),
            max_total_bps,
            state: Mutex::new(SlotState::default()),
            admitted: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        // The state is two counters, consistent after every statement: a
        // panic elsewhere cannot leave it torn, so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether every slot is held.
    pub fn full(&self) -> bool {
        self.lock().held >= self.max_tests
    }

    /// Whether every slot is held but one is about to be freed: a client
    /// arriving now is one that ran its tests back to back, which iperf3's
    /// single-threaded server serves (from its accept queue), not refuses.
    pub fn freeing_soon(&self) -> bool {
        let st = self.lock();
        st.held >= self.max_tests && st.winding_down > 0
    }

    /// Tests running now.
    pub fn held(&self) -> usize {
        self.lock().held
    }

    /// Takes a slot reserving `rate_bps`.
    pub fn try_take(self: &Arc<Self>, rate_bps: u64) -> Result<Slot, NoSlot> {
        let mut st = self.lock();
        if st.held >= self.max_tests {
            return Err(NoSlot::Busy);
        }
        if let Some(total) = self.max_total_bps {
            let free = total.saturating_sub(st.reserved_bps);
            if rate_bps > free {
                return Err(NoSlot::Rate(Refusal {
                    code: code::TOTAL_RATE,
                    message: format!(
                        "{rate_bps} bit/s asked, {free} bit/s left of this server's {total} bit/s"
                    ),
                }));
            }
        }
        let others = st.held;
        st.held += 1;
        st.reserved_bps = st.reserved_bps.saturating_add(rate_bps);
        let seq = self.admitted.fetch_add(1, Ordering::Relaxed);
        Ok(Slot {
            slots: Arc::clone(self),
            rate_bps,
            seq,
            others_at_start: others as u64,
            winding_down: false,
        })
    }
}

/// A held test slot; dropping it frees the slot and the reserved rate.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    rate_bps: u64,
    seq: u64,
    others_at_start: u64,
    winding_down: bool,
}

impl Slot {
    /// The client has had its last word; only clean-up is left.
    pub fn wind_down(&mut self) {
        if !self.winding_down {
            self.winding_down = true;
            self.slots.lock().winding_down += 1;
        }
    }

    /// How many other tests have run at the same time as this one so far:
    /// those running when it was admitted plus those admitted since.
    pub fn concurrent(&self) -> u64 {
        let since = self
            .slots
            .admitted
            .load(Ordering::Relaxed)
            .saturating_sub(self.seq + 1);
        self.others_at_start + since
    }

    /// The bit/s this test reserved (0 = unlimited).
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut st = self.slots.lock();
        st.held = st.held.saturating_sub(1);
        st.reserved_bps = st.reserved_bps.saturating_sub(self.rate_bps);
        if self.winding_down {
            st.winding_down = st.winding_down.saturating_sub(1);
        }
    }
}

/// A cookie as a map key: the bytes up to the first NUL, zero after it
/// (iperf3 compares cookies as C strings).
pub type CookieKey = [u8; COOKIE_LEN];

/// The key of 37 received bytes.
pub fn cookie_key(bytes: &[u8; COOKIE_LEN]) -> CookieKey {
    let mut k = [0u8; COOKIE_LEN];
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(COOKIE_LEN);
    k[..end].copy_from_slice(&bytes[..end]);
    k
}

/// Where a new connection goes once its first 37 bytes are in.
#[derive(Debug)]
pub enum Route<T> {
    /// A data stream of a test that is accepting its streams: hand it over.
    Stream(T),
    /// The cookie of an admitted test that takes no more streams: refuse.
    Surplus,
    /// Nobody's cookie: a new control connection.
    Control,
}

#[derive(Debug)]
enum Entry<T> {
    Accepting(T),
    Closed,
}

/// Admitted tests by cookie, and where each takes its data streams.
#[derive(Debug)]
pub struct Registry<T> {
    map: Mutex<HashMap<CookieKey, Entry<T>>>,
    accepting: AtomicUsize,
}

impl<T: Clone> Default for Registry<T> {
    fn default() -> Self {
        Registry {
            map: Mutex::new(HashMap::new()),
            accepting: AtomicUsize::new(0),
        }
    }
}

impl<T: Clone> Registry<T> {
    fn lock(&self) -> MutexGuard<'_, HashMap<CookieKey, Entry<T>>> {
        // Every update is one map operation plus a counter kept in step
        // under the same lock: never torn, so poisoning is harmless.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records an admitted test; its cookie takes no streams yet.
    pub fn admit(&self, key: CookieKey) {
        if let Some(Entry::Accepting(_)) = self.lock().insert(key, Entry::Closed) {
            self.accepting.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The test now takes data streams through `to`.
    pub fn accept_streams(&self, key: CookieKey, to: T) {
        let mut m = self.lock();
        if !matches!(m.get(&key), Some(Entry::Accepting(_))) {
            self.accepting.fetch_add(1, Ordering::Relaxed);
        }
        m.insert(key, Entry::Accepting(to));
    }

    /// The test has all its streams; more with its cookie are refused.
    pub fn streams_complete(&self, key: CookieKey) {
        self.admit(key);
    }

    /// The test is over; its cookie means nothing any more.
    pub fn remove(&self, key: CookieKey) {
        if let Some(Entry::Accepting(_)) = self.lock().remove(&key) {
            self.accepting.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether some test is waiting for data streams (so a new connection
    /// must be read before it can be refused).
    pub fn any_accepting(&self) -> bool {
        self.accepting.load(Ordering::Relaxed) > 0
    }

    /// Tests known.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no test is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Routes a connection by its first 37 bytes.
    pub fn route(&self, first: &[u8; COOKIE_LEN]) -> Route<T> {
        match self.lock().get(&cookie_key(first)) {
            Some(Entry::Accepting(to)) => Route::Stream(to.clone()),
            Some(Entry::Closed) => Route::Surplus,
            None => Route::Control,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn params(parallel: i64, bandwidth: i64, time: i64) -> TestParams {
        TestParams {
            parallel,
            bandwidth,
            time,
            ..TestParams::default()
        }
    }

    #[test]
    fn limits_refuse_with_iperf3_codes() {
        let l = Limits {
            max_parallel: Some(4),
            max_duration: Some(Duration::from_secs(30)),
            max_bitrate: Some(100_000_000),
            max_total_bitrate: None,
            ..Limits::default()
        };
        assert_eq!(check_limits(&params(4, 10_000_000, 30), &l), Ok(40_000_000));
        assert_eq!(
            check_limits(&params(5, 1, 1), &l).map_err(|r| r.code),
            Err(6)
        );
        let long = TestParams {
            omit: 1,
            ..params(1, 1, 30)
        };
        assert_eq!(check_limits(&long, &l).map_err(|r| r.code), Err(5));
        let new_client = TestParams {
            client_version: "3.21+".into(),
            ..long
        };
        assert_eq!(check_limits(&new_client, &l).map_err(|r| r.code), Err(37));
        assert!(iperf3_minor_at_least("3.20", 20));
        assert!(!iperf3_minor_at_least("3.12", 20));
        assert!(!iperf3_minor_at_least("", 20));
        assert!(iperf3_minor_at_least("4.0", 20));
        assert_eq!(
            check_limits(&params(1, 0, 1), &l).map_err(|r| r.code),
            Err(27)
        );
        assert_eq!(
            check_limits(&params(2, 60_000_000, 1), &l).map_err(|r| r.code),
            Err(27)
        );
        let bidir = TestParams {
            bidirectional: true,
            ..params(1, 60_000_000, 1)
        };
        assert_eq!(requested_rate(&bidir), 120_000_000);
        assert_eq!(check_limits(&params(1, 0, 1), &Limits::default()), Ok(0));
    }

    #[test]
    fn a_winding_down_slot_is_freeing_soon_until_dropped() {
        let s = Slots::new(1, None);
        let mut a = s.try_take(0).expect("first");
        assert!(s.full() && !s.freeing_soon(), "running, not ending");
        a.wind_down();
        a.wind_down();
        assert!(s.freeing_soon());
        drop(a);
        assert!(!s.full() && !s.freeing_soon());
        // Dropping a wound-down slot forgets it: the count does not leak.
        let b = s.try_take(0).expect("second");
        assert!(!s.freeing_soon());
        drop(b);
        let two = Slots::new(2, None);
        let mut x = two.try_take(0).expect("x");
        x.wind_down();
        assert!(!two.freeing_soon(), "a slot is free anyway");
    }

    #[test]
    fn slots_count_and_reserve() {
        let s = Slots::new(2, Some(100));
        let a = s.try_take(60).expect("first");
        assert_eq!(a.concurrent(), 0);
        assert!(matches!(s.try_take(50), Err(NoSlot::Rate(_))));
        let b = s.try_take(40).expect("second");
        assert!(s.full());
        assert_eq!(s.try_take(0).err(), Some(NoSlot::Busy));
        assert_eq!((a.concurrent(), b.concurrent()), (1, 1));
        drop(a);
        let c = s.try_take(60).expect("third after the first ended");
        assert_eq!((b.concurrent(), c.concurrent()), (2, 1));
        drop((b, c));
        assert_eq!(s.held(), 0);
        let one = Slots::new(0, None);
        let _x = one.try_take(u64::MAX).expect("at least one slot");
        assert!(one.full());
    }

    #[test]
    fn routing_by_cookie() {
        let r: Registry<u32> = Registry::default();
        let mut c = [b'a'; COOKIE_LEN];
        c[36] = 0;
        assert!(matches!(r.route(&c), Route::Control));
        r.admit(cookie_key(&c));
        assert!(matches!(r.route(&c), Route::Surplus));
        assert!(!r.any_accepting());
        r.accept_streams(cookie_key(&c), 7);
        assert!(r.any_accepting());
        // Bytes after the NUL do not matter, as with iperf3's strcmp.
        let mut d = c;
        d[20] = 0;
        d[21] = b'x';
        let mut e = c;
        e[20] = 0;
        assert!(matches!(r.route(&c), Route::Stream(7)));
        r.accept_streams(cookie_key(&e), 8);
        assert!(matches!(r.route(&d), Route::Stream(8)));
        r.streams_complete(cookie_key(&c));
        assert!(matches!(r.route(&c), Route::Surplus));
        r.remove(cookie_key(&c));
        r.remove(cookie_key(&e));
        assert!(matches!(r.route(&c), Route::Control));
        assert!(!r.any_accepting());
        assert!(r.is_empty());
    }

    proptest! {
        #[test]
        fn any_bytes_route_without_panic(bytes in proptest::array::uniform32(any::<u8>()), tail in proptest::array::uniform5(any::<u8>())) {
            let r: Registry<u8> = Registry::default();
            let mut c = [0u8; COOKIE_LEN];
            c[..32].copy_from_slice(&bytes);
            c[32..].copy_from_slice(&tail);
            prop_assert!(matches!(r.route(&c), Route::Control));
            r.accept_streams(cookie_key(&c), 1);
            prop_assert!(matches!(r.route(&c), Route::Stream(1)));
            r.remove(cookie_key(&c));
            prop_assert!(!r.any_accepting());
        }

        #[test]
        fn limits_never_panic(parallel in any::<i64>(), bw in any::<i64>(), time in any::<i64>(), omit in any::<i64>(), bidir in any::<bool>()) {
            let p = TestParams { parallel, bandwidth: bw, time, omit, bidirectional: bidir, ..TestParams::default() };
            let l = Limits { max_parallel: Some(8), max_duration: Some(Duration::from_secs(60)), max_bitrate: Some(1_000_000_000), max_total_bitrate: Some(2_000_000_000), max_rr_size: Some(64), max_rr_burst: Some(4), bitrate_cap: None };
            let _ = check_limits(&p, &l);
        }
    }
}
