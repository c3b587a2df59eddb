//! SIGINT and SIGTERM become a flag the driver loops check, so a test ends
//! cleanly — peer told, partial results printed — instead of dying mid-write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handlers once; later calls do nothing.
pub fn install() {
    FLAG.get_or_init(registered);
}

fn registered() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // If registration fails the default action (exit) stays: acceptable.
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
    flag
}

/// Whether SIGINT or SIGTERM has arrived since [`install`].
pub fn interrupted() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// The flag SIGINT and SIGTERM set (handlers installed first), for an API
/// that takes a stop flag: it stops on a signal with no watcher thread.
pub fn flag() -> Arc<AtomicBool> {
    Arc::clone(FLAG.get_or_init(registered))
}
