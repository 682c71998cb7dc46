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
