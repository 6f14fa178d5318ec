//! Picture quality as the viewer sees it: each shown picture against the source picture it
//! came from.
//!
//! The sender draws a [`Stamp`] into every source picture; the receiver reads it back from the
//! decoded one, makes the same source picture again ([`Reference`]: the synthetic patterns are
//! deterministic, so no file travels) and scores luma PSNR over the whole picture below the
//! code, the decoded picture scaled up to the source size (bilinear), as the viewer's screen
//! shows a picture coded at a lower resolution. A lower coded size therefore costs what it
//! costs the viewer.
//!
//! The score is computed here rather than by GStreamer's or ffmpeg's metric elements because
//! each shown picture must be matched to its source by its stamp while the receiver runs:
//! GStreamer's `compare` reports only past a threshold, on two streams aligned by timestamp,
//! and ffmpeg's `psnr` filter scores files afterwards. The metric is ffmpeg's: the example
//! `score_y4m` prints it in that filter's `stats_file` format, and on the same files the two
//! agree frame by frame (ffmpeg scaling with `flags=bilinear+accurate_rnd`; the check and its
//! commands are in `docs/notes/2026-11-29.md`).

use std::collections::VecDeque;

use crate::stamp::Stamp;
use crate::synth::SyntheticVideo;
use crate::{Error, TestPattern};

/// PSNR given to a picture identical to its source (the usual cap: 255² / MSE with MSE ≥ 0.01
/// would be 66 dB; identical pictures score this).
pub const PSNR_IDENTICAL_DB: f64 = 100.0;

/// The source a receiver scores against: a synthetic pattern at the sender's source size and
/// frame rate (`camera:1280x720@30`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReferenceSpec {
    /// [`TestPattern::Camera`] or [`TestPattern::Game`].
    pub pattern: TestPattern,
    /// Source width in pixels.
    pub width: u32,
    /// Source height in pixels.
    pub height: u32,
    /// Source frame rate.
    pub frame_rate: u32,
}

impl std::str::FromStr for ReferenceSpec {
    type Err = Error;

    /// `PATTERN:WxH@FPS`, e.g. `camera:1280x720@30`.
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::InvalidConfig(format!(
                "reference {s:?}: expected PATTERN:WIDTHxHEIGHT@FPS with PATTERN camera or game, e.g. camera:1280x720@30"
            ))
        };
        let (pattern, rest) = s.split_once(':').ok_or_else(bad)?;
        // The patterns cg-send names the same way; only the synthetic ones can be made again.
        let pattern = TestPattern::from_name(pattern)
            .filter(|p| matches!(p, TestPattern::Camera | TestPattern::Game))
            .ok_or_else(bad)?;
        let (size, fps) = rest.split_once('@').ok_or_else(bad)?;
        let (w, h) = size.split_once('x').ok_or_else(bad)?;
        let num = |v: &str| v.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(bad);
        let spec = ReferenceSpec {
            pattern,
            width: num(w)?,
            height: num(h)?,
            frame_rate: num(fps)?,
        };
        if !spec.width.is_multiple_of(2)
            || !spec.height.is_multiple_of(2)
            || spec.width > 7680
            || spec.height > 4320
        {
            return Err(Error::InvalidConfig(format!(
                "reference {s:?}: the size must be even and at most 7680x4320"
            )));
        }
        Ok(spec)
    }
}

/// Makes source pictures again, in frame-number order.
#[derive(Debug)]
pub struct Reference {
    spec: ReferenceSpec,
    video: SyntheticVideo,
    picture: Vec<u8>,
    /// Frame number of `picture`, if one was drawn.
    drawn: Option<u64>,
}

impl Reference {
    /// A reference for `spec`.
    pub fn new(spec: ReferenceSpec) -> Result<Self, Error> {
        let video = Self::generator(spec)?;
        Ok(Reference {
            spec,
            video,
            picture: Vec::new(),
            drawn: None,
        })
    }

    fn generator(spec: ReferenceSpec) -> Result<SyntheticVideo, Error> {
        SyntheticVideo::new(
            spec.pattern,
            spec.width,
            spec.height,
            f64::from(spec.frame_rate),
        )
        .ok_or_else(|| {
            Error::InvalidConfig(format!("{:?} is not a synthetic pattern", spec.pattern))
        })
    }

    /// Source picture `frame` (I420, the spec's size). Frames are made in order: a frame
    /// number below the last one asked for (a restarted sender) starts the generator again.
    pub fn picture(&mut self, frame: u64) -> &[u8] {
        if self.drawn != Some(frame) {
            if frame < self.video.position()
                && let Ok(v) = Self::generator(self.spec)
            {
                self.video = v;
            }
            while self.video.position() < frame {
                self.video.skip_frame();
            }
            self.video.next_frame(&mut self.picture);
            self.drawn = Some(frame);
        }
        &self.picture
    }

    /// Luma PSNR of a decoded picture (`luma`, `stride` bytes a row, `width`×`height`) against
    /// source frame `frame`, below the stamp's band.
    pub fn psnr(
        &mut self,
        frame: u64,
        luma: &[u8],
        stride: usize,
        width: usize,
        height: usize,
    ) -> Option<f64> {
        let (rw, rh) = (self.spec.width as usize, self.spec.height as usize);
        let band = Stamp::band_height(rw);
        let reference = &self.picture(frame)[..rw * rh];
        psnr_scaled(reference, rw, rh, band, luma, stride, width, height)
    }

    /// Reads `p`'s stamp and scores it against the source frame the stamp names; `None`
    /// without a readable stamp.
    pub fn score(&mut self, p: &Picture) -> Option<Score> {
        let stamp = Stamp::read(&p.luma, p.stride, p.width, p.height)?;
        let psnr_db = self.psnr(u64::from(stamp.frame), &p.luma, p.stride, p.width, p.height)?;
        Some(Score {
            frame: stamp.frame,
            psnr_db,
        })
    }
}

/// A shown picture's luma plane, on its way to a [`Scorer`].
#[derive(Debug, Clone)]
pub struct Picture {
    /// Luma rows, `stride` bytes apart.
    pub luma: Vec<u8>,
    /// Bytes from one row to the next (at least `width`).
    pub stride: usize,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
}

/// A shown picture scored against its source.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Score {
    /// The source frame its stamp names.
    pub frame: u32,
    /// Luma PSNR against that source picture, dB.
    pub psnr_db: f64,
}

/// A [`Scorer`] did not take a picture: it still has earlier ones to score (or its thread
/// has ended). The caller counts the picture as skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScorerBusy;

type Reply = Box<dyn FnOnce(Option<Score>) + Send>;

/// Scores shown pictures on a thread of its own at the lowest priority, so scoring takes only
/// the time the real-time path leaves: it holds at most two pictures waiting, and refuses more
/// rather than fall behind. Each picture's stamp names its source frame; the reply gets `None` when there is no
/// readable stamp (or the picture cannot be scored). cg-recv scores its decoded pictures with
/// it, cg-send the pictures a browser page posts back.
#[derive(Debug)]
pub struct Scorer {
    pictures: std::sync::mpsc::SyncSender<(Picture, Reply)>,
}

impl Scorer {
    /// A scorer against `spec`'s source; its thread ends when the scorer is dropped.
    pub fn spawn(spec: ReferenceSpec) -> Result<Scorer, Error> {
        let mut reference = Reference::new(spec)?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Picture, Reply)>(2);
        std::thread::Builder::new()
            .name("cg-media-score".to_owned())
            .spawn(move || {
                // SAFETY: setpriority(2) on this thread's own id; no memory is involved.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
                }
                while let Ok((p, reply)) = rx.recv() {
                    reply(reference.score(&p));
                }
            })
            .map_err(|e| Error::Pipeline(format!("cannot spawn scorer thread: {e}")))?;
        Ok(Scorer { pictures: tx })
    }

    /// Hands `picture` to the scorer; `reply` gets its score once made.
    pub fn try_score(
        &self,
        picture: Picture,
        reply: impl FnOnce(Option<Score>) + Send + 'static,
    ) -> Result<(), ScorerBusy> {
        self.pictures
            .try_send((picture, Box::new(reply)))
            .map_err(|_| ScorerBusy)
    }
}

/// Luma PSNR in dB of `decoded` (scaled bilinearly to `rw`×`rh`) against `reference`, rows
/// from `skip_rows` down; `None` if a plane is too short or empty.
#[allow(clippy::too_many_arguments)]
pub fn psnr_scaled(
    reference: &[u8],
    rw: usize,
    rh: usize,
    skip_rows: usize,
    decoded: &[u8],
    stride: usize,
    dw: usize,
    dh: usize,
) -> Option<f64> {
    if dw == 0 || dh == 0 || rw == 0 || rh <= skip_rows || stride < dw {
        return None;
    }
    if reference.len() < rw * rh || decoded.len() < (dh - 1) * stride + dw {
        return None;
    }
    // Source coordinates of each reference column: (index, weight of the next sample) × 256.
    let map = |n_out: usize, n_in: usize| -> Vec<(usize, u32)> {
        (0..n_out)
            .map(|o| {
                let x = ((o as f64 + 0.5) * n_in as f64 / n_out as f64 - 0.5).max(0.0);
                let i = (x as usize).min(n_in - 1);
                let f = if i + 1 < n_in {
                    ((x - i as f64) * 256.0) as u32
                } else {
                    0
                };
                (i, f)
            })
            .collect()
    };
    let cols = map(rw, dw);
    let rows = map(rh, dh);
    let mut sse = 0u64;
    for (y, &(iy, fy)) in rows.iter().enumerate().skip(skip_rows) {
        let r0 = &decoded[iy * stride..iy * stride + dw];
        let r1 = if fy > 0 {
            &decoded[(iy + 1) * stride..(iy + 1) * stride + dw]
        } else {
            r0
        };
        let reference_row = &reference[y * rw..(y + 1) * rw];
        for (&want, &(ix, fx)) in reference_row.iter().zip(&cols) {
            let ix1 = if fx > 0 { ix + 1 } else { ix };
            let top = u32::from(r0[ix]) * (256 - fx) + u32::from(r0[ix1]) * fx;
            let bottom = u32::from(r1[ix]) * (256 - fx) + u32::from(r1[ix1]) * fx;
            let v = (top * (256 - fy) + bottom * fy + (1 << 15)) >> 16;
            let d = i64::from(want) - i64::from(v);
            sse += (d * d) as u64;
        }
    }
    let n = ((rh - skip_rows) * rw) as f64;
    let mse = sse as f64 / n;
    Some(if mse == 0.0 {
        PSNR_IDENTICAL_DB
    } else {
        (10.0 * (255.0 * 255.0 / mse).log10()).min(PSNR_IDENTICAL_DB)
    })
}

/// Picture quality over the last pictures scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualitySummary {
    /// Mean luma PSNR over the window, dB.
    pub psnr_mean_db: f64,
    /// Its 5th percentile (the worst pictures), dB.
    pub psnr_p5_db: f64,
    /// Pictures scored since the start.
    pub scored: u64,
    /// Decoded pictures whose stamp could not be read (not scored).
    pub unread: u64,
    /// Pictures not scored because the scorer was still busy with an earlier one.
    pub skipped: u64,
}

/// Scores over a window of recent pictures.
#[derive(Debug, Clone, Default)]
pub struct QualityWindow {
    scores: VecDeque<f64>,
    /// Pictures scored in all.
    pub scored: u64,
    /// Decoded pictures whose stamp could not be read.
    pub unread: u64,
    /// Pictures not scored because the scorer was busy.
    pub skipped: u64,
}

/// Scores kept for the window's statistics.
const WINDOW: usize = 256;

impl QualityWindow {
    /// Adds a score.
    pub fn push(&mut self, psnr_db: f64) {
        if self.scores.len() >= WINDOW {
            self.scores.pop_front();
        }
        self.scores.push_back(psnr_db);
        self.scored += 1;
    }

    /// Mean PSNR over the window (`None` before the first score).
    pub fn mean(&self) -> Option<f64> {
        (!self.scores.is_empty())
            .then(|| self.scores.iter().sum::<f64>() / self.scores.len() as f64)
    }

    /// The window's summary; `None` before the first score.
    pub fn summary(&self) -> Option<QualitySummary> {
        Some(QualitySummary {
            psnr_mean_db: self.mean()?,
            psnr_p5_db: self.p5()?,
            scored: self.scored,
            unread: self.unread,
            skipped: self.skipped,
        })
    }

    /// The 5th percentile (the worst pictures) over the window.
    pub fn p5(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.scores.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() * 5 / 100).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_spec_parses_and_rejects_nonsense() {
        let s: ReferenceSpec = "camera:1280x720@30".parse().unwrap();
        assert_eq!(
            (s.pattern, s.width, s.height, s.frame_rate),
            (TestPattern::Camera, 1280, 720, 30)
        );
        assert_eq!(
            "game:640x360@60".parse::<ReferenceSpec>().unwrap().pattern,
            TestPattern::Game
        );
        for bad in [
            "",
            "camera",
            "ball:640x360@30",
            "camera:640x360",
            "camera:641x360@30",
            "camera:0x360@30",
            "camera:640x360@0",
            "camera:99999x360@30",
        ] {
            assert!(bad.parse::<ReferenceSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn psnr_is_the_cap_for_the_source_itself_and_falls_with_the_error() {
        let spec: ReferenceSpec = "camera:320x180@30".parse().unwrap();
        let mut r = Reference::new(spec).unwrap();
        let source = r.picture(5)[..320 * 180].to_vec();
        assert_eq!(r.psnr(5, &source, 320, 320, 180), Some(PSNR_IDENTICAL_DB));
        // Every pixel off by 4: MSE 16, 36.1 dB.
        let off: Vec<u8> = source.iter().map(|&v| v.saturating_add(4)).collect();
        let p = r.psnr(5, &off, 320, 320, 180).unwrap();
        assert!((p - 36.09).abs() < 0.3, "{p}");
        // Another frame of the same moving picture scores far lower.
        let other = r.picture(40)[..320 * 180].to_vec();
        let wrong = r.psnr(5, &other, 320, 320, 180).unwrap();
        assert!(wrong < 25.0, "{wrong}");
        // Asking for an earlier frame again restarts the generator and gives the same picture.
        assert_eq!(r.psnr(5, &source, 320, 320, 180), Some(PSNR_IDENTICAL_DB));
    }

    #[test]
    fn the_scorer_matches_a_picture_to_its_source_by_its_stamp() {
        let spec: ReferenceSpec = "camera:320x180@30".parse().unwrap();
        let mut source = Reference::new(spec).unwrap().picture(7).to_vec();
        Stamp {
            frame: 7,
            wall_ms: 1,
        }
        .draw(&mut source, 320, 180);
        let stamped = Picture {
            luma: source[..320 * 180].to_vec(),
            stride: 320,
            width: 320,
            height: 180,
        };
        let scorer = Scorer::spawn(spec).unwrap();
        let ask = |p: Picture| {
            let (tx, rx) = std::sync::mpsc::channel();
            scorer.try_score(p, move |s| tx.send(s).unwrap()).unwrap();
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap()
        };
        let score = ask(stamped.clone()).unwrap();
        assert_eq!((score.frame, score.psnr_db), (7, PSNR_IDENTICAL_DB));
        // Named as another frame, the same picture scores far lower.
        let mut renamed = source.clone();
        Stamp {
            frame: 40,
            wall_ms: 1,
        }
        .draw(&mut renamed, 320, 180);
        let wrong = ask(Picture {
            luma: renamed[..320 * 180].to_vec(),
            ..stamped.clone()
        })
        .unwrap();
        assert_eq!(wrong.frame, 40);
        assert!(wrong.psnr_db < 25.0, "{}", wrong.psnr_db);
        // No stamp: no score.
        let mut bare = stamped;
        bare.luma[..320 * 12].fill(16);
        assert_eq!(ask(bare), None);
    }

    #[test]
    fn only_a_stamped_synthetic_source_is_a_reference() {
        let mut c = crate::EncoderConfig {
            source: crate::SourceConfig::TestPattern {
                pattern: TestPattern::Game,
            },
            width: 640,
            height: 360,
            frame_rate: 60,
            stamp: true,
            ..crate::EncoderConfig::default()
        };
        assert_eq!(c.reference(), Some("game:640x360@60".parse().unwrap()));
        c.stamp = false;
        assert_eq!(c.reference(), None);
        c.stamp = true;
        c.source = crate::SourceConfig::TestPattern {
            pattern: TestPattern::MovingZonePlate,
        };
        assert_eq!(c.reference(), None);
    }

    #[test]
    fn a_half_size_picture_is_scored_scaled_up_to_the_source() {
        let spec: ReferenceSpec = "game:320x180@30".parse().unwrap();
        let mut r = Reference::new(spec).unwrap();
        let source = r.picture(3)[..320 * 180].to_vec();
        // Half size by 2×2 averages.
        let half: Vec<u8> = (0..90)
            .flat_map(|y| {
                let s = &source;
                (0..160).map(move |x| {
                    let a = |yy: usize, xx: usize| u32::from(s[yy * 320 + xx]);
                    ((a(2 * y, 2 * x)
                        + a(2 * y, 2 * x + 1)
                        + a(2 * y + 1, 2 * x)
                        + a(2 * y + 1, 2 * x + 1)
                        + 2)
                        / 4) as u8
                })
            })
            .collect();
        let p = r.psnr(3, &half, 160, 160, 90).unwrap();
        // Detail is lost but the picture is the same one.
        assert!(p > 20.0 && p < 60.0, "{p}");
        // Short or odd planes give none, never a panic.
        assert_eq!(r.psnr(3, &half[..100], 160, 160, 90), None);
        assert_eq!(r.psnr(3, &half, 100, 160, 90), None);
        assert_eq!(
            psnr_scaled(&source, 320, 180, 180, &half, 160, 160, 90),
            None
        );
    }

    #[test]
    fn the_window_reports_mean_and_worst_and_nothing_when_empty() {
        let mut w = QualityWindow::default();
        assert_eq!((w.mean(), w.p5()), (None, None));
        for i in 0..100 {
            w.push(f64::from(i));
        }
        assert_eq!(w.mean(), Some(49.5));
        assert_eq!(w.p5(), Some(5.0));
        assert_eq!(w.scored, 100);
    }
}
