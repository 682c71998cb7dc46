//! The tuning layers ECLAIR adds on top of the protocol layers' own parameters: the user tuning
//! layer (UTL: application priorities x_i, cross-layer shutdown), the application tuning layer
//! (ATL: a source's rate, bytes received) and read-only counters of the transport, network, MAC
//! and PHY layers. Declared once in [`PARAMS`]; `super::get`/`super::set` hand every parameter
//! declared here to [`get`]/[`set`].
//!
//! Setting `user.priority.<flow>` publishes `user.priority` (the event RWC reacts to), setting
//! `app.rate_bps.<flow>` publishes `app.rate`, and setting `user.shutdown` publishes
//! `user.shutdown` and unregisters every optimizer of the node (ECLAIR's cross-layer shutdown).

use super::{flow_param, node_param, ParamSpec, TuneEventKind};
use crate::app::{FlowTransport, SourceKind};
use crate::error::XlError;
use crate::world::World;

/// Where a per-flow parameter lives: at the flow's source, its destination, or either.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Source,
    Destination,
    Either,
}

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
    flow_param(
        "tcp.retransmits",
        "transport",
        "segments the flow's TCP sender retransmitted (at the flow's source)",
        "segments",
        0.0,
        f64::MAX,
        true,
    ),
    node_param(
        "net.forwarded",
        "net",
        "packets the node forwarded for others",
        "packets",
        0.0,
        f64::MAX,
        true,
    ),
    node_param(
        "net.delivered",
        "net",
        "packets delivered to the node as their destination",
        "packets",
        0.0,
        f64::MAX,
        true,
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
    node_param(
        "mac.drops_queue",
        "mac",
        "packets refused by a full interface queue so far",
        "packets",
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

/// Whether `spec` is declared in this module.
pub(crate) fn owns(spec: &ParamSpec) -> bool {
    PARAMS.iter().any(|p| p.name == spec.name)
}

fn check_node(w: &World, node: u32) -> Result<(), XlError> {
    if (node as usize) < w.nodes.len() {
        Ok(())
    } else {
        Err(XlError::Tuning(format!(
            "node {node} does not exist (0..{})",
            w.nodes.len().saturating_sub(1)
        )))
    }
}

/// Checks that `flow` exists and that `node` is the endpoint the parameter lives at.
pub(super) fn check_flow(
    w: &World,
    node: u32,
    flow: Option<usize>,
    name: &str,
    end: End,
) -> Result<usize, XlError> {
    let f = flow.unwrap_or(usize::MAX);
    let Some(fl) = w.flows.get(f) else {
        return Err(XlError::Tuning(format!(
            "\"{name}\": flow {f} does not exist (0..{})",
            w.flows.len().saturating_sub(1)
        )));
    };
    let ok = match end {
        End::Source => fl.src == node,
        End::Destination => fl.dst == node,
        End::Either => fl.src == node || fl.dst == node,
    };
    if !ok {
        let which = match end {
            End::Source => format!("source is node {}", fl.src),
            End::Destination => format!("destination is node {}", fl.dst),
            End::Either => format!("endpoints are nodes {} and {}", fl.src, fl.dst),
        };
        return Err(XlError::Tuning(format!(
            "\"{name}\": flow {f}'s {which}, not node {node}"
        )));
    }
    Ok(f)
}

pub(crate) fn get(
    w: &mut World,
    node: u32,
    spec: &ParamSpec,
    flow: Option<usize>,
    name: &str,
) -> Result<f64, XlError> {
    check_node(w, node)?;
    let n = &w.nodes[node as usize];
    Ok(match spec.name {
        "user.priority" => {
            let f = check_flow(w, node, flow, name, End::Either)?;
            w.optimizers.user_priority(f)
        }
        "user.shutdown" => {
            if w.optimizers.is_shut_down(node) {
                1.0
            } else {
                0.0
            }
        }
        "app.rate_bps" => {
            let f = check_flow(w, node, flow, name, End::Source)?;
            let fl = &w.flows[f];
            match (fl.transport, fl.kind) {
                (FlowTransport::Udp, SourceKind::Cbr { interval }) => {
                    fl.payload_bytes as f64 * 8.0 / interval.as_secs_f64()
                }
                _ => {
                    return Err(XlError::Tuning(format!(
                        "\"{name}\": flow {f} is not a constant-bit-rate UDP flow"
                    )))
                }
            }
        }
        "app.received_bytes" => {
            let f = check_flow(w, node, flow, name, End::Destination)?;
            match w.flows[f].transport {
                FlowTransport::Tcp(c) => w.tcp[c as usize].receiver.delivered_bytes as f64,
                _ => w.flow_stats[f].rx_payload_bytes as f64,
            }
        }
        "tcp.retransmits" => {
            let f = check_flow(w, node, flow, name, End::Source)?;
            match w.flows[f].transport {
                FlowTransport::Tcp(c) => w.tcp[c as usize].sender.stats.retransmits as f64,
                _ => {
                    return Err(XlError::Tuning(format!(
                        "\"{name}\": flow {f} is not a TCP flow"
                    )))
                }
            }
        }
        "net.forwarded" => n.net.forwarded as f64,
        "net.delivered" => n.net.delivered as f64,
        "mac.retries" => n.mac.stats.retries as f64,
        "mac.drops_retry_limit" => n.mac.stats.drops_retry_limit as f64,
        "mac.drops_queue" => n.mac.stats.drops_queue as f64,
        "phy.rx_errors" => n.phy.rx_errors as f64,
        _ => unreachable!("every parameter of layers::PARAMS is handled"),
    })
}

pub(crate) fn set(
    w: &mut World,
    node: u32,
    spec: &ParamSpec,
    flow: Option<usize>,
    name: &str,
    value: f64,
) -> Result<(), XlError> {
    check_node(w, node)?;
    let now = w.now();
    match spec.name {
        "user.priority" => {
            let f = check_flow(w, node, flow, name, End::Either)?;
            w.optimizers.set_user_priority(f, value);
            if w.events.wants(TuneEventKind::UserPriority) {
                w.events
                    .publish_flow(now, node, f as u32, TuneEventKind::UserPriority, value);
            }
        }
        "user.shutdown" => {
            if value >= 0.5 {
                if w.events.wants(TuneEventKind::UserShutdown) {
                    w.events
                        .publish(now, node, TuneEventKind::UserShutdown, 1.0);
                }
                super::optimizer::request_shutdown(w, node);
            }
        }
        "app.rate_bps" => {
            let f = check_flow(w, node, flow, name, End::Source)?;
            let fl = &mut w.flows[f];
            let payload = fl.payload_bytes;
            match (fl.transport, &mut fl.kind) {
                (FlowTransport::Udp, SourceKind::Cbr { interval }) => {
                    *interval = crate::app::cbr_interval(payload, value);
                }
                _ => {
                    return Err(XlError::Tuning(format!(
                        "\"{name}\": flow {f} is not a constant-bit-rate UDP flow"
                    )))
                }
            }
            if w.events.wants(TuneEventKind::AppRate) {
                w.events
                    .publish_flow(now, node, f as u32, TuneEventKind::AppRate, value);
            }
        }
        _ => unreachable!("read-only parameters are refused before"),
    }
    Ok(())
}

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
