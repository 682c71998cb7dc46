//! The `[[wired]]` section: point-to-point wired links ([`WiredSpec`]) between two nodes, with
//! their validation — existing, different nodes, each pair once, a positive rate, a delay, a
//! drop-tail queue and loss probabilities. The node count is passed in. The model is
//! `crate::mac::wired`.

use serde::{Deserialize, Serialize};

use super::check::{bad, node_exists, positive, probability};
use crate::error::XlError;

fn default_queue() -> u32 {
    50
}

/// A full-duplex wired link. See `docs/scenario.md` ("`[[wired]]`").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WiredSpec {
    pub a: u32,
    pub b: u32,
    /// Each direction's rate.
    pub rate_bps: f64,
    /// One-way propagation delay.
    #[serde(default)]
    pub delay_s: f64,
    /// Each direction's drop-tail queue, in packets (ns-2's DropTail default, 50).
    #[serde(default = "default_queue")]
    pub queue_packets: u32,
    /// ... and, if given, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u32>,
    /// Loss probability of each packet, both directions.
    #[serde(default)]
    pub loss: f64,
    /// Loss probability from `b` to `a`, if it differs from `loss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_loss: Option<f64>,
}

/// Checks `[[wired]]` against the topology's `n` nodes.
pub(super) fn validate_wired(wired: &[WiredSpec], n: u32) -> Result<(), XlError> {
    let mut pairs = Vec::new();
    for (i, w) in wired.iter().enumerate() {
        let p = format!("wired[{i}]");
        node_exists(&format!("{p}.a"), w.a, n)?;
        node_exists(&format!("{p}.b"), w.b, n)?;
        if w.a == w.b {
            return Err(bad(
                format!("{p}.b"),
                "a wired link joins two different nodes",
            ));
        }
        let pair = (w.a.min(w.b), w.a.max(w.b));
        if let Some(j) = pairs.iter().position(|&q| q == pair) {
            return Err(bad(
                format!("{p}.b"),
                format!("nodes {} and {} are already wired by wired[{j}]", w.a, w.b),
            ));
        }
        pairs.push(pair);
        positive(&format!("{p}.rate_bps"), w.rate_bps)?;
        if !(w.delay_s.is_finite() && (0.0..=100.0).contains(&w.delay_s)) {
            return Err(bad(
                format!("{p}.delay_s"),
                format!("must be within 0..=100 s, found {}", w.delay_s),
            ));
        }
        if w.queue_packets == 0 || w.queue_packets > 1_000_000 {
            return Err(bad(
                format!("{p}.queue_packets"),
                format!("must be 1..=1000000, found {}", w.queue_packets),
            ));
        }
        if let Some(b) = w.queue_bytes.filter(|b| !(64..=1_000_000_000).contains(b)) {
            return Err(bad(
                format!("{p}.queue_bytes"),
                format!("must be 64..=1000000000 bytes, found {b}"),
            ));
        }
        probability(&format!("{p}.loss"), w.loss)?;
        if let Some(l) = w.reverse_loss {
            probability(&format!("{p}.reverse_loss"), l)?;
        }
    }
    Ok(())
}
