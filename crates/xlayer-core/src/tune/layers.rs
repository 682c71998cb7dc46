//! The tuning layers ECLAIR adds on top of the protocol layers' own parameters (which each layer
//! declares in its `tuning.rs`): the user tuning layer (UTL: application priorities x_i,
//! cross-layer shutdown) and the application tuning layer (ATL: a source's rate, bytes
//! received). Declared once in [`PARAMS`]; the node assembly (`crate::world`, through
//! [`super::Host`]) reads and sets them.
//!
//! Setting `user.priority.<flow>` publishes `user.priority` (the event RWC reacts to), setting
//! `app.rate_bps.<flow>` publishes `app.rate`, and setting `user.shutdown` publishes
//! `user.shutdown` and unregisters every optimizer of the node (ECLAIR's cross-layer shutdown).

use crate::sim::param::{flow_param, node_param, EventSpec, ParamSpec, TuneEventKind};

pub const PARAMS: &[ParamSpec] = &[
    flow_param(
        "user.priority",
        "user",
        "the user's priority x_i of the flow's application (at either endpoint; default 1; setting it publishes user.priority)",
        "weight",
        1e-6,
        1e6,
        false,
    ),
    node_param(
        "user.shutdown",
        "user",
        "cross-layer shutdown: setting 1 unregisters every optimizer of the node (publishes user.shutdown); reads 1 once shut down",
        "flag",
        0.0,
        1.0,
        false,
    ),
    flow_param(
        "app.rate_bps",
        "application",
        "sending rate of a constant-bit-rate source (at the flow's source; UDP CBR flows; publishes app.rate)",
        "bit/s",
        1.0,
        1e12,
        false,
    ),
    flow_param(
        "app.received_bytes",
        "application",
        "application bytes the flow's receiver got so far (at the flow's destination)",
        "bytes",
        0.0,
        f64::MAX,
        true,
    ),
];

/// The events ECLAIR's user and application layers publish.
pub const EVENTS: &[EventSpec] = &[
    EventSpec {
        kind: TuneEventKind::UserPriority,
        layer: "user",
        doc: "the user changed the flow's application priority (user.priority.<flow>): x_i",
        unit: "weight",
    },
    EventSpec {
        kind: TuneEventKind::UserShutdown,
        layer: "user",
        doc: "cross-layer shutdown of the node (user.shutdown); its optimizers are unregistered after this delivery",
        unit: "flag",
    },
    EventSpec {
        kind: TuneEventKind::AppRate,
        layer: "application",
        doc: "the flow's source rate was changed (app.rate_bps.<flow>): the new rate",
        unit: "bit/s",
    },
];
