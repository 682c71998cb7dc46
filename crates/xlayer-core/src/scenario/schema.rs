//! The top level of a scenario: the [`Scenario`] struct (its own fields `name`, `seed`,
//! `duration_s`, `warmup_s` and one field per section), their defaults, and the order in which
//! validation runs the sections' checks.
//!
//! Each section's types and checks live in its own module (`radio`, `mac`, `net`, `stack`,
//! `topology`, `flows`, `events`, `noise`, `optimizers`, `output`). A check that needs another
//! section's value is given that value: `radio.rts_cts` to the MAC; the topology's node count to
//! the net protocols, link losses, events, noise, flows and optimizers; `duration_s` to events,
//! noise, output and flows; the number of MAC priority levels (from `mac` and `radio.standard`) to the flows. Kept
//! here: the checks of the top-level fields (`duration_s`, `warmup_s`). Applying the stack preset,
//! which writes into `[mac]`, `[net]` and the flows, is a `Scenario` method in `stack`.
//!
//! Defaults that depend on the radio standard (rates, power, frequency, thresholds) are `Option`s
//! that [`Scenario::validate`] fills in, so the scenario written next to the results states every
//! value the run used.

use serde::{Deserialize, Serialize};

use super::check::{bad, positive};
use super::events::{validate_events, LinkLossSpec, ScenarioEvent};
use super::flows::{validate_flows, FlowSpec, FlowsRandom};
use super::mac::{EdcaLevel, MacConfig};
use super::net::NetConfig;
use super::noise::{validate_noise, NoiseSpec};
use super::optimizers::{validate_optimizers, EclairSpec, OptimizerSpec};
use super::output::Output;
use super::radio::{Radio, Standard};
use super::stack::Stack;
use super::topology::Topology;
use super::wired::{validate_wired, WiredSpec};
use crate::error::XlError;

fn default_name() -> String {
    "default".to_string()
}
fn default_seed() -> u64 {
    1
}
fn default_duration() -> f64 {
    10.0
}

/// A whole scenario. See `docs/scenario.md` for every field.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    #[serde(default)]
    pub warmup_s: f64,
    #[serde(default)]
    pub radio: Radio,
    #[serde(default)]
    pub mac: MacConfig,
    #[serde(default)]
    pub net: NetConfig,
    #[serde(default)]
    pub stack: Stack,
    #[serde(default)]
    pub topology: Topology,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows_random: Option<FlowsRandom>,
    #[serde(default)]
    pub output: Output,
    /// Per-link loss probabilities on top of the SINR model (`net::linkloss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_loss: Option<LinkLossSpec>,
    /// Things that happen at given times: nodes switched off and on, link losses changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<ScenarioEvent>,
    /// Point-to-point wired links (`[[wired]]`, `mac::wired`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wired: Vec<WiredSpec>,
    /// Sources of injected noise switching on and off (`[[noise]]`, `phy::noise`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<NoiseSpec>,
    /// ECLAIR optimizers attached to nodes (`[[optimizers]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optimizers: Vec<OptimizerSpec>,
    /// ECLAIR's core (`[eclair]`, `tune::core`).
    #[serde(default, skip_serializing_if = "EclairSpec::is_default")]
    pub eclair: EclairSpec,
}

impl Scenario {
    /// Number of nodes the topology describes.
    pub fn node_count(&self) -> u32 {
        self.topology.node_count()
    }

    /// Checks values serde cannot, and fills standard-dependent defaults in place.
    pub fn validate(mut self) -> Result<Scenario, XlError> {
        self.validate_in_place()?;
        Ok(self)
    }

    /// Runs the checks in their order (the first error is the one reported): the preset, the
    /// top-level times, then radio, MAC, routing, topology, link losses, events, noise, net protocols,
    /// output, flows, random flows and optimizers.
    fn validate_in_place(&mut self) -> Result<(), XlError> {
        self.apply_preset()?;
        positive("duration_s", self.duration_s)?;
        // The engine counts nanoseconds in 64 bits (584 years); stay well inside.
        if self.duration_s > 1e9 {
            return Err(bad(
                "duration_s",
                format!(
                    "at most 1e9 s (about 32 years), found {:e}",
                    self.duration_s
                ),
            ));
        }
        if !(self.warmup_s.is_finite() && self.warmup_s >= 0.0 && self.warmup_s < self.duration_s) {
            return Err(bad(
                "warmup_s",
                format!(
                    "must be >= 0 and below duration_s ({}), found {}",
                    self.duration_s, self.warmup_s
                ),
            ));
        }
        self.radio.validate()?;
        self.mac.validate(self.radio.rts_cts)?;
        self.net.validate_routing()?;
        self.topology.validate()?;
        // The topology is valid from here on; the node count does not change.
        let n = self.node_count();
        if let Some(ll) = &self.link_loss {
            ll.validate(n)?;
        }
        validate_events(&self.events, n, self.duration_s)?;
        validate_noise(&self.noise, n, self.duration_s)?;
        validate_wired(&self.wired, n)?;
        let ap = self.topology.kind == super::topology::TopologyKind::AccessPoint;
        if ap {
            // The access point's own wires join node 0 to each server.
            let servers = self.topology.count.unwrap_or(0);
            if let Some(i) = self
                .wired
                .iter()
                .position(|w| w.a.min(w.b) == 0 && (1..=servers).contains(&w.a.max(w.b)))
            {
                return Err(bad(
                    format!("wired[{i}].b"),
                    "the access point topology already wires each server to node 0",
                ));
            }
        }
        if !self.wired.is_empty() || ap {
            // Routing protocols, per-destination queues and Fusion's gate run over radios only.
            let field = if self.net.routing != "static" {
                Some("net.routing")
            } else if self.net.queueing.as_deref().is_some_and(|q| q != "fifo") {
                Some("net.queueing")
            } else if self.stack.preset == "fusion" {
                Some("stack.preset")
            } else {
                None
            };
            if let Some(field) = field {
                return Err(bad(
                    "wired",
                    format!(
                        "wired links run with static routing, FIFO queueing and no Fusion gate; \
                         {field} asks otherwise"
                    ),
                ));
            }
        }
        self.net.validate_protocols(n)?;
        self.output.validate(self.duration_s, n)?;
        let levels = self.mac_levels().len() as u32;
        validate_flows(&mut self.flows, n, levels, self.duration_s)?;
        if self.radio.standard != Standard::Dot11a {
            if let Some(i) = self.flows.iter().position(|f| f.code_rate.is_some()) {
                return Err(bad(
                    format!("flows[{i}].code_rate"),
                    "per-flow code rates are 802.11a BPSK OFDM: set radio.standard = \"802.11a\"",
                ));
            }
        }
        if let Some(fr) = &mut self.flows_random {
            fr.validate(n, levels, self.duration_s)?;
        }
        validate_optimizers(&self.optimizers, n)?;
        self.eclair.validate()?;
        self.validate_flavor_link(n)?;
        Ok(())
    }

    /// Checks `[stack.flavor_link]`: its nodes (default the access point), its table, and an
    /// 802.11a radio when it sets code rates.
    fn validate_flavor_link(&mut self, n: u32) -> Result<(), XlError> {
        let ap = self.topology.kind == super::topology::TopologyKind::AccessPoint;
        let standard = self.radio.standard;
        let Some(f) = self.stack.flavor_link.as_mut() else {
            return Ok(());
        };
        let nodes = match (&f.nodes, ap) {
            (Some(nodes), _) => nodes.clone(),
            (None, true) => vec![0],
            (None, false) => {
                return Err(bad(
                    "stack.flavor_link.nodes",
                    "name the nodes that detect flavors (the default, node 0, is the access point of topology.kind = \"access_point\")",
                ))
            }
        };
        if nodes.is_empty() {
            return Err(bad("stack.flavor_link.nodes", "name at least one node"));
        }
        if let Some(&bad_node) = nodes.iter().find(|&&v| v >= n) {
            return Err(bad(
                "stack.flavor_link.nodes",
                format!(
                    "node {bad_node} does not exist (the topology has nodes 0..{})",
                    n.saturating_sub(1)
                ),
            ));
        }
        f.nodes = Some(nodes);
        crate::tune::flavor_link::FlavorLink::from_args(&f.table).map_err(|m| {
            bad(
                format!(
                    "stack.flavor_link.table{}",
                    m.split(':').next().unwrap_or("").trim_start_matches("args")
                ),
                m.split_once(": ").map_or(m.clone(), |x| x.1.to_string()),
            )
        })?;
        if f.optimize && standard != Standard::Dot11a {
            return Err(bad(
                "stack.flavor_link.optimize",
                "sets per-flow code rates, which are 802.11a BPSK OFDM: set radio.standard = \"802.11a\" or optimize = false",
            ));
        }
        Ok(())
    }

    /// The EDCA level table in force, lowest priority first.
    pub fn mac_levels(&self) -> Vec<EdcaLevel> {
        self.mac.edca_levels(self.radio.standard)
    }
}
