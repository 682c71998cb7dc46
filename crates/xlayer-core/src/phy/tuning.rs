//! The PHY's tuning layer (ECLAIR): the transmit power offset it lets optimizers set and its
//! reception counter, declared once in [`PARAMS`] and reached through [`get`] and [`set`] only.
//! (The data rate is the MAC's choice: `crate::mac::tuning`.)

use super::Phy;
use crate::sim::param::{node_param, p, EventSpec, ParamSpec, TuneEventKind};

pub const PARAMS: &[ParamSpec] = &[
    p(
        "phy.tx_power_offset_db",
        "phy",
        "transmit power relative to the scenario's tx_power_dbm (at most 0)",
        "dB",
        -60.0,
        0.0,
        false,
        false,
    ),
    node_param(
        "phy.injected_noise_mw",
        "phy",
        "injected noise power at the antenna now (the scenario's [[noise]] sources that are on)",
        "mW",
        0.0,
        f64::MAX,
        true,
    ),
    node_param(
        "phy.rx_errors",
        "phy",
        "frames received with errors so far",
        "frames",
        0.0,
        f64::MAX,
        true,
    ),
];

/// The events the PHY publishes.
pub const EVENTS: &[EventSpec] = &[EventSpec {
    kind: TuneEventKind::PhyNoise,
    layer: "phy",
    doc: "injected noise switched on or off at the node: the noise power now",
    unit: "mW",
}];

/// Whether `spec` is one of this layer's.
pub fn owns(spec: &ParamSpec) -> bool {
    PARAMS.iter().any(|p| p.name == spec.name)
}

pub fn get(phy: &Phy, spec: &ParamSpec) -> f64 {
    match spec.name {
        "phy.tx_power_offset_db" => phy.tx_power_offset_db,
        "phy.rx_errors" => phy.rx_errors as f64,
        "phy.injected_noise_mw" => phy.injected_noise_mw(),
        _ => unreachable!("every parameter of phy::tuning::PARAMS is handled"),
    }
}

/// Sets `spec` of `phy` to `value`, already checked against the declared range.
pub fn set(phy: &mut Phy, spec: &ParamSpec, value: f64) {
    match spec.name {
        "phy.tx_power_offset_db" => phy.set_tx_power_offset_db(value),
        _ => unreachable!("every settable parameter of phy::tuning::PARAMS is handled"),
    }
}
