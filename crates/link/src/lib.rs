//! A sans-IO model of a bottleneck link, and a simulated-time harness built on it.
//!
//! A [`Link`] is random loss → queue discipline → serialisation at the link capacity →
//! propagation delay → delivery. It never reads a clock: every input carries `now`, and
//! [`Link::poll_timeout`] says when it next has something to do. Randomness comes from a seeded
//! [`cg_types::Rng`], so the same seed gives the same per-packet event log.
//!
//! The [`sim`] module joins sans-IO endpoints through a forward and a reverse link and jumps
//! simulated time from event to event.
//!
//! (Work in progress: DropTail is the only queue discipline so far; see issue #3.)

pub mod capacity;
pub mod delay;
pub mod error;
pub mod event;
pub mod link;
pub mod loss;
pub mod packet;
pub mod qdisc;
pub mod sim;
pub mod stats;

pub use capacity::{CapacityConfig, MahimahiTrace, RateStep};
pub use delay::DelayConfig;
pub use error::Error;
pub use event::{DropReason, EventKind, EventLog, EventSink, LinkEvent, MarkReason, NullSink};
pub use link::{Link, LinkConfig};
pub use loss::LossConfig;
pub use packet::{Dscp, FlowId, Packet, PacketId, Protocol};
pub use qdisc::{LinkInfo, Qdisc, QdiscConfig};
pub use stats::{FlowStats, LinkStats};
