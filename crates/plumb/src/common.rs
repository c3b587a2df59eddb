//! What several commands share, and none of them owns: a test with its
//! diagnosis, the report page, a capture's verdicts, an end's operating
//! system, a test's output and CPU pin (the flags they share are
//! `plumb_cli`'s).
//! Adapter glue between flags and the library crates; nothing here imports
//! a command's module.

pub mod auto_tool;
pub mod capture_verdicts;
pub mod os_guess;
pub mod output;
pub mod report_page;
pub mod test_explain;
