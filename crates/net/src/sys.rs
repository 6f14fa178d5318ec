//! The thin libc layer: socket options, socket addresses and control messages.
//!
//! Every `unsafe` block of the crate's socket layer lives here or in `socket.rs`, each with its
//! SAFETY argument. Nothing here allocates per datagram.

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;
use std::time::{Duration, SystemTime};

use cg_types::Ecn;

/// Control space per received message. The kernel may attach `SCM_TIMESTAMPNS` (32 bytes),
/// `IP_TOS`/`IPV6_TCLASS` (24), `UDP_GRO` (24) and `SO_RXQ_OVFL` (24): 104 bytes, more than
/// the 96 bytes whose truncation loses ECN in quinn-udp 0.6.3. 256 leaves room for more.
pub(crate) const RECV_CONTROL_LEN: usize = 256;

/// Control space per sent message: `IP_TOS`/`IPV6_TCLASS` (24) and `UDP_SEGMENT` (24).
pub(crate) const SEND_CONTROL_LEN: usize = 64;

/// A control-message buffer aligned for `cmsghdr`.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct ControlBuf<const N: usize>(pub(crate) [u8; N]);

impl<const N: usize> std::fmt::Debug for ControlBuf<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ControlBuf<{N}>")
    }
}

impl<const N: usize> ControlBuf<N> {
    pub(crate) const fn zeroed() -> Self {
        ControlBuf([0; N])
    }
}

/// Sets an `int` socket option.
pub(crate) fn setsockopt_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: `value` lives across the call and its exact size is passed; the kernel copies it
    // and validates `fd`, `level` and `name`.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A socket address in the kernel's layout.
#[derive(Clone, Copy)]
pub(crate) struct RawAddr {
    pub(crate) storage: libc::sockaddr_storage,
    pub(crate) len: libc::socklen_t,
}

impl RawAddr {
    pub(crate) fn new(addr: &SocketAddr) -> Self {
        // SAFETY: an all-zero `sockaddr_storage` is a valid value (plain integers).
        let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: `sockaddr_storage` is larger than and at least as aligned as
                // `sockaddr_in` (that is its purpose).
                unsafe {
                    (&mut storage as *mut libc::sockaddr_storage)
                        .cast::<libc::sockaddr_in>()
                        .write(sin)
                };
                mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: as above, for `sockaddr_in6`.
                unsafe {
                    (&mut storage as *mut libc::sockaddr_storage)
                        .cast::<libc::sockaddr_in6>()
                        .write(sin6)
                };
                mem::size_of::<libc::sockaddr_in6>()
            }
        };
        RawAddr {
            storage,
            len: len as libc::socklen_t,
        }
    }
}

/// The address the kernel wrote into `storage`, if it is IPv4 or IPv6. IPv4-mapped IPv6
/// sources are returned as IPv4 so that peer comparison does not depend on the socket family.
pub(crate) fn socket_addr(
    storage: &libc::sockaddr_storage,
    len: libc::socklen_t,
) -> Option<SocketAddr> {
    let len = len as usize;
    match storage.ss_family as i32 {
        libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the kernel wrote a `sockaddr_in`, `len` says it is all
            // there, and `sockaddr_storage` is suitably aligned for it.
            let sin =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for `sockaddr_in6`.
            let sin6 = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            Some(match ip.to_ipv4_mapped() {
                Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
                None => SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    port,
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )),
            })
        }
        _ => None,
    }
}

/// Writes control messages into a zeroed [`ControlBuf`] and returns the length used.
pub(crate) struct CmsgWriter<'a, const N: usize> {
    buf: &'a mut ControlBuf<N>,
    len: usize,
}

impl<'a, const N: usize> CmsgWriter<'a, N> {
    pub(crate) fn new(buf: &'a mut ControlBuf<N>) -> Self {
        CmsgWriter { buf, len: 0 }
    }

    /// Appends one control message carrying `value`.
    ///
    /// Panics if the buffer is too small: the callers size their buffers for the fixed set of
    /// messages they write, so overflowing is a bug, not bad input.
    pub(crate) fn push<T: Copy>(&mut self, level: i32, ty: i32, value: T) {
        let data_len = mem::size_of::<T>() as u32;
        // SAFETY: `CMSG_SPACE`/`CMSG_LEN` are pure arithmetic on the length.
        let (space, cmsg_len) = unsafe {
            (
                libc::CMSG_SPACE(data_len) as usize,
                libc::CMSG_LEN(data_len),
            )
        };
        assert!(
            self.len + space <= N,
            "control buffer sized for the messages written"
        );
        let hdr = libc::cmsghdr {
            cmsg_len: cmsg_len as _,
            cmsg_level: level,
            cmsg_type: ty,
        };
        // SAFETY: `self.len` is a multiple of the cmsghdr alignment (every step is a
        // `CMSG_SPACE`) and the buffer is 8-aligned, so the header write is aligned and in
        // bounds (checked above); the data follows the header within `space`, written unaligned.
        unsafe {
            let at = self.buf.0.as_mut_ptr().add(self.len);
            at.cast::<libc::cmsghdr>().write(hdr);
            let data = at.add(libc::CMSG_LEN(0) as usize);
            data.cast::<T>().write_unaligned(value);
        }
        self.len += space;
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// What the control messages of one received datagram said.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RecvControl {
    pub(crate) ecn: Option<Ecn>,
    pub(crate) kernel_time: Option<SystemTime>,
    /// `UDP_GRO`: the datagram is several coalesced segments of this size (the last may be
    /// shorter).
    pub(crate) gro_segment: Option<usize>,
    /// `SO_RXQ_OVFL`: datagrams the kernel dropped on this socket so far (wraps at 2^32).
    pub(crate) rxq_overflow: Option<u32>,
}

/// Parses the control messages the kernel left in `hdr`.
pub(crate) fn parse_control(hdr: &libc::msghdr) -> RecvControl {
    let mut out = RecvControl::default();
    // SAFETY: `hdr.msg_control`/`msg_controllen` describe the control buffer the kernel filled
    // (msg_controllen was updated to the length written); the CMSG_* helpers stay within it and
    // every read of data is unaligned and bounded by the message's own `cmsg_len`, checked
    // against the size read.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let data = libc::CMSG_DATA(cmsg);
            let data_len = (c.cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
            match (c.cmsg_level, c.cmsg_type) {
                (libc::IPPROTO_IP, libc::IP_TOS) if data_len >= 1 => {
                    out.ecn = Some(Ecn::from_bits(data.read()));
                }
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if data_len >= 4 => {
                    let tclass = data.cast::<i32>().read_unaligned();
                    out.ecn = Some(Ecn::from_bits(tclass as u8));
                }
                (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS)
                    if data_len >= mem::size_of::<libc::timespec>() =>
                {
                    let ts = data.cast::<libc::timespec>().read_unaligned();
                    if ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
                        let since_epoch = Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
                        out.kernel_time = SystemTime::UNIX_EPOCH.checked_add(since_epoch);
                    }
                }
                (libc::SOL_UDP, libc::UDP_GRO) if data_len >= 2 => {
                    // The kernel writes an `int` (older kernels a `u16`; read what is there).
                    let seg = if data_len >= 4 {
                        data.cast::<i32>().read_unaligned() as usize
                    } else {
                        data.cast::<u16>().read_unaligned() as usize
                    };
                    if seg > 0 {
                        out.gro_segment = Some(seg);
                    }
                }
                (libc::SOL_SOCKET, libc::SO_RXQ_OVFL) if data_len >= 4 => {
                    out.rxq_overflow = Some(data.cast::<u32>().read_unaligned());
                }
                _ => {}
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_round_trip_through_the_kernel_layout() {
        for addr in ["192.0.2.7:5004", "[2001:db8::1]:6000"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let raw = RawAddr::new(&addr);
            assert_eq!(socket_addr(&raw.storage, raw.len), Some(addr));
        }
    }

    #[test]
    fn ipv4_mapped_source_reads_as_ipv4() {
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:9".parse().unwrap();
        let raw = RawAddr::new(&mapped);
        assert_eq!(
            socket_addr(&raw.storage, raw.len),
            Some("127.0.0.1:9".parse().unwrap())
        );
    }

    #[test]
    fn short_or_unknown_addresses_are_rejected() {
        let addr: SocketAddr = "192.0.2.7:5004".parse().unwrap();
        let raw = RawAddr::new(&addr);
        assert_eq!(socket_addr(&raw.storage, 4), None);
        // SAFETY: zeroed sockaddr_storage is valid (AF_UNSPEC).
        let unspec: libc::sockaddr_storage = unsafe { mem::zeroed() };
        assert_eq!(socket_addr(&unspec, 128), None);
    }

    #[test]
    fn written_control_messages_parse_back() {
        let mut buf = ControlBuf::<RECV_CONTROL_LEN>::zeroed();
        let mut w = CmsgWriter::new(&mut buf);
        w.push(libc::IPPROTO_IP, libc::IP_TOS, 0x01u8);
        w.push(libc::SOL_UDP, libc::UDP_GRO, 1200i32);
        w.push(libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 7u32);
        let ts = libc::timespec {
            tv_sec: 1_700_000_000,
            tv_nsec: 5,
        };
        w.push(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, ts);
        let len = w.len();
        // SAFETY: zeroed msghdr is valid; pointers set below outlive the parse.
        let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
        hdr.msg_control = buf.0.as_mut_ptr().cast();
        hdr.msg_controllen = len as _;
        let c = parse_control(&hdr);
        assert_eq!(c.ecn, Some(Ecn::Ect1));
        assert_eq!(c.gro_segment, Some(1200));
        assert_eq!(c.rxq_overflow, Some(7));
        assert_eq!(
            c.kernel_time,
            SystemTime::UNIX_EPOCH.checked_add(Duration::new(1_700_000_000, 5))
        );
    }

    #[test]
    fn ipv6_traffic_class_parses_to_ecn() {
        let mut buf = ControlBuf::<SEND_CONTROL_LEN>::zeroed();
        let mut w = CmsgWriter::new(&mut buf);
        w.push(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, 0xb8i32 | 0b11);
        let len = w.len();
        // SAFETY: as above.
        let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
        hdr.msg_control = buf.0.as_mut_ptr().cast();
        hdr.msg_controllen = len as _;
        assert_eq!(parse_control(&hdr).ecn, Some(Ecn::Ce));
    }
}
