//! Google Congestion Control: the papers' algorithm, with libwebrtc's additions where cg
//! uses them.
//!
//! Sources: Carlucci, De Cicco, Holmer, Mascolo, "Analysis and Design of the Google
//! Congestion Control for Web Real-time Communication (WebRTC)", MMSys 2016 ("MMSys16",
//! §3–4), and De Cicco, Carlucci, Mascolo, "Understanding the Dynamic Behaviour of the Google
//! Congestion Control for RTCWeb", PV 2013 ("2013", §III).
//!
//! | block | file | source |
//! |---|---|---|
//! | packet groups, `dm(ti)` | [`arrival`] | MMSys16 eq. (4) |
//! | arrival-time filter | [`kalman`], [`trendline`] | eq. (10)–(16), two-state eq. (7); libwebrtc's trendline |
//! | threshold `γ(ti)`, over-use | [`threshold`], [`detector`] | eq. (17)–(18), 2013 `γ̄`; 2013 Algorithm 1 |
//! | receive rate `R`, remote rate | [`receive_rate`], [`rate_control`] | eq. (3), Figure 4 FSM, `Ar ≤ 1.5R` |
//! | REMB, loss-based controller | [`remb`], [`loss`] | §3.3; eq. (5), 2013 eq. (1)–(2) |
//! | delay-based chain | [`delay_based`] | the blocks above |
//! | receiver (REMB mode), sender | [`GccReceiver`], [`GccController`] | `A = min(Ar, As)`, pacing `f·A` (§3.5) |
//! | standing queue | [`standing`] | cg |
//! | ALR, probing | [`alr`], [`probe_controller`], [`probe_estimator`], [`probe_detector`] | libwebrtc |
//!
//! [`GccConfig`] holds every constant and the mode: receiver-side REMB (the papers) or
//! send-side over transport-wide feedback (libwebrtc today). Every departure from the papers
//! is one of its fields, so the literal reading can be restored, and each field's doc states
//! the rule and its reason; the tests under `crates/cc/tests` print the figures behind them.
//!
//! ```
//! use std::time::Instant;
//! use cg_cc::{Controller, ControllerConfig, ControllerEvent, FeedbackKind};
//! use cg_cc::gcc::GccConfig;
//!
//! let now = Instant::now();
//! let mut sender = GccConfig::send_side().build(now).unwrap();
//! assert_eq!(sender.feedback_kind(), FeedbackKind::TransportWideCc);
//! // Send-side mode opens with a probe at 3× the start rate, the pacer running at least
//! // that fast while it lasts.
//! let probe = sender.target_bitrate().mul_f64(3.0);
//! assert!(matches!(sender.poll_event(), Some(ControllerEvent::Probe { rate, .. }) if rate == probe));
//! assert_eq!(sender.pacing_rate(), probe);
//! // REMB mode paces at libwebrtc's 2.5 × the target while the link has not pushed back
//! // lately, otherwise at the papers' 1.5 ×.
//! let remb = GccConfig::default().build(now).unwrap();
//! assert_eq!(remb.pacing_rate(), remb.target_bitrate().mul_f64(2.5));
//! ```
//!
//! Stats (for plots): `m`, `gamma`, `dm` (ms), `gain`, `noise_var`, `signal` (−1/0/+1),
//! `state` (0 hold, 1 increase, 2 decrease), `a_r`, `r` (bit/s); the sender adds `a_s` and
//! `n_dd` (2013 §IV-B). Typed: [`GccController::gcc_stats`], [`GccReceiver::delay_stats`].
//!
//! Not wired: [`probe_controller`]'s "maximum rose in ALR" trigger ([`crate::Controller`]
//! has no input for a changed maximum).

pub mod alr;
pub mod arrival;
mod config;
pub mod delay_based;
pub mod detector;
pub mod history;
pub mod kalman;
pub mod loss;
pub mod probe_controller;
pub mod probe_detector;
pub mod probe_estimator;
mod push_back;
pub mod rate_control;
pub mod receive_rate;
mod receiver;
pub mod remb;
mod sender;
pub mod standing;
pub mod threshold;
mod time;
pub mod trendline;
mod tuning;
mod variant;

pub use config::{
    ArrivalBurst, ArrivalFilterModel, GccConfig, GccMode, GroupSendTime, Grouping, LossModel,
    ThresholdModel,
};
pub use delay_based::{DelayBasedController, DelayBasedStats};
pub use detector::Signal;
pub use rate_control::{IncreaseMode, RateState};
pub use receiver::GccReceiver;
pub use sender::{GccController, GccStats};
pub use tuning::{GccTuning, ThresholdChoice, parse_on_off};
pub use variant::GccVariant;
