//! What several commands share, and none of them owns: a test with its
//! diagnosis, the flags of a lab, the report page, the
//! live filters (iperf3's flags are `crate::measure`).
//! Adapter glue between flags and the library crates; nothing here imports
//! a command's module.

pub mod capture_verdicts;
pub mod lab_flags;
pub mod live_flags;
pub mod os_guess;
pub mod report_page;
pub mod test_explain;
