//! The `[[optimizers]]` section: ECLAIR optimizers attached to nodes ([`OptimizerSpec`]: a
//! built-in or a Python class), and its validation: exactly one of `rust` and `python`, a
//! built-in's arguments (by `crate::tune::optimizer`), the nodes (among the topology's node
//! count, passed in), latency, conflict window and delivery.

use serde::{Deserialize, Serialize};

use super::check::bad;
use crate::error::XlError;

/// An optimizer attached to nodes (`[[optimizers]]`): a built-in (`rust = "rwc"`) or a Python
/// class (`python = "module:Class"`, loaded by the Python API), one instance per node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptimizerSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Nodes to attach an instance to; absent: every node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<u32>>,
    /// Arguments of the optimizer (keyword arguments of a Python class).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Reaction latency: events are delivered this long after they happened (s).
    #[serde(default)]
    pub latency_s: f64,
    /// A set of a parameter another optimizer set to a different value less than this long
    /// before is recorded as a conflict (s).
    #[serde(default = "OptimizerSpec::default_conflict_window")]
    pub conflict_window_s: f64,
    /// "off_path" (ECLAIR) or "per_packet" (called inside the TCP receive path per segment,
    /// for overhead comparisons).
    #[serde(default = "OptimizerSpec::default_delivery")]
    pub delivery: String,
}

impl OptimizerSpec {
    fn default_conflict_window() -> f64 {
        1.0
    }
    fn default_delivery() -> String {
        "off_path".to_string()
    }

    pub fn delivery_mode(&self) -> crate::tune::optimizer::Delivery {
        if self.delivery == "per_packet" {
            crate::tune::optimizer::Delivery::PerPacket
        } else {
            crate::tune::optimizer::Delivery::OffPath
        }
    }
}

/// Checks the `[[optimizers]]` entries; the topology has `n` nodes.
pub(super) fn validate_optimizers(optimizers: &[OptimizerSpec], n: u32) -> Result<(), XlError> {
    for (i, o) in optimizers.iter().enumerate() {
        let p = format!("optimizers[{i}]");
        match (&o.rust, &o.python) {
            (Some(name), None) => {
                crate::tune::optimizer::builtin(name, &o.args)
                    .map_err(|m| crate::tune::optimizer::builtin_error(&p, m))?;
            }
            (None, Some(path)) => {
                let ok = path
                    .split_once(':')
                    .is_some_and(|(m, c)| !m.is_empty() && !c.is_empty());
                if !ok {
                    return Err(bad(
                        format!("{p}.python"),
                        format!("must be \"module:Class\", found \"{path}\""),
                    ));
                }
            }
            _ => {
                return Err(bad(
                    p,
                    "give exactly one of rust = \"<built-in>\" or python = \"module:Class\"",
                ))
            }
        }
        if let Some(nodes) = &o.nodes {
            if let Some(&bad_node) = nodes.iter().find(|&&x| x >= n) {
                return Err(bad(
                    format!("{p}.nodes"),
                    format!(
                        "node {bad_node} does not exist (the topology has nodes 0..{})",
                        n.saturating_sub(1)
                    ),
                ));
            }
        }
        if !(o.latency_s.is_finite() && o.latency_s >= 0.0) {
            return Err(bad(
                format!("{p}.latency_s"),
                format!("must be a time >= 0, found {}", o.latency_s),
            ));
        }
        if !(o.conflict_window_s.is_finite() && o.conflict_window_s >= 0.0) {
            return Err(bad(
                format!("{p}.conflict_window_s"),
                format!("must be a time >= 0, found {}", o.conflict_window_s),
            ));
        }
        if o.delivery != "off_path" && o.delivery != "per_packet" {
            return Err(bad(
                format!("{p}.delivery"),
                format!(
                    "unknown delivery \"{}\"; allowed: \"off_path\", \"per_packet\"",
                    o.delivery
                ),
            ));
        }
    }
    Ok(())
}

/// The `[eclair]` section: ECLAIR's core (`crate::tune::core`), which caches the items the
/// optimizers read often and that only tuning-layer writes change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EclairSpec {
    /// "auto" (select and serve the core), "off" (count and score only) or "verify" (serve,
    /// and check every cached read against a read through the layer).
    #[serde(default = "EclairSpec::default_core")]
    pub core: String,
    /// Selection period (simulated s): the core is re-selected from the last period's counts.
    #[serde(default = "EclairSpec::default_period")]
    pub core_period_s: f64,
    /// Design threshold t on the core's utility less its cost (ns of CPU per simulated
    /// second); absent: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_threshold_ns_per_s: Option<f64>,
    /// V: items read at most this often (per simulated s) are not candidates.
    #[serde(default)]
    pub core_min_reads_per_s: f64,
}

impl Default for EclairSpec {
    fn default() -> Self {
        EclairSpec {
            core: EclairSpec::default_core(),
            core_period_s: EclairSpec::default_period(),
            core_threshold_ns_per_s: None,
            core_min_reads_per_s: 0.0,
        }
    }
}

impl EclairSpec {
    fn default_core() -> String {
        "auto".to_string()
    }
    fn default_period() -> f64 {
        1.0
    }
    pub fn is_default(&self) -> bool {
        *self == EclairSpec::default()
    }

    pub(super) fn validate(&self) -> Result<(), XlError> {
        if crate::tune::core::CoreMode::from_name(&self.core).is_none() {
            return Err(bad(
                "eclair.core",
                format!(
                    "must be \"auto\", \"off\" or \"verify\", found \"{}\"",
                    self.core
                ),
            ));
        }
        if !(self.core_period_s.is_finite() && self.core_period_s >= 1e-6) {
            return Err(bad(
                "eclair.core_period_s",
                format!("must be a time >= 1e-6 s, found {}", self.core_period_s),
            ));
        }
        if let Some(t) = self.core_threshold_ns_per_s {
            if t.is_nan() {
                return Err(bad("eclair.core_threshold_ns_per_s", "must be a number"));
            }
        }
        if !(self.core_min_reads_per_s.is_finite() && self.core_min_reads_per_s >= 0.0) {
            return Err(bad(
                "eclair.core_min_reads_per_s",
                format!("must be >= 0, found {}", self.core_min_reads_per_s),
            ));
        }
        Ok(())
    }

    /// The core's settings.
    pub fn config(&self) -> crate::tune::core::CoreConfig {
        crate::tune::core::CoreConfig {
            mode: crate::tune::core::CoreMode::from_name(&self.core).unwrap_or_default(),
            period: crate::sim::SimTime::from_secs_f64(self.core_period_s),
            threshold_ns_per_s: self.core_threshold_ns_per_s.unwrap_or(f64::INFINITY),
            min_reads_per_s: self.core_min_reads_per_s,
        }
    }
}
