//! Unit types shared by every cg crate.
//!
//! cg passes no bare numbers whose unit lives in a comment: a rate, a size or a time is a
//! type that says its unit. This crate holds the few types every other crate needs:
//!
//! - [`Bitrate`] — bits per second; [`DataSize`] — bytes. `DataSize / Duration = Bitrate`,
//!   `Bitrate * Duration = DataSize`, `DataSize / Bitrate = Duration`.
//! - [`Codec`] — the video codec (and RTP payload format) of a stream.
//! - [`Ecn`] — the two ECN bits of the IP header (RFC 3168 §5).
//! - [`RemoteTime`] — a timestamp on a peer's clock (feedback arrival times), which cannot be an
//!   [`std::time::Instant`] of ours because the two clocks have an unknown offset.
//! - [`MediaTime`] — a time on the 90 kHz RTP video clock (RTP timestamps), converted to and
//!   from [`std::time::Duration`] in one place.
//! - [`Rng`] — a small seeded PRNG (xoshiro256\*\*), so that every random decision in a sans-IO
//!   core is reproducible from its seed, whatever version of an external crate is built.
//!
//! All types are plain values; nothing here reads a clock or does I/O.

mod bitrate;
mod codec;
mod data_size;
mod ecn;
mod media_time;
mod parse;
mod remote_time;
mod rng;

pub use bitrate::Bitrate;
pub use codec::Codec;
pub use data_size::DataSize;
pub use ecn::Ecn;
pub use media_time::MediaTime;
pub use parse::ParseError;
pub use remote_time::RemoteTime;
pub use rng::Rng;
