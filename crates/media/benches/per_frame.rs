//! The Rust-side work cg-media does for every frame, outside GStreamer: key-frame detection
//! on the receiver's gate, the produced-rate window, the freeze detector, the VP8
//! quantizer read for a quality scaler, the frame dropper, and drawing the camera and game
//! pictures.
//!
//! `cargo bench -p cg-media -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::Duration;

use cg_media::{
    Codec, FrameDropper, FreezeDetector, HostTime, MediaCodec, RateWindow, SyntheticVideo,
    TestPattern, vp8_base_qp,
};
use cg_types::{Bitrate, DataSize, Rng};

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
    // A libvpx key frame at vp8enc quantizer 20 (q index 25): tag, start code, size and
    // its whole first partition, then filler for the token partition.
    let vp8_q20 = {
        let mut v = vec![
            0x50, 0x07, 0x00, 0x9d, 0x01, 0x2a, 0x40, 0x00, 0x30, 0x00, 0x0a, 0x47, 0x08, 0x85,
            0x85, 0x88, 0x85, 0x84, 0x88, 0x0c, 0x82, 0x00, 0x4e, 0x62, 0xc5, 0xc4, 0xd2, 0xaa,
            0x6a, 0xc1, 0x12, 0x65, 0x12, 0x82, 0xe7, 0x5c, 0x5a, 0x25, 0xdb, 0xb6, 0xeb, 0xad,
            0x49, 0x20, 0x5a, 0xf2, 0x2a, 0x4d, 0xc1, 0x2f, 0x64, 0x55, 0x88, 0xc6, 0x5e, 0x25,
            0x9b, 0x5c, 0x15, 0x6f, 0x53, 0x6a, 0xc1, 0xdd, 0x0c, 0x92, 0xf0, 0x80,
        ];
        v.resize(30_000, 7);
        v
    };
    assert_eq!(vp8_base_qp(&vp8_q20), Some(25));
    c.bench_function("vp8_base_qp key frame 30 kB", |b| {
        b.iter(|| vp8_base_qp(black_box(&vp8_q20)))
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
    c.bench_function("frame dropper on_input+on_encoded", |b| {
        let mut d = FrameDropper::new(Duration::from_millis(500), Duration::from_millis(300), 30);
        let mut pts = Duration::ZERO;
        b.iter(|| {
            pts += interval;
            if !d.on_input(pts, Bitrate::kbps(400)) {
                d.on_encoded(DataSize::bytes(2_500), false);
            }
        })
    });
    // Drawing the in-process pictures, in the thread that feeds the encoder: it must leave
    // room for the encoder on a 2-core machine.
    for pattern in [TestPattern::Camera, TestPattern::Game] {
        let mut g = SyntheticVideo::new(pattern, 1280, 720, 30.0).expect("a synthetic pattern");
        let mut frame = Vec::new();
        c.bench_function(&format!("draw {} 1280x720", pattern.name()), |b| {
            b.iter(|| g.next_frame(black_box(&mut frame)))
        });
    }
    c.final_summary();
}
