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
//! - the **route**: among *feasible* neighbours advertising the newest (even) sequence number
//!   or the one before it, the one with the least `link cost + advertised metric`. Plain DSDV takes the
//!   newest number only, which over lossy links makes a node follow whichever path happened to
//!   deliver the newest number first (a lost direct update sends it the long way for a whole
//!   period); De Couto et al. (§5) saw the same and delayed route use by the settling time. We
//!   take the simpler two-generation rule. An odd newest number (a break) still wins: the
//!   route stays broken until the destination's next even number arrives. The route is
//!   advertised under the number of the advert it follows (its *label*), not the newest.
//!   Feasible (Perkins & Bhagwat: a route is replaced only by a newer sequence number or a
//!   better metric under the same one; the test is Babel's feasibility condition, RFC 8966
//!   §3.5.1): the route's current next hop (its updates are taken whatever they say), or an
//!   advert `(number, metric)` below the route's feasibility distance, the least
//!   `(label, metric)` it has held, a newer number being less whatever the metric (kept
//!   through a break). Loop-free by construction (RFC 8966 §2.4): a node's feasibility
//!   distance only falls, and is at most what it advertises; a node takes a new next hop only
//!   for an advert below its own distance, so its next hop's distance stays below its own,
//!   and a cycle of next hops would need a distance below itself. The older number's adverts
//!   remain candidates only while the route has not held the newer number, or from the
//!   current next hop: a node whose direct update was lost keeps its short path until that
//!   path's newer number arrives. A neighbour that learnt its route through us advertises at
//!   least our metric plus a link under our label or an older one, so when our next hop's
//!   advert expires or its link fails the route breaks (next odd number) instead of falling
//!   back on such a neighbour. On `scenarios/dpclo-fig4.toml` (draws 1-10, 200 s), next hops
//!   looped for 2022 pair-seconds with ETX and 799 with hop count with no feasibility rule,
//!   87 and 0 with a feasibility distance per sequence number, and 0 and 0 with this one
//!   (pair-seconds without a route 962 and 1516 before it, 837 and 1303 after). The
//!   87 came from the two numbers mixing (draw 7, 161 s, towards A: E followed C's advert of
//!   number 18 but advertised it as 20, the newest; C had never held 20, so E's advert was
//!   feasible for it, and C and E routed through each other). Only the first next hop is
//!   held by this rule; the K − 1 others by the downhill rule below;
//! - the **1-hop route to a neighbour** is kept by hearing it: its ETX probes carry its own
//!   sequence number ([`PROBE_SEQ_BYTES`]) and count as its advert of itself (ns-2's
//!   `Agent/DSDV` likewise times out only routes to neighbours, and only when it stops hearing
//!   them). Updates go out every 15 s, and over a lossy link three in a row can be lost while
//!   probes arrive every second: on the same runs D had no route to its neighbour F for 54 s
//!   (draw 7, hop count); with the probes carrying the number, no such gap remains;
//! - the **K best next hops**: the route's next hop, then the other neighbours in order of
//!   `link cost + advertised metric`, among the same candidates, restricted to *downhill*
//!   neighbours (advertised metric below our own). The downhill rule keeps every choice among the K loop-free (the metric falls
//!   strictly along any path while the adverts are current; stale ones can break this, the
//!   feasibility rule does not cover the K − 1 others: requiring it of them starved a flow in
//!   `tests/dpclo.rs`'s Fig. 7 run), which a scheduler picking any of them per packet needs; where the
//!   K shortest paths' first hops are all downhill, the K next hops are exactly those of the K
//!   shortest paths (tested against Yen's algorithm in `tests/routing.rs`).
//!
//! When a neighbour's link becomes unusable or silent, routes through it that have no other
//! feasible next hop at the newest sequence number break: their metric becomes infinite under the next
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
//! **Incremental updates** ([`DsdvParams::incremental`], off by default): a triggered update
//! carries our own entry and only the routes whose change triggered an update since the last
//! periodic (full) dump and whose hold is over, as DSDV's incremental packets carry "the
//! information changed since the last full dump" (Perkins & Bhagwat §3) and ns-2's
//! `Agent/DSDV::makeUpdate` sends its triggered updates; when more than a third of the routes
//! (and more than 3) are in it, the whole table goes instead (ns-2's rule; ns-2 then also counts
//! it as the periodic update, which here keeps its own schedule). Off, every update is a full
//! dump, as before. Full dumps are split over several packets when the table exceeds one MSDU;
//! advertisements are timed out after `route_timeout`.
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
/// A node's own sequence number, carried in its ETX probes when DSDV runs (4 bytes): a probe
/// heard is the sender's advert of itself, so a neighbour heard every second keeps its 1-hop
/// route under its newest number even when its updates are lost.
pub const PROBE_SEQ_BYTES: u32 = 4;
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
    /// Triggered updates carry only the changed routes (see the module's doc); false: every
    /// update is a full dump.
    pub incremental: bool,
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
            incremental: false,
        }
    }
}

/// One entry of an update: destination, its sequence number, metric (infinite = broken).
pub type Entry = (u32, u32, f64);

/// A neighbour's latest advert for one route: one cell of [`Dsdv`]'s advert table (16 bytes,
/// four to a cache line). The sender is the cell's column (its link slot), so it is not
/// stored; when it was heard is kept apart ([`Dsdv::heard`]).
#[derive(Debug, Clone, Copy)]
struct Cell {
    metric: f64,
    seq: u32,
    /// Whether the neighbour advertised the route (and the advert has not been dropped).
    present: bool,
    /// Whether the sender is one of the route's next hops.
    chosen: bool,
}

/// A cell no advert has filled.
const EMPTY: Cell = Cell {
    metric: f64::INFINITY,
    seq: 0,
    present: false,
    chosen: false,
};

/// No route (in [`Dsdv::by_dst`]) or no link slot (in [`Dsdv::slot_of`]).
const NONE: u32 = u32::MAX;

/// A neighbour's link cost as of the last [`Dsdv::on_links_changed`] (infinite: unusable), and
/// whether that call changed it.
#[derive(Debug, Clone, Copy)]
struct Link {
    cost: f64,
    changed: bool,
    /// The neighbour.
    nb: u32,
    /// The cost read at the last call, before it is compared with `cost`.
    next: f64,
}

/// A route to one destination. `repr(C)`, aligned to a cache line, the fields an advert heard
/// reads first: every entry of every update heard reads the route's number, first next hop,
/// metric, oldest advert and K-th total ([`Route::unchanged_by`], [`Route::only_others_by`],
/// [`Dsdv::first_follows`]), and so does every route at a probe instant
/// ([`Dsdv::on_links_changed`]), so they share the first of its two lines with the count of
/// next hops (laid out by Rust, they were at both ends of a 120-byte route, two lines or
/// three). The next hops themselves are in [`Dsdv::hops`].
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct Route {
    /// Newest sequence number known (odd: broken).
    pub seq: u32,
    /// The first of the next hops ([`NONE`]: none), read without [`Dsdv::hops`]: at every
    /// probe instant each route asks for its first next hop, and that read (then from the
    /// route's own `Vec`, elsewhere in memory) missed the cache for a sixth of
    /// `on_links_changed`'s time in a 108-node run. Only a derivation changes it
    /// ([`Dsdv::recompute`]).
    first: u32,
    /// The route's row in [`Dsdv::cells`], which is its index in [`Dsdv::routes`]: rows are in
    /// destination order, as routes are (a new destination moves the rows after it).
    row: u32,
    /// The sequence number of the advert the route follows, which is the number it is
    /// advertised under while not broken (the newest, `seq`, or the one before it).
    label: u32,
    pub metric: f64,
    /// No advert was heard before this instant (a lower bound: refreshed adverts are newer), so
    /// none has expired while `oldest + route_timeout` is in the future.
    oldest: SimTime,
    /// `link cost + advertised metric` of the last of the next hops when all K are taken.
    last_total: f64,
    /// Feasibility distance (Babel, RFC 8966 §3.5.1): the least `(label, metric)` the route
    /// has held, `(fd_seq, fd_metric)`, a newer number being less whatever the metric (kept
    /// through a break). An advert is feasible, and can become a next hop, only below it
    /// ([`Route::feasible`]). Two fields, so that the hop count fits in the tuple's padding.
    fd_seq: u32,
    /// How many next hops the route has (at most K; 0 when broken): the first `hop_count` of
    /// its K places in [`Dsdv::hops`]. In this line because the derivations' shortcuts test it
    /// for every advert they take ([`rechoose_others`], [`Dsdv::first_follows`]).
    hop_count: u32,
    fd_metric: f64,
    /// With K = 1: at most the least total (`link cost + advertised metric`) of every advert
    /// the route holds but its next hop's, finite or not, fresh or stale (−∞: not known).
    /// A derivation sets it, an advert heard can only lower it, a probe instant lowers it by
    /// the largest fall of a link cost ([`Dsdv::cost_follows`] skips its scan of the changed
    /// links when the next hop's new total stays below it).
    runner_up: f64,
    pub dst: u32,
    /// When the newest sequence number was first heard, and its best metric so far.
    seq_first_heard: SimTime,
    /// Weighted average settling time (ns).
    settling_ns: f64,
    /// A change to advertise in a triggered update, not before this time.
    pending: Option<SimTime>,
    /// A change that triggers updates happened since the last full dump: incremental
    /// updates carry the route once its hold is over.
    advert: bool,
}

// What an advert heard reads stays within the route's first line.
const _: () = assert!(std::mem::offset_of!(Route, runner_up) + std::mem::size_of::<f64>() <= 64);

/// `(total cost, neighbour)` ordered by cost, then id: the order in which next hops are chosen.
/// Costs are sums of link costs (at least 1) and advertised metrics (at least 0), or infinite:
/// never NaN nor −0, so the float comparisons order them as `f64::total_cmp` does, in fewer
/// instructions (it was a sixth of a derivation's).
#[inline]
fn before(a: (f64, u32), b: (f64, u32)) -> bool {
    debug_assert!(!a.0.is_nan() && !b.0.is_nan() && a.0.to_bits() != (-0.0f64).to_bits());
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// Keeps in `kept`, sorted by [`before`], the `n` least keys offered (`key` is offered now):
/// the K − 1 next hops after the first, kept in order as they come, no sort.
#[inline]
fn keep_least(kept: &mut Vec<(f64, u32)>, key: (f64, u32), n: usize) {
    if kept.len() == n {
        if !before(key, kept[n - 1]) {
            return;
        }
        kept.pop();
    }
    // Moved up from the end (at most K − 1 places), not inserted: `Vec::insert` moved the
    // tail by a call to `memmove`.
    kept.push(key);
    let mut j = kept.len() - 1;
    while j > 0 && before(key, kept[j - 1]) {
        kept[j] = kept[j - 1];
        j -= 1;
    }
    kept[j] = key;
}

/// The K places of row `row`'s next hops in [`Dsdv::hops`].
#[inline]
fn places(row: usize, k: usize) -> std::ops::Range<usize> {
    row * k..(row + 1) * k
}

/// Appends the K − 1 others chosen in `kept` (best first) to the route's next hops (`hops`,
/// its K places), which hold the first or nothing, sets `last_total`, and marks the cells of
/// all of them chosen (the caller cleared the old marks).
fn take_others(
    r: &mut Route,
    hops: &mut [u32],
    row: &mut [Cell],
    slot_of: &[u32],
    k: usize,
    kept: &[(f64, u32)],
) {
    debug_assert!(r.hop_count as usize + kept.len() <= k && hops.len() == k);
    let mut n = r.hop_count as usize;
    for &(_, v) in kept {
        hops[n] = v;
        n += 1;
    }
    r.hop_count = n as u32;
    r.last_total = if r.hop_count as usize == k && k > 1 {
        kept[k - 2].0
    } else {
        f64::INFINITY
    };
    debug_assert!(row.iter().all(|c| !c.chosen), "a mark without its next hop");
    for &v in &hops[..r.hop_count as usize] {
        row[slot_of[v as usize] as usize].chosen = true;
    }
}

/// The K − 1 next hops after the first (`hops`, the route's K places, holds the first, or
/// nothing when the route is broken): downhill neighbours by total cost ([`keep_least`]), and
/// the cells of all K marked chosen. `row` is the route's row of the table, `links` the link
/// slots. The cells marked chosen are those of the route's next hops when this is called (the
/// marks follow the next hops everywhere), so only theirs are cleared, not the whole row's.
fn choose_others(
    r: &mut Route,
    hops: &mut [u32],
    row: &mut [Cell],
    links: &[Link],
    slot_of: &[u32],
    k: usize,
    kept: &mut Vec<(f64, u32)>,
) {
    for &v in &hops[..r.hop_count as usize] {
        row[slot_of[v as usize] as usize].chosen = false;
    }
    r.hop_count = r.hop_count.min(1);
    kept.clear();
    if r.hop_count == 1 && k > 1 {
        let nh = hops[0];
        let (metric, seq) = (r.metric, r.seq);
        for (c, l) in row.iter().zip(links) {
            if c.present
                && l.nb != nh
                && c.metric.is_finite()
                && c.metric < metric
                && c.seq.saturating_add(2) >= seq
                && l.cost.is_finite()
            {
                keep_least(kept, (l.cost + c.metric, l.nb), k - 1);
            }
        }
    }
    take_others(r, hops, row, slot_of, k, kept);
}

/// The K − 1 next hops after the first, chosen again after one advert of the row changed (the
/// one in link slot `s`; `was`: whether its sender was one of them) and nothing else: as
/// [`choose_others`] would choose them, without reading the rest of the row (half of DSDV's
/// time in a 108-node run was that read, for one advert changed). The K − 1 are the least
/// candidates in a strict order and every other candidate comes after the last of them, so the
/// changed advert can only move among them, enter them (the last then leaving) or leave them;
/// when it leaves while all K are taken, the one to come in is somewhere in the row, and this
/// returns false with the route untouched.
#[allow(clippy::too_many_arguments)]
fn rechoose_others(
    r: &mut Route,
    hops: &mut [u32],
    row: &mut [Cell],
    links: &[Link],
    slot_of: &[u32],
    k: usize,
    s: usize,
    was: bool,
    kept: &mut Vec<(f64, u32)>,
) -> bool {
    let (c, l) = (row[s], links[s]);
    let candidate = c.present
        && c.metric.is_finite()
        && c.metric < r.metric
        && c.seq.saturating_add(2) >= r.seq
        && l.cost.is_finite();
    let key = (l.cost + c.metric, l.nb);
    let n = r.hop_count as usize;
    let last = (n == k).then(|| (r.last_total, hops[k - 1]));
    let within = candidate && last.is_none_or(|x| !before(x, key));
    if was && last.is_some() && !within {
        return false; // it leaves: the next of the row comes in
    }
    if !was && !within {
        return true; // it stays out
    }
    kept.clear();
    for &v in &hops[1..n] {
        if v != l.nb {
            let t = slot_of[v as usize] as usize;
            kept.push((links[t].cost + row[t].metric, v));
        }
    }
    if candidate {
        let at = kept.iter().position(|&x| before(key, x));
        kept.insert(at.unwrap_or(kept.len()), key);
    }
    if kept.len() == k {
        // It came in: the last leaves.
        let (_, v) = kept[k - 1];
        row[slot_of[v as usize] as usize].chosen = false;
        kept.truncate(k - 1);
    }
    row[s].chosen = candidate;
    for (h, &(_, v)) in hops[1..].iter_mut().zip(kept.iter()) {
        *h = v;
    }
    r.hop_count = 1 + kept.len() as u32;
    r.last_total = if r.hop_count as usize == k {
        kept[k - 2].0
    } else {
        f64::INFINITY
    };
    true
}

impl Route {
    /// Whether an advert `(seq, metric)` is below the feasibility distance: a newer number
    /// than it, or the same with a lower metric (RFC 8966 §3.5.1).
    #[inline]
    fn feasible(&self, seq: u32, metric: f64) -> bool {
        seq > self.fd_seq || (seq == self.fd_seq && metric < self.fd_metric)
    }

    /// The route holds `metric` under the even number `seq`: the feasibility distance becomes
    /// the least of it and `(seq, metric)`.
    #[inline]
    fn note_fd(&mut self, seq: u32, metric: f64) {
        if seq > self.fd_seq {
            (self.fd_seq, self.fd_metric) = (seq, metric);
        } else if seq == self.fd_seq {
            self.fd_metric = self.fd_metric.min(metric);
        }
    }

    /// Whether an advert `(seq, metric)` over a link of cost `cost`, not one of the route's K
    /// next hops, would be one if the route were derived again: a candidate at least as good
    /// as the best, or, downhill, at least as good as the K-th. The next hops are the least
    /// in a strict order on `(cost, neighbour)`, so an advert that stays above them cannot
    /// enter (a tie on cost is left to the derivation), and one that was not among them can
    /// leave or worsen freely. Holds while the route is not broken.
    #[inline]
    fn could_enter(&self, k: usize, cost: f64, seq: u32, metric: f64) -> bool {
        if seq.saturating_add(2) < self.seq || !metric.is_finite() || !cost.is_finite() {
            return false; // not a candidate
        }
        // Finite; the route's metric and `last_total` are finite or infinite, never NaN.
        let total = cost + metric;
        // The new best (the route appears, if it had none), or a tie.
        total <= self.metric
            // Downhill, and a K-th next hop (`last_total` is infinite while fewer are known).
            || (k > 1 && metric < self.metric && total <= self.last_total)
    }

    /// Whether deriving the route again, after the advert of a neighbour (link cost `cost`)
    /// went from `old` (its sequence number, metric, and whether it was one of the next hops)
    /// to `(seq, metric)` at `now`, would leave it exactly as it is. The route was derived
    /// from its other adverts and the same link costs (a derivation depends on nothing else,
    /// and deriving twice from the same inputs changes nothing), so it is unchanged when no
    /// advert has expired, the sequence number does not move, and the advert neither was nor
    /// becomes one of the K next hops ([`Route::could_enter`]). With K = 1, a changed advert
    /// of a neighbour `from` other than the next hop that leaves the route as it is lowers the
    /// route's [`Route::runner_up`] to its total if that is less.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn unchanged_by(
        &mut self,
        now: SimTime,
        timeout: SimTime,
        k: usize,
        (cost, from): (f64, u32),
        old: Option<(u32, f64, bool)>,
        seq: u32,
        metric: f64,
    ) -> bool {
        if self.oldest + timeout <= now || seq > self.seq {
            return false; // an advert may have expired, or a newer number arrived
        }
        let unchanged = match old {
            Some((s, m, _)) if s == seq && m.to_bits() == metric.to_bits() => return true, // a repeat
            _ if self.seq % 2 == 1 => true, // broken until a newer number arrives
            Some((_, _, true)) => false,
            _ => !self.could_enter(k, cost, seq, metric),
        };
        // A changed advert the route keeps out: below the runner-up, it is the new one (a
        // route derived again sets its runner-up afresh).
        if unchanged && k == 1 && from != self.first {
            // The lesser without a branch (`minsd`; `f64::min`'s NaN rule costs more).
            let total = cost + metric;
            self.runner_up = if total < self.runner_up {
                total
            } else {
                self.runner_up
            };
        }
        unchanged
    }
}

impl Route {
    /// Whether, when [`Route::unchanged_by`] does not hold, deriving the route again after the
    /// advert of neighbour `key.1` (total `key.0`) changed to `(seq, metric)` at `now` can
    /// change only the K − 1 next hops after the first: no advert has expired, the sequence
    /// number does not move, the route is not broken, the advert is not that of the first
    /// next hop and does not come before it. The first next hop is the least feasible
    /// candidate; the others' adverts and the link costs are those it was chosen from, and
    /// one that was not it and stays above it cannot displace it, so the metric, label,
    /// feasibility distance and settling state stay as they are too.
    #[inline]
    fn only_others_by(
        &self,
        now: SimTime,
        timeout: SimTime,
        k: usize,
        key: (f64, u32),
        seq: u32,
        metric: f64,
    ) -> bool {
        let nh = self.first;
        if nh == NONE {
            return false; // broken or unknown: the advert may make it
        }
        k > 1
            && self.oldest + timeout > now
            && seq <= self.seq
            && key.1 != nh
            && !(metric.is_finite() && before(key, (self.metric, nh)))
    }
}

/// A [`Route::runner_up`] after link costs fell by at most `fall`: −∞ when a link became
/// usable (∞ − ∞ would be NaN, no bound at all).
#[inline]
fn lowered(bound: f64, fall: f64) -> f64 {
    if fall == f64::INFINITY {
        f64::NEG_INFINITY
    } else {
        bound - fall
    }
}

/// `count` runs of `old_len` values in `old` laid out again as runs of `new_len` (at least
/// `old_len`), each run's new tail `fill`: the advert table's rows or its times' columns grown.
fn widened<T: Copy>(old: &[T], old_len: usize, new_len: usize, count: usize, fill: T) -> Vec<T> {
    let mut out = vec![fill; count * new_len];
    if old_len > 0 {
        for (new, old) in out.chunks_exact_mut(new_len).zip(old.chunks_exact(old_len)) {
            new[..old_len].copy_from_slice(old);
        }
    }
    out
}

#[derive(Debug, Clone)]
pub struct Dsdv {
    pub me: u32,
    pub params: DsdvParams,
    own_seq: u32,
    /// Sorted by destination (the order updates list them in).
    routes: Vec<Route>,
    /// The index in `routes` of the route to each destination, by destination id ([`NONE`]:
    /// none yet): an entry heard finds its route without a search.
    by_dst: Vec<u32>,
    /// The latest advert of every neighbour for every route, in one table: a row per route
    /// ([`Route::row`]), a column per link slot, `stride` cells a row. An update walks one
    /// column down at a fixed step (rows are in destination order, as updates list them; one
    /// cache miss per entry heard was the cost of DSDV when each route kept its adverts in a
    /// list of its own; a software prefetch of the cells a few entries ahead measured no
    /// better), and finds an entry's cell from the route's index alone, without waiting for a
    /// load of the route (in the order destinations were first heard, rows were scattered and
    /// the route's row had to be read first: 15 % more of `on_update`'s time in a 108-node run);
    /// a derivation reads one row, a few contiguous cache lines.
    /// Columns are added when a neighbour first gets a usable link (rare: the table is re-laid
    /// with a column to spare); rows when a destination is first heard.
    cells: Vec<Cell>,
    stride: usize,
    /// Every route's next hops, best first: K places a route, by row ([`Route::hop_count`] of
    /// them taken). One dense array, walked in the rows' order as an update's entries are, where
    /// each route's own `Vec` was a block of its own elsewhere in the heap: reading a route's
    /// other next hops missed the cache (the line of `rechoose_others` that read them and the
    /// one that tested their count were 8 % of the samples of DPCLO's first 100 s in
    /// `benches/dpclo-fig8.toml`), and with K = 1 testing the count read the route's second line.
    hops: Vec<u32>,
    /// When each cell's advert was heard, by column (`heard_rows` a column): every entry heard
    /// writes one, and an update's entries write down one column, so these writes stay
    /// sequential; a derivation reads them only when an advert may have expired.
    heard: Vec<SimTime>,
    heard_rows: usize,
    last_sent: Option<SimTime>,
    /// The earliest of the routes' pending changes (kept so that asking when the next
    /// triggered update is due, after every update heard, does not visit every route).
    pending: Option<SimTime>,
    /// Route changes (next hop or reachability) since the last call to `take_route_changes`.
    route_changes: u64,
    /// The next hops beyond the first being chosen, best first.
    scratch: Vec<(f64, u32)>,
    /// A derivation's candidates for the next hops after the first: `(total cost,
    /// neighbour)` and the advertised metric ([`Dsdv::recompute`]).
    candidates: Vec<((f64, u32), f64)>,
    /// The slots whose cost the last [`Dsdv::on_links_changed`] changed.
    changed_slots: Vec<u32>,
    /// Link costs by slot: every neighbour that had a usable link at some
    /// [`Dsdv::on_links_changed`] keeps its slot (its column of `cells`), so an advert finds its
    /// sender's cost without a search.
    links: Vec<Link>,
    /// The slot of each neighbour, by neighbour id ([`NONE`]: never usable).
    slot_of: Vec<u32>,
    /// Whether `links` holds the costs of an estimator yet.
    costs_known: bool,
    /// The largest fall of a link cost at the last [`Dsdv::on_links_changed`] (0: none; ∞: a
    /// link became usable), by which every route's [`Route::runner_up`] is lowered.
    cost_fall: f64,
    /// Route derivations run (tests count how often the shortcuts spare one).
    #[cfg(test)]
    derivations: u64,
    /// Next hops chosen again from those held and one changed advert ([`rechoose_others`]).
    #[cfg(test)]
    rechosen: u64,
    /// Routes that took their first next hop's advert without a derivation
    /// ([`Dsdv::first_follows`]).
    #[cfg(test)]
    followed: u64,
    /// Routes that took their first next hop's new link cost without a derivation
    /// ([`Dsdv::cost_follows`]).
    #[cfg(test)]
    cost_followed: u64,
    /// Of those, the ones that skipped the scan of the changed links ([`Route::runner_up`]).
    #[cfg(test)]
    cost_cleared: u64,
    /// Of those, with K > 1, the ones whose other next hops' costs changed too
    /// ([`Dsdv::others_follow`]).
    #[cfg(test)]
    others_followed: u64,
    /// Routes whose next hop an advert heard took over without a derivation, with K = 1
    /// ([`Dsdv::first_overtaken`]).
    #[cfg(test)]
    overtaken: u64,
}

impl Dsdv {
    pub fn new(me: u32, params: DsdvParams) -> Dsdv {
        Dsdv {
            me,
            params,
            own_seq: 0,
            routes: Vec::new(),
            by_dst: Vec::new(),
            cells: Vec::new(),
            stride: 0,
            hops: Vec::new(),
            heard: Vec::new(),
            heard_rows: 0,
            last_sent: None,
            pending: None,
            route_changes: 0,
            scratch: Vec::new(),
            candidates: Vec::new(),
            changed_slots: Vec::new(),
            links: Vec::new(),
            slot_of: Vec::new(),
            costs_known: false,
            cost_fall: 0.0,
            #[cfg(test)]
            derivations: 0,
            #[cfg(test)]
            rechosen: 0,
            #[cfg(test)]
            followed: 0,
            #[cfg(test)]
            cost_followed: 0,
            #[cfg(test)]
            cost_cleared: 0,
            #[cfg(test)]
            others_followed: 0,
            #[cfg(test)]
            overtaken: 0,
        }
    }

    /// The index of the route to `dst` in `routes`, if any.
    #[inline]
    fn index(&self, dst: u32) -> Option<usize> {
        match self.by_dst.get(dst as usize) {
            Some(&i) if i != NONE => Some(i as usize),
            _ => None,
        }
    }

    /// The route to `dst`, if any is known.
    #[inline]
    pub fn route(&self, dst: u32) -> Option<&Route> {
        self.index(dst).map(|i| &self.routes[i])
    }

    /// The K best next hops of `route` (one of [`Dsdv::routes`]), best first (empty when
    /// broken).
    #[inline]
    pub fn hops_of(&self, route: &Route) -> &[u32] {
        &self.hops[places(route.row as usize, self.params.k)][..route.hop_count as usize]
    }

    /// The K best next hops to `dst`, best first (empty when there is no route or it is
    /// broken).
    #[inline]
    pub fn next_hops(&self, dst: u32) -> &[u32] {
        self.route(dst).map_or(&[], |r| self.hops_of(r))
    }

    /// Best next hop to `dst`.
    #[inline]
    pub fn next_hop(&self, dst: u32) -> Option<u32> {
        self.route(dst)
            .and_then(|r| (r.first != NONE).then_some(r.first))
    }

    /// All known routes, by destination.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// Number of route changes (next hop, reachability) since the last call.
    pub fn take_route_changes(&mut self) -> u64 {
        std::mem::take(&mut self.route_changes)
    }

    /// The index of the route to `dst`, made (with an empty row of adverts) if there is none.
    fn route_index(&mut self, dst: u32, now: SimTime) -> usize {
        if let Some(i) = self.index(dst) {
            return i;
        }
        let i = self.routes.partition_point(|r| r.dst < dst);
        let rows = self.routes.len();
        self.routes.insert(
            i,
            Route {
                dst,
                seq: 0,
                metric: f64::INFINITY,
                hop_count: 0,
                first: NONE,
                row: i as u32,
                oldest: now,
                last_total: f64::INFINITY,
                label: 0,
                fd_seq: 0,
                fd_metric: f64::INFINITY,
                runner_up: f64::NEG_INFINITY,
                seq_first_heard: now,
                settling_ns: self.params.initial_settling.ns() as f64,
                pending: None,
                advert: false,
            },
        );
        // Row `i` too: the rows after it move down one, in the table and in every column of
        // `heard`.
        let at = i * self.stride;
        self.cells
            .splice(at..at, std::iter::repeat_n(EMPTY, self.stride));
        let k = self.params.k;
        self.hops.splice(i * k..i * k, std::iter::repeat_n(NONE, k));
        if rows >= self.heard_rows {
            // An eighth more room (and 4), not twice: 108 routes held 128 rows a column, and
            // DSDV's tables are most of what a 108-node run keeps in the cache (a denser
            // table and `heard`: 2 % of the 800 s DPCLO and TCP-SACK runs).
            self.relay_heard(self.heard_rows + self.heard_rows / 8 + 4);
        }
        for column in self.heard.chunks_exact_mut(self.heard_rows) {
            column.copy_within(i..rows, i + 1);
            column[i] = SimTime(0);
        }
        if self.by_dst.len() <= dst as usize {
            self.by_dst.resize(dst as usize + 1, NONE);
        }
        for (j, r) in self.routes.iter_mut().enumerate().skip(i) {
            r.row = j as u32;
            self.by_dst[r.dst as usize] = j as u32;
        }
        i
    }

    /// The adverts of route `i` still held (tests compare them with the reference's).
    #[cfg(test)]
    fn held_adverts(&self, i: usize) -> Vec<(u32, u32, f64, SimTime)> {
        let row = self.routes[i].row as usize;
        let cells = &self.cells[row * self.stride..row * self.stride + self.links.len()];
        cells
            .iter()
            .zip(&self.links)
            .enumerate()
            .filter(|(_, (c, _))| c.present)
            .map(|(s, (c, l))| (l.nb, c.seq, c.metric, self.heard[s * self.heard_rows + row]))
            .collect()
    }

    /// The senders whose cells of route `i` are marked chosen, sorted (tests hold them to the
    /// next hops: a stale mark costs derivations, never a wrong route, so no route shows it).
    #[cfg(test)]
    fn marked_chosen(&self, i: usize) -> Vec<u32> {
        let row = self.routes[i].row as usize;
        let cells = &self.cells[row * self.stride..row * self.stride + self.links.len()];
        let mut v: Vec<u32> = cells
            .iter()
            .zip(&self.links)
            .filter(|(c, _)| c.chosen)
            .map(|(_, l)| l.nb)
            .collect();
        v.sort_unstable();
        v
    }

    /// An update from neighbour `from` arrived with `entries`.
    ///
    /// Link costs are those of the last [`Dsdv::on_links_changed`] (read from `etx` only if
    /// there was none yet). Each entry re-derives its route only when the route can change:
    /// not when the advert repeats the one held, nor when it neither was nor becomes one of
    /// the route's next hops ([`Route::unchanged_by`]); in a 108-node network most entries
    /// are such (issue 15: deriving the route for every entry heard was 38 % of a DPCLO run).
    pub fn on_update(&mut self, now: SimTime, from: u32, entries: &[Entry], etx: &Etx) {
        if !self.costs_known {
            self.on_links_changed(now, etx);
        }
        let slot = match self.slot_of.get(from as usize) {
            Some(&s) if s != NONE => s as usize,
            _ => return, // no usable link to the sender (yet): its routes are of no use
        };
        let cost = self.links[slot].cost;
        if !cost.is_finite() {
            return;
        }
        let (timeout, k) = (self.params.route_timeout, self.params.k);
        for &(dst, seq, metric) in entries {
            if dst == self.me {
                continue;
            }
            let i = self.route_index(dst, now);
            // The route's row is its index: the cell's address waits for no load of the route.
            let row = i;
            debug_assert_eq!(self.routes[i].row as usize, row);
            let c = &mut self.cells[row * self.stride + slot];
            let old = c.present.then_some((c.seq, c.metric, c.chosen));
            *c = Cell {
                metric,
                seq,
                present: true,
                chosen: c.present && c.chosen,
            };
            self.heard[slot * self.heard_rows + row] = now;
            let r = &mut self.routes[i];
            if r.unchanged_by(now, timeout, k, (cost, from), old, seq, metric) {
                continue;
            }
            if r.only_others_by(now, timeout, k, (cost + metric, from), seq, metric) {
                let links = &self.links[..];
                let r = &mut self.routes[i];
                let hops = &mut self.hops[places(row, k)];
                let row = &mut self.cells[row * self.stride..row * self.stride + links.len()];
                let was = old.is_some_and(|o| o.2);
                let (slot_of, kept) = (&self.slot_of[..], &mut self.scratch);
                if !rechoose_others(r, hops, row, links, slot_of, k, slot, was, kept) {
                    choose_others(r, hops, row, links, slot_of, k, kept);
                } else {
                    #[cfg(test)]
                    {
                        self.rechosen += 1;
                    }
                }
            } else if self.first_follows(i, now, slot, cost, seq, metric) {
                #[cfg(test)]
                {
                    self.followed += 1;
                }
            } else if k == 1 && self.first_overtaken(i, now, slot, (cost, from), seq, metric) {
                #[cfg(test)]
                {
                    self.overtaken += 1;
                }
            } else {
                self.recompute(i, now, seq);
            }
        }
    }

    /// With K = 1, when the advert just heard from neighbour `from` (link slot `slot`, link
    /// cost `cost`) is feasible, of the route's number or the one before, and comes before
    /// route `i`'s next hop, makes `from` the next hop as [`Dsdv::recompute`] would, without
    /// reading the route's row, and returns true; false, with the route untouched, otherwise.
    /// Every other feasible candidate comes after the old next hop (it was derived or followed
    /// from the same adverts and link costs), so the new advert comes first; the number stays,
    /// so the change is a better next hop under the same number, which triggers no update.
    /// The old next hop's total (the route's metric) joins [`Route::runner_up`]. These were
    /// 46 % of the derivations after an update in TCP-SACK's first 100 s of
    /// `benches/dpclo-fig8.toml` (adverts from neighbours other than the next hop).
    fn first_overtaken(
        &mut self,
        i: usize,
        now: SimTime,
        slot: usize,
        (cost, from): (f64, u32),
        seq: u32,
        metric: f64,
    ) -> bool {
        let timeout = self.params.route_timeout;
        let r = &mut self.routes[i];
        let total = cost + metric;
        let old = r.first;
        if old == NONE
            || old == from
            || r.oldest + timeout <= now
            || !r.seq.is_multiple_of(2)
            || seq > r.seq
            || seq.saturating_add(2) < r.seq
            || !metric.is_finite()
            || !r.feasible(seq, metric)
            || !before((total, from), (r.metric, old))
        {
            return false;
        }
        let at = r.row as usize * self.stride;
        let row = &mut self.cells[at..at + self.links.len()];
        row[self.slot_of[old as usize] as usize].chosen = false;
        row[slot].chosen = true;
        if total < r.metric {
            // Not on a tie broken by the neighbours' ids.
            let w = self.params.settling_weight;
            let sample = (now - r.seq_first_heard).ns() as f64;
            r.settling_ns = w * r.settling_ns + (1.0 - w) * sample;
        }
        r.runner_up = if r.metric < r.runner_up {
            r.metric
        } else {
            r.runner_up
        };
        r.label = seq;
        r.note_fd(seq, total);
        r.metric = total;
        r.first = from;
        self.hops[r.row as usize * self.params.k] = from;
        self.route_changes += 1;
        true
    }

    /// When the advert just heard in link slot `slot` (`(seq, metric)` over a link of cost
    /// `cost`) is that of route `i`'s first next hop and does not come after where it was,
    /// takes it as [`Dsdv::recompute`] would, without reading the route's row (a third of the
    /// derivations after an update in a 108-node run, most of them under TCP, where K is 1),
    /// and returns true; false, with the route untouched, otherwise. Every other feasible
    /// candidate comes after the first next hop (an advert or a link cost that could come
    /// before it derives the route), feasibility only narrows, and the number does not move,
    /// so the first next hop stays first; the others are chosen below the route's metric,
    /// which falls or stays, so they stay chosen while they remain below it, and when fewer
    /// than K were taken, the others are those that remain (all of K taken and one falling
    /// out: its successor is somewhere in the row, and this returns false).
    fn first_follows(
        &mut self,
        i: usize,
        now: SimTime,
        slot: usize,
        cost: f64,
        seq: u32,
        metric: f64,
    ) -> bool {
        let (timeout, k) = (self.params.route_timeout, self.params.k);
        let links = &self.links[..];
        let r = &mut self.routes[i];
        let total = cost + metric;
        if r.first != links[slot].nb
            || r.oldest + timeout <= now
            || seq > r.seq
            || seq.saturating_add(2) < r.seq
            || !metric.is_finite()
            || total.total_cmp(&r.metric).is_gt()
        {
            return false;
        }
        let at = r.row as usize * self.stride;
        let row = &mut self.cells[at..at + links.len()];
        let hops = &mut self.hops[places(r.row as usize, k)];
        let slot_of = &self.slot_of[..];
        let below = |v: u32| row[slot_of[v as usize] as usize].metric < total;
        let n = r.hop_count as usize;
        if n == k {
            if !hops[1..].iter().all(|&v| below(v)) {
                return false;
            }
        } else {
            // Those that stay below it keep their order.
            let mut kept = 1;
            for j in 1..n {
                let s = slot_of[hops[j] as usize] as usize;
                if row[s].metric < total {
                    hops[kept] = hops[j];
                    kept += 1;
                } else {
                    row[s].chosen = false;
                }
            }
            r.hop_count = kept as u32;
        }
        if total < r.metric {
            let w = self.params.settling_weight;
            let sample = (now - r.seq_first_heard).ns() as f64;
            r.settling_ns = w * r.settling_ns + (1.0 - w) * sample;
        }
        r.label = seq;
        r.note_fd(seq, total);
        r.metric = total;
        true
    }

    /// Reads the link costs from `etx` into `links`, marking those that changed.
    fn sync_links(&mut self, etx: &Etx) {
        self.costs_known = true;
        let metric = self.params.metric;
        let cost = move |e: f64| match metric {
            Metric::Etx => e,
            Metric::HopCount => 1.0,
        };
        for l in &mut self.links {
            l.next = f64::INFINITY;
        }
        for (v, e) in etx.links() {
            if self.slot_of.len() <= v as usize {
                self.slot_of.resize(v as usize + 1, NONE);
            }
            if self.slot_of[v as usize] == NONE {
                // A neighbour usable for the first time: a new slot.
                self.slot_of[v as usize] = self.links.len() as u32;
                self.links.push(Link {
                    cost: f64::INFINITY,
                    changed: false,
                    nb: v,
                    next: f64::INFINITY,
                });
            }
            self.links[self.slot_of[v as usize] as usize].next = cost(e);
        }
        self.changed_slots.clear();
        let mut fall: f64 = 0.0;
        for (s, l) in self.links.iter_mut().enumerate() {
            l.changed = l.cost.to_bits() != l.next.to_bits();
            if l.changed {
                self.changed_slots.push(s as u32);
                if l.next < l.cost {
                    // ∞ when the link was unusable.
                    fall = fall.max(l.cost - l.next);
                }
            }
            l.cost = l.next;
            // ETX is at least 1, as a hop is (`Dsdv::others_follow` counts on it).
            debug_assert!(l.cost >= 1.0, "link cost {}", l.cost);
        }
        self.cost_fall = fall;
        if self.links.len() > self.stride {
            // One column more, not four: a row is read whole by a derivation, and a sparser
            // table is more cache lines for every update heard (new neighbours are rare).
            self.restride(self.links.len() + 1);
        }
        // A column of `heard` for each new slot.
        self.heard
            .resize(self.links.len() * self.heard_rows, SimTime(0));
    }

    /// Lays `heard` out again with `rows` rows a column (more routes).
    fn relay_heard(&mut self, rows: usize) {
        self.heard = widened(
            &self.heard,
            self.heard_rows,
            rows,
            self.links.len(),
            SimTime(0),
        );
        self.heard_rows = rows;
    }

    /// Lays the table out again with `stride` cells a row (more columns).
    fn restride(&mut self, stride: usize) {
        self.cells = widened(&self.cells, self.stride, stride, self.routes.len(), EMPTY);
        self.stride = stride;
    }

    /// Link costs may have changed (an ETX update): re-derive the routes that can change.
    ///
    /// The ETX of a node's links changes only at its own probe instants
    /// ([`Etx::on_probe_tick`]), which is when this is called, so every route was last derived
    /// (here or by [`Dsdv::on_update`]) with the costs of the previous call. Deriving a route
    /// again from the same adverts and costs gives the same route, whatever the time, unless an
    /// advert has expired; so only the routes that may hold an expired advert, or an advert
    /// from a neighbour whose cost changed (appeared, vanished or moved) that is one of their
    /// next hops or could become one ([`Route::could_enter`]), are derived again — the same
    /// routes as deriving every one, at a fraction of the cost (issue 15: every probe tick
    /// used to re-derive every route, 31 % of a 108-node DPCLO run's time).
    pub fn on_links_changed(&mut self, now: SimTime, etx: &Etx) {
        self.sync_links(etx);
        let (timeout, k) = (self.params.route_timeout, self.params.k);
        for r in 0..self.routes.len() {
            let route = &self.routes[r];
            let at = route.row as usize * self.stride;
            let row = &self.cells[at..at + self.stride];
            let due = route.oldest + timeout <= now
                || (route.seq.is_multiple_of(2)
                    && (self.first_changed(route, row)
                        || self.changed_slots.iter().any(|&s| {
                            let (c, l) = (row[s as usize], self.links[s as usize]);
                            c.present && (c.chosen || route.could_enter(k, l.cost, c.seq, c.metric))
                        })));
            if due && !self.cost_follows(r, now) {
                self.recompute(r, now, 0);
            } else if k == 1 {
                let r = &mut self.routes[r];
                r.runner_up = lowered(r.runner_up, self.cost_fall);
            }
        }
    }

    /// Whether the link of `route`'s first next hop changed cost and its advert is in `row`,
    /// marked chosen: then a scan of the changed links for one that matters would find it
    /// (under ETX noise most links change at every probe instant, and the first next hop's
    /// was found halfway down the list).
    #[inline]
    fn first_changed(&self, route: &Route, row: &[Cell]) -> bool {
        if route.first == NONE {
            return false;
        }
        let f = self.slot_of[route.first as usize] as usize;
        let c = row[f];
        self.links[f].changed && c.present && c.chosen
    }

    /// When the link costs of [`Dsdv::on_links_changed`] moved route `i`'s first next hop
    /// no later (its total falls or stays) and no other changed link can matter, takes the new
    /// cost as [`Dsdv::recompute`] would, through [`Dsdv::first_follows`], and returns true;
    /// false, with the route untouched, otherwise. The adverts have not changed since the
    /// route was last derived or followed, so every feasible candidate but the first next hop
    /// comes after it, and stays after it unless its own link's cost changed: with K = 1 such
    /// a candidate must still come after the first next hop's new total (not scanned for at all
    /// while the first stays below the route's [`Route::runner_up`] bound); with K > 1, when
    /// another changed link holds an advert for the route, [`Dsdv::others_follow`] decides (its
    /// move could reorder the K − 1 others). Under ETX noise most links change cost at every
    /// probe instant, and most routes were derived again for it (two thirds of the derivations
    /// of a 108-node run).
    fn cost_follows(&mut self, i: usize, now: SimTime) -> bool {
        let r = &self.routes[i];
        let nh = r.first;
        if nh == NONE {
            return false;
        }
        let f = self.slot_of[nh as usize] as usize;
        let at = r.row as usize * self.stride;
        let row = &self.cells[at..at + self.links.len()];
        let (c, l) = (row[f], self.links[f]);
        if !c.present || !l.cost.is_finite() {
            return false;
        }
        let first = (l.cost + c.metric, nh);
        let k = self.params.k;
        // With K = 1, every other advert's total is at least `runner_up` less the largest
        // fall of a link cost: when the first's new total is below that (by a margin far
        // above the rounding of the bound's few subtractions), none can come first.
        let clear = k == 1 && first.0 * (1.0 + 1e-9) + 1e-9 < lowered(r.runner_up, self.cost_fall);
        for &s in if clear {
            &[][..]
        } else {
            &self.changed_slots[..]
        } {
            let s = s as usize;
            let (cs, ls) = (row[s], self.links[s]);
            if s == f || !cs.present {
                continue;
            }
            if k > 1 {
                return self.others_follow(i, now, f, first);
            }
            if cs.metric.is_finite()
                && ls.cost.is_finite()
                && cs.seq.saturating_add(2) >= r.seq
                && !before(first, (ls.cost + cs.metric, ls.nb))
            {
                return false; // it may come first now
            }
        }
        if !self.first_follows(i, now, f, l.cost, c.seq, c.metric) {
            return false;
        }
        #[cfg(test)]
        {
            self.cost_followed += 1;
            self.cost_cleared += u64::from(clear);
        }
        true
    }

    /// [`Dsdv::cost_follows`] with K > 1 when another changed link holds an advert for route `i`:
    /// takes the new link costs as [`Dsdv::recompute`] would, without a derivation, when its next
    /// hops stay its next hops, and returns true; false, with the route untouched, otherwise. The
    /// first next hop (`first`: its new total and neighbour; slot `f`) must come before every other
    /// candidate and its total must not rise ([`Dsdv::first_follows`]); the others must stay
    /// downhill of it and after it (their order among themselves may change: they are sorted
    /// again); an advert not chosen, when downhill, must stay after the K-th next hop (when fewer
    /// than K are taken, it must not be downhill at all), and when not, it stays after the first
    /// (link costs are at least 1). That is the derivation's choice from the same adverts and
    /// costs, so the route is the one it would give. The row is read once, as a derivation reads
    /// it, but without its candidates and choices: 74 % of DPCLO's derivations at probe instants
    /// (the first 100 s of `benches/dpclo-fig8.toml`) had next hops that stayed so.
    fn others_follow(&mut self, i: usize, now: SimTime, f: usize, first: (f64, u32)) -> bool {
        let k = self.params.k;
        let mut kept = std::mem::take(&mut self.scratch);
        kept.clear();
        let follows = 'check: {
            let (links, slot_of) = (&self.links[..], &self.slot_of[..]);
            let r = &self.routes[i];
            let at = r.row as usize * self.stride;
            let row = &self.cells[at..at + links.len()];
            let n = r.hop_count as usize;
            for &v in &self.hops[places(r.row as usize, k)][1..n] {
                let s = slot_of[v as usize] as usize;
                let (c, l) = (row[s], links[s]);
                let key = (l.cost + c.metric, v);
                // Downhill under the first's new total (finite), a candidate, after the first.
                if !(c.metric < first.0 && l.cost.is_finite() && before(first, key)) {
                    break 'check false;
                }
                // By total, as `keep_least` keeps them.
                let mut j = kept.len();
                kept.push(key);
                while j > 0 && before(key, kept[j - 1]) {
                    kept[j] = kept[j - 1];
                    j -= 1;
                }
                kept[j] = key;
            }
            let last = (n == k).then(|| kept[k - 2]);
            for (c, l) in row.iter().zip(links) {
                if !c.present
                    || c.chosen
                    || c.seq.saturating_add(2) < r.seq
                    || !c.metric.is_finite()
                    || !l.cost.is_finite()
                {
                    continue; // a next hop, or no candidate
                }
                // Not downhill, it stays after the first too: its total is its metric, at least
                // the first's total, plus a link cost of at least 1. Downhill, it must stay after
                // the K-th (after the first with it).
                let key = (l.cost + c.metric, l.nb);
                if c.metric < first.0 && last.is_none_or(|b| !before(b, key)) {
                    break 'check false; // it may be one of the next hops
                }
            }
            let (c, l) = (row[f], links[f]);
            self.first_follows(i, now, f, l.cost, c.seq, c.metric)
        };
        if follows {
            #[cfg(test)]
            {
                self.others_followed += 1;
            }
            let r = &mut self.routes[i];
            let hops = &mut self.hops[places(r.row as usize, k)][1..r.hop_count as usize];
            for (hop, &(_, v)) in hops.iter_mut().zip(&kept) {
                *hop = v;
            }
            if r.hop_count as usize == k {
                r.last_total = kept[k - 2].0;
            }
        }
        self.scratch = kept;
        follows
    }

    /// Derives route `i` from its adverts (its row of the table) and the link costs; `heard`
    /// is the sequence number of the advert just written into the row (0 if none).
    ///
    /// A route's number is at least that of every advert it holds but the one just heard (an
    /// advert of a newer number than the route's is always derived, and the route takes its
    /// number), so the newest number is the route's or `heard`, without a pass over the row.
    fn recompute(&mut self, i: usize, now: SimTime, heard: u32) {
        #[cfg(test)]
        {
            self.derivations += 1;
        }
        let timeout = self.params.route_timeout;
        let k = self.params.k;
        let links = &self.links[..];
        let r = &mut self.routes[i];
        let at = r.row as usize * self.stride;
        let row = &mut self.cells[at..at + links.len()];
        let hops = &mut self.hops[places(r.row as usize, k)];
        if r.oldest + timeout <= now {
            let mut oldest = now;
            let heard = self.heard[r.row as usize..].iter().step_by(self.heard_rows);
            for (c, &t) in row.iter_mut().zip(heard) {
                if !c.present {
                    continue;
                }
                if t + timeout <= now {
                    *c = EMPTY;
                } else {
                    oldest = oldest.min(t);
                }
            }
            r.oldest = oldest;
        }
        let old_next = (r.first != NONE).then_some(r.first);
        let old_seq = r.seq;
        let old_metric = r.metric;
        // The newest sequence number known, ours included (a route we broke stays broken
        // until the destination's next number arrives).
        let mut seq = r.seq.max(heard);
        debug_assert!(row.iter().all(|c| !c.present || c.seq <= seq));
        // The route: least cost among feasible neighbours advertising that number or the one
        // before (none while the newest is odd: broken). Feasible: the next hop we have (DSDV
        // takes its next hop's updates whatever they say; its feasibility distance is below
        // ours, and only falls), or an advert below our feasibility distance.
        //
        // The same pass keeps every candidate for the K − 1 others (they are chosen among
        // the same adverts, below the route's metric, which is known only after the pass), so
        // the row is read once (a second pass for the others and a third clearing the row's
        // marks were most of a derivation's time in a 108-node run).
        let slot_of = &self.slot_of[..];
        for &v in &hops[..r.hop_count as usize] {
            row[slot_of[v as usize] as usize].chosen = false;
        }
        debug_assert!(row.iter().all(|c| !c.chosen), "a mark without its next hop");
        let candidates = &mut self.candidates;
        candidates.clear();
        let mut best: Option<(f64, u32)> = None;
        let mut label = r.label;
        // With K = 1, the least total of the candidates but the first, for `runner_up`
        // (adverts left out here are stale, or infinite, which only an advert heard or a link
        // cost falling changes, and both lower the bound).
        let mut runner_up = f64::INFINITY;
        // A loop of its own: with K = 1 there are no candidates for the others, and each advert
        // costs the runner-up one comparison, the best's on one branch, its own on the other
        // (the two least totals kept in the loop below cost a sixth more of `recompute`'s
        // instructions on TCP-SACK's first 100 s of `benches/dpclo-fig8.toml`).
        if seq.is_multiple_of(2) && k == 1 {
            for (c, l) in row.iter().zip(links) {
                if c.present
                    && c.seq.saturating_add(2) >= seq
                    && c.metric.is_finite()
                    && l.cost.is_finite()
                {
                    let key = (l.cost + c.metric, l.nb);
                    if (Some(l.nb) == old_next || r.feasible(c.seq, c.metric))
                        && best.is_none_or(|b| before(key, b))
                    {
                        if let Some(b) = best {
                            runner_up = if b.0 < runner_up { b.0 } else { runner_up };
                        }
                        best = Some(key);
                        label = c.seq;
                    } else {
                        runner_up = if key.0 < runner_up { key.0 } else { runner_up };
                    }
                }
            }
        } else if seq.is_multiple_of(2) {
            for (c, l) in row.iter().zip(links) {
                if c.present
                    && c.seq.saturating_add(2) >= seq
                    && c.metric.is_finite()
                    && l.cost.is_finite()
                {
                    let key = (l.cost + c.metric, l.nb);
                    if (Some(l.nb) == old_next || r.feasible(c.seq, c.metric))
                        && best.is_none_or(|b| before(key, b))
                    {
                        best = Some(key);
                        label = c.seq;
                    }
                    // The route's metric will be at most the best total so far, so an advert
                    // not below it is not downhill and can be none of the others.
                    if k > 1 && best.is_none_or(|b| c.metric < b.0) {
                        candidates.push((key, c.metric));
                    }
                }
            }
        }
        let metric = match best {
            Some((m, _)) => m,
            None => {
                if r.metric.is_finite() && seq.is_multiple_of(2) {
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
        if best.is_some() {
            r.label = label;
            r.note_fd(label, metric);
        }
        r.seq = seq;
        r.metric = metric;
        // K best next hops: the route's, then downhill neighbours by total cost, as
        // [`choose_others`] chooses them (the candidates above are its, with the metric
        // and number now the route's).
        r.hop_count = 0;
        r.first = best.map_or(NONE, |(_, nh)| nh);
        r.runner_up = runner_up;
        let kept = &mut self.scratch;
        kept.clear();
        if let Some((_, nh)) = best {
            hops[0] = nh;
            r.hop_count = 1;
            for &(key, m) in candidates.iter() {
                if key.1 != nh && m < metric {
                    keep_least(kept, key, k - 1);
                }
            }
        }
        take_others(r, hops, row, slot_of, k, kept);
        let new_next = (r.first != NONE).then_some(r.first);
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
                r.advert = true;
                self.pending = Some(self.pending.map_or(hold, |p| p.min(hold)));
            }
        }
    }

    /// When the next triggered update is due, if a change waits to be advertised.
    pub fn trigger_at(&self) -> Option<SimTime> {
        let due = self.pending?;
        Some(match self.last_sent {
            Some(t) => due.max(t + self.params.min_trigger_gap),
            None => due,
        })
    }

    /// Our own sequence number (the newest we advertised), as our probes carry it.
    pub fn own_seq(&self) -> u32 {
        self.own_seq
    }

    /// A periodic update: raises our sequence number and writes the full table.
    pub fn periodic(&mut self, now: SimTime, out: &mut Vec<Entry>) {
        self.own_seq += 2;
        self.dump(now, out, true);
    }

    /// A triggered update, if one is due by `now`; writes the full table, or with
    /// [`DsdvParams::incremental`] the changed routes.
    pub fn triggered(&mut self, now: SimTime, out: &mut Vec<Entry>) -> bool {
        if self.trigger_at().is_some_and(|t| t <= now) {
            self.dump(now, out, false);
            true
        } else {
            false
        }
    }

    /// Writes an update: our own entry, then every route (`full`, or without incremental
    /// updates) or the routes changed since the last full dump whose hold is over (all of them
    /// when those are more than a third of the table and more than 3, ns-2's rule). A full
    /// dump leaves no change to carry but those still held.
    fn dump(&mut self, now: SimTime, out: &mut Vec<Entry>, full: bool) {
        out.clear();
        out.push((self.me, self.own_seq, 0.0));
        self.pending = None;
        let due = |r: &Route| r.advert && r.pending.is_none_or(|t| t <= now);
        let full = full || !self.params.incremental || {
            let changed = self.routes.iter().filter(|r| due(r)).count();
            changed * 3 > self.routes.len() && changed > 3
        };
        for r in &mut self.routes {
            let include = full || due(r);
            if r.pending.is_some_and(|t| t <= now) {
                r.pending = None;
            }
            if let Some(t) = r.pending {
                self.pending = Some(self.pending.map_or(t, |p| p.min(t)));
            } else if full {
                r.advert = false;
            }
            if !include {
                continue;
            }
            if r.metric.is_finite() {
                out.push((r.dst, r.label, r.metric));
            } else if r.seq > 0 {
                out.push((r.dst, r.seq, r.metric));
            }
        }
        self.last_sent = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An estimator that knows links to `nbs` with ETX values `costs`, over ten probes (costs
    /// 1, 1.11, 1.25, …).
    fn etx_with(nbs: &[(u32, f64)]) -> Etx {
        etx_over(nbs, 10)
    }

    /// [`etx_with`] over a window of 1000 probes: costs within 0.3 % of those asked for up to 3.
    fn etx_fine(nbs: &[(u32, f64)]) -> Etx {
        etx_over(nbs, 1000)
    }

    /// An estimator that has heard all `probes` probes of each neighbour in `nbs` (one a second)
    /// and been told by it of ours at the rate giving its cost.
    fn etx_over(nbs: &[(u32, f64)], probes: u32) -> Etx {
        use crate::net::etx::EtxParams;
        let p = EtxParams {
            alpha: 0.0,
            window: SimTime::from_secs_f64(probes as f64),
            ..EtxParams::default()
        };
        let mut e = Etx::new(p);
        for s in 1..=probes {
            let t = SimTime::from_secs_f64(s as f64 - 0.5);
            for &(v, c) in nbs {
                e.on_probe(t, v, s, Some((probes as f64 / c).round() as u32));
            }
        }
        e.on_probe_tick(SimTime::from_secs_f64(probes as f64));
        e
    }

    /// Route derivation as it was before its shortcuts (issue 15), kept as the reference they
    /// are held to: every entry heard derives its route again, every probe instant derives
    /// every route, link costs are read from the estimator at each derivation, expired adverts
    /// are dropped at each derivation, and the next hops beyond the first are sorted. It keeps
    /// its own routes, each with its list of adverts (none of [`Dsdv`]'s table or indexes).
    struct Reference {
        me: u32,
        params: DsdvParams,
        own_seq: u32,
        /// Sorted by destination.
        routes: Vec<RefRoute>,
        last_sent: Option<SimTime>,
        route_changes: u64,
        derivations: u64,
    }

    struct RefAdvert {
        from: u32,
        seq: u32,
        metric: f64,
        heard: SimTime,
    }

    struct RefRoute {
        dst: u32,
        seq: u32,
        metric: f64,
        next_hops: Vec<u32>,
        adverts: Vec<RefAdvert>,
        label: u32,
        fd: (u32, f64),
        seq_first_heard: SimTime,
        settling_ns: f64,
        pending: Option<SimTime>,
        advert: bool,
    }

    impl Reference {
        fn new(params: DsdvParams) -> Reference {
            Reference {
                me: 0,
                params,
                own_seq: 0,
                routes: Vec::new(),
                last_sent: None,
                route_changes: 0,
                derivations: 0,
            }
        }

        fn route_index(&mut self, dst: u32, now: SimTime) -> usize {
            match self.routes.binary_search_by_key(&dst, |r| r.dst) {
                Ok(i) => i,
                Err(i) => {
                    self.routes.insert(
                        i,
                        RefRoute {
                            dst,
                            seq: 0,
                            metric: f64::INFINITY,
                            next_hops: Vec::new(),
                            adverts: Vec::new(),
                            label: 0,
                            fd: (0, f64::INFINITY),
                            seq_first_heard: now,
                            settling_ns: self.params.initial_settling.ns() as f64,
                            pending: None,
                            advert: false,
                        },
                    );
                    i
                }
            }
        }

        fn on_update(&mut self, now: SimTime, from: u32, entries: &[Entry], etx: &Etx) {
            if etx.etx(from).is_none() {
                return;
            }
            for &(dst, seq, metric) in entries {
                if dst == self.me {
                    continue;
                }
                let i = self.route_index(dst, now);
                let r = &mut self.routes[i];
                match r.adverts.iter_mut().find(|a| a.from == from) {
                    Some(a) => (a.seq, a.metric, a.heard) = (seq, metric, now),
                    None => r.adverts.push(RefAdvert {
                        from,
                        seq,
                        metric,
                        heard: now,
                    }),
                }
                self.derive(i, now, etx);
            }
        }

        /// When a triggered update is due: the earliest pending change of any route.
        fn trigger_at(&self) -> Option<SimTime> {
            let due = self.routes.iter().filter_map(|r| r.pending).min()?;
            Some(match self.last_sent {
                Some(t) => due.max(t + self.params.min_trigger_gap),
                None => due,
            })
        }

        fn periodic(&mut self, now: SimTime, out: &mut Vec<Entry>) {
            self.own_seq += 2;
            self.dump(now, out, true);
        }

        fn triggered(&mut self, now: SimTime, out: &mut Vec<Entry>) -> bool {
            let due = self.trigger_at().is_some_and(|t| t <= now);
            if due {
                self.dump(now, out, false);
            }
            due
        }

        fn dump(&mut self, now: SimTime, out: &mut Vec<Entry>, full: bool) {
            out.clear();
            out.push((self.me, self.own_seq, 0.0));
            let changed: Vec<bool> = self
                .routes
                .iter()
                .map(|r| r.advert && r.pending.is_none_or(|t| t <= now))
                .collect();
            let count = changed.iter().filter(|&&c| c).count();
            let full =
                full || !self.params.incremental || (count * 3 > self.routes.len() && count > 3);
            for (r, changed) in self.routes.iter_mut().zip(changed) {
                if r.pending.is_some_and(|t| t <= now) {
                    r.pending = None;
                }
                if full && r.pending.is_none() {
                    r.advert = false;
                }
                if !full && !changed {
                    continue;
                }
                if r.metric.is_finite() {
                    out.push((r.dst, r.label, r.metric));
                } else if r.seq > 0 {
                    out.push((r.dst, r.seq, r.metric));
                }
            }
            self.last_sent = Some(now);
        }

        fn on_links_changed(&mut self, now: SimTime, etx: &Etx) {
            for i in 0..self.routes.len() {
                self.derive(i, now, etx);
            }
        }

        fn derive(&mut self, i: usize, now: SimTime, etx: &Etx) {
            self.derivations += 1;
            let p = self.params;
            let cost = |v: u32| {
                etx.etx(v).map(|e| match p.metric {
                    Metric::Etx => e,
                    Metric::HopCount => 1.0,
                })
            };
            let r = &mut self.routes[i];
            r.adverts.retain(|a| a.heard + p.route_timeout > now);
            let newest = r.adverts.iter().map(|a| a.seq).max();
            let (old_next, old_seq, old_metric) = (r.next_hops.first().copied(), r.seq, r.metric);
            let mut seq = r.seq.max(newest.unwrap_or(0));
            // Feasible: the next hop, or below the feasibility distance (a newer number than
            // it, or the same with a lower metric).
            let fd = r.fd;
            let mut cands: Vec<(f64, u32, u32)> = Vec::new();
            for a in &r.adverts {
                let below = a.seq > fd.0 || (a.seq == fd.0 && a.metric < fd.1);
                let feasible = Some(a.from) == old_next || below;
                if seq % 2 == 0
                    && a.seq.saturating_add(2) >= seq
                    && a.metric.is_finite()
                    && feasible
                {
                    if let Some(c) = cost(a.from) {
                        cands.push((c + a.metric, a.from, a.seq));
                    }
                }
            }
            let best = cands
                .iter()
                .copied()
                .min_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
            let metric = match best {
                Some((m, _, _)) => m,
                None => {
                    if r.metric.is_finite() && seq % 2 == 0 {
                        seq += 1;
                    }
                    f64::INFINITY
                }
            };
            if seq != old_seq {
                r.seq_first_heard = now;
            } else if metric < r.metric && metric.is_finite() {
                let w = p.settling_weight;
                let sample = (now - r.seq_first_heard).ns() as f64;
                r.settling_ns = w * r.settling_ns + (1.0 - w) * sample;
            }
            if let Some((_, _, label)) = best {
                r.label = label;
                if label > r.fd.0 {
                    r.fd = (label, metric);
                } else if label == r.fd.0 {
                    r.fd.1 = r.fd.1.min(metric);
                }
            }
            r.seq = seq;
            r.metric = metric;
            r.next_hops.clear();
            if let Some((_, nh, _)) = best {
                r.next_hops.push(nh);
                let mut down: Vec<(f64, u32)> = r
                    .adverts
                    .iter()
                    .filter(|a| {
                        a.from != nh
                            && a.metric.is_finite()
                            && a.metric < metric
                            && a.seq.saturating_add(2) >= seq
                    })
                    .filter_map(|a| cost(a.from).map(|c| (c + a.metric, a.from)))
                    .collect();
                down.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
                let more = p.k.saturating_sub(1);
                r.next_hops.extend(down.iter().take(more).map(|&(_, v)| v));
            }
            let new_next = r.next_hops.first().copied();
            if new_next != old_next {
                self.route_changes += 1;
                let hold = if new_next.is_none() {
                    Some(now)
                } else if seq != old_seq || old_next.is_none() {
                    Some(now + SimTime((2.0 * r.settling_ns) as u64))
                } else if metric > old_metric {
                    Some(now)
                } else {
                    None
                };
                if let Some(hold) = hold {
                    r.pending = Some(r.pending.map_or(hold, |p| p.min(hold)));
                    r.advert = true;
                }
            }
        }
    }

    /// The text of a route (the fast one's or the reference's: the same fields) and its live
    /// adverts, compared by the tests below.
    macro_rules! describe {
        ($r:expr, $fd:expr, $hops:expr, $live:expr) => {
            format!(
                "dst {} seq {} label {} metric {} fd {:?} next {:?} first {:?} settling {} pending {:?} adverts {:?}",
                $r.dst,
                $r.seq,
                $r.label,
                $r.metric,
                $fd,
                $hops,
                $r.seq_first_heard,
                $r.settling_ns,
                $r.pending,
                $live
            )
        };
    }

    /// Everything a route shows or acts on: what it advertises, its next hops, its settling
    /// and trigger state, and its adverts still alive at `now` (a dead advert awaiting removal
    /// counts for nothing), sorted.
    fn observable(fast: &Dsdv, i: usize, now: SimTime, timeout: SimTime) -> String {
        let r = &fast.routes[i];
        let mut live: Vec<(u32, u32, u64, SimTime)> = fast
            .held_adverts(i)
            .into_iter()
            .filter(|a| a.3 + timeout > now)
            .map(|a| (a.0, a.1, a.2.to_bits(), a.3))
            .collect();
        live.sort_unstable();
        describe!(r, (r.fd_seq, r.fd_metric), fast.hops_of(r), live)
    }

    /// [`observable`] for the reference's route.
    fn observable_ref(r: &RefRoute, now: SimTime, timeout: SimTime) -> String {
        let mut live: Vec<(u32, u32, u64, SimTime)> = r
            .adverts
            .iter()
            .filter(|a| a.heard + timeout > now)
            .map(|a| (a.from, a.seq, a.metric.to_bits(), a.heard))
            .collect();
        live.sort_unstable();
        describe!(r, r.fd, &r.next_hops[..], live)
    }

    /// What [`against_reference`] saw: derivations run by the fast code and the reference, next
    /// hops chosen again from those held, first next hops' adverts taken without a derivation,
    /// entries heard, routes that held all K next hops.
    struct RunCounts {
        derivations: u64,
        reference_derivations: u64,
        rechosen: u64,
        followed: u64,
        entries: u64,
        full_k: usize,
        cost_followed: u64,
        cost_cleared: u64,
        others_followed: u64,
        overtaken: u64,
    }

    /// Random updates from neighbours 1..=`nbs` about destinations `nbs + 1..=nbs + dsts`, and
    /// probe instants at which links keep (each with probability `keep`), change, gain or lose
    /// their cost, adverts expiring on the way; updates repeat what a neighbour last said, move to
    /// newer sequence numbers, break routes, improve or worsen a metric, with costs from a small
    /// set so that ties are frequent. After every step the routes, the trigger time and the count
    /// of route changes must be those of the [`Reference`] derivation, which re-derives a route for
    /// every entry heard and every route at every probe instant.
    ///
    /// With `drift` d, a link present at a probe instant is present at the next with
    /// probability 0.99 and, half the time, its cost moves by a factor uniform in
    /// [1 − d, 1 + d/2] (not below 1), as ETX estimates move under noise (falling more than
    /// rising, so that small falls add up over the probe instants between two derivations),
    /// instead of keeping or redrawing it; an update carries one or two entries, so that routes
    /// go long without one, and advertised metrics are drawn from a continuum rather than in
    /// steps of 0.5.
    fn against_reference(
        rng: &mut rand_xoshiro::Xoshiro256PlusPlus,
        params: DsdvParams,
        nbs: u32,
        dsts: u32,
        keep: f64,
        steps: usize,
        drift: Option<f64>,
    ) -> RunCounts {
        use rand::Rng;
        let (k, metric, incremental) = (params.k, params.metric, params.incremental);
        let timeout = params.route_timeout;
        let (mut fast, mut full) = (Dsdv::new(0, params), Reference::new(params));
        let mut etx = etx_with(&[(1, 1.0), (2, 2.0)]);
        // What each neighbour last advertised, by destination; each destination's newest
        // sequence number.
        let mut said = std::collections::HashMap::new();
        let mut newest = vec![0u32; (nbs + dsts + 1) as usize];
        let (mut ticks, mut entries_heard, mut full_k) = (0, 0u64, 0);
        for step in 0..steps {
            let t = SimTime::from_secs_f64(10.0 + step as f64 * 0.5);
            if step % 4 == 0 {
                let costs = [1.0, 1.25, 2.0, 2.5, 5.0];
                let mut nbs_now: Vec<(u32, f64)> = Vec::new();
                for v in 1..=nbs {
                    if let Some(d) = drift {
                        let was = etx.etx(v);
                        if rng.gen_bool(if was.is_some() { 0.99 } else { 0.5 }) {
                            let c = match was {
                                Some(c) if rng.gen_bool(0.5) => c,
                                Some(c) => (c * rng.gen_range(1.0 - d..=1.0 + d / 2.0)).max(1.0),
                                None => costs[rng.gen_range(0..costs.len())],
                            };
                            nbs_now.push((v, c));
                        }
                    } else if rng.gen_bool(0.9) {
                        // most links keep their cost from one probe instant to the next
                        let kept = etx.etx(v).filter(|_| rng.gen_bool(keep));
                        let c = kept.unwrap_or(costs[rng.gen_range(0..costs.len())]);
                        nbs_now.push((v, c));
                    }
                }
                etx = if drift.is_some() {
                    etx_fine(&nbs_now)
                } else {
                    etx_with(&nbs_now)
                };
                fast.on_links_changed(t, &etx);
                full.on_links_changed(t, &etx);
                ticks += 1;
            } else {
                let from = rng.gen_range(1..=nbs);
                let n = rng.gen_range(1..=if drift.is_some() { 2 } else { 8 });
                let entries: Vec<Entry> = (0..n)
                    .map(|_| {
                        let dst = rng.gen_range(nbs + 1..=nbs + dsts);
                        if let Some(&e) = said.get(&(from, dst)).filter(|_| rng.gen_bool(0.5)) {
                            return e;
                        }
                        if rng.gen_bool(0.15) {
                            newest[dst as usize] += 2;
                        }
                        let back = 2 * rng.gen_range(0..3u32);
                        let seq = newest[dst as usize].saturating_sub(back)
                            + u32::from(rng.gen_bool(0.08));
                        let m = if seq % 2 == 1 {
                            f64::INFINITY
                        } else if drift.is_some() {
                            // Sums of drifting costs: no two alike.
                            rng.gen_range(0.0..4.0)
                        } else {
                            rng.gen_range(0..8) as f64 * 0.5
                        };
                        (dst, seq, m)
                    })
                    .collect();
                for &(dst, seq, m) in &entries {
                    said.insert((from, dst), (dst, seq, m));
                }
                entries_heard += entries.len() as u64;
                fast.on_update(t, from, &entries, &etx);
                full.on_update(t, from, &entries, &etx);
                // Updates sent: the tables and trigger state they leave.
                let (mut a, mut b) = (Vec::new(), Vec::new());
                if rng.gen_bool(0.05) {
                    fast.periodic(t, &mut a);
                    full.periodic(t, &mut b);
                } else if rng.gen_bool(0.3) {
                    assert_eq!(fast.triggered(t, &mut a), full.triggered(t, &mut b));
                }
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "step {step}");
            }
            let case = format!("k {k}, {metric:?}, incremental {incremental}, step {step}");
            assert_eq!(fast.routes.len(), full.routes.len(), "{case}");
            for (i, b) in full.routes.iter().enumerate() {
                assert_eq!(
                    observable(&fast, i, t, timeout),
                    observable_ref(b, t, timeout),
                    "{case}"
                );
                let r = &fast.routes[i];
                assert_eq!(
                    (r.first != NONE).then_some(r.first),
                    fast.hops_of(r).first().copied(),
                    "{case}"
                );
                let mut hops = fast.hops_of(r).to_vec();
                hops.sort_unstable();
                assert_eq!(fast.marked_chosen(i), hops, "{case}");
            }
            assert_eq!(fast.trigger_at(), full.trigger_at(), "{case}");
            full_k += fast
                .routes
                .iter()
                .filter(|r| fast.hops_of(r).len() == k)
                .count();
            assert_eq!(
                fast.take_route_changes(),
                std::mem::take(&mut full.route_changes),
                "{case}"
            );
        }
        assert_eq!(ticks, steps.div_ceil(4));
        assert!(fast.routes.len() > 10, "the run built routes");
        RunCounts {
            derivations: fast.derivations,
            reference_derivations: full.derivations,
            rechosen: fast.rechosen,
            followed: fast.followed,
            cost_followed: fast.cost_followed,
            cost_cleared: fast.cost_cleared,
            others_followed: fast.others_followed,
            overtaken: fast.overtaken,
            entries: entries_heard,
            full_k,
        }
    }

    #[test]
    fn re_deriving_only_routes_that_can_change_gives_the_routes_of_a_full_re_derivation() {
        use rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(15);
        let mut skipped = 0.0;
        for (k, incremental) in [(1, false), (2, false), (4, false), (1, true), (4, true)] {
            for metric in [Metric::Etx, Metric::HopCount] {
                let params = DsdvParams {
                    k,
                    metric,
                    route_timeout: SimTime::from_secs_f64(20.0),
                    incremental,
                    ..DsdvParams::default()
                };
                let run = against_reference(&mut rng, params, 8, 12, 0.8, 1500, None);
                // Routes held all K next hops, so the cut at the K-th was exercised.
                assert!(run.full_k > 10, "{}", run.full_k);
                skipped += 1.0 - run.derivations as f64 / run.reference_derivations as f64;
                assert!(run.entries > 4000);
            }
        }
        // The shortcuts were taken, not only the full derivation.
        assert!(skipped / 10.0 > 0.3, "{skipped}");
    }

    #[test]
    fn next_hops_chosen_again_from_those_held_are_those_of_a_full_re_derivation() {
        // Many neighbours and K up to 6, so that routes often hold all K next hops with more
        // candidates left out, and most derivations after an update change only the K − 1
        // next hops after the first ([`rechoose_others`]).
        use rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        for k in [2, 3, 4, 6] {
            for metric in [Metric::Etx, Metric::HopCount] {
                let params = DsdvParams {
                    k,
                    metric,
                    route_timeout: SimTime::from_secs_f64(60.0),
                    ..DsdvParams::default()
                };
                let run = against_reference(&mut rng, params, 16, 12, 0.97, 2000, None);
                assert!(run.full_k > 50, "k {k}, {metric:?}: {}", run.full_k);
                // Chosen again without reading the row, and often.
                assert!(run.rechosen > 50, "k {k}, {metric:?}: {}", run.rechosen);
            }
        }
    }

    #[test]
    fn a_first_next_hop_followed_without_a_derivation_gives_the_route_of_a_full_re_derivation() {
        // Few neighbours, links that mostly keep their cost and adverts that live long, so that
        // a route's first next hop often improves its advert with the others unchanged
        // ([`Dsdv::first_follows`]); K = 1 as under TCP, and K > 1 with fewer or all K taken.
        use rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        for k in [1, 2, 4] {
            for metric in [Metric::Etx, Metric::HopCount] {
                let params = DsdvParams {
                    k,
                    metric,
                    route_timeout: SimTime::from_secs_f64(60.0),
                    ..DsdvParams::default()
                };
                let run = against_reference(&mut rng, params, 4, 12, 0.97, 3000, None);
                assert!(run.followed > 50, "k {k}, {metric:?}: {}", run.followed);
                // With K = 1, an advert of another neighbour often takes the route over
                // ([`Dsdv::first_overtaken`]).
                eprintln!("k {k}, {metric:?}: {} overtaken", run.overtaken);
                if k == 1 {
                    assert!(run.overtaken > 50, "{metric:?}: {}", run.overtaken);
                }
            }
        }
    }

    #[test]
    fn a_first_next_hops_new_link_cost_taken_without_a_derivation_gives_the_route_of_a_full_re_derivation(
    ) {
        // Few neighbours whose links change cost at a fifth of the probe instants, so that a
        // route's first next hop often gets cheaper with no other link that could matter
        // changing ([`Dsdv::cost_follows`]); K = 1 as under TCP, and K > 1. ETX only: hop
        // counts change only when a link appears or goes.
        use rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        for k in [1, 2, 4] {
            let params = DsdvParams {
                k,
                route_timeout: SimTime::from_secs_f64(60.0),
                ..DsdvParams::default()
            };
            let run = against_reference(&mut rng, params, 4, 12, 0.8, 3000, None);
            eprintln!("k {k}: {} of {}", run.cost_followed, run.derivations);
            assert!(run.cost_followed > 50, "k {k}: {}", run.cost_followed);
        }
    }

    #[test]
    fn next_hops_kept_through_new_link_costs_give_the_route_of_a_full_re_derivation() {
        // K > 1, many neighbours and link costs drifting as ETX estimates do: at a probe
        // instant the next hops often stay the next hops while their totals, and their order
        // among themselves, change ([`Dsdv::others_follow`]); other adverts come close to the
        // K-th or fall below it, or stop being downhill of a first next hop that got cheaper.
        use rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        for k in [2, 3, 4] {
            for drift in [0.02, 0.1] {
                let params = DsdvParams {
                    k,
                    route_timeout: SimTime::from_secs_f64(600.0),
                    ..DsdvParams::default()
                };
                let run = against_reference(&mut rng, params, 12, 12, 0.8, 3000, Some(drift));
                eprintln!(
                    "k {k}, drift {drift}: {} with their others, {} by the first alone, {} derivations",
                    run.others_followed, run.cost_followed, run.derivations
                );
                assert!(
                    run.others_followed > 100,
                    "k {k}, drift {drift}: {}",
                    run.others_followed
                );
            }
        }
    }

    #[test]
    fn a_new_link_cost_taken_without_a_scan_of_the_changed_links_gives_the_route_of_a_full_re_derivation(
    ) {
        // K = 1, many neighbours, and half the links' costs moving by a few per cent at every
        // probe instant, as ETX estimates do under noise: most routes' first next hop stays
        // ahead of every other advert by more than the costs move, so `cost_follows` takes the
        // new cost on the strength of the route's runner-up bound, without scanning the
        // changed links; costs fall more than they rise, so a bound not lowered at each probe
        // instant, or not lowered by an advert heard, gives a wrong route within the run; now
        // and then a link goes or comes back (an infinite fall).
        use rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for (drift, metric) in [
            (0.02, Metric::Etx),
            (0.1, Metric::Etx),
            (0.02, Metric::HopCount),
        ] {
            let params = DsdvParams {
                k: 1,
                metric,
                route_timeout: SimTime::from_secs_f64(600.0),
                ..DsdvParams::default()
            };
            let run = against_reference(&mut rng, params, 12, 12, 0.8, 3000, Some(drift));
            eprintln!(
                "drift {drift}, {metric:?}: {} cleared, {} followed, {} overtaken, {} derivations",
                run.cost_cleared, run.cost_followed, run.overtaken, run.derivations
            );
            if metric == Metric::Etx {
                assert!(
                    run.cost_cleared > 200,
                    "drift {drift}: {}",
                    run.cost_cleared
                );
            }
        }
    }

    #[test]
    fn incremental_updates_carry_the_routes_changed_since_the_last_full_dump() {
        // Node 0 learns 12 destinations through neighbour 1, sends a full dump, then hears
        // them break a few at a time; a settling time of 1 µs makes every change due at once.
        let secs = SimTime::from_secs_f64;
        let dsts = |out: &[Entry]| out.iter().map(|e| e.0).collect::<Vec<u32>>();
        for incremental in [false, true] {
            let params = DsdvParams {
                incremental,
                initial_settling: SimTime::from_us(1),
                ..DsdvParams::default()
            };
            let mut d = Dsdv::new(0, params);
            let etx = etx_with(&[(1, 1.0)]);
            let heard: Vec<Entry> = (10..22).map(|dst| (dst, 2, 1.0)).collect();
            d.on_update(secs(1.0), 1, &heard, &etx);
            let mut out = Vec::new();
            d.periodic(secs(2.0), &mut out);
            assert_eq!(out.len(), 13, "our own entry and the 12 routes");
            let mut t = 2.0;
            let mut breaks = |d: &mut Dsdv, gone: &[u32], out: &mut Vec<Entry>| {
                t += 2.0;
                let broken: Vec<Entry> = gone.iter().map(|&v| (v, 3, f64::INFINITY)).collect();
                d.on_update(secs(t), 1, &broken, &etx);
                assert!(
                    d.triggered(secs(t), out),
                    "a broken route triggers an update"
                );
            };
            // One route breaks: an incremental update carries it alone (with our own entry).
            breaks(&mut d, &[10], &mut out);
            if incremental {
                assert_eq!(dsts(&out), [0, 10]);
                assert_eq!(out[1], (10, 3, f64::INFINITY));
            } else {
                assert_eq!(out.len(), 13);
            }
            // Two more: the changes since the full dump are three routes, all carried.
            breaks(&mut d, &[11, 12], &mut out);
            if incremental {
                assert_eq!(dsts(&out), [0, 10, 11, 12]);
            }
            // Three more make six changed routes of twelve, over a third: the whole table.
            breaks(&mut d, &[13, 14, 15], &mut out);
            assert_eq!(out.len(), 13);
            // That was a full dump: the next change is carried alone again.
            breaks(&mut d, &[16], &mut out);
            if incremental {
                assert_eq!(dsts(&out), [0, 16]);
            } else {
                assert_eq!(out.len(), 13);
            }
        }
    }

    #[test]
    fn a_next_hop_overtaken_by_an_advert_can_take_the_route_back_when_its_link_gets_cheaper() {
        // K = 1. Neighbour 1's advert makes the route, 3's (far costlier) joins it without
        // changing it, then 2's overtakes 1's by a little (`first_overtaken`): 1's total must
        // join the runner-up bound, so that when 1's link gets cheaper at the next probe
        // instant and 1 comes first again, the route is derived again rather than following 2.
        let params = DsdvParams {
            k: 1,
            ..DsdvParams::default()
        };
        let mut d = Dsdv::new(0, params);
        let t = SimTime::from_secs_f64;
        let etx = etx_fine(&[(1, 1.2), (2, 1.0), (3, 1.0)]);
        let (c1, c2) = (etx.etx(1).unwrap(), etx.etx(2).unwrap());
        d.on_links_changed(t(10.0), &etx);
        d.on_update(t(11.0), 1, &[(9, 2, 2.0)], &etx);
        d.on_update(t(11.5), 3, &[(9, 2, 5.0)], &etx);
        assert_eq!(d.next_hop(9), Some(1));
        d.on_update(t(12.0), 2, &[(9, 2, 2.1)], &etx);
        assert_eq!(d.next_hop(9), Some(2), "{} < {}", c2 + 2.1, c1 + 2.0);
        assert_eq!(d.overtaken, 1);
        // 1's link falls to 1: 3.0 against 2's 3.1.
        d.on_links_changed(t(13.0), &etx_fine(&[(1, 1.0), (2, 1.0), (3, 1.0)]));
        assert_eq!(d.next_hop(9), Some(1));
        assert_eq!(d.route(9).unwrap().metric, 3.0);
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
        assert_eq!(d.hops_of(r), [2, 1]);
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
            (r.seq, r.metric.is_infinite(), d.hops_of(r).len()),
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
