//! Google Congestion Control as the papers describe it.
//!
//! Sources: Carlucci, De Cicco, Holmer, Mascolo, "Analysis and Design of the Google
//! Congestion Control for Web Real-time Communication (WebRTC)", MMSys 2016 ("MMSys16",
//! §3–4), and De Cicco, Carlucci, Mascolo, "Understanding the Dynamic Behaviour of the Google
//! Congestion Control for RTCWeb", PV 2013 ("2013", §III).
//!
//! One file per block of MMSys16 Figure 1:
//!
//! | block | file | equations |
//! |---|---|---|
//! | packet groups, `dm(ti)` | [`arrival`] | MMSys16 eq. (4) |
//! | arrival-time filter | [`kalman`] | eq. (10)–(16); two-state eq. (7) as an option |
//! | threshold `γ(ti)` | [`threshold`] | eq. (17)–(18); 2013 static `γ̄` as an option |
//! | over-use detector | [`detector`] | 2013 Algorithm 1 |
//! | receive rate `R` | [`receive_rate`] | eq. (3), 500 ms |
//! | remote rate controller | [`rate_control`] | eq. (3), Figure 4 FSM, `Ar ≤ 1.5R` |
//! | REMB processing | [`remb`] | §3.3: every 1 s or on a > 3 % drop |
//! | loss-based controller | [`loss`] | eq. (5); 2013 eq. (1) TFRC floor; 2013 eq. (2) |
//! | delay-based controller | [`delay_based`] | the chain above |
//! | receiver (REMB mode) | [`GccReceiver`] | a [`crate::ReceiveSideEstimator`] |
//! | sender | [`GccController`] | `A = min(Ar, As)`, pacing factor 1.5 (§3.5) |
//!
//! [`GccConfig`] holds every constant (each field names its equation) and the mode:
//! receiver-side REMB (the papers) or send-side over transport-wide feedback (libwebrtc
//! today). It implements [`crate::ControllerConfig`].
//!
//! ```
//! use std::time::Instant;
//! use cg_cc::{Controller, ControllerConfig, FeedbackKind};
//! use cg_cc::gcc::GccConfig;
//!
//! let now = Instant::now();
//! let sender = GccConfig::send_side().build(now);
//! assert_eq!(sender.feedback_kind(), FeedbackKind::TransportWideCc);
//! assert_eq!(sender.pacing_rate(), sender.target_bitrate().mul_f64(1.5));
//! ```
//!
//! Plotted quantities: [`GccReceiver`]'s and (send-side) [`GccController`]'s stats carry
//! `m`, `gamma` (ms), `signal` (−1/0/+1), `state` (0 hold, 1 increase, 2 decrease), `a_r`,
//! `a_s` (bit/s), `n_dd`; typed through [`GccController::gcc_stats`] and
//! [`GccReceiver::delay_stats`].
//!
//! Deviations from the papers, each documented where it happens: `η` is applied per second
//! of elapsed time ([`rate_control`]); `σ²n` has a floor of 1 ms² and `γ`'s limits and
//! initial value come from libwebrtc scaled to the papers' units ([`GccConfig`]).

pub mod arrival;
mod config;
pub mod delay_based;
pub mod detector;
pub mod history;
pub mod kalman;
pub mod loss;
pub mod rate_control;
pub mod receive_rate;
mod receiver;
pub mod remb;
mod sender;
pub mod threshold;
mod time;

pub use config::{
    ArrivalFilterModel, GccConfig, GccMode, GroupSendTime, Grouping, LossModel, ThresholdModel,
};
pub use delay_based::{DelayBasedController, DelayBasedStats};
pub use detector::Signal;
pub use rate_control::{IncreaseMode, RateState};
pub use receiver::GccReceiver;
pub use sender::{GccController, GccStats};
