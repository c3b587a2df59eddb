//! plumb-lab: a userspace long-fat-network emulator.
#![allow(missing_docs)]
pub mod emu;
pub mod packet;
pub mod rng;
pub mod wire;
