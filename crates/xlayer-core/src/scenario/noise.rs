//! The `[[noise]]` section: sources of injected noise ([`NoiseSpec`]), with their validation —
//! one power (W or dBm), the nodes reached (all, a list, or a position with the scenario's
//! propagation), and the on-off process with the fields each process needs. The values they
//! need from other sections, the topology's node count and `duration_s`, are passed in.
//! The model is `crate::phy::noise`.

use serde::{Deserialize, Serialize};

use super::check::{bad, node_exists, positive};
use crate::error::XlError;

fn default_process() -> String {
    "pulses".to_string()
}

/// A noise source. See `docs/scenario.md` ("`[[noise]]`").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseSpec {
    /// Noise power in W: at the antenna of every node reached, or radiated from `position`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// The same in dBm (give one of the two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_dbm: Option<f64>,
    /// The nodes reached, each with the full power (default: every node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<u32>>,
    /// A noise transmitter at `[x, y]` metres: each node receives the power through the
    /// scenario's propagation (its mean; fading and shadowing do not apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<[f64; 2]>,
    /// "pulses" (on `on_s`, off `off_s`), "exponential" (on and off periods of means `on_s`
    /// and `off_s`), or "schedule" (on over each `[start, end]` of `schedule`).
    #[serde(default = "default_process")]
    pub process: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_s: Option<f64>,
    /// First switch-on of pulses and exponential processes (default 0: on from the start).
    #[serde(default)]
    pub start_s: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<[f64; 2]>,
    /// Whether carrier sense counts the noise energy (default false: noise lowers the SINR
    /// only, as in the ns-2 set-up of the CLAP slides).
    #[serde(default)]
    pub carrier_sense: bool,
}

impl NoiseSpec {
    /// The power in W (validated: exactly one of `power_w`, `power_dbm` is given).
    pub fn watts(&self) -> f64 {
        match (self.power_w, self.power_dbm) {
            (Some(w), _) => w,
            (None, Some(dbm)) => 10f64.powf(dbm / 10.0) / 1000.0,
            (None, None) => 0.0,
        }
    }
}

/// Checks `[[noise]]`: one power, nodes among the topology's `n` or a position, the process and
/// the fields it needs (and only those), times inside the run (`duration_s`).
pub(super) fn validate_noise(noise: &[NoiseSpec], n: u32, duration_s: f64) -> Result<(), XlError> {
    for (i, s) in noise.iter().enumerate() {
        let p = format!("noise[{i}]");
        match (s.power_w, s.power_dbm) {
            (Some(w), None) => positive(&format!("{p}.power_w"), w)?,
            (None, Some(dbm)) => {
                if !(dbm.is_finite() && dbm <= 100.0) {
                    return Err(bad(
                        format!("{p}.power_dbm"),
                        format!("must be a finite power of at most 100 dBm, found {dbm}"),
                    ));
                }
            }
            (Some(_), Some(_)) => {
                return Err(bad(
                    format!("{p}.power_dbm"),
                    "give the power once: power_w or power_dbm",
                ))
            }
            (None, None) => {
                return Err(bad(
                    format!("{p}.power_w"),
                    "required: the noise power (power_w, or power_dbm)",
                ))
            }
        }
        if let Some(nodes) = &s.nodes {
            if s.position.is_some() {
                return Err(bad(
                    format!("{p}.position"),
                    "give the nodes reached or a position, not both",
                ));
            }
            if nodes.is_empty() {
                return Err(bad(
                    format!("{p}.nodes"),
                    "lists no node (leave it out for every node)",
                ));
            }
            for (k, &v) in nodes.iter().enumerate() {
                node_exists(&format!("{p}.nodes[{k}]"), v, n)?;
            }
        }
        if let Some([x, y]) = s.position {
            if !(x.is_finite() && y.is_finite()) {
                return Err(bad(
                    format!("{p}.position"),
                    format!("must be finite coordinates in metres, found [{x}, {y}]"),
                ));
            }
        }
        let forbid = |name: &str, present: bool| -> Result<(), XlError> {
            if present {
                Err(bad(
                    format!("{p}.{name}"),
                    format!("not used with process = \"{}\"", s.process),
                ))
            } else {
                Ok(())
            }
        };
        let need = |name: &str, v: Option<f64>| -> Result<(), XlError> {
            let v = v.ok_or_else(|| {
                bad(
                    format!("{p}.{name}"),
                    format!("required for process = \"{}\"", s.process),
                )
            })?;
            if !(v.is_finite() && v >= 1e-6) {
                return Err(bad(
                    format!("{p}.{name}"),
                    format!("must be at least 1e-6 s, found {v}"),
                ));
            }
            Ok(())
        };
        match s.process.as_str() {
            "pulses" | "exponential" => {
                need("on_s", s.on_s)?;
                need("off_s", s.off_s)?;
                forbid("schedule", !s.schedule.is_empty())?;
                if !(s.start_s.is_finite() && s.start_s >= 0.0 && s.start_s < duration_s) {
                    return Err(bad(
                        format!("{p}.start_s"),
                        format!(
                            "must be >= 0 and below duration_s ({duration_s}), found {}",
                            s.start_s
                        ),
                    ));
                }
            }
            "schedule" => {
                forbid("on_s", s.on_s.is_some())?;
                forbid("off_s", s.off_s.is_some())?;
                forbid("start_s", s.start_s != 0.0)?;
                if s.schedule.is_empty() {
                    return Err(bad(
                        format!("{p}.schedule"),
                        "required for process = \"schedule\": a list of [start, end] times in seconds",
                    ));
                }
                let mut last_end = 0.0;
                for (k, &[a, b]) in s.schedule.iter().enumerate() {
                    let f = format!("{p}.schedule[{k}]");
                    if !(a.is_finite() && b.is_finite() && a >= last_end && b > a) {
                        return Err(bad(
                            f,
                            format!(
                                "intervals must be increasing, disjoint and non-empty \
                                 ([start, end] with end > start >= the previous end {last_end}), found [{a}, {b}]"
                            ),
                        ));
                    }
                    last_end = b;
                }
            }
            other => {
                return Err(bad(
                    format!("{p}.process"),
                    format!("unknown process \"{other}\"; allowed: \"pulses\", \"exponential\", \"schedule\""),
                ))
            }
        }
    }
    Ok(())
}
