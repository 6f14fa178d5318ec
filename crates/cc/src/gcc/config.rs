//! The GCC configuration: every constant of the papers as a documented field.
//!
//! Defaults are the values of Carlucci et al., "Analysis and Design of the Google Congestion
//! Control for Web Real-time Communication (WebRTC)", MMSys 2016 (cited "MMSys16") and
//! De Cicco et al., "Understanding the Dynamic Behaviour of the Google Congestion Control for
//! RTCWeb", PV 2013 (cited "2013"). Where a paper is silent, the value comes from libwebrtc or
//! draft-ietf-rmcat-gcc-02 and the field says so.

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};

use crate::controller::{
    ConfigError, Controller, ControllerConfig, FeedbackKind, ReceiveSideEstimator,
};
use crate::gcc::rate_control::IncreaseMode;

/// Where the delay-based controller runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GccMode {
    /// The papers' architecture (MMSys16 Figure 1): the delay-based controller runs at the
    /// receiver (`GccReceiver`, a [`crate::ReceiveSideEstimator`]) and sends `Ar` in REMB
    /// messages; the sender runs the loss-based controller on RR loss reports.
    #[default]
    ReceiverSideRemb,
    /// libwebrtc today: the same delay-based blocks run at the sender over transport-wide
    /// congestion-control feedback (per-packet arrival times).
    SendSideTwcc,
}

impl GccMode {
    /// The feedback the receiver sends in this mode.
    pub const fn feedback_kind(self) -> FeedbackKind {
        match self {
            GccMode::ReceiverSideRemb => FeedbackKind::Remb,
            GccMode::SendSideTwcc => FeedbackKind::TransportWideCc,
        }
    }
}

/// How packets are gathered into the groups over which eq. (4) is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// One group per video frame (MMSys16 eq. (4)): packets with the same
    /// [`crate::ReceivedPacket::group`]. In send-side mode, where feedback carries no frame
    /// marker, this falls back to [`Grouping::SendBurst`] with a 15 ms span (about half a
    /// frame interval at 30 frames/s).
    Frame,
    /// Packets sent within `span` of the group's first packet form a group (libwebrtc's
    /// `kTimestampGroupLengthMs` = 5 ms, used for send-side estimation).
    SendBurst {
        /// Longest send-time span of one group.
        span: Duration,
    },
}

/// When a packet joins the group being built because it arrived in a burst with it, whatever
/// its frame or send time (libwebrtc's `InterArrivalDelta::BelongsToBurst`): it arrived at
/// most `max_gap` after the group's last packet, sooner after it than it was sent after it,
/// and the group spans at most `max_duration` of arrival time with it. Such arrival times are
/// the receiver's (its host read queued packets at once after a scheduling stall), not the
/// path's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivalBurst {
    /// Longest arrival gap to the group's last packet. libwebrtc: `kBurstDeltaThreshold`, 5 ms.
    pub max_gap: Duration,
    /// Longest arrival span of a merged group. libwebrtc: `kMaxBurstDuration`, 100 ms.
    pub max_duration: Duration,
}

impl ArrivalBurst {
    /// libwebrtc's constants: 5 ms, 100 ms.
    pub const LIBWEBRTC: ArrivalBurst = ArrivalBurst {
        max_gap: Duration::from_millis(5),
        max_duration: Duration::from_millis(100),
    };
}

/// Which send time stands for a group's `Ti` in eq. (4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupSendTime {
    /// The first packet's send time, as MMSys16 §3.3 defines `Ti`. With a pacer spreading a
    /// frame over time, `dm` then also carries the frame's transmission time variation
    /// `ΔL/C` (the term eq. (10) neglects).
    First,
    /// The last packet's send time (abs-send-time of the group's last packet, as libwebrtc's
    /// `InterArrival` uses it): `dm` then sees only the queuing the last packet met.
    #[default]
    Last,
}

/// Which arrival-time filter estimates `m(ti)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalFilterModel {
    /// The scalar Kalman filter of MMSys16 eq. (10)–(16) (the paper's design).
    #[default]
    Scalar,
    /// The two-state model of MMSys16 eq. (7) / 2013 eq. (4): state `[1/C, m]`, output
    /// `dm = ΔL/C + m + n` (what libwebrtc shipped before the trendline estimator). MMSys16
    /// Proposition 1 shows it is unobservable when `ΔL` is constant.
    TwoState,
    /// libwebrtc's trendline estimator ([`crate::gcc::trendline`]), its send-side detector
    /// since 2017: the slope of the smoothed accumulated delay, with its own threshold and
    /// over-use timer ([`GccConfig::threshold`] and [`GccConfig::overuse_time`] do not apply).
    Trendline,
}

impl std::str::FromStr for ArrivalFilterModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "kalman" | "scalar" => Ok(ArrivalFilterModel::Scalar),
            "two-state" | "twostate" => Ok(ArrivalFilterModel::TwoState),
            "trendline" => Ok(ArrivalFilterModel::Trendline),
            other => Err(format!(
                "`{other}`: expected kalman, two-state or trendline"
            )),
        }
    }
}

/// Which threshold `γ(ti)` the over-use detector compares `m(ti)` with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThresholdModel {
    /// MMSys16 eq. (17)–(18), the adaptive threshold.
    Adaptive {
        /// `ku`, eq. (18): gain when `|m| ≥ γ` (threshold rising). Default 0.01 (per ms).
        k_up: f64,
        /// `kd`, eq. (18): gain when `|m| < γ` (threshold falling). Default 0.00018 (per ms).
        k_down: f64,
        /// `γ(0)` in ms. Default 12.5/60 ms: libwebrtc's initial 12.5 ms, which it compares
        /// with `min(n, 60)·m`; we compare `m` itself, as the papers do, hence the /60.
        initial_ms: f64,
        /// Lower clamp of `γ` in ms. Default 6/60 ms (libwebrtc's 6 ms, /60 as above).
        min_ms: f64,
        /// Upper clamp of `γ` in ms. Default 600/60 ms (libwebrtc's 600 ms, /60 as above).
        max_ms: f64,
        /// Skip the update when `|m| − γ` exceeds this many ms, so that a single spike (a key
        /// frame) does not drag the threshold up (draft-ietf-rmcat-gcc-02 §5.4: 15 ms,
        /// /60 as above). `None` follows eq. (17) literally.
        max_adapt_offset_ms: Option<f64>,
    },
    /// The static threshold of the 2013 paper (§III-B.3, "remote state region"):
    /// `γ = γ̄`, halved while the FSM is in Decrease or `Ar` is well below `R`.
    Static {
        /// `γ̄` in ms. 2013 default 25/60 ms.
        gamma_ms: f64,
        /// "`Ar` considerably lower than `R`": the threshold is halved when
        /// `Ar < near_ratio · R`. Our reading of the paper's words; default 0.9.
        near_ratio: f64,
    },
}

impl ThresholdModel {
    /// MMSys16's adaptive threshold with its published gains.
    pub const fn adaptive() -> Self {
        ThresholdModel::Adaptive {
            k_up: 0.01,
            k_down: 0.000_18,
            initial_ms: 12.5 / 60.0,
            min_ms: 6.0 / 60.0,
            max_ms: 600.0 / 60.0,
            max_adapt_offset_ms: Some(15.0 / 60.0),
        }
    }

    /// The 2013 paper's static threshold `γ̄ = 25/60 ms`.
    pub const fn static_2013() -> Self {
        ThresholdModel::Static {
            gamma_ms: 25.0 / 60.0,
            near_ratio: 0.9,
        }
    }
}

/// Which loss-based controller runs at the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossModel {
    /// MMSys16 eq. (5).
    #[default]
    Mmsys16,
    /// 2013 eq. (1): as eq. (5) but the decrease never goes below the TFRC throughput
    /// `X(tk)` (RFC 5348 §3.1) and the increase adds 1 kbit/s before multiplying.
    TfrcFloor,
}

/// Every constant of GCC. `Default` gives the MMSys16 design.
#[derive(Debug, Clone, PartialEq)]
pub struct GccConfig {
    /// Receiver-side REMB (the papers) or send-side over transport-wide feedback.
    pub mode: GccMode,
    /// Rate used before any estimate exists. Default 300 kbit/s (libwebrtc's default).
    pub start_bitrate: Bitrate,
    /// Lower bound of every rate. Default 50 kbit/s (2013 §IV-A: the encoder's minimum).
    pub min_bitrate: Bitrate,
    /// Upper bound of every rate. Default 2 Mbit/s (2013 §IV-A / MMSys16 §6.1: VP8's maximum).
    pub max_bitrate: Bitrate,

    /// Packet grouping for eq. (4). Default [`Grouping::Frame`].
    pub grouping: Grouping,
    /// Which send time represents a group in eq. (4). Default [`GroupSendTime::Last`].
    pub group_send_time: GroupSendTime,
    /// Arrival bursts merged into one group ([`ArrivalBurst`]); `None` groups by
    /// [`GccConfig::grouping`] alone, as MMSys16 §3.3 does. Default `None`: the rule cannot
    /// tell a receiving host's stall from a bottleneck queue draining (its packets also
    /// arrive back to back, sooner than they were sent), so it also hides drains from the
    /// filter and changes the rate's course through capacity changes, where cg's bounds were
    /// set without it. [`ArrivalBurst::LIBWEBRTC`] is libwebrtc's choice.
    pub arrival_burst: Option<ArrivalBurst>,
    /// A gap between group arrivals longer than this (or arrival time going backwards)
    /// restarts the delta computation of eq. (4) instead of feeding a meaningless `dm`.
    /// Default 3 s (libwebrtc's `kArrivalTimeOffsetThresholdMs`).
    pub max_group_gap: Duration,
    /// A `dm` larger than this either way restarts eq. (4) too instead of feeding the filter.
    /// No queue of a real-time path changes by half a second between two frames; a link
    /// outage does: the frames held through it arrive that much late, and the first one sent
    /// after it as much early. Fed to the scalar Kalman filter, one such `dm` moved `m` far
    /// above `γ`, where it shrank for tens of seconds with no signal and held `Ar` under the
    /// capacity (figures: `docs/notes/2026-12-01-figures-from-docs.md`). libwebrtc's
    /// `InterArrival` resets on the same quantity
    /// (`kArrivalTimeOffsetThresholdMs`, 3 s) and `DelayBasedBwe` restarts its estimator after
    /// 2 s without feedback. Default 500 ms.
    pub max_delay_jump: Duration,

    /// Arrival-time filter model. Default [`ArrivalFilterModel::Scalar`].
    pub filter: ArrivalFilterModel,
    /// `Q`, eq. (15): state noise variance (ms²). Default 1e-3.
    pub kalman_q: f64,
    /// `β`, eq. (16): EWMA factor of the measurement noise variance. Default 0.95.
    pub kalman_beta: f64,
    /// `P(0)`, §4.1.2: initial error variance. Default 0.1.
    pub kalman_p0: f64,
    /// `m(0)`, §4.1.2: initial estimate (ms). Default 0.
    pub kalman_m0: f64,
    /// Two-state model (eq. (7)) only: state noise variance of the `1/C` component
    /// (ms²/byte²). Default 1e-13 (libwebrtc's `OveruseEstimator`).
    pub kalman2_q_inv_capacity: f64,
    /// Two-state model only: initial error variance of `1/C`. Default 100 (libwebrtc).
    pub kalman2_p0_inv_capacity: f64,
    /// Two-state model only: initial `1/C` in ms per byte. Default 8/512 (libwebrtc; i.e.
    /// 512 kbit/s).
    pub kalman2_inv_capacity0: f64,
    /// `σ²n(0)` (ms²): initial measurement noise variance; MMSys16 gives none. Default 1.0.
    pub kalman_noise_var0: f64,
    /// Eq. (16) update: the residual is clamped to ± this many `σn` before it enters the
    /// variance, so that a single key frame does not inflate `σ²n` (libwebrtc's
    /// `OveruseEstimator` uses 3). `None` follows eq. (16) literally. Default `Some(3.0)`.
    pub kalman_residual_clamp: Option<f64>,
    /// Update `σ²n` (eq. (16)) only while the detector's last signal is normal, as
    /// libwebrtc's `OveruseEstimator` does: during a real trend the residuals are not jitter,
    /// and letting them inflate `σ²n` shrinks the gain until `m` lags the queue by seconds
    /// (after a capacity drop `m` stays above `γ` long after the queue has drained).
    /// `false` follows eq. (16) literally. Default `true`.
    pub kalman_noise_only_when_normal: bool,
    /// Floor of `σ²n` (ms²); MMSys16 has none, libwebrtc uses 1. Keeps the gain from reaching
    /// 1 on a jitter-free path. Default 1.0.
    pub kalman_noise_var_min: f64,

    /// Threshold `γ(ti)`. Default [`ThresholdModel::adaptive`].
    pub threshold: ThresholdModel,
    /// `t̄OU`, Algorithm 1: time `m` must stay above `γ` before over-use, on the receiver's
    /// clock (see [`crate::gcc::detector`]). Default 100 ms (MMSys16 §3.3).
    pub overuse_time: Duration,

    /// `η`, eq. (3): multiplicative increase. Default 1.05. Applied as
    /// `η^(Δt / increase_period)` so that growth does not depend on the frame rate
    /// (draft-ietf-rmcat-gcc-02 §5.5 does the same with `Δt` capped at 1 s).
    pub eta: f64,
    /// Period over which one factor `η` applies. Default 1 s.
    pub increase_period: Duration,
    /// Eq. (3)'s `η` only, or an additive increase near the link-capacity estimate (see
    /// [`crate::gcc::rate_control`]). Default [`IncreaseMode::LinkCapacity`] (libwebrtc's
    /// `AimdRateControl`): with `η` only, flows keep their rate ratio, so flows started
    /// apart stay unfair (MMSys16 Table 2 reports Jain 0.93 for three);
    /// [`IncreaseMode::NearMaxAdditive`] stayed additive (32 kbit/s per second) at every rate
    /// after the first over-use, so a capacity increase took tens of seconds to fill
    /// (issue #14).
    pub increase: IncreaseMode,
    /// [`IncreaseMode::LinkCapacity`]: the multiplicative factor per `increase_period` away
    /// from the link-capacity estimate. Default 1.08 (libwebrtc's
    /// `AimdRateControl::MultiplicativeRateIncrease`; the papers' `η` is 1.05).
    pub far_eta: f64,
    /// RTT in the additive increase's response time (RTT + 100 ms). The receiver in REMB
    /// mode has no RTT measurement (libwebrtc assumes 200 ms there). Default 200 ms.
    pub default_rtt: Duration,
    /// Send-side mode: use the RTT measured from feedback instead of `default_rtt` in the
    /// additive step. Default `false`, so that both modes grow alike. Reason: with a short
    /// measured RTT the send-side increase outruns what the scalar Kalman filter's detection
    /// can follow, and the queue grows (figures: `docs/notes/2026-11-28.md`, "GccConfig").
    pub additive_measured_rtt: bool,
    /// The additive increase adds one packet of this size per response time (RTT + 100 ms).
    /// Default 1200 bytes.
    pub additive_packet: DataSize,
    /// `α`, eq. (3): decrease factor applied to the receive rate. Default 0.85.
    pub alpha: f64,
    /// Window of the receive rate `R`, eq. (3). Default 500 ms.
    pub receive_rate_window: Duration,
    /// `Ar ≤ k·R` (MMSys16 §3.3). Default 1.5. Bounds an increase (at `k·R + 10 kbit/s`,
    /// as libwebrtc), never cuts `Ar` (see [`crate::gcc::rate_control`]).
    pub max_rate_ratio: f64,
    /// `true`: `Ar ≤ k·R` is a cap applied on every update, as MMSys16 §3.3 reads. Default
    /// `false`: it bounds an increase only (libwebrtc); as a cap it cut the rate after
    /// every large frame with an empty queue (issue #14, `crates/cc/tests/gcc_camera.rs`).
    pub max_rate_ratio_cuts: bool,

    /// REMB period (MMSys16 §3.3, "REMB Processing"). Default 1 s.
    pub remb_interval: Duration,
    /// Send a REMB at once when `Ar` falls below this fraction of the last sent value.
    /// Default 0.97 (a drop of more than 3 %).
    pub remb_drop_ratio: f64,
    /// REMB mode: hold the first REMB until one receive-rate window (`R`) has been measured
    /// and start `Ar` at `max(start_bitrate, R)`, so a receiver that joins a running stream
    /// (restarted, or a new viewer) does not announce its configured start rate and pull
    /// the sender down. The papers say nothing of `Ar`'s start; libwebrtc's remote
    /// estimator sends no REMB until its estimate is initialised from the measured incoming
    /// rate (after 5 s, or at the first over-use). Default `true`. `false`: the first REMB
    /// carries `start_bitrate`, and a restarted cg-recv pulls a running stream down to it
    /// (issue #17).
    pub remb_start_from_receive_rate: bool,
    /// REMB mode, [`IncreaseMode::LinkCapacity`]: the receiver forgets its link-capacity
    /// estimate when the receive rate `R` alone goes above its mean + 3σ, as libwebrtc's
    /// `AimdRateControl` does, instead of waiting for `Ar` to be above it too (send-side
    /// mode keeps that wait, see [`crate::gcc::rate_control`]). A receive rate above the old
    /// capacity is what a faster bottleneck shows first — the queue left by the last
    /// decrease drains at the new rate — while `Ar`, back at `α·R` after that decrease,
    /// needs seconds of additive increase to pass the old capacity. The REMB
    /// sender probes when the REMB value passes the capacity it inferred, so until then it
    /// did not probe either. Send-side mode keeps the wait: there the same switch raised the
    /// loss (figures: `docs/notes/2026-11-28.md`, "GccConfig"). Default `true`; `false` gives
    /// the send-side rule.
    pub remb_capacity_reset_by_receive_rate: bool,

    /// Loss-based controller. Default [`LossModel::Mmsys16`].
    pub loss: LossModel,
    /// Above this fraction lost, decrease (eq. (5)). Default 0.1.
    pub loss_high: f64,
    /// Below this fraction lost, increase (eq. (5)). Default 0.02.
    pub loss_low: f64,
    /// Increase factor of eq. (5). Default 1.05.
    pub loss_increase: f64,
    /// 2013 eq. (2), `As ← min(As, Ar)` after every update. With it, `A` can grow no faster
    /// than eq. (5)'s 5 % per report even where the delay-based increase is additive, which
    /// keeps slow flows slow; without it `As` evolves by eq. (5) alone and `A = min(Ar, As)`
    /// (libwebrtc keeps the two estimates apart the same way). Default `true`.
    pub cap_as_by_ar: bool,
    /// The increase of eq. (5) over one `loss_interval` is at least this much. With eq. (2)
    /// capping `As` at `Ar` after every delay-based decrease, a slow flow's `As` would
    /// otherwise grow by only 5 % of a small rate per second while the delay-based increase
    /// is additive, so the loss-based controller would turn the delay-based AIMD back into
    /// MIMD and keep late-comers small. Default
    /// 32 kbit/s: one 1200-byte packet per `default_rtt` + 100 ms, the delay-based additive
    /// step. `Bitrate::ZERO` gives eq. (5) literally.
    pub loss_additive_floor: Bitrate,
    /// Send-side mode: the window over which the loss fraction of eq. (5) is counted from
    /// transport-wide feedback, and the shortest interval between two loss-based decreases
    /// (the papers' RTCP RR interval). Default 1 s.
    pub loss_interval: Duration,

    /// Pacing factor `f` (MMSys16 §3.5). Default 1.5.
    pub pacing_factor: f64,
    /// With the capacity cap on ([`pacing_link_capacity_factor`](Self::pacing_link_capacity_factor)),
    /// while the link has not pushed back (no over-use or standing queue within
    /// [`push_back_memory`](Self::push_back_memory); in REMB mode no REMB under the target), the
    /// pacer paces every frame at this × `A` (under the cap where a probe gave a bottleneck
    /// rate). While it has, in send-side mode while
    /// no bottleneck rate is known (no over-use or saturated probe since the link-capacity
    /// estimate last reset), it may go up to this × `A` to send what is queued within a
    /// frame interval (33 ms). A cg rule: the link has
    /// carried all the flow sent, so a frame leaves as fast as libwebrtc lets it (its
    /// factor, 2.5) rather than spread over most of a frame interval, which a viewer's
    /// jitter buffer counts in full (it times a frame from its first packet); a frame far
    /// larger than the average (a game's scene cut, a key frame) does not reach the viewer
    /// later than the frames' cadence allows. After an over-use has been seen, frames of
    /// the average size leave at `f·A` (a faster link after a capacity reset is still near
    /// the rate it was found full at), and once the link is found full the cap takes over.
    /// REMB mode then keeps `f`: its sender cannot tell whether the link carried a probe.
    /// Default 2.5; [`pacing_factor`](Self::pacing_factor) or less turns it off.
    pub pacing_factor_unbounded: f64,
    /// While the link has not pushed back (the first case of
    /// [`pacing_factor_unbounded`](Self::pacing_factor_unbounded)), the pacer may run this far
    /// ahead of its rate ([`crate::Controller::pacing_burst`]): libwebrtc's send-burst
    /// interval, which its pacer allows always. A frame several times the average (a game's
    /// scene cut, a key frame) then leaves that much sooner; while the link has pushed back
    /// every packet is paced, so bursts do not queue at a bottleneck found full.
    /// Default 40 ms (libwebrtc's); zero turns it off.
    pub pacing_burst: Duration,
    /// Send-side mode: how much feedback without a sign it takes to forget the link's last
    /// push-back (an over-use or a standing queue); until then no send burst, `f·A` instead
    /// of [`pacing_factor_unbounded`](Self::pacing_factor_unbounded) × `A`, and the
    /// bottleneck rate found with it as the cap. A bottleneck rate a probe found (a cluster
    /// the link did not carry) caps the pacer for as long after it was found, with the burst
    /// kept. Time without feedback counts for nothing.
    /// A cg rule: a sign that does not recur within this (a receiving host's scheduling
    /// stall read as an over-use; a capacity that has since risen) says nothing about the
    /// link any more, while a link still full at that rate pushes back again well within it
    /// (GCC's own climb finds it). REMB mode keeps a push-back (a REMB under the target) for
    /// good: its sender hears the link only through the receiver's decreases, and pacing
    /// freed between them cost GCC-REMB utilisation through a 2 Mbit/s bottleneck and its
    /// recovery after a feedback blackout (`docs/notes/2026-12-01.md`). Default `None`: for
    /// good in both modes, since on a jittery link the freed burst read as an over-use again
    /// (netlab's jitter fault); cg-send's `--profile gaming` sets 10 s with send-side GCC,
    /// whose trendline detector does not.
    pub push_back_memory: Option<Duration>,
    /// While the bottleneck queuing delay the sender measures (send-side: one-way delay
    /// from transport-wide feedback over its minimum; REMB mode: receiver-report RTT over
    /// its minimum) is above this, the pacer gets `A` instead of `f·A`. `None` keeps `f·A`
    /// always, as the paper. Default 60 ms.
    ///
    /// A cg addition. `f > 1` drains the encoder's bursts (key frames) ahead of the next
    /// frame; with a standing queue at the bottleneck every byte above the capacity is lost.
    /// `A` is below the capacity there (`α·R` after an overuse), so the queue drains instead
    /// (after a capacity drop, the recovery key frame paced at `f·A` into the full queue lost
    /// packets and prolonged the freeze).
    pub standing_queue_pacing: Option<Duration>,
    /// When the smallest queuing delay (one-way delay over its minimum) during the last
    /// [`GccConfig::standing_queue_window`] is above this, `Ar ← α·R` as at an over-use, at
    /// most once per window. Send-side mode: the sender, from transport-wide feedback; REMB
    /// mode: the receiver, from abs-send-time and arrival times (the cut goes out at once
    /// as a > 3 % REMB drop). `None`: the papers (only the delay gradient decreases `Ar`).
    /// Default 50 ms.
    ///
    /// A cg addition for the papers' blind spot, a standing queue whose gradient is zero:
    /// after a capacity drop a deep DropTail queue can fill while the Kalman filter's gain is
    /// small (camera-like frames keep `σ²n` high), so `m` never crosses `γ`; the full queue
    /// then has no gradient and eq. (5)'s 2–10 % loss band holds the rate just above the
    /// capacity. `crates/cc/tests/gcc_camera.rs` guards it; measurements:
    /// `docs/notes/2026-11-28.md`.
    pub standing_queue_decrease: Option<Duration>,
    /// The pacer gets at most `max(A, k·C)` where `C` is the bottleneck rate and `k` this
    /// factor, instead of `f·A`. `C` is the link-capacity estimate of
    /// [`IncreaseMode::LinkCapacity`] once a sample found the link full (an over-use's
    /// receive rate or a saturated probe; a probe the link carried is only a lower bound).
    /// In REMB mode `C` is the sender's own estimate of the same kind, from the REMB values:
    /// each REMB below the previous one is the receiver's `α·R`, a REMB a probe raised
    /// enters with weight 0.5, and a REMB above its mean + 3σ forgets it. `None`: `f·A`
    /// always (the paper). Default `Some(1.1)`.
    ///
    /// A cg addition. `f·A` above the bottleneck rate moves each large frame's excess into
    /// the bottleneck queue, where it makes most of the queuing delay of camera-like
    /// content and inflates the Kalman filter's `σ²n`, slowing detection; the pacer holds
    /// it instead. Not `k` = 1: `C` averages noisy 500 ms rates and may sit under the
    /// capacity, and a pacer slower than the link drops frames at its queue bound.
    /// Measurements: `docs/notes/2026-11-28.md`.
    ///
    /// A `C` an over-use found at 95 % of [`max_bitrate`](Self::max_bitrate) or above with
    /// the bottleneck queue then under 10 ms caps nothing, and the pacer keeps
    /// [`pacing_factor_unbounded`](Self::pacing_factor_unbounded) × `A` (every packet paced,
    /// no burst): the link carried all the flow may send, and the over-use came from the
    /// flow's own burst (a key frame after an encoder stall on a link ten times faster, on a
    /// busy host: issue #37), so the cap held every later frame for most of a frame interval.
    pub pacing_link_capacity_factor: Option<f64>,
    /// Window of [`GccConfig::standing_queue_decrease`]. Default 1 s: a camera burst's queue
    /// drains within it, a standing queue does not.
    pub standing_queue_window: Duration,
    /// After this many standing-queue decreases in a row that the queue outlived (no
    /// queuing delay at or under the limit since the first), the queue is taken to be a
    /// competing flow's and the check stands down until the queuing delay is at or under the
    /// limit again, or for [`GccConfig::standing_queue_retry`]. `None`: it never stands down.
    /// Default `Some(3)`. A cg addition, with [`GccConfig::standing_queue_decrease`].
    ///
    /// Reason: each decrease takes `1 − α` (15 %) off the rate, so a queue we built drains
    /// within a few; a loss-based flow keeps a
    /// DropTail buffer full whatever we send, and a decrease every second handed it the link
    /// (CCR16 §4.2's case, where the paper reports the fair share; its GCC has no such
    /// decrease). Guarded by `crates/cc/tests/competing_tcp.rs`; figures without it:
    /// `docs/notes/2026-11-28.md`, "GccConfig".
    pub standing_queue_competing: Option<u32>,
    /// How long the standing-queue check stands down ([`GccConfig::standing_queue_competing`])
    /// before it tries again. Default 30 s.
    pub standing_queue_retry: Duration,

    /// libwebrtc's bandwidth probing and ALR detection ([`crate::gcc::probe_controller`],
    /// [`crate::gcc::alr`]): initial probes at 3× and 6× the start rate, further probes at
    /// 2× a result above 0.7× the probe rate, a recovery probe after a large drop, and cg's
    /// capacity probe (libwebrtc's probe when the maximum rate rises in ALR is not wired:
    /// [`crate::Controller`] has no input for a changed maximum). Not in the papers.
    /// Default `true`; `false` gives the papers' GCC in either mode.
    ///
    /// Send-side mode measures each cluster from transport-wide feedback
    /// ([`crate::gcc::probe_estimator`]). REMB mode does it as libwebrtc's receive-side
    /// estimator (`RemoteBitrateEstimatorAbsSendTime`): the receiver finds the clusters by
    /// their padding, with its abs-send-time and arrival times, and raises `Ar` (and at once
    /// the REMB) to a valid one's rate ([`crate::gcc::probe_detector`]); the sender takes a
    /// REMB that rose within 1 s of a cluster as its result. Clusters wait for the pacer to
    /// run out of media and are 50 ms apart, so that the receiver sees them (figures with and
    /// without: `docs/notes/2026-11-28.md`, "Probing rules").
    pub probing: bool,
    /// With `probing`: also probe at 2× the estimate when the link-capacity estimate is
    /// forgotten because the rate went above it (a cg addition, see
    /// [`crate::gcc::probe_controller`]). Default `true`.
    pub capacity_probing: bool,
    /// Shortest further probe (one at 2× a result above 0.7× the last probe's rate), see
    /// [`crate::gcc::probe_controller::FURTHER_PROBE_DURATION`]. Default `None`: 15 ms in REMB
    /// mode (libwebrtc's minimum), every cluster's 30 ms in send-side mode. Reason for the
    /// shorter REMB-mode probe: the receiver's detector sees the further probe's queue on the
    /// next frame and over-uses on it (figures: `docs/notes/2026-11-28.md`, "Probing rules").
    pub further_probe_duration: Option<Duration>,
    /// With `capacity_probing`: also probe the capacity (as when the link-capacity estimate
    /// is forgotten) after this long climbing additively without an over-use — in REMB mode,
    /// without a falling REMB while the sender holds a capacity estimate from REMBs — and
    /// again each time as long passes (a cg addition, see [`crate::gcc::probe_controller`]).
    /// Only time with feedback counts: a feedback silence restarts the clock, because the
    /// climb stopped with the feedback, and a probe as it returns lands on a link the
    /// sender is refilling at once (the over-use it causes is cut against a receive rate
    /// still measured across the silence). `None` turns it off. Default 5 s.
    ///
    /// Reason: a flow whose receive rate never passes the estimate's mean + 3σ by chance (a
    /// smooth source, such as game content) otherwise climbs at one packet per response
    /// time, about 32 kbit/s per second, for as long as the link has room: tens of seconds
    /// to use a link that doubled. 5 s was chosen over 8 and 10 s in REMB mode, where the
    /// longer intervals were too slow for the single flow and the camera return (figures
    /// in `docs/notes/2026-11-28.md`).
    pub stall_probe_after: Option<Duration>,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig {
            mode: GccMode::ReceiverSideRemb,
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::mbps(2),
            grouping: Grouping::Frame,
            group_send_time: GroupSendTime::Last,
            arrival_burst: None,
            max_group_gap: Duration::from_secs(3),
            max_delay_jump: Duration::from_millis(500),
            filter: ArrivalFilterModel::Scalar,
            kalman_q: 1e-3,
            kalman_beta: 0.95,
            kalman_p0: 0.1,
            kalman_m0: 0.0,
            kalman2_q_inv_capacity: 1e-13,
            kalman2_p0_inv_capacity: 100.0,
            kalman2_inv_capacity0: 8.0 / 512.0,
            kalman_noise_var0: 1.0,
            kalman_residual_clamp: Some(3.0),
            kalman_noise_only_when_normal: true,
            kalman_noise_var_min: 1.0,
            threshold: ThresholdModel::adaptive(),
            overuse_time: Duration::from_millis(100),
            eta: 1.05,
            increase_period: Duration::from_secs(1),
            increase: IncreaseMode::LinkCapacity,
            far_eta: 1.08,
            default_rtt: Duration::from_millis(200),
            additive_measured_rtt: false,
            additive_packet: DataSize::bytes(1200),
            alpha: 0.85,
            receive_rate_window: Duration::from_millis(500),
            max_rate_ratio: 1.5,
            max_rate_ratio_cuts: false,
            remb_interval: Duration::from_secs(1),
            remb_drop_ratio: 0.97,
            remb_start_from_receive_rate: true,
            remb_capacity_reset_by_receive_rate: true,
            loss: LossModel::Mmsys16,
            loss_high: 0.1,
            loss_low: 0.02,
            loss_increase: 1.05,
            cap_as_by_ar: true,
            loss_additive_floor: Bitrate::kbps(32),
            loss_interval: Duration::from_secs(1),
            pacing_factor: 1.5,
            pacing_factor_unbounded: 2.5,
            pacing_burst: Duration::from_millis(40),
            push_back_memory: None,
            standing_queue_pacing: Some(Duration::from_millis(60)),
            standing_queue_decrease: Some(Duration::from_millis(50)),
            standing_queue_window: Duration::from_secs(1),
            standing_queue_competing: Some(3),
            standing_queue_retry: Duration::from_secs(30),
            pacing_link_capacity_factor: Some(1.1),
            probing: true,
            capacity_probing: true,
            further_probe_duration: None,
            stall_probe_after: Some(Duration::from_secs(5)),
        }
    }
}

impl GccConfig {
    /// The default configuration in send-side (transport-wide feedback) mode.
    pub fn send_side() -> Self {
        GccConfig {
            mode: GccMode::SendSideTwcc,
            ..GccConfig::default()
        }
    }

    /// The first value the controller cannot run with: the bounds, the gains and ratios of
    /// the equations (a NaN or a negative gain would not fail loudly, it would steer the rate
    /// to nonsense), the periods it divides by.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::bounds(self.min_bitrate, self.start_bitrate, self.max_bitrate)?;
        ConfigError::within("alpha", self.alpha, f64::MIN_POSITIVE, 1.0)?;
        ConfigError::within("eta", self.eta, 1.0, 10.0)?;
        ConfigError::within("far_eta", self.far_eta, 1.0, 10.0)?;
        ConfigError::within("loss_high", self.loss_high, 0.0, 1.0)?;
        ConfigError::within("loss_low", self.loss_low, 0.0, self.loss_high)?;
        ConfigError::within("loss_increase", self.loss_increase, 1.0, 10.0)?;
        ConfigError::within("remb_drop_ratio", self.remb_drop_ratio, 0.0, 1.0)?;
        ConfigError::within("kalman_beta", self.kalman_beta, 0.0, 1.0)?;
        for (field, v) in [
            ("kalman_q", self.kalman_q),
            ("kalman_p0", self.kalman_p0),
            ("kalman2_q_inv_capacity", self.kalman2_q_inv_capacity),
            ("kalman2_p0_inv_capacity", self.kalman2_p0_inv_capacity),
            ("kalman2_inv_capacity0", self.kalman2_inv_capacity0),
            ("kalman_noise_var0", self.kalman_noise_var0),
            ("kalman_noise_var_min", self.kalman_noise_var_min),
            ("max_rate_ratio", self.max_rate_ratio),
            ("pacing_factor", self.pacing_factor),
            ("pacing_factor_unbounded", self.pacing_factor_unbounded),
        ] {
            ConfigError::positive(field, v)?;
        }
        ConfigError::check(
            self.kalman_m0.is_finite(),
            "kalman_m0",
            self.kalman_m0,
            "finite",
        )?;
        if let Some(k) = self.kalman_residual_clamp {
            ConfigError::positive("kalman_residual_clamp", k)?;
        }
        if let Some(d) = self.stall_probe_after {
            ConfigError::check(!d.is_zero(), "stall_probe_after", d, "above 0")?;
        }
        if let Some(k) = self.pacing_link_capacity_factor {
            ConfigError::positive("pacing_link_capacity_factor", k)?;
        }
        for (field, d) in [
            ("increase_period", self.increase_period),
            ("default_rtt", self.default_rtt),
            ("receive_rate_window", self.receive_rate_window),
            ("remb_interval", self.remb_interval),
            ("loss_interval", self.loss_interval),
            ("standing_queue_window", self.standing_queue_window),
            ("standing_queue_retry", self.standing_queue_retry),
        ] {
            ConfigError::check(!d.is_zero(), field, d, "above 0")?;
        }
        Ok(())
    }

    /// `rate` clamped to `[min_bitrate, max_bitrate]`.
    pub fn clamp(&self, rate: Bitrate) -> Bitrate {
        rate.min(self.max_bitrate).max(self.min_bitrate)
    }

    /// The shortest further probe in force ([`GccConfig::further_probe_duration`]).
    pub fn further_probe_duration(&self) -> Duration {
        use crate::gcc::probe_controller::{FURTHER_PROBE_DURATION, PROBE_DURATION};
        self.further_probe_duration.unwrap_or(match self.mode {
            GccMode::ReceiverSideRemb => FURTHER_PROBE_DURATION,
            GccMode::SendSideTwcc => PROBE_DURATION,
        })
    }
}

impl ControllerConfig for GccConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        GccConfig::validate(self)
    }

    fn build(&self, now: Instant) -> Result<Box<dyn Controller>, ConfigError> {
        Ok(Box::new(self.build_controller(now)?))
    }

    fn feedback_kind(&self) -> FeedbackKind {
        self.mode.feedback_kind()
    }

    fn build_receive_side(
        &self,
        now: Instant,
    ) -> Result<Option<Box<dyn ReceiveSideEstimator>>, ConfigError> {
        Ok(match self.mode {
            GccMode::ReceiverSideRemb => Some(Box::new(self.build_receiver(now)?)),
            GccMode::SendSideTwcc => None,
        })
    }
}
