//! The radio's vocabulary, as scenarios name it: the standard (rate set, timing, defaults), the
//! preamble, the propagation and error model kinds, and fading. The scenario's `[radio]` section
//! (`crate::scenario`) is built from these; the PHY and MAC read them.

use serde::{Deserialize, Serialize};

/// Radio standard: rate set, timing and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Standard {
    #[serde(rename = "802.11b")]
    Dot11b,
    #[serde(rename = "802.11a")]
    Dot11a,
    /// The ns-2 `Phy/WirelessPhy` + `Mac/802_11` radio: 2 Mbps data, 1 Mbps basic, DSSS timing.
    #[serde(rename = "ns2-2mbps")]
    Ns2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preamble {
    Long,
    Short,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropagationKind {
    FreeSpace,
    TwoRayGround,
    LogDistance,
    /// Full power inside `tx_range_m`, nothing beyond (ns-3 `RangePropagationLossModel`).
    Range,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorModelKind {
    /// Bit error rate from SINR per modulation, integrated over the frame's interference chunks.
    Ber,
    /// The frame survives if its SINR never falls below `sinr_threshold_db`.
    Threshold,
}

/// How a signal too weak to be decoded or carrier-sensed on its own (below both the reception
/// and the carrier-sense thresholds) reaches a receiver (`crate::phy`, "Weak interference").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeakInterference {
    /// Without events of its own: the receiver integrates it when its reception's SINR chunks
    /// close, and counts it in carrier sense when the sum of the signals could cross the
    /// threshold.
    #[default]
    Bulk,
    /// Two events per receiver (start and end), as every other signal: the reference the bulk
    /// path is checked against.
    Events,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fading {
    None,
    Rayleigh,
}

/// Data rates each standard offers, in Mbit/s.
pub fn rate_set(std: Standard) -> &'static [f64] {
    match std {
        Standard::Dot11b => &[1.0, 2.0, 5.5, 11.0],
        Standard::Ns2 => &[1.0, 2.0],
        Standard::Dot11a => &[6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0],
    }
}
