//! Nonsense input never panics SCReAM, never moves its target outside `[min, max]`, and does
//! not leave it in a corrupted state: clean traffic after it brings the rate back up.
//!
//! Seeded fuzz-style sequences of hostile calls: unknown, duplicated and huge sequence
//! numbers; arrival times at the ends of the `i64` range; CE on packets sent Not-ECT; time
//! going backwards; zero-sized and enormous packets; absurd media-queue reports; spurious
//! timers; and configs with NaN gains and `min > max`.

use std::time::{Duration, Instant};

use cg_cc::scream::{CapacityProbe, Scream, ScreamConfig};
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

/// `seed`'s hostile sequence. With `own_seqs_in_order` the packets SCReAM is told it sent
/// keep their sequence numbers rising, as its transport guarantees (`SentPacket::seq`), so only
/// what comes from the network is nonsense, and clean traffic after it must bring the rate
/// back ([`recovers`]); without, those numbers are nonsense too, and only the bounds hold.
fn hostile_run(cfg: ScreamConfig, seed: u64, own_seqs_in_order: bool) {
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
                let s_seq = match r.below(10) {
                    0 if !own_seqs_in_order => r.next_u64(),
                    _ => seq,
                };
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
    if own_seqs_in_order {
        recovers(&mut s, now + Duration::from_secs(1), seq + 1_000_000, seed);
    }
}

/// The link of [`recovers`]: 4 Mbit/s.
const LINK: Bitrate = Bitrate::mbps(4);

/// After the nonsense SCReAM is not left in a corrupted state: 30 s of clean traffic follow
/// (1200-byte packets every 2 ms while the window allows, through a [`LINK`] with 15 ms each
/// way and a drop-tail queue of 300 ms; every 20 ms a report, written 15 ms before it arrives,
/// of every packet that had arrived or been lost by then: no CE, an empty media queue; a
/// fresh remote clock). Its target must end near the link's rate: at least a quarter of it, and
/// no more than twice (a controller deaf to feedback keeps whatever target it had).
fn recovers(s: &mut Scream, from: Instant, seq: u64, seed: u64) {
    const ONE_WAY_US: u64 = 15_000;
    let before = s.target_bitrate();
    // Sent, not yet reported: (arrival since `from` in µs, result).
    let mut unreported = std::collections::VecDeque::new();
    let mut next = seq;
    let mut link_free_us = 0u64;
    let serialise_us = (1200.0 * 8e6 / LINK.as_bps_f64()) as u64;
    let remote = |since_us: u64| RemoteTime::from_micros((1_i64 << 52) + since_us as i64);
    for i in 0..15_000u64 {
        let since_us = 2_000 * i;
        let now = from + Duration::from_micros(since_us);
        s.handle_timeout(now);
        if s.send_allowance()
            .is_some_and(|a| a >= DataSize::bytes(1200))
        {
            s.on_packet_sent(&SentPacket {
                seq: next,
                size: DataSize::bytes(1200),
                send_time: now,
                ecn: Ecn::NotEct,
                kind: PacketKind::Media,
            });
            // Drop-tail: a packet that would wait more than 300 ms is lost.
            let waits = link_free_us.saturating_sub(since_us);
            let lost = waits > 300_000;
            if !lost {
                link_free_us = link_free_us.max(since_us) + serialise_us;
            }
            let arrived = link_free_us + ONE_WAY_US;
            let result = PacketResult {
                seq: next,
                arrival: (!lost).then(|| remote(arrived)),
                ecn: Ecn::NotEct,
            };
            unreported.push_back((arrived, result));
            next += 1;
        }
        if i % 10 == 9 && since_us >= ONE_WAY_US {
            s.on_media_queue(MediaQueue::default(), now);
            // Written at remote time now − 15 ms: the packets that had arrived by then.
            let written = since_us - ONE_WAY_US;
            let n = unreported
                .iter()
                .take_while(|(arrived, _)| *arrived <= written)
                .count();
            let results: Vec<PacketResult> = unreported.drain(..n).map(|(_, r)| r).collect();
            let fb = Feedback {
                packets: &results,
                rtt: None,
                report_time: Some(remote(written)),
                ..Feedback::default()
            };
            s.on_feedback(&fb, now);
        }
        while s.poll_event().is_some() {}
    }
    let after = s.target_bitrate();
    assert!(
        after >= LINK.mul_f64(0.25) && after <= LINK.mul_f64(2.0),
        "seed {seed}: target {before} → {after} after 30 s of clean traffic through {LINK}"
    );
    for (name, v) in &s.stats().extra {
        assert!(
            v.is_finite(),
            "seed {seed}, after the nonsense: {name} = {v}"
        );
    }
}

/// [`recovers`]' own yardstick: a fresh SCReAM through the same clean run.
#[test]
fn a_fresh_controller_meets_the_recovery_run() {
    for cfg in [ScreamConfig::reference(), ScreamConfig::draft()] {
        let start = Instant::now();
        let mut s = Scream::new(cfg, start).expect("a valid config");
        recovers(&mut s, start, 0, 0);
    }
}

#[test]
fn hostile_input_never_panics_and_keeps_rate_in_bounds() {
    for seed in 1..=4 {
        for in_order in [false, true] {
            hostile_run(ScreamConfig::reference(), seed, in_order);
            hostile_run(ScreamConfig::draft(), seed + 100, in_order);
        }
    }
}

#[test]
fn every_nonsense_config_value_is_refused_by_name() {
    type Spoil = fn(&mut ScreamConfig);
    let cases: [(&str, Spoil); 13] = [
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
        ("l4s_capacity_probe.gain", |c| {
            c.l4s_capacity_probe = Some(CapacityProbe {
                gain: 0.5,
                ..CapacityProbe::default()
            });
        }),
        ("l4s_capacity_probe.length", |c| {
            c.l4s_capacity_probe = Some(CapacityProbe {
                length: Duration::MAX,
                ..CapacityProbe::default()
            });
        }),
        ("l4s_capacity_probe.max_interval", |c| {
            c.l4s_capacity_probe = Some(CapacityProbe {
                max_interval: Duration::from_millis(10),
                ..CapacityProbe::default()
            });
        }),
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
