//! Whether the link has pushed back lately (an over-use, a standing queue, a REMB under the
//! target), which decides how freely the pacer may send ([`super::GccConfig::push_back_memory`]).
//!
//! A push-back is remembered until the feedback has said for the configured memory that the
//! link carried the flow without a sign, then forgotten: a sign that did not recur (a
//! receiving host's scheduling stall read as an over-use, a capacity that has since risen) no
//! longer holds every frame to the bottleneck rate found then. A link still full at that rate
//! pushes back again within the memory and keeps it. Time without feedback counts for
//! nothing (the link was not heard). With the push-back, the bottleneck rate found with it
//! stops capping the pacer; one found afterwards caps it again.
//!
//! A bottleneck rate found without a push-back (a probe cluster the link did not carry)
//! caps the pacer by the same rule: until the feedback has been calm for the memory since
//! it was found. It is one sample, and on a busy receiving host a false one (the host's
//! timing stretches the cluster); a link that is full at that rate pushes back within the
//! memory once the pacer sends faster than it.

use std::time::{Duration, Instant};

use cg_types::Bitrate;

/// The push-back state of one controller. Plain data, driven by its owner's clock.
#[derive(Debug, Clone)]
pub(super) struct PushBack {
    /// How long a sign is remembered; `None`: for good.
    memory: Option<Duration>,
    /// Whether a push-back is remembered.
    pushed: bool,
    /// Feedback time heard since the last sign.
    calm: Duration,
    /// When feedback was last heard.
    heard: Option<Instant>,
    /// The bottleneck rate known when the last push-back was forgotten: a stale one, which
    /// caps nothing.
    stale: Option<Bitrate>,
}

impl PushBack {
    pub(super) fn new(memory: Option<Duration>) -> Self {
        PushBack {
            memory,
            pushed: false,
            calm: Duration::ZERO,
            heard: None,
            stale: None,
        }
    }

    /// A sign of the link pushing back; the bottleneck rate found with it caps the pacer
    /// (see [`Self::on_finding`]).
    pub(super) fn on_sign(&mut self) {
        self.pushed = true;
        self.on_finding();
    }

    /// A bottleneck rate found (with a sign, or alone: a saturated probe): it caps the pacer
    /// from now until the memory of calm feedback has passed.
    pub(super) fn on_finding(&mut self) {
        self.calm = Duration::ZERO;
        self.stale = None;
    }

    /// Feedback heard at `now` (after its signs): the time since the last feedback counts as
    /// calm when it is shorter than `silence`. Once the calm reaches the memory, forgets a
    /// push-back, and `bottleneck`, the bottleneck rate known now, is stale from then on.
    pub(super) fn on_heard(
        &mut self,
        now: Instant,
        silence: Duration,
        bottleneck: Option<Bitrate>,
    ) {
        if let Some(heard) = self.heard {
            let gap = now.saturating_duration_since(heard);
            if gap < silence {
                self.calm += gap;
            }
        }
        self.heard = Some(now);
        if self.memory.is_some_and(|m| self.calm >= m) {
            self.pushed = false;
            self.stale = bottleneck;
        }
    }

    /// Whether a push-back is remembered.
    pub(super) fn remembered(&self) -> bool {
        self.pushed
    }

    /// The bottleneck rate that caps the pacer: `bottleneck`, unless it is the stale one
    /// of a forgotten push-back.
    pub(super) fn cap(&self, bottleneck: Option<Bitrate>) -> Option<Bitrate> {
        bottleneck.filter(|&b| self.pushed || self.stale != Some(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_back_is_forgotten_after_a_memory_of_feedback_and_its_bottleneck_with_it() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let silence = Duration::from_millis(500);
        let found = Some(Bitrate::mbps(5));
        let mut p = PushBack::new(Some(Duration::from_secs(10)));
        assert!(!p.remembered());
        assert_eq!(
            p.cap(found),
            found,
            "a probe's bottleneck caps before any push-back"
        );
        p.on_heard(ms(0), silence, found);
        p.on_sign();
        // Feedback every 100 ms for 9.9 s, then a 5 s silence, which counts for nothing.
        for i in 1..=99 {
            p.on_heard(ms(100 * i), silence, found);
        }
        p.on_heard(ms(14_900), silence, found);
        assert!(p.remembered(), "9.9 s of feedback heard since the sign");
        assert_eq!(p.cap(found), found);
        p.on_heard(ms(15_000), silence, found);
        assert!(!p.remembered(), "10 s of it");
        assert_eq!(p.cap(found), None, "the bottleneck found then is stale");
        let later = Some(Bitrate::mbps(4));
        assert_eq!(p.cap(later), later, "one found since caps");
        p.on_sign();
        assert_eq!(p.cap(found), found, "a new sign makes it current");

        // A probe's finding without a sign caps for a memory of calm feedback from then.
        let probed = Some(Bitrate::kbps(4700));
        p.on_heard(ms(15_100), silence, found);
        for i in 152..=250 {
            p.on_heard(ms(100 * i), silence, found);
        }
        assert!(!p.remembered());
        p.on_finding();
        for i in 251..=349 {
            p.on_heard(ms(100 * i), silence, probed);
        }
        assert_eq!(p.cap(probed), probed, "9.9 s after the finding");
        assert!(
            !p.remembered(),
            "a finding is no push-back: the pacer may still burst"
        );
        p.on_heard(ms(35_000), silence, probed);
        assert_eq!(p.cap(probed), None, "10 s after it");

        let mut forever = PushBack::new(None);
        forever.on_sign();
        for i in 1..=1000 {
            forever.on_heard(ms(100 * i), silence, found);
        }
        assert!(forever.remembered());
    }
}
