//! The `[net]` section: routing (static, DSDV, OLSR), TTL, queueing and the DSDV, OLSR and ETX
//! tables ([`NetConfig`], [`DsdvConfig`], [`OlsrConfig`], [`EtxConfig`]), and their validation,
//! in two parts run at their places in the order of checks: `NetConfig::validate_routing`
//! (names and TTL) and `NetConfig::validate_protocols` (queueing and the protocol tables). The
//! one value they need from another section, the topology's node count, is passed in.

use serde::{Deserialize, Serialize};

use super::check::{at_least_1us, bad, default_from_serde, positive};
use crate::error::XlError;

default_from_serde!(OlsrConfig, DsdvConfig, EtxConfig, NetConfig);

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// Only "static" (hop-count shortest paths, lowest next-hop id on ties) in this version.
    #[serde(default = "NetConfig::default_routing")]
    pub routing: String,
    #[serde(default = "NetConfig::default_ttl")]
    pub ttl: u32,
    /// ETX probing (`net::etx`); on by default under the ETX routing protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etx: Option<EtxConfig>,
    /// DSDV settings, with `routing = "dsdv"` (`net::dsdv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsdv: Option<DsdvConfig>,
    /// OLSR settings, with `routing = "olsr"` (`net::olsr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub olsr: Option<OlsrConfig>,
    /// "fifo" (absent) or "per_destination" (`net::queue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queueing: Option<String>,
    /// Capacity of each per-destination queue (DPCLO Table I: 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dest_queue_packets: Option<u32>,
}

/// OLSR settings (RFC 3626 constants; see `net::olsr`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OlsrConfig {
    #[serde(default = "OlsrConfig::default_tc")]
    pub tc_interval_s: f64,
    #[serde(default = "OlsrConfig::default_jitter")]
    pub max_jitter_s: f64,
    #[serde(default = "OlsrConfig::default_hold")]
    pub neighb_hold_s: f64,
}

impl OlsrConfig {
    fn default_tc() -> f64 {
        5.0
    }
    fn default_jitter() -> f64 {
        0.5
    }
    fn default_hold() -> f64 {
        6.0
    }
}

/// DSDV settings (ns-2 `Agent/DSDV` defaults; see `net::dsdv`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsdvConfig {
    #[serde(default = "DsdvConfig::default_interval")]
    pub update_interval_s: f64,
    #[serde(default = "DsdvConfig::default_k")]
    pub k_next_hops: u32,
    #[serde(default = "DsdvConfig::default_settling")]
    pub initial_settling_s: f64,
    #[serde(default = "DsdvConfig::default_weight")]
    pub settling_weight: f64,
    #[serde(default = "DsdvConfig::default_gap")]
    pub min_trigger_gap_s: f64,
    /// Default: 3 update intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_timeout_s: Option<f64>,
    #[serde(default = "DsdvConfig::default_metric")]
    pub metric: String,
    /// What a triggered update carries: `"full"` (the whole table) or `"incremental"` (the
    /// routes changed since the last periodic dump; `net::dsdv`). Left out of the written
    /// scenario at its default.
    #[serde(
        default = "DsdvConfig::default_updates",
        skip_serializing_if = "DsdvConfig::is_full"
    )]
    pub triggered_updates: String,
}

impl DsdvConfig {
    fn default_interval() -> f64 {
        15.0
    }
    fn default_k() -> u32 {
        1
    }
    fn default_settling() -> f64 {
        6.0
    }
    fn default_weight() -> f64 {
        0.875
    }
    fn default_gap() -> f64 {
        1.0
    }
    fn default_metric() -> String {
        "etx".into()
    }
    fn default_updates() -> String {
        "full".into()
    }
    fn is_full(s: &str) -> bool {
        s == "full"
    }
}

/// ETX estimator settings (De Couto et al. 2003 defaults; see `net::etx`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtxConfig {
    #[serde(default = "EtxConfig::default_period")]
    pub probe_period_s: f64,
    #[serde(default = "EtxConfig::default_window")]
    pub window_s: f64,
    #[serde(default = "EtxConfig::default_alpha")]
    pub alpha: f64,
    #[serde(default = "EtxConfig::default_jitter")]
    pub jitter: f64,
}

impl EtxConfig {
    fn default_period() -> f64 {
        1.0
    }
    fn default_window() -> f64 {
        10.0
    }
    fn default_alpha() -> f64 {
        0.5
    }
    fn default_jitter() -> f64 {
        0.1
    }
}

impl NetConfig {
    fn default_routing() -> String {
        "static".into()
    }
    fn default_ttl() -> u32 {
        64
    }
}

impl NetConfig {
    /// Checks the routing protocol's name and the TTL.
    pub(super) fn validate_routing(&self) -> Result<(), XlError> {
        if !["static", "dsdv", "olsr"].contains(&self.routing.as_str()) {
            return Err(bad(
                "net.routing",
                format!(
                    "unknown routing \"{}\"; allowed: \"static\", \"dsdv\", \"olsr\"",
                    self.routing
                ),
            ));
        }
        if self.ttl == 0 || self.ttl > 255 {
            return Err(bad(
                "net.ttl",
                format!("must be 1..=255, found {}", self.ttl),
            ));
        }
        Ok(())
    }

    /// Checks queueing and the routing protocols' settings, and fills in the tables the routing
    /// needs (DSDV, OLSR, ETX). `n` is the topology's node count (OLSR's limit).
    pub(super) fn validate_protocols(&mut self, n: u32) -> Result<(), XlError> {
        match self.queueing.as_deref() {
            None | Some("fifo") => {
                if self.dest_queue_packets.is_some() {
                    return Err(bad(
                        "net.dest_queue_packets",
                        "only used with queueing = \"per_destination\"",
                    ));
                }
            }
            Some("per_destination") => {
                let c = *self.dest_queue_packets.get_or_insert(3);
                if c == 0 || c > 65535 {
                    return Err(bad(
                        "net.dest_queue_packets",
                        format!("must be 1..=65535, found {c}"),
                    ));
                }
            }
            Some(other) => {
                return Err(bad(
                    "net.queueing",
                    format!("unknown queueing \"{other}\"; allowed: \"fifo\", \"per_destination\""),
                ))
            }
        }
        let routing = self.routing.clone();
        if routing == "dsdv" {
            let d = self.dsdv.get_or_insert_with(DsdvConfig::default);
            if d.route_timeout_s.is_none() {
                d.route_timeout_s = Some(3.0 * d.update_interval_s);
            }
            self.etx.get_or_insert_with(EtxConfig::default);
        } else if self.dsdv.is_some() {
            return Err(bad(
                "net.dsdv",
                format!("only used with routing = \"dsdv\" (routing is \"{routing}\")"),
            ));
        }
        if routing == "olsr" {
            // Every OLSR node keeps dense tables over all destinations for Dijkstra (about 41
            // bytes each): 41·n² bytes in all, 1 GB at 5000 nodes, 410 GB at 100000.
            if n > MAX_OLSR_NODES {
                return Err(bad(
                    "net.routing",
                    format!(
                        "\"olsr\" supports at most {MAX_OLSR_NODES} nodes (each keeps tables \
                         over every destination), the topology has {n}"
                    ),
                ));
            }
            self.olsr.get_or_insert_with(OlsrConfig::default);
            self.etx.get_or_insert_with(EtxConfig::default);
        } else if self.olsr.is_some() {
            return Err(bad(
                "net.olsr",
                format!("only used with routing = \"olsr\" (routing is \"{routing}\")"),
            ));
        }
        if let Some(o) = &self.olsr {
            at_least_1us("net.olsr.tc_interval_s", o.tc_interval_s)?;
            positive("net.olsr.neighb_hold_s", o.neighb_hold_s)?;
            if !(o.max_jitter_s.is_finite() && o.max_jitter_s >= 0.0) {
                return Err(bad(
                    "net.olsr.max_jitter_s",
                    format!("must be >= 0, found {}", o.max_jitter_s),
                ));
            }
        }
        if let Some(d) = &self.dsdv {
            at_least_1us("net.dsdv.update_interval_s", d.update_interval_s)?;
            if d.k_next_hops == 0 || d.k_next_hops > 16 {
                return Err(bad(
                    "net.dsdv.k_next_hops",
                    format!("must be 1..=16, found {}", d.k_next_hops),
                ));
            }
            positive("net.dsdv.initial_settling_s", d.initial_settling_s)?;
            if !(d.settling_weight.is_finite() && (0.0..1.0).contains(&d.settling_weight)) {
                return Err(bad(
                    "net.dsdv.settling_weight",
                    format!("must be in [0, 1), found {}", d.settling_weight),
                ));
            }
            positive("net.dsdv.min_trigger_gap_s", d.min_trigger_gap_s)?;
            positive("net.dsdv.route_timeout_s", d.route_timeout_s.unwrap_or(1.0))?;
            if !["full", "incremental"].contains(&d.triggered_updates.as_str()) {
                return Err(bad(
                    "net.dsdv.triggered_updates",
                    format!(
                        "unknown kind \"{}\"; allowed: \"full\", \"incremental\"",
                        d.triggered_updates
                    ),
                ));
            }
            if !["etx", "hop_count"].contains(&d.metric.as_str()) {
                return Err(bad(
                    "net.dsdv.metric",
                    format!(
                        "unknown metric \"{}\"; allowed: \"etx\", \"hop_count\"",
                        d.metric
                    ),
                ));
            }
        }
        if let Some(e) = &self.etx {
            at_least_1us("net.etx.probe_period_s", e.probe_period_s)?;
            if !(e.window_s.is_finite() && e.window_s >= e.probe_period_s) {
                return Err(bad(
                    "net.etx.window_s",
                    format!(
                        "must be at least probe_period_s ({}), found {}",
                        e.probe_period_s, e.window_s
                    ),
                ));
            }
            if !(e.alpha.is_finite() && (0.0..1.0).contains(&e.alpha)) {
                return Err(bad(
                    "net.etx.alpha",
                    format!("must be in [0, 1), found {}", e.alpha),
                ));
            }
            if !(e.jitter.is_finite() && (0.0..=0.5).contains(&e.jitter)) {
                return Err(bad(
                    "net.etx.jitter",
                    format!("must be in [0, 0.5], found {}", e.jitter),
                ));
            }
        }
        Ok(())
    }
}

/// The most nodes `net.routing = "olsr"` runs on (its per-node tables grow with the network).
const MAX_OLSR_NODES: u32 = 5000;
