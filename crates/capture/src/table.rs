//! Connection tracking with a ceiling: connections are keyed by their
//! 4-tuple (either direction finds the same one), and past
//! [`Limits::max_connections`] the least busy tenth is dropped (and
//! counted), so a capture of a million one-packet flows (a scan, a SYN
//! flood) costs the memory of the ceiling, not of the flows. Dropping a
//! tenth at once keeps the cost of finding them amortised: one selection
//! over the table per tenth of its size.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};

use plumb_record::capture::{Dropped, Limits};

use crate::connection::Connection;

/// The 4-tuple with its ends in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key(SocketAddr, SocketAddr);

/// Both ends in one write: the table's keyed hasher (SipHash, so a crafted
/// capture cannot aim its 4-tuples at one bucket) costs per call as much as
/// per byte, and a derived hash makes several per end. Equal keys write equal
/// bytes (an IPv4 address as its IPv6-mapped form, then the port).
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut bytes = [0u8; 36];
        for (end, addr) in bytes.chunks_exact_mut(18).zip([self.0, self.1]) {
            let ip = match addr.ip() {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => v6,
            };
            end[..16].copy_from_slice(&ip.octets());
            end[16..].copy_from_slice(&addr.port().to_be_bytes());
        }
        state.write(&bytes);
    }
}

impl Key {
    /// The key of a packet from `a` to `b` (or from `b` to `a`).
    pub fn new(a: SocketAddr, b: SocketAddr) -> Key {
        if a <= b {
            Key(a, b)
        } else {
            Key(b, a)
        }
    }
}

/// The tracked connections.
#[derive(Debug, Default)]
pub struct Table {
    conns: HashMap<Key, Connection>,
    max: usize,
    /// Points per series of each new connection; none when 0.
    pub series_budget: usize,
    /// What the ceiling dropped.
    pub dropped: Dropped,
    /// Connections made so far: the next one's serial number.
    made: u64,
}

impl Table {
    /// An empty table holding at most `limits.max_connections`.
    pub fn new(limits: Limits) -> Table {
        Table {
            conns: HashMap::new(),
            max: limits.max_connections.max(10),
            series_budget: 0,
            dropped: Dropped::default(),
            made: 0,
        }
    }

    /// The connection of `key`, made (and room made for it) if new.
    pub fn entry(&mut self, key: Key) -> &mut Connection {
        // The length first: below the ceiling, one lookup per segment.
        if self.conns.len() >= self.max && !self.conns.contains_key(&key) {
            self.evict();
        }
        let budget = self.series_budget;
        let made = &mut self.made;
        self.conns.entry(key).or_insert_with(|| {
            let mut c = if budget == 0 {
                Connection::default()
            } else {
                Connection::with_series(budget)
            };
            // A connection dropped and seen again is a new one: what it
            // was remembered by no longer finds it.
            c.serial = *made;
            *made += 1;
            c
        })
    }

    /// The connection of `key`, if tracked.
    pub fn get_mut(&mut self, key: &Key) -> Option<&mut Connection> {
        self.conns.get_mut(key)
    }

    /// Connections tracked now.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Drops the least busy tenth: fewest segments, then longest idle.
    fn evict(&mut self) {
        let n = (self.max / 10).max(1);
        let mut busy: Vec<(u64, u64, Key)> = self
            .conns
            .iter()
            .map(|(k, c)| (c.packets(), c.last_ns(), *k))
            .collect();
        busy.select_nth_unstable(n - 1);
        for (packets, _, key) in &busy[..n] {
            self.conns.remove(key);
            self.dropped.connections += 1;
            self.dropped.packets += packets;
        }
    }

    /// The connections, by first segment's time.
    pub fn into_connections(self) -> Vec<Connection> {
        let mut v: Vec<Connection> = self.conns.into_values().collect();
        for c in &mut v {
            c.finish();
        }
        v.sort_by_key(|c| (c.first_ns(), c.client.sender.clone()));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_direction_is_one_key_and_a_connection_is_small() {
        let (a, b): (SocketAddr, SocketAddr) = (
            "10.0.0.1:1".parse().expect("addr"),
            "10.0.0.2:2".parse().expect("addr"),
        );
        assert_eq!(Key::new(a, b), Key::new(b, a));
        // The ceiling's memory: 100 000 of these (plus SYN option lists).
        let size = std::mem::size_of::<Connection>() + std::mem::size_of::<Key>();
        eprintln!("a tracked connection: {size} bytes");
        assert!(size < 2900, "{size}");
    }
}
