//! The tuning layers of an assembled network (ECLAIR): [`World`] implements
//! [`crate::tune::Host`], reading and setting each parameter the layers declare
//! (`crate::tune::PARAMS`, `crate::tune::layers::PARAMS`) in the layer of the node or flow that
//! owns it, and giving the optimizer host its event bus, timers and the flows.

use super::{Node, World};
use crate::app::{FlowTransport, SourceKind};
use crate::error::XlError;
use crate::mac::EdcaLevel;
use crate::sim::{Event, SimTime};
use crate::tune::optimizer::OptimizerHost;
use crate::tune::{layers, EventBus, Host, ParamSpec, TuneEventKind};

impl Host for World {
    fn now(&self) -> SimTime {
        World::now(self)
    }

    fn node_count(&self) -> usize {
        self.nodes.len()
    }

    fn flows(&self) -> &[crate::app::Flow] {
        &self.flows
    }

    fn tuning(&mut self) -> (&mut OptimizerHost, &mut EventBus) {
        (&mut self.optimizers, &mut self.events)
    }

    fn schedule(&mut self, at: SimTime, event: Event) {
        self.queue.schedule(at, event);
    }

    fn param_get(
        &mut self,
        node: u32,
        spec: &'static ParamSpec,
        index: Option<usize>,
        name: &str,
    ) -> Result<f64, XlError> {
        get_param(self, node, spec, index, name)
    }

    fn param_set(
        &mut self,
        node: u32,
        spec: &'static ParamSpec,
        index: Option<usize>,
        name: &str,
        value: f64,
    ) -> Result<(), XlError> {
        set_param(self, node, spec, index, name, value)
    }

    fn next_hops(&self, node: u32, dst: u32) -> Vec<u32> {
        next_hops(self, node, dst)
    }

    fn etx_links(&self, node: u32) -> Vec<(u32, f64)> {
        etx_links(self, node)
    }

    fn dest_queue_lengths(&self, node: u32) -> Vec<(u32, u32)> {
        dest_queue_lengths(self, node)
    }

    fn overheard_queues(&self, node: u32) -> Vec<(u32, u32, u32, SimTime)> {
        overheard_queues(self, node)
    }
}

fn node_mut(w: &mut World, node: u32) -> Result<&mut Node, XlError> {
    let n = w.nodes.len();
    w.nodes.get_mut(node as usize).ok_or_else(|| {
        XlError::Tuning(format!(
            "node {node} does not exist (0..{})",
            n.saturating_sub(1)
        ))
    })
}

/// The TCP connection of `flow`, checking that `node` runs one of its endpoints.
fn tcp_conn(
    w: &mut World,
    node: u32,
    flow: Option<usize>,
    name: &str,
    at_source: bool,
) -> Result<usize, XlError> {
    let f = check_flow(
        w,
        node,
        flow,
        name,
        if at_source {
            End::Source
        } else {
            End::Destination
        },
    )?;
    let crate::app::FlowTransport::Tcp(c) = w.flows[f].transport else {
        return Err(XlError::Tuning(format!(
            "\"{name}\": flow {f} is not a TCP flow"
        )));
    };
    Ok(c as usize)
}

/// The K best next hops of `node` towards `dst`, best first (one under OLSR and static
/// routing; empty if none).
fn next_hops(w: &World, node: u32, dst: u32) -> Vec<u32> {
    let Some(st) = w.proto.as_ref().and_then(|p| p.nodes.get(node as usize)) else {
        let v = w.routes.next_hop(node, dst);
        return if v == crate::net::routing::UNREACHABLE {
            vec![]
        } else {
            vec![v]
        };
    };
    if let Some(d) = &st.dsdv {
        return d
            .route(dst)
            .map(|r| r.next_hops.clone())
            .unwrap_or_default();
    }
    if let Some(o) = &st.olsr {
        return o.next_hop(dst).into_iter().collect();
    }
    let v = w.routes.next_hop(node, dst);
    if v == crate::net::routing::UNREACHABLE {
        vec![]
    } else {
        vec![v]
    }
}

/// Usable neighbours of `node` and its ETX to each (empty without ETX probing).
fn etx_links(w: &World, node: u32) -> Vec<(u32, f64)> {
    w.proto
        .as_ref()
        .and_then(|p| p.nodes.get(node as usize))
        .map(|st| st.etx.links().collect())
        .unwrap_or_default()
}

/// `node`'s per-destination queues: (destination, length).
fn dest_queue_lengths(w: &World, node: u32) -> Vec<(u32, u32)> {
    w.dest_queues
        .get(node as usize)
        .map(|q| q.lengths().collect())
        .unwrap_or_default()
}

/// What `node` overheard of its neighbours' queues: (neighbour, destination, length, when heard).
fn overheard_queues(w: &World, node: u32) -> Vec<(u32, u32, u32, SimTime)> {
    w.overheard
        .get(node as usize)
        .map(|o| {
            o.entries
                .iter()
                .map(|e| (e.neighbour, e.dst, e.queue_len, e.heard))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads declared parameter `spec` of `node` from the layer that owns it.
fn get_param(
    w: &mut World,
    node: u32,
    spec: &'static ParamSpec,
    level: Option<usize>,
    name: &str,
) -> Result<f64, XlError> {
    if spec.layer == "net" && spec.per_level {
        if node as usize >= w.nodes.len() {
            node_mut(w, node)?;
        }
        let i = level.unwrap_or(0) as u32;
        return Ok(match spec.name {
            "net.etx" => w
                .proto
                .as_ref()
                .and_then(|p| p.nodes[node as usize].etx.etx(i))
                .unwrap_or(f64::INFINITY),
            "net.next_hop" => next_hops(w, node, i)
                .first()
                .map(|&v| v as f64)
                .unwrap_or(-1.0),
            "net.next_hop_count" => next_hops(w, node, i).len() as f64,
            "net.dest_queue_len" => w
                .dest_queues
                .get(node as usize)
                .map(|q| q.len(i) as f64)
                .unwrap_or(0.0),
            _ => unreachable!("every declared parameter is handled"),
        });
    }
    if layers::owns(spec) {
        return layers_get(w, node, spec, level, name);
    }
    if spec.per_flow {
        let at_source = spec.name != "tcp.rwnd";
        let c = tcp_conn(w, node, level, name, at_source)?;
        let conn = &w.tcp[c];
        let s = &conn.sender;
        return Ok(match spec.name {
            "tcp.cwnd" => s.cwnd(),
            "tcp.ssthresh" => {
                if s.ssthresh() >= 1e15 {
                    f64::INFINITY
                } else {
                    s.ssthresh()
                }
            }
            "tcp.srtt" => s.srtt().unwrap_or(f64::NAN),
            "tcp.rto" => s.rto(),
            "tcp.rwnd" => conn.receiver.advertised_window() as f64,
            "tcp.pace_rate" => s.pace_rate(),
            _ => unreachable!("every declared parameter is handled"),
        });
    }
    let n = node_mut(w, node)?;
    let lv = |l: Option<usize>| -> Result<EdcaLevel, XlError> {
        let l = l.unwrap_or(0);
        if l >= n.mac.level_count() {
            return Err(XlError::Tuning(format!(
                "\"{name}\": the MAC has {} level(s)",
                n.mac.level_count()
            )));
        }
        Ok(n.mac.level_params(l))
    };
    Ok(match spec.name {
        "mac.cw_min" => lv(level)?.cw_min as f64,
        "mac.cw_max" => lv(level)?.cw_max as f64,
        "mac.aifsn" => lv(level)?.aifsn as f64,
        "mac.queue_len" => {
            lv(level)?;
            n.mac.queue_len(level.unwrap_or(0)) as f64
        }
        "mac.short_retry_limit" => n.mac.params.short_retry_limit as f64,
        "mac.long_retry_limit" => n.mac.params.long_retry_limit as f64,
        "net.queue_capacity" => n.mac.params.queue_capacity as f64,
        "phy.data_rate_mbps" => n.mac.params.data_rate_mbps,
        "phy.tx_power_offset_db" => n.tx_power_offset_db,
        _ => unreachable!("every declared parameter is handled"),
    })
}

/// Sets declared parameter `spec` of `node` in the layer that owns it.
fn set_param(
    w: &mut World,
    node: u32,
    spec: &'static ParamSpec,
    level: Option<usize>,
    name: &str,
    value: f64,
) -> Result<(), XlError> {
    if layers::owns(spec) {
        return layers_set(w, node, spec, level, name, value);
    }
    if spec.per_flow {
        let at_source = spec.name != "tcp.rwnd";
        let c = tcp_conn(w, node, level, name, at_source)?;
        match spec.name {
            "tcp.rwnd" => w.tcp[c].receiver.set_window_limit(value as u32),
            "tcp.pace_rate" => {
                if !w.tcp[c].sender.is_paced() {
                    return Err(XlError::Tuning(format!(
                        "\"{name}\": the flow's congestion control is not \"paced\""
                    )));
                }
                w.set_pace_rate(c, value);
            }
            _ => unreachable!("every settable parameter is handled"),
        }
        return Ok(());
    }
    let standard = w.cfg.standard;
    let n = node_mut(w, node)?;
    let int = value.round() as u32;
    match spec.name {
        "mac.cw_min" | "mac.cw_max" | "mac.aifsn" => {
            let l = level.unwrap_or(0);
            if l >= n.mac.level_count() {
                return Err(XlError::Tuning(format!(
                    "\"{name}\": the MAC has {} level(s)",
                    n.mac.level_count()
                )));
            }
            let mut p = n.mac.level_params(l);
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
            n.mac.set_level_params(l, p);
        }
        "mac.short_retry_limit" => n.mac.params.short_retry_limit = int,
        "mac.long_retry_limit" => n.mac.params.long_retry_limit = int,
        "net.queue_capacity" => n.mac.params.queue_capacity = int,
        "phy.data_rate_mbps" => {
            let rates = crate::phy::radio::rate_set(standard);
            if !rates.contains(&value) {
                return Err(XlError::Tuning(format!(
                    "\"{name}\": {value} is not a rate of this standard; allowed: {rates:?}"
                )));
            }
            n.mac.params.data_rate_mbps = value;
        }
        "phy.tx_power_offset_db" => {
            n.tx_power_offset_db = value;
            n.tx_power_factor = 10f64.powf(value / 10.0);
        }
        _ => unreachable!("every declared parameter is handled"),
    }
    Ok(())
}

/// Where a per-flow parameter lives: at the flow's source, its destination, or either.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Source,
    Destination,
    Either,
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
fn check_flow(
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

fn layers_get(
    w: &mut World,
    node: u32,
    spec: &'static ParamSpec,
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

fn layers_set(
    w: &mut World,
    node: u32,
    spec: &'static ParamSpec,
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
                crate::tune::optimizer::request_shutdown(w, node);
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
