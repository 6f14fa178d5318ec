//! The RTT check: a UDP echo server and a prober that reports the measured round-trip times.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sys::mono_ns;
use crate::{Error, Result};

/// Port of the echo server on every receiver.
pub const ECHO_PORT: u16 = 7007;

/// Echoes datagrams back until `stop`.
pub fn echo(stop: Arc<AtomicBool>) -> Result<()> {
    let sock = UdpSocket::bind(("0.0.0.0", ECHO_PORT)).map_err(|e| Error::io("bind echo", e))?;
    sock.set_read_timeout(Some(Duration::from_millis(100))).ok();
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::SeqCst) {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            let _ = sock.send_to(&buf[..n], from);
        }
    }
    Ok(())
}

/// Result of a probe run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeResult {
    /// RTT samples in ms (lost probes omitted).
    pub rtts_ms: Vec<f64>,
    /// Probes sent.
    pub sent: u32,
}

impl ProbeResult {
    /// Median RTT, ms.
    pub fn median_ms(&self) -> Option<f64> {
        let mut v = self.rtts_ms.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    }

    /// Minimum RTT, ms.
    pub fn min_ms(&self) -> Option<f64> {
        self.rtts_ms.iter().copied().min_by(f64::total_cmp)
    }
}

/// Sends `count` 32-byte probes `gap` apart to `dst`, waiting for each echo.
pub fn probe(dst: SocketAddr, count: u32, gap: Duration) -> Result<ProbeResult> {
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| Error::io("bind probe", e))?;
    sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
    let mut rtts = Vec::new();
    let mut buf = [0u8; 64];
    for seq in 0..count {
        let sent = mono_ns();
        let mut p = [0u8; 32];
        p[..4].copy_from_slice(&seq.to_be_bytes());
        let _ = sock.send_to(&p, dst);
        let deadline = sent + 1_000_000_000;
        while mono_ns() < deadline {
            if let Ok((n, _)) = sock.recv_from(&mut buf)
                && n >= 4
                && buf[..4] == seq.to_be_bytes()
            {
                rtts.push((mono_ns() - sent) as f64 / 1e6);
                break;
            }
        }
        std::thread::sleep(gap);
    }
    Ok(ProbeResult {
        rtts_ms: rtts,
        sent: count,
    })
}
