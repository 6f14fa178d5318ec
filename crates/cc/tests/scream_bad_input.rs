//! Nonsense input never panics SCReAM and never moves its target outside `[min, max]`.
//!
//! Seeded fuzz-style sequences of hostile calls: unknown, duplicated and huge sequence
//! numbers; arrival times at the ends of the `i64` range; CE on packets sent Not-ECT; time
//! going backwards; zero-sized and enormous packets; absurd media-queue reports; spurious
//! timers; and configs with NaN gains and `min > max`.

use std::time::{Duration, Instant};

use cg_cc::scream::{Scream, ScreamConfig};
use cg_cc::{
    Controller, ControllerConfig, Feedback, MediaQueue, PacketKind, PacketResult, SentPacket,
};
use cg_types::{Bitrate, DataSize, Ecn, RemoteTime, Rng};

fn check(s: &Scream, min: Bitrate, max: Bitrate) {
    let t = s.target_bitrate();
    assert!(t >= min && t <= max, "target {t} outside [{min}, {max}]");
    assert!(
        s.pacing_rate() >= Bitrate::kbps(50),
        "pacing {}",
        s.pacing_rate()
    );
    assert!(s.send_allowance().is_some());
    let st = s.stats();
    assert!(st.cwnd.is_some_and(|c| c > DataSize::ZERO));
    for (name, v) in &st.extra {
        assert!(v.is_finite(), "{name} = {v}");
    }
    assert!((0.0..=1.0).contains(&s.l4s_alpha()));
}

fn ecn(r: &mut Rng) -> Ecn {
    Ecn::from_bits(r.below(4) as u8)
}

fn hostile_run(cfg: ScreamConfig, seed: u64) {
    let (min, max) = (cfg.min_bitrate, cfg.max_bitrate);
    let start = Instant::now() + Duration::from_secs(3600);
    let mut s = Scream::new(cfg, start).expect("a valid config");
    let mut r = Rng::new(seed);
    let mut now = start;
    let mut seq = 0u64;
    for _ in 0..20_000 {
        // Time mostly moves forward, sometimes jumps back or far ahead.
        now = match r.below(20) {
            0 => now
                .checked_sub(Duration::from_millis(r.below(5_000)))
                .unwrap_or(now),
            1 => now + Duration::from_secs(r.below(100_000)),
            _ => now + Duration::from_micros(r.below(20_000)),
        };
        match r.below(6) {
            0 | 1 => {
                let size = match r.below(4) {
                    0 => DataSize::ZERO,
                    1 => DataSize::bytes(u64::MAX),
                    _ => DataSize::bytes(r.below(1500)),
                };
                let s_seq = if r.below(10) == 0 { r.next_u64() } else { seq };
                seq += 1 + r.below(3);
                let send_time = if r.below(10) == 0 {
                    start - Duration::from_secs(100)
                } else {
                    now
                };
                s.on_packet_sent(&SentPacket {
                    seq: s_seq,
                    size,
                    send_time,
                    ecn: ecn(&mut r),
                    kind: PacketKind::Media,
                });
            }
            2 | 3 => {
                let n = r.below(300) as usize;
                let results: Vec<PacketResult> = (0..n)
                    .map(|_| PacketResult {
                        seq: match r.below(4) {
                            0 => r.next_u64(),
                            _ => seq.saturating_sub(r.below(200)),
                        },
                        arrival: match r.below(6) {
                            0 => None,
                            1 => Some(RemoteTime::from_micros(i64::MIN)),
                            2 => Some(RemoteTime::from_micros(i64::MAX)),
                            3 => Some(RemoteTime::from_micros(r.next_u64() as i64)),
                            _ => Some(RemoteTime::from_micros(
                                (now - start).as_micros() as i64 + r.below(200_000) as i64,
                            )),
                        },
                        ecn: ecn(&mut r),
                    })
                    .collect();
                let fb = Feedback {
                    packets: &results,
                    rtt: Some(Duration::from_secs(r.below(1_000_000))),
                    report_time: match r.below(3) {
                        0 => None,
                        1 => Some(RemoteTime::from_micros(r.next_u64() as i64)),
                        _ => Some(RemoteTime::from_micros(
                            (now - start).as_micros() as i64 + r.below(300_000) as i64,
                        )),
                    },
                    ..Feedback::default()
                };
                s.on_feedback(&fb, now);
            }
            4 => {
                let q = MediaQueue {
                    size: DataSize::bytes(r.next_u64()),
                    delay: Duration::from_micros(r.next_u64() >> r.below(64)),
                };
                s.on_media_queue(q, now);
            }
            _ => {
                if let Some(t) = s.poll_timeout().filter(|_| r.below(2) == 0) {
                    now = now.max(t);
                }
                s.handle_timeout(now);
            }
        }
        while s.poll_event().is_some() {}
        check(&s, min, max);
    }
}

#[test]
fn hostile_input_never_panics_and_keeps_rate_in_bounds() {
    for seed in 1..=4 {
        hostile_run(ScreamConfig::reference(), seed);
        hostile_run(ScreamConfig::draft(), seed + 100);
    }
}

#[test]
fn every_nonsense_config_value_is_refused_by_name() {
    type Spoil = fn(&mut ScreamConfig);
    let cases: [(&str, Spoil); 10] = [
        ("min_bitrate", |c| {
            c.min_bitrate = Bitrate::mbps(10);
            c.max_bitrate = Bitrate::mbps(1);
            c.start_bitrate = Bitrate::mbps(1);
        }),
        ("start_bitrate", |c| c.start_bitrate = Bitrate::mbps(500)),
        ("loss_beta", |c| c.loss_beta = f64::NAN),
        ("ecn_beta", |c| c.ecn_beta = -3.0),
        ("l4s_gain_up", |c| c.l4s_gain_up = f64::INFINITY),
        ("rate_margin", |c| c.rate_margin = 0.0),
        ("qdelay_target", |c| c.qdelay_target = Duration::ZERO),
        ("base_delay_slots", |c| c.base_delay_slots = 0),
        ("max_tracked_packets", |c| c.max_tracked_packets = 0),
        ("window_headroom_max", |c| c.window_headroom_max = -1.0),
    ];
    for (field, spoil) in cases {
        let mut cfg = ScreamConfig::default();
        spoil(&mut cfg);
        let e = Scream::new(cfg.clone(), Instant::now())
            .err()
            .unwrap_or_else(|| panic!("{field}: accepted"));
        assert_eq!(e.field, field, "{e}");
        assert!(e.to_string().starts_with(field), "{e}");
        assert!(cfg.build(Instant::now()).is_err(), "{field}: built");
    }
    assert!(ScreamConfig::reference().validate().is_ok());
    assert!(ScreamConfig::draft().validate().is_ok());
}
