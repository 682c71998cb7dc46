//! The routing component ([`Routing`]) and static shortest-path routes by hop count.
//!
//! A scenario's routing is one of two kinds: static routes computed once ([`StaticRoutes`]), or
//! control protocols that run over the air (ETX probing, and DSDV or OLSR on top of it,
//! [`super::proto::NetProto`]) with the static routes kept for nodes that run no routing
//! protocol. The node assembly asks [`Routing::next_hop`] on every forwarded packet, hands it
//! the network timers and control packets, and carries out the [`Action`]s it asks for.
//!
//! Routes are shortest paths by hop count over the connectivity graph (a link exists where the
//! mean received power reaches the reception threshold, plus the wired links). Among equal next
//! hops the one with the lowest node id is chosen, so routes are reproducible and match other
//! tools that apply the same rule. Only destinations that flows use are routed to.
//!
//! Nothing is stored per node × destination (issue 15 item 3: at 10,000 nodes with N/6 flows
//! those tables were most of a run's memory). A route is found when first asked for, by a
//! breadth-first search from the destination that stops as soon as it reaches the asking node —
//! a ball of the route's length, not the whole network — and the next hop and hop count of every
//! node on the path are kept in that node's small sorted list. Forwarding along the path then
//! reads them back; a node off the paths (an overhearing neighbour, a node a tuned next hop sends
//! a packet to, a viewer following the tables) gets its route computed the same way on its first
//! question. The answers are those of a full per-destination table: when the search reaches the
//! asking node at distance `d`, every node at distance `d − 1` has its distance already.

use std::cell::RefCell;
use std::collections::VecDeque;

use super::action::Action;
use super::proto::NetProto;
use crate::sim::event::NetTimerKind;
use crate::sim::SimTime;
use crate::wire::packet::Control;

pub const UNREACHABLE: u32 = u32::MAX;

/// One node's route towards one destination.
#[derive(Debug, Clone, Copy)]
struct Entry {
    dst: u32,
    next: u32,
    hops: u32,
}

/// The routes found so far and the search's scratch space (reused: no allocation per search
/// beyond the entries it adds).
#[derive(Debug, Default)]
struct Found {
    /// Per node, its routes by ascending destination.
    entries: Vec<Vec<Entry>>,
    /// Hop count to the destination of the search under way ([`UNREACHABLE`]: not reached).
    dist: Vec<u32>,
    /// The nodes whose `dist` the search set, reset after it.
    touched: Vec<u32>,
    frontier: VecDeque<u32>,
}

impl Found {
    fn get(&self, node: u32, dst: u32) -> Option<Entry> {
        let list = self.entries.get(node as usize)?;
        list.binary_search_by_key(&dst, |e| e.dst)
            .ok()
            .map(|i| list[i])
    }

    fn put(&mut self, node: u32, e: Entry) {
        let list = &mut self.entries[node as usize];
        if let Err(i) = list.binary_search_by_key(&e.dst, |x| x.dst) {
            list.insert(i, e);
        }
    }
}

/// Static shortest-path routes towards the destinations flows use, found on demand.
#[derive(Debug, Default)]
pub struct StaticRoutes {
    /// The graph in compressed form: node `u`'s neighbours (ascending ids) are
    /// `adjacency[offsets[u]..offsets[u + 1]]`.
    offsets: Vec<u32>,
    adjacency: Vec<u32>,
    /// Whether a node is a destination routes are kept towards.
    destination: Vec<bool>,
    found: RefCell<Found>,
}

impl StaticRoutes {
    /// Routes over `neighbors` (sorted ascending per node), towards no destination yet.
    pub fn new(neighbors: &[Vec<u32>]) -> StaticRoutes {
        let n = neighbors.len();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut adjacency = Vec::with_capacity(neighbors.iter().map(Vec::len).sum());
        offsets.push(0);
        for list in neighbors {
            debug_assert!(list.windows(2).all(|w| w[0] < w[1]), "neighbours unsorted");
            adjacency.extend_from_slice(list);
            offsets.push(adjacency.len() as u32);
        }
        StaticRoutes {
            offsets,
            adjacency,
            destination: vec![false; n],
            found: RefCell::new(Found {
                entries: vec![Vec::new(); n],
                dist: vec![UNREACHABLE; n],
                ..Found::default()
            }),
        }
    }

    /// Keeps routes towards `dst` from now on.
    pub fn add_destination(&mut self, dst: u32) {
        if let Some(d) = self.destination.get_mut(dst as usize) {
            *d = true;
        }
    }

    #[inline]
    fn neighbors(&self, u: u32) -> &[u32] {
        &self.adjacency[self.offsets[u as usize] as usize..self.offsets[u as usize + 1] as usize]
    }

    /// `node`'s route towards `dst` (a destination): kept, or found now.
    #[inline]
    fn entry(&self, node: u32, dst: u32) -> Option<Entry> {
        if !self.destination.get(dst as usize).copied().unwrap_or(false)
            || node as usize >= self.destination.len()
        {
            return None;
        }
        if let Some(e) = self.found.borrow().get(node, dst) {
            return Some(e);
        }
        Some(self.search(node, dst))
    }

    /// Breadth-first search from `dst` until it reaches `from`; keeps the routes of the nodes
    /// on `from`'s path (or `from`'s unreachability) and returns `from`'s.
    #[cold]
    fn search(&self, from: u32, dst: u32) -> Entry {
        let found = &mut *self.found.borrow_mut();
        let mut reached = from == dst;
        found.dist[dst as usize] = 0;
        found.touched.push(dst);
        found.frontier.clear();
        found.frontier.push_back(dst);
        'search: while let Some(u) = found.frontier.pop_front() {
            let du = found.dist[u as usize];
            for &v in self.neighbors(u) {
                if found.dist[v as usize] == UNREACHABLE {
                    found.dist[v as usize] = du + 1;
                    found.touched.push(v);
                    found.frontier.push_back(v);
                    if v == from {
                        reached = true;
                        break 'search;
                    }
                }
            }
        }
        let first = if !reached {
            Entry {
                dst,
                next: UNREACHABLE,
                hops: UNREACHABLE,
            }
        } else {
            // Walk down the path: each node's next hop is its lowest-id neighbour one hop
            // closer (neighbours are sorted), whose distance the search has set.
            let mut u = from;
            let mut first = None;
            loop {
                let du = found.dist[u as usize];
                let next = if du == 0 {
                    UNREACHABLE
                } else {
                    self.neighbors(u)
                        .iter()
                        .copied()
                        .find(|&v| found.dist[v as usize] == du - 1)
                        .unwrap_or(UNREACHABLE)
                };
                let e = Entry {
                    dst,
                    next,
                    hops: du,
                };
                first.get_or_insert(e);
                found.put(u, e);
                if next == UNREACHABLE {
                    break;
                }
                u = next;
            }
            first.expect("the path starts at `from`")
        };
        found.put(from, first);
        for i in 0..found.touched.len() {
            let v = found.touched[i];
            found.dist[v as usize] = UNREACHABLE;
        }
        found.touched.clear();
        first
    }

    /// Next hop from `node` towards `dst`, or [`UNREACHABLE`].
    #[inline]
    pub fn next_hop(&self, node: u32, dst: u32) -> u32 {
        self.entry(node, dst).map_or(UNREACHABLE, |e| e.next)
    }

    /// Hop count from `node` to `dst`, or [`UNREACHABLE`].
    pub fn hops(&self, node: u32, dst: u32) -> u32 {
        self.entry(node, dst).map_or(UNREACHABLE, |e| e.hops)
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
        let mut r = StaticRoutes::new(&nb);
        r.add_destination(3);
        assert_eq!(r.next_hop(0, 3), 1);
        assert_eq!(r.hops(0, 3), 2);
        assert_eq!(r.next_hop(3, 3), UNREACHABLE);
    }

    #[test]
    fn disconnected_nodes_are_unreachable() {
        let nb = vec![vec![1], vec![0], vec![]];
        let mut r = StaticRoutes::new(&nb);
        r.add_destination(2);
        assert_eq!(r.next_hop(0, 2), UNREACHABLE);
        assert_eq!(r.hops(0, 2), UNREACHABLE);
        assert_eq!(r.hops(2, 2), 0);
    }

    #[test]
    fn only_destinations_flows_use_have_routes() {
        let nb = vec![vec![1], vec![0, 2], vec![1]];
        let mut r = StaticRoutes::new(&nb);
        r.add_destination(2);
        assert_eq!(r.next_hop(0, 2), 1);
        assert_eq!(r.next_hop(2, 0), UNREACHABLE);
        assert_eq!(r.hops(2, 0), UNREACHABLE);
        assert_eq!(r.next_hop(7, 2), UNREACHABLE, "a node id out of range");
    }

    /// Random geometric graphs (nodes in a square, linked within a range, some of them cut off).
    fn random_graph(n: usize, seed: u64) -> Vec<Vec<u32>> {
        let mut state = seed;
        let mut uniform = || {
            // SplitMix64: a reference generator, independent of the engine's streams.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as f64 / u64::MAX as f64
        };
        let pos: Vec<(f64, f64)> = (0..n).map(|_| (uniform(), uniform())).collect();
        (0..n)
            .map(|i| {
                (0..n)
                    .filter(|&j| {
                        j != i && {
                            let (dx, dy) = (pos[i].0 - pos[j].0, pos[i].1 - pos[j].1);
                            dx * dx + dy * dy < 0.045
                        }
                    })
                    .map(|j| j as u32)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn routes_found_on_demand_are_the_all_pairs_shortest_paths_with_the_lowest_id_rule() {
        // Reference: Floyd-Warshall distances over the whole graph, and as next hop the
        // lowest-id neighbour on a shortest path. The routes are asked for in an order that
        // mixes sources on each other's paths, nodes off every path, and repeated questions.
        for seed in 1..=4 {
            let n = 90;
            // The last two nodes are an island: a pair linked only to each other.
            let mut nb = random_graph(n - 2, seed);
            nb.push(vec![n as u32 - 1]);
            nb.push(vec![n as u32 - 2]);
            let inf = u32::MAX / 4;
            let mut d = vec![vec![inf; n]; n];
            for (u, list) in nb.iter().enumerate() {
                d[u][u] = 0;
                for &v in list {
                    d[u][v as usize] = 1;
                }
            }
            for k in 0..n {
                for i in 0..n {
                    for j in 0..n {
                        if d[i][k] + d[k][j] < d[i][j] {
                            d[i][j] = d[i][k] + d[k][j];
                        }
                    }
                }
            }
            let dests: Vec<u32> = (0..n as u32).filter(|v| v % 7 == 3).collect();
            let mut r = StaticRoutes::new(&nb);
            for &t in &dests {
                r.add_destination(t);
            }
            let mut unreachable = 0;
            for round in 0..2 {
                for k in 0..n * dests.len() {
                    let (u, t) = if round == 0 {
                        ((k * 37) % n, dests[k % dests.len()])
                    } else {
                        (k / dests.len(), dests[k % dests.len()])
                    };
                    let (ti, hops) = (t as usize, d[u][t as usize]);
                    let want_next = if u == ti || hops >= inf {
                        UNREACHABLE
                    } else {
                        nb[u]
                            .iter()
                            .copied()
                            .filter(|&v| d[v as usize][ti] + 1 == hops)
                            .min()
                            .unwrap()
                    };
                    let want_hops = if hops >= inf { UNREACHABLE } else { hops };
                    unreachable += (hops >= inf) as usize;
                    assert_eq!(
                        r.next_hop(u as u32, t),
                        want_next,
                        "seed {seed}: {u} -> {t}"
                    );
                    assert_eq!(r.hops(u as u32, t), want_hops, "seed {seed}: {u} -> {t}");
                }
            }
            // The graphs exercise both: reachable pairs and cut-off nodes.
            assert!(
                unreachable > 0 && unreachable < n * dests.len(),
                "seed {seed}"
            );
        }
    }
}
