//! The network layer's tuning layer (ECLAIR): ETX estimates, next hops and queue lengths it
//! lets optimizers read, and its counters, declared once in [`PARAMS`] and read through [`get`]
//! only (the interface queues' capacity is set through the MAC's: `crate::mac::tuning`).

use super::queue::PerDestQueues;
use super::routing::{Routing, UNREACHABLE};
use crate::metrics::NetStats;
use crate::sim::param::{node_param, p, EventSpec, ParamSpec, TuneEventKind};

pub const PARAMS: &[ParamSpec] = &[
    p(
        "net.etx",
        "net",
        "ETX of the link to a neighbour (index: neighbour id), as this node estimates it; infinite if no usable link",
        "transmissions",
        1.0,
        f64::INFINITY,
        true,
        true,
    )
    .indexed_by("neighbour"),
    p(
        "net.next_hop",
        "net",
        "best next hop towards a destination (index: destination id); -1 if none",
        "node",
        -1.0,
        f64::MAX,
        true,
        true,
    )
    .indexed_by("destination"),
    p(
        "net.next_hop_count",
        "net",
        "how many of the K best next hops towards a destination are known (DSDV; 1 or 0 otherwise)",
        "nodes",
        0.0,
        16.0,
        true,
        true,
    )
    .indexed_by("destination"),
    p(
        "net.dest_queue_len",
        "net",
        "packets in this node's per-destination queue (index: destination id)",
        "packets",
        0.0,
        f64::MAX,
        true,
        true,
    )
    .indexed_by("destination"),
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
];

/// The events the network layer publishes.
pub const EVENTS: &[EventSpec] = &[
    EventSpec {
        kind: TuneEventKind::QueueOverflow,
        layer: "net",
        doc: "a full interface queue refused a packet: the priority level (per-destination queueing: the destination)",
        unit: "level",
    },
    EventSpec {
        kind: TuneEventKind::RouteChange,
        layer: "net",
        doc: "routes changed next hop or reachability (DSDV, OLSR): how many destinations",
        unit: "destinations",
    },
    EventSpec {
        kind: TuneEventKind::QueueChange,
        layer: "net",
        doc: "a per-destination queue grew or shrank: the destination (net.dest_queue_len.<destination>)",
        unit: "node",
    },
];

/// Whether `spec` is one of this layer's.
pub fn owns(spec: &ParamSpec) -> bool {
    PARAMS.iter().any(|p| p.name == spec.name)
}

/// What the network layer of one node holds: its routes (static, or DSDV's and OLSR's
/// tables), its per-destination queues when it has them, and its counters.
pub struct NetView<'a> {
    pub node: u32,
    pub routing: &'a Routing,
    pub dest_queues: Option<&'a PerDestQueues>,
    pub stats: &'a NetStats,
}

impl NetView<'_> {
    /// The K best next hops towards `dst`, best first (one under OLSR and static routing;
    /// empty if none).
    pub fn next_hops(&self, dst: u32) -> Vec<u32> {
        let static_hop = || {
            let v = self.routing.static_routes().next_hop(self.node, dst);
            if v == UNREACHABLE {
                vec![]
            } else {
                vec![v]
            }
        };
        let Some(st) = self
            .routing
            .proto()
            .and_then(|p| p.nodes.get(self.node as usize))
        else {
            return static_hop();
        };
        if let Some(d) = &st.dsdv {
            return d.next_hops(dst).to_vec();
        }
        if let Some(o) = &st.olsr {
            return o.next_hop(dst).into_iter().collect();
        }
        static_hop()
    }
}

/// Reads `spec` (`index`: the neighbour or destination id of an indexed parameter).
pub fn get(v: &NetView, spec: &ParamSpec, index: Option<usize>) -> f64 {
    let i = index.unwrap_or(0) as u32;
    match spec.name {
        "net.etx" => v
            .routing
            .proto()
            .and_then(|p| p.nodes[v.node as usize].etx.etx(i))
            .unwrap_or(f64::INFINITY),
        "net.next_hop" => v.next_hops(i).first().map(|&h| h as f64).unwrap_or(-1.0),
        "net.next_hop_count" => v.next_hops(i).len() as f64,
        "net.dest_queue_len" => v.dest_queues.map(|q| q.len(i) as f64).unwrap_or(0.0),
        "net.forwarded" => v.stats.forwarded as f64,
        "net.delivered" => v.stats.delivered as f64,
        _ => unreachable!("every parameter of net::tuning::PARAMS is handled"),
    }
}
