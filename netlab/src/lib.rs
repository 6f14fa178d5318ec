//! `cg-netlab` (work in progress: see the issue tracker).
