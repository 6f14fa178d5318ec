//! The frame dropper: raw frames skipped in front of the encoder while its output runs ahead
//! of the target by more than a bounded debt.
//!
//! libvpx's CBR (as cg configures it: `dropframe-threshold` 0) never drops a frame: on a
//! picture it cannot code at the target it overshoots for as long as the target stays low,
//! and its rate control then repays the accumulated buffer deficit with a long undershoot
//! once the target rises, for tens of seconds (issue #14; figures:
//! `docs/notes/2026-12-01-figures-from-docs.md`). This is libwebrtc's `FrameDropper`
//! (modules/video_coding/utility/frame_dropper.cc) in a simpler form: a leaky bucket of
//! produced bits that drains at the target rate, in stream time; while it holds more than
//! `max_debt` of the target, input frames are dropped. Dropped frames are time the encoder
//! does not spend bits on, so the output meets the target at a lower frame rate, and libvpx
//! (which derives its per-frame budget from the frame timestamps) sees the time pass and
//! credits its own buffer.
//!
//! As in libwebrtc, a key frame's bits enter the bucket spread over the next
//! `max(fps/2, 5)` input frames, so that the one large frame the transport asked for does not
//! cause a burst of drops right after it; unlike libwebrtc's, only up to half the bound.
//! Unlike libwebrtc's, this one never drops for more than `max_gap` in a row (libwebrtc: 4 s;
//! a frame dropper that freezes the picture for seconds is worse than an overshoot), and it
//! runs for every encoder (libwebrtc trusts
//! libvpx's own rate control and turns its dropper off for VP8; libvpx's own dropping is
//! what cg turns off, see `EncoderKind::make`).
//!
//! Sans-IO: time is the stream time of the frames (their PTS), passed in.

use std::time::Duration;

use cg_types::{Bitrate, DataSize};

/// Drops input frames while the encoder's output is more than a bounded debt ahead of the
/// target.
#[derive(Debug, Clone)]
pub struct FrameDropper {
    max_debt: Duration,
    max_gap: Duration,
    spread_frames: u32,
    /// Bits produced and not yet paid for by the target's drain (negative: credit).
    debt: f64,
    /// A key frame's bits still to be added, and over how many more input frames.
    spread: (f64, u32),
    last_input: Option<Duration>,
    last_kept: Option<Duration>,
    target: Bitrate,
    dropped: u64,
}

impl FrameDropper {
    /// A dropper that lets the output run at most `max_debt` of the target ahead, and never
    /// drops for longer than `max_gap` in a row. `frame_rate` sets the key-frame spread.
    pub fn new(max_debt: Duration, max_gap: Duration, frame_rate: u32) -> Self {
        FrameDropper {
            max_debt,
            max_gap,
            spread_frames: (frame_rate / 2).max(5),
            debt: 0.0,
            spread: (0.0, 0),
            last_input: None,
            last_kept: None,
            target: Bitrate::ZERO,
            dropped: 0,
        }
    }

    /// A raw frame at stream time `pts` is about to enter the encoder, whose target is
    /// `target`. Returns `true` if it should be dropped.
    pub fn on_input(&mut self, pts: Duration, target: Bitrate) -> bool {
        let rate = target.as_bps_f64();
        if let Some(last) = self.last_input {
            // The bucket drains at the target rate (the rate in force now: a new target
            // re-scales what is left of the debt only through its drain).
            let dt = pts.saturating_sub(last).as_secs_f64();
            self.debt -= rate * dt;
        }
        self.last_input = Some(pts);
        self.target = target;
        if self.spread.1 > 0 {
            let part = self.spread.0 / f64::from(self.spread.1);
            self.debt += part;
            self.spread = (self.spread.0 - part, self.spread.1 - 1);
        }
        // A little credit (100 ms of target) is kept for the frames after an easy stretch;
        // more would let the encoder burst.
        self.debt = self.debt.max(-0.1 * rate);
        let over = self.debt > rate * self.max_debt.as_secs_f64();
        let gap_ok = self
            .last_kept
            .is_none_or(|k| pts.saturating_sub(k) < self.max_gap);
        if over && gap_ok {
            self.dropped += 1;
            return true;
        }
        self.last_kept = Some(pts);
        false
    }

    /// The encoder produced a frame of `size` (`key_frame`: spread over the next frames,
    /// and counted only up to half the bound: the transport asked for it, the pacer spreads
    /// it, and the encoder's own rate control repays it with smaller frames after it —
    /// dropping frames for it too would pay it back twice).
    pub fn on_encoded(&mut self, size: DataSize, key_frame: bool) {
        let bits = size.as_bits() as f64;
        if key_frame {
            let cap = 0.5 * self.target.as_bps_f64() * self.max_debt.as_secs_f64();
            let bits = if cap > 0.0 { bits.min(cap) } else { bits };
            self.spread = (self.spread.0 + bits, self.spread_frames);
        } else {
            self.debt += bits;
        }
    }

    /// Forgets the debt (the encoder was re-created: its rate control starts afresh).
    pub fn reset(&mut self) {
        self.debt = 0.0;
        self.spread = (0.0, 0);
    }

    /// Frames dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The current debt as time at the target rate (negative: credit).
    pub fn debt(&self) -> Duration {
        let rate = self.target.as_bps_f64();
        if rate <= 0.0 || self.debt <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64((self.debt / rate).min(3600.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: Duration = Duration::from_nanos(33_333_333);

    /// Runs `secs` of 30 fps input through a dropper in front of an "encoder" that makes
    /// every kept frame `size` bytes (a key frame first); returns the produced rate and the
    /// longest run of drops.
    fn run(d: &mut FrameDropper, target: Bitrate, size: u64, secs: u32) -> (f64, u32) {
        let mut bytes = 0u64;
        let (mut run, mut longest) = (0, 0);
        for i in 0..secs * 30 {
            let pts = FRAME * i;
            if d.on_input(pts, target) {
                run += 1;
                longest = longest.max(run);
                continue;
            }
            run = 0;
            d.on_encoded(DataSize::bytes(size), i == 0);
            bytes += size;
        }
        (bytes as f64 * 8.0 / f64::from(secs), longest)
    }

    #[test]
    fn an_encoder_that_meets_the_target_loses_no_frame() {
        let mut d = FrameDropper::new(Duration::from_millis(500), Duration::from_millis(500), 30);
        // 1 Mbit/s at 30 fps: 4167 bytes a frame.
        let (rate, _) = run(&mut d, Bitrate::mbps(1), 4_100, 20);
        assert_eq!(d.dropped(), 0);
        assert!((rate - 984_000.0).abs() < 10_000.0, "{rate}");
    }

    #[test]
    fn an_overshooting_encoder_is_held_to_the_target_by_dropping() {
        let mut d = FrameDropper::new(Duration::from_millis(500), Duration::from_millis(500), 30);
        // The encoder makes 60 % more than a 400 kbit/s target.
        let per_frame = 400_000 * 16 / 10 / 8 / 30;
        let (rate, longest) = run(&mut d, Bitrate::kbps(400), per_frame, 30);
        // Within the bounds: 0.5 s of debt, 0.1 s of credit and one frame (0.05 s) above
        // the target over 30 s.
        assert!(rate <= 400_000.0 * (1.0 + 0.65 / 30.0), "{rate}");
        assert!(rate >= 380_000.0, "{rate}");
        // About 3 frames in 8 dropped, never many in a row.
        assert!((300..=400).contains(&d.dropped()), "{}", d.dropped());
        assert!(longest <= 2, "{longest}");
    }

    #[test]
    fn a_key_frame_alone_drops_nothing() {
        let mut d = FrameDropper::new(Duration::from_millis(500), Duration::from_millis(500), 30);
        // 1 Mbit/s, a key frame of 0.6 s of target (75 KB) then frames at 90 % of it: the
        // key frame counts only up to half the bound.
        let target = Bitrate::mbps(1);
        let mut dropped = 0;
        for i in 0..300u32 {
            if d.on_input(FRAME * i, target) {
                dropped += 1;
                continue;
            }
            let size = if i == 0 { 75_000 } else { 3_750 };
            d.on_encoded(DataSize::bytes(size), i == 0);
        }
        assert_eq!(dropped, 0);
    }

    #[test]
    fn a_frame_gets_through_at_least_every_max_gap() {
        let mut d = FrameDropper::new(Duration::from_millis(500), Duration::from_millis(300), 30);
        // Frames of 2 s of target each: only the gap bound lets any through.
        let (_, longest) = run(&mut d, Bitrate::kbps(100), 25_000, 10);
        assert!(longest <= 9, "{longest}"); // 300 ms at 30 fps
        assert!(d.dropped() > 200);
    }

    #[test]
    fn debt_does_not_outlive_a_rise_of_the_target() {
        let mut d = FrameDropper::new(Duration::from_millis(500), Duration::from_millis(500), 30);
        let per_frame = 1_000_000 / 8 / 30; // 1 Mbit/s encoder
        run(&mut d, Bitrate::kbps(300), per_frame, 10);
        // The bound plus at most one frame (0.11 s of this target).
        assert!(d.debt() <= Duration::from_millis(620), "{:?}", d.debt());
        // Target rises above what the encoder makes: no more drops after the debt drains.
        let before = d.dropped();
        for i in 300..600u32 {
            if !d.on_input(FRAME * i, Bitrate::mbps(2)) {
                d.on_encoded(DataSize::bytes(per_frame), false);
            }
        }
        assert!(d.dropped() - before <= 2, "{}", d.dropped() - before);
    }
}
