//! ECLAIR's evaluation metrics as numbers in the results (the document's "Metrics for CLF
//! architecture evaluation": time and space overhead, user-kernel crossings, data-path delay),
//! and the core's report: the summary's `eclair_*` keys and the `core` table.
//!
//! - Time overhead: the wall time the optimizing subsystem spends (deliveries off the data
//!   path with the optimizers' callbacks, their timers, per-packet hooks), per simulation
//!   event (`eclair_time_per_event_ns`) and per packet delivered to a flow's destination
//!   (`eclair_time_per_packet_ns`); wall-clock, so left out of the result hashes.
//! - Space overhead: bytes the subsystem holds (`eclair_memory_bytes`, the same as
//!   `optimizer_memory_bytes`), of which the core's item table (`eclair_core_memory_bytes`).
//! - Crossings between the core and Python optimizers (`eclair_crossings`): each call of a
//!   Python callback and each call the callback makes into the core through its context; the
//!   analogue of ECLAIR's user-kernel crossings. `eclair_python_invocations` is the first part.
//! - Data-path delay (`eclair_data_path_delay_s`): the mean processing latency the per-packet
//!   hooks' optimizers add to a packet that went through a hook (`eclair_hooked_packets`); off
//!   the data path (ECLAIR) it is 0.

use super::core::Core;
use super::optimizer::OptimizerHost;
use crate::results::{Row, Value};

/// Summary keys whose values are wall-clock measurements or depend on them (the measured costs
/// choose the core), hence differ from run to run; `scripts/result_hashes.py` leaves them out.
pub const WALL_CLOCK_KEYS: &[&str] = &[
    "eclair_wall_s",
    "eclair_time_per_event_ns",
    "eclair_time_per_packet_ns",
    "eclair_cost_read_layer_ns",
    "eclair_cost_read_core_ns",
    "eclair_cost_write_core_ns",
    "eclair_core_items",
    "eclair_core_hits",
    "eclair_core_gain_ns_per_s",
];

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for x in xs.filter(|x| x.is_finite()) {
        s += x;
        n += 1;
    }
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// The `eclair_*` summary keys; `events` the simulation's events, `packets` the packets the
/// flows' destinations received. A cost nothing measured, or a time per nothing, is 0 (not
/// NaN, so that summaries compare equal).
pub fn summary(host: &OptimizerHost, events: u64, packets: u64) -> Row {
    use Value::{Float, Int};
    let core: &Core = &host.core;
    let wall = host.subsystem_wall.as_secs_f64();
    let per = |n: u64| {
        if n == 0 {
            0.0
        } else {
            wall * 1e9 / n as f64
        }
    };
    let memory = if host.slots.is_empty() {
        0
    } else {
        host.memory_bytes()
    };
    let costs: Vec<(f64, f64, f64)> = core.items.iter().map(|i| i.measured()).collect();
    vec![
        ("eclair_wall_s", Float(wall)),
        ("eclair_time_per_event_ns", Float(per(events))),
        ("eclair_time_per_packet_ns", Float(per(packets))),
        ("eclair_memory_bytes", Int(memory as i64)),
        (
            "eclair_core_memory_bytes",
            Int(if host.slots.is_empty() {
                0
            } else {
                core.memory_bytes() as i64
            }),
        ),
        ("eclair_crossings", Int(host.crossings as i64)),
        (
            "eclair_python_invocations",
            Int(host.python_invocations as i64),
        ),
        ("eclair_hooked_packets", Int(host.hooked_packets as i64)),
        (
            "eclair_data_path_delay_s",
            Float(if host.hooked_packets == 0 {
                0.0
            } else {
                host.hook_delay.as_secs_f64() / host.hooked_packets as f64
            }),
        ),
        ("eclair_core_items", Int(core.core_items() as i64)),
        ("eclair_items", Int(core.items.len() as i64)),
        (
            "eclair_reads",
            Int(core.items.iter().map(|i| i.reads as i64).sum()),
        ),
        (
            "eclair_writes",
            Int(core.items.iter().map(|i| i.writes as i64).sum()),
        ),
        (
            "eclair_core_hits",
            Int(core.items.iter().map(|i| i.hits as i64).sum()),
        ),
        ("eclair_core_mismatches", Int(core.mismatches as i64)),
        ("eclair_core_selections", Int(core.selections as i64)),
        ("eclair_core_gain_ns_per_s", Float(core.gain_ns_per_s)),
        (
            "eclair_cost_read_layer_ns",
            Float(mean(costs.iter().map(|c| c.0))),
        ),
        (
            "eclair_cost_read_core_ns",
            Float(mean(std::iter::once(core.cached_cost()))),
        ),
        (
            "eclair_cost_write_core_ns",
            Float(mean(costs.iter().map(|c| c.2))),
        ),
    ]
}

/// Rows of the `core` result table: every item an optimizer read or a tuning layer wrote, its
/// counts, frequencies and score at the last selection, and whether it is in the core.
pub fn core_rows(host: &OptimizerHost) -> Vec<Row> {
    use Value::{Float, Int, Str};
    host.core
        .items
        .iter()
        .map(|i| {
            let (c_r, _, c_w) = i.measured();
            vec![
                ("node", Int(i.node as i64)),
                ("item", Str(i.name.to_string())),
                ("layer", Str(i.spec.layer.to_string())),
                ("cacheable", Int(i.cacheable as i64)),
                ("reads", Int(i.reads as i64)),
                ("writes", Int(i.writes as i64)),
                ("hits", Int(i.hits as i64)),
                ("reads_per_s", Float(i.reads_per_s)),
                ("writes_per_s", Float(i.writes_per_s)),
                ("cost_read_layer_ns", Float(c_r)),
                ("cost_write_core_ns", Float(c_w)),
                ("score", Float(i.score)),
                ("in_core", Int(i.in_core as i64)),
            ]
        })
        .collect()
}
