//! xlayer-core: a discrete-event simulator of 802.11 multi-hop wireless networks.
//!
//! Layers, each in its folder, import downward only (checked by `tests/layering.rs`): [`sim`]
//! (engine) and [`error`] ← [`wire`] (packets, headers, frames, addresses) ← [`metrics`]
//! (counters and capture buffers) ← [`phy`] ← [`mac`] ← [`net`] ← [`transport`] ← [`app`] ←
//! [`xl`] (cross-layer data-path components: the back-pressure schedulers and source rate
//! controllers, Fusion) ← [`tune`] (ECLAIR's tuning layers and optimizers) ← [`scenario`] (what a
//! run is) ← [`world`] (node assembly, the channel, the run loop) ← `builder` (scenario → world)
//! ← `results` (reading the world out). [`Simulation`] is the surface callers use: build from a
//! scenario, `run_until` a time, read [`Results`].
//!
//! The crate does no I/O of its own: it takes scenario text and returns values and bytes.

pub mod app;
pub mod builder;
pub mod error;
pub mod mac;
pub mod metrics;
pub mod net;
pub mod oracle;
pub mod phy;
pub mod scenario;
pub mod sim;
pub mod transport;
pub mod tune;
pub mod wire;
pub mod world;
pub mod xl;

mod results;

pub use error::XlError;
pub use results::{cell_f64, Results, Row, Value};
pub use scenario::Scenario;

use sim::SimTime;
use world::World;

/// The crate version, written next to every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A built scenario, ready to run.
pub struct Simulation {
    pub scenario: Scenario,
    pub world: World,
}

impl Simulation {
    /// Validates and builds a scenario.
    pub fn new(scenario: Scenario) -> Result<Simulation, XlError> {
        let world = builder::build(&scenario)?;
        Ok(Simulation { scenario, world })
    }

    pub fn from_toml(text: &str) -> Result<Simulation, XlError> {
        Simulation::new(Scenario::from_toml(text)?)
    }

    pub fn from_json(text: &str) -> Result<Simulation, XlError> {
        Simulation::new(Scenario::from_json(text)?)
    }

    /// Simulated time now, in seconds.
    pub fn now_s(&self) -> f64 {
        self.world.now().as_secs_f64()
    }

    pub fn end_s(&self) -> f64 {
        self.world.end.as_secs_f64()
    }

    /// Runs to `t_s` seconds (capped at the end). Returns true when the end is reached.
    pub fn run_until(&mut self, t_s: f64) -> bool {
        self.world.run_until(SimTime::from_secs_f64(t_s))
    }

    /// Runs to the end.
    pub fn run(&mut self) {
        self.world.run_until(SimTime::MAX);
    }

    pub fn events(&self) -> u64 {
        self.world.queue.executed()
    }

    pub fn results(&self) -> Results {
        results::collect(&self.scenario, &self.world)
    }
}
