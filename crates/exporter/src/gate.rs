//! Admission of probes: at most one at a time per target and `--max-probes`
//! overall. A probe that cannot run now is refused at once (never queued), so
//! a burst of scrapes costs a refusal each instead of a pile of waiting tests
//! that would distort each other's throughput anyway.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use crate::query::Target;

/// Why a probe may not start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// A probe of this target is running (HTTP 429).
    Target,
    /// `--max-probes` probes are running (HTTP 503).
    Full,
}

/// The set of running probes.
#[derive(Debug)]
pub struct Gate {
    running: Mutex<HashSet<Target>>,
    max: usize,
}

/// A running probe's place; leaving it (drop, also on unwind) frees the target.
#[derive(Debug)]
pub struct Permit {
    gate: Arc<Gate>,
    target: Target,
}

impl Gate {
    /// A gate for at most `max` probes at once.
    pub fn new(max: usize) -> Arc<Gate> {
        Arc::new(Gate {
            running: Mutex::new(HashSet::new()),
            max,
        })
    }

    /// Takes a place for a probe of `target`, or says why not.
    pub fn try_enter(self: &Arc<Self>, target: &Target) -> Result<Permit, Busy> {
        // A panicking probe thread cannot leave the set half-updated: insert
        // and remove are single calls, so a poisoned lock is still consistent.
        let mut set = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if set.contains(target) {
            return Err(Busy::Target);
        }
        if set.len() >= self.max {
            return Err(Busy::Full);
        }
        set.insert(target.clone());
        Ok(Permit {
            gate: Arc::clone(self),
            target: target.clone(),
        })
    }

    /// Probes running now.
    pub fn running(&self) -> usize {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gate
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_per_target_and_a_cap_overall() {
        let g = Gate::new(2);
        let a = Target::Addr([127, 0, 0, 1].into());
        let b = Target::Name("b.example".into());
        let c = Target::Addr([127, 0, 0, 3].into());
        let pa = g.try_enter(&a).expect("first probe of a");
        assert_eq!(g.try_enter(&a).err(), Some(Busy::Target));
        let _pb = g.try_enter(&b).expect("first probe of b");
        assert_eq!(g.try_enter(&c).err(), Some(Busy::Full));
        assert_eq!(g.running(), 2);
        drop(pa);
        assert_eq!(g.running(), 1);
        assert!(g.try_enter(&c).is_ok(), "a freed place is reusable");
    }
}
