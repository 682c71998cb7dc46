//! The tuning layers ECLAIR adds on top of the protocol layers' own parameters (which each layer
//! declares in its `tuning.rs`): the user tuning layer (UTL: application priorities x_i,
//! cross-layer shutdown) and the application tuning layer (ATL: a source's rate, bytes
//! received). Declared once in [`PARAMS`]; the node assembly (`crate::world`, through
//! [`super::Host`]) reads and sets them.
//!
//! Setting `user.priority.<flow>` publishes `user.priority` (the event RWC reacts to), setting
//! `app.rate_bps.<flow>` publishes `app.rate`, and setting `user.shutdown` publishes
//! `user.shutdown` and unregisters every optimizer of the node (ECLAIR's cross-layer shutdown).

use super::TuneEventKind;
use crate::sim::param::{flow_param, node_param, ParamSpec};

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

/// Layer, meaning of the value, and unit of each event kind (for `xlayer tunables`).
pub fn event_info(kind: TuneEventKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        TuneEventKind::MacTxOutcome => (
            "mac",
            "a MAC exchange finished: 1 = acknowledged, 0 = dropped at the retry limit",
            "flag",
        ),
        TuneEventKind::QueueOverflow => (
            "net",
            "a full interface queue refused a packet: the priority level (per-destination queueing: the destination)",
            "level",
        ),
        TuneEventKind::RouteChange => (
            "net",
            "routes changed next hop or reachability (DSDV, OLSR): how many destinations",
            "destinations",
        ),
        TuneEventKind::QueueChange => (
            "net",
            "a per-destination queue grew or shrank: the destination (net.dest_queue_len.<destination>)",
            "node",
        ),
        TuneEventKind::TcpLoss => (
            "transport",
            "the flow's TCP sender detected a loss: 0 = duplicate ACKs/SACK, 1 = timeout",
            "flag",
        ),
        TuneEventKind::TcpRto => (
            "transport",
            "the flow's TCP retransmission timer expired: the backed-off RTO",
            "s",
        ),
        TuneEventKind::TcpWindow => (
            "transport",
            "the flow's TCP congestion window changed: cwnd",
            "segments",
        ),
        TuneEventKind::UserPriority => (
            "user",
            "the user changed the flow's application priority (user.priority.<flow>): x_i",
            "weight",
        ),
        TuneEventKind::UserShutdown => (
            "user",
            "cross-layer shutdown of the node (user.shutdown); its optimizers are unregistered after this delivery",
            "flag",
        ),
        TuneEventKind::TcpSegmentRx => (
            "transport",
            "a TCP data segment reached the flow's receiver: payload bytes (one per packet)",
            "bytes",
        ),
        TuneEventKind::MacQueueLen => (
            "mac",
            "a priority level's queue changed by one packet: its new length (queue change)",
            "packets",
        ),
        TuneEventKind::AppRate => (
            "application",
            "the flow's source rate was changed (app.rate_bps.<flow>): the new rate",
            "bit/s",
        ),
    }
}
