//! CUBIC's window function (RFC 9438 §4.2), in segments — shared by the simulated TCP flow
//! (`sim::tcp`) and SCReAM's CUBIC-friendly region (`scream::competing`).

/// `C` (RFC 9438 §5.1): 0.4 segments/s³.
pub(crate) const C: f64 = 0.4;

/// `K = ∛((W_max − cwnd_epoch)/C)` (RFC 9438 eq. 2): the time to regain `w_max` from a
/// window of `from` segments; 0 when `from` is at or above `w_max`.
pub(crate) fn k(w_max: f64, from: f64) -> f64 {
    ((w_max - from).max(0.0) / C).cbrt()
}

/// `W_cubic(t) = C·(t − K)³ + W_max` (RFC 9438 eq. 1), segments, `t` in seconds.
pub(crate) fn window(w_max: f64, k: f64, t: f64) -> f64 {
    C * (t - k).powi(3) + w_max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_starts_at_the_epoch_window_and_regains_w_max_after_k() {
        // W_max 100, reduced to 70: K = ∛(30 / 0.4) = ∛75.
        let k = k(100.0, 70.0);
        assert!((k - 75f64.cbrt()).abs() < 1e-12);
        assert!((window(100.0, k, 0.0) - 70.0).abs() < 1e-9);
        assert!((window(100.0, k, k) - 100.0).abs() < 1e-12);
        assert!(window(100.0, k, 2.0 * k) > 100.0);
        assert_eq!(super::k(50.0, 60.0), 0.0);
    }
}
