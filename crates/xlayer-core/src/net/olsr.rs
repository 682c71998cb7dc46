//! An OLSR-like link-state protocol with the ETX metric (RFC 3626, with the link-quality
//! extension of olsrd that DiffQ's testbed ran).
//!
//! Depends on `sim` and `net::etx`; a sans-IO state machine per node. What it does, and what is
//! simplified against RFC 3626:
//!
//! - **Neighbour sensing / HELLO.** The ETX probe is the HELLO: it lists every neighbour heard
//!   with how many of its probes were heard, which is what symmetric-link sensing needs and the
//!   link quality olsrd's LQ-HELLO carries; a link is symmetric when its ETX is finite. It also
//!   publishes the sender's MPR set, so each neighbour learns whether it was selected (its MPR
//!   selector set, held for 3 HELLO periods as NEIGHB_HOLD_TIME). Probe period 1 s rather than
//!   HELLO_INTERVAL = 2 s, so that ETX is measured as De Couto et al. did.
//! - **MPR selection** (§8.3.1 heuristic, willingness all default): first the neighbours that
//!   are the only way to some strict 2-hop neighbour, then greedily the neighbour covering most
//!   uncovered 2-hop neighbours (ties: the lowest id). 2-hop neighbours come from the
//!   neighbours' HELLOs (usable links only).
//! - **Topology control.** Every node with neighbours originates a TC every `tc_interval`
//!   (TC_INTERVAL = 5 s) advertising *all* its symmetric neighbours with its ETX to them
//!   (TC_REDUNDANCY = 2, §15.1, which an ETX metric needs: MPR-selector links alone do not
//!   contain the least-ETX paths). TCs are flooded by MPRs only: a node relays a TC once
//!   (duplicates suppressed by originator and ANSN) if the neighbour it came from selected it as
//!   MPR, after a random jitter of up to `max_jitter` (RFC 3626 §18: HELLO_INTERVAL/4 = 0.5 s).
//!   Topology entries expire after TOP_HOLD_TIME = 3 × `tc_interval`.
//! - **Routes**: Dijkstra over our own ETX links and the advertised ones, each used both ways
//!   (advertised links are symmetric; RFC 3626 §10 uses a TC's links from the originator only,
//!   which makes a route wait for the TCs of both ends), recomputed at the next probe instant after a change (so at most one
//!   probe period late), one next hop per destination.
//!
//! Not modelled: willingness, multiple interfaces, HNA/MID messages, message aggregation into
//! one OLSR packet, the link hysteresis of §14.

use crate::net::etx::Etx;
use crate::sim::SimTime;

/// TC: OLSR packet header (4) + message header (12) + ANSN and reserved (4), over IPv4 + UDP.
pub const TC_BASE_BYTES: u32 = 28 + 20;
/// One advertised neighbour: address (4) and link quality (4).
pub const TC_ENTRY_BYTES: u32 = 8;
/// Entries that fit in one TC packet (802.11 MSDU less LLC/SNAP).
pub const TC_ENTRIES_MAX: usize = ((2304 - 8 - TC_BASE_BYTES) / TC_ENTRY_BYTES) as usize;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OlsrParams {
    pub tc_interval: SimTime,
    pub max_jitter: SimTime,
    /// How long an MPR selection is believed after the HELLO that announced it.
    pub neighb_hold: SimTime,
}

impl Default for OlsrParams {
    fn default() -> Self {
        OlsrParams {
            tc_interval: SimTime::from_secs_f64(5.0),
            max_jitter: SimTime::from_secs_f64(0.5),
            neighb_hold: SimTime::from_secs_f64(6.0),
        }
    }
}

#[derive(Debug, Clone)]
struct TopologyEntry {
    origin: u32,
    ansn: u32,
    /// (neighbour, ETX as the origin measured it)
    links: Vec<(u32, f64)>,
    expires: SimTime,
}

#[derive(Debug, Clone)]
pub struct Olsr {
    pub me: u32,
    pub params: OlsrParams,
    /// Our MPR set, by id.
    pub mprs: Vec<u32>,
    /// Neighbours that selected us as MPR, until when.
    selectors: Vec<(u32, SimTime)>,
    /// The neighbours' neighbour lists (from their HELLOs): (neighbour, its usable neighbours).
    two_hop: Vec<(u32, Vec<u32>)>,
    topology: Vec<TopologyEntry>,
    /// Highest ANSN seen per originator, and whether we relayed it (RFC 3626 §3.4's
    /// duplicate set: a copy first heard from a non-selector may still be relayed when it
    /// arrives again from an MPR selector).
    seen: Vec<(u32, u32, bool)>,
    ansn: u32,
    /// Next hop and distance per destination (index = node id), after the last computation.
    next: Vec<u32>,
    dist: Vec<f64>,
    dirty: bool,
    route_changes: u64,
    /// Adjacency built from the topology table at each computation (kept to reuse its memory).
    adjacency: Vec<Vec<(u32, f64)>>,
    /// Buffers of the MPR selection (N1, N2, uncovered, previous MPR set) and of Dijkstra.
    #[allow(clippy::type_complexity)]
    mpr_scratch: (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>),
    first: Vec<u32>,
    done: Vec<bool>,
}

impl Olsr {
    pub fn new(me: u32, n: usize, params: OlsrParams) -> Olsr {
        Olsr {
            me,
            params,
            mprs: Vec::new(),
            selectors: Vec::new(),
            two_hop: Vec::new(),
            topology: Vec::new(),
            seen: Vec::new(),
            ansn: 0,
            next: vec![u32::MAX; n],
            dist: vec![f64::INFINITY; n],
            dirty: true,
            route_changes: 0,
            adjacency: vec![Vec::new(); n],
            mpr_scratch: Default::default(),
            first: vec![u32::MAX; n],
            done: vec![false; n],
        }
    }

    #[inline]
    pub fn next_hop(&self, dst: u32) -> Option<u32> {
        self.next
            .get(dst as usize)
            .copied()
            .filter(|&v| v != u32::MAX)
    }

    pub fn distance(&self, dst: u32) -> f64 {
        self.dist
            .get(dst as usize)
            .copied()
            .unwrap_or(f64::INFINITY)
    }

    /// Originators whose topology we hold, and the links each advertised.
    pub fn topology(&self) -> impl Iterator<Item = (u32, &[(u32, f64)])> + '_ {
        self.topology.iter().map(|t| (t.origin, t.links.as_slice()))
    }

    /// Neighbours that currently select us as MPR.
    pub fn selectors(&self) -> impl Iterator<Item = u32> + '_ {
        self.selectors.iter().map(|s| s.0)
    }

    pub fn take_route_changes(&mut self) -> u64 {
        std::mem::take(&mut self.route_changes)
    }

    /// A HELLO (probe) from `from` listing `its_neighbours` (usable ones) and its MPR set.
    pub fn on_hello(&mut self, now: SimTime, from: u32, its_neighbours: &[u32], its_mprs: &[u32]) {
        match self.two_hop.iter_mut().find(|e| e.0 == from) {
            Some(e) => {
                e.1.clear();
                e.1.extend_from_slice(its_neighbours);
            }
            None => self.two_hop.push((from, its_neighbours.to_vec())),
        }
        self.selectors.retain(|s| s.0 != from);
        if its_mprs.contains(&self.me) {
            self.selectors.push((from, now + self.params.neighb_hold));
        }
    }

    /// Our probe instant: re-selects MPRs over the current neighbourhood and recomputes routes
    /// if anything changed since.
    pub fn on_tick(&mut self, now: SimTime, etx: &Etx) {
        self.selectors.retain(|s| s.1 > now);
        let before = self.topology.len();
        self.topology.retain(|t| t.expires > now);
        self.dirty |= before != self.topology.len();
        // MPR selection (RFC 3626 §8.3.1), in buffers kept between ticks.
        let (mut n1, mut n2, mut uncovered, mut mprs) = std::mem::take(&mut self.mpr_scratch);
        n1.clear();
        n1.extend(etx.links().map(|(v, _)| v));
        self.two_hop.retain(|e| n1.contains(&e.0));
        n2.clear();
        n2.extend(
            self.two_hop
                .iter()
                .flat_map(|e| e.1.iter().copied())
                .filter(|&x| x != self.me && !n1.contains(&x)),
        );
        n2.sort_unstable();
        n2.dedup();
        let covers = |v: u32, x: u32| self.two_hop.iter().any(|e| e.0 == v && e.1.contains(&x));
        mprs.clear();
        uncovered.clear();
        for &x in &n2 {
            let mut via = n1.iter().copied().filter(|&v| covers(v, x));
            match (via.next(), via.next()) {
                (Some(only), None) => {
                    if !mprs.contains(&only) {
                        mprs.push(only);
                    }
                }
                _ => uncovered.push(x),
            }
        }
        uncovered.retain(|&x| !mprs.iter().any(|&m| covers(m, x)));
        while !uncovered.is_empty() {
            let best = n1
                .iter()
                .copied()
                .filter(|v| !mprs.contains(v))
                .map(|v| (uncovered.iter().filter(|&&x| covers(v, x)).count(), v))
                .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            match best {
                Some((c, v)) if c > 0 => {
                    mprs.push(v);
                    uncovered.retain(|&x| !covers(v, x));
                }
                _ => break,
            }
        }
        mprs.sort_unstable();
        std::mem::swap(&mut self.mprs, &mut mprs);
        self.mpr_scratch = (n1, n2, uncovered, mprs);
        // Our own link costs change at every tick: recompute.
        self.recompute(etx);
    }

    /// Whether `from` selected us as MPR (so we relay what it floods).
    pub fn is_mpr_of(&self, from: u32) -> bool {
        self.selectors.iter().any(|s| s.0 == from)
    }

    /// A TC from `origin` with `ansn` and its `links` arrived through `from`. Returns whether
    /// we should relay it (first copy, and `from` selected us as MPR).
    pub fn on_tc(
        &mut self,
        now: SimTime,
        origin: u32,
        ansn: u32,
        from: u32,
        links: &[(u32, f64)],
    ) -> bool {
        if origin == self.me {
            return false;
        }
        let relay = self.is_mpr_of(from);
        match self.seen.iter_mut().find(|s| s.0 == origin) {
            Some(s) if s.1 > ansn => return false,
            Some(s) if s.1 == ansn => {
                // A duplicate: relay it if we have not yet and this copy came from a selector.
                let now_relay = relay && !s.2;
                s.2 |= relay;
                return now_relay;
            }
            Some(s) => *s = (origin, ansn, relay),
            None => self.seen.push((origin, ansn, relay)),
        }
        let expires = now + SimTime(self.params.tc_interval.ns().saturating_mul(3));
        match self.topology.iter_mut().find(|t| t.origin == origin) {
            Some(t) => {
                t.ansn = ansn;
                t.links.clear();
                t.links.extend_from_slice(links);
                t.expires = expires;
            }
            None => self.topology.push(TopologyEntry {
                origin,
                ansn,
                links: links.to_vec(),
                expires,
            }),
        }
        self.dirty = true;
        relay
    }

    /// Our next TC: its ANSN; `out` gets our usable links.
    pub fn make_tc(&mut self, etx: &Etx, out: &mut Vec<(u32, f64)>) -> u32 {
        out.clear();
        out.extend(etx.links().take(TC_ENTRIES_MAX));
        self.ansn = self.ansn.wrapping_add(1);
        self.ansn
    }

    /// Dijkstra from us over our links and the topology table.
    fn recompute(&mut self, etx: &Etx) {
        let n = self.next.len();
        let mut dist = std::mem::take(&mut self.dist);
        let mut first = std::mem::take(&mut self.first);
        first.iter_mut().for_each(|f| *f = u32::MAX);
        dist.iter_mut().for_each(|d| *d = f64::INFINITY);
        let mut done = std::mem::take(&mut self.done);
        done.iter_mut().for_each(|d| *d = false);
        let me = self.me as usize;
        dist[me] = 0.0;
        // Advertised links are symmetric (only symmetric neighbours are advertised, and ETX is
        // the same seen from either end), so a link advertised by either end is used both
        // ways: a route does not wait for the TCs of both ends to cross lossy links.
        let adj = &mut self.adjacency;
        adj.iter_mut().for_each(|a| a.clear());
        for t in &self.topology {
            for &(v, c) in &t.links {
                if (v as usize) < n {
                    adj[t.origin as usize].push((v, c));
                    adj[v as usize].push((t.origin, c));
                }
            }
        }
        loop {
            let mut u = usize::MAX;
            for i in 0..n {
                if !done[i] && dist[i].is_finite() && (u == usize::MAX || dist[i] < dist[u]) {
                    u = i;
                }
            }
            if u == usize::MAX {
                break;
            }
            done[u] = true;
            let mut relax = |v: u32, c: f64| {
                let v = v as usize;
                if v < n && dist[u] + c < dist[v] {
                    dist[v] = dist[u] + c;
                    first[v] = if u == me { v as u32 } else { first[u] };
                }
            };
            if u == me {
                for (v, c) in etx.links() {
                    relax(v, c);
                }
            } else {
                for &(v, c) in &adj[u] {
                    relax(v, c);
                }
            }
        }
        for (d, &f) in first.iter().enumerate() {
            if self.next[d] != f {
                self.route_changes += 1;
            }
        }
        std::mem::swap(&mut self.next, &mut first);
        self.first = first;
        self.done = done;
        self.dist = dist;
        self.dirty = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mprs_cover_every_two_hop_neighbour() {
        // 0's neighbours 1, 2, 3; 1 reaches 4 and 5, 2 reaches 5, 3 reaches 6.
        use crate::net::etx::EtxParams;
        let mut etx = Etx::new(EtxParams {
            alpha: 0.0,
            ..EtxParams::default()
        });
        for s in 1..=10u32 {
            let t = SimTime::from_secs_f64(s as f64 - 0.5);
            for v in [1, 2, 3] {
                etx.on_probe(t, v, s, Some(10));
            }
        }
        let t = SimTime::from_secs_f64(10.0);
        etx.on_probe_tick(t);
        let mut o = Olsr::new(0, 8, OlsrParams::default());
        o.on_hello(t, 1, &[0, 4, 5], &[]);
        o.on_hello(t, 2, &[0, 5], &[0]);
        o.on_hello(t, 3, &[0, 6], &[]);
        o.on_tick(t, &etx);
        assert_eq!(o.mprs, vec![1, 3]);
        assert!(o.is_mpr_of(2) && !o.is_mpr_of(1));
        // A TC from 1 advertising 4 (ETX 2): 4 is reached through 1 at 1 + 2.
        assert!(
            !o.on_tc(t, 1, 1, 1, &[(0, 1.0), (4, 2.0)]),
            "1 did not select us"
        );
        assert!(
            o.on_tc(t, 5, 1, 2, &[(2, 1.0)]),
            "relay what an MPR selector floods"
        );
        assert!(!o.on_tc(t, 5, 1, 2, &[(2, 1.0)]), "only once");
        // First heard from a non-selector, then from a selector: relayed then.
        assert!(!o.on_tc(t, 6, 1, 1, &[(3, 1.0)]));
        assert!(o.on_tc(t, 6, 1, 2, &[(3, 1.0)]));
        o.on_tick(t, &etx);
        assert_eq!(o.next_hop(4), Some(1));
        assert!((o.distance(4) - 3.0).abs() < 1e-9);
    }
}
