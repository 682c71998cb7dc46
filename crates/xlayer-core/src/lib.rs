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
//! The crate does no I/O of its own: it takes scenario text and returns values and bytes, and
//! streams captures into the sinks its caller attaches ([`Simulation::attach_capture`]).

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
pub use results::{cell_f64, Results, Row, Value, ECLAIR_WALL_CLOCK_KEYS};
pub use scenario::Scenario;

use metrics::pcap::{CaptureError, PcapWriter, Sink};
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

    /// The nodes the scenario captures (`output.pcap`, `output.pcap_nodes`), ascending.
    pub fn captured_nodes(&self) -> Vec<u32> {
        self.scenario
            .output
            .captured_nodes(self.world.nodes.len() as u32)
    }

    /// Streams `node`'s capture (pcap with radiotap, `metrics::pcap`) into `sink`, which is
    /// buffered. Refused unless the scenario captures the node, and once the run has started
    /// (a capture holds the whole run).
    pub fn attach_capture(&mut self, node: u32, sink: Sink) -> Result<(), XlError> {
        if !self.scenario.output.pcap {
            return Err(XlError::scenario(
                "output.pcap",
                "captures are off; set output.pcap = true",
            ));
        }
        let captured = self.captured_nodes();
        if !captured.contains(&node) {
            return Err(XlError::scenario(
                "output.pcap_nodes",
                format!("node {node} is not captured (captured: {captured:?})"),
            ));
        }
        if self.world.queue.executed() > 0 || self.world.now() > SimTime::ZERO {
            return Err(XlError::Simulation(format!(
                "the capture of node {node} must be attached before the run starts \
                 (the simulation is at {} s)",
                self.now_s()
            )));
        }
        let writer = PcapWriter::new(sink, self.scenario.capture_config());
        self.world.attach_capture(node, writer);
        Ok(())
    }

    /// True once a capture's sink has failed; [`Simulation::flush_captures`] says which.
    pub fn capture_failed(&self) -> bool {
        self.world.capture_failed()
    }

    /// Writes out what the captures have buffered; the first one that failed, by node.
    pub fn flush_captures(&mut self) -> Result<(), CaptureError> {
        self.world.flush_captures()
    }

    /// Flushes and closes the captures (their sinks are dropped); the first that failed.
    pub fn close_captures(&mut self) -> Result<(), CaptureError> {
        self.world.close_captures()
    }
}
