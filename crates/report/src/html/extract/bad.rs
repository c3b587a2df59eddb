//! Why a document is no report at all ([`BadDocument`]): the one failure of
//! reading a document for the page; everything else a document leaves out
//! the page leaves out too.

/// Why a document cannot be reported on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadDocument(pub String);

impl std::fmt::Display for BadDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadDocument {}
