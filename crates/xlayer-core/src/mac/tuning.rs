//! The MAC's tuning layer (ECLAIR): the parameters it lets optimizers read and set — each
//! priority level's contention window and AIFSN, the retry limits, the interface queues' length
//! and capacity, the data rate of unicast frames — and its counters, declared once in
//! [`PARAMS`] and reached through [`get`] and [`set`] only.

use super::Mac;
use crate::error::XlError;
use crate::mac::EdcaLevel;
use crate::phy::fec::CodeRate;
use crate::phy::radio::{rate_set, Standard};
use crate::sim::param::{node_param, p, EventSpec, ParamSpec, TuneEventKind};

pub const PARAMS: &[ParamSpec] = &[
    p(
        "mac.cw_min",
        "mac",
        "minimum contention window of a priority level (slots)",
        "slots",
        1.0,
        65535.0,
        true,
        false,
    ),
    p(
        "mac.cw_max",
        "mac",
        "maximum contention window of a priority level (slots)",
        "slots",
        1.0,
        65535.0,
        true,
        false,
    ),
    p(
        "mac.aifsn",
        "mac",
        "arbitration inter-frame space number of a priority level",
        "slots",
        1.0,
        15.0,
        true,
        false,
    ),
    p(
        "mac.queue_len",
        "mac",
        "packets waiting in a priority level's queue",
        "packets",
        0.0,
        f64::MAX,
        true,
        true,
    ),
    p(
        "mac.short_retry_limit",
        "mac",
        "transmission attempts for frames without RTS",
        "attempts",
        1.0,
        255.0,
        false,
        false,
    ),
    p(
        "mac.long_retry_limit",
        "mac",
        "transmission attempts for frames after RTS",
        "attempts",
        1.0,
        255.0,
        false,
        false,
    ),
    p(
        "net.queue_capacity",
        "net",
        "drop-tail capacity of each interface (MAC level) queue",
        "packets",
        1.0,
        1_000_000.0,
        false,
        false,
    ),
    p(
        "phy.data_rate_mbps",
        "phy",
        "data rate of unicast frames (a rate of the standard)",
        "Mbit/s",
        1.0,
        54.0,
        false,
        false,
    ),
    node_param(
        "mac.retries",
        "mac",
        "MAC retransmission attempts so far",
        "attempts",
        0.0,
        f64::MAX,
        true,
    ),
    node_param(
        "mac.drops_retry_limit",
        "mac",
        "frames dropped at the retry limit so far",
        "packets",
        0.0,
        f64::MAX,
        true,
    ),
    p(
        "mac.flow_retry_limit",
        "mac",
        "link-layer attempts at most for a flow's frames sent by this node (index: flow id; reads the short retry limit while the flow has none of its own)",
        "attempts",
        1.0,
        255.0,
        true,
        false,
    )
    .indexed_by("flow"),
    p(
        "mac.flow_code_rate",
        "mac",
        "FEC code rate of a flow's data frames sent by this node, 802.11a BPSK only: 1/3, 1/2, 2/3 or 1 (uncoded) at 4, 6, 8 or 12 Mbit/s (index: flow id; reads the code of the MAC's data rate while the flow has none of its own, 1 for 802.11b)",
        "rate",
        1.0 / 3.0,
        1.0,
        true,
        false,
    )
    .indexed_by("flow"),
    node_param(
        "mac.queue_bytes",
        "mac",
        "bytes each level's queue holds at most besides its packet capacity (0: no byte limit)",
        "bytes",
        0.0,
        1e9,
        false,
    ),
    node_param(
        "mac.send_rate_bps",
        "mac",
        "sending rate of acknowledged frames: smoothed bits over smoothed service time (head of queue to ACK), EWMA gain 1/8 each; 0 before the first",
        "bit/s",
        0.0,
        f64::MAX,
        true,
    ),
    node_param(
        "mac.drops_queue",
        "mac",
        "packets refused by a full interface queue so far",
        "packets",
        0.0,
        f64::MAX,
        true,
    ),
];

/// The events the MAC publishes.
pub const EVENTS: &[EventSpec] = &[
    EventSpec {
        kind: TuneEventKind::MacTxOutcome,
        layer: "mac",
        doc: "a MAC exchange finished: 1 = acknowledged, 0 = dropped at the retry limit",
        unit: "flag",
    },
    EventSpec {
        kind: TuneEventKind::MacQueueLen,
        layer: "mac",
        doc: "a priority level's queue changed by one packet: its new length (queue change)",
        unit: "packets",
    },
    EventSpec {
        kind: TuneEventKind::MacUnderflow,
        layer: "mac",
        doc: "a frame was delivered and every interface queue is empty: the link could send more (value: the frame's level)",
        unit: "level",
    },
];

/// The code rate of the MAC's data rate: 802.11a's mode for it (802.11-2016 Table 17-4), or 1
/// for 802.11b, whose DSSS/CCK modes have no convolutional code.
fn standard_code_rate(mac: &Mac) -> f64 {
    match mac.params.timing.standard {
        Standard::Dot11a => match mac.params.data_rate_mbps as u32 {
            6 | 12 | 24 => 0.5,
            48 => 2.0 / 3.0,
            _ => 0.75,
        },
        _ => 1.0,
    }
}

/// Whether `spec` is one of this layer's.
pub fn owns(spec: &ParamSpec) -> bool {
    PARAMS.iter().any(|p| p.name == spec.name)
}

/// The level a per-level parameter names, checked against the MAC's levels.
fn level_of(mac: &Mac, level: Option<usize>, name: &str) -> Result<usize, XlError> {
    let l = level.unwrap_or(0);
    if l >= mac.level_count() {
        return Err(XlError::Tuning(format!(
            "\"{name}\": the MAC has {} level(s)",
            mac.level_count()
        )));
    }
    Ok(l)
}

/// Reads `spec` (`level`: its level suffix) of `mac`; `name` is the full name, for errors.
pub fn get(mac: &Mac, spec: &ParamSpec, level: Option<usize>, name: &str) -> Result<f64, XlError> {
    let lv = |l: Option<usize>| -> Result<EdcaLevel, XlError> {
        Ok(mac.level_params(level_of(mac, l, name)?))
    };
    Ok(match spec.name {
        "mac.cw_min" => lv(level)?.cw_min as f64,
        "mac.cw_max" => lv(level)?.cw_max as f64,
        "mac.aifsn" => lv(level)?.aifsn as f64,
        "mac.queue_len" => {
            lv(level)?;
            mac.queue_len(level.unwrap_or(0)) as f64
        }
        "mac.short_retry_limit" => mac.params.short_retry_limit as f64,
        "mac.long_retry_limit" => mac.params.long_retry_limit as f64,
        "net.queue_capacity" => mac.params.queue_capacity as f64,
        "phy.data_rate_mbps" => mac.params.data_rate_mbps,
        "mac.retries" => mac.stats.retries as f64,
        "mac.drops_retry_limit" => mac.stats.drops_retry_limit as f64,
        "mac.drops_queue" => mac.stats.drops_queue as f64,
        "mac.send_rate_bps" => mac.send_rate.bps,
        "mac.flow_retry_limit" => mac
            .flow_retry_limit(level.unwrap_or(0) as u32)
            .unwrap_or(mac.params.short_retry_limit) as f64,
        "mac.queue_bytes" => mac.params.queue_bytes.unwrap_or(0) as f64,
        "mac.flow_code_rate" => match mac.flow_code(level.unwrap_or(0) as u32) {
            Some(c) => c.value(),
            None => standard_code_rate(mac),
        },
        _ => unreachable!("every parameter of mac::tuning::PARAMS is handled"),
    })
}

/// Sets `spec` of `mac` (of a radio of `standard`) to `value`, already checked against the
/// declared range.
pub fn set(
    mac: &mut Mac,
    standard: Standard,
    spec: &ParamSpec,
    level: Option<usize>,
    name: &str,
    value: f64,
) -> Result<(), XlError> {
    let int = value.round() as u32;
    match spec.name {
        "mac.cw_min" | "mac.cw_max" | "mac.aifsn" => {
            let l = level_of(mac, level, name)?;
            let mut p = mac.level_params(l);
            match spec.name {
                "mac.cw_min" => p.cw_min = int,
                "mac.cw_max" => p.cw_max = int,
                _ => p.aifsn = int,
            }
            if p.cw_min > p.cw_max {
                return Err(XlError::Tuning(format!(
                    "\"{name}\" = {value} would make cw_min ({}) exceed cw_max ({})",
                    p.cw_min, p.cw_max
                )));
            }
            mac.set_level_params(l, p);
        }
        "mac.short_retry_limit" => mac.params.short_retry_limit = int,
        "mac.long_retry_limit" => mac.params.long_retry_limit = int,
        "net.queue_capacity" => mac.params.queue_capacity = int,
        "mac.flow_retry_limit" => mac.set_flow_retry_limit(level.unwrap_or(0) as u32, int),
        "mac.flow_code_rate" => {
            if standard != Standard::Dot11a {
                return Err(XlError::Tuning(format!(
                    "\"{name}\": per-flow code rates are 802.11a BPSK OFDM; this radio is {standard:?}"
                )));
            }
            let Some(code) = CodeRate::per_flow_from_value(value) else {
                return Err(XlError::Tuning(format!(
                    "\"{name}\" = {value}: allowed code rates are 1/3, 1/2, 2/3 and 1 (uncoded)"
                )));
            };
            mac.set_flow_code(level.unwrap_or(0) as u32, code);
        }
        "mac.queue_bytes" => {
            if int != 0 && int < 2304 {
                return Err(XlError::Tuning(format!(
                    "\"{name}\" = {value}: at least 2304 bytes (one 802.11 MSDU), or 0 for no byte limit"
                )));
            }
            mac.params.queue_bytes = (int != 0).then_some(int);
        }
        "phy.data_rate_mbps" => {
            let rates = rate_set(standard);
            if !rates.contains(&value) {
                return Err(XlError::Tuning(format!(
                    "\"{name}\": {value} is not a rate of this standard; allowed: {rates:?}"
                )));
            }
            mac.params.data_rate_mbps = value;
        }
        _ => unreachable!("every settable parameter of mac::tuning::PARAMS is handled"),
    }
    Ok(())
}
