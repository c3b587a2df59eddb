//! plumb-lab: a userspace long-fat-network emulator.
#![allow(missing_docs)]
pub mod emu;
pub mod forward;
pub mod hist;
pub mod lab;
pub mod measure;
pub mod packet;
pub mod rng;
pub mod sys;
pub mod wire;
pub use lab::*;
