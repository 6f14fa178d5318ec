//! The hot path allocates nothing in steady state: after a warm-up that sizes every queue,
//! enqueue + dequeue of each qdisc, and a whole link carrying packets, make no heap
//! allocation. Counted per thread with a global allocator wrapper (this test binary only).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use cg_link::packet::{FlowId, Packet, PacketId};
use cg_link::qdisc::{LinkInfo, QdiscConfig};
use cg_link::{Link, LinkConfig, NullSink, Qdisc, presets};
use cg_types::{Bitrate, DataSize, Ecn, Rng};

struct Counting;

thread_local! {
    /// Allocations made by this thread (tests run on parallel threads).
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn allocs() -> usize {
    ALLOCS.with(|a| a.get())
}

fn count() {
    // `try_with`: the slot may already be gone while a thread shuts down.
    let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
}

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn packet(id: u64, now: Instant) -> Packet {
    let flow = FlowId::from_index((id % 16) as u16);
    let ecn = if id.is_multiple_of(2) {
        Ecn::Ect1
    } else {
        Ecn::NotEct
    };
    Packet::new(PacketId(id), flow, DataSize::bytes(1500), now, ()).with_ecn(ecn)
}

/// Runs `rounds` of 64 enqueues then 64 dequeues; returns allocations in the last half.
fn qdisc_allocs(config: QdiscConfig) -> usize {
    let mut q = config
        .build::<()>(LinkInfo::new(Bitrate::mbps(1000)), &mut Rng::new(1))
        .unwrap();
    let mut now = Instant::now();
    let mut sink = NullSink;
    let mut id = 0;
    let mut round = |q: &mut Box<dyn Qdisc<()>>| {
        for _ in 0..64 {
            q.enqueue(packet(id, now), now, &mut sink);
            id += 1;
        }
        for _ in 0..64 {
            now += Duration::from_micros(12);
            if q.poll_timeout().is_some_and(|t| t <= now) {
                q.handle_timeout(now, &mut sink);
            }
            std::hint::black_box(q.dequeue(now, &mut sink));
        }
    };
    for _ in 0..500 {
        round(&mut q);
    }
    let before = allocs();
    for _ in 0..500 {
        round(&mut q);
    }
    allocs() - before
}

#[test]
fn qdiscs_do_not_allocate_in_steady_state() {
    let configs = [
        ("droptail", QdiscConfig::default()),
        ("codel", QdiscConfig::Codel(Default::default())),
        ("pie", QdiscConfig::Pie(Default::default())),
        ("sfq", QdiscConfig::Sfq(Default::default())),
        ("fq_codel", QdiscConfig::FqCodel(Default::default())),
        ("dualpi2", QdiscConfig::Dualpi2(Default::default())),
        (
            "htb",
            presets::tma24_htb(Bitrate::mbps(1000), Default::default()).unwrap(),
        ),
    ];
    for (name, c) in configs {
        assert_eq!(qdisc_allocs(c), 0, "{name} allocated on the hot path");
    }
}

#[test]
fn a_link_does_not_allocate_in_steady_state() {
    let cfg = LinkConfig {
        event_limit: Some(4096),
        ..LinkConfig::constant(Bitrate::mbps(1000)).with_delay(Duration::from_millis(10))
    };
    let mut link: Link<()> = Link::new(cfg).unwrap();
    let mut now = Instant::now();
    let mut id = 0;
    let mut step = |link: &mut Link<()>| {
        link.handle_packet(packet(id, now), now);
        id += 1;
        now += Duration::from_micros(12);
        while link.poll_delivery(now).is_some() {}
    };
    for _ in 0..30_000 {
        step(&mut link);
    }
    let before = allocs();
    for _ in 0..30_000 {
        step(&mut link);
    }
    assert_eq!(allocs() - before, 0);
}
