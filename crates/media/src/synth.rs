//! Hard test pictures drawn in-process: [`TestPattern::Camera`](crate::TestPattern::Camera)
//! and [`TestPattern::Game`](crate::TestPattern::Game).
//!
//! `videotestsrc`'s pictures are either too easy or too odd to judge a rate controller on
//! (see [`TestPattern`](crate::TestPattern)): nothing in it looks like what a camera or a game
//! renderer delivers. These two are built to stress an encoder the way real content does,
//! deterministically (a seeded [`Rng`], no file to fetch), and cheaply enough to run beside a
//! 720p encoder on a 2-core machine (cheaper than videotestsrc's zone plate; `cargo bench -p
//! cg-media --bench per_frame -- draw`, figures in `docs/notes/2026-12-01-figures-from-docs.md`):
//!
//! - **camera**: a natural scene — a dead-leaves picture (occluding discs with a power law
//!   of sizes, which gives natural images' 1/f spectrum and their sharp edges) with surface
//!   texture of 1/f value noise — seen by a hand-held camera: panning 4 pixels a frame with
//!   a slow sub-pixel sway and a ±3 % breathing zoom (motion that block-based prediction
//!   follows only approximately), plus Gaussian sensor noise of σ = 2 luma levels (σ = 1 in
//!   chroma), fresh every frame. At 1280×720 VP8 (speed 6, quantizer ≤ 63) cannot code it
//!   at the lowest targets, and after such a stretch libvpx undershoots while it repays its
//!   buffer debt.
//! - **game**: rendered content with fast motion — a textured backdrop scrolling 8–24
//!   pixels a frame in a direction that changes with each scene, a dozen sharp-edged sprites
//!   moving faster still, a heads-up display whose counters change every frame, and a
//!   **scene cut every 4 s** (another backdrop, tint and direction), which no encoder
//!   predicts: the frame after a cut costs about as much as a key frame. No sensor noise.
//!
//! The generator is a plain struct ([`SyntheticVideo`]): `next_frame` writes the next I420
//! frame; the source module runs it in a thread behind an `appsrc`, like a file.

use cg_types::Rng;

use crate::TestPattern;

/// Texture size (power-of-two wrap, so panning never reaches an edge).
const TEX_W: usize = 2048;
const TEX_H: usize = 1024;
/// Octaves of value noise: cell sizes 2, 4, … 256 pixels.
const OCTAVES: u32 = 8;
/// Amplitude of an octave ∝ cell size^`SLOPE`. 0 gives every octave the same power: a 1/f
/// amplitude spectrum in two dimensions (power per octave band ∝ ∫ f⁻² · 2πf df = const),
/// the average of natural images (van der Schaaf & van Hateren 1996: exponent 0.94 ± 0.2).
const SLOPE: f32 = 0.0;
/// Sensor noise in luma levels (σ); chroma gets every other sample of it, halved (σ = 1).
const CAMERA_NOISE_Y: f64 = 2.0;
/// Camera pan: pixels a frame; sway amplitudes in pixels (vertical, horizontal) and periods
/// in frames. The sway makes the motion sub-pixel, as a hand-held camera's is: the encoder's
/// motion search finds it, but its interpolation filters do not reproduce the camera's.
const CAMERA_PAN: f64 = 4.0;
const CAMERA_SWAY: (f64, f64) = (24.0, 6.0);
const CAMERA_SWAY_PERIOD: (f64, f64) = (150.0, 110.0);
/// Camera zoom: relative amplitude and period in frames (±3 % over 200 frames: at most
/// 0.1 % a frame, 0.6 pixel at the edge of a 1280-pixel picture).
const CAMERA_ZOOM: (f64, f64) = (0.03, 200.0);
/// Game: frames per scene at the nominal rate (4 s at 30 fps), backdrops, sprites.
const GAME_SCENE_SECONDS: f64 = 4.0;
const GAME_BACKDROPS: usize = 3;
const GAME_SPRITES: usize = 12;

/// A deterministic generator of I420 frames for the synthetic patterns.
#[derive(Debug)]
pub struct SyntheticVideo {
    width: usize,
    height: usize,
    frame_rate: f64,
    kind: Kind,
    /// Luma textures (TEX_W × TEX_H) and chroma ones (half size, U then V).
    luma: Vec<Vec<u8>>,
    chroma: Vec<(Vec<u8>, Vec<u8>)>,
    /// Precomputed noise, read at a fresh random offset each frame.
    noise: Vec<i8>,
    rng: Rng,
    n: u64,
    scene: Scene,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Camera,
    Game,
}

/// One game scene: which backdrop, where it starts, how it moves, its tint.
#[derive(Debug, Clone)]
struct Scene {
    index: u64,
    backdrop: usize,
    origin: (f64, f64),
    velocity: (f64, f64),
    tint: (i16, i16),
    sprites: Vec<Sprite>,
}

#[derive(Debug, Clone, Copy)]
struct Sprite {
    pos: (f64, f64),
    vel: (f64, f64),
    size: (usize, usize),
    yuv: (u8, u8, u8),
}

impl SyntheticVideo {
    /// A generator for `pattern` at `width`×`height` (even) and `frame_rate`; `None` for the
    /// patterns `videotestsrc` draws. The textures are built here (about 0.1 s in release).
    pub fn new(pattern: TestPattern, width: u32, height: u32, frame_rate: f64) -> Option<Self> {
        let kind = match pattern {
            TestPattern::Camera => Kind::Camera,
            TestPattern::Game => Kind::Game,
            _ => return None,
        };
        let mut rng = Rng::new(match kind {
            Kind::Camera => 0x0ca3_e7a5,
            Kind::Game => 0x6a3e_5eed,
        });
        let textures = match kind {
            Kind::Camera => 1,
            Kind::Game => GAME_BACKDROPS,
        };
        let mut luma = Vec::new();
        let mut chroma = Vec::new();
        for _ in 0..textures {
            luma.push(scene(&mut rng, TEX_W, TEX_H));
            // Colour varies slowly: only the coarse octaves.
            let u = texture(&mut rng, TEX_W / 2, TEX_H / 2, 4, 128.0, 14.0);
            let v = texture(&mut rng, TEX_W / 2, TEX_H / 2, 4, 128.0, 14.0);
            chroma.push((u, v));
        }
        let (width, height) = (width as usize, height as usize);
        let noise = match kind {
            // Two frames' worth, so a random offset always leaves a full frame to read.
            Kind::Camera => (0..2 * width * height + 4096)
                .map(|_| (rng.normal() * CAMERA_NOISE_Y).round().clamp(-127.0, 127.0) as i8)
                .collect(),
            Kind::Game => Vec::new(),
        };
        let scene = Scene::new(0, &mut rng.fork(), width, height);
        Some(SyntheticVideo {
            width,
            height,
            frame_rate: frame_rate.max(1.0),
            kind,
            luma,
            chroma,
            noise,
            rng,
            n: 0,
            scene,
        })
    }

    /// Bytes of one I420 frame.
    pub fn frame_bytes(&self) -> usize {
        self.width * self.height + 2 * (self.width / 2) * (self.height / 2)
    }

    /// Frames made so far (the number of the next one).
    pub fn position(&self) -> u64 {
        self.n
    }

    /// Moves past the next frame without drawing it (the generator's state advances exactly
    /// as [`Self::next_frame`] advances it, at a tiny fraction of its cost).
    pub fn skip_frame(&mut self) {
        self.step();
    }

    /// Advances the state to the next frame — the camera's noise offsets drawn, the game's
    /// scene changed and its sprites moved — and returns that frame's number and the camera's
    /// offsets (luma, U, V). The one place the state moves, for drawing and skipping alike.
    fn step(&mut self) -> (u64, [usize; 3]) {
        let n = self.n;
        let mut noise_at = [0; 3];
        let (w, h) = (self.width, self.height);
        match self.kind {
            Kind::Camera => {
                let span = (self.noise.len() - w * h) as u64;
                for at in &mut noise_at {
                    *at = self.rng.below(span) as usize;
                }
            }
            Kind::Game => {
                let index = n / self.frames_per_scene();
                if index != self.scene.index {
                    self.scene = Scene::new(index, &mut self.rng, w, h);
                }
                for sp in &mut self.scene.sprites {
                    sp.advance(w, h);
                }
            }
        }
        self.n += 1;
        (n, noise_at)
    }

    fn frames_per_scene(&self) -> u64 {
        (GAME_SCENE_SECONDS * self.frame_rate).round().max(1.0) as u64
    }

    /// Draws the next frame into `out` (resized to [`Self::frame_bytes`]).
    pub fn next_frame(&mut self, out: &mut Vec<u8>) {
        let (n, [at_y, at_u, at_v]) = self.step();
        out.resize(self.frame_bytes(), 0);
        let (w, h) = (self.width, self.height);
        let (y_plane, uv) = out.split_at_mut(w * h);
        let (u_plane, v_plane) = uv.split_at_mut((w / 2) * (h / 2));
        match self.kind {
            Kind::Camera => {
                let (ox, oy) = camera_offset(n);
                let zoom = camera_zoom(n);
                sample_wrapped(y_plane, w, h, &self.luma[0], TEX_W, TEX_H, (ox, oy), zoom);
                let (u, v) = &self.chroma[0];
                let (cw, ch) = (w / 2, h / 2);
                let c = (ox / 2.0, oy / 2.0);
                sample_wrapped(u_plane, cw, ch, u, TEX_W / 2, TEX_H / 2, c, zoom);
                sample_wrapped(v_plane, cw, ch, v, TEX_W / 2, TEX_H / 2, c, zoom);
                add_noise(y_plane, &self.noise[at_y..at_y + w * h], 1);
                // Chroma noise at half the luma σ: every other sample, halved.
                add_noise(u_plane, &self.noise[at_u..], 2);
                add_noise(v_plane, &self.noise[at_v..], 2);
            }
            Kind::Game => {
                let t = (n % self.frames_per_scene()) as f64;
                let s = &self.scene;
                let ox = (s.origin.0 + s.velocity.0 * t).rem_euclid(TEX_W as f64) as usize;
                let oy = (s.origin.1 + s.velocity.1 * t).rem_euclid(TEX_H as f64) as usize;
                copy_wrapped(y_plane, w, h, &self.luma[s.backdrop], TEX_W, TEX_H, ox, oy);
                let (u, v) = &self.chroma[s.backdrop];
                for (plane, tex) in [(&mut *u_plane, u), (&mut *v_plane, v)] {
                    let (cw, ch, cx, cy) = (w / 2, h / 2, ox / 2, oy / 2);
                    copy_wrapped(plane, cw, ch, tex, TEX_W / 2, TEX_H / 2, cx, cy);
                }
                tint(u_plane, s.tint.0);
                tint(v_plane, s.tint.1);
                for sp in &s.sprites {
                    fill_rect(y_plane, u_plane, v_plane, w, h, sp.rect(), sp.yuv);
                }
                draw_hud(y_plane, u_plane, v_plane, w, h, n);
            }
        }
    }
}

impl Scene {
    fn new(index: u64, rng: &mut Rng, w: usize, h: usize) -> Scene {
        let speed = 8.0 + 16.0 * rng.next_f64();
        let angle = 2.0 * std::f64::consts::PI * rng.next_f64();
        let scale = (w.min(h) as f64 / 720.0).max(0.1);
        let sprites = (0..GAME_SPRITES)
            .map(|_| {
                let size = (
                    ((24.0 + 96.0 * rng.next_f64()) * scale) as usize + 2,
                    ((24.0 + 96.0 * rng.next_f64()) * scale) as usize + 2,
                );
                let v = 10.0 + 30.0 * rng.next_f64();
                let a = 2.0 * std::f64::consts::PI * rng.next_f64();
                Sprite {
                    pos: (rng.next_f64() * w as f64, rng.next_f64() * h as f64),
                    vel: (v * a.cos() * scale, v * a.sin() * scale),
                    size,
                    yuv: (
                        (16 + rng.below(220)) as u8,
                        (16 + rng.below(224)) as u8,
                        (16 + rng.below(224)) as u8,
                    ),
                }
            })
            .collect();
        Scene {
            index,
            backdrop: rng.below(GAME_BACKDROPS as u64) as usize,
            origin: (rng.next_f64() * TEX_W as f64, rng.next_f64() * TEX_H as f64),
            velocity: (speed * angle.cos(), 0.5 * speed * angle.sin()),
            tint: (rng.below(41) as i16 - 20, rng.below(41) as i16 - 20),
            sprites,
        }
    }
}

impl Sprite {
    /// Moves one frame, bouncing off the picture's edges.
    fn advance(&mut self, w: usize, h: usize) {
        for (p, v, lim) in [
            (
                &mut self.pos.0,
                &mut self.vel.0,
                (w.saturating_sub(self.size.0)) as f64,
            ),
            (
                &mut self.pos.1,
                &mut self.vel.1,
                (h.saturating_sub(self.size.1)) as f64,
            ),
        ] {
            *p += *v;
            if *p < 0.0 {
                *p = -*p;
                *v = -*v;
            }
            if *p > lim {
                *p = (2.0 * lim - *p).max(0.0);
                *v = -*v;
            }
        }
    }

    fn rect(&self) -> (usize, usize, usize, usize) {
        (
            self.pos.0.max(0.0) as usize,
            self.pos.1.max(0.0) as usize,
            self.size.0,
            self.size.1,
        )
    }
}

/// A `w`×`h` texture of value noise over [`OCTAVES`] octaves from cell size `2^first`,
/// amplitude ∝ cell size^[`SLOPE`] (a 1/f spectrum), scaled to `mean` ± `std` and clamped to the
/// video range 16–235. Periodic in both directions (`w`, `h` multiples of 256).
fn texture(rng: &mut Rng, w: usize, h: usize, first: u32, mean: f64, std: f64) -> Vec<u8> {
    let mut acc = vec![0f32; w * h];
    for octave in first..=OCTAVES {
        let cell = 1usize << octave;
        let (gw, gh) = ((w / cell).max(1), (h / cell).max(1));
        let grid: Vec<f32> = (0..gw * gh).map(|_| rng.next_f64() as f32 - 0.5).collect();
        let amp = (cell as f32).powf(SLOPE);
        for y in 0..h {
            let gy = y / cell;
            let fy = smooth((y % cell) as f32 / cell as f32);
            let (r0, r1) = (gy % gh * gw, (gy + 1) % gh * gw);
            let row = &mut acc[y * w..(y + 1) * w];
            for (x, a) in row.iter_mut().enumerate() {
                let gx = x / cell;
                let fx = smooth((x % cell) as f32 / cell as f32);
                let (c0, c1) = (gx % gw, (gx + 1) % gw);
                let top = grid[r0 + c0] + (grid[r0 + c1] - grid[r0 + c0]) * fx;
                let bottom = grid[r1 + c0] + (grid[r1 + c1] - grid[r1 + c0]) * fx;
                *a += amp * (top + (bottom - top) * fy);
            }
        }
    }
    let n = acc.len() as f64;
    let m = acc.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = acc.iter().map(|&v| (f64::from(v) - m).powi(2)).sum::<f64>() / n;
    let k = std / var.sqrt().max(1e-9);
    acc.iter()
        .map(|&v| (mean + (f64::from(v) - m) * k).round().clamp(16.0, 235.0) as u8)
        .collect()
}

/// A natural-looking luma texture: a dead-leaves picture (Matheron 1968; Lee, Mumford &
/// Huang 2001: occluding objects whose sizes follow a power law reproduce natural images'
/// 1/f spectrum *and* their sharp edges) of discs with radii 2–200 pixels (density ∝ r⁻³),
/// each with its own grey level, and surface texture from [`texture`] on top (a third of
/// the contrast).
fn scene(rng: &mut Rng, w: usize, h: usize) -> Vec<u8> {
    let (rmin, rmax) = (2.0f64, 200.0f64);
    let mut leaves = vec![128u8; w * h];
    // Enough discs to cover the picture about five times (mean disc area
    // 2π·rmin²·ln(rmax/rmin) for this size law).
    let mean_area = 2.0 * std::f64::consts::PI * rmin * rmin * (rmax / rmin).ln();
    let count = (5.0 * (w * h) as f64 / mean_area) as usize;
    let (a, b) = (rmin.powi(-2), rmax.powi(-2));
    for _ in 0..count {
        let r = (a - rng.next_f64() * (a - b)).powf(-0.5);
        let (cx, cy) = (rng.next_f64() * w as f64, rng.next_f64() * h as f64);
        let grey = (40 + rng.below(176)) as u8;
        let ri = r.ceil() as isize;
        for dy in -ri..=ri {
            let half = (r * r - (dy * dy) as f64).max(0.0).sqrt() as isize;
            let y = (cy as isize + dy).rem_euclid(h as isize) as usize;
            let row = &mut leaves[y * w..(y + 1) * w];
            for dx in -half..=half {
                row[(cx as isize + dx).rem_euclid(w as isize) as usize] = grey;
            }
        }
    }
    let surface = texture(rng, w, h, 1, 128.0, 14.0);
    leaves
        .iter()
        .zip(&surface)
        .map(|(&l, &s)| (i16::from(l) + i16::from(s) - 128).clamp(16, 235) as u8)
        .collect()
}

/// Smoothstep, so value noise has no creases along the grid.
fn smooth(t: f32) -> f32 {
    t * t * (3.0 - 2.0 * t)
}

/// Where the camera looks in frame `n`: the texture position of the picture's top left.
fn camera_offset(n: u64) -> (f64, f64) {
    let n = n as f64;
    let sway = |a: f64, period: f64| a * (1.0 + (2.0 * std::f64::consts::PI * n / period).sin());
    (
        CAMERA_PAN * n + sway(CAMERA_SWAY.1, CAMERA_SWAY_PERIOD.1),
        sway(CAMERA_SWAY.0, CAMERA_SWAY_PERIOD.0),
    )
}

/// The camera's magnification in frame `n`: a slow breathing zoom (a hand-held camera moving
/// to and fro), which block-translation motion compensation predicts only approximately.
fn camera_zoom(n: u64) -> f64 {
    1.0 + CAMERA_ZOOM.0 * (2.0 * std::f64::consts::PI * n as f64 / CAMERA_ZOOM.1).sin()
}

/// Samples a `w`×`h` window of a `tw`×`th` texture (powers of two) that wraps around,
/// bilinearly (8-bit weights): its top left at the sub-pixel position (`ox`, `oy`), magnified
/// by `zoom` about its centre.
#[allow(clippy::too_many_arguments)]
fn sample_wrapped(
    dst: &mut [u8],
    w: usize,
    h: usize,
    tex: &[u8],
    tw: usize,
    th: usize,
    (ox, oy): (f64, f64),
    zoom: f64,
) {
    debug_assert!(tw.is_power_of_two() && th.is_power_of_two());
    // Texture position of each column and row: integer part (wrapped) and 8-bit fraction.
    let axis = |n: usize, origin: f64, size: usize| -> Vec<(usize, usize, u32)> {
        let centre = n as f64 / 2.0;
        (0..n)
            .map(|i| {
                let p = origin + centre + (i as f64 - centre) / zoom;
                let f = p.floor();
                let i0 = (f as i64).rem_euclid(size as i64) as usize;
                (i0, (i0 + 1) & (size - 1), ((p - f) * 256.0) as u32)
            })
            .collect()
    };
    let cols = axis(w, ox, tw);
    let rows = axis(h, oy, th);
    // Separable, and exact (no rounding between the passes): first the two texture rows
    // mixed vertically over the whole width (contiguous, so the compiler vectorises it), then
    // two samples of that mix per pixel instead of four of the texture. The source is made on
    // the sender's cores, beside the encoder it feeds, so what it costs the encoder lacks.
    let mut mix = vec![0u16; tw];
    for (row, &(y0, y1, fy)) in dst.chunks_exact_mut(w).zip(&rows) {
        let r0 = &tex[y0 * tw..][..tw];
        let r1 = &tex[y1 * tw..][..tw];
        let (wy0, wy1) = ((256 - fy) as u16, fy as u16);
        for ((m, &a), &b) in mix.iter_mut().zip(r0).zip(r1) {
            *m = u16::from(a) * wy0 + u16::from(b) * wy1;
        }
        for (out, &(c0, c1, fx)) in row.iter_mut().zip(&cols) {
            let v = u32::from(mix[c0]) * (256 - fx) + u32::from(mix[c1]) * fx;
            *out = ((v + (1 << 15)) >> 16) as u8;
        }
    }
}

/// Copies a `w`×`h` window at (`ox`, `oy`) of a `tw`×`th` texture that wraps around.
#[allow(clippy::too_many_arguments)]
fn copy_wrapped(
    dst: &mut [u8],
    w: usize,
    h: usize,
    tex: &[u8],
    tw: usize,
    th: usize,
    ox: usize,
    oy: usize,
) {
    let ox = ox % tw;
    for (y, row) in dst.chunks_exact_mut(w).take(h).enumerate() {
        let src = &tex[(oy + y) % th * tw..][..tw];
        let mut x = 0;
        while x < w {
            let from = (ox + x) % tw;
            let n = (tw - from).min(w - x);
            row[x..x + n].copy_from_slice(&src[from..from + n]);
            x += n;
        }
    }
}

/// Adds every `step`-th noise sample (divided by `step`) to `plane`, saturating.
fn add_noise(plane: &mut [u8], noise: &[i8], step: usize) {
    for (p, &n) in plane.iter_mut().zip(noise.iter().step_by(step)) {
        let d = n / step as i8;
        *p = p.saturating_add_signed(d);
    }
}

fn tint(plane: &mut [u8], by: i16) {
    let by = by.clamp(-127, 127) as i8;
    for p in plane {
        *p = p.saturating_add_signed(by);
    }
}

/// Fills a rectangle (clipped to the picture) with a flat colour in all three planes.
fn fill_rect(
    y_plane: &mut [u8],
    u_plane: &mut [u8],
    v_plane: &mut [u8],
    w: usize,
    h: usize,
    (x0, y0, rw, rh): (usize, usize, usize, usize),
    (yy, uu, vv): (u8, u8, u8),
) {
    let (x1, y1) = ((x0 + rw).min(w), (y0 + rh).min(h));
    if x0 >= x1 || y0 >= y1 {
        return;
    }
    for y in y0..y1 {
        y_plane[y * w + x0..y * w + x1].fill(yy);
    }
    let cw = w / 2;
    for y in y0 / 2..y1.div_ceil(2).min(h / 2) {
        let (a, b) = (x0 / 2, x1.div_ceil(2).min(cw));
        u_plane[y * cw + a..y * cw + b].fill(uu);
        v_plane[y * cw + a..y * cw + b].fill(vv);
    }
}

/// A heads-up display: a dark bar along the top with blocky digits of a counter that changes
/// every frame (a timer) and a health bar — sharp edges and small changing detail.
fn draw_hud(
    y_plane: &mut [u8],
    u_plane: &mut [u8],
    v_plane: &mut [u8],
    w: usize,
    h: usize,
    n: u64,
) {
    let unit = (h / 120).max(1);
    let bar_h = 10 * unit;
    fill_rect(
        y_plane,
        u_plane,
        v_plane,
        w,
        h,
        (0, 0, w, bar_h),
        (24, 128, 128),
    );
    // Six digits of the frame counter, each a 3×5 grid of blocks (a seven-segment-like font).
    const FONT: [u16; 10] = [
        0o75557, 0o22222, 0o71747, 0o71717, 0o55711, 0o74717, 0o74757, 0o71111, 0o75757, 0o75717,
    ];
    let mut value = n;
    for d in 0..6 {
        let glyph = FONT[(value % 10) as usize];
        value /= 10;
        let gx = w.saturating_sub((d + 1) * 4 * unit + 2 * unit);
        for row in 0..5 {
            for col in 0..3 {
                if glyph >> ((4 - row) * 3 + (2 - col)) & 1 == 1 {
                    let rect = (
                        gx + col * unit,
                        2 * unit + row * unit + unit / 2,
                        unit,
                        unit,
                    );
                    fill_rect(y_plane, u_plane, v_plane, w, h, rect, (235, 128, 128));
                }
            }
        }
    }
    // A health bar whose length follows a slow sine.
    let len = ((0.5 + 0.4 * (n as f64 / 45.0).sin()) * (w / 3) as f64) as usize;
    fill_rect(
        y_plane,
        u_plane,
        v_plane,
        w,
        h,
        (2 * unit, 3 * unit, len, 4 * unit),
        (82, 90, 240),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(p: TestPattern, w: u32, h: u32, n: usize) -> Vec<Vec<u8>> {
        let mut g = SyntheticVideo::new(p, w, h, 30.0).unwrap();
        (0..n)
            .map(|_| {
                let mut f = Vec::new();
                g.next_frame(&mut f);
                f
            })
            .collect()
    }

    fn mean_abs_diff(a: &[u8], b: &[u8]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| f64::from(x.abs_diff(y)))
            .sum::<f64>()
            / a.len() as f64
    }

    #[test]
    fn a_skipped_frame_leaves_the_generator_where_drawing_it_would() {
        for p in [TestPattern::Camera, TestPattern::Game] {
            // Past a game scene cut (120 frames at 30 fps).
            let drawn = frames(p, 160, 96, 130);
            let mut g = SyntheticVideo::new(p, 160, 96, 30.0).unwrap();
            for _ in 0..125 {
                g.skip_frame();
            }
            assert_eq!(g.position(), 125);
            let mut f = Vec::new();
            g.next_frame(&mut f);
            assert_eq!(f, drawn[125], "{p:?}");
        }
    }

    #[test]
    fn only_synthetic_patterns_have_a_generator() {
        assert!(SyntheticVideo::new(TestPattern::Camera, 64, 32, 30.0).is_some());
        assert!(SyntheticVideo::new(TestPattern::Game, 64, 32, 30.0).is_some());
        assert!(SyntheticVideo::new(TestPattern::FaintZonePlate, 64, 32, 30.0).is_none());
    }

    #[test]
    fn the_separable_sampler_gives_the_four_tap_mix_exactly() {
        let (tw, th) = (64usize, 32usize);
        let tex: Vec<u8> = (0..tw * th).map(|i| (i * 7919 % 251) as u8).collect();
        for (origin, zoom) in [
            ((3.3, 5.7), 1.0),
            ((-10.2, 40.9), 1.13),
            ((60.5, 0.25), 0.9),
        ] {
            let (w, h) = (50usize, 20usize);
            let mut fast = vec![0u8; w * h];
            sample_wrapped(&mut fast, w, h, &tex, tw, th, origin, zoom);
            // Each pixel from its four texels, as the definition reads.
            let at = |n: usize, o: f64, size: usize, i: usize| {
                let p = o + n as f64 / 2.0 + (i as f64 - n as f64 / 2.0) / zoom;
                let f = p.floor();
                let i0 = (f as i64).rem_euclid(size as i64) as usize;
                (i0, (i0 + 1) % size, ((p - f) * 256.0) as u32)
            };
            for y in 0..h {
                let (y0, y1, fy) = at(h, origin.1, th, y);
                for x in 0..w {
                    let (x0, x1, fx) = at(w, origin.0, tw, x);
                    let t = |yy: usize, xx: usize| u32::from(tex[yy * tw + xx]);
                    let top = t(y0, x0) * (256 - fx) + t(y0, x1) * fx;
                    let bottom = t(y1, x0) * (256 - fx) + t(y1, x1) * fx;
                    let want = ((top * (256 - fy) + bottom * fy + (1 << 15)) >> 16) as u8;
                    assert_eq!(fast[y * w + x], want, "({x}, {y}) at {origin:?} ×{zoom}");
                }
            }
        }
    }

    #[test]
    fn frames_are_deterministic_and_sized_for_i420() {
        for p in [TestPattern::Camera, TestPattern::Game] {
            let a = frames(p, 320, 180, 3);
            let b = frames(p, 320, 180, 3);
            assert_eq!(a, b, "{p:?}");
            assert_eq!(a[0].len(), 320 * 180 * 3 / 2);
        }
    }

    #[test]
    fn camera_pans_with_fresh_sensor_noise() {
        let (w, h) = (320usize, 180usize);
        let mut g = SyntheticVideo::new(TestPattern::Camera, w as u32, h as u32, 30.0).unwrap();
        let mut noisy = Vec::new();
        g.next_frame(&mut noisy);
        // The same frame without noise: what is left is σ = 2 of sensor noise.
        let mut clean = vec![0u8; w * h];
        let (ox, oy) = camera_offset(0);
        sample_wrapped(
            &mut clean,
            w,
            h,
            &g.luma[0],
            TEX_W,
            TEX_H,
            (ox, oy),
            camera_zoom(0),
        );
        let rms = (noisy[..w * h]
            .iter()
            .zip(&clean)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
            .sum::<f64>()
            / (w * h) as f64)
            .sqrt();
        assert!((1.7..2.3).contains(&rms), "noise rms {rms}");
        // Frame 1 looks about 4 px further right: undoing that leaves far less difference
        // than not undoing it.
        let mut next = Vec::new();
        g.next_frame(&mut next);
        let (dx, dy) = (camera_offset(1).0 - ox, camera_offset(1).1 - oy);
        assert!((3.0..6.0).contains(&dx) && dy.abs() < 2.0, "{dx} {dy}");
        let (sx, sy) = (dx.round() as usize, dy.round().max(0.0) as usize);
        let aligned = (0..h - 2)
            .flat_map(|y| (0..w - 8).map(move |x| (x, y)))
            .map(|(x, y)| f64::from(next[y * w + x].abs_diff(noisy[(y + sy) * w + x + sx])))
            .sum::<f64>()
            / ((h - 2) * (w - 8)) as f64;
        let unaligned = mean_abs_diff(&noisy[..w * h], &next[..w * h]);
        assert!(unaligned > 2.0 * aligned, "{unaligned} vs {aligned}");
    }

    #[test]
    fn camera_texture_has_detail_at_every_scale() {
        // 1/f: neighbouring pixels differ a little, distant ones a lot.
        let t = texture(&mut Rng::new(1), 512, 256, 1, 128.0, 44.0);
        let d = |step: usize| {
            (0..256)
                .flat_map(|y| (0..512 - step).map(move |x| (x, y)))
                .map(|(x, y)| f64::from(t[y * 512 + x].abs_diff(t[y * 512 + x + step])))
                .sum::<f64>()
                / (256.0 * (512 - step) as f64)
        };
        let (d1, d8, d64) = (d(1), d(8), d(64));
        assert!(d1 > 1.0, "fine detail {d1}");
        assert!(d1 < d8 && d8 < d64, "{d1} {d8} {d64}");
    }

    /// The smallest mean difference between `b` and `a` moved by up to ±24 px across and
    /// ±12 px down (what a motion search would find), on a grid of every 4th pixel away
    /// from the edges and the HUD.
    fn best_shift_diff(a: &[u8], b: &[u8], w: usize, h: usize) -> f64 {
        let mut best = f64::MAX;
        for dy in -12isize..=12 {
            for dx in -24isize..=24 {
                let (mut sum, mut n) = (0.0, 0.0);
                for y in (40..h - 16).step_by(4) {
                    for x in (28..w - 28).step_by(4) {
                        let (sx, sy) = ((x as isize + dx) as usize, (y as isize + dy) as usize);
                        sum += f64::from(b[y * w + x].abs_diff(a[sy * w + sx]));
                        n += 1.0;
                    }
                }
                best = best.min(sum / n);
            }
        }
        best
    }

    #[test]
    fn game_cuts_to_a_new_scene_every_four_seconds() {
        let (w, h) = (320, 180);
        let f = frames(TestPattern::Game, w as u32, h as u32, 122);
        // Within a scene the backdrop moves: no shift leaves the frames unchanged, but the
        // best one explains most of the change. Across the cut at frame 120 none does.
        for i in [10, 60, 110] {
            assert!(
                mean_abs_diff(&f[i], &f[i + 1]) > 3.0,
                "frame {i} barely moves"
            );
        }
        let within = [10, 60, 110]
            .iter()
            .map(|&i| best_shift_diff(&f[i], &f[i + 1], w, h))
            .fold(0.0, f64::max);
        let cut = best_shift_diff(&f[119], &f[120], w, h);
        assert!(cut > 3.0 * within, "cut {cut} vs within a scene {within}");
    }
}
