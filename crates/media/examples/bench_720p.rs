//! Whole-process benchmark: 720p30 encode → decode in one process.
//!
//! ```text
//! cargo run --release -p cg-media --example bench_720p -- [seconds] [encoder] [pattern] [rate] [rate-buffer ms]
//! ```
//! (defaults: 20 s, `vp8`, `zone-plate` — or any other `TestPattern::name`, such as `smpte`,
//! `faint-zone-plate` or `game` —, 2.5M, the encoder's own rate buffer). Prints per-frame
//! encode latency (encoder input → appsink), decode latency (push → decoded picture),
//! glass-to-glass latency (capture → decoded picture over this in-process loopback), the
//! encoded frames' sizes (the largest are a game's scene cuts), and the CPU time of each
//! GStreamer streaming thread (source, encoder, decoder) read from /proc/self/task, as a
//! percentage of one core.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::thread_cpu;

use cg_media::{
    Decoder, DecoderConfig, Encoder, EncoderConfig, EncoderKind, HostTime, SourceConfig,
    TestPattern,
};
use cg_types::Bitrate;

/// Median, p95 and largest of `v` in `unit`.
fn spread(mut v: Vec<f64>, unit: &str) -> String {
    if v.is_empty() {
        return "no samples".to_owned();
    }
    v.sort_by(f64::total_cmp);
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {:6.2} {unit}  p95 {:6.2} {unit}  max {:6.2} {unit}  (n = {})",
        p(0.5),
        p(0.95),
        p(1.0),
        v.len()
    )
}

/// [`spread`] of durations, in ms.
fn percentiles(v: Vec<Duration>) -> String {
    spread(v.iter().map(|d| d.as_secs_f64() * 1e3).collect(), "ms")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let encoder = args.get(2).cloned().unwrap_or_else(|| "vp8".to_owned());
    let pattern = args
        .get(3)
        .and_then(|p| TestPattern::from_name(p))
        .unwrap_or(TestPattern::MovingZonePlate);
    let rate = args
        .get(4)
        .map(|r| r.parse::<Bitrate>().expect("a bit rate such as 5M"))
        .unwrap_or(Bitrate::kbps(2_500));
    let config = EncoderConfig {
        encoder: encoder.clone(),
        source: SourceConfig::TestPattern { pattern },
        start_bitrate: rate,
        rate_buffer: args
            .get(5)
            .map(|ms| Duration::from_millis(ms.parse().expect("a rate buffer in ms"))),
        ..EncoderConfig::default()
    };
    let codec = EncoderKind::from_name(&encoder)
        .expect("known encoder")
        .codec();
    println!(
        "{}x{}@{} {encoder} {pattern:?} at {}, {seconds} s",
        config.width, config.height, config.frame_rate, config.start_bitrate
    );
    let (enc, frames) = Encoder::start(config).expect("encoder starts");
    let (dec, decoded) = Decoder::start(DecoderConfig {
        codec,
        frame_queue: 4096,
        ..DecoderConfig::default()
    })
    .expect("decoder starts");

    // Warm up one second, then measure.
    let warm_up = Instant::now() + Duration::from_secs(1);
    while Instant::now() < warm_up {
        if let Ok(f) = frames.recv_timeout(Duration::from_millis(100)) {
            let _ = dec.push(f);
        }
    }
    while decoded.try_recv().is_ok() {}
    let cpu0 = thread_cpu();
    let t0 = Instant::now();
    let (stats0_enc, stats0_dec) = (enc.stats(), dec.stats());
    let mut pushed_at: HashMap<u64, HostTime> = HashMap::new();
    let (mut enc_lat, mut dec_lat, mut g2g, mut sizes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let end = t0 + Duration::from_secs(seconds);
    while Instant::now() < end {
        let Ok(f) = frames.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        enc_lat.push(f.encode_latency);
        sizes.push(f.data.len() as f64 / 1000.0);
        pushed_at.insert(f.seq, HostTime::now());
        let _ = dec.push(f);
        while let Ok(d) = decoded.try_recv() {
            if let Some(p) = pushed_at.remove(&d.seq) {
                dec_lat.push(d.decoded_at.checked_duration_since(p).unwrap_or_default());
            }
            g2g.extend(d.glass_to_glass);
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    while let Ok(d) = decoded.try_recv() {
        if let Some(p) = pushed_at.remove(&d.seq) {
            dec_lat.push(d.decoded_at.checked_duration_since(p).unwrap_or_default());
        }
        g2g.extend(d.glass_to_glass);
    }
    let wall = t0.elapsed();
    let cpu1 = thread_cpu();
    let (es, ds) = (enc.stats(), dec.stats());
    enc.stop();
    dec.stop();

    println!(
        "encode latency (encoder in → appsink):  {}",
        percentiles(enc_lat.clone())
    );
    println!(
        "decode latency (push → decoded picture): {}",
        percentiles(dec_lat)
    );
    println!(
        "glass-to-glass (capture → decoded):      {}",
        percentiles(g2g)
    );
    let per_frame = sizes.iter().sum::<f64>() / sizes.len().max(1) as f64;
    let mut largest = sizes.clone();
    largest.sort_by(|a, b| b.total_cmp(a));
    largest.truncate(5);
    println!(
        "encoded frame size:                      {}; mean {per_frame:.1} kB, largest {largest:.1?}",
        spread(sizes.clone(), "kB")
    );
    let captured = es.frames_captured - stats0_enc.frames_captured;
    let frames_in = es.frames_in - stats0_enc.frames_in;
    println!(
        "source: {captured} raw frames, {} dropped in front of the encoder",
        captured.saturating_sub(frames_in)
    );
    let frames_out = es.frames_out - stats0_enc.frames_out;
    println!(
        "encoder: {frames_in} frames in, {frames_out} out in {:.1} s ({:.1} fps); produced {:.3} Mbit/s (target {})",
        wall.as_secs_f64(),
        frames_out as f64 / wall.as_secs_f64(),
        sizes.iter().sum::<f64>() * 8.0 / wall.as_secs_f64() / 1e3,
        es.target_bitrate
    );
    println!(
        "decoder: {} decoded, {} errors, {} freezes (longest {:?}), {} dropped awaiting key frame",
        ds.frames_decoded - stats0_dec.frames_decoded,
        ds.decode_errors - stats0_dec.decode_errors,
        ds.freezes - stats0_dec.freezes,
        ds.longest_freeze,
        ds.dropped_awaiting_key_frame
    );
    println!(
        "CPU per thread over {:.1} s (% of one core):",
        wall.as_secs_f64()
    );
    let mut rows: Vec<(String, f64)> = cpu1
        .iter()
        .map(|(name, t)| {
            let before = cpu0.get(name).copied().unwrap_or_default();
            (
                name.clone(),
                t.saturating_sub(before).as_secs_f64() / wall.as_secs_f64() * 100.0,
            )
        })
        .filter(|(_, pct)| *pct >= 0.5)
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let decoded_n = ds.frames_decoded - stats0_dec.frames_decoded;
    for (name, pct) in rows {
        // CPU per frame does not depend on how many frames a loaded host let through.
        let per = if name.starts_with("queue") {
            Some(frames_out)
        } else if name.starts_with("appsrc") {
            Some(decoded_n)
        } else if name.starts_with("videotestsrc") {
            Some(captured)
        } else {
            None
        };
        match per.filter(|&n| n > 0) {
            Some(n) => println!(
                "  {name:<16} {pct:5.1} %  = {:5.2} ms of CPU per frame",
                pct / 100.0 * wall.as_secs_f64() * 1e3 / n as f64
            ),
            None => println!("  {name:<16} {pct:5.1} %"),
        }
    }
    println!(
        "  (videotestsrc*:src = source drawing, queue*:src = encoder + appsink, appsrc*:src = decoder + fakesink)"
    );
}
