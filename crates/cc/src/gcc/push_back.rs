//! Whether the link has pushed back lately (an over-use, a standing queue, a REMB under the
//! target), which decides how freely the pacer may send ([`super::GccConfig::push_back_memory`]).
//!
//! A push-back is remembered for the configured memory after its last sign, then forgotten:
//! the link has carried the flow that long without a sign, so a sign that did not recur (a
//! receiving host's scheduling stall read as an over-use, a capacity that has since risen) no
//! longer holds every frame to the bottleneck rate found then. A link still full at that rate
//! pushes back again within the memory and keeps it. With the push-back, the bottleneck rate
//! found with it stops capping the pacer; one found afterwards caps it again.

use std::time::{Duration, Instant};

use cg_types::Bitrate;

/// The push-back state of one controller. Plain data, driven by its owner's clock.
#[derive(Debug, Clone)]
pub(super) struct PushBack {
    /// How long a sign is remembered; `None`: for good.
    memory: Option<Duration>,
    /// The last sign while one is remembered.
    last: Option<Instant>,
    /// The bottleneck rate known when the last push-back was forgotten: a stale one, which
    /// caps nothing.
    stale: Option<Bitrate>,
}

impl PushBack {
    pub(super) fn new(memory: Option<Duration>) -> Self {
        PushBack {
            memory,
            last: None,
            stale: None,
        }
    }

    /// A sign of the link pushing back at `now`.
    pub(super) fn on_sign(&mut self, now: Instant) {
        self.last = Some(now);
        self.stale = None;
    }

    /// Forgets a push-back whose last sign is older than the memory; `bottleneck` is the
    /// bottleneck rate known now (which is stale from then on).
    pub(super) fn on_time(&mut self, now: Instant, bottleneck: Option<Bitrate>) {
        if let (Some(last), Some(memory)) = (self.last, self.memory)
            && now.saturating_duration_since(last) >= memory
        {
            self.last = None;
            self.stale = bottleneck;
        }
    }

    /// Whether a push-back is remembered.
    pub(super) fn remembered(&self) -> bool {
        self.last.is_some()
    }

    /// The bottleneck rate that caps the pacer: `bottleneck`, unless it is the stale one
    /// of a forgotten push-back.
    pub(super) fn cap(&self, bottleneck: Option<Bitrate>) -> Option<Bitrate> {
        bottleneck.filter(|&b| self.last.is_some() || self.stale != Some(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_back_is_forgotten_a_memory_after_its_last_sign_and_its_bottleneck_with_it() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let found = Some(Bitrate::mbps(5));
        let mut p = PushBack::new(Some(Duration::from_secs(10)));
        assert!(!p.remembered());
        assert_eq!(
            p.cap(found),
            found,
            "a probe's bottleneck caps before any push-back"
        );
        p.on_sign(s(1));
        p.on_sign(s(6));
        p.on_time(s(15), found);
        assert!(p.remembered(), "9 s after the last sign");
        assert_eq!(p.cap(found), found);
        p.on_time(s(16), found);
        assert!(!p.remembered(), "10 s after it");
        assert_eq!(p.cap(found), None, "the bottleneck found then is stale");
        let later = Some(Bitrate::mbps(4));
        assert_eq!(p.cap(later), later, "one found since caps");
        p.on_sign(s(20));
        assert_eq!(p.cap(found), found, "a new sign makes it current");

        let mut forever = PushBack::new(None);
        forever.on_sign(s(1));
        forever.on_time(s(1000), found);
        assert!(forever.remembered());
    }
}
