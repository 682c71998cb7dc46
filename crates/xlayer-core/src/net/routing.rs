//! The routing component ([`Routing`]) and static shortest-path routes by hop count.
//!
//! A scenario's routing is one of two kinds: static routes computed once ([`StaticRoutes`]), or
//! control protocols that run over the air (ETX probing, and DSDV or OLSR on top of it,
//! [`super::proto::NetProto`]) with the static routes kept for nodes that run no routing
//! protocol. The node assembly asks [`Routing::next_hop`] on every forwarded packet, hands it
//! the network timers and control packets, and carries out the [`Action`]s it asks for.
//!
//! Routes are computed per destination by breadth-first search over the connectivity graph
//! (a link exists where the mean received power reaches the reception threshold). Among equal
//! next hops the one with the lowest node id is chosen, so routes are reproducible and match
//! other tools that apply the same rule. Only destinations that flows use get a table, so
//! memory grows with nodes × destinations, not nodes².

use std::collections::VecDeque;

use super::action::Action;
use super::proto::NetProto;
use crate::sim::event::NetTimerKind;
use crate::sim::SimTime;
use crate::wire::packet::Control;

pub const UNREACHABLE: u32 = u32::MAX;

#[derive(Debug, Default)]
pub struct StaticRoutes {
    /// Per destination node, the index of its table in `tables` ([`UNREACHABLE`]: none), so a
    /// lookup on the forwarding path is two array reads (issue 15 item 3: it was a `BTreeMap`).
    slot: Vec<u32>,
    /// (next hop per node, hop count per node), one per destination that flows use.
    tables: Vec<(Vec<u32>, Vec<u32>)>,
}

impl StaticRoutes {
    /// Computes the table towards `dst` over `neighbors` (sorted ascending per node).
    pub fn add_destination(&mut self, dst: u32, neighbors: &[Vec<u32>]) {
        if self.table(dst).is_some() {
            return;
        }
        let n = neighbors.len();
        let mut dist = vec![UNREACHABLE; n];
        let mut frontier = VecDeque::new();
        dist[dst as usize] = 0;
        frontier.push_back(dst);
        while let Some(u) = frontier.pop_front() {
            for &v in &neighbors[u as usize] {
                if dist[v as usize] == UNREACHABLE {
                    dist[v as usize] = dist[u as usize] + 1;
                    frontier.push_back(v);
                }
            }
        }
        let next = (0..n)
            .map(|u| {
                if u as u32 == dst || dist[u] == UNREACHABLE {
                    UNREACHABLE
                } else {
                    // neighbors are sorted: the first one a hop closer has the lowest id
                    neighbors[u]
                        .iter()
                        .copied()
                        .find(|&v| dist[v as usize] + 1 == dist[u])
                        .unwrap_or(UNREACHABLE)
                }
            })
            .collect();
        if self.slot.len() <= dst as usize {
            self.slot.resize(dst as usize + 1, UNREACHABLE);
        }
        self.slot[dst as usize] = self.tables.len() as u32;
        self.tables.push((next, dist));
    }

    /// The table towards `dst`, if one was computed.
    #[inline]
    fn table(&self, dst: u32) -> Option<&(Vec<u32>, Vec<u32>)> {
        match self.slot.get(dst as usize) {
            Some(&s) if s != UNREACHABLE => Some(&self.tables[s as usize]),
            _ => None,
        }
    }

    /// Next hop from `node` towards `dst`, or [`UNREACHABLE`].
    #[inline]
    pub fn next_hop(&self, node: u32, dst: u32) -> u32 {
        self.table(dst)
            .map(|(next, _)| next[node as usize])
            .unwrap_or(UNREACHABLE)
    }

    /// Hop count from `node` to `dst`, or [`UNREACHABLE`].
    pub fn hops(&self, node: u32, dst: u32) -> u32 {
        self.table(dst)
            .map(|(_, d)| d[node as usize])
            .unwrap_or(UNREACHABLE)
    }
}

/// The scenario's routing, as the data path sees it.
#[derive(Debug)]
pub enum Routing {
    /// Precomputed shortest paths; no control traffic.
    Static(StaticRoutes),
    /// ETX probing on every node and, where chosen, DSDV or OLSR on top; a node running
    /// neither routes by `routes`.
    Protocols {
        routes: StaticRoutes,
        proto: NetProto,
    },
}

impl Default for Routing {
    fn default() -> Routing {
        Routing::Static(StaticRoutes::default())
    }
}

impl Routing {
    /// Runs `proto` from now on, keeping the static routes as the fallback.
    pub fn with_protocols(self, proto: NetProto) -> Routing {
        let routes = match self {
            Routing::Static(r) | Routing::Protocols { routes: r, .. } => r,
        };
        Routing::Protocols { routes, proto }
    }

    /// The static shortest paths (hop counts for the results, the fallback next hops).
    pub fn static_routes(&self) -> &StaticRoutes {
        match self {
            Routing::Static(r) | Routing::Protocols { routes: r, .. } => r,
        }
    }

    /// The control protocols' state, when the scenario runs any.
    pub fn proto(&self) -> Option<&NetProto> {
        match self {
            Routing::Static(_) => None,
            Routing::Protocols { proto, .. } => Some(proto),
        }
    }

    /// Whether routes are learnt over the air (a source without a route waits for one).
    pub fn is_dynamic(&self) -> bool {
        matches!(self, Routing::Protocols { .. })
    }

    /// The next hop from `node` towards `dst`: DSDV's or OLSR's table when the node runs one,
    /// else the static routes ([`UNREACHABLE`] if none).
    #[inline]
    pub fn next_hop(&self, node: u32, dst: u32) -> u32 {
        match self {
            Routing::Static(r) => r.next_hop(node, dst),
            Routing::Protocols { routes, proto } => proto.next_hop(routes, node, dst),
        }
    }

    /// A network timer of the routing protocols fired at `node`.
    pub fn timer(&mut self, node: u32, kind: NetTimerKind, now: SimTime, out: &mut Vec<Action>) {
        if let Routing::Protocols { proto, .. } = self {
            proto.timer(node, kind, now, out);
        }
    }

    /// A routing control packet from `from` arrived at `node`.
    pub fn control_received(
        &mut self,
        node: u32,
        from: u32,
        control: Control,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        if let Routing::Protocols { proto, .. } = self {
            proto.control_received(node, from, control, now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_lowest_next_hop_id() {
        // 0 - 1 - 3 and 0 - 2 - 3: two equal paths from 0 to 3.
        let nb = vec![vec![1, 2], vec![0, 3], vec![0, 3], vec![1, 2]];
        let mut r = StaticRoutes::default();
        r.add_destination(3, &nb);
        assert_eq!(r.next_hop(0, 3), 1);
        assert_eq!(r.hops(0, 3), 2);
        assert_eq!(r.next_hop(3, 3), UNREACHABLE);
    }

    #[test]
    fn disconnected_nodes_are_unreachable() {
        let nb = vec![vec![1], vec![0], vec![]];
        let mut r = StaticRoutes::default();
        r.add_destination(2, &nb);
        assert_eq!(r.next_hop(0, 2), UNREACHABLE);
        assert_eq!(r.hops(0, 2), UNREACHABLE);
    }
}
