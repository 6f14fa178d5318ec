//! Arrival-time filters: estimates of the one-way delay gradient `m(ti)` from `dm(ti)`.
//!
//! - [`ScalarKalman`]: MMSys16 §4.1, the scalar model of eq. (10) with the update of
//!   eq. (11)–(14), `Q` of eq. (15) and the noise estimate of eq. (16).
//! - [`TwoStateKalman`]: the model of eq. (7) (state `[1/C, m]`, output `dm = ΔL/C + m + n`),
//!   as libwebrtc's `OveruseEstimator` ran it. Kept as an option to study Proposition 1
//!   (unobservable when `ΔL` is constant).
//!
//! Units: `dm` and `m` in ms; sizes in bytes. Non-finite inputs are ignored.

/// The scalar Kalman filter of MMSys16 eq. (10)–(16).
#[derive(Debug, Clone)]
pub struct ScalarKalman {
    m: f64,
    p: f64,
    noise_var: f64,
    gain: f64,
    q: f64,
    beta: f64,
    noise_var_min: f64,
    residual_clamp: Option<f64>,
}

impl ScalarKalman {
    /// A filter with `m(0) = m0`, `P(0) = p0`, state noise `Q = q`, EWMA factor `β = beta`,
    /// initial measurement noise variance `noise_var0` floored at `noise_var_min`.
    pub fn new(m0: f64, p0: f64, q: f64, beta: f64, noise_var0: f64, noise_var_min: f64) -> Self {
        ScalarKalman {
            m: m0,
            p: p0,
            noise_var: noise_var0.max(noise_var_min),
            gain: 0.0,
            q,
            beta,
            noise_var_min,
            residual_clamp: None,
        }
    }

    /// Clamp the residual to ± `k·σn` in the noise update of eq. (16) (libwebrtc uses 3).
    pub fn with_residual_clamp(mut self, k: Option<f64>) -> Self {
        self.residual_clamp = k;
        self
    }

    /// One measurement `dm(ti)` (ms); returns `m(ti)`.
    pub fn update(&mut self, dm: f64) -> f64 {
        self.update_with(dm, true)
    }

    /// As [`update`](Self::update); `update_noise = false` leaves `σ²n` as it is (libwebrtc
    /// updates it only while the detector says normal, so that the residuals of a real
    /// trend do not pass for jitter).
    pub fn update_with(&mut self, dm: f64, update_noise: bool) -> f64 {
        if !dm.is_finite() {
            return self.m;
        }
        // Residual z(ti) = dm(ti) − m(ti−1), and eq. (16).
        let z = dm - self.m;
        if update_noise {
            let zc = clamp_residual(z, self.noise_var, self.residual_clamp);
            let var = self.beta * self.noise_var + (1.0 - self.beta) * zc * zc;
            if var.is_finite() {
                self.noise_var = var.max(self.noise_var_min);
            }
        }
        // Eq. (12): K = (P + Q) / (P + Q + σ²n).
        let pq = self.p + self.q;
        self.gain = pq / (pq + self.noise_var);
        // Eq. (11): m = (1 − K) m + K dm, written as m + K z.
        self.m += self.gain * z;
        // Eq. (14).
        self.p = (1.0 - self.gain) * pq;
        self.m
    }

    /// `m(ti)` in ms.
    pub fn estimate(&self) -> f64 {
        self.m
    }

    /// The last Kalman gain `K(ti)`.
    pub fn gain(&self) -> f64 {
        self.gain
    }

    /// The error variance `P(ti)`.
    pub fn error_variance(&self) -> f64 {
        self.p
    }

    /// The measurement noise variance `σ²n(ti)`.
    pub fn noise_variance(&self) -> f64 {
        self.noise_var
    }
}

/// The two-state Kalman filter of MMSys16 eq. (7): state `θ = [1/C, m]`.
#[derive(Debug, Clone)]
pub struct TwoStateKalman {
    /// `[1/C (ms per byte), m (ms)]`.
    theta: [f64; 2],
    /// Error covariance.
    e: [[f64; 2]; 2],
    q: [f64; 2],
    noise_var: f64,
    beta: f64,
    noise_var_min: f64,
    residual_clamp: Option<f64>,
}

impl TwoStateKalman {
    /// A filter starting at `1/C = inv_c0`, `m = m0`, covariance `diag(p0_inv_c, p0_m)`,
    /// state noise `diag(q_inv_c, q_m)`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inv_c0: f64,
        m0: f64,
        p0_inv_c: f64,
        p0_m: f64,
        q_inv_c: f64,
        q_m: f64,
        beta: f64,
        noise_var0: f64,
        noise_var_min: f64,
    ) -> Self {
        TwoStateKalman {
            theta: [inv_c0, m0],
            e: [[p0_inv_c, 0.0], [0.0, p0_m]],
            q: [q_inv_c, q_m],
            noise_var: noise_var0.max(noise_var_min),
            beta,
            noise_var_min,
            residual_clamp: None,
        }
    }

    /// Clamp the residual to ± `k·σn` in the noise update (libwebrtc uses 3).
    pub fn with_residual_clamp(mut self, k: Option<f64>) -> Self {
        self.residual_clamp = k;
        self
    }

    /// One measurement `dm(ti)` (ms) with frame size difference `ΔL(ti)` (bytes); returns
    /// `m(ti)`. `update_noise` as for [`ScalarKalman::update_with`].
    pub fn update(&mut self, dm: f64, size_delta: f64, update_noise: bool) -> f64 {
        if !dm.is_finite() || !size_delta.is_finite() {
            return self.theta[1];
        }
        let e = &mut self.e;
        e[0][0] += self.q[0];
        e[1][1] += self.q[1];
        let h = [size_delta, 1.0];
        let eh = [
            e[0][0] * h[0] + e[0][1] * h[1],
            e[1][0] * h[0] + e[1][1] * h[1],
        ];
        let z = dm - (self.theta[0] * h[0] + self.theta[1]);
        if update_noise {
            let zc = clamp_residual(z, self.noise_var, self.residual_clamp);
            let var = self.beta * self.noise_var + (1.0 - self.beta) * zc * zc;
            if var.is_finite() {
                self.noise_var = var.max(self.noise_var_min);
            }
        }
        let denom = self.noise_var + h[0] * eh[0] + h[1] * eh[1];
        if !(denom.is_finite() && denom > 0.0) {
            return self.theta[1];
        }
        let k = [eh[0] / denom, eh[1] / denom];
        // E = (I − K hᵀ) E.
        let ikh = [
            [1.0 - k[0] * h[0], -k[0] * h[1]],
            [-k[1] * h[0], 1.0 - k[1] * h[1]],
        ];
        let new_e = [
            [
                ikh[0][0] * e[0][0] + ikh[0][1] * e[1][0],
                ikh[0][0] * e[0][1] + ikh[0][1] * e[1][1],
            ],
            [
                ikh[1][0] * e[0][0] + ikh[1][1] * e[1][0],
                ikh[1][0] * e[0][1] + ikh[1][1] * e[1][1],
            ],
        ];
        let new_theta = [self.theta[0] + k[0] * z, self.theta[1] + k[1] * z];
        if new_e
            .iter()
            .flatten()
            .chain(&new_theta)
            .all(|v| v.is_finite())
        {
            *e = new_e;
            self.theta = new_theta;
        }
        self.theta[1]
    }

    /// `m(ti)` in ms.
    pub fn estimate(&self) -> f64 {
        self.theta[1]
    }

    /// The estimated inverse capacity `1/C` in ms per byte.
    pub fn inverse_capacity(&self) -> f64 {
        self.theta[0]
    }
}

/// `z` limited to ± `k·σ` (no limit for `None`).
fn clamp_residual(z: f64, var: f64, k: Option<f64>) -> f64 {
    match k {
        Some(k) => {
            let lim = k * var.sqrt();
            z.clamp(-lim, lim)
        }
        None => z,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cg_types::Rng;

    fn paper() -> ScalarKalman {
        ScalarKalman::new(0.0, 0.1, 1e-3, 0.95, 1.0, 1.0)
    }

    #[test]
    fn gain_falls_as_error_variance_converges() {
        let mut f = paper();
        let mut rng = Rng::new(1);
        let mut gains = Vec::new();
        for _ in 0..200 {
            f.update(rng.normal() * 0.1);
            gains.push(f.gain());
        }
        // P(0) = 0.1 > steady state: the gain falls monotonically to ≈ sqrt(Q/σ²n)
        // (σ²n stays at its floor of 1 with this little jitter).
        assert!(gains.windows(2).all(|w| w[1] <= w[0] + 1e-12), "{gains:?}");
        assert!(gains[0] > 0.09, "first gain {}", gains[0]);
        assert!(
            gains[199] < 0.04 && gains[199] > 0.02,
            "last gain {}",
            gains[199]
        );
        assert!(f.error_variance() < 0.04);
    }

    #[test]
    fn estimate_tracks_a_persistent_gradient_and_ignores_zero_mean_jitter() {
        let mut f = paper();
        let mut rng = Rng::new(2);
        for _ in 0..300 {
            f.update(rng.normal());
        }
        assert!(
            f.estimate().abs() < 0.3,
            "jitter only: m = {}",
            f.estimate()
        );
        for _ in 0..150 {
            f.update(2.0 + rng.normal());
        }
        assert!(
            (f.estimate() - 2.0).abs() < 0.5,
            "queue growing: m = {}",
            f.estimate()
        );
    }

    #[test]
    fn noise_variance_follows_squared_residuals() {
        let mut f = paper();
        for i in 0..400 {
            f.update(if i % 2 == 0 { 5.0 } else { -5.0 });
        }
        assert!(f.noise_variance() > 15.0, "σ² = {}", f.noise_variance());
    }

    #[test]
    fn residual_clamp_keeps_a_spike_from_inflating_the_noise_variance() {
        let mut plain = paper();
        let mut clamped = paper().with_residual_clamp(Some(3.0));
        plain.update(100.0);
        clamped.update(100.0);
        assert!(plain.noise_variance() > 400.0);
        assert!(
            clamped.noise_variance() < 1.5,
            "{}",
            clamped.noise_variance()
        );
    }

    #[test]
    fn frozen_noise_variance_keeps_the_filter_responsive_to_a_trend() {
        let mut adaptive = paper();
        let mut frozen = paper();
        for _ in 0..60 {
            adaptive.update(4.0);
            frozen.update_with(4.0, false);
        }
        assert!(
            frozen.estimate() > adaptive.estimate(),
            "{} vs {}",
            frozen.estimate(),
            adaptive.estimate()
        );
        assert_eq!(frozen.noise_variance(), 1.0);
    }

    #[test]
    fn non_finite_measurements_are_ignored() {
        let mut f = paper();
        f.update(1.0);
        let m = f.estimate();
        assert_eq!(f.update(f64::NAN), m);
        assert_eq!(f.update(f64::INFINITY), m);
        assert!(f.estimate().is_finite());
    }

    #[test]
    fn two_state_model_separates_size_term_from_queuing() {
        // dm = ΔL / C with C = 125 bytes/ms (1 Mbit/s), no queuing: m stays near 0 while
        // the frame sizes vary, and 1/C is learnt.
        let mut f = TwoStateKalman::new(8.0 / 512.0, 0.0, 100.0, 0.1, 1e-13, 1e-3, 0.95, 1.0, 1.0);
        let mut rng = Rng::new(3);
        for _ in 0..600 {
            let dl = (rng.next_f64() - 0.5) * 4000.0;
            f.update(dl / 125.0, dl, true);
        }
        assert!(f.estimate().abs() < 0.2, "m = {}", f.estimate());
        assert!(
            (f.inverse_capacity() - 1.0 / 125.0).abs() < 1e-3,
            "1/C = {}",
            f.inverse_capacity()
        );
    }
}
