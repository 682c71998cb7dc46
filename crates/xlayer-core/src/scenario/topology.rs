//! The `[topology]` section: where the nodes are ([`Topology`], [`TopologyKind`]: explicit
//! positions, a grid, a chain, a random placement, or an access point with wired servers and
//! wireless clients) and its validation: the fields each kind needs and forbids, and the node
//! count. It needs no other section; the others take the node
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
    /// The flavor-aware link layer's set-up (seed document 003 §IV-V): an access point (node
    /// 0), `count` servers wired to it (nodes 1..=count) and `count` wireless clients around it
    /// (nodes count+1..=2 count; client i pairs with server i).
    AccessPoint,
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
    /// `access_point`: every client's distance from the access point (the mean with
    /// `distance_std_m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_m: Option<f64>,
    /// `access_point`: each client's distance, in client order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distances_m: Vec<f64>,
    /// `access_point`: distances drawn from a normal distribution of this standard deviation
    /// around `distance_m` (the document's scenario 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_std_m: Option<f64>,
    /// `access_point`: the round trip of each server's wire (its one-way delay is half), or the
    /// mean of `rtt_distribution`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_s: Option<f64>,
    /// `access_point`: "fixed" (default), "normal" (`rtt_s`, `rtt_std_s`), "exponential"
    /// (mean `rtt_s`) or "uniform" (`rtt_min_s` … `rtt_max_s`): Table II's distributions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_distribution: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_std_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_min_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_max_s: Option<f64>,
    /// `access_point`: the servers' wire rate (default 100 Mbit/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rate_bps: Option<f64>,
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
            distance_m: None,
            distances_m: vec![],
            distance_std_m: None,
            rtt_s: None,
            rtt_distribution: None,
            rtt_std_s: None,
            rtt_min_s: None,
            rtt_max_s: None,
            server_rate_bps: None,
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
            TopologyKind::AccessPoint => t.count.unwrap_or(0).saturating_mul(2).saturating_add(1),
        }
    }

    /// Whether a field that only the access point uses is given.
    fn access_point_fields(&self) -> Option<&'static str> {
        let t = self;
        [
            ("distance_m", t.distance_m.is_some()),
            ("distances_m", !t.distances_m.is_empty()),
            ("distance_std_m", t.distance_std_m.is_some()),
            ("rtt_s", t.rtt_s.is_some()),
            ("rtt_distribution", t.rtt_distribution.is_some()),
            ("rtt_std_s", t.rtt_std_s.is_some()),
            ("rtt_min_s", t.rtt_min_s.is_some()),
            ("rtt_max_s", t.rtt_max_s.is_some()),
            ("server_rate_bps", t.server_rate_bps.is_some()),
        ]
        .into_iter()
        .find(|f| f.1)
        .map(|f| f.0)
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
        if t.kind != TopologyKind::AccessPoint {
            if let Some(f) = t.access_point_fields() {
                return Err(bad(
                    format!("topology.{f}"),
                    format!("not used with kind = \"{}\"", kind_name(t.kind)),
                ));
            }
        }
        match t.kind {
            TopologyKind::AccessPoint => t.validate_access_point()?,
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
                TopologyKind::Chain | TopologyKind::Random | TopologyKind::AccessPoint => {
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

impl Topology {
    /// The access point's fields: a count, one way to place the clients, one way to set the
    /// round trips.
    fn validate_access_point(&self) -> Result<(), XlError> {
        let t = self;
        let f = |name: &str| format!("topology.{name}");
        let kind = "not used with kind = \"access_point\"";
        for (name, present) in [
            ("positions", !t.positions.is_empty()),
            ("rows", t.rows.is_some()),
            ("cols", t.cols.is_some()),
            ("spacing_m", t.spacing_m.is_some()),
            ("width_m", t.width_m.is_some()),
            ("height_m", t.height_m.is_some()),
        ] {
            if present {
                return Err(bad(f(name), kind));
            }
        }
        match t.count {
            Some(c) if (1..=10_000).contains(&c) => {}
            Some(c) => {
                return Err(bad(
                    f("count"),
                    format!("must be 1..=10000 clients, found {c}"),
                ))
            }
            None => {
                return Err(bad(
                    f("count"),
                    "required for kind = \"access_point\": the number of client/server pairs",
                ))
            }
        }
        let count = t.count.unwrap_or(0) as usize;
        match (t.distance_m, t.distances_m.is_empty()) {
            (Some(d), true) => positive(&f("distance_m"), d)?,
            (None, false) => {
                if t.distances_m.len() != count {
                    return Err(bad(
                        f("distances_m"),
                        format!(
                            "gives {} distances for {count} clients",
                            t.distances_m.len()
                        ),
                    ));
                }
                for (i, &d) in t.distances_m.iter().enumerate() {
                    positive(&format!("topology.distances_m[{i}]"), d)?;
                }
                if t.distance_std_m.is_some() {
                    return Err(bad(f("distance_std_m"), "used with distance_m only"));
                }
            }
            (Some(_), false) => {
                return Err(bad(
                    f("distances_m"),
                    "give distance_m or distances_m, not both",
                ))
            }
            (None, true) => {
                return Err(bad(
                    f("distance_m"),
                    "required for kind = \"access_point\" (or distances_m, one per client)",
                ))
            }
        }
        if let Some(s) = t.distance_std_m {
            if !(s.is_finite() && s >= 0.0) {
                return Err(bad(f("distance_std_m"), format!("must be >= 0, found {s}")));
            }
        }
        if let Some(r) = t.server_rate_bps {
            positive(&f("server_rate_bps"), r)?;
        }
        let nonneg = |name: &str, v: Option<f64>| -> Result<(), XlError> {
            match v {
                Some(x) if !(x.is_finite() && (0.0..=100.0).contains(&x)) => {
                    Err(bad(f(name), format!("must be within 0..=100 s, found {x}")))
                }
                _ => Ok(()),
            }
        };
        nonneg("rtt_s", t.rtt_s)?;
        nonneg("rtt_std_s", t.rtt_std_s)?;
        nonneg("rtt_min_s", t.rtt_min_s)?;
        nonneg("rtt_max_s", t.rtt_max_s)?;
        let dist = t.rtt_distribution.as_deref().unwrap_or("fixed");
        let given = |name: &str, v: Option<f64>| -> Result<(), XlError> {
            if v.is_some() {
                Err(bad(
                    f(name),
                    format!("not used with rtt_distribution = \"{dist}\""),
                ))
            } else {
                Ok(())
            }
        };
        match dist {
            "fixed" | "exponential" => {
                given("rtt_std_s", t.rtt_std_s)?;
                given("rtt_min_s", t.rtt_min_s)?;
                given("rtt_max_s", t.rtt_max_s)
            }
            "normal" => {
                given("rtt_min_s", t.rtt_min_s)?;
                given("rtt_max_s", t.rtt_max_s)?;
                if t.rtt_std_s.is_none() {
                    return Err(bad(f("rtt_std_s"), "required for rtt_distribution = \"normal\""));
                }
                Ok(())
            }
            "uniform" => {
                given("rtt_s", t.rtt_s)?;
                given("rtt_std_s", t.rtt_std_s)?;
                match (t.rtt_min_s, t.rtt_max_s) {
                    (Some(a), Some(b)) if b > a => Ok(()),
                    (Some(a), Some(b)) => Err(bad(
                        f("rtt_max_s"),
                        format!("must be above rtt_min_s ({a}), found {b}"),
                    )),
                    _ => Err(bad(
                        f("rtt_min_s"),
                        "rtt_distribution = \"uniform\" needs rtt_min_s and rtt_max_s",
                    )),
                }
            }
            other => Err(bad(
                f("rtt_distribution"),
                format!("unknown distribution \"{other}\"; allowed: \"fixed\", \"normal\", \"exponential\", \"uniform\""),
            )),
        }
    }
}

fn kind_name(k: TopologyKind) -> &'static str {
    match k {
        TopologyKind::AccessPoint => "access_point",
        TopologyKind::Explicit => "explicit",
        TopologyKind::Grid => "grid",
        TopologyKind::Chain => "chain",
        TopologyKind::Random => "random",
    }
}
