//! Scores a decoded Y4M file against its source with cg's picture-quality metric
//! ([`cg_media::psnr_scaled`]: luma PSNR, the decoded picture scaled up bilinearly to the
//! source size), frame by frame, in the format of ffmpeg's `psnr` filter's `stats_file`, so
//! the two can be set side by side.
//!
//! ```text
//! cargo run --release -p cg-media --example score_y4m -- SOURCE.y4m DECODED.y4m [SKIP_ROWS]
//! ```
//!
//! `SKIP_ROWS` leaves out the top rows (the stamp's band; 0 by default). Prints one line a
//! frame, `n:N psnr_y:DB`, then the mean.

use std::io::{BufRead, BufReader, Read};

/// A Y4M reader of 4:2:0 pictures: their size, and each frame's luma plane in turn.
struct Y4m {
    input: BufReader<std::fs::File>,
    width: usize,
    height: usize,
}

impl Y4m {
    fn open(path: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let mut input = BufReader::new(std::fs::File::open(path)?);
        let mut header = String::new();
        input.read_line(&mut header)?;
        if !header.starts_with("YUV4MPEG2 ") {
            return Err(format!("{path}: not a Y4M file").into());
        }
        let field = |tag: char| {
            header
                .split_whitespace()
                .find_map(|f| f.strip_prefix(tag)?.parse::<usize>().ok())
                .ok_or(format!("{path}: no {tag} in the Y4M header"))
        };
        let (width, height) = (field('W')?, field('H')?);
        if header
            .split_whitespace()
            .any(|f| f.starts_with('C') && !f.starts_with("C420"))
        {
            return Err(format!("{path}: only 4:2:0 pictures are scored").into());
        }
        Ok(Y4m {
            input,
            width,
            height,
        })
    }

    /// The next frame's luma plane; `None` at the end of the file.
    fn next_luma(&mut self) -> Result<Option<Vec<u8>>, Box<dyn std::error::Error>> {
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if !line.starts_with("FRAME") {
            return Err(format!("expected FRAME, read {line:?}").into());
        }
        let (w, h) = (self.width, self.height);
        let mut frame = vec![0; w * h + 2 * w.div_ceil(2) * h.div_ceil(2)];
        self.input.read_exact(&mut frame)?;
        frame.truncate(w * h);
        Ok(Some(frame))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: score_y4m SOURCE.y4m DECODED.y4m [SKIP_ROWS]";
    let (Some(source), Some(decoded)) = (args.first(), args.get(1)) else {
        return Err(usage.into());
    };
    let skip: usize = args.get(2).map_or(Ok(0), |s| s.parse())?;
    let (mut src, mut dec) = (Y4m::open(source)?, Y4m::open(decoded)?);
    let (mut n, mut sum) = (0u64, 0.0);
    while let (Some(r), Some(d)) = (src.next_luma()?, dec.next_luma()?) {
        n += 1;
        let db = cg_media::psnr_scaled(
            &r, src.width, src.height, skip, &d, dec.width, dec.width, dec.height,
        )
        .ok_or("a picture too small to score")?;
        println!("n:{n} psnr_y:{db:.2}");
        sum += db;
    }
    if n == 0 {
        return Err("no frame to score".into());
    }
    println!("mean psnr_y:{:.3} over {n} frames", sum / n as f64);
    Ok(())
}
