//! The docs' command lines and the hosts they run on, for `docs_commands`.

pub mod lines;
pub mod scene;
