//! `plumb calc`'s answer in words: the text ([`text`]) and the `--json`
//! object ([`json`]) for a path, its prediction and what else was asked
//! ([`query`]). Every figure comes from `plumb_model`; this only words it.

pub mod json;
pub mod query;
pub mod text;
