//! The first 37 bytes of every new connection: routed to the test that owns
//! the cookie, refused, or taken as a new control connection — by the same
//! registry the server uses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plumb_net::server::{cookie_key, Registry, Route};

fuzz_target!(|data: &[u8]| {
    let r: Registry<u32> = Registry::default();
    let mut known = Vec::new();
    for (i, c) in data.chunks_exact(37).enumerate() {
        let Ok(first) = <&[u8; 37]>::try_from(c) else {
            return;
        };
        let key = cookie_key(first);
        match r.route(first) {
            Route::Control => {
                assert!(!known.contains(&key));
                // Every other connection becomes a test taking streams.
                if i % 2 == 0 {
                    r.accept_streams(key, i as u32);
                    known.push(key);
                }
            }
            Route::Stream(_) => {
                assert!(known.contains(&key));
                r.streams_complete(key);
            }
            Route::Surplus => {
                assert!(known.contains(&key));
                r.remove(key);
                known.retain(|k| *k != key);
            }
        }
    }
    for k in known {
        r.remove(k);
    }
    assert!(r.is_empty() && !r.any_accepting());
});
