//! Per-packet work of the TUN forwarder outside cg-link: header parsing, CE rewriting with the
//! IPv4 checksum update, and the per-packet log record. (The whole-process figures — CPU and
//! timer lateness at 10–200 Mb/s — come from `netlab bench`.)

use cg_netlab::emu::record::{Dir, Kind, Record};
use cg_netlab::packet;
use cg_types::Ecn;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn v4_tcp() -> Vec<u8> {
    let mut p = vec![0u8; 1500];
    p[..20].copy_from_slice(&[
        0x45, 0x02, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 77, 1, 2, 10, 77, 101, 2,
    ]);
    let c = packet::ipv4_checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p[20..24].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51]);
    p
}

fn bench(c: &mut Criterion) {
    let pkt = v4_tcp();
    c.bench_function("parse ipv4 header", |b| {
        b.iter(|| packet::parse(black_box(&pkt)))
    });
    let mut p = pkt.clone();
    c.bench_function("set CE + checksum update", |b| {
        b.iter(|| {
            packet::set_ecn(black_box(&mut p), Ecn::Ce);
            packet::set_ecn(black_box(&mut p), Ecn::Ect0);
        })
    });
    let r = Record {
        t_ns: 1,
        dur_ns: 2,
        flow: 3,
        size: 1500,
        kind: Kind::Delivered,
        reason: 0,
        dir: Dir::Forward,
    };
    let mut out = Vec::with_capacity(1 << 20);
    c.bench_function("encode log record", |b| {
        b.iter(|| {
            if out.len() > (1 << 19) {
                out.clear();
            }
            black_box(&r).write_to(&mut out).unwrap();
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
