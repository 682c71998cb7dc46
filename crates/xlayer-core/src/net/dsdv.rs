//! DSDV with the ETX metric and K best next hops (Perkins & Bhagwat, "Highly dynamic
//! destination-sequenced distance-vector routing (DSDV) for mobile computers", SIGCOMM 1994;
//! DPCLO §IV-E runs DSDV with ETX and restricts each destination to K next hops).
//!
//! Depends on `sim` and `net::etx`; a sans-IO state machine per node. Every node numbers its own
//! advertisements with even destination sequence numbers, raised by 2 at each periodic update.
//! A route's metric is the sum of link ETX values along it (or hop count with
//! [`Metric::HopCount`]); link costs come from the node's own ETX estimator, so only neighbours
//! whose link is usable are candidates. For each destination the node keeps the latest
//! advertisement of every neighbour and derives:
//!
//! - the **route**: among neighbours advertising the newest (even) sequence number or the one
//!   before it, the one with the least `link cost + advertised metric`. Plain DSDV takes the
//!   newest number only, which over lossy links makes a node follow whichever path happened to
//!   deliver the newest number first (a lost direct update sends it the long way for a whole
//!   period); De Couto et al. (§5) saw the same and delayed route use by the settling time. We
//!   take the simpler two-generation rule. An odd newest number (a break) still wins: the
//!   route stays broken until the destination's next even number arrives;
//! - the **K best next hops**: the route's next hop, then the other neighbours in order of
//!   `link cost + advertised metric`, among the same candidates, restricted to *downhill*
//!   neighbours (advertised metric below our own). The downhill rule keeps every choice among the K loop-free (the metric falls
//!   strictly along any path), which a scheduler picking any of them per packet needs; where the
//!   K shortest paths' first hops are all downhill, the K next hops are exactly those of the K
//!   shortest paths (tested against Yen's algorithm in `tests/routing.rs`).
//!
//! When a neighbour's link becomes unusable or silent, routes through it that have no other
//! next hop at the newest sequence number break: their metric becomes infinite under the next
//! odd sequence number, advertised at once. **Triggered updates** go out when a route breaks,
//! appears, or changes its next hop with a new sequence number, at most one per
//! `min_trigger_gap`; a change learnt with a new sequence number is held back for twice the
//! destination's weighted **settling time** (the average delay between the first and the best
//! advertisement of a sequence number), as the paper prescribes to damp fluctuations. Metric
//! drift alone (ETX noise) is carried by the periodic updates, and so is a next-hop change under
//! the same sequence number that lowers the metric: neighbours learn only the metric, never the
//! next hop, and a lower metric cannot mislead them into a loop (under load ETX noise flips
//! between near-equal next hops every few seconds at every node: on the 108 nodes of
//! `scenarios/dpclo-fig9.toml` under DPCLO-802.11e, control frames took 118 node-seconds of
//! airtime in 100 s when every flip triggered a full dump, 92 with this rule, 19 with no
//! triggered updates at all). A flip that raises the metric is advertised at once, as before: a
//! neighbour still counting on the old metric could otherwise route back through us (skipping
//! those too made `tests/routing.rs` find a loop).
//!
//! Simplifications: every update is a full dump (DSDV's incremental dumps are not kept apart),
//! split over several packets when the table exceeds one MSDU; advertisements are timed out
//! after `route_timeout`.
//!
//! Constants (not in the documents; ns-2's `Agent/DSDV` defaults): periodic update every 15 s
//! (`perup_`), initial weighted settling time 6 s (`wst0_`) and weight 0.875 (`alpha_`), routes
//! expire after 3 missed periodic updates (`min_update_periods_`); at most one triggered update
//! per second.

use crate::net::etx::Etx;
use crate::sim::SimTime;

/// Update header (sender's sequence number and entry count, 8 bytes) over IPv4 + UDP (28).
pub const UPDATE_BASE_BYTES: u32 = 28 + 8;
/// One entry: destination (4), sequence number (4), metric (4).
pub const ENTRY_BYTES: u32 = 12;
/// Entries that fit in one update packet (802.11 MSDU limit 2304 bytes less LLC/SNAP).
pub const ENTRIES_PER_PACKET: usize = ((2304 - 8 - UPDATE_BASE_BYTES) / ENTRY_BYTES) as usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Etx,
    HopCount,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DsdvParams {
    pub update_interval: SimTime,
    pub k: usize,
    pub initial_settling: SimTime,
    pub settling_weight: f64,
    pub min_trigger_gap: SimTime,
    pub route_timeout: SimTime,
    pub metric: Metric,
}

impl Default for DsdvParams {
    fn default() -> Self {
        DsdvParams {
            update_interval: SimTime::from_secs_f64(15.0),
            k: 1,
            initial_settling: SimTime::from_secs_f64(6.0),
            settling_weight: 0.875,
            min_trigger_gap: SimTime::from_secs_f64(1.0),
            route_timeout: SimTime::from_secs_f64(45.0),
            metric: Metric::Etx,
        }
    }
}

/// One entry of an update: destination, its sequence number, metric (infinite = broken).
pub type Entry = (u32, u32, f64);

#[derive(Debug, Clone, Copy)]
struct Advert {
    from: u32,
    seq: u32,
    metric: f64,
    heard: SimTime,
}

#[derive(Debug, Clone)]
pub struct Route {
    pub dst: u32,
    /// Newest sequence number known (odd: broken).
    pub seq: u32,
    pub metric: f64,
    /// The K best next hops, best first (empty when broken).
    pub next_hops: Vec<u32>,
    adverts: Vec<Advert>,
    /// When the newest sequence number was first heard, and its best metric so far.
    seq_first_heard: SimTime,
    /// Weighted average settling time (ns).
    settling_ns: f64,
    /// A change to advertise in a triggered update, not before this time.
    pending: Option<SimTime>,
}

#[derive(Debug, Clone)]
pub struct Dsdv {
    pub me: u32,
    pub params: DsdvParams,
    own_seq: u32,
    /// Sorted by destination.
    routes: Vec<Route>,
    last_sent: Option<SimTime>,
    /// Route changes (next hop or reachability) since the last call to `take_route_changes`.
    route_changes: u64,
    scratch: Vec<(f64, u32)>,
    /// The link costs of the last [`Dsdv::on_links_changed`] (usable links, by neighbour), and
    /// a spare vector for the next ones.
    costs: Vec<(u32, f64)>,
    costs_spare: Vec<(u32, f64)>,
    /// Neighbours whose cost changed at the last [`Dsdv::on_links_changed`], by id.
    changed: Vec<u32>,
    /// Whether `costs` holds the costs of a call yet (the first call derives every route).
    costs_known: bool,
}

impl Dsdv {
    pub fn new(me: u32, params: DsdvParams) -> Dsdv {
        Dsdv {
            me,
            params,
            own_seq: 0,
            routes: Vec::new(),
            last_sent: None,
            route_changes: 0,
            scratch: Vec::new(),
            costs: Vec::new(),
            costs_spare: Vec::new(),
            changed: Vec::new(),
            costs_known: false,
        }
    }

    fn cost(&self, etx: &Etx, v: u32) -> Option<f64> {
        let e = etx.etx(v)?;
        Some(match self.params.metric {
            Metric::Etx => e,
            Metric::HopCount => 1.0,
        })
    }

    /// The route to `dst`, if any is known.
    pub fn route(&self, dst: u32) -> Option<&Route> {
        self.routes
            .binary_search_by_key(&dst, |r| r.dst)
            .ok()
            .map(|i| &self.routes[i])
    }

    /// Best next hop to `dst`.
    #[inline]
    pub fn next_hop(&self, dst: u32) -> Option<u32> {
        self.route(dst).and_then(|r| r.next_hops.first().copied())
    }

    /// All known routes, by destination.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// Number of route changes (next hop, reachability) since the last call.
    pub fn take_route_changes(&mut self) -> u64 {
        std::mem::take(&mut self.route_changes)
    }

    fn route_index(&mut self, dst: u32, now: SimTime) -> usize {
        match self.routes.binary_search_by_key(&dst, |r| r.dst) {
            Ok(i) => i,
            Err(i) => {
                self.routes.insert(
                    i,
                    Route {
                        dst,
                        seq: 0,
                        metric: f64::INFINITY,
                        next_hops: Vec::with_capacity(self.params.k),
                        adverts: Vec::new(),
                        seq_first_heard: now,
                        settling_ns: self.params.initial_settling.ns() as f64,
                        pending: None,
                    },
                );
                i
            }
        }
    }

    /// An update from neighbour `from` arrived with `entries`.
    pub fn on_update(&mut self, now: SimTime, from: u32, entries: &[Entry], etx: &Etx) {
        if self.cost(etx, from).is_none() {
            return; // no usable link to the sender (yet): its routes are of no use
        }
        for &(dst, seq, metric) in entries {
            if dst == self.me {
                continue;
            }
            let i = self.route_index(dst, now);
            let r = &mut self.routes[i];
            match r.adverts.iter_mut().find(|a| a.from == from) {
                Some(a) => {
                    a.seq = seq;
                    a.metric = metric;
                    a.heard = now;
                }
                None => r.adverts.push(Advert {
                    from,
                    seq,
                    metric,
                    heard: now,
                }),
            }
            self.recompute(i, now, etx);
        }
    }

    /// Link costs may have changed (an ETX update): re-derive the routes that can change.
    ///
    /// The ETX of a node's links changes only at its own probe instants
    /// ([`Etx::on_probe_tick`]), which is when this is called, so every route was last derived
    /// (here or by [`Dsdv::on_update`]) with the costs of the previous call. Deriving a route
    /// again from the same adverts and costs gives the same route, whatever the time, unless an
    /// advert has expired; so only the routes holding an advert from a neighbour whose cost
    /// changed (appeared, vanished or moved), or an expired advert, are derived again (every
    /// route at the first call, whose predecessor's costs are unknown) — the
    /// same routes as deriving every one, at a fraction of the cost where links are steady
    /// (issue 15: every probe tick used to re-derive every route, 31 % of a 108-node DPCLO
    /// run's time).
    pub fn on_links_changed(&mut self, now: SimTime, etx: &Etx) {
        let metric = self.params.metric;
        let mut new = std::mem::take(&mut self.costs_spare);
        new.clear();
        new.extend(etx.links().map(|(v, e)| {
            (
                v,
                match metric {
                    Metric::Etx => e,
                    Metric::HopCount => 1.0,
                },
            )
        }));
        let old = std::mem::replace(&mut self.costs, new);
        let new = &self.costs;
        // Both lists are sorted by neighbour: the changed neighbours come out sorted too.
        self.changed.clear();
        let (mut i, mut j) = (0, 0);
        loop {
            match (old.get(i), new.get(j)) {
                (Some(a), Some(b)) if a.0 == b.0 => {
                    if a.1.to_bits() != b.1.to_bits() {
                        self.changed.push(a.0);
                    }
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a.0 < b.0 => {
                    self.changed.push(a.0);
                    i += 1;
                }
                (Some(_), Some(b)) | (None, Some(b)) => {
                    self.changed.push(b.0);
                    j += 1;
                }
                (Some(a), None) => {
                    self.changed.push(a.0);
                    i += 1;
                }
                (None, None) => break,
            }
        }
        self.costs_spare = old;
        let all = !std::mem::replace(&mut self.costs_known, true);
        let timeout = self.params.route_timeout;
        for r in 0..self.routes.len() {
            let changed = &self.changed;
            let due = self.routes[r]
                .adverts
                .iter()
                .any(|a| a.heard + timeout <= now || changed.binary_search(&a.from).is_ok());
            if all || due {
                self.recompute(r, now, etx);
            }
        }
    }

    fn recompute(&mut self, i: usize, now: SimTime, etx: &Etx) {
        let timeout = self.params.route_timeout;
        let k = self.params.k;
        let mut scratch = std::mem::take(&mut self.scratch);
        self.routes[i].adverts.retain(|a| a.heard + timeout > now);
        let newest = self.routes[i].adverts.iter().map(|a| a.seq).max();
        let r = &self.routes[i];
        let old_next = r.next_hops.first().copied();
        let old_seq = r.seq;
        let old_metric = r.metric;
        // The newest sequence number known, ours included (a route we broke stays broken
        // until the destination's next number arrives).
        let mut seq = r.seq.max(newest.unwrap_or(0));
        // The route: least cost among neighbours advertising that number or the one before
        // (none while the newest is odd: broken).
        scratch.clear();
        for a in &r.adverts {
            if seq % 2 == 0 && a.seq.saturating_add(2) >= seq && a.metric.is_finite() {
                if let Some(c) = self.cost(etx, a.from) {
                    scratch.push((c + a.metric, a.from));
                }
            }
        }
        let best = scratch
            .iter()
            .copied()
            .min_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let r = &mut self.routes[i];
        let metric = match best {
            Some((m, _)) => m,
            None => {
                if r.metric.is_finite() && seq % 2 == 0 {
                    // We lost our way to it: break the route under the next odd number.
                    seq += 1;
                }
                f64::INFINITY
            }
        };
        // Settling time: delay from the first to the best advertisement of a sequence number.
        if seq != old_seq {
            r.seq_first_heard = now;
        } else if metric < r.metric && metric.is_finite() {
            let w = self.params.settling_weight;
            let sample = (now - r.seq_first_heard).ns() as f64;
            r.settling_ns = w * r.settling_ns + (1.0 - w) * sample;
        }
        r.seq = seq;
        r.metric = metric;
        // K best next hops: the route's, then downhill neighbours by total cost.
        r.next_hops.clear();
        if let Some((_, nh)) = best {
            r.next_hops.push(nh);
            if k > 1 {
                scratch.clear();
                for a in &r.adverts {
                    if a.from != nh
                        && a.metric.is_finite()
                        && a.metric < metric
                        && a.seq.saturating_add(2) >= seq
                    {
                        let c = match self.params.metric {
                            Metric::Etx => etx.etx(a.from),
                            Metric::HopCount => etx.etx(a.from).map(|_| 1.0),
                        };
                        if let Some(c) = c {
                            scratch.push((c + a.metric, a.from));
                        }
                    }
                }
                scratch.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
                r.next_hops
                    .extend(scratch.iter().take(k - 1).map(|&(_, v)| v));
            }
        }
        let new_next = r.next_hops.first().copied();
        if new_next != old_next {
            self.route_changes += 1;
            let hold = if new_next.is_none() {
                Some(now) // a broken route is advertised at once
            } else if seq != old_seq || old_next.is_none() {
                Some(now + SimTime((2.0 * r.settling_ns) as u64))
            } else if metric > old_metric {
                // Another next hop under the same sequence number and a worse metric: a
                // neighbour still counting on our old metric could route back through us.
                Some(now)
            } else {
                // Another, better next hop under the same sequence number: neighbours learn
                // only its metric, and metric drift is the periodic updates' business.
                None
            };
            if let Some(hold) = hold {
                r.pending = Some(r.pending.map_or(hold, |p| p.min(hold)));
            }
        }
        self.scratch = scratch;
    }

    /// When the next triggered update is due, if a change waits to be advertised.
    pub fn trigger_at(&self) -> Option<SimTime> {
        let due = self.routes.iter().filter_map(|r| r.pending).min()?;
        Some(match self.last_sent {
            Some(t) => due.max(t + self.params.min_trigger_gap),
            None => due,
        })
    }

    /// A periodic update: raises our sequence number and writes the full table.
    pub fn periodic(&mut self, now: SimTime, out: &mut Vec<Entry>) {
        self.own_seq += 2;
        self.dump(now, out);
    }

    /// A triggered update, if one is due by `now`; writes the full table.
    pub fn triggered(&mut self, now: SimTime, out: &mut Vec<Entry>) -> bool {
        if self.trigger_at().is_some_and(|t| t <= now) {
            self.dump(now, out);
            true
        } else {
            false
        }
    }

    fn dump(&mut self, now: SimTime, out: &mut Vec<Entry>) {
        out.clear();
        out.push((self.me, self.own_seq, 0.0));
        for r in &mut self.routes {
            if r.pending.is_some_and(|t| t <= now) {
                r.pending = None;
            }
            if r.seq > 0 || r.metric.is_finite() {
                out.push((r.dst, r.seq, r.metric));
            }
        }
        self.last_sent = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An estimator that knows links to `nbs` with ETX values `costs`.
    fn etx_with(nbs: &[(u32, f64)]) -> Etx {
        use crate::net::etx::EtxParams;
        let p = EtxParams {
            alpha: 0.0,
            ..EtxParams::default()
        };
        let mut e = Etx::new(p);
        // Hear all 10 probes of each neighbour, and have it report ours at the rate giving `c`.
        for s in 1..=10u32 {
            let t = SimTime::from_secs_f64(s as f64 - 0.5);
            for &(v, c) in nbs {
                e.on_probe(t, v, s, Some((10.0 / c).round() as u32));
            }
        }
        e.on_probe_tick(SimTime::from_secs_f64(10.0));
        e
    }

    #[test]
    fn re_deriving_only_routes_that_can_change_gives_the_routes_of_a_full_re_derivation() {
        // Random updates and probe instants at which links keep, change, gain or lose their
        // cost, adverts expiring on the way: after every step the routes (next hops, metrics,
        // sequence numbers, settling times, pending triggers) are those of deriving every
        // route again at every probe instant, as on_links_changed used to.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(15);
        for metric in [Metric::Etx, Metric::HopCount] {
            let params = DsdvParams {
                k: 2,
                metric,
                route_timeout: SimTime::from_secs_f64(20.0),
                ..DsdvParams::default()
            };
            let (mut fast, mut full) = (Dsdv::new(0, params), Dsdv::new(0, params));
            let mut etx = etx_with(&[(1, 1.0), (2, 2.0)]);
            let mut ticks = 0;
            for step in 0..600 {
                let t = SimTime::from_secs_f64(10.0 + step as f64 * 0.5);
                if step % 4 == 0 {
                    let costs = [1.0, 1.25, 2.0, 2.5, 5.0];
                    let mut nbs: Vec<(u32, f64)> = Vec::new();
                    for v in 1..=6u32 {
                        if rng.gen_bool(0.85) {
                            // most links keep their cost from one probe instant to the next
                            let keep = etx.etx(v).filter(|_| rng.gen_bool(0.7));
                            let c = keep.unwrap_or(costs[rng.gen_range(0..costs.len())]);
                            nbs.push((v, c));
                        }
                    }
                    etx = etx_with(&nbs);
                    fast.on_links_changed(t, &etx);
                    for i in 0..full.routes.len() {
                        full.recompute(i, t, &etx);
                    }
                    ticks += 1;
                } else {
                    let from = rng.gen_range(1..=6u32);
                    let entries: Vec<Entry> = (0..3)
                        .map(|_| {
                            let seq = 2 * rng.gen_range(0..6u32) + u32::from(rng.gen_bool(0.1));
                            let m = if seq % 2 == 1 {
                                f64::INFINITY
                            } else {
                                rng.gen_range(0..8) as f64 * 0.5
                            };
                            (rng.gen_range(7..16u32), seq, m)
                        })
                        .collect();
                    fast.on_update(t, from, &entries, &etx);
                    full.on_update(t, from, &entries, &etx);
                }
                assert_eq!(
                    format!("{:?}", fast.routes),
                    format!("{:?}", full.routes),
                    "{metric:?}, step {step}"
                );
                assert_eq!(
                    fast.trigger_at(),
                    full.trigger_at(),
                    "{metric:?}, step {step}"
                );
            }
            assert_eq!(ticks, 150);
            assert!(fast.routes.len() > 5, "the run built routes");
        }
    }

    #[test]
    fn picks_the_least_etx_sum_and_k_downhill_next_hops() {
        let etx = etx_with(&[(1, 1.0), (2, 2.0), (3, 1.0)]);
        for &(v, c) in &[(1, 1.0), (2, 2.0), (3, 1.0)] {
            assert!((etx.etx(v).unwrap() - c).abs() < 1e-9);
        }
        let mut d = Dsdv::new(
            0,
            DsdvParams {
                k: 2,
                ..DsdvParams::default()
            },
        );
        let t = SimTime::from_secs_f64(10.0);
        d.on_update(t, 1, &[(9, 2, 2.5)], &etx); // via 1: 3.5, downhill of our 3
        d.on_update(t, 2, &[(9, 2, 1.0)], &etx); // via 2: 3
        d.on_update(t, 3, &[(9, 2, 6.0)], &etx); // via 3: 7, and uphill of our 3
        let r = d.route(9).unwrap();
        assert_eq!(r.metric, 3.0);
        assert_eq!(r.next_hops, vec![2, 1]);
        // A newer sequence number supersedes older adverts even with a worse metric.
        d.on_update(t, 3, &[(9, 6, 6.0)], &etx);
        assert_eq!(d.next_hop(9), Some(3));
        assert_eq!(d.route(9).unwrap().metric, 7.0);
    }

    #[test]
    fn losing_the_only_next_hop_breaks_the_route_under_an_odd_number() {
        let etx = etx_with(&[(1, 1.0)]);
        let mut d = Dsdv::new(0, DsdvParams::default());
        let t = SimTime::from_secs_f64(10.0);
        d.on_update(t, 1, &[(5, 8, 2.0)], &etx);
        assert_eq!(d.next_hop(5), Some(1));
        let silent = etx_with(&[]);
        d.on_links_changed(t, &silent);
        let r = d.route(5).unwrap();
        assert_eq!(
            (r.seq, r.metric.is_infinite(), r.next_hops.len()),
            (9, true, 0)
        );
        assert!(
            d.trigger_at().is_some_and(|at| at <= t),
            "advertised at once"
        );
        let mut out = vec![];
        assert!(d.triggered(t, &mut out));
        assert!(out.contains(&(5, 9, f64::INFINITY)));
    }
}
