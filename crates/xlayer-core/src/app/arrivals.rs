//! Flows that arrive over time: inter-arrival processes and flow-duration laws, each given by
//! its mean (what a measurement study reports) and a shape, drawn from the engine's named
//! streams (`flows_random.arrivals`, `flows_random.durations`).
//!
//! - Arrivals: Poisson (exponential inter-arrivals) or Weibull inter-arrivals of shape `k`
//!   (scale `mean / Γ(1 + 1/k)`; `k < 1` makes arrivals burstier than Poisson).
//! - Durations: fixed, exponential, log-normal (σ of the logarithm; `μ = ln(mean) − σ²/2`) or
//!   Pareto (shape `α > 1`, scale `mean (α − 1)/α`), optionally capped at a maximum.

use rand_distr::{Distribution, Exp1, LogNormal, Pareto, Weibull};

use crate::sim::rng::Stream;

/// How flows arrive: the law of the time between two arrivals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    Poisson { mean_s: f64 },
    Weibull { mean_s: f64, shape: f64 },
}

impl Arrivals {
    /// The next inter-arrival time, seconds.
    pub fn sample(&self, rng: &mut Stream) -> f64 {
        match *self {
            Arrivals::Poisson { mean_s } => {
                let e: f64 = Exp1.sample(rng);
                e * mean_s
            }
            Arrivals::Weibull { mean_s, shape } => {
                let scale = mean_s / libm::tgamma(1.0 + 1.0 / shape);
                Weibull::new(scale, shape)
                    .expect("validated: positive scale and shape")
                    .sample(rng)
            }
        }
    }
}

/// How long a flow lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Durations {
    Fixed { s: f64 },
    Exponential { mean_s: f64 },
    LogNormal { mean_s: f64, sigma: f64 },
    Pareto { mean_s: f64, alpha: f64 },
}

impl Durations {
    /// A flow's duration, seconds, capped at `max_s`.
    pub fn sample(&self, rng: &mut Stream, max_s: Option<f64>) -> f64 {
        let d = match *self {
            Durations::Fixed { s } => s,
            Durations::Exponential { mean_s } => {
                let e: f64 = Exp1.sample(rng);
                e * mean_s
            }
            Durations::LogNormal { mean_s, sigma } => {
                let mu = mean_s.ln() - sigma * sigma / 2.0;
                LogNormal::new(mu, sigma)
                    .expect("validated: finite mu, sigma >= 0")
                    .sample(rng)
            }
            Durations::Pareto { mean_s, alpha } => {
                Pareto::new(mean_s * (alpha - 1.0) / alpha, alpha)
                    .expect("validated: alpha > 1, positive mean")
                    .sample(rng)
            }
        };
        max_s.map_or(d, |m| d.min(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(mut f: impl FnMut() -> f64, n: usize) -> (f64, f64) {
        let xs: Vec<f64> = (0..n).map(|_| f()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn arrival_laws_have_the_mean_asked_and_their_textbook_spread() {
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let n = 200_000;
        let (m, cv) = moments(|| Arrivals::Poisson { mean_s: 2.0 }.sample(&mut rng), n);
        assert!(
            (m / 2.0 - 1.0).abs() < 0.01 && (cv - 1.0).abs() < 0.02,
            "{m} {cv}"
        );
        // Weibull of shape 1/2: CV² = Γ(1 + 2/k)/Γ(1 + 1/k)² − 1 = 4!/(2!)² − 1 = 5.
        let w = Arrivals::Weibull {
            mean_s: 2.0,
            shape: 0.5,
        };
        let (m, cv) = moments(|| w.sample(&mut rng), n);
        assert!((m / 2.0 - 1.0).abs() < 0.03, "{m}");
        assert!((cv - 5f64.sqrt()).abs() < 0.15, "{cv}");
    }

    #[test]
    fn duration_laws_have_the_mean_asked() {
        let mut rng = crate::sim::rng::stream(2, 0, "t");
        for law in [
            Durations::Exponential { mean_s: 30.0 },
            Durations::LogNormal {
                mean_s: 30.0,
                sigma: 1.0,
            },
            Durations::Pareto {
                mean_s: 30.0,
                alpha: 3.0,
            },
        ] {
            let (m, _) = moments(|| law.sample(&mut rng, None), 400_000);
            assert!((m / 30.0 - 1.0).abs() < 0.02, "{law:?}: {m}");
        }
        // Log-normal: the median is exp(μ) = mean · exp(−σ²/2).
        let law = Durations::LogNormal {
            mean_s: 30.0,
            sigma: 1.0,
        };
        let mut xs: Vec<f64> = (0..100_001).map(|_| law.sample(&mut rng, None)).collect();
        xs.sort_by(f64::total_cmp);
        let median = xs[50_000];
        assert!(
            (median / (30.0 * (-0.5f64).exp()) - 1.0).abs() < 0.02,
            "{median}"
        );
        // Pareto: nothing below the scale mean (α − 1)/α; a cap bounds every draw.
        let law = Durations::Pareto {
            mean_s: 30.0,
            alpha: 3.0,
        };
        for _ in 0..10_000 {
            let d = law.sample(&mut rng, Some(100.0));
            assert!((20.0..=100.0).contains(&d), "{d}");
        }
    }
}
