//! The emulated bottleneck: a TUN forwarder running cg-link in real time.
pub mod forwarder;
pub mod linkcfg;
pub mod record;
pub mod stamps;
pub mod tun;

pub use forwarder::ForwarderStatus;
