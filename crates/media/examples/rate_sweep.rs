//! Does a source follow a VP8 target bit rate? A live 1280×720 at 30 fps encode driven
//! through a schedule of targets changed at run time.
//!
//! ```text
//! cargo run --release -p cg-media --example rate_sweep -- [--pattern faint-zone-plate]
//!     [--cpu-used -6] [--schedule 2500:3,300:10,500:10,1000:10,2500:10,4000:10,2500:8,500:6,2500:8]
//!     [--size 1280x720] [--trace] [--key-after MS] [--degradation balanced] [--dropper 500]
//! cargo run --release -p cg-media --example rate_sweep -- \
//!     --src 'videotestsrc pattern=zone-plate kx2=20 ky2=20 kt=1' [--enc 'cpu-used=-8'] ...
//! ```
//!
//! With `--pattern` (a [`TestPattern::name`]) it runs cg-media's own [`Encoder`] with its
//! default VP8 settings (but `--cpu-used`) and changes the target with [`Encoder::set_target_bitrate`]. With
//! `--src`, a gst-launch fragment ending in raw video (every `videotestsrc` in it is made
//! live), it builds `SRC ! capsfilter ! queue ! vp8enc ! appsink` itself with a copy of
//! cg-media's VP8 settings plus `--enc` (later properties win), to try sources and encoder
//! settings without changing cg-media.
//!
//! The schedule is `target kbit/s : seconds` pairs. For each segment it prints the rate
//! produced over the segment after its first 2 s (on frame timestamps), how long after the
//! change a trailing 0.5 s window of output first came within 20 % of the new target,
//! the CPU time per frame of the encoder thread (vp8enc + appsink) and of the source thread
//! (drawing the picture), frames the encoder swallowed, the longest gap between output
//! frames, the median and largest frame and the key frames. `--trace` adds the produced
//! rate of every 0.5 s (`K`: a key frame in it). `--key-after MS` asks for a key frame MS
//! milliseconds after each change, as a receiver's PLI does after a loss, and prints the
//! sizes of the frames around it (the frames after a key frame asked for at a lower target
//! are where a rate controller may overshoot).

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cg_media::{Encoder, EncoderConfig, SourceConfig, TestPattern};
use cg_types::Bitrate;
use common::thread_cpu_prefixed;
use gstreamer as gst;
use gstreamer::prelude::*;

/// The element settings of `EncoderKind::Vp8` (encoders.rs) with the default config, for
/// `--src` runs.
const CG_VP8: &str = "deadline=1 end-usage=cbr error-resilient=default lag-in-frames=0 \
    cpu-used=-6 threads=1 token-partitions=1 buffer-size=300 buffer-initial-size=150 \
    buffer-optimal-size=180 undershoot=100 overshoot=15 min-quantizer=2 max-quantizer=63 \
    keyframe-max-dist=300";

/// One encoded frame: stream time, size, key frame.
type Out = (Duration, usize, bool);

/// What is known at a schedule boundary.
#[derive(Clone, Copy)]
struct Mark {
    kbps: u64,
    /// Stream time of the last output frame before the change.
    pts: Duration,
    frames_in: u64,
    enc_cpu: Duration,
    src_cpu: Duration,
}

/// A running encode, either cg-media's or a hand-built pipeline.
trait Run {
    fn set_target(&self, kbps: u64);
    fn key_frame(&self);
    fn frames_in(&self) -> u64;
    /// Output so far (drained).
    fn drain(&self, into: &mut Vec<Out>);
    fn stop(&self);
}

struct CgRun {
    encoder: Encoder,
    frames: std::sync::mpsc::Receiver<cg_media::EncodedFrame>,
}

impl Run for CgRun {
    fn set_target(&self, kbps: u64) {
        self.encoder.set_target_bitrate(Bitrate::kbps(kbps));
    }
    fn key_frame(&self) {
        if let Err(e) = self.encoder.request_key_frame() {
            eprintln!("key frame request failed: {e}");
        }
    }
    fn frames_in(&self) -> u64 {
        self.encoder.stats().frames_in
    }
    fn drain(&self, into: &mut Vec<Out>) {
        while let Ok(f) = self.frames.try_recv() {
            into.push((f.pts, f.data.len(), f.key_frame));
        }
    }
    fn stop(&self) {
        self.encoder.stop();
    }
}

struct RawRun {
    pipeline: gst::Pipeline,
    enc: gst::Element,
    frames_in: Arc<AtomicU64>,
    out: Arc<Mutex<Vec<Out>>>,
}

impl RawRun {
    fn start(src: &str, extra: &str, (w, h): (u32, u32), kbps: u64) -> RawRun {
        gst::init().expect("GStreamer initialises");
        let desc = format!(
            "{src} ! video/x-raw,format=I420,width={w},height={h},framerate=30/1 \
             ! queue max-size-buffers=1 max-size-bytes=0 max-size-time=0 leaky=downstream \
             ! vp8enc name=enc {CG_VP8} target-bitrate={} {extra} ! appsink name=sink sync=false",
            kbps * 1000
        );
        println!("pipeline: {desc}");
        let pipeline = gst::parse::launch(&desc)
            .expect("the pipeline description parses")
            .downcast::<gst::Pipeline>()
            .expect("gst-launch syntax with several elements makes a pipeline");
        for e in pipeline.iterate_recurse().into_iter().flatten() {
            if e.factory().is_some_and(|f| f.name() == "videotestsrc") {
                e.set_property("is-live", true);
            }
        }
        let enc = pipeline.by_name("enc").expect("named in the description");
        let frames_in = Arc::new(AtomicU64::new(0));
        let counter = frames_in.clone();
        enc.static_pad("sink")
            .expect("vp8enc has a sink pad")
            .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                counter.fetch_add(1, Ordering::Relaxed);
                gst::PadProbeReturn::Ok
            });
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink_out = out.clone();
        pipeline
            .by_name("sink")
            .expect("named in the description")
            .downcast::<gstreamer_app::AppSink>()
            .expect("an appsink")
            .set_callbacks(
                gstreamer_app::AppSinkCallbacks::builder()
                    .new_sample(move |sink| {
                        let sample = sink.pull_sample().map_err(|_| gst::FlowError::Flushing)?;
                        if let Some(b) = sample.buffer() {
                            let pts = Duration::from_nanos(b.pts().map_or(0, |p| p.nseconds()));
                            let key = !b.flags().contains(gst::BufferFlags::DELTA_UNIT);
                            sink_out.lock().unwrap().push((pts, b.size(), key));
                        }
                        Ok(gst::FlowSuccess::Ok)
                    })
                    .build(),
            );
        pipeline
            .set_state(gst::State::Playing)
            .expect("the pipeline starts");
        RawRun {
            pipeline,
            enc,
            frames_in,
            out,
        }
    }
}

impl Run for RawRun {
    fn set_target(&self, kbps: u64) {
        self.enc.set_property(
            "target-bitrate",
            i32::try_from(kbps * 1000).unwrap_or(i32::MAX),
        );
    }
    fn key_frame(&self) {
        let event = gstreamer_video::UpstreamForceKeyUnitEvent::builder()
            .all_headers(true)
            .build();
        if !self.enc.send_event(event) {
            eprintln!("vp8enc refused the force-key-unit event");
        }
    }
    fn frames_in(&self) -> u64 {
        self.frames_in.load(Ordering::Relaxed)
    }
    fn drain(&self, into: &mut Vec<Out>) {
        into.append(&mut self.out.lock().unwrap());
    }
    fn stop(&self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let size = get("--size")
        .and_then(|s| {
            let (a, b) = s.split_once('x')?;
            Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?))
        })
        .unwrap_or((1280, 720));
    let schedule: Vec<(u64, f64)> = get("--schedule")
        .unwrap_or_else(|| {
            "2500:3,300:10,500:10,1000:10,2500:10,4000:10,2500:8,500:6,2500:8".to_owned()
        })
        .split(',')
        .filter_map(|p| {
            let (k, s) = p.split_once(':')?;
            Some((k.parse().ok()?, s.parse().ok()?))
        })
        .collect();
    let Some(&(first_kbps, _)) = schedule.first() else {
        eprintln!("bad --schedule: expected kbps:seconds,...");
        std::process::exit(2);
    };

    let run: Box<dyn Run> = match get("--src") {
        Some(src) => Box::new(RawRun::start(
            &src,
            &get("--enc").unwrap_or_default(),
            size,
            first_kbps,
        )),
        None => {
            let name = get("--pattern").unwrap_or_else(|| "faint-zone-plate".to_owned());
            let Some(pattern) = TestPattern::from_name(&name) else {
                eprintln!("unknown pattern {name:?}");
                std::process::exit(2);
            };
            let defaults = EncoderConfig::default();
            let config = EncoderConfig {
                source: SourceConfig::TestPattern { pattern },
                vp8_cpu_used: get("--cpu-used")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(defaults.vp8_cpu_used),
                width: size.0,
                height: size.1,
                start_bitrate: Bitrate::kbps(first_kbps),
                frame_queue: 1024,
                // The encoder alone by default: `--degradation` and `--dropper MS` add the
                // adaptation and the frame dropper.
                adaptation: cg_media::AdaptationConfig {
                    preference: get("--degradation")
                        .map(|d| {
                            cg_media::DegradationPreference::from_name(&d)
                                .expect("a --degradation name")
                        })
                        .unwrap_or(cg_media::DegradationPreference::Disabled),
                    ..Default::default()
                },
                frame_dropper: get("--dropper")
                    .and_then(|m| m.parse().ok())
                    .map(std::time::Duration::from_millis),
                ..defaults
            };
            println!(
                "cg-media Encoder: {pattern:?}, {}x{}@{} VP8 cpu-used {}",
                config.width, config.height, config.frame_rate, config.vp8_cpu_used
            );
            let (encoder, frames) = Encoder::start(config).expect("the encoder starts");
            Box::new(CgRun { encoder, frames })
        }
    };

    let mut out: Vec<Out> = Vec::new();
    let mut marks: Vec<Mark> = Vec::new();
    let mark = |run: &dyn Run, out: &mut Vec<Out>, kbps| {
        run.drain(out);
        Mark {
            kbps,
            pts: out.last().map_or(Duration::ZERO, |o| o.0),
            frames_in: run.frames_in(),
            enc_cpu: thread_cpu_prefixed("queue"),
            src_cpu: thread_cpu_prefixed("videotestsrc"),
        }
    };
    let key_after = get("--key-after")
        .and_then(|m| m.parse::<u64>().ok())
        .map(Duration::from_millis);
    let started = Instant::now();
    let mut until = 0.0;
    for (i, &(kbps, secs)) in schedule.iter().enumerate() {
        if i > 0 {
            run.set_target(kbps);
        }
        marks.push(mark(run.as_ref(), &mut out, kbps));
        let changed = Instant::now();
        let mut key_due = key_after.filter(|_| i > 0);
        until += secs;
        while started.elapsed().as_secs_f64() < until {
            std::thread::sleep(Duration::from_millis(10));
            if key_due.is_some_and(|d| changed.elapsed() >= d) {
                key_due = None;
                run.key_frame();
            }
            run.drain(&mut out);
        }
    }
    let end = mark(run.as_ref(), &mut out, 0);
    run.stop();

    println!(
        "{:>6} {:>8} {:>6} {:>7} {:>6} {:>6} {:>5} {:>7} {:>6} {:>6} {:>4}",
        "target",
        "produced",
        "ratio",
        "first20",
        "enc ms",
        "src ms",
        "drops",
        "maxgap",
        "medB",
        "maxB",
        "keys"
    );
    for (i, m) in marks.iter().enumerate() {
        let next = marks.get(i + 1).copied().unwrap_or(end);
        let seg: Vec<&Out> = out
            .iter()
            .filter(|o| o.0 > m.pts && o.0 <= next.pts)
            .collect();
        let target = m.kbps as f64 * 1000.0;
        let from = m.pts + Duration::from_secs(2);
        let bytes: usize = seg.iter().filter(|o| o.0 > from).map(|o| o.1).sum();
        let span = next.pts.saturating_sub(from).as_secs_f64();
        let produced = bytes as f64 * 8.0 / span;
        let win = Duration::from_millis(500);
        let first20 = seg.iter().find_map(|o| {
            let lo = o.0.saturating_sub(win);
            let b: usize = out
                .iter()
                .filter(|p| p.0 > lo && p.0 <= o.0)
                .map(|p| p.1)
                .sum();
            let r = b as f64 * 8.0 / win.as_secs_f64();
            ((r - target).abs() <= 0.2 * target).then(|| (o.0 - m.pts).as_secs_f64())
        });
        let frames_in = next.frames_in - m.frames_in;
        let per_frame = |a: Duration, b: Duration, n: u64| {
            b.saturating_sub(a).as_secs_f64() * 1e3 / n.max(1) as f64
        };
        let mut sizes: Vec<usize> = seg.iter().map(|o| o.1).collect();
        sizes.sort_unstable();
        let max_gap = seg
            .windows(2)
            .map(|w| w[1].0.saturating_sub(w[0].0))
            .max()
            .unwrap_or_default();
        println!(
            "{:>6} {:>8.0} {:>6.2} {:>7} {:>6.2} {:>6.2} {:>5} {:>5.0}ms {:>6} {:>6} {:>4}",
            m.kbps,
            produced / 1000.0,
            produced / target,
            first20.map_or("never".to_owned(), |s| format!("{s:.2}s")),
            per_frame(m.enc_cpu, next.enc_cpu, seg.len() as u64),
            per_frame(m.src_cpu, next.src_cpu, frames_in),
            frames_in.saturating_sub(seg.len() as u64),
            max_gap.as_secs_f64() * 1e3,
            sizes.get(sizes.len() / 2).copied().unwrap_or(0),
            sizes.last().copied().unwrap_or(0),
            seg.iter().filter(|o| o.2).count(),
        );
    }
    if key_after.is_some() {
        for m in marks.iter().skip(1) {
            let after: Vec<&Out> = out.iter().filter(|o| o.0 > m.pts).collect();
            let key = after.iter().position(|o| o.2).unwrap_or(0);
            let sizes: Vec<String> = after
                .iter()
                .skip(key.saturating_sub(3))
                .take(12)
                .map(|o| format!("{}{}", o.1, if o.2 { "K" } else { "" }))
                .collect();
            println!(
                "frames around the key frame after the change to {} kbit/s: {}",
                m.kbps,
                sizes.join(" ")
            );
        }
    }
    if args.iter().any(|a| a == "--trace") {
        let step = Duration::from_millis(500);
        let mut windows: HashMap<u64, (usize, bool)> = HashMap::new();
        for o in &out {
            let w = windows.entry(o.0.as_millis() as u64 / 500).or_default();
            w.0 += o.1;
            w.1 |= o.2;
        }
        let last = end.pts.as_millis() as u64 / 500;
        let line: Vec<String> = (0..=last)
            .map(|i| {
                let (b, key) = windows.get(&i).copied().unwrap_or_default();
                let kbps = b as f64 * 8.0 / step.as_secs_f64() / 1000.0;
                format!("{kbps:.0}{}", if key { "K" } else { "" })
            })
            .collect();
        println!("kbit/s per 0.5 s: {}", line.join(" "));
    }
}
