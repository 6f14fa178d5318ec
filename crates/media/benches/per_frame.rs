//! The Rust-side work cg-media does for every frame, outside GStreamer: key-frame detection
//! on the receiver's gate, the produced-rate window and the freeze detector.
//!
//! `cargo bench -p cg-media -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::Duration;

use cg_media::{Codec, FreezeDetector, HostTime, RateWindow};
use cg_types::{DataSize, Rng};

/// An H.264 access unit like x264's: AUD, SPS, PPS, then one slice of `len` random bytes.
fn h264_au(idr: bool, len: usize) -> Vec<u8> {
    let mut rng = Rng::new(1);
    let mut v = vec![
        0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1f, 0, 0, 0, 1, 0x68, 0xce,
    ];
    v.extend_from_slice(&[0, 0, 0, 1, if idr { 0x65 } else { 0x41 }]);
    v.extend((0..len).map(|_| (rng.next_u64() as u8) | 1)); // no accidental start codes
    v
}

fn main() {
    let mut c = criterion::Criterion::default().configure_from_args();
    let vp8 = {
        let mut v = vec![0x50, 0x2a, 0x00, 0x9d, 0x01, 0x2a, 0x00, 0x05, 0xd0, 0x02];
        v.resize(30_000, 7);
        v
    };
    c.bench_function("is_key_frame vp8 30 kB", |b| {
        b.iter(|| Codec::Vp8.is_key_frame(black_box(&vp8)))
    });
    let idr = h264_au(true, 100_000);
    c.bench_function("is_key_frame h264 IDR 100 kB", |b| {
        b.iter(|| Codec::H264.is_key_frame(black_box(&idr)))
    });
    let p = h264_au(false, 10_000);
    c.bench_function("is_key_frame h264 P 10 kB", |b| {
        b.iter(|| Codec::H264.is_key_frame(black_box(&p)))
    });

    let interval = Duration::from_secs(1) / 30;
    c.bench_function("rate window push+rate (1 s window, 30 fps)", |b| {
        let mut w = RateWindow::new(Duration::from_secs(1), interval);
        let mut pts = Duration::ZERO;
        b.iter(|| {
            pts += interval;
            w.push(pts, DataSize::bytes(10_000));
            black_box(w.rate())
        })
    });
    c.bench_function("freeze detector on_frame", |b| {
        let mut d = FreezeDetector::new(interval, 3, 256);
        let mut t = 0u64;
        b.iter(|| {
            t += 33_000_000;
            black_box(d.on_frame(HostTime::from_nanos(t)))
        })
    });
    c.final_summary();
}
