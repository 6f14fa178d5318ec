//! A code drawn into the top-left corner of each source picture, read back from the shown one.
//!
//! It carries the source frame number and the wall-clock time the picture was made, so that a
//! viewer — cg-recv or a browser page reading a canvas — can match a shown picture to the
//! source picture it came from (picture quality against the source) and time it from glass to
//! glass without any help from the transport.
//!
//! Layout: three rows of 32 square cells, each cell `width / 80` pixels, black (luma 16) for 0
//! and white (luma 235) for 1, most significant bit first; chroma is neutral under the code.
//! Row 0 is the frame number, row 1 the low 32 bits of the Unix time in ms, row 2 a check word
//! (`frame ^ wall_ms ^ CHECK`), so a misread code is rejected rather than misread. Cells are
//! sized by the picture's width, so the code survives scaling to any coded size; a reader samples
//! the middle half of each cell and takes the midpoint between the levels as the threshold.

use std::time::{SystemTime, UNIX_EPOCH};

/// Cells per row.
const BITS: usize = 32;
/// Rows: frame number, wall-clock ms, check word.
const ROWS: usize = 3;
/// Cells across a whole picture's width (a cell is `width / CELLS_ACROSS` pixels).
const CELLS_ACROSS: f64 = 80.0;
const CHECK: u32 = 0x5a5a_a5a5;
const BLACK: u8 = 16;
const WHITE: u8 = 235;
const THRESHOLD: u32 = (BLACK as u32 + WHITE as u32) / 2;

/// What the code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Source frame number (0 for the first picture the source made).
    pub frame: u32,
    /// Unix time in ms when the picture was made, low 32 bits (wraps every 49.7 days; compare
    /// with [`Stamp::age_ms`]).
    pub wall_ms: u32,
}

impl Stamp {
    /// Frame `frame`, made now.
    pub fn now(frame: u32) -> Stamp {
        Stamp {
            frame,
            wall_ms: wall_ms_now(),
        }
    }

    /// Milliseconds from the picture's making to `now_wall_ms` (wrapping).
    pub fn age_ms(&self, now_wall_ms: u32) -> u32 {
        now_wall_ms.wrapping_sub(self.wall_ms)
    }

    fn words(&self) -> [u32; ROWS] {
        [self.frame, self.wall_ms, self.frame ^ self.wall_ms ^ CHECK]
    }

    /// Draws the code into an I420 picture of `width`×`height` (planes packed, no padding).
    /// Does nothing if the buffer is smaller than such a picture.
    pub fn draw(&self, i420: &mut [u8], width: usize, height: usize) {
        let (cw, ch) = (width.div_ceil(2), height.div_ceil(2));
        if i420.len() < width * height + 2 * cw * ch {
            return;
        }
        let (y_plane, uv) = i420.split_at_mut(width * height);
        let (u_plane, v_plane) = uv.split_at_mut(cw * ch);
        let edge = |i: usize| ((i as f64 * width as f64 / CELLS_ACROSS) as usize).min(width);
        let rows_end = edge(ROWS).min(height);
        for (r, word) in self.words().into_iter().enumerate() {
            let (y0, y1) = (edge(r).min(height), edge(r + 1).min(height));
            for bit in 0..BITS {
                let level = if word >> (BITS - 1 - bit) & 1 == 1 {
                    WHITE
                } else {
                    BLACK
                };
                let (x0, x1) = (edge(bit), edge(bit + 1));
                for y in y0..y1 {
                    y_plane[y * width + x0..y * width + x1].fill(level);
                }
            }
        }
        let x_end = edge(BITS);
        for y in 0..rows_end.div_ceil(2).min(ch) {
            let row = y * cw..y * cw + x_end.div_ceil(2).min(cw);
            u_plane[row.clone()].fill(128);
            v_plane[row].fill(128);
        }
    }

    /// Reads the code from a luma plane (`stride` bytes a row); `None` when there is none or
    /// it does not check.
    pub fn read(luma: &[u8], stride: usize, width: usize, height: usize) -> Option<Stamp> {
        let cell = width as f64 / CELLS_ACROSS;
        if cell < 2.0 || (ROWS as f64 * cell) as usize > height || stride < width {
            return None;
        }
        let mut words = [0u32; ROWS];
        for (r, word) in words.iter_mut().enumerate() {
            for bit in 0..BITS {
                // The middle half of the cell, at least one pixel.
                let (x0, x1) = middle(bit, cell);
                let (y0, y1) = middle(r, cell);
                let (mut sum, mut n) = (0u32, 0u32);
                for y in y0..y1 {
                    let row = luma.get(y * stride + x0..y * stride + x1)?;
                    sum += row.iter().map(|&v| u32::from(v)).sum::<u32>();
                    n += row.len() as u32;
                }
                let one = n > 0 && sum > THRESHOLD * n;
                *word = *word << 1 | u32::from(one);
            }
        }
        let stamp = Stamp {
            frame: words[0],
            wall_ms: words[1],
        };
        (words[2] == stamp.words()[2]).then_some(stamp)
    }

    /// Rows at the top of a `width`-wide picture that the code covers (left out of picture
    /// quality scores).
    pub fn band_height(width: usize) -> usize {
        (ROWS as f64 * width as f64 / CELLS_ACROSS).ceil() as usize
    }
}

/// The middle half of cell `i` of side `cell`, as a pixel range of at least one pixel.
fn middle(i: usize, cell: f64) -> (usize, usize) {
    let start = ((i as f64 + 0.25) * cell).round() as usize;
    let end = (((i as f64 + 0.75) * cell).round() as usize).max(start + 1);
    (start, end)
}

/// The Unix time in ms, low 32 bits (0 if the clock is before 1970).
pub fn wall_ms_now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(w: usize, h: usize, fill: u8) -> Vec<u8> {
        vec![fill; w * h + 2 * w.div_ceil(2) * h.div_ceil(2)]
    }

    /// Box-filter downscale of a luma plane (what a scaler does, roughly).
    fn downscale(luma: &[u8], w: usize, h: usize, dw: usize, dh: usize) -> Vec<u8> {
        let mut out = vec![0u8; dw * dh];
        for oy in 0..dh {
            for ox in 0..dw {
                let (x0, x1) = (ox * w / dw, ((ox + 1) * w / dw).max(ox * w / dw + 1));
                let (y0, y1) = (oy * h / dh, ((oy + 1) * h / dh).max(oy * h / dh + 1));
                let mut s = 0u32;
                for y in y0..y1 {
                    for x in x0..x1 {
                        s += u32::from(luma[y * w + x]);
                    }
                }
                out[oy * dw + ox] = (s / ((x1 - x0) * (y1 - y0)) as u32) as u8;
            }
        }
        out
    }

    #[test]
    fn a_stamp_reads_back_at_every_coded_size_and_through_noise() {
        let stamp = Stamp {
            frame: 0x00ab_cdef,
            wall_ms: 0xdead_beef,
        };
        let (w, h) = (1280, 720);
        let mut p = picture(w, h, 128);
        stamp.draw(&mut p, w, h);
        assert_eq!(Stamp::read(&p, w, w, h), Some(stamp));
        for (dw, dh) in [(960, 540), (640, 360), (480, 270), (320, 180)] {
            let mut small = downscale(&p[..w * h], w, h, dw, dh);
            // Coding noise of ±40 levels does not flip a cell.
            for (i, v) in small.iter_mut().enumerate() {
                *v = v.saturating_add_signed(((i * 7919 % 81) as i32 - 40) as i8);
            }
            assert_eq!(Stamp::read(&small, dw, dw, dh), Some(stamp), "{dw}×{dh}");
        }
    }

    #[test]
    fn a_picture_without_a_code_or_with_a_broken_one_reads_none() {
        let (w, h) = (640, 360);
        assert_eq!(Stamp::read(&picture(w, h, 128), w, w, h), None);
        assert_eq!(Stamp::read(&picture(w, h, 16), w, w, h), None);
        let mut p = picture(w, h, 128);
        Stamp::now(7).draw(&mut p, w, h);
        // One cell of the frame number flipped (bit 0 of row 0: x 0–7, y 0–7).
        for y in 0..8 {
            for x in 0..8 {
                p[y * w + x] = 235 - (p[y * w + x] - 16);
            }
        }
        assert_eq!(Stamp::read(&p, w, w, h), None);
        // Too small a picture, a short buffer, a stride under the width: none, no panic.
        assert_eq!(Stamp::read(&p, w, 100, 2), None);
        assert_eq!(Stamp::read(&p[..100], w, w, h), None);
        assert_eq!(Stamp::read(&p, 10, w, h), None);
        Stamp::now(1).draw(&mut p[..100], w, h);
    }

    #[test]
    fn the_code_leaves_the_rest_of_the_picture_alone() {
        let (w, h) = (1280, 720);
        let mut p = picture(w, h, 100);
        Stamp::now(3).draw(&mut p, w, h);
        let band = Stamp::band_height(w);
        assert_eq!(band, 48);
        assert!(p[band * w..w * h].iter().all(|&v| v == 100));
        assert!(p[..band * w].iter().any(|&v| v == WHITE || v == BLACK));
        assert_eq!(
            Stamp {
                frame: 0,
                wall_ms: u32::MAX - 5
            }
            .age_ms(10),
            16
        );
    }
}
