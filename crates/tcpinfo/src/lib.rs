//! The kernel's `struct tcp_info`, and its bytes decoded: the one layout
//! every reader of it in plumb shares — `plumb-net` from
//! `getsockopt(TCP_INFO)` on its own sockets, `plumb-handshake` after a
//! `connect()`, `plumb-live` from sock_diag's INET_DIAG_INFO attribute on
//! any socket of the host. Pure: bytes in, fields out, with no I/O (the
//! `getsockopt` calls stay in each reader's `sys` module).
//!
//! - `raw.rs`: [`RawTcpInfo`], the struct as the kernel lays it out, read
//!   from bytes at each field's own offset;
//! - `view.rs`: [`TcpInfo`], the typed view (bitfields unpacked; a field
//!   after the 104 bytes Linux 2.6 had is an `Option`, `None` when the
//!   kernel's copy stopped before it) and the `OPT_*` bits.
//!
//! Layout follows `include/uapi/linux/tcp.h` through the AccECN counters
//! (Linux 6.18): 280 bytes. Older kernels send a prefix of it; newer
//! kernels may send more, and the bytes past this struct are ignored.
#![forbid(unsafe_code)]

mod raw;
mod view;

pub use raw::{RawTcpInfo, SIZE};
pub use view::{
    TcpInfo, MIN_LEN, OPT_ECN, OPT_ECN_SEEN, OPT_SACK, OPT_SYN_DATA, OPT_TFO_CHILD, OPT_TIMESTAMPS,
    OPT_USEC_TS, OPT_WSCALE, STATE_ESTABLISHED,
};
