//! The 802.11b DSSS/CCK bit-error formulas (see the parent module's documentation) and the SINR
//! grid they are tabulated on.
//!
//! This file is shared, through `#[path]`, by the crate and by its build script
//! (`crates/xlayer-core/build.rs`), which evaluates [`ln_ok_per_bit`] at every grid point once,
//! at compile time, and writes the tables the crate `include!`s: the CCK integrals (1000-step
//! Simpson rule per point, 35-75 µs each) are no longer computed by every process (issue 15
//! item 4). It must stay self-contained: no `crate::` or `super::` paths.

/// How many DSSS modulations there are, in the order of their tables: DBPSK (1 Mbit/s), DQPSK (2),
/// CCK 5.5 and CCK 11.
pub const MODULATIONS: usize = 4;

/// The SINR grid of the tables: 1001 points from −20 dB to +30 dB in steps of 0.05 dB.
pub const GRID_MIN_DB: f64 = -20.0;
pub const GRID_STEP_DB: f64 = 0.05;
pub const GRID_LEN: usize = 1001;

/// The linear SINR of grid point `i`.
pub fn grid_sinr(i: usize) -> f64 {
    let db = GRID_MIN_DB + i as f64 * GRID_STEP_DB;
    10f64.powf(db / 10.0)
}

pub fn erfc(x: f64) -> f64 {
    // Numerical Recipes' erfcc (Chebyshev fit), relative error below 1.2e-7 everywhere.
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Standard normal cumulative distribution.
fn phi_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Symbol error probability of 16-ary CCK (biorthogonal, n = 8) at symbol energy ratio `e`.
///
/// Computed as the error mass directly, `Φ(−β) + ∫_{−β}^{∞} φ(x) [1 − (1 − 2Q(x+β))^{n−1}] dx`,
/// so that small error probabilities keep their relative precision (1 − P(correct) would not).
pub fn cck16_symbol_error(e: f64) -> f64 {
    let beta = (2.0 * e).sqrt();
    let n = 8;
    let q = |y: f64| 0.5 * erfc(y / std::f64::consts::SQRT_2);
    let (a, b) = (-beta, beta.max(0.0) + 12.0);
    let steps = 1000;
    let h = (b - a) / steps as f64;
    let f = |x: f64| {
        let two_q = (2.0 * q(x + beta)).min(1.0);
        let miss = -((n - 1) as f64 * (-two_q).ln_1p()).exp_m1();
        miss * (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
    };
    // Simpson's rule.
    let mut s = f(a) + f(b);
    for i in 1..steps {
        let x = a + i as f64 * h;
        s += if i % 2 == 1 { 4.0 } else { 2.0 } * f(x);
    }
    (phi_cdf(-beta) + s * h / 3.0).clamp(0.0, 1.0)
}

/// `ln(1 − p)` for an error probability `p`, kept finite (`p` at most 1 − 10⁻¹⁵).
pub fn ln1m(p: f64) -> f64 {
    (1.0 - p.clamp(0.0, 1.0 - 1e-15)).ln()
}

/// `ln(1 − error)` per bit of DSSS modulation `k` (0 DBPSK, 1 DQPSK, 2 CCK 5.5, 3 CCK 11) at
/// linear SINR `sinr`.
pub fn ln_ok_per_bit(k: usize, sinr: f64) -> f64 {
    match k {
        0 => {
            let ebn0 = sinr * 22.0;
            ln1m(0.5 * (-ebn0).exp())
        }
        1 => {
            let ebn0 = sinr * 11.0;
            let ber = (std::f64::consts::SQRT_2 + 1.0)
                / (8.0 * std::f64::consts::PI * std::f64::consts::SQRT_2).sqrt()
                * (-(2.0 - std::f64::consts::SQRT_2) * ebn0).exp()
                / ebn0.sqrt();
            ln1m(ber.min(0.5))
        }
        2 => {
            let ebn0 = sinr * 22.0 / 1.375 / 4.0;
            ln1m(cck16_symbol_error(4.0 * ebn0 / 2.0)) / 4.0
        }
        _ => {
            let ebn0 = sinr * 22.0 / 1.375 / 8.0;
            let p16 = cck16_symbol_error(8.0 * ebn0 / 2.0 / 2.0);
            let p256 = 1.0 - (1.0 - p16) * (1.0 - p16);
            ln1m(p256) / 8.0
        }
    }
}
