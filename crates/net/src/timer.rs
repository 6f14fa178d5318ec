//! The driver's wake-up timer: tokio's timer wheel, or a `timerfd` for sub-millisecond pacing.
//!
//! tokio's timer rounds every deadline *up* to its 1 ms wheel tick, so a pacer asking to send
//! every 192 µs (1200-byte packets at 50 Mb/s) would be woken 0–1 ms late and release small
//! bursts. [`TimerKind::Precise`] arms a `CLOCK_MONOTONIC` `timerfd` (an hrtimer, nanosecond
//! resolution) and waits for it through tokio's reactor (epoll) like any socket: no busy loop,
//! no extra thread. [`Instant`] is `CLOCK_MONOTONIC` on Linux, so the deadline is converted
//! by its distance from `Instant::now()` when the timer is armed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

/// Which timer the driver sleeps on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimerKind {
    /// A `timerfd` (nanosecond resolution). Default.
    #[default]
    Precise,
    /// `tokio::time::sleep_until` (1 ms resolution, rounded up).
    Tokio,
}

pub(crate) enum Timer {
    Precise {
        fd: AsyncFd<OwnedFd>,
        armed: Option<Instant>,
    },
    Tokio {
        sleep: Pin<Box<tokio::time::Sleep>>,
        armed: Option<Instant>,
    },
}

impl Timer {
    /// Must be called inside a tokio runtime (the `timerfd` registers with its reactor).
    pub(crate) fn new(kind: TimerKind) -> io::Result<Self> {
        Ok(match kind {
            TimerKind::Precise => {
                // SAFETY: plain system call; the returned descriptor is checked and then owned.
                let raw = unsafe {
                    libc::timerfd_create(
                        libc::CLOCK_MONOTONIC,
                        libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                    )
                };
                if raw < 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: `raw` is a fresh descriptor that nothing else owns.
                let owned = unsafe { OwnedFd::from_raw_fd(raw) };
                // SAFETY: the `OwnedFd` keeps the descriptor open and unchanged until the
                // `AsyncFd` is dropped.
                let fd = unsafe { AsyncFd::register(owned) }.map_err(io::Error::from)?;
                Timer::Precise { fd, armed: None }
            }
            TimerKind::Tokio => Timer::Tokio {
                sleep: Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())),
                armed: None,
            },
        })
    }

    /// The deadline the timer is armed for.
    pub(crate) fn armed(&self) -> Option<Instant> {
        match self {
            Timer::Precise { armed, .. } | Timer::Tokio { armed, .. } => *armed,
        }
    }

    /// Arms the timer for `deadline` (re-arming only if it changed), or disarms it.
    pub(crate) fn set(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        if deadline == self.armed() {
            return Ok(());
        }
        match self {
            Timer::Precise { fd, armed } => {
                // A zero it_value disarms a timerfd; a due deadline is armed 1 ns ahead.
                let value = match deadline {
                    Some(d) => d
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_nanos(1)),
                    None => Duration::ZERO,
                };
                let spec = libc::itimerspec {
                    it_interval: libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    },
                    it_value: libc::timespec {
                        tv_sec: value.as_secs().min(i64::MAX as u64) as libc::time_t,
                        tv_nsec: value.subsec_nanos() as libc::c_long,
                    },
                };
                // SAFETY: `spec` is a valid itimerspec living across the call; the old value
                // is not requested (null).
                let rc = unsafe {
                    libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut())
                };
                if rc < 0 {
                    return Err(io::Error::last_os_error());
                }
                *armed = deadline;
            }
            Timer::Tokio { sleep, armed } => {
                if let Some(d) = deadline {
                    sleep.as_mut().reset(tokio::time::Instant::from_std(d));
                }
                *armed = deadline;
            }
        }
        Ok(())
    }

    /// Waits until the armed deadline has passed (forever if disarmed), then disarms.
    pub(crate) async fn wait(&mut self) -> io::Result<()> {
        match self {
            Timer::Precise { fd, armed } => {
                if armed.is_none() {
                    return std::future::pending().await;
                }
                loop {
                    let mut guard = fd.readable().await?;
                    let read = guard.try_io(|fd| {
                        let mut expirations = [0u8; 8];
                        // SAFETY: reads at most 8 bytes into an 8-byte buffer we own.
                        let rc = unsafe {
                            libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8)
                        };
                        if rc < 0 {
                            Err(io::Error::last_os_error())
                        } else {
                            Ok(())
                        }
                    });
                    match read {
                        Ok(Ok(())) => {
                            // Consumed: the next wait needs a fresh expiry from the reactor
                            // (which is what makes a due timer yield to the runtime).
                            guard.clear_ready();
                            break;
                        }
                        Ok(Err(e)) => return Err(e),
                        Err(_would_block) => continue,
                    }
                }
                *armed = None;
            }
            Timer::Tokio { sleep, armed } => {
                if armed.is_none() {
                    return std::future::pending().await;
                }
                sleep.as_mut().await;
                *armed = None;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn fires_after_the_deadline(kind: TimerKind) {
        let mut t = Timer::new(kind).unwrap();
        let deadline = Instant::now() + Duration::from_millis(3);
        t.set(Some(deadline)).unwrap();
        t.wait().await.unwrap();
        assert!(Instant::now() >= deadline);
        assert_eq!(t.armed(), None);
    }

    #[tokio::test]
    async fn precise_timer_never_fires_early() {
        fires_after_the_deadline(TimerKind::Precise).await;
    }

    #[tokio::test]
    async fn tokio_timer_never_fires_early() {
        fires_after_the_deadline(TimerKind::Tokio).await;
    }

    #[tokio::test]
    async fn a_due_deadline_fires_at_once_and_a_moved_one_is_rearmed() {
        let mut t = Timer::new(TimerKind::Precise).unwrap();
        t.set(Some(Instant::now() + Duration::from_secs(60)))
            .unwrap();
        let past = Instant::now() - Duration::from_millis(1);
        t.set(Some(past)).unwrap();
        tokio::time::timeout(Duration::from_secs(1), t.wait())
            .await
            .expect("fires at once")
            .unwrap();
    }

    #[tokio::test]
    async fn disarmed_timer_never_fires() {
        let mut t = Timer::new(TimerKind::Precise).unwrap();
        t.set(Some(Instant::now())).unwrap();
        t.set(None).unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(20), t.wait())
                .await
                .is_err()
        );
    }
}
