//! The loss and event sections: `[link_loss]` (per-link loss probabilities, drawn from a range
//! or given per link: [`LinkLossSpec`], [`RandomLoss`], [`LinkLossEntry`]) and `[[events]]`
//! (nodes switched off and on, link losses changed at given times: [`ScenarioEvent`]), and their
//! validation: probabilities, the fields each event kind needs, times inside the run. The values
//! they need from other sections, the topology's node count and `duration_s`, are passed in.

use serde::{Deserialize, Serialize};

use super::check::{bad, node_exists, probability, yes};
use crate::error::XlError;

/// Loss probabilities of links: drawn from a range and/or given per link (these override).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkLossSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random: Option<RandomLoss>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkLossEntry>,
}

/// Every pair of nodes in reception range gets a loss drawn uniformly from `[min, max]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomLoss {
    #[serde(default)]
    pub min: f64,
    pub max: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// One draw for both directions of a pair (otherwise one per direction).
    #[serde(default = "yes")]
    pub symmetric: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkLossEntry {
    pub from: u32,
    pub to: u32,
    pub loss: f64,
    /// Also set `to → from`.
    #[serde(default = "yes")]
    pub symmetric: bool,
}

/// A scheduled change: `kind` is "node_off", "node_on" (with `node`) or "link_loss" (with
/// `from`, `to`, `loss` and optionally `symmetric`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioEvent {
    pub at_s: f64,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symmetric: Option<bool>,
}

impl LinkLossSpec {
    /// Checks the random range and the listed links; `n` is the topology's node count.
    pub(super) fn validate(&self, n: u32) -> Result<(), XlError> {
        let ll = self;
        if let Some(r) = &ll.random {
            probability("link_loss.random.min", r.min)?;
            probability("link_loss.random.max", r.max)?;
            if r.max < r.min {
                return Err(bad(
                    "link_loss.random.max",
                    format!("must be at least min ({}), found {}", r.min, r.max),
                ));
            }
        }
        for (i, l) in ll.links.iter().enumerate() {
            let p = format!("link_loss.links[{i}]");
            node_exists(&format!("{p}.from"), l.from, n)?;
            node_exists(&format!("{p}.to"), l.to, n)?;
            if l.from == l.to {
                return Err(bad(format!("{p}.to"), "a link joins two different nodes"));
            }
            probability(&format!("{p}.loss"), l.loss)?;
        }
        Ok(())
    }
}

/// Checks `[[events]]`: times inside the run (`duration_s`), the fields each kind needs and only
/// those, nodes among the topology's `n`, probabilities.
pub(super) fn validate_events(
    events: &[ScenarioEvent],
    n: u32,
    duration_s: f64,
) -> Result<(), XlError> {
    for (i, e) in events.iter().enumerate() {
        let p = format!("events[{i}]");
        if !(e.at_s.is_finite() && e.at_s >= 0.0 && e.at_s < duration_s) {
            return Err(bad(
                format!("{p}.at_s"),
                format!(
                    "must be >= 0 and below duration_s ({}), found {}",
                    duration_s, e.at_s
                ),
            ));
        }
        let forbid = |name: &str, present: bool| -> Result<(), XlError> {
            if present {
                Err(bad(
                    format!("{p}.{name}"),
                    format!("not used with kind = \"{}\"", e.kind),
                ))
            } else {
                Ok(())
            }
        };
        let need = |name: &str, v: Option<u32>| -> Result<u32, XlError> {
            let v = v.ok_or_else(|| {
                bad(
                    format!("{p}.{name}"),
                    format!("required for kind = \"{}\"", e.kind),
                )
            })?;
            node_exists(&format!("{p}.{name}"), v, n)?;
            Ok(v)
        };
        match e.kind.as_str() {
                "node_off" | "node_on" => {
                    need("node", e.node)?;
                    forbid("from", e.from.is_some())?;
                    forbid("to", e.to.is_some())?;
                    forbid("loss", e.loss.is_some())?;
                    forbid("symmetric", e.symmetric.is_some())?;
                }
                "link_loss" => {
                    forbid("node", e.node.is_some())?;
                    let (a, b) = (need("from", e.from)?, need("to", e.to)?);
                    if a == b {
                        return Err(bad(format!("{p}.to"), "a link joins two different nodes"));
                    }
                    let loss = e.loss.ok_or_else(|| {
                        bad(format!("{p}.loss"), "required for kind = \"link_loss\"")
                    })?;
                    probability(&format!("{p}.loss"), loss)?;
                }
                other => {
                    return Err(bad(
                        format!("{p}.kind"),
                        format!("unknown event kind \"{other}\"; allowed: \"node_off\", \"node_on\", \"link_loss\""),
                    ))
                }
            }
    }
    Ok(())
}
