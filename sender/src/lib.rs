//! `cg-sender` (work in progress: see the issue tracker).
