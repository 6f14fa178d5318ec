//! Hostile and broken input to GCC: arrival before send, time going backwards, duplicated
//! and reordered feedback, unknown sequence numbers, zero-size packets, huge gaps, absurd
//! REMB and loss values, a remote clock that steps. Nothing may panic, the target must stay
//! within [min, max], and clean traffic afterwards must bring the rate back.

use std::time::{Duration, Instant};

use cg_cc::gcc::{GccConfig, GccMode, LossModel, ThresholdModel};
use cg_cc::{
    Controller, ControllerConfig, Feedback, LossReport, PacketKind, PacketResult,
    ReceiveSideEstimator, ReceivedPacket, SentPacket,
};
use cg_types::{Bitrate, DataSize, Ecn, RemoteTime, Rng};

fn configs() -> Vec<GccConfig> {
    let mut v = Vec::new();
    for mode in [GccMode::ReceiverSideRemb, GccMode::SendSideTwcc] {
        v.push(GccConfig {
            mode,
            ..GccConfig::default()
        });
        v.push(GccConfig {
            mode,
            filter: cg_cc::gcc::ArrivalFilterModel::TwoState,
            threshold: ThresholdModel::static_2013(),
            loss: LossModel::TfrcFloor,
            cap_as_by_ar: false,
            ..GccConfig::default()
        });
    }
    v
}

fn check(c: &dyn Controller, cfg: &GccConfig, what: &str) {
    let t = c.target_bitrate();
    assert!(
        t >= cfg.min_bitrate && t <= cfg.max_bitrate,
        "{what}: target {t} outside [{}, {}]",
        cfg.min_bitrate,
        cfg.max_bitrate
    );
    assert!(c.pacing_rate() >= t, "{what}: pacing below target");
    let s = c.stats();
    assert_eq!(s.target, t);
}

/// After bad input the controller is not left in a corrupted state: `secs` of clean traffic
/// follow (a packet every 10 ms carrying the target's worth, arriving 30 ms after it was sent
/// over a path far faster, reported every 50 ms; in REMB mode the REMBs of a fresh receiver
/// of the same packets and its reports of no loss), sent from `from` with sequence numbers
/// from `seq`, arriving on the remote clock from `remote_us`. Returns the
/// target before and after; every statistic must be finite.
fn clean_run(
    c: &mut dyn Controller,
    cfg: &GccConfig,
    from: Instant,
    seq: u64,
    remote_us: i64,
    secs: u64,
) -> (Bitrate, Bitrate) {
    let before = c.target_bitrate();
    let mut rx = cfg.build_receiver(from).expect("a valid config");
    let mut results = Vec::new();
    for i in 0..secs * 100 {
        let at = from + Duration::from_millis(10 * i);
        let s = seq + i;
        let size = (c.target_bitrate().as_bps_f64() / 8.0 / 100.0).clamp(100.0, 1200.0) as u64;
        c.on_packet_sent(&sent(s, size, at));
        c.on_frame_sent(s);
        let arrival_us = remote_us + 10_000 * i as i64 + 30_000;
        results.push(result(s, Some(arrival_us)));
        rx.on_packet_received(&ReceivedPacket {
            arrival: at + Duration::from_millis(30),
            send_time: RemoteTime::from_micros(10_000 * i as i64),
            size: DataSize::bytes(size),
            group: i,
            ssrc: 1,
            kind: PacketKind::Media,
        });
        if results.len() == 5 {
            let now = at + Duration::from_millis(30);
            rx.handle_timeout(now);
            // REMB mode: the receiver's REMBs and its reports of no loss.
            let (remb, loss) = match cfg.mode {
                GccMode::ReceiverSideRemb => (
                    rx.poll_remb(now),
                    Some(LossReport {
                        fraction_lost: 0.0,
                        cumulative_lost: 0,
                        extended_highest_seq: s as u32,
                    }),
                ),
                GccMode::SendSideTwcc => (None, None),
            };
            let fb = Feedback {
                packets: &results,
                remb,
                loss,
                rtt: Some(Duration::from_millis(30)),
                report_time: None,
            };
            c.on_feedback(&fb, now);
            c.handle_timeout(now);
            results.clear();
        }
    }
    for (name, v) in c.stats().extra {
        assert!(v.is_finite(), "after bad input: {name} = {v}");
    }
    (before, c.target_bitrate())
}

/// The controller climbs again after the bad input: from its target then (whatever the input
/// made of it) to at least `most` within the clean run.
fn recovers(
    c: &mut dyn Controller,
    cfg: &GccConfig,
    from: Instant,
    (seq, remote_us): (u64, i64),
    what: &str,
) {
    let (before, after) = clean_run(c, cfg, from, seq, remote_us, 30);
    let most = Bitrate::kbps(1000).min(cfg.max_bitrate);
    assert!(
        after >= most,
        "{what} ({:?}): target {before} → {after} after 30 s of clean traffic (< {most})",
        cfg.mode
    );
}

fn sent(seq: u64, size: u64, at: Instant) -> SentPacket {
    SentPacket {
        seq,
        size: DataSize::bytes(size),
        send_time: at,
        ecn: Ecn::NotEct,
        kind: PacketKind::Media,
    }
}

fn result(seq: u64, arrival_us: Option<i64>) -> PacketResult {
    PacketResult {
        seq,
        arrival: arrival_us.map(RemoteTime::from_micros),
        ecn: Ecn::NotEct,
    }
}

#[test]
fn scripted_bad_sequences_keep_the_sender_within_bounds() {
    for cfg in configs() {
        let t0 = Instant::now() + Duration::from_secs(3600);
        let mut c = cfg.build_controller(t0).expect("a valid config");
        let at = |ms: i64| {
            if ms >= 0 {
                t0 + Duration::from_millis(ms as u64)
            } else {
                t0 - Duration::from_millis(ms.unsigned_abs())
            }
        };
        // A normal start.
        for i in 0..100u64 {
            c.on_packet_sent(&sent(i, 1000, at(i as i64 * 10)));
        }
        // Arrival before send (remote clock far behind), zero-size packets.
        let fb: Vec<_> = (0..50)
            .map(|i| result(i, Some(-1_000_000 + i as i64)))
            .collect();
        c.on_packet_sent(&sent(100, 0, at(1000)));
        c.on_feedback(
            &Feedback {
                packets: &fb,
                ..Feedback::default()
            },
            at(1000),
        );
        check(&c, &cfg, "arrival before send");
        // Duplicated feedback, then the same results reordered.
        c.on_feedback(
            &Feedback {
                packets: &fb,
                ..Feedback::default()
            },
            at(1010),
        );
        let mut rev = fb.clone();
        rev.reverse();
        c.on_feedback(
            &Feedback {
                packets: &rev,
                ..Feedback::default()
            },
            at(1020),
        );
        check(&c, &cfg, "duplicated / reordered feedback");
        // Time going backwards.
        c.on_packet_sent(&sent(101, 1200, at(-5000)));
        let fb2 = [result(101, Some(i64::MIN)), result(100, Some(i64::MAX))];
        c.on_feedback(
            &Feedback {
                packets: &fb2,
                ..Feedback::default()
            },
            at(-10_000),
        );
        check(&c, &cfg, "time backwards, extreme remote times");
        // Unknown and absurd sequence numbers.
        let fb3 = [
            result(u64::MAX, Some(0)),
            result(1 << 40, None),
            result(7, None),
        ];
        c.on_feedback(
            &Feedback {
                packets: &fb3,
                ..Feedback::default()
            },
            at(2000),
        );
        check(&c, &cfg, "unknown sequence numbers");
        // Absurd REMB and loss figures, RTT zero and huge.
        for (remb, fl, rtt) in [
            (Bitrate::ZERO, f64::NAN, Duration::ZERO),
            (Bitrate::MAX, -1.0, Duration::MAX),
            (Bitrate::bps(1), 7.0, Duration::from_secs(1_000_000)),
            (Bitrate::mbps(1), f64::INFINITY, Duration::from_nanos(1)),
        ] {
            let loss = LossReport {
                fraction_lost: fl,
                cumulative_lost: i64::MIN,
                extended_highest_seq: u32::MAX,
            };
            c.on_feedback(
                &Feedback {
                    remb: Some(remb),
                    loss: Some(loss),
                    rtt: Some(rtt),
                    ..Feedback::default()
                },
                at(3000),
            );
            check(&c, &cfg, "absurd REMB / loss / RTT");
        }
        // A huge gap (ten hours), then normal traffic again.
        let late = 36_000_000i64;
        for i in 200..400u64 {
            c.on_packet_sent(&sent(i, 1000, at(late + i as i64 * 10)));
        }
        let fb4: Vec<_> = (200..400u64)
            .map(|i| result(i, Some((late + i as i64 * 10 + 30) * 1000)))
            .collect();
        c.on_feedback(
            &Feedback {
                packets: &fb4,
                ..Feedback::default()
            },
            at(late + 4100),
        );
        check(&c, &cfg, "after a huge gap");
        c.handle_timeout(at(late + 5000));
        c.handle_timeout(at(0));
        check(&c, &cfg, "spurious timeouts");
        recovers(
            &mut c,
            &cfg,
            at(late + 6000),
            (1_000, (late + 6000) * 1000),
            "scripted bad input",
        );
    }
}

#[test]
fn random_garbage_never_panics_and_stays_within_bounds() {
    let mut rng = Rng::new(0xbad);
    for cfg in configs() {
        let t0 = Instant::now() + Duration::from_secs(100_000);
        let mut c = cfg.build_controller(t0).expect("a valid config");
        let mut rx = cfg.build_receiver(t0).expect("a valid config");
        let mut results = Vec::new();
        for step in 0..20_000u64 {
            // Times jump around: mostly forward, sometimes backwards or far ahead.
            let jitter = match rng.below(20) {
                0 => -(rng.below(10_000_000) as i64),
                1 => rng.below(1 << 40) as i64,
                _ => (step * 5_000) as i64 + rng.below(3_000) as i64,
            };
            let now = if jitter >= 0 {
                t0 + Duration::from_micros(jitter as u64)
            } else {
                t0 - Duration::from_micros(jitter.unsigned_abs())
            };
            let seq = if rng.below(50) == 0 {
                rng.next_u64()
            } else {
                step
            };
            let size = match rng.below(10) {
                0 => 0,
                1 => rng.next_u64() >> 20,
                _ => 1 + rng.below(1500),
            };
            c.on_packet_sent(&sent(seq, size, now));
            if rng.below(7) == 0 {
                c.on_frame_sent(seq);
            }
            let arrival = match rng.below(10) {
                0 => None,
                1 => Some(rng.next_u64() as i64),
                _ => Some(jitter + 30_000 + rng.below(50_000) as i64),
            };
            results.push(result(seq.wrapping_sub(rng.below(3)), arrival));
            rx.on_packet_received(&ReceivedPacket {
                arrival: now,
                send_time: RemoteTime::from_micros(if rng.below(30) == 0 {
                    rng.next_u64() as i64
                } else {
                    jitter - 30_000
                }),
                size: DataSize::bytes(size),
                group: if rng.below(40) == 0 {
                    rng.next_u64()
                } else {
                    step / 4
                },
                ssrc: 1,
                // Bad input includes padding: it reaches the probe detector.
                kind: if rng.below(5) == 0 {
                    PacketKind::Padding
                } else {
                    PacketKind::Media
                },
            });
            if results.len() > rng.below(40) as usize {
                if rng.below(5) == 0 {
                    results.reverse();
                }
                let remb = rx.poll_remb(now);
                let loss = (rng.below(10) == 0).then(|| LossReport {
                    fraction_lost: rng.next_f64() * 2.0 - 0.5,
                    cumulative_lost: rng.next_u64() as i64,
                    extended_highest_seq: rng.next_u64() as u32,
                });
                let fb = Feedback {
                    packets: &results,
                    remb,
                    loss,
                    rtt: (rng.below(3) == 0).then(|| Duration::from_micros(rng.below(1 << 40))),
                    report_time: (rng.below(3) == 0)
                        .then(|| RemoteTime::from_micros(rng.next_u64() as i64)),
                };
                c.on_feedback(&fb, now);
                if rng.below(4) == 0 {
                    // Duplicate the whole report.
                    c.on_feedback(&fb, now);
                }
                results.clear();
            }
            rx.handle_timeout(now);
            let est = rx.estimate();
            assert!(
                est >= cfg.min_bitrate && est <= cfg.max_bitrate,
                "receiver estimate {est}"
            );
            check(&c, &cfg, "random garbage");
        }
        for (name, v) in c.stats().extra.into_iter().chain(rx.stats()) {
            assert!(v.is_finite(), "{name} = {v}");
        }
        let later = t0 + Duration::from_secs(2_000_000);
        recovers(&mut c, &cfg, later, (1 << 50, 1 << 50), "random garbage");
    }
}

#[test]
fn a_config_the_equations_cannot_run_with_is_refused_by_name() {
    let t0 = Instant::now();
    type Spoil = fn(&mut GccConfig);
    let cases: [(&str, Spoil); 6] = [
        ("min_bitrate", |c| c.min_bitrate = Bitrate::mbps(3)),
        ("start_bitrate", |c| c.start_bitrate = Bitrate::kbps(10)),
        ("alpha", |c| c.alpha = 1.5),
        ("kalman_q", |c| c.kalman_q = f64::NAN),
        ("loss_low", |c| c.loss_low = 0.2),
        ("remb_interval", |c| c.remb_interval = Duration::ZERO),
    ];
    for (field, spoil) in cases {
        let mut cfg = GccConfig::default();
        spoil(&mut cfg);
        let e = cfg.validate().expect_err(field);
        assert_eq!(e.field, field, "{e}");
        assert!(cfg.build(t0).is_err(), "{field}");
        assert!(cfg.build_receiver(t0).is_err(), "{field}");
    }
    for cfg in configs() {
        assert!(cfg.validate().is_ok());
    }
}

/// A receiver restarted mid-session (a new process, a new clock): its arrival times step back
/// or ahead and then run on from there. The controller must follow the new clock as it
/// followed the old one.
#[test]
fn a_remote_clock_that_steps_is_followed() {
    let old = 5_000_000_000;
    for (step, new) in [("back", 1_000_000), ("ahead", 3 * old)] {
        for cfg in configs() {
            let t0 = Instant::now() + Duration::from_secs(3600);
            let mut c = cfg.build_controller(t0).expect("a valid config");
            let (_, first) = clean_run(&mut c, &cfg, t0, 0, old, 10);
            let steps = |c: &dyn Controller| c.stats().extra_value("remote_clock_steps");
            recovers(
                &mut c,
                &cfg,
                t0 + Duration::from_secs(10),
                (1_000, new),
                &format!("a remote clock that stepped {step} (target {first} before)"),
            );
            if cfg.mode == GccMode::SendSideTwcc {
                assert_eq!(steps(&c), Some(1.0), "stepped {step}: one step counted");
            }
        }
    }
}
