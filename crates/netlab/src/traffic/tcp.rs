//! Kernel TCP flows: a bulk (optionally rate-capped, optionally on/off) sender that samples
//! `TCP_INFO` (the endpoint RTT MMSys16 plots), and a sink counting received bytes.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use cg_types::Bitrate;

use super::{allowed_bytes, since_t0, sleep_until_mono};
use crate::{Error, Result};

/// Sender settings.
#[derive(Debug, Clone)]
pub struct TcpSend {
    /// Receiver address.
    pub dst: SocketAddr,
    /// Congestion control name (`cubic`, `bbr`, `reno`).
    pub cc: String,
    /// Run t0 (CLOCK_MONOTONIC ns).
    pub t0_ns: u64,
    /// Start, seconds since t0.
    pub start: f64,
    /// Stop, seconds since t0.
    pub stop: f64,
    /// On/off periods in seconds.
    pub on_off: Option<(f64, f64)>,
    /// Application rate cap steps (empty: unlimited).
    pub steps: Vec<(f64, Bitrate)>,
    /// CSV output.
    pub out: std::path::PathBuf,
}

fn set_cc(s: &TcpStream, cc: &str) -> Result<()> {
    // SAFETY: the option value is a byte string of the given length.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(Error::last_os(format!("TCP_CONGESTION {cc}")));
    }
    Ok(())
}

/// `TCP_INFO` of a socket: (rtt µs, cwnd packets, bytes acked, total retransmits).
fn tcp_info(s: &TcpStream) -> Option<(u32, u32, u64, u32)> {
    // SAFETY: tcp_info is plain old data.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `ti` is writable for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some((
        ti.tcpi_rtt,
        ti.tcpi_snd_cwnd,
        ti.tcpi_bytes_acked,
        ti.tcpi_total_retrans,
    ))
}

/// The connection's MSS (`TCP_MAXSEG`), or 1448 bytes (Ethernet with timestamps) if unknown.
fn mss(s: &TcpStream) -> usize {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` is writable for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    match usize::try_from(v) {
        Ok(m) if rc == 0 && (64..=65_535).contains(&m) => m,
        _ => 1448,
    }
}

/// Bytes to write now under a rate cap: whole segments only. Writing whatever the budget
/// allows (a few bytes a loop turn) with `TCP_NODELAY` sent a flood of sub-MSS segments —
/// 211 bytes on average for a BBR flow capped at 10 Mbit/s, which then lost half of them in a
/// 250-packet drop-tail holding 3 ms of data. iperf3 writes whole blocks; whole segments keep
/// the segments full and the rate as smooth as the cap. Nothing while under one segment.
fn capped_write_len(budget: f64, mss: usize, chunk: usize) -> usize {
    if !budget.is_finite() {
        return chunk;
    }
    let mss = mss.max(1);
    (budget.max(0.0) as usize).min(chunk) / mss * mss
}

/// Connects with `cc` set before the handshake (so it governs the whole connection).
fn connect(dst: SocketAddr, cc: &str) -> Result<TcpStream> {
    // std has no unconnected TcpStream; create the socket by hand to set TCP_CONGESTION first.
    // SAFETY: plain socket(2) call.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(Error::last_os("socket"));
    }
    // SAFETY: `fd` is a fresh socket we own.
    let s = unsafe { <TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    set_cc(&s, cc)?;
    let SocketAddr::V4(v4) = dst else {
        return Err(Error::Process("IPv4 destinations only".into()));
    };
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*v4.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `sa` is a valid sockaddr_in of the given length.
    let rc = unsafe {
        libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(Error::last_os(format!("connect {dst}")));
    }
    Ok(s)
}

/// Runs the sender; writes `t_s,conn,rtt_ms,cwnd,bytes_acked,retrans` every 100 ms.
pub fn send(cfg: &TcpSend) -> Result<()> {
    let mut out = BufWriter::new(
        File::create(&cfg.out)
            .map_err(|e| Error::io(format!("create {}", cfg.out.display()), e))?,
    );
    writeln!(out, "t_s,conn,rtt_ms,cwnd,bytes_acked,retrans").ok();
    let chunk = vec![0x5au8; 16 * 1024];
    let mut conn = 0u32;
    let mut period_start = cfg.start;
    while period_start < cfg.stop {
        let period_end = match cfg.on_off {
            Some((on, _)) => (period_start + on).min(cfg.stop),
            None => cfg.stop,
        };
        sleep_until_mono(cfg.t0_ns + (period_start * 1e9) as u64);
        conn += 1;
        let s = match connect(cfg.dst, &cfg.cc) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tcp-send: {e}");
                std::thread::sleep(Duration::from_millis(200));
                if let Some((on, off)) = cfg.on_off {
                    period_start += on + off;
                } else {
                    period_start = since_t0(cfg.t0_ns);
                }
                continue;
            }
        };
        s.set_write_timeout(Some(Duration::from_millis(20))).ok();
        s.set_nodelay(true).ok();
        let seg = mss(&s).min(chunk.len());
        let mut w = &s;
        let mut sent: f64 = 0.0;
        let mut next_sample = since_t0(cfg.t0_ns);
        loop {
            let now = since_t0(cfg.t0_ns);
            if now >= period_end {
                break;
            }
            if now >= next_sample {
                if let Some((rtt, cwnd, acked, retr)) = tcp_info(&s) {
                    writeln!(
                        out,
                        "{now:.3},{conn},{:.3},{cwnd},{acked},{retr}",
                        f64::from(rtt) / 1000.0
                    )
                    .ok();
                }
                next_sample = now + 0.1;
            }
            let budget = if cfg.steps.is_empty() {
                f64::INFINITY
            } else {
                allowed_bytes(&cfg.steps, period_start, now) - sent
            };
            let n = capped_write_len(budget, seg, chunk.len());
            if n == 0 {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            match w.write(&chunk[..n]) {
                Ok(k) => sent += k as f64,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut
                        || e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("tcp-send: write: {e}");
                    break;
                }
            }
        }
        // Stop means stop: abort (RST) rather than let the kernel drain a send buffer of
        // hundreds of kilobytes after the flow's stop or the end of its on-period.
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: the option value is a linger struct of the given size.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        drop(s);
        match cfg.on_off {
            Some((on, off)) => period_start += on + off,
            None => break,
        }
    }
    out.flush().map_err(|e| Error::io("write csv", e))
}

/// Runs a sink on `port` until `stop`: counts bytes per `bin` and writes `t_s,bytes`.
pub fn sink(
    port: u16,
    t0_ns: u64,
    bin: Duration,
    out: &std::path::Path,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let listener = TcpListener::bind(("0.0.0.0", port))
        .map_err(|e| Error::io(format!("bind tcp {port}"), e))?;
    listener.set_nonblocking(true).ok();
    let nbins = 100_000usize;
    let bins: Arc<Vec<AtomicU64>> = Arc::new((0..nbins).map(|_| AtomicU64::new(0)).collect());
    let bin_s = bin.as_secs_f64();
    let mut handles = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false).ok();
                s.set_read_timeout(Some(Duration::from_millis(100))).ok();
                let bins = bins.clone();
                let stop = stop.clone();
                handles.push(std::thread::spawn(move || {
                    let mut buf = vec![0u8; 256 * 1024];
                    while !stop.load(Ordering::SeqCst) {
                        match s.read(&mut buf) {
                            Ok(0) => break,
                            Ok(n) => {
                                let i = (since_t0(t0_ns).max(0.0) / bin_s) as usize;
                                if let Some(b) = bins.get(i) {
                                    b.fetch_add(n as u64, Ordering::Relaxed);
                                }
                            }
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => break,
                        }
                    }
                }));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    for h in handles {
        h.join().ok();
    }
    let mut w = BufWriter::new(File::create(out).map_err(|e| Error::io("create sink csv", e))?);
    writeln!(w, "t_s,bytes").ok();
    let last = bins
        .iter()
        .rposition(|b| b.load(Ordering::Relaxed) > 0)
        .unwrap_or(0);
    for (i, b) in bins.iter().enumerate().take(last + 1) {
        writeln!(w, "{:.3},{}", i as f64 * bin_s, b.load(Ordering::Relaxed)).ok();
    }
    w.flush().map_err(|e| Error::io("write sink csv", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_flow_writes_whole_segments_only() {
        assert_eq!(capped_write_len(1447.9, 1448, 16_384), 0);
        assert_eq!(capped_write_len(1448.0, 1448, 16_384), 1448);
        assert_eq!(capped_write_len(5000.0, 1448, 16_384), 4344);
        assert_eq!(capped_write_len(1e9, 1448, 16_384), 15_928);
        assert_eq!(capped_write_len(-3.0, 1448, 16_384), 0);
        assert_eq!(
            capped_write_len(f64::INFINITY, 1448, 16_384),
            16_384,
            "uncapped"
        );
    }
}
