//! Helpers shared by the integration tests.

use xlayer_core::{Results, Simulation, Value};

/// Runs a scenario to its end; an invalid scenario fails the test with the error and the text.
#[allow(dead_code)] // not every test binary runs whole scenarios through it
pub fn run(toml: &str) -> Results {
    let mut sim = Simulation::from_toml(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    sim.run();
    sim.results()
}

/// A numeric column of a result row; a missing column fails the test.
#[allow(dead_code)] // not every test binary reads rows directly
pub fn col(row: &[(&'static str, Value)], key: &str) -> f64 {
    xlayer_core::cell_f64(row, key).unwrap_or_else(|| panic!("no numeric column {key}"))
}

/// Padhye, Firoiu, Towsley, Kurose, "Modeling TCP throughput: a simple model and its empirical
/// validation", SIGCOMM 1998, the full model (eq. 30-31): packets per second for loss-indication
/// probability `p`, round trip `rtt`, `b` packets per ACK, timeout `t0`, receiver window `wmax`.
#[allow(dead_code)] // used by the TCP model tests only
pub fn padhye_full(p: f64, rtt: f64, b: f64, t0: f64, wmax: f64) -> f64 {
    let q = |w: f64| -> f64 {
        let a = 1.0 - (1.0 - p).powi(3);
        let c = 1.0 + (1.0 - p).powi(3) * (1.0 - (1.0 - p).powf(w - 3.0));
        (a * c / (1.0 - (1.0 - p).powf(w))).min(1.0)
    };
    let f = 1.0
        + p
        + 2.0 * p.powi(2)
        + 4.0 * p.powi(3)
        + 8.0 * p.powi(4)
        + 16.0 * p.powi(5)
        + 32.0 * p.powi(6);
    let k = (2.0 + b) / (3.0 * b);
    let ew = k + (8.0 * (1.0 - p) / (3.0 * b * p) + k * k).sqrt();
    if ew < wmax {
        ((1.0 - p) / p + ew + q(ew) / (1.0 - p))
            / (rtt * (b / 2.0 * ew + 1.0) + q(ew) * t0 * f / (1.0 - p))
    } else {
        ((1.0 - p) / p + wmax + q(wmax) / (1.0 - p))
            / (rtt * (b / 8.0 * wmax + (1.0 - p) / (p * wmax) + 2.0) + q(wmax) * t0 * f / (1.0 - p))
    }
}
