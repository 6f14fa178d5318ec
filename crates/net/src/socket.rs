//! The UDP socket layer: ECN per socket and per datagram, kernel receive timestamps, batched
//! I/O with `sendmmsg`/`recvmmsg`, UDP GSO on send and UDP GRO on receive.
//!
//! One [`UdpSocket`] is one non-blocking kernel socket (IPv4, or IPv6 with `IPV6_V6ONLY`).
//! Sending: [`UdpSocket::send_batch`] groups consecutive equal-size datagrams with the same
//! ECN into one `UDP_SEGMENT` (GSO) message and hands all messages to one `sendmmsg`; if the
//! kernel or device refuses GSO the socket falls back to one message per datagram for good.
//! Receiving: [`UdpSocket::recv_batch`] fills a [`RecvBatch`] with one `recvmmsg`, each message
//! with 256 bytes of control space, and [`RecvBatch::datagrams`] splits
//! GRO-coalesced buffers back into the datagrams that were sent, each carrying the ECN code
//! point and kernel timestamp of its buffer (GRO merges only packets with equal TOS, so the
//! one TOS control message is right for every segment).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use cg_types::{DataSize, Ecn};
use socket2::{Domain, Protocol, Socket, Type};

use crate::clock::ClockPair;
use crate::error::Error;
use crate::sys::{self, CmsgWriter, ControlBuf, RECV_CONTROL_LEN, RawAddr, SEND_CONTROL_LEN};

/// The largest UDP payload (65535 − 8 UDP − 20 IPv4 header bytes).
pub const MAX_UDP_PAYLOAD: usize = 65_507;
/// Segments per GSO message: the kernel's `UDP_MAX_SEGMENTS` was 64 before Linux 6.9.
const MAX_GSO_SEGMENTS: usize = 64;
/// Payload bytes per GSO message, under [`MAX_UDP_PAYLOAD`] with IPv6 headers too.
const MAX_GSO_BYTES: usize = 65_000;
/// `sendmmsg`/`recvmmsg` take at most `UIO_MAXIOV` messages.
const MAX_MESSAGES: usize = 1024;

/// How to open a [`UdpSocket`].
#[derive(Debug, Clone)]
pub struct SocketConfig {
    /// Local address to bind. Default `0.0.0.0:0`. An IPv6 address opens an IPv6-only socket.
    pub bind: SocketAddr,
    /// ECN code point of datagrams sent without a per-datagram one (`IP_TOS` /
    /// `IPV6_TCLASS`). Default Not-ECT. ECT(1) is the L4S identifier (RFC 9331 §4).
    pub ecn: Ecn,
    /// Let the kernel coalesce received datagrams (`UDP_GRO`). Default `true`: ECN survives
    /// because every message gets 256 bytes of control space (see the
    /// crate docs, "GRO").
    pub gro: bool,
    /// Batch equal-size datagrams into `UDP_SEGMENT` (GSO) sends. Default `true`; switched off
    /// by itself if the kernel refuses it.
    pub gso: bool,
    /// `SO_RCVBUF` to ask for (with `SO_RCVBUFFORCE` when privileged). Default 4 MiB, enough
    /// for ~1700 full-size datagrams while the receiving task is descheduled.
    pub recv_buffer: Option<DataSize>,
    /// `SO_SNDBUF` to ask for. Default 4 MiB.
    pub send_buffer: Option<DataSize>,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            bind: SocketAddr::from(([0, 0, 0, 0], 0)),
            ecn: Ecn::NotEct,
            gro: true,
            gso: true,
            recv_buffer: Some(DataSize::kibibytes(4096)),
            send_buffer: Some(DataSize::kibibytes(4096)),
        }
    }
}

/// One datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The UDP payload.
    pub payload: Bytes,
    /// Its ECN code point; `None` sends with the socket's ([`SocketConfig::ecn`]).
    pub ecn: Option<Ecn>,
    /// Where it goes; `None` sends to the batch's destination (the `dest` of
    /// [`UdpSocket::send_batch`], the driver's fixed peer). A session that learns its peer (a
    /// WebRTC peer answering ICE checks from several candidates) sets it per datagram.
    pub destination: Option<SocketAddr>,
}

/// One received datagram.
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    /// Who sent it.
    pub source: SocketAddr,
    /// The ECN code point of its IP header; `None` only if the kernel sent no TOS/traffic-class
    /// control message (which the crate's control-space sizing prevents; counted if it happens).
    pub ecn: Option<Ecn>,
    /// The kernel's receive timestamp (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`), as reported.
    pub kernel_time: Option<SystemTime>,
    /// The arrival time on the [`Instant`] timeline: `kernel_time` mapped onto it (see the crate
    /// docs, "Time"), or the time `recvmmsg` returned if the kernel gave no stamp.
    pub arrival: Instant,
    /// The UDP payload.
    pub payload: &'a [u8],
}

/// A send that failed; the datagrams before it in the batch were sent.
#[derive(Debug)]
pub struct SendFailure {
    /// The OS error. `WouldBlock` means nothing was lost: the socket buffer is full, retry
    /// when writable.
    pub error: io::Error,
    /// How many datagrams (from the start of what was left) the failed message carried.
    pub datagrams: usize,
}

/// A non-blocking UDP socket with ECN, timestamps and batched I/O.
#[derive(Debug)]
pub struct UdpSocket {
    socket: Socket,
    local: SocketAddr,
    ecn: Ecn,
    gso: bool,
    gro: bool,
}

impl UdpSocket {
    /// Opens, configures and binds a socket.
    pub fn bind(config: &SocketConfig) -> Result<Self, Error> {
        let domain = Domain::for_address(config.bind);
        let socket =
            Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)).map_err(Error::io("socket"))?;
        socket
            .set_nonblocking(true)
            .map_err(Error::io("set_nonblocking"))?;
        socket.set_cloexec(true).map_err(Error::io("set_cloexec"))?;
        let fd = socket.as_raw_fd();
        let v6 = config.bind.is_ipv6();
        if v6 {
            socket
                .set_only_v6(true)
                .map_err(Error::io("setsockopt(IPV6_V6ONLY)"))?;
            sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)
                .map_err(Error::io("setsockopt(IPV6_RECVTCLASS)"))?;
        } else {
            sys::setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)
                .map_err(Error::io("setsockopt(IP_RECVTOS)"))?;
        }
        sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
            .map_err(Error::io("setsockopt(SO_TIMESTAMPNS)"))?;
        sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1)
            .map_err(Error::io("setsockopt(SO_RXQ_OVFL)"))?;
        let gro = config.gro && sys::setsockopt_int(fd, libc::SOL_UDP, libc::UDP_GRO, 1).is_ok();
        if let Some(size) = config.recv_buffer {
            let bytes = i32::try_from(size.as_bytes()).unwrap_or(i32::MAX);
            if sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes).is_err() {
                sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes)
                    .map_err(Error::io("setsockopt(SO_RCVBUF)"))?;
            }
        }
        if let Some(size) = config.send_buffer {
            let bytes = i32::try_from(size.as_bytes()).unwrap_or(i32::MAX);
            if sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, bytes).is_err() {
                sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, bytes)
                    .map_err(Error::io("setsockopt(SO_SNDBUF)"))?;
            }
        }
        socket
            .bind(&config.bind.into())
            .map_err(Error::io("bind"))?;
        let local = socket
            .local_addr()
            .map_err(Error::io("getsockname"))?
            .as_socket()
            .ok_or(Error::Io {
                op: "getsockname",
                source: io::ErrorKind::InvalidData.into(),
            })?;
        let mut this = UdpSocket {
            socket,
            local,
            ecn: Ecn::NotEct,
            gso: config.gso,
            gro,
        };
        this.set_ecn(config.ecn)?;
        Ok(this)
    }

    /// Sets the socket's ECN code point (`IP_TOS` / `IPV6_TCLASS`), used by datagrams that
    /// carry none of their own.
    pub fn set_ecn(&mut self, ecn: Ecn) -> Result<(), Error> {
        let fd = self.socket.as_raw_fd();
        if self.local.is_ipv6() {
            sys::setsockopt_int(
                fd,
                libc::IPPROTO_IPV6,
                libc::IPV6_TCLASS,
                i32::from(ecn.bits()),
            )
            .map_err(Error::io("setsockopt(IPV6_TCLASS)"))?;
        } else {
            sys::setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, i32::from(ecn.bits()))
                .map_err(Error::io("setsockopt(IP_TOS)"))?;
        }
        self.ecn = ecn;
        Ok(())
    }

    /// Sends `batch` — each datagram to its own [`Transmit::destination`], or to `dest` — with
    /// as few system calls as the kernel allows (one `sendmmsg` of GSO messages; a message
    /// carries the datagrams of one destination). Returns how many datagrams from the start
    /// of `batch` were sent (at least one), or the failure of the first message.
    pub fn send_batch(
        &mut self,
        dest: SocketAddr,
        batch: &[Transmit],
    ) -> Result<usize, SendFailure> {
        if batch.is_empty() {
            return Ok(0);
        }
        let family = |d: SocketAddr| d.is_ipv6() == self.local.is_ipv6();
        if !family(batch[0].destination.unwrap_or(dest)) {
            return Err(SendFailure {
                error: io::ErrorKind::InvalidInput.into(),
                datagrams: 1,
            });
        }
        // A datagram of the other address family ends the batch here (it fails on its own
        // in the next call).
        let batch = match batch
            .iter()
            .position(|t| !family(t.destination.unwrap_or(dest)))
        {
            Some(n) => &batch[..n],
            None => batch,
        };
        loop {
            match self.send_once(dest, batch) {
                Err((error, group)) if group > 1 && self.gso && gso_refused(&error) => {
                    tracing::warn!(%error, "UDP GSO refused, falling back to one datagram per message");
                    self.gso = false;
                }
                Err((error, group)) => {
                    return Err(SendFailure {
                        error,
                        datagrams: group,
                    });
                }
                Ok(sent) => return Ok(sent),
            }
        }
    }

    /// Sends one datagram.
    pub fn send(&mut self, dest: SocketAddr, transmit: &Transmit) -> io::Result<()> {
        self.send_batch(dest, std::slice::from_ref(transmit))
            .map(drop)
            .map_err(|f| f.error)
    }

    /// Receives what is queued (up to the batch's capacity) without blocking; returns the
    /// number of kernel messages (each possibly several GRO segments). `WouldBlock` if none.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.recv(self.socket.as_raw_fd())
    }

    /// The bound local address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The socket's ECN code point.
    pub fn ecn(&self) -> Ecn {
        self.ecn
    }

    /// Whether sends are batched with UDP GSO.
    pub fn gso_enabled(&self) -> bool {
        self.gso
    }

    /// Whether the kernel may coalesce received datagrams (UDP GRO).
    pub fn gro_enabled(&self) -> bool {
        self.gro
    }

    /// A [`RecvBatch`] of `messages` slots sized for this socket: 64 KiB per slot with GRO (a
    /// coalesced buffer), 9 KiB (a jumbo frame) without.
    pub fn recv_batch_buffer(&self, messages: usize) -> RecvBatch {
        RecvBatch::new(messages, if self.gro { 1 << 16 } else { 9216 })
    }

    /// One `sendmmsg` of the first messages of `batch`. On failure, the error and the number of
    /// datagrams in the message that failed.
    fn send_once(
        &mut self,
        dest: SocketAddr,
        batch: &[Transmit],
    ) -> Result<usize, (io::Error, usize)> {
        let groups = self.group(batch);
        let mut addrs: Vec<RawAddr> = groups
            .iter()
            .map(|g| RawAddr::new(&batch[g.start].destination.unwrap_or(dest)))
            .collect();
        let mut iovs: Vec<libc::iovec> = batch
            .iter()
            .map(|t| libc::iovec {
                iov_base: t.payload.as_ptr() as *mut libc::c_void,
                iov_len: t.payload.len(),
            })
            .collect();
        let mut control = vec![ControlBuf::<SEND_CONTROL_LEN>::zeroed(); groups.len()];
        let v6 = self.local.is_ipv6();
        let mut msgs: Vec<libc::mmsghdr> = Vec::with_capacity(groups.len());
        for ((g, ctrl), addr) in groups.iter().zip(control.iter_mut()).zip(addrs.iter_mut()) {
            let mut w = CmsgWriter::new(ctrl);
            if let Some(ecn) = batch[g.start].ecn {
                if v6 {
                    w.push(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, i32::from(ecn.bits()));
                } else {
                    w.push(libc::IPPROTO_IP, libc::IP_TOS, i32::from(ecn.bits()));
                }
            }
            if g.end - g.start > 1 {
                w.push(libc::SOL_UDP, libc::UDP_SEGMENT, g.segment as u16);
            }
            let control_len = w.len();
            // SAFETY: an all-zero msghdr is valid (null pointers, zero lengths).
            let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
            hdr.msg_name = (&mut addr.storage as *mut libc::sockaddr_storage).cast();
            hdr.msg_namelen = addr.len;
            // SAFETY: `g.start < iovs.len()` (groups partition `0..batch.len()`).
            hdr.msg_iov = unsafe { iovs.as_mut_ptr().add(g.start) };
            hdr.msg_iovlen = g.end - g.start;
            if control_len > 0 {
                hdr.msg_control = ctrl.0.as_mut_ptr().cast();
                hdr.msg_controllen = control_len as _;
            }
            msgs.push(libc::mmsghdr {
                msg_hdr: hdr,
                msg_len: 0,
            });
        }
        // SAFETY: every pointer in `msgs` (address, iovecs, control buffers, and the payloads
        // the iovecs point into) refers to memory owned by this frame or borrowed from `batch`,
        // alive and unmoved until the call returns; the kernel only reads the payloads.
        let rc = unsafe {
            libc::sendmmsg(
                self.socket.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                0,
            )
        };
        if rc < 0 {
            let g = &groups[0];
            return Err((io::Error::last_os_error(), g.end - g.start));
        }
        let sent_msgs = rc as usize;
        Ok(groups[..sent_msgs].last().map_or(0, |g| g.end))
    }

    /// Splits `batch` into messages: runs of datagrams with the same ECN and destination whose sizes equal the
    /// first one's (the last of a run may be shorter), as GSO requires; single datagrams
    /// without GSO.
    fn group(&self, batch: &[Transmit]) -> Vec<Group> {
        let mut groups = Vec::new();
        let mut i = 0;
        while i < batch.len() && groups.len() < MAX_MESSAGES {
            let segment = batch[i].payload.len();
            let mut end = i + 1;
            let mut total = segment;
            if self.gso && segment > 0 {
                while end < batch.len() && end - i < MAX_GSO_SEGMENTS {
                    let next = &batch[end];
                    let len = next.payload.len();
                    if next.ecn != batch[i].ecn
                        || next.destination != batch[i].destination
                        || len > segment
                        || len == 0
                        || total + len > MAX_GSO_BYTES
                    {
                        break;
                    }
                    total += len;
                    end += 1;
                    if len < segment {
                        break;
                    }
                }
            }
            groups.push(Group {
                start: i,
                end,
                segment,
            });
            i = end;
        }
        groups
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// Datagrams `start..end` of a batch, sent as one message of `segment`-byte GSO segments.
#[derive(Debug, Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
    segment: usize,
}

/// The errors with which a kernel or device without UDP GSO refuses `UDP_SEGMENT`.
fn gso_refused(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::EOPNOTSUPP | libc::ENOPROTOOPT)
    )
}

/// Receive buffers for [`UdpSocket::recv_batch`]: `messages` slots of data and control space,
/// reused for every call; nothing is allocated per datagram.
#[derive(Debug)]
pub struct RecvBatch {
    slot_len: usize,
    data: Vec<u8>,
    control: Vec<ControlBuf<RECV_CONTROL_LEN>>,
    /// Control bytes offered to the kernel per message (all of each buffer, except in the test
    /// that reproduces the quinn-udp defect).
    control_len: usize,
    names: Vec<libc::sockaddr_storage>,
    meta: Vec<Meta>,
    clock: ClockPair,
    stats: RecvStats,
}

/// Anomalies seen by a [`RecvBatch`] since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecvStats {
    /// Messages whose control data the kernel truncated (`MSG_CTRUNC`): their ECN or timestamp
    /// may be missing. Zero unless the control space is too small.
    pub control_truncated: u64,
    /// Messages longer than a slot (`MSG_TRUNC`), dropped.
    pub data_truncated: u64,
    /// Messages from an address family other than IPv4/IPv6, dropped.
    pub unknown_source: u64,
    /// Kernel messages that held more than one GRO-coalesced datagram.
    pub gro_coalesced: u64,
    /// Datagrams the kernel dropped on this socket for lack of buffer space (`SO_RXQ_OVFL`,
    /// cumulative, as last reported).
    pub kernel_drops: u32,
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    len: usize,
    source: Option<SocketAddr>,
    ecn: Option<Ecn>,
    kernel_time: Option<SystemTime>,
    segment: Option<usize>,
    usable: bool,
}

impl RecvBatch {
    /// Buffers for `messages` kernel messages (1..=1024) of up to `slot_len` bytes each.
    pub fn new(messages: usize, slot_len: usize) -> Self {
        let messages = messages.clamp(1, MAX_MESSAGES);
        let slot_len = slot_len.max(1);
        // SAFETY: an all-zero `sockaddr_storage` is a valid value.
        let zero_name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        RecvBatch {
            slot_len,
            data: vec![0; messages * slot_len],
            control: vec![ControlBuf::zeroed(); messages],
            control_len: RECV_CONTROL_LEN,
            names: vec![zero_name; messages],
            meta: Vec::with_capacity(messages),
            clock: ClockPair::now(),
            stats: RecvStats::default(),
        }
    }

    /// The datagrams of the last receive, GRO buffers split back into the datagrams sent.
    pub fn datagrams(&self) -> impl Iterator<Item = Datagram<'_>> + '_ {
        self.meta
            .iter()
            .enumerate()
            .filter(|(_, m)| m.usable)
            .flat_map(move |(i, m)| {
                let buf = &self.data[i * self.slot_len..i * self.slot_len + m.len];
                let stride = m.segment.unwrap_or(m.len).max(1);
                let count = m.len.div_ceil(stride).max(1);
                let arrival = m
                    .kernel_time
                    .map_or(self.clock.mono(), |k| self.clock.to_instant(k));
                let source = m.source.expect("usable messages have a source");
                (0..count).map(move |k| Datagram {
                    source,
                    ecn: m.ecn,
                    kernel_time: m.kernel_time,
                    arrival,
                    payload: &buf[k * stride..((k + 1) * stride).min(buf.len())],
                })
            })
    }

    /// Anomalies seen so far.
    pub fn stats(&self) -> RecvStats {
        self.stats
    }

    /// When the last `recvmmsg` returned.
    pub fn received_at(&self) -> Instant {
        self.clock.mono()
    }

    fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        let messages = self.control.len();
        self.meta.clear();
        let mut iovs: Vec<libc::iovec> = self
            .data
            .chunks_exact_mut(self.slot_len)
            .map(|slot| libc::iovec {
                iov_base: slot.as_mut_ptr().cast(),
                iov_len: slot.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = Vec::with_capacity(messages);
        for ((iov, ctrl), name) in iovs
            .iter_mut()
            .zip(self.control.iter_mut())
            .zip(self.names.iter_mut())
        {
            // SAFETY: an all-zero msghdr is valid.
            let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
            hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
            hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr.msg_iov = iov;
            hdr.msg_iovlen = 1;
            hdr.msg_control = ctrl.0.as_mut_ptr().cast();
            hdr.msg_controllen = self.control_len as _;
            msgs.push(libc::mmsghdr {
                msg_hdr: hdr,
                msg_len: 0,
            });
        }
        // SAFETY: each header points at its own slot, control buffer and name, all owned by
        // `self`, exclusively borrowed and unmoved for the call; the lengths given are theirs.
        let rc = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                messages as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.clock = ClockPair::now();
        let n = rc as usize;
        for (i, msg) in msgs[..n].iter().enumerate() {
            let hdr = &msg.msg_hdr;
            let control = sys::parse_control(hdr);
            let source = sys::socket_addr(&self.names[i], hdr.msg_namelen);
            if hdr.msg_flags & libc::MSG_CTRUNC != 0 {
                self.stats.control_truncated += 1;
            }
            let truncated = hdr.msg_flags & libc::MSG_TRUNC != 0;
            if truncated {
                self.stats.data_truncated += 1;
            }
            if source.is_none() {
                self.stats.unknown_source += 1;
            }
            if let Some(drops) = control.rxq_overflow {
                self.stats.kernel_drops = drops;
            }
            let len = (msg.msg_len as usize).min(self.slot_len);
            if control.gro_segment.is_some_and(|s| s < len) {
                self.stats.gro_coalesced += 1;
            }
            self.meta.push(Meta {
                len,
                source,
                ecn: control.ecn,
                kernel_time: control.kernel_time,
                segment: control.gro_segment,
                usable: !truncated && source.is_some(),
            });
        }
        Ok(n)
    }
}

// `RecvBatch` holds only plain data (its pointers are rebuilt for every call).
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<RecvBatch>();
    assert_send::<UdpSocket>();
};

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(v6: bool, gro: bool) -> (UdpSocket, UdpSocket) {
        let bind: SocketAddr = if v6 {
            "[::1]:0".parse().unwrap()
        } else {
            "127.0.0.1:0".parse().unwrap()
        };
        let tx = UdpSocket::bind(&SocketConfig {
            bind,
            ..SocketConfig::default()
        })
        .unwrap();
        let rx = UdpSocket::bind(&SocketConfig {
            bind,
            gro,
            ..SocketConfig::default()
        })
        .unwrap();
        (tx, rx)
    }

    fn recv_all(rx: &UdpSocket, want: usize) -> Vec<(Vec<u8>, Option<Ecn>)> {
        let mut batch = rx.recv_batch_buffer(32);
        let mut got = Vec::new();
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        while got.len() < want && Instant::now() < deadline {
            match rx.recv_batch(&mut batch) {
                Ok(_) => got.extend(batch.datagrams().map(|d| (d.payload.to_vec(), d.ecn))),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) => panic!("recv: {e}"),
            }
        }
        got
    }

    #[test]
    fn every_code_point_round_trips_per_datagram_on_both_families() {
        for v6 in [false, true] {
            let (mut tx, rx) = pair(v6, false);
            let all = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
            let batch: Vec<Transmit> = all
                .iter()
                .enumerate()
                .map(|(i, &e)| Transmit {
                    payload: vec![i as u8; 10].into(),
                    ecn: Some(e),
                    destination: None,
                })
                .collect();
            assert_eq!(tx.send_batch(rx.local_addr(), &batch).unwrap(), 4);
            let got = recv_all(&rx, 4);
            let ecns: Vec<_> = got.iter().map(|(_, e)| *e).collect();
            assert_eq!(ecns, all.map(Some).to_vec(), "v6={v6}");
        }
    }

    #[test]
    fn socket_code_point_applies_when_the_datagram_has_none() {
        let (mut tx, rx) = pair(false, false);
        tx.set_ecn(Ecn::Ect1).unwrap();
        tx.send(
            rx.local_addr(),
            &Transmit {
                payload: Bytes::from_static(b"x"),
                ecn: None,
                destination: None,
            },
        )
        .unwrap();
        assert_eq!(recv_all(&rx, 1)[0].1, Some(Ecn::Ect1));
    }

    #[test]
    fn gso_segments_come_back_as_the_datagrams_sent_with_their_ecn() {
        let (mut tx, rx) = pair(false, true);
        assert!(tx.gso_enabled());
        let mut batch: Vec<Transmit> = (0..10u8)
            .map(|i| Transmit {
                payload: vec![i; 1200].into(),
                ecn: Some(Ecn::Ect1),
                destination: None,
            })
            .collect();
        batch.push(Transmit {
            payload: vec![10; 300].into(),
            ecn: Some(Ecn::Ect1),
            destination: None,
        });
        assert_eq!(tx.send_batch(rx.local_addr(), &batch).unwrap(), 11);
        let mut rb = rx.recv_batch_buffer(8);
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let mut got = Vec::new();
        while got.len() < 11 && Instant::now() < deadline {
            if rx.recv_batch(&mut rb).is_ok() {
                got.extend(
                    rb.datagrams()
                        .map(|d| (d.payload.to_vec(), d.ecn, d.kernel_time.is_some())),
                );
            }
        }
        assert_eq!(got.len(), 11);
        for (i, (payload, ecn, stamped)) in got.iter().enumerate() {
            assert_eq!(payload, &batch[i].payload);
            assert_eq!(*ecn, Some(Ecn::Ect1));
            assert!(stamped);
        }
        assert!(
            rb.stats().gro_coalesced >= 1,
            "loopback GSO reaches a GRO socket coalesced"
        );
        assert_eq!(rb.stats().control_truncated, 0);
    }

    #[test]
    fn a_96_byte_control_buffer_loses_ecn_of_coalesced_datagrams() {
        // The quinn-udp 0.6.3 defect, reproduced to show that the checks above can fail: with
        // IP_PKTINFO also on (as quinn-udp has it), the kernel writes UDP_GRO (24 bytes),
        // SCM_TIMESTAMPNS (32) and IP_PKTINFO (32) before IP_TOS (24), which no longer fits.
        let (mut tx, rx) = pair(false, true);
        sys::setsockopt_int(rx.as_raw_fd(), libc::IPPROTO_IP, libc::IP_PKTINFO, 1).unwrap();
        let batch: Vec<Transmit> = (0..10u8)
            .map(|i| Transmit {
                payload: vec![i; 1200].into(),
                ecn: Some(Ecn::Ect1),
                destination: None,
            })
            .collect();
        tx.send_batch(rx.local_addr(), &batch).unwrap();
        let mut rb = rx.recv_batch_buffer(8);
        rb.control_len = 96;
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let mut got = Vec::new();
        while got.len() < 10 && Instant::now() < deadline {
            if rx.recv_batch(&mut rb).is_ok() {
                got.extend(rb.datagrams().map(|d| d.ecn));
            }
        }
        assert_eq!(got.len(), 10);
        assert!(rb.stats().control_truncated > 0);
        assert!(got.contains(&None), "ECN lost to truncation: {got:?}");
    }

    #[test]
    fn grouping_respects_gso_rules() {
        let (tx, _rx) = pair(false, false);
        let t = |len: usize, ecn| Transmit {
            payload: vec![0; len].into(),
            ecn,
            destination: None,
        };
        let batch = vec![
            t(1200, None),
            t(1200, None),
            t(500, None), // shorter: ends the run
            t(1200, None),
            t(1200, Some(Ecn::Ect1)), // other ECN: new message
            t(1300, Some(Ecn::Ect1)), // longer: new message
        ];
        let groups: Vec<_> = tx.group(&batch).iter().map(|g| (g.start, g.end)).collect();
        assert_eq!(groups, vec![(0, 3), (3, 4), (4, 5), (5, 6)]);
        let many: Vec<_> = (0..100).map(|_| t(1200, None)).collect();
        let groups: Vec<_> = tx.group(&many).iter().map(|g| g.end - g.start).collect();
        assert_eq!(groups, vec![54, 46], "capped by bytes per GSO message");
    }

    #[test]
    fn without_gso_every_datagram_is_its_own_message_and_arrives() {
        let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut tx = UdpSocket::bind(&SocketConfig {
            bind,
            gso: false,
            ..SocketConfig::default()
        })
        .unwrap();
        let rx = UdpSocket::bind(&SocketConfig {
            bind,
            gro: false,
            ..SocketConfig::default()
        })
        .unwrap();
        assert!(!tx.gso_enabled());
        let batch: Vec<Transmit> = (0..5u8)
            .map(|i| Transmit {
                payload: vec![i; 1200].into(),
                ecn: Some(Ecn::Ect0),
                destination: None,
            })
            .collect();
        assert_eq!(tx.group(&batch).len(), 5);
        assert_eq!(tx.send_batch(rx.local_addr(), &batch).unwrap(), 5);
        let got = recv_all(&rx, 5);
        assert_eq!(got.len(), 5);
        assert!(
            got.iter()
                .enumerate()
                .all(|(i, (p, e))| p == &vec![i as u8; 1200] && *e == Some(Ecn::Ect0))
        );
    }

    #[test]
    fn gso_refusal_errnos_trigger_the_fallback_and_others_do_not() {
        for errno in [libc::EIO, libc::EINVAL, libc::EOPNOTSUPP] {
            assert!(gso_refused(&io::Error::from_raw_os_error(errno)));
        }
        for errno in [
            libc::ENOBUFS,
            libc::EAGAIN,
            libc::ECONNREFUSED,
            libc::EMSGSIZE,
        ] {
            assert!(!gso_refused(&io::Error::from_raw_os_error(errno)));
        }
    }

    #[test]
    fn sending_to_the_other_family_is_an_error_not_a_panic() {
        let (mut tx, _rx) = pair(false, false);
        let err = tx
            .send_batch(
                "[::1]:9".parse().unwrap(),
                &[Transmit {
                    payload: vec![1].into(),
                    ecn: None,
                    destination: None,
                }],
            )
            .unwrap_err();
        assert_eq!(err.error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn oversized_datagram_is_a_send_error() {
        let (mut tx, rx) = pair(false, false);
        let err = tx
            .send(
                rx.local_addr(),
                &Transmit {
                    payload: vec![0; MAX_UDP_PAYLOAD + 1].into(),
                    ecn: None,
                    destination: None,
                },
            )
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EMSGSIZE));
    }
}
