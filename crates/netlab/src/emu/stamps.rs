//! When each packet the forwarder reads from a TUN was sent into it, as the kernel stamped it.
//!
//! A packet's arrival at the emulated link is when it was sent, not when the forwarder read
//! it. A forwarder can be kept from running whatever its priority (a hypervisor takes its
//! virtual CPU away); the packets sent meanwhile wait in the TUN and are read together, and
//! stamped with the read time they would reach the link as one burst and queue, a queue the
//! path never had (an L4S AQM marks all of it). The
//! kernel's own record of when each packet left for the TUN does not stall with the
//! forwarder: a packet socket bound to the TUN sees every packet sent out of it
//! (`dev_queue_xmit_nit`, the hook tcpdump uses), stamped with `CLOCK_REALTIME` as it
//! passes. [`SentStamps`] reads those copies and hands the forwarder, for each packet it
//! reads from the TUN, the time that packet was sent.
//!
//! Copies are matched to packets by length and their first [`PREFIX`] bytes (IP header with
//! its identification and checksum, transport ports and sequence numbers): a copy whose
//! packet the TUN dropped (its queue full) is skipped, and a packet whose copy the socket
//! dropped (its buffer full) gets no stamp and keeps its read time.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::{Error, Result};

/// Bytes of a packet compared when matching a copy to it.
const PREFIX: usize = 64;

/// Copies kept waiting for their packet (more than a stall's worth at 100 Mbit/s).
const MAX_PENDING: usize = 16_384;

/// How far into the waiting copies a packet's match is searched for.
const SEARCH: usize = 256;

/// The socket's receive buffer: a 100 ms stall at 100 Mbit/s is 1.25 MB of packets, each
/// copy charged with its buffer's overhead.
const RCVBUF: libc::c_int = 16 << 20;

/// One copy: the packet's length, its first bytes, and when it was sent (`CLOCK_REALTIME`,
/// ns).
struct Copy {
    len: usize,
    prefix: [u8; PREFIX],
    sent_ns: u64,
}

impl Copy {
    fn matches(&self, pkt: &[u8]) -> bool {
        let n = pkt.len().min(PREFIX);
        self.len == pkt.len() && self.prefix[..n] == pkt[..n]
    }
}

/// Copies waiting for their packet, oldest first.
#[derive(Default)]
struct Pending(VecDeque<Copy>);

impl Pending {
    fn push(&mut self, copy: Copy) {
        if self.0.len() >= MAX_PENDING {
            self.0.pop_front();
        }
        self.0.push_back(copy);
    }

    /// The send stamp of `pkt`'s copy, taken with the copies in front of it (their packets
    /// the TUN dropped); `None`, taking nothing, when it is not among the first [`SEARCH`].
    fn take(&mut self, pkt: &[u8]) -> Option<u64> {
        let i = self.0.iter().take(SEARCH).position(|c| c.matches(pkt))?;
        self.0.drain(..i);
        self.0.pop_front().map(|c| c.sent_ns)
    }
}

/// The kernel's send stamps of the packets going out of one TUN interface.
pub struct SentStamps {
    fd: OwnedFd,
    pending: Pending,
    buf: Vec<u8>,
    /// Packets given their send stamp, and those that kept their read time.
    pub stamped: u64,
    pub unstamped: u64,
}

impl SentStamps {
    /// A packet socket on interface `ifname` (in the current network namespace) that
    /// receives a stamped copy of every packet sent out of it.
    pub fn open(ifname: &str) -> Result<SentStamps> {
        let name = std::ffi::CString::new(ifname)
            .map_err(|_| Error::Process(format!("bad interface name `{ifname}`")))?;
        // SAFETY: `name` is a valid NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(Error::last_os(format!("if_nametoindex {ifname}")));
        }
        let all = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2) call; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::c_int::from(all),
            )
        };
        if raw < 0 {
            return Err(Error::last_os("packet socket for send stamps"));
        }
        // SAFETY: `raw` is a freshly created socket we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let on: libc::c_int = 1;
        setsockopt(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, on)?;
        // The forced size needs CAP_NET_ADMIN, which the forwarder has; the plain one is
        // capped by net.core.rmem_max.
        if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF).is_err() {
            setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF)?;
        }
        // SAFETY: sockaddr_ll is plain old data; zeroed is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = all;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the size given.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const sll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(Error::last_os(format!("bind packet socket to {ifname}")));
        }
        Ok(SentStamps {
            fd,
            pending: Pending::default(),
            buf: vec![0u8; 65_536],
            stamped: 0,
            unstamped: 0,
        })
    }

    /// Reads every copy waiting on the socket.
    fn drain(&mut self) {
        while let Some(copy) = self.recv() {
            self.pending.push(copy);
        }
    }

    /// How long before `now_real_ns` (`CLOCK_REALTIME`, read after `pkt` was read, so no
    /// stamp is later) packet `pkt`, just read from the TUN, was sent into it; `None` when its
    /// copy is not among those waiting, even after reading what the socket has.
    pub fn age(&mut self, pkt: &[u8], now_real_ns: u64) -> Option<Duration> {
        let sent_ns = self.pending.take(pkt).or_else(|| {
            // Its copy may have come after the last drain.
            self.drain();
            self.pending.take(pkt)
        });
        match sent_ns {
            Some(ns) => {
                self.stamped += 1;
                Some(Duration::from_nanos(now_real_ns.saturating_sub(ns)))
            }
            None => {
                self.unstamped += 1;
                None
            }
        }
    }

    /// One copy of an outgoing packet, or `None` when none is waiting.
    fn recv(&mut self) -> Option<Copy> {
        loop {
            // SAFETY: sockaddr_ll is plain old data; zeroed is a valid value.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut iov = libc::iovec {
                iov_base: self.buf.as_mut_ptr().cast(),
                iov_len: self.buf.len(),
            };
            // Room for one SCM_TIMESTAMPNS (a timespec) with its header, aligned.
            let mut control = [0u64; 8];
            // SAFETY: msghdr is plain old data; zeroed is a valid value.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_name = (&raw mut from).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            msg.msg_iov = &raw mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control);
            // SAFETY: every pointer in `msg` points to a live buffer of the length given.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &raw mut msg, 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return None;
            }
            if from.sll_pkttype != libc::PACKET_OUTGOING {
                // What the forwarder writes into the TUN, as the kernel receives it.
                continue;
            }
            let len = n as usize;
            let sent_ns = timestamp_ns(&msg)?;
            let mut prefix = [0u8; PREFIX];
            let k = len.min(PREFIX);
            prefix[..k].copy_from_slice(&self.buf[..k]);
            return Some(Copy {
                len,
                prefix,
                sent_ns,
            });
        }
    }
}

/// The `SCM_TIMESTAMPNS` of a received message, ns of `CLOCK_REALTIME`.
fn timestamp_ns(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: `msg` was filled by recvmsg; the CMSG macros walk its control buffer within
    // `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

fn setsockopt(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> Result<()> {
    // SAFETY: `v` is a live c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw const v).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(Error::last_os(format!("setsockopt {level}/{name}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(bytes: &[u8], sent_ns: u64) -> Copy {
        let mut prefix = [0u8; PREFIX];
        let k = bytes.len().min(PREFIX);
        prefix[..k].copy_from_slice(&bytes[..k]);
        Copy {
            len: bytes.len(),
            prefix,
            sent_ns,
        }
    }

    #[test]
    fn a_packet_gets_its_own_copys_stamp_and_copies_of_dropped_packets_are_skipped() {
        let mut p = Pending::default();
        let a = [1u8; 100];
        let b = [2u8; 100];
        let c = [3u8; 80];
        for (bytes, ns) in [(&a[..], 1_000), (&b[..], 2_000), (&c[..], 3_000)] {
            p.push(copy(bytes, ns));
        }
        assert_eq!(p.take(&a), Some(1_000));
        // `b` was dropped by the TUN: `c` skips its copy.
        assert_eq!(p.take(&c), Some(3_000));
        assert!(p.0.is_empty());
        // A packet whose copy never came takes nothing.
        p.push(copy(&b, 4_000));
        assert_eq!(p.take(&a), None);
        assert_eq!(p.0.len(), 1);
        // Same first bytes, another length: not its copy.
        assert_eq!(p.take(&b[..99]), None);
        assert_eq!(p.take(&b), Some(4_000));
    }
}
