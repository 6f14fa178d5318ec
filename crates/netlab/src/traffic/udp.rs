//! Constant-rate UDP: a paced sender with a chosen ECN code point (IP_TOS), and a sink that
//! reads the ECN field of every datagram (IP_RECVTOS) and the one-way delay from the
//! sender's CLOCK_MONOTONIC timestamp (same clock in every namespace).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cg_types::{Bitrate, DataSize, Ecn};

use super::seq::{Arrival, SeqTracker};
use super::sleep_until_mono;
use crate::sys::mono_ns;
use crate::{Error, Result};

/// Sender settings.
#[derive(Debug, Clone)]
pub struct UdpSend {
    /// Receiver.
    pub dst: SocketAddr,
    /// Payload bytes per datagram.
    pub size: usize,
    /// Rate steps (seconds since t0, rate).
    pub steps: Vec<(f64, Bitrate)>,
    /// ECN code point to send.
    pub ecn: Ecn,
    /// t0 (CLOCK_MONOTONIC ns).
    pub t0_ns: u64,
    /// Start, seconds since t0.
    pub start: f64,
    /// Stop, seconds since t0.
    pub stop: f64,
}

fn set_int(fd: i32, level: i32, name: i32, v: i32) -> Result<()> {
    // SAFETY: the option value is an int of the given size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(Error::last_os(format!("setsockopt {level}/{name}")));
    }
    Ok(())
}

fn rate_at(steps: &[(f64, Bitrate)], t: f64) -> Bitrate {
    steps
        .iter()
        .rev()
        .find(|(at, _)| *at <= t)
        .or(steps.first())
        .map_or(Bitrate::ZERO, |s| s.1)
}

/// Runs the sender until its stop time.
pub fn send(cfg: &UdpSend) -> Result<()> {
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| Error::io("bind udp", e))?;
    set_int(
        sock.as_raw_fd(),
        libc::IPPROTO_IP,
        libc::IP_TOS,
        i32::from(cfg.ecn.bits()),
    )?;
    set_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20).ok();
    let size = cfg.size.clamp(16, 1472);
    let mut payload = vec![0u8; size];
    let start_ns = cfg.t0_ns + (cfg.start * 1e9) as u64;
    let stop_ns = cfg.t0_ns + (cfg.stop * 1e9) as u64;
    sleep_until_mono(start_ns);
    let mut next = start_ns;
    let mut seq: u64 = 0;
    loop {
        let now = mono_ns();
        if now >= stop_ns {
            break;
        }
        if next > now {
            // Sleep (precise timers, no busy-wait: the run may hold a high priority).
            std::thread::sleep(Duration::from_nanos(next - now));
            continue;
        }
        if now - next > 200_000_000 {
            next = now; // fell far behind (stalled): do not burst to catch up
        }
        let t = (next as f64 - cfg.t0_ns as f64) / 1e9;
        let rate = rate_at(&cfg.steps, t);
        let Some(gap) = rate.time_to_send(DataSize::bytes(size as u64 + 28)) else {
            next += 100_000_000;
            continue;
        };
        payload[0..8].copy_from_slice(&seq.to_be_bytes());
        payload[8..16].copy_from_slice(&mono_ns().to_be_bytes());
        // A full socket buffer or unreachable peer is not fatal for a CBR source.
        let _ = sock.send_to(&payload, cfg.dst);
        seq += 1;
        next += gap.as_nanos() as u64;
    }
    Ok(())
}

/// Per-bin sink statistics.
#[derive(Debug, Clone, Copy, Default)]
struct Bin {
    bytes: u64,
    packets: u64,
    ce: u64,
    ect: u64,
    owd_sum_ns: u128,
    owd_max_ns: u64,
    /// Gaps opened minus gaps filled by late datagrams (negative in a bin where more late
    /// datagrams arrived than gaps opened).
    lost: i64,
    reordered: u64,
    duplicates: u64,
}

/// Runs a sink on `port` until `stop`; writes
/// `t_s,bytes,packets,ce,ect,owd_mean_ms,owd_max_ms,lost,reordered,duplicates` per bin
/// (`packets` and `bytes` count every datagram, copies too; `lost` is net of late arrivals,
/// see [`super::seq`]).
pub fn sink(
    port: u16,
    t0_ns: u64,
    bin: Duration,
    out: &std::path::Path,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let sock =
        UdpSocket::bind(("0.0.0.0", port)).map_err(|e| Error::io(format!("bind udp {port}"), e))?;
    let fd = sock.as_raw_fd();
    set_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
    set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20).ok();
    sock.set_read_timeout(Some(Duration::from_millis(100))).ok();
    let bin_ns = bin.as_nanos().max(1) as u64;
    let mut bins: Vec<Bin> = Vec::new();
    let mut seqs = SeqTracker::default();
    let mut buf = vec![0u8; 2048];
    let mut cmsg = [0u8; 128];
    while !stop.load(Ordering::SeqCst) {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data; zeroed is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg.as_mut_ptr().cast();
        msg.msg_controllen = cmsg.len();
        // SAFETY: msg points at valid buffers for the duration of the call.
        let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
        if n < 0 {
            continue; // timeout or EINTR: check the stop flag
        }
        let now = mono_ns();
        let n = n as usize;
        let mut tos = 0u8;
        // SAFETY: walking the control buffer the kernel filled, with the libc CMSG macros.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TOS {
                    tos = *libc::CMSG_DATA(c);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if n < 16 {
            continue;
        }
        let seq = u64::from_be_bytes(buf[0..8].try_into().expect("8-byte slice"));
        let sent = u64::from_be_bytes(buf[8..16].try_into().expect("8-byte slice"));
        let i = (now.saturating_sub(t0_ns) / bin_ns) as usize;
        if i > 1_000_000 {
            continue;
        }
        if bins.len() <= i {
            bins.resize(i + 1, Bin::default());
        }
        let b = &mut bins[i];
        b.bytes += n as u64;
        b.packets += 1;
        let ecn = Ecn::from_bits(tos);
        if ecn.is_ce() {
            b.ce += 1;
        }
        if ecn.is_ect() {
            b.ect += 1;
        }
        let owd = now.saturating_sub(sent);
        b.owd_sum_ns += u128::from(owd);
        b.owd_max_ns = b.owd_max_ns.max(owd);
        match seqs.arrive(seq) {
            Arrival::InOrder { gap } => {
                b.lost = b
                    .lost
                    .saturating_add(i64::try_from(gap).unwrap_or(i64::MAX));
            }
            Arrival::Late => {
                b.lost = b.lost.saturating_sub(1);
                b.reordered += 1;
            }
            Arrival::Duplicate => b.duplicates += 1,
        }
    }
    let mut w = BufWriter::new(File::create(out).map_err(|e| Error::io("create udp csv", e))?);
    writeln!(
        w,
        "t_s,bytes,packets,ce,ect,owd_mean_ms,owd_max_ms,lost,reordered,duplicates"
    )
    .ok();
    for (i, b) in bins.iter().enumerate() {
        let mean = if b.packets > 0 {
            b.owd_sum_ns as f64 / b.packets as f64 / 1e6
        } else {
            0.0
        };
        writeln!(
            w,
            "{:.3},{},{},{},{},{:.3},{:.3},{},{},{}",
            i as f64 * bin.as_secs_f64(),
            b.bytes,
            b.packets,
            b.ce,
            b.ect,
            mean,
            b.owd_max_ns as f64 / 1e6,
            b.lost,
            b.reordered,
            b.duplicates
        )
        .ok();
    }
    w.flush().map_err(|e| Error::io("write udp csv", e))
}
