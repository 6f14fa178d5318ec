//! Writes a synthetic test picture to a Y4M file, so that other programs see the same picture
//! cg-send codes — Chromium's fake camera (`--use-file-for-fake-video-capture=FILE`), ffmpeg,
//! a reference for picture quality.
//!
//! ```text
//! cargo run --release -p cg-media --example write_y4m -- OUT.y4m [camera|game] [1280x720] [30] [SECONDS] [stamp]
//! ```
//!
//! Defaults: camera, 1280×720, 30 fps, 10 s (a player that loops the file jumps back every
//! SECONDS; Chromium's fake camera loops it). `stamp` draws each frame's [`Stamp`] (its
//! number, and the time the file was written), so `cg-recv --reference` can score what a
//! program that sends the file delivers.

use std::io::{BufWriter, Write};

use cg_media::{Stamp, SyntheticVideo, TestPattern};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: write_y4m OUT.y4m [camera|game] [WxH] [FPS] [SECONDS]";
    let out = args.first().ok_or(usage)?;
    let pattern = match args.get(1).map_or("camera", String::as_str) {
        "camera" => TestPattern::Camera,
        "game" => TestPattern::Game,
        other => return Err(format!("{other:?}: camera or game; {usage}").into()),
    };
    let (w, h) = args
        .get(2)
        .map_or("1280x720", String::as_str)
        .split_once('x')
        .ok_or(usage)?;
    let (w, h): (u32, u32) = (w.parse()?, h.parse()?);
    let fps: u32 = args.get(3).map_or(Ok(30), |s| s.parse())?;
    let secs: u32 = args.get(4).map_or(Ok(10), |s| s.parse())?;
    let stamp = args.get(5).is_some_and(|s| s == "stamp");
    let mut video =
        SyntheticVideo::new(pattern, w, h, f64::from(fps)).ok_or("not a synthetic pattern")?;
    let mut file = BufWriter::new(std::fs::File::create(out)?);
    writeln!(file, "YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg")?;
    let mut frame = Vec::new();
    for n in 0..fps * secs {
        video.next_frame(&mut frame);
        if stamp {
            Stamp::now(n).draw(&mut frame, w as usize, h as usize);
        }
        file.write_all(b"FRAME\n")?;
        file.write_all(&frame)?;
    }
    file.flush()?;
    eprintln!("{out}: {} frames of {w}×{h} at {fps} fps", fps * secs);
    Ok(())
}
