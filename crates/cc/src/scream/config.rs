//! SCReAM v2 configuration: every constant of the algorithm, in one plain struct.
//!
//! Two constant sets exist in the literature and both are available:
//!
//! - [`ScreamConfig::reference`] — Ericsson's reference implementation
//!   (`EricssonResearch/scream`, `code/ScreamV2Tx.cpp`, `ScreamV2TxStream.cpp`), the code the
//!   TMA 2024 cloud-gaming study ran (its §III).
//! - [`ScreamConfig::draft`] — draft-johansson-ccwg-rfc8298bis-screamv2 (the SCReAM v2 draft,
//!   §4.2 "Network Congestion Control", §4.3 "Sender Transmission Control", §4.4 "Media Rate
//!   Control").
//!
//! **The default is the draft set.** Reason: the draft's constants (smaller bytes-in-flight
//! headroom 1.5, multiplicative increase 0.02 over a 100-RTT ramp, inflection point refreshed
//! every 10 RTTs, rate margin 1.2) did as well as the reference's or better in every scenario
//! of `crates/cc/tests/scream_scenarios.rs`, and only they meet the TMA24 L4S criterion
//! through DualPI2 (figures: `docs/notes/2026-12-01-figures-from-docs.md`). The reference
//! set stays one call away for comparison with Ericsson's code (`EricssonResearch/scream`),
//! which the TMA 2024 study ran. The queue-delay target is 60 ms in both (the draft's
//! QDELAY_TARGET_LO and the reference test tool's setting; the reference *library* default of
//! 0.1 s is not used).
//!
//! Building: `ScreamConfig` implements [`ControllerConfig`], so
//! `ScreamConfig::default().build(now)` gives a `Box<dyn Controller>` (or the first value
//! [`ScreamConfig::validate`] refuses).

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize, Ecn};

use crate::{ConfigError, Controller, ControllerConfig, FeedbackKind};

use super::{CompetingFlows, Scream};

/// When a detected loss is allowed to reduce the window (reference implementation).
///
/// Random (non-congestion) loss on an otherwise empty path would otherwise pin the window;
/// the reference only reacts when losses are frequent or a queue is building.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossGate {
    /// React if the packet-loss-rate EWMA exceeds this fraction. Default 0.01 (1 %).
    pub min_loss_rate: f64,
    /// …or if `qdelay_avg` exceeds this fraction of the queue-delay target. Default 0.25.
    pub qdelay_fraction: f64,
}

impl Default for LossGate {
    fn default() -> Self {
        LossGate {
            min_loss_rate: 0.01,
            qdelay_fraction: 0.25,
        }
    }
}

/// Pacing relaxation near the maximum bit rate (draft §4.3.2, "relaxed pacing").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelaxedPacing {
    /// Target/maximum ratio above which pacing is relaxed (RELAXED_PACING_LIMIT_LOW, 0.8).
    pub limit_low: f64,
    /// Largest pacing speed-up (MAX_RELAXED_PACING_FACTOR, 4.0).
    pub max_factor: f64,
}

impl Default for RelaxedPacing {
    fn default() -> Self {
        RelaxedPacing {
            limit_low: 0.8,
            max_factor: 4.0,
        }
    }
}

/// The L4S pacing cap's capacity probe (our addition, see
/// [`ScreamConfig::l4s_capacity_probe`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityProbe {
    /// For [`length`](Self::length) the cap allows this × the bottleneck rate. Default
    /// 1.25. A probe proves a faster link only if it runs ahead of the estimate by more than
    /// one RFC 8888 arrival tick (1/1024 s): `(gain − 1) × length` must exceed it.
    pub gain: f64,
    /// How long a probe lasts. Default 12 ms: above the estimator's shortest train (10 ms),
    /// and short, because on an unchanged link the probe queues `(gain − 1) × length` at
    /// the bottleneck, above DualPI2's 1 ms step.
    pub length: Duration,
    /// How long the target must stand at or above the capped rate, without a break, before
    /// a probe. Default 300 ms (ten round trips at TMA24's 30 ms). Each probe that finds
    /// nothing doubles it, up to [`max_interval`](Self::max_interval); one that finds more
    /// brings it back.
    pub interval: Duration,
    /// The longest wait between probes that find nothing. Default 4.8 s (300 ms doubled
    /// four times): a cap that holds the target (the media queue standing, at 30 fps and
    /// in netlab's real runs) probes an unchanged link rarely, and a link that grew is
    /// found within a few seconds.
    pub max_interval: Duration,
}

impl Default for CapacityProbe {
    fn default() -> Self {
        CapacityProbe {
            gain: 1.25,
            length: Duration::from_millis(12),
            interval: Duration::from_millis(300),
            max_interval: Duration::from_millis(4800),
        }
    }
}

/// Every constant of SCReAM v2. See the module docs for the two constant sets.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreamConfig {
    // ---- media rate bounds ----
    /// Lowest target bit rate (TARGET_BITRATE_MIN). Default 150 kbit/s.
    pub min_bitrate: Bitrate,
    /// Highest target bit rate (TARGET_BITRATE_MAX). Default 100 Mbit/s (the TMA24 platform
    /// streams 1080p60 H.265 at up to 30 Mbit/s; 100 Mbit/s leaves room for 4K).
    pub max_bitrate: Bitrate,
    /// Rate the encoder starts at; sets the initial window as `start × 50 ms` (no slow start in
    /// v2). Default 1 Mbit/s.
    pub start_bitrate: Bitrate,
    /// ECN code point the transport should send with ([`Scream::ecn`]): ECT(1) for L4S
    /// (default — the TMA24 use case), ECT(0) for classic ECN, Not-ECT for none. The reaction to
    /// a CE mark follows the code point the marked packet was *sent* with, so mixed traffic is
    /// handled correctly.
    pub ecn: Ecn,

    // ---- delay ----
    /// Queue-delay target T (QDELAY_TARGET_LO). Default 60 ms (draft and reference test tool).
    pub qdelay_target: Duration,
    /// Number of base-delay history slots. Default 50 (reference `kBaseOwdHistSize`).
    pub base_delay_slots: usize,
    /// Length of one base-delay slot. Default 10 s (reference `kBaseDelayUpdateInterval`).
    pub base_delay_slot: Duration,
    /// EWMA gain for a rising `qdelay_avg` (QDELAY_AVG_G). Default 1/4.
    pub qdelay_avg_gain: f64,
    /// Normalisation of the queue-delay deviation (QDELAY_DEV_NORM). Default 25 ms.
    pub qdelay_dev_norm: Duration,
    /// EWMA gain of the queue-delay deviation (QDELAY_DEV_AVG_G). Default 1/64.
    pub qdelay_dev_gain: f64,
    /// Lowest scaling of increase/back-off from delay jitter (MIN_QUEUE_DELAY_DEV_SCALE).
    /// Default 0.1.
    pub min_qdelay_dev_scale: f64,
    /// Competing-flow compensation: the queue-delay target adapts between `qdelay_target`
    /// and [`CompetingFlows::qdelay_target_hi`] (draft §4.2.1.4.1, RFC 8298 §4.1.2.2;
    /// `competing.rs`, with cg's drain test, onset scaling and CUBIC-friendly growth).
    /// Default (draft) `Some`: the draft warns that without it a flow sharing a drop-tail
    /// queue with a loss-based flow gets "basically zero throughput", which
    /// `crates/cc/tests/competing_tcp.rs` reproduces and guards against; without a competing
    /// flow it changes nothing measured (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
    /// Reference `None` (its test tool leaves it off).
    pub competing_flows: Option<CompetingFlows>,
    /// Initial smoothed RTT. Default 50 ms (reference `sRtt(0.05f)`).
    pub initial_rtt: Duration,
    /// EWMA gain of the smoothed RTT. Default 1/8 (RFC 6298 α).
    pub srtt_gain: f64,
    /// EWMA gain of the smoothed RTT while application-limited and the sample is lower
    /// (keeps a source-limited flow from inflating its rate on an empty queue). Default 1/1024.
    pub srtt_gain_app_limited: f64,
    /// Take the receiver's hold out of each RTT sample: the newest acknowledged packet's
    /// result waited `report time − arrival` at the receiver before it was reported
    /// ([`Feedback::report_time`](crate::Feedback::report_time), RFC 8888's report
    /// timestamp). A cg choice, default on in both sets; the reference and the draft take
    /// `now − send time`, which counts the feedback interval as path delay and lowers the
    /// rate `8·cwnd/sRTT` it gives the encoder. Without a report time the sample is kept whole.
    pub rtt_without_feedback_hold: bool,

    // ---- congestion reactions ----
    /// Shortest time between two window reductions, as `min(this, sRTT)`; also the RTT the
    /// back-offs are scaled against (`÷ max(1, sRTT / this)`). Reference 30 ms
    /// (`kMinCongestionBackOffInterval`); default (draft) 25 ms (VIRTUAL_RTT).
    pub reaction_interval: Duration,
    /// The "virtual RTT" below which the increase is scaled down (`× min(1, sRTT / this)`),
    /// mimicking Prague's RTT independence (VIRTUAL_RTT / `kSrttVirtual`). Default 25 ms.
    pub virtual_rtt: Duration,
    /// Window scale on a loss event (BETA_LOSS). Default 0.7.
    pub loss_beta: f64,
    /// Window scale on a classic-ECN CE event (BETA_ECN). Default (draft) 0.8; reference 0.9.
    pub ecn_beta: f64,
    /// RACK-like reorder window: a packet still unacknowledged this long after a later packet
    /// was acknowledged is lost (RFC 8985 idea; reference `kReorderTime`). Default 30 ms.
    pub reorder_window: Duration,
    /// Learn the reordering window from packets acknowledged after the edge passed them, as
    /// RFC 8298 §4.1.2.4 describes (`reorder_window` is then its minimum; see `loss.rs`).
    /// Default `true` in both sets; `false`: a fixed `reorder_window`.
    pub adaptive_reorder_window: bool,
    /// A loss reaction at most once per sRTT: losses detected within an sRTT of the last
    /// loss reduction belong to the same loss event (RFC 8298 §4.1.2: "loss events (one or
    /// more lost RTP packets in one RTT)"; RFC 6582's recovery for TCP). Default `true` in
    /// both sets, a deviation from the v2 draft's pseudocode, which reacts again every
    /// `min(VIRTUAL_RTT, sRTT)` while losses keep arriving although its text means "at most
    /// once per smoothed RTT" (§4.2.1): at a long sRTT (a drop-tail queue another flow keeps
    /// full) one overflow gave several ×0.7 reductions in a row, and SCReAM lost most of its
    /// share against CUBIC (`crates/cc/tests/competing_tcp.rs`); nothing else measured moved
    /// (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
    pub loss_event_per_rtt: bool,
    /// Loss-reaction gate (reference); default (draft) `None`: every loss event counts.
    pub loss_gate: Option<LossGate>,
    /// EWMA gain of the packet-loss rate used by [`LossGate`]. Default 1/16 per feedback.
    pub loss_rate_gain: f64,
    /// Initial L4S α. Default (draft) 0.0; reference 0.1 (`l4sAlpha(0.1f)`, so the first CE
    /// events already back off).
    pub initial_l4s_alpha: f64,
    /// L4S α gain while the marked fraction is at or above α (L4S_AVG_G_UP). Default 1/8.
    pub l4s_gain_up: f64,
    /// L4S α decay while the marked fraction is below α (L4S_AVG_G_DOWN). Default 1/128.
    pub l4s_gain_down: f64,
    /// α is updated at most every `min(this, sRTT)`. Default 10 ms.
    pub l4s_alpha_interval: Duration,
    /// L4S back-off is multiplied by this while the target rate is below
    /// `backoff_rate_limited_ratio ×` the acknowledged rate (the encoder lags; the window
    /// needs no further cut). Default 0.25 in both sets: the reference's rule, not the
    /// draft's (1.0 turns it off). Kept in the draft set because without it the video
    /// encoder's lag after each cut is cut again, and the flow settles lower (one and two L4S
    /// flows through DualPI2 in `scream_scenarios`; figures:
    /// `docs/notes/2026-12-01-figures-from-docs.md`).
    pub backoff_rate_limited_scale: f64,
    /// See [`backoff_rate_limited_scale`](Self::backoff_rate_limited_scale). Default 0.8.
    pub backoff_rate_limited_ratio: f64,
    /// The inflection point (window at the last reduction) is refreshed at most every this many
    /// sRTTs. Default (draft) 10; reference 1 (every RTT with CE).
    pub inflection_update_rtts: f64,
    /// After this many congestion-free "long" intervals (× max(virtual RTT, sRTT)) an L4S CE
    /// event first pulls the window down to the bytes actually in flight. Default 100.
    pub idle_restore_rtts: f64,
    /// What "the bytes actually in flight" of [`idle_restore_rtts`](Self::idle_restore_rtts)
    /// are: `true`, the larger of the current and the previous RTT's maximum; `false`, the
    /// previous RTT's maximum only (the draft's `min(ref_wnd, max_bytes_in_flight_prev)`).
    /// Default (draft) `false`; reference `true` (cg's earlier rule). The two measured alike
    /// (figures: `docs/notes/2026-12-01-figures-from-docs.md`), so the draft's rule stands.
    pub idle_restore_current_rtt: bool,
    /// The restore of [`idle_restore_rtts`](Self::idle_restore_rtts) keeps the window that
    /// gives the flight's rate as the target (the bytes in flight × the target's divisor,
    /// `rate_margin` + the media-queue integral term), instead of the bytes in flight
    /// themselves (the draft). Our addition, default `true` in both sets.
    ///
    /// Reason: the target is the window's rate divided by `rate_margin + rate_adjust`, so a
    /// window cut to the flight alone cuts the target by that divisor on top of the L4S
    /// back-off. After a quiet spell the media-queue integral is often near its 0.5 ceiling,
    /// and the first marks cut the rate far more than the L4S back-off meant to. The L4S
    /// tests of `scream_scenarios` run with it (figures with and without, simulated and in
    /// netlab: `docs/notes/2026-12-01-figures-from-docs.md`).
    pub idle_restore_keeps_rate: bool,
    /// Damp the window increase as `qdelay_avg` approaches T/4 when L4S is not in use
    /// (reference `increment *= max(0.1, 1 − qdelay_avg / (T/4))`). Default (draft) false;
    /// reference true.
    pub delay_increase_damping: bool,

    // ---- increase ----
    /// Multiplicative-increase factor per RTT (MUL_INCREASE_FACTOR). Default (draft) 0.02;
    /// reference 0.05.
    pub multiplicative_increase: f64,
    /// The multiplicative increase ramps 0 → 1 over this many sRTTs after congestion
    /// (POST_CONGESTION_DELAY_RTT). Default (draft) 100; reference 200.
    pub post_congestion_rtts: f64,
    /// The window grows only while `cwnd + inc ≤ MSS + this × max bytes in flight`
    /// (BYTES_IN_FLIGHT_HEAD_ROOM). Default (draft) 1.5; reference 2.0.
    pub bytes_in_flight_headroom: f64,

    // ---- sending ----
    /// Segment size assumed before the first packet is sent (MSS). Default (draft) 1000 B;
    /// reference 1200 B (`kRecommendedMss`). After that the largest packet sent in the last 1–2 s.
    pub initial_mss: DataSize,
    /// Smallest window (MIN_REF_WND); the window is also never below 2 MSS. Default 3000 B.
    pub min_cwnd: DataSize,
    /// Send-gate headroom with a jittery queue (REF_WND_OVERHEAD_MIN). Default 1.5.
    pub window_headroom_min: f64,
    /// Send-gate headroom with a steady queue (REF_WND_OVERHEAD_MAX). Default 3.0.
    pub window_headroom_max: f64,
    /// Pacing rate over the target (PACKET_PACING_HEADROOM). Default 1.5.
    pub pacing_headroom: f64,
    /// Largest adaptive pacing scale for frames larger than average (reference
    /// `maxAdaptivePacingRateScale`). Default 1.5.
    pub max_adaptive_pacing_scale: f64,
    /// Lowest pacing rate (RATE_PACE_MIN). Default 50 kbit/s.
    pub min_pacing_rate: Bitrate,
    /// Relaxed pacing near the maximum rate: default (draft) `Some`; reference `None` (disabled
    /// there).
    pub relaxed_pacing: Option<RelaxedPacing>,
    /// L4S pacing cap (our addition, in both sets; `None` gives the plain pacing rule):
    /// once L4S CE marks have arrived (see [`l4s_pacing_hold`](Self::l4s_pacing_hold)), pace
    /// no faster than this × the bottleneck rate (never below the target). The rate is
    /// measured from the receiver's arrival times, only on packet trains that were sent faster
    /// than they arrived (see `scream/bottleneck.rs`). Reason: with 60 fps frames paced at
    /// 1.5 × target, every frame overruns the bottleneck once the target exceeds 2/3 of it and
    /// DualPI2's 1 ms step marks the frame's tail — the reference then settles near 68 % of a
    /// 50 Mbit/s link (shared/notes/scream-v2.md). Default `Some(1.0)`: pace at the
    /// bottleneck's own rate. Below 1 loses throughput in simulation without lowering the
    /// median delay (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
    pub l4s_pacing_cap: Option<f64>,
    /// While the newest L4S CE mark is less than an sRTT old, pace at most this × the
    /// bottleneck rate, below the target if need be (with [`l4s_pacing_cap`](Self::l4s_pacing_cap);
    /// `None`: the cap alone). Our addition, default `Some(0.95)` in both sets.
    ///
    /// Reason: a mark means the pacer (held at the bottleneck rate, or at a target that had
    /// grown past it) built a queue above DualPI2's 1 ms step; the window cut reaches the
    /// encoder only after its reaction time and the frames already queued, so the queue stood
    /// for several RTTs, every packet was marked, α rose to 0.8 and the window fell to half
    /// the path's BDP. Pacing 5 % under the bottleneck for an RTT drains the queue at once
    /// (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
    pub l4s_mark_drain: Option<f64>,
    /// How long after the last L4S CE mark the pacing cap stays on; `None`: for good, once a
    /// mark has arrived. Default `None` in both sets.
    ///
    /// Reason: the cap itself keeps the L queue below DualPI2's 1 ms step, so marks stop; a
    /// cap lifted a few seconds later let the pacer jump to 1.5 × the target, far above the
    /// link, and the queue it built marked a burst whose back-offs halved the window. A cap
    /// left on costs when the capacity rises: no train outruns a faster link, so the
    /// estimate stays low, and the pacer runs at the target, where the media-queue integral
    /// holds the target down (the ignored test
    /// `l4s_follows_capacity_down_and_back_up_through_dualpi2`, issue #19). Raising or
    /// probing the estimate was not kept: it cost the steady state, and feedback arriving
    /// bunched or netlab's real pacer sending in bursts read as rates the link does not
    /// have. The cap is judged against netlab's real runs, not the simulator's smooth pacer
    /// alone (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
    pub l4s_pacing_hold: Option<Duration>,
    /// With [`l4s_pacing_cap`](Self::l4s_pacing_cap): once the target has stood at or above
    /// the capped rate for a while and no L4S mark has come for two sRTTs, let the pacer run
    /// at `gain ×` the bottleneck rate for `length`, and again at once each time a probe
    /// finds the link faster (`scream/probe.rs`), and let a train the link carried
    /// unstretched raise the estimate (`scream/bottleneck.rs`); `None`: no probe, and the
    /// estimate learns only from trains that outran the bottleneck. Our addition, default
    /// `None` in both sets.
    ///
    /// Reason: a cap at the bottleneck estimate keeps every train under the link's rate, so
    /// a link that grows is never seen and the flow stays near the old capacity (issue #38).
    /// A probe that arrives as fast as it was sent proves the link carries that rate
    /// (`scream/bottleneck.rs`). Off by default because a probe on an unchanged link queues
    /// above DualPI2's step, and the marks' reaction costs the window wherever the target
    /// rests at the cap: with two L4S flows sharing a link, and at 30 fps where the media
    /// queue stands (figures: `docs/notes/2026-12-07.md`).
    pub l4s_capacity_probe: Option<CapacityProbe>,
    /// Bytes in flight are forgotten (the window reopens) when no feedback has arrived for
    /// this long — a guard against deadlock when feedback is lost (reference: 0.5 s).
    pub feedback_timeout: Duration,

    // ---- media rate ----
    /// Per-packet packetisation overhead in the rate (PACKET_OVERHEAD). Default 20 B.
    pub packet_overhead: DataSize,
    /// The target is `8 × cwnd / sRTT ÷ (this + rate_adjust)`. Default (draft) 1.2; reference
    /// 1.1 (`rateLeft /= 1.1`).
    pub rate_margin: f64,
    /// Gain of the RTP-queue integral controller (RATE_ADJUST_GAIN). Default 1/16 per frame.
    pub rate_adjust_gain: f64,
    /// Upper bound of the integral term. Default 0.5 (draft).
    pub max_rate_adjust: f64,
    /// Our addition (issue #14, in both sets): a frame larger than this × the nominal frame
    /// (`target × frame_period`) is "large" — a key frame, a scene change. Until the queue
    /// has been empty once after it, the frames arriving behind it are not fed to the
    /// RTP-queue integral, and the queue is discarded only above
    /// [`discard_recovery_max_delay`](Self::discard_recovery_max_delay) instead of
    /// `max_rtp_queue_delay`. `None` gives the draft's rule (every arrival
    /// integrated, one discard limit).
    ///
    /// Reason: a key frame (~10 nominal frames) or a 3–5× scene-change frame is still being
    /// paced out when the next frames arrive; they find a queue 1–4 frame periods old and the
    /// integral jumps by up to its 0.5 bound, then decays by 1/64 per frame (about a second
    /// at 30 fps): with a camera-like source (one such frame a second) the target sat far
    /// below the window's rate. And a key frame that needs more than 100 ms to be paced out
    /// was discarded while being sent (see `discard_recovery_max_delay`). RFC 8593's narrow
    /// frame sizes are rarely large, so those scenarios are unchanged. Default 2.
    pub large_frame_factor: Option<f64>,
    /// The draft's `FRAME_SIZE_DEV_ALPHA` (§4.4: 1/64): frames above the nominal size
    /// (`target × frame_period`) raise a slow average of their excess, capped at 0.2, that is
    /// added to the target's divisor. Default `None` in both sets (a deviation from the
    /// draft, issue #19).
    ///
    /// Reason: the camera-like source's frames are always above the nominal size, so the
    /// term sits near its cap and the target well under the window's rate; it buys fairness
    /// between drop-tail flows and a shorter L queue with much of the utilisation on camera
    /// content (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
    pub frame_size_dev_alpha: Option<f64>,
    /// Media frame period, for the integral controller and adaptive pacing. Default 1/60 s
    /// (TMA24: 1080p at 60 fps).
    pub frame_period: Duration,
    /// RTP queue delay above which the queue is discarded and a key frame requested.
    /// Default 0.1 s (reference library `kMaxRtpQueueDelay`; its test tool uses 0.2 s).
    pub max_rtp_queue_delay: Duration,
    /// Shortest time between two discards. Default 0.25 s (`kMinRtpQueueDiscardInterval`).
    pub min_discard_interval: Duration,
    /// Our addition (issue #14, in both sets): after a discard, and after a large frame
    /// (see [`large_frame_factor`](Self::large_frame_factor)), the queue is discarded only
    /// above this delay until it has been empty once (after new media arrived, for a
    /// discard): the key frame the discard asked for, and what queued behind it, can leave.
    /// `None` gives the reference's rule (`ScreamV2TxStream.cpp`: the oldest packet's age
    /// against `max_rtp_queue_delay` every `min_discard_interval`, whatever is being sent).
    ///
    /// Reason: a key frame is ~10 nominal frames (a third of a second of the target at
    /// 30 fps); paced at 1.5 × 1.5 × target it needs ~150 ms to leave, so its age passed
    /// `max_rtp_queue_delay` while it was being sent, the reference rule threw it away and
    /// asked for another one — a discard → key frame → discard loop
    /// (`crates/cc/tests/scream_camera.rs` counts the frames dropped). Default 0.35 s:
    /// `max_rtp_queue_delay` + `min_discard_interval`, the oldest queue the reference rule
    /// itself lets through.
    pub discard_recovery_max_delay: Option<Duration>,
    /// Bound on tracked sent packets (older ones are forgotten). Default 65 536.
    pub max_tracked_packets: usize,
}

impl ScreamConfig {
    /// The reference implementation's constants.
    pub fn reference() -> Self {
        ScreamConfig {
            min_bitrate: Bitrate::kbps(150),
            max_bitrate: Bitrate::mbps(100),
            start_bitrate: Bitrate::mbps(1),
            ecn: Ecn::Ect1,
            qdelay_target: Duration::from_millis(60),
            competing_flows: None,
            base_delay_slots: 50,
            base_delay_slot: Duration::from_secs(10),
            qdelay_avg_gain: 1.0 / 4.0,
            qdelay_dev_norm: Duration::from_millis(25),
            qdelay_dev_gain: 1.0 / 64.0,
            min_qdelay_dev_scale: 0.1,
            initial_rtt: Duration::from_millis(50),
            srtt_gain: 1.0 / 8.0,
            srtt_gain_app_limited: 1.0 / 1024.0,
            rtt_without_feedback_hold: true,
            reaction_interval: Duration::from_millis(30),
            virtual_rtt: Duration::from_millis(25),
            loss_beta: 0.7,
            ecn_beta: 0.9,
            reorder_window: Duration::from_millis(30),
            adaptive_reorder_window: true,
            loss_event_per_rtt: true,
            loss_gate: Some(LossGate::default()),
            loss_rate_gain: 1.0 / 16.0,
            initial_l4s_alpha: 0.1,
            l4s_gain_up: 1.0 / 8.0,
            l4s_gain_down: 1.0 / 128.0,
            l4s_alpha_interval: Duration::from_millis(10),
            backoff_rate_limited_scale: 0.25,
            backoff_rate_limited_ratio: 0.8,
            inflection_update_rtts: 1.0,
            idle_restore_rtts: 100.0,
            idle_restore_current_rtt: true,
            idle_restore_keeps_rate: true,
            delay_increase_damping: true,
            multiplicative_increase: 0.05,
            post_congestion_rtts: 200.0,
            bytes_in_flight_headroom: 2.0,
            initial_mss: DataSize::bytes(1200),
            min_cwnd: DataSize::bytes(3000),
            window_headroom_min: 1.5,
            window_headroom_max: 3.0,
            pacing_headroom: 1.5,
            max_adaptive_pacing_scale: 1.5,
            min_pacing_rate: Bitrate::kbps(50),
            relaxed_pacing: None,
            l4s_pacing_cap: Some(1.0),
            l4s_pacing_hold: None,
            l4s_capacity_probe: None,
            l4s_mark_drain: Some(0.95),
            feedback_timeout: Duration::from_millis(500),
            packet_overhead: DataSize::bytes(20),
            rate_margin: 1.1,
            rate_adjust_gain: 1.0 / 16.0,
            max_rate_adjust: 0.5,
            frame_period: Duration::from_micros(16_667),
            max_rtp_queue_delay: Duration::from_millis(100),
            min_discard_interval: Duration::from_millis(250),
            discard_recovery_max_delay: Some(Duration::from_millis(350)),
            large_frame_factor: Some(2.0),
            frame_size_dev_alpha: None,
            max_tracked_packets: 65_536,
        }
    }

    /// The SCReAM v2 draft's constants (draft-johansson-ccwg-rfc8298bis-screamv2 §4); the
    /// default (see module docs).
    pub fn draft() -> Self {
        ScreamConfig {
            reaction_interval: Duration::from_millis(25),
            ecn_beta: 0.8,
            initial_l4s_alpha: 0.0,
            loss_gate: None,
            inflection_update_rtts: 10.0,
            delay_increase_damping: false,
            multiplicative_increase: 0.02,
            post_congestion_rtts: 100.0,
            bytes_in_flight_headroom: 1.5,
            initial_mss: DataSize::bytes(1000),
            relaxed_pacing: Some(RelaxedPacing::default()),
            rate_margin: 1.2,
            competing_flows: Some(CompetingFlows::default()),
            idle_restore_current_rtt: false,
            ..Self::reference()
        }
    }

    /// Builds the concrete controller (use [`ControllerConfig::build`] for a trait object).
    pub fn build_scream(&self, now: Instant) -> Result<Scream, ConfigError> {
        Scream::new(self.clone(), now)
    }

    /// The first value the algorithm cannot run with: the bounds (`min ≤ start ≤ max`), the
    /// gains (within `[0, 1]`), the factors, headrooms and periods (above zero, and below
    /// the limits past which a window or a pacing rate stops meaning anything).
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::bounds(self.min_bitrate, self.start_bitrate, self.max_bitrate)?;
        for (field, d) in [
            ("qdelay_target", self.qdelay_target),
            ("initial_rtt", self.initial_rtt),
        ] {
            ConfigError::check(
                (Duration::from_millis(1)..=Duration::from_secs(5)).contains(&d),
                field,
                d,
                "within [1 ms, 5 s]",
            )?;
        }
        ConfigError::check(
            self.base_delay_slot >= Duration::from_millis(1),
            "base_delay_slot",
            self.base_delay_slot,
            "at least 1 ms",
        )?;
        ConfigError::check(
            !self.frame_period.is_zero(),
            "frame_period",
            self.frame_period,
            "above 0",
        )?;
        // The ranges the base-delay history and the flight keep (they would clamp).
        ConfigError::check(
            (1..=1024).contains(&self.base_delay_slots),
            "base_delay_slots",
            self.base_delay_slots,
            "within [1, 1024]",
        )?;
        ConfigError::check(
            (16..=1 << 20).contains(&self.max_tracked_packets),
            "max_tracked_packets",
            self.max_tracked_packets,
            "within [16, 1048576]",
        )?;
        for (field, v) in [
            ("qdelay_avg_gain", self.qdelay_avg_gain),
            ("qdelay_dev_gain", self.qdelay_dev_gain),
            ("min_qdelay_dev_scale", self.min_qdelay_dev_scale),
            ("srtt_gain", self.srtt_gain),
            ("srtt_gain_app_limited", self.srtt_gain_app_limited),
            ("loss_beta", self.loss_beta),
            ("ecn_beta", self.ecn_beta),
            ("loss_rate_gain", self.loss_rate_gain),
            ("l4s_gain_up", self.l4s_gain_up),
            ("l4s_gain_down", self.l4s_gain_down),
            (
                "backoff_rate_limited_scale",
                self.backoff_rate_limited_scale,
            ),
            ("rate_adjust_gain", self.rate_adjust_gain),
            ("multiplicative_increase", self.multiplicative_increase),
        ] {
            ConfigError::within(field, v, 0.0, 1.0)?;
        }
        for (field, v) in [
            (
                "backoff_rate_limited_ratio",
                self.backoff_rate_limited_ratio,
            ),
            ("inflection_update_rtts", self.inflection_update_rtts),
            ("idle_restore_rtts", self.idle_restore_rtts),
            ("post_congestion_rtts", self.post_congestion_rtts),
        ] {
            ConfigError::positive(field, v)?;
        }
        for (field, v, lo, hi) in [
            (
                "bytes_in_flight_headroom",
                self.bytes_in_flight_headroom,
                1.0,
                10.0,
            ),
            ("window_headroom_min", self.window_headroom_min, 1.0, 10.0),
            (
                "window_headroom_max",
                self.window_headroom_max,
                self.window_headroom_min,
                10.0,
            ),
            ("pacing_headroom", self.pacing_headroom, 1.0, 10.0),
            (
                "max_adaptive_pacing_scale",
                self.max_adaptive_pacing_scale,
                1.0,
                10.0,
            ),
            ("rate_margin", self.rate_margin, 0.5, 10.0),
            (
                "max_rate_adjust",
                self.max_rate_adjust,
                f64::MIN_POSITIVE,
                5.0,
            ),
        ] {
            ConfigError::within(field, v, lo, hi)?;
        }
        ConfigError::check(
            (64..=65_535).contains(&self.initial_mss.as_bytes()),
            "initial_mss",
            self.initial_mss,
            "within [64, 65535] bytes",
        )?;
        if let Some(g) = &self.loss_gate {
            ConfigError::within("loss_gate.min_loss_rate", g.min_loss_rate, 0.0, 1.0)?;
            ConfigError::positive("loss_gate.qdelay_fraction", g.qdelay_fraction)?;
        }
        if let Some(c) = &self.competing_flows {
            ConfigError::check(
                (self.qdelay_target..=Duration::from_secs(5)).contains(&c.qdelay_target_hi),
                "competing_flows.qdelay_target_hi",
                c.qdelay_target_hi,
                "within [qdelay_target, 5 s]",
            )?;
            ConfigError::check(
                (Duration::from_millis(1)..=Duration::from_secs(1)).contains(&c.sample_interval),
                "competing_flows.sample_interval",
                c.sample_interval,
                "within [1 ms, 1 s]",
            )?;
            ConfigError::within(
                "competing_flows.loss_event_rate",
                c.loss_event_rate,
                0.0,
                1.0,
            )?;
        }
        if let Some(r) = &self.relaxed_pacing {
            ConfigError::within("relaxed_pacing.limit_low", r.limit_low, 0.0, 0.99)?;
            ConfigError::within("relaxed_pacing.max_factor", r.max_factor, 1.0, 100.0)?;
        }
        if let Some(f) = self.l4s_mark_drain {
            ConfigError::within("l4s_mark_drain", f, 0.5, 1.0)?;
        }
        if let Some(p) = &self.l4s_capacity_probe {
            ConfigError::within("l4s_capacity_probe.gain", p.gain, 1.0, 4.0)?;
            for (field, d) in [
                ("l4s_capacity_probe.length", p.length),
                ("l4s_capacity_probe.interval", p.interval),
                ("l4s_capacity_probe.max_interval", p.max_interval),
            ] {
                ConfigError::within(field, d.as_secs_f64(), 1e-3, 3600.0)?;
            }
            ConfigError::check(
                p.max_interval >= p.interval,
                "l4s_capacity_probe.max_interval",
                p.max_interval,
                format!("at least its interval ({:?})", p.interval),
            )?;
        }
        if let Some(f) = self.large_frame_factor {
            ConfigError::positive("large_frame_factor", f)?;
        }
        if let Some(a) = self.frame_size_dev_alpha {
            ConfigError::within("frame_size_dev_alpha", a, f64::MIN_POSITIVE, 1.0)?;
        }
        Ok(())
    }
}

impl Default for ScreamConfig {
    /// [`ScreamConfig::draft`]; see the module docs for why.
    fn default() -> Self {
        Self::draft()
    }
}

impl ControllerConfig for ScreamConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        ScreamConfig::validate(self)
    }

    fn build(&self, now: Instant) -> Result<Box<dyn Controller>, ConfigError> {
        Ok(Box::new(self.build_scream(now)?))
    }

    fn feedback_kind(&self) -> FeedbackKind {
        FeedbackKind::Rfc8888
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_and_reference_differ_where_the_notes_say() {
        let r = ScreamConfig::reference();
        let d = ScreamConfig::draft();
        assert_eq!(d, ScreamConfig::default());
        assert_eq!((r.ecn_beta, d.ecn_beta), (0.9, 0.8));
        assert_eq!(
            (r.multiplicative_increase, d.multiplicative_increase),
            (0.05, 0.02)
        );
        assert_eq!(
            (r.post_congestion_rtts, d.post_congestion_rtts),
            (200.0, 100.0)
        );
        assert_eq!(
            (r.bytes_in_flight_headroom, d.bytes_in_flight_headroom),
            (2.0, 1.5)
        );
        assert_eq!(
            (r.idle_restore_current_rtt, d.idle_restore_current_rtt),
            (true, false)
        );
        assert_eq!(r.competing_flows, None);
        assert_eq!(d.competing_flows, Some(CompetingFlows::default()));
        assert_eq!(r.reaction_interval, Duration::from_millis(30));
        assert_eq!(d.reaction_interval, Duration::from_millis(25));
        // Shared constants.
        for c in [&r, &d] {
            assert_eq!(c.qdelay_target, Duration::from_millis(60));
            assert_eq!(c.loss_beta, 0.7);
            assert_eq!(c.reorder_window, Duration::from_millis(30));
            assert!(c.adaptive_reorder_window);
            assert_eq!((c.l4s_gain_up, c.l4s_gain_down), (1.0 / 8.0, 1.0 / 128.0));
            assert_eq!(
                (c.base_delay_slots, c.base_delay_slot),
                (50, Duration::from_secs(10))
            );
            assert_eq!(c.min_pacing_rate, Bitrate::kbps(50));
            assert_eq!(c.pacing_headroom, 1.5);
        }
    }
}
