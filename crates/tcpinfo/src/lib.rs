//! The kernel's `struct tcp_info`: its layout, its bytes decoded, and the
//! `getsockopt` that reads it — the one statement of it every reader in
//! plumb shares: `plumb-net` on its own sockets, `plumb-handshake` after a
//! `connect()`, `plumb-live` from sock_diag's INET_DIAG_INFO attribute on
//! any socket of the host (bytes in, fields out: no I/O).
//!
//! - `raw.rs`: [`RawTcpInfo`], the struct as the kernel lays it out, read
//!   from bytes at each field's own offset;
//! - `view.rs`: [`TcpInfo`], the typed view (bitfields unpacked; a field
//!   after the 104 bytes Linux 2.6 had is an `Option`, `None` when the
//!   kernel's copy stopped before it) and the `OPT_*` bits;
//! - `read.rs`: [`tcp_info`], `TCP_INFO` of a socket of this process, through
//!   `sys.rs`, the crate's one `unsafe` call (`getsockopt`).
//!
//! Layout follows `include/uapi/linux/tcp.h` through the AccECN counters
//! (Linux 6.18): 280 bytes. Older kernels send a prefix of it; newer
//! kernels may send more, and the bytes past this struct are ignored.

mod raw;
mod read;
mod sys;
mod view;

pub use raw::{RawTcpInfo, SIZE};
pub use read::tcp_info;
pub use view::{
    TcpInfo, MIN_LEN, OPT_ECN, OPT_ECN_SEEN, OPT_SACK, OPT_SYN_DATA, OPT_TFO_CHILD, OPT_TIMESTAMPS,
    OPT_USEC_TS, OPT_WSCALE, STATE_ESTABLISHED,
};
