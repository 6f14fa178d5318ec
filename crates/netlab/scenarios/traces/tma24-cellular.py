#!/usr/bin/env python3
"""Synthetic 4G downlink trace for TMA24 §III-B (Fig. 4, Table I), in Mahimahi's format.

    python3 crates/netlab/scenarios/traces/tma24-cellular.py | gzip -9n > crates/netlab/scenarios/traces/tma24-cellular.mahimahi.gz

Each output line is a millisecond at which one 1500-byte packet may leave (a Mahimahi
delivery opportunity); the file covers 360 s and loops after that. Deterministic: a seeded
Mersenne Twister (Python's `random.Random`, stable across Python 3 versions) and nothing else
random. Statistics go to stderr.

The paper replays a real Orange 4G capture it does not name (cloud-gaming-traces.lhs.loria.fr
lists static traces of 40-220 Mbit/s mean and a 110 km/h "Highway" one of 45 Mbit/s mean). What
the paper says of its trace, and how this one follows it:
  - a 4G link whose capacity "can quickly vary over time": the rate is the product of two
    log-normal processes (AR(1) in log space every 20 ms: sigma 0.45 with a 100 ms correlation
    time, sigma 0.1 with 5 s), scaled so the whole file, events included, averages 45 Mbit/s
    (the Highway trace's mean; Trace A's is 40) before clamping to 2-100 Mbit/s (44.5 Mbit/s
    as written; 1-s rates: sd 9.8, p5 30.1, p50 44.3, p95 60.3 Mbit/s); within each
    millisecond the opportunities are Poisson, so they come in uneven bursts as a real
    scheduler's do;
  - "a short loss of connectivity ... around t=50s" with latency above 300 ms: no opportunity
    at all for 600 ms from t = 50.0 s;
  - a second "bandwidth decrease event" around t = 105 s, the other of the "two punctual
    latency spikes due to ... short disconnections": a 250 ms outage from t = 105.0 s, then
    22 Mbit/s for 3 s;
  - a third, milder bandwidth decrease around t = 330 s ("latency less impacted"): 22 Mbit/s
    from t = 330 s to 335 s, no outage.
The variation was sized against Table I's "No CCA" column (the platform at a constant
30 Mbit/s): 30 Mbit/s in 60 frames a second replayed through this file into an unbounded FIFO
waits 49.3 ms on average, 42.2 / 27.9 / 15.3 / 8.0 % of packets over 10 / 20 / 50 / 100 ms
(paper: 47.9 ms, 99.8 / 85.2 / 21.1 / 6.8 %; `--no-cca` prints this replay). The mean and the
tail roughly match; the paper's 99.8 % over 10 ms and 85.2 % over 20 ms need a standing queue
this trace does not make.
"""

import collections
import math
import random
import sys

SEED = 24
PERIOD_MS = 360_000
STEP_MS = 20
MEAN_BPS = 45e6
# (sigma, correlation time in s) of the fast and the slow log-rate component.
FAST = (0.45, 0.1)
SLOW = (0.1, 5.0)
MIN_BPS, MAX_BPS = 2e6, 100e6
PACKET_BITS = 1500 * 8

# (start ms, end ms, rate in bit/s): fixed segments replacing the process.
EVENTS = [
    (50_000, 50_600, 0.0),
    (105_000, 105_250, 0.0),
    (105_250, 108_250, 22e6),
    (330_000, 335_000, 22e6),
]


def gauss(rng):
    """A standard normal draw (Box-Muller on random(), which is stable across versions)."""
    u1 = 1.0 - rng.random()
    u2 = rng.random()
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def poisson(rng, lam):
    """A Poisson draw (Knuth; lam is at most 100e6 * 1e-3 / 12000 < 9 here)."""
    if lam <= 0.0:
        return 0
    limit = math.exp(-lam)
    k, p = 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def no_cca(ops, rate_bps=30e6, fps=60):
    """Table I's "No CCA" case: `rate_bps` in `fps` bursts a second through `ops` into an
    unbounded FIFO. Returns the mean wait (ms) and the % of packets over 10/20/50/100 ms."""
    per_frame = rate_bps / fps / PACKET_BITS
    queue, waits, carry, frame = collections.deque(), [], 0.0, 0
    for ms in ops:
        while frame * 1000.0 / fps <= ms:
            carry += per_frame
            n = int(carry)
            carry -= n
            queue.extend([frame * 1000.0 / fps] * n)
            frame += 1
        if queue:
            waits.append(ms - queue.popleft())
    n = len(waits)
    return sum(waits) / n, [100.0 * sum(w > t for w in waits) / n for t in (10, 20, 50, 100)]


def event_rate(ms):
    for start, end, rate in EVENTS:
        if start <= ms < end:
            return rate
    return None


def main():
    rng = random.Random(SEED)
    steps = PERIOD_MS // STEP_MS
    (sf, tf), (ss, ts) = FAST, SLOW
    rf = math.exp(-STEP_MS / 1000.0 / tf)
    rs = math.exp(-STEP_MS / 1000.0 / ts)
    xf = xs = 0.0
    base = []
    for _ in range(steps):
        xf = rf * xf + math.sqrt(1.0 - rf * rf) * sf * gauss(rng)
        xs = rs * xs + math.sqrt(1.0 - rs * rs) * ss * gauss(rng)
        base.append(math.exp(xf + xs - (sf * sf + ss * ss) / 2.0))
    # Scale the free segments so the whole trace (events included) averages MEAN_BPS.
    fixed_bits = 0.0
    free_weight = 0.0
    for ms in range(PERIOD_MS):
        r = event_rate(ms)
        if r is None:
            free_weight += base[ms // STEP_MS]
        else:
            fixed_bits += r
    scale = (MEAN_BPS * PERIOD_MS - fixed_bits) / free_weight

    out = []
    per_second = [0] * (PERIOD_MS // 1000)
    for ms in range(1, PERIOD_MS + 1):
        r = event_rate(ms - 1)
        if r is None:
            r = min(MAX_BPS, max(MIN_BPS, scale * base[(ms - 1) // STEP_MS]))
        k = poisson(rng, r / 1000.0 / PACKET_BITS)
        out.extend([ms] * k)
        per_second[(ms - 1) // 1000] += k
    if not out or out[-1] != PERIOD_MS:
        out.append(PERIOD_MS)  # the period is the last timestamp
        per_second[-1] += 1
    sys.stdout.write("".join(f"{ms}\n" for ms in out))

    rates = sorted(n * PACKET_BITS / 1e6 for n in per_second)
    mean = sum(rates) / len(rates)
    sd = math.sqrt(sum((r - mean) ** 2 for r in rates) / len(rates))
    pct = lambda q: rates[round(q * (len(rates) - 1))]
    below = sum(r < 30.0 for r in rates)
    gaps, prev = [], 0
    for ms in out:
        if ms - prev > 100:
            gaps.append((prev, ms - prev))
        prev = ms
    print(
        f"{len(out)} opportunities over {PERIOD_MS / 1000:.0f} s: mean {mean:.1f} Mbit/s, "
        f"1-s rates sd {sd:.1f}, p5 {pct(0.05):.1f}, p50 {pct(0.5):.1f}, p95 {pct(0.95):.1f}, "
        f"min {rates[0]:.1f}, max {rates[-1]:.1f}; {below} s below 30 Mbit/s; "
        f"gaps over 100 ms: "
        + ", ".join(f"{g} ms after {s / 1000:.3f} s" for s, g in gaps),
        file=sys.stderr,
    )
    if "--no-cca" in sys.argv[1:]:
        mean_wait, over = no_cca(out)
        print(
            f"No CCA (30 Mbit/s, 60 fps, unbounded FIFO): mean wait {mean_wait:.1f} ms, "
            + " / ".join(f"{o:.1f}" for o in over)
            + " % over 10 / 20 / 50 / 100 ms",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
