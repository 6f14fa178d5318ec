//! `cg-netlab`: network-namespace testbeds (docs below).
pub mod bench;
pub mod emu;
pub mod error;
pub mod isolate;
pub mod kernel;
pub mod metrics;
pub mod packet;
pub mod plot;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod sys;
pub mod topology;
pub mod traffic;

pub use error::{Error, Result};
