//! The real-time UDP driver for cg-rtp sessions (work in progress: see issue #6).
