//! A sans-IO model of a bottleneck link (work in progress: see issue #3).
//!
//! Time comes in as a parameter; randomness is seeded ([`cg_types::Rng`]). The same model runs
//! in virtual time (controller and transport tests) and in real time (netlab's emulator).
