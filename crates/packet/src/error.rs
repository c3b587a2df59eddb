//! Why a live capture could not run, worded for the person who asked.

use std::io;
use std::path::PathBuf;

/// Why a live capture could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No interface has that name (in this network namespace).
    #[error("no interface named {0:?} (see `ip link`)")]
    UnknownInterface(String),
    /// The process may not open packet sockets.
    #[error("reading packets from an interface needs root (CAP_NET_RAW)")]
    NoPermission,
    /// The ports and peers asked for do not fit a kernel filter.
    #[error("too many ports or peers for a kernel filter: give fewer (up to about 100 ports and 12 peers)")]
    TooManyFilters,
    /// The snap length cannot hold the headers.
    #[error("snap length {0} is too short for the headers (at least 96 bytes)")]
    Snaplen(u32),
    /// `--write FILE` could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The kernel's reason.
        source: io::Error,
    },
    /// A step of setting up or reading the socket failed.
    #[error("{what}: {source}")]
    Socket {
        /// The step.
        what: &'static str,
        /// The kernel's reason.
        source: io::Error,
    },
}

impl Error {
    /// A failed socket step; `EPERM`/`EACCES` say what they mean.
    pub(super) fn socket(what: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| {
            if source.kind() == io::ErrorKind::PermissionDenied {
                Error::NoPermission
            } else {
                Error::Socket { what, source }
            }
        }
    }
}
