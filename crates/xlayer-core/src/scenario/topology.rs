//! The `[topology]` section: where the nodes are ([`Topology`], [`TopologyKind`]: explicit
//! positions, a grid, a chain or a random placement) and its validation: the fields each kind
//! needs and forbids, and the node count. It needs no other section; the others take the node
//! count from here (`Scenario::node_count`).

use serde::{Deserialize, Serialize};

use super::check::{bad, positive};
use crate::error::XlError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    Explicit,
    Grid,
    Chain,
    Random,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub kind: TopologyKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub positions: Vec<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cols: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spacing_m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height_m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            kind: TopologyKind::Chain,
            positions: vec![],
            rows: None,
            cols: None,
            count: Some(2),
            spacing_m: Some(200.0),
            width_m: None,
            height_m: None,
            seed: None,
        }
    }
}

impl Topology {
    /// Number of nodes the topology describes (`Scenario::node_count`).
    pub(super) fn node_count(&self) -> u32 {
        let t = self;
        match t.kind {
            TopologyKind::Explicit => t.positions.len() as u32,
            // Saturates, so a grid too large to count fails validation instead of wrapping.
            TopologyKind::Grid => t.rows.unwrap_or(0).saturating_mul(t.cols.unwrap_or(0)),
            TopologyKind::Chain | TopologyKind::Random => t.count.unwrap_or(0),
        }
    }

    /// Checks the fields the kind needs and only those, and the node count (at most 100000).
    pub(super) fn validate(&self) -> Result<(), XlError> {
        let t = self;
        let need_u = |name: &str, v: Option<u32>| -> Result<u32, XlError> {
            match v {
                Some(x) if x >= 1 => Ok(x),
                Some(x) => Err(bad(
                    format!("topology.{name}"),
                    format!("must be at least 1, found {x}"),
                )),
                None => Err(bad(
                    format!("topology.{name}"),
                    format!("required for kind = \"{}\"", kind_name(t.kind)),
                )),
            }
        };
        let need_f = |name: &str, v: Option<f64>| -> Result<f64, XlError> {
            match v {
                Some(x) => {
                    positive(&format!("topology.{name}"), x)?;
                    Ok(x)
                }
                None => Err(bad(
                    format!("topology.{name}"),
                    format!("required for kind = \"{}\"", kind_name(t.kind)),
                )),
            }
        };
        let forbid = |names: &[(&str, bool)]| -> Result<(), XlError> {
            for (name, present) in names {
                if *present {
                    return Err(bad(
                        format!("topology.{name}"),
                        format!("not used with kind = \"{}\"", kind_name(t.kind)),
                    ));
                }
            }
            Ok(())
        };
        match t.kind {
            TopologyKind::Explicit => {
                if t.positions.is_empty() {
                    return Err(bad(
                        "topology.positions",
                        "kind = \"explicit\" needs positions = [[x, y], ...]",
                    ));
                }
                for (i, p) in t.positions.iter().enumerate() {
                    if !(p[0].is_finite() && p[1].is_finite()) {
                        return Err(bad(
                            format!("topology.positions[{i}]"),
                            "coordinates must be finite numbers",
                        ));
                    }
                }
                forbid(&[
                    ("rows", t.rows.is_some()),
                    ("cols", t.cols.is_some()),
                    ("count", t.count.is_some()),
                    ("spacing_m", t.spacing_m.is_some()),
                    ("width_m", t.width_m.is_some()),
                    ("height_m", t.height_m.is_some()),
                    ("seed", t.seed.is_some()),
                ])?;
            }
            TopologyKind::Grid => {
                need_u("rows", t.rows)?;
                need_u("cols", t.cols)?;
                need_f("spacing_m", t.spacing_m)?;
                forbid(&[
                    ("positions", !t.positions.is_empty()),
                    ("count", t.count.is_some()),
                    ("width_m", t.width_m.is_some()),
                    ("height_m", t.height_m.is_some()),
                    ("seed", t.seed.is_some()),
                ])?;
            }
            TopologyKind::Chain => {
                need_u("count", t.count)?;
                need_f("spacing_m", t.spacing_m)?;
                forbid(&[
                    ("positions", !t.positions.is_empty()),
                    ("rows", t.rows.is_some()),
                    ("cols", t.cols.is_some()),
                    ("width_m", t.width_m.is_some()),
                    ("height_m", t.height_m.is_some()),
                    ("seed", t.seed.is_some()),
                ])?;
            }
            TopologyKind::Random => {
                need_u("count", t.count)?;
                need_f("width_m", t.width_m)?;
                need_f("height_m", t.height_m)?;
                forbid(&[
                    ("positions", !t.positions.is_empty()),
                    ("rows", t.rows.is_some()),
                    ("cols", t.cols.is_some()),
                    ("spacing_m", t.spacing_m.is_some()),
                ])?;
            }
        }
        let n = self.node_count();
        if n > 100_000 {
            let (field, what) = match self.kind {
                TopologyKind::Explicit => ("topology.positions", format!("{n} nodes")),
                TopologyKind::Grid => (
                    "topology.rows",
                    format!(
                        "rows × cols = {} nodes",
                        u64::from(self.rows.unwrap_or(0)) * u64::from(self.cols.unwrap_or(0))
                    ),
                ),
                TopologyKind::Chain | TopologyKind::Random => {
                    ("topology.count", format!("{n} nodes"))
                }
            };
            return Err(bad(
                field,
                format!("{what} is more than the supported 100000"),
            ));
        }
        Ok(())
    }
}

fn kind_name(k: TopologyKind) -> &'static str {
    match k {
        TopologyKind::Explicit => "explicit",
        TopologyKind::Grid => "grid",
        TopologyKind::Chain => "chain",
        TopologyKind::Random => "random",
    }
}
