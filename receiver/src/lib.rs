//! `cg-receiver` (work in progress: see the issue tracker).
