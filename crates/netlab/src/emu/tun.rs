//! TUN devices (`/dev/net/tun`, `IFF_TUN | IFF_NO_PI`): raw IP packets in and out.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::{Error, Result};

/// `_IOW('T', 202, int)`: the same value on x86_64 and aarch64.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// An open, non-blocking TUN device.
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates (or attaches to) TUN interface `name` in the current network namespace.
    pub fn open(name: &str) -> Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(Error::Process(format!("bad interface name `{name}`")));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| {
                let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
                    " (the emulator needs read/write access to /dev/net/tun: run as root, or make \
                     it mode 0666 as most distributions do)"
                } else {
                    ""
                };
                Error::io(format!("open /dev/net/tun{hint}"), e)
            })?;
        // SAFETY: ifreq is plain old data; zeroed is a valid value.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes an ifreq, which `ifr` is.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut ifr) };
        if rc < 0 {
            return Err(Error::last_os(format!("TUNSETIFF {name}")));
        }
        Ok(Tun {
            file,
            name: name.to_owned(),
        })
    }

    /// Interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet; `Ok(None)` when none is waiting.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes one packet (the kernel receives it as arriving on this interface).
    pub fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
        self.file.write(pkt).map(drop)
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}
