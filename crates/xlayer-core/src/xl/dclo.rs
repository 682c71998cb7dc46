//! DCLO, Chen et al.'s distributed cross-layer algorithm (congestion control, routing and
//! scheduling by distributed matching) as the DPCLO document summarises it (§III-A eq. 1-5,
//! §V-A): the pieces that do not depend on how queues, frames and timers are stored.
//!
//! - **Prices** (eq. 1): `p_i^k` is node i's backlog for destination k, in packets. Eq. 1 is a
//!   subgradient step that adds the excess of arrivals over departures; with step size γ = 1
//!   packet it *is* the queue length (the back-pressure form Chen et al. implement, and the
//!   DPCLO text's "difference between bandwidth demand and capacity"). A destination queues
//!   nothing for itself, so its own price is 0.
//! - **Source rates** (eq. 2): `x = U'^{-1}(p)` with the log utility `U(x) = w·ln x`, i.e.
//!   `x = w / p` packets/s, clamped to `[min, max]` ([`source_rate`]).
//! - **Link weights** (eq. 3-4): for neighbours i and j, `k* = argmax_k (p_i^k − p_j^k)` and
//!   `w_ij = p_i^{k*} − p_j^{k*}`. A link is used in one direction at a time, so xlayer weighs
//!   the pair by the larger of `w_ij` and `w_ji`; the direction and k* that achieve it are the
//!   link's schedule ([`link`]). Both ends compute the same [`LinkChoice`] from the same two
//!   price vectors; ties are broken by a hash of the interval, the nodes and the destination,
//!   the same at both ends and different from one interval to the next.
//! - **Matching** (eq. 5 approximated as Chen et al. do, by a distributed matching): every node
//!   asks its free neighbour of largest weight (REQUEST); two nodes that ask each other are
//!   matched: the first to hear the other's REQUEST answers with an ACCEPT, the other confirms
//!   with its own, and these tell their other neighbours that both are taken, so that those
//!   ask their next best ([`Matcher`]). A matched node asked again repeats its ACCEPT. This is the locally-heaviest-edge
//!   greedy matching (Preis; Hoepman, "Simple distributed weighted matchings", 2004): without
//!   message loss it computes the same matching as the sequential greedy algorithm (heaviest
//!   link first), which is maximal among positive-weight links and at least half the weight of
//!   the maximum weight matching.
//! - **Forwarding**: during the rest of the interval the link's sender hands the MAC packets of
//!   k* for its partner only — while it has any and the partner has room for them as far as it
//!   knows ([`may_send`]); no routing table is used anywhere.

use rand::Rng;

use super::{Action, Choice, NodeView, Schedule, SourceRateControl, Tick};
use crate::sim::event::NetTimerKind;
use crate::sim::rng::{splitmix64, Stream};
use crate::sim::SimTime;
use crate::wire::packet::Control;

/// A node's prices, `(destination, price)` sorted by destination; destinations not listed are
/// priced 0.
pub type Prices = [(u32, u32)];

/// PRICE message: interval number (4 bytes) and entry count (4 bytes) over IPv4 + UDP (28).
/// The document gives no message formats for DCLO: these sizes are xlayer's choice, in the
/// layout of the ETX probes and DSDV updates (`net::etx`, `net::dsdv`).
pub const PRICE_BASE_BYTES: u32 = 28 + 8;
/// One PRICE entry: destination (4 bytes) and price (2 bytes).
pub const PRICE_ENTRY_BYTES: u32 = 6;
/// REQUEST and ACCEPT: interval number (4 bytes) and the addressed node (4 bytes) over
/// IPv4 + UDP (28).
pub const MATCH_BYTES: u32 = 28 + 8;

/// Network-layer size of a PRICE message listing `entries` destinations.
pub fn price_bytes(entries: usize) -> u32 {
    PRICE_BASE_BYTES + PRICE_ENTRY_BYTES * entries as u32
}

/// `k`'s price in `p` (0 if not listed).
pub fn price_of(p: &Prices, k: u32) -> u32 {
    p.binary_search_by_key(&k, |e| e.0)
        .map(|i| p[i].1)
        .unwrap_or(0)
}

/// A link's schedule for one interval: `sender` sends packets for `dst` to `receiver`;
/// `weight` is `p_sender^dst − p_receiver^dst` (eq. 4) and `tie` orders links of equal weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkChoice {
    pub sender: u32,
    pub receiver: u32,
    pub dst: u32,
    pub weight: u32,
    pub tie: u64,
}

impl LinkChoice {
    /// The end of the link that is not `me`.
    #[inline]
    pub fn other(&self, me: u32) -> u32 {
        if self.sender == me {
            self.receiver
        } else {
            self.sender
        }
    }

    /// The order of links: heavier first, then by the tie-breaking hash.
    #[inline]
    pub fn key(&self) -> (u32, u64) {
        (self.weight, self.tie)
    }
}

fn tie(salt: u64, sender: u32, receiver: u32, dst: u32) -> u64 {
    splitmix64(
        splitmix64(salt ^ ((sender as u64) << 32 | receiver as u64)) ^ (dst as u64).wrapping_add(1),
    )
}

/// Eq. 3-4 for the pair `a`, `b` with prices `pa`, `pb`: the direction and destination of the
/// largest positive price differential, or `None` if no differential is positive. Symmetric:
/// `link(s, a, pa, b, pb) == link(s, b, pb, a, pa)`.
pub fn link(salt: u64, a: u32, pa: &Prices, b: u32, pb: &Prices) -> Option<LinkChoice> {
    let mut best: Option<LinkChoice> = None;
    for (s, ps, r, pr) in [(a, pa, b, pb), (b, pb, a, pa)] {
        for &(k, p) in ps {
            let theirs = price_of(pr, k);
            if p <= theirs {
                continue;
            }
            let c = LinkChoice {
                sender: s,
                receiver: r,
                dst: k,
                weight: p - theirs,
                tie: tie(salt, s, r, k),
            };
            if best.is_none_or(|b| c.key() > b.key()) {
                best = Some(c);
            }
        }
    }
    best
}

/// A matching message to send (broadcast; it names the node it is for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchMsg {
    /// "Be my partner", to the sender's best free neighbour.
    Request(u32),
    /// "I am matched with this node": the reply to its REQUEST, and the notice to everyone else
    /// that both are taken.
    Accept(u32),
}

/// One node's part of the distributed matching in one interval.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    pub me: u32,
    /// Positive-weight links to neighbours not known to be taken.
    cands: Vec<LinkChoice>,
    /// Neighbours that asked us.
    asked_by: Vec<u32>,
    /// Neighbours heard to be matched with someone else.
    taken: Vec<u32>,
    /// The neighbour we asked last.
    pub requested: Option<u32>,
    /// Our link, once matched.
    pub partner: Option<LinkChoice>,
}

impl Matcher {
    pub fn new(me: u32) -> Matcher {
        Matcher {
            me,
            ..Matcher::default()
        }
    }

    /// Forgets the last interval's matching (keeping its buffers).
    pub fn clear(&mut self) {
        self.cands.clear();
        self.asked_by.clear();
        self.taken.clear();
        self.requested = None;
        self.partner = None;
    }

    /// Starts the matching with the node's positive-weight links; returns the first message
    /// to send. Messages heard before (from neighbours that started earlier) count.
    pub fn start(&mut self, cands: impl IntoIterator<Item = LinkChoice>) -> Option<MatchMsg> {
        let (me, taken) = (self.me, &self.taken);
        self.cands
            .extend(cands.into_iter().filter(|c| !taken.contains(&c.other(me))));
        debug_assert!(self
            .cands
            .iter()
            .all(|c| c.weight > 0 && c.other(self.me) != self.me));
        self.advance()
    }

    /// The free neighbour of largest weight.
    pub fn best(&self) -> Option<&LinkChoice> {
        self.cands.iter().max_by_key(|c| c.key())
    }

    fn advance(&mut self) -> Option<MatchMsg> {
        if self.partner.is_some() {
            return None;
        }
        let best = *self.best()?;
        let j = best.other(self.me);
        if self.asked_by.contains(&j) {
            self.partner = Some(best);
            return Some(MatchMsg::Accept(j));
        }
        if self.requested != Some(j) {
            self.requested = Some(j);
            return Some(MatchMsg::Request(j));
        }
        None
    }

    /// A REQUEST from `from` for `target` was heard.
    pub fn on_request(&mut self, from: u32, target: u32) -> Option<MatchMsg> {
        if target != self.me {
            return None;
        }
        if let Some(p) = self.partner {
            // Our partner did not hear our ACCEPT, or someone does not know we are taken:
            // repeat it.
            return Some(MatchMsg::Accept(p.other(self.me)));
        }
        if !self.asked_by.contains(&from) {
            self.asked_by.push(from);
        }
        self.advance()
    }

    /// An ACCEPT from `from` naming `target` was heard.
    pub fn on_accept(&mut self, from: u32, target: u32) -> Option<MatchMsg> {
        if target == self.me {
            if self.partner.is_none() {
                if let Some(&b) = self.best().filter(|b| b.other(self.me) == from) {
                    // Matched: our own ACCEPT confirms it and tells our neighbours, which may
                    // not hear the partner, that we are taken.
                    self.partner = Some(b);
                    return Some(MatchMsg::Accept(from));
                }
            }
            return None;
        }
        // `from` and `target` are matched with each other: neither is free any more.
        for j in [from, target] {
            if !self.taken.contains(&j) {
                self.taken.push(j);
            }
        }
        self.cands
            .retain(|c| c.other(self.me) != from && c.other(self.me) != target);
        self.asked_by.retain(|&j| j != from && j != target);
        self.advance()
    }

    /// The REQUEST to repeat if it may have been lost: still unmatched and still asking the
    /// same best neighbour.
    pub fn retry(&mut self) -> Option<MatchMsg> {
        if self.partner.is_some() {
            return None;
        }
        let j = self.best()?.other(self.me);
        if self.requested == Some(j) {
            return Some(MatchMsg::Request(j));
        }
        self.advance()
    }

    /// Whether this node still waits for an answer.
    pub fn waiting(&self) -> bool {
        self.partner.is_none() && self.requested.is_some() && self.best().is_some()
    }
}

/// Whether a matched node may hand the MAC one more packet over its link: it is the link's
/// sender, and the receiver is the destination or, counting the `sent` packets handed over
/// this interval on top of the receiver's advertised price, still has room in its queue of
/// `cap` packets. (The sender's own backlog for the destination is checked by the caller.)
pub fn may_send(link: &LinkChoice, me: u32, receiver_price: u32, sent: u32, cap: u32) -> bool {
    link.sender == me && (link.receiver == link.dst || receiver_price + sent < cap)
}

/// Eq. 2 with `U(x) = w·ln x`: the source rate `w / p` (packets/s) for its price `p`, within
/// `[min_pps, max_pps]`; an empty queue (p = 0) sends at `max_pps`.
pub fn source_rate(price: u32, w: f64, min_pps: f64, max_pps: f64) -> f64 {
    if price == 0 {
        return max_pps.max(min_pps);
    }
    (w / price as f64).clamp(min_pps, max_pps.max(min_pps))
}

/// One node's DCLO state for the current interval.
#[derive(Debug, Clone, Default)]
pub struct DcloNode {
    /// The current interval.
    pub current: u32,
    /// The interval whose prices the node has published.
    pub interval: u32,
    /// The prices it published then: its per-destination queue lengths when it sent PRICE.
    pub published: Vec<(u32, u32)>,
    /// Neighbours whose PRICE of this interval it heard.
    pub heard: Vec<u32>,
    pub matcher: Matcher,
    /// Data packets handed to the MAC for the partner this interval.
    pub sent: u32,
    /// REQUESTs sent this interval.
    pub requests: u32,
    /// Whether it sent an ACCEPT this interval (it is matched from then on).
    pub announced: bool,
    /// When a REQUEST repeat is due.
    pub retry_at: Option<SimTime>,
}

impl DcloNode {
    /// Forgets the last interval as `interval` starts.
    pub fn reset(&mut self, me: u32, interval: u32) {
        self.current = interval;
        self.heard.clear();
        self.matcher.me = me;
        self.matcher.clear();
        self.sent = 0;
        self.requests = 0;
        self.announced = false;
        self.retry_at = None;
    }

    /// Publishes `prices` for `interval`; returns the PRICE message's size.
    pub fn publish(&mut self, interval: u32, prices: impl Iterator<Item = (u32, u32)>) -> u32 {
        self.interval = interval;
        self.published.clear();
        self.published.extend(prices.filter(|e| e.1 > 0));
        price_bytes(self.published.len())
    }

    /// A PRICE of `interval` from `from` was heard.
    pub fn hear_price(&mut self, from: u32, interval: u32) {
        if interval == self.current && !self.heard.contains(&from) {
            self.heard.push(from);
        }
    }

    /// The price the partner advertised for the link's destination (the sender's price less
    /// the link's weight).
    pub fn receiver_price(&self, link: &LinkChoice) -> u32 {
        price_of(&self.published, link.dst).saturating_sub(link.weight)
    }
}

/// Node `me`'s positive-weight links this interval: to every neighbour whose PRICE it heard,
/// from both published price vectors (a neighbour's as its PRICE carried it).
pub fn candidates(
    nodes: &[DcloNode],
    me: u32,
    interval: u32,
    salt: u64,
) -> impl Iterator<Item = LinkChoice> + '_ {
    let own = &nodes[me as usize];
    let heard = if own.interval == interval {
        &own.heard[..]
    } else {
        &[]
    };
    heard
        .iter()
        .filter(move |&&j| nodes[j as usize].interval == interval)
        .filter_map(move |&j| link(salt, me, &own.published, j, &nodes[j as usize].published))
}

/// DCLO at every node (`stack.preset = "dclo"`): the matching intervals and the forwarding
/// over matched links, as a scheduler over per-destination queues.
#[derive(Debug)]
pub struct Dclo {
    pub interval: SimTime,
    pub price_jitter: SimTime,
    pub match_delay: SimTime,
    pub request_timeout: SimTime,
    pub max_requests: u32,
    /// The per-destination queue size (a partner's room).
    pub cap: u32,
    /// Seeds the tie-breaking hash of link weights.
    pub seed: u64,
    /// The current matching interval, numbered from 1.
    pub current: u32,
    pub nodes: Vec<DcloNode>,
    /// PRICE jitter streams, one per node (`net.dclo`).
    pub rng: Vec<Stream>,
    /// Node-intervals spent matched, and PRICE, REQUEST and ACCEPT messages sent.
    pub matched: u64,
    pub prices_sent: u64,
    pub requests_sent: u64,
    pub accepts_sent: u64,
}

impl Dclo {
    /// A matching interval starts: every node forgets the last one's matching, and the PRICE
    /// and matching instants of every node are scheduled (both jittered: broadcasts sent in
    /// the same instant collide under CSMA).
    fn start_interval(&mut self, now: SimTime, nodes: usize, out: &mut Vec<Action>) -> Tick {
        self.current += 1;
        let current = self.current;
        for (i, st) in self.nodes.iter_mut().enumerate() {
            st.reset(i as u32, current);
        }
        let jitter = self.price_jitter.ns();
        for node in 0..nodes as u32 {
            let mut draw = || {
                if jitter > 0 {
                    SimTime(self.rng[node as usize].gen_range(0..jitter))
                } else {
                    SimTime::ZERO
                }
            };
            let price_at = now + draw();
            let match_at = now + self.match_delay + draw();
            out.push(Action::Timer {
                node,
                at: price_at,
                kind: NetTimerKind::DcloPrice,
            });
            out.push(Action::Timer {
                node,
                at: match_at,
                kind: NetTimerKind::DcloMatch,
            });
        }
        Tick {
            pump_all: false,
            interval: self.interval,
        }
    }

    /// `v.node`'s PRICE, matching or REQUEST-repeat instant.
    fn on_timer(&mut self, v: &NodeView, kind: NetTimerKind, out: &mut Vec<Action>) {
        let node = v.node;
        let current = self.current;
        let st = &mut self.nodes[node as usize];
        match kind {
            NetTimerKind::DcloPrice => {
                let bytes = st.publish(current, v.queues.lengths());
                self.prices_sent += 1;
                out.push(Action::SendControl {
                    node,
                    seq: current as u64,
                    bytes,
                    control: Control::DcloPrice { interval: current },
                });
            }
            NetTimerKind::DcloMatch => {
                let salt = splitmix64(self.seed) ^ current as u64;
                // The matcher is taken out while the links are read from every node's prices.
                let mut m = std::mem::take(&mut self.nodes[node as usize].matcher);
                let msg = m.start(candidates(&self.nodes, node, current, salt));
                self.nodes[node as usize].matcher = m;
                self.send(node, msg, v.now, out);
            }
            NetTimerKind::DcloRetry => {
                if st.retry_at != Some(v.now) {
                    return;
                }
                st.retry_at = None;
                if st.matcher.waiting() && st.requests < self.max_requests {
                    let msg = st.matcher.retry();
                    self.send(node, msg, v.now, out);
                }
            }
            _ => {}
        }
    }

    /// Sends what `node`'s matching asks for; a REQUEST arms its repeat, a new match lets the
    /// node forward.
    fn send(&mut self, node: u32, msg: Option<MatchMsg>, now: SimTime, out: &mut Vec<Action>) {
        let current = self.current;
        let (target, accept) = match msg {
            Some(MatchMsg::Request(t)) => (t, false),
            Some(MatchMsg::Accept(t)) => (t, true),
            None => return,
        };
        let st = &mut self.nodes[node as usize];
        // A node is matched exactly when it sends its first ACCEPT of the interval.
        let newly = accept && !st.announced;
        if accept {
            self.accepts_sent += 1;
            st.announced = true;
            st.retry_at = None;
            self.matched += newly as u64;
        } else {
            self.requests_sent += 1;
            st.requests += 1;
            if st.requests < self.max_requests {
                // Uniform in [1, 2) timeouts, so that nodes that lost their REQUESTs to each
                // other do not repeat them in step.
                let t = self.request_timeout.ns();
                let at =
                    now + self.request_timeout + SimTime(self.rng[node as usize].gen_range(0..t));
                st.retry_at = Some(at);
                out.push(Action::Timer {
                    node,
                    at,
                    kind: NetTimerKind::DcloRetry,
                });
            }
        }
        out.push(Action::SendControl {
            node,
            seq: current as u64,
            bytes: MATCH_BYTES,
            control: Control::DcloMatch {
                interval: current,
                target,
                accept,
            },
        });
        if newly {
            out.push(Action::Pump { node });
        }
    }

    /// A DCLO control packet from `from` arrived at `node`; packets of an earlier interval are
    /// ignored.
    fn receive(
        &mut self,
        node: u32,
        from: u32,
        control: Control,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        let current = self.current;
        let st = &mut self.nodes[node as usize];
        let msg = match control {
            Control::DcloPrice { interval } => {
                st.hear_price(from, interval);
                return;
            }
            Control::DcloMatch {
                interval,
                target,
                accept,
            } if interval == current => {
                if accept {
                    st.matcher.on_accept(from, target)
                } else {
                    st.matcher.on_request(from, target)
                }
            }
            _ => return,
        };
        self.send(node, msg, now, out);
    }

    /// The choice at `v.node`: a matched sender hands the MAC a packet of its link's
    /// destination k* for its partner while the partner has room ([`may_send`]); unmatched
    /// nodes and receivers hold their packets.
    fn decide(&mut self, v: &NodeView) -> Choice {
        if v.queues.mac_busy() {
            return Choice::Hold;
        }
        let st = &mut self.nodes[v.node as usize];
        let Some(link) = st.matcher.partner else {
            return Choice::Hold;
        };
        let theirs = st.receiver_price(&link);
        if !may_send(&link, v.node, theirs, st.sent, self.cap)
            || !v.queues.waiting().any(|(d, _)| d == link.dst)
        {
            return Choice::Hold;
        }
        st.sent += 1;
        Choice::Serve {
            dst: link.dst,
            level: 0,
            next: Some(link.receiver),
        }
    }

    /// Links matched per interval on average.
    pub fn links_per_interval(&self) -> f64 {
        if self.current > 0 {
            self.matched as f64 / 2.0 / self.current as f64
        } else {
            0.0
        }
    }
}

/// DCLO's sources: eq. 2's `w/p` on the source's own queue, set as each interval starts.
#[derive(Debug)]
pub struct DcloSources {
    /// Eq. 2: w, and each flow's rate bounds (packets/s).
    pub utility_weight: f64,
    pub min_pps: f64,
    pub max_pps: Vec<f64>,
    /// Each flow's source rate (packets/s).
    pub rates: Vec<f64>,
}

impl DcloSources {
    /// Every emitting flow `i` sets its rate from its own queue (its price is at least the
    /// packet it is about to send).
    pub fn set_rates(&mut self, emitting: &dyn Fn(usize) -> bool, own: &dyn Fn(usize) -> u32) {
        for i in 0..self.rates.len() {
            if emitting(i) {
                let p = own(i).max(1);
                self.rates[i] = source_rate(p, self.utility_weight, self.min_pps, self.max_pps[i]);
            }
        }
    }
}

impl Schedule for Dclo {
    fn choose(&mut self, v: &NodeView) -> Choice {
        self.decide(v)
    }
    /// A matching interval starts.
    fn tick(&mut self, now: SimTime, nodes: usize, out: &mut Vec<Action>) -> Option<Tick> {
        Some(self.start_interval(now, nodes, out))
    }
    fn timer(&mut self, v: &NodeView, kind: NetTimerKind, out: &mut Vec<Action>) {
        self.on_timer(v, kind, out);
    }
    fn control_received(
        &mut self,
        node: u32,
        from: u32,
        control: Control,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        self.receive(node, from, control, now, out);
    }
}

impl SourceRateControl for DcloSources {
    fn next_interval(&mut self, flow: u32, _own: u32, _payload: u32) -> Option<SimTime> {
        Some(SimTime::from_secs_f64(1.0 / self.rates[flow as usize]))
    }
    fn tick(&mut self, emitting: &dyn Fn(usize) -> bool, own: &dyn Fn(usize) -> u32) {
        self.set_rates(emitting, own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::VecDeque;

    #[test]
    fn link_takes_the_largest_differential_in_either_direction() {
        let a = [(7, 3), (8, 1)];
        let b = [(7, 1), (8, 3)];
        let l = link(0, 1, &a, 2, &b).unwrap();
        assert_eq!(l.weight, 2);
        // Both directions weigh 2 (k = 7 from 1, k = 8 from 2); the hash decides, at both ends.
        assert_eq!(link(0, 2, &b, 1, &a), Some(l));
        let c = [(7, 3)];
        let l = link(5, 1, &c, 2, &[]).unwrap();
        assert_eq!((l.sender, l.receiver, l.dst, l.weight), (1, 2, 7, 3));
        assert_eq!(link(5, 2, &[], 1, &c), Some(l));
        assert_eq!(
            link(5, 1, &[(7, 2)], 2, &[(7, 2)]),
            None,
            "no positive differential"
        );
        assert_eq!(link(5, 1, &[], 2, &[]), None);
        // The destination prices itself 0: a neighbour holding packets for it always has a
        // positive link to it.
        let l = link(1, 1, &[(2, 1)], 2, &[(1, 3)]).unwrap();
        assert_eq!((l.sender, l.dst, l.weight), (2, 1, 3));
    }

    #[test]
    fn ties_are_broken_differently_from_one_interval_to_the_next() {
        let a = [(7, 2), (8, 2)];
        let dsts: std::collections::BTreeSet<u32> = (0..64)
            .map(|salt| link(salt, 1, &a, 2, &[]).unwrap().dst)
            .collect();
        assert_eq!(dsts.len(), 2, "both destinations get their turn");
    }

    #[test]
    fn sources_follow_the_inverse_of_their_price() {
        assert_eq!(source_rate(0, 50.0, 1.0, 1000.0), 1000.0);
        assert_eq!(source_rate(1, 50.0, 1.0, 1000.0), 50.0);
        assert_eq!(source_rate(2, 50.0, 1.0, 1000.0), 25.0);
        assert_eq!(source_rate(100, 50.0, 1.0, 1000.0), 1.0);
        assert_eq!(price_bytes(0), 36);
        assert_eq!(price_bytes(3), 54);
    }

    #[test]
    fn a_sender_fills_its_partner_up_to_the_queue_size_except_at_the_destination() {
        let l = LinkChoice {
            sender: 1,
            receiver: 2,
            dst: 9,
            weight: 3,
            tie: 0,
        };
        assert!(may_send(&l, 1, 0, 2, 3));
        assert!(!may_send(&l, 1, 0, 3, 3));
        assert!(!may_send(&l, 1, 1, 2, 3));
        assert!(!may_send(&l, 2, 0, 0, 3), "the receiver sends nothing");
        let to_dst = LinkChoice { dst: 2, ..l };
        assert!(may_send(&to_dst, 1, 0, 100, 3));
    }

    /// Runs the matching on a graph with every node's prices: messages are broadcast to all
    /// neighbours in FIFO order, `lose` decides which deliveries are lost, and nodes that
    /// still wait repeat their REQUEST when the air falls silent (at most `retries` times).
    fn run_matching(
        adj: &[Vec<u32>],
        prices: &[Vec<(u32, u32)>],
        salt: u64,
        mut lose: impl FnMut() -> bool,
        retries: u32,
    ) -> (Vec<Matcher>, usize) {
        let n = adj.len();
        let mut air: VecDeque<(u32, MatchMsg)> = VecDeque::new();
        let mut ms: Vec<Matcher> = (0..n as u32)
            .map(|i| {
                let cands = adj[i as usize]
                    .iter()
                    .filter_map(|&j| link(salt, i, &prices[i as usize], j, &prices[j as usize]));
                let mut m = Matcher::new(i);
                let out = m.start(cands);
                if let Some(o) = out {
                    air.push_back((i, o));
                }
                m
            })
            .collect();
        let mut sent = 0;
        for round in 0..=retries {
            if round > 0 {
                for m in ms.iter_mut() {
                    if m.waiting() {
                        if let Some(o) = m.retry() {
                            air.push_back((m.me, o));
                        }
                    }
                }
            }
            while let Some((from, msg)) = air.pop_front() {
                sent += 1;
                for &j in &adj[from as usize] {
                    if lose() {
                        continue;
                    }
                    let out = match msg {
                        MatchMsg::Request(t) => ms[j as usize].on_request(from, t),
                        MatchMsg::Accept(t) => ms[j as usize].on_accept(from, t),
                    };
                    if let Some(o) = out {
                        air.push_back((j, o));
                    }
                }
                assert!(sent < 100 * n * n, "the matching does not settle");
            }
        }
        (ms, sent)
    }

    /// Sequential greedy matching: links heaviest first, each taken if both ends are free.
    fn greedy(adj: &[Vec<u32>], prices: &[Vec<(u32, u32)>], salt: u64) -> Vec<Option<u32>> {
        let mut links = vec![];
        for (i, ns) in adj.iter().enumerate() {
            for &j in ns {
                if (i as u32) < j {
                    if let Some(l) = link(salt, i as u32, &prices[i], j, &prices[j as usize]) {
                        links.push(l);
                    }
                }
            }
        }
        links.sort_by_key(|l| std::cmp::Reverse(l.key()));
        let mut partner = vec![None; adj.len()];
        for l in links {
            let (a, b) = (l.sender as usize, l.receiver as usize);
            if partner[a].is_none() && partner[b].is_none() {
                partner[a] = Some(l.receiver);
                partner[b] = Some(l.sender);
            }
        }
        partner
    }

    /// Neighbour lists and every node's prices.
    type Graph = (Vec<Vec<u32>>, Vec<Vec<(u32, u32)>>);

    fn random_graph(rng: &mut impl Rng, n: usize, r: f64, dsts: u32) -> Graph {
        let pos: Vec<(f64, f64)> = (0..n).map(|_| (rng.gen(), rng.gen())).collect();
        let adj = (0..n)
            .map(|i| {
                (0..n)
                    .filter(|&j| {
                        j != i && {
                            let (dx, dy) = (pos[i].0 - pos[j].0, pos[i].1 - pos[j].1);
                            dx * dx + dy * dy < r * r
                        }
                    })
                    .map(|j| j as u32)
                    .collect()
            })
            .collect();
        let prices = (0..n as u32)
            .map(|i| {
                let mut p = vec![];
                for k in 0..dsts {
                    let q = rng.gen_range(0..=3);
                    if k != i && q > 0 && rng.gen_bool(0.6) {
                        p.push((k, q));
                    }
                }
                p
            })
            .collect();
        (adj, prices)
    }

    fn check_valid(adj: &[Vec<u32>], prices: &[Vec<(u32, u32)>], ms: &[Matcher], salt: u64) {
        for m in ms {
            if let Some(l) = m.partner {
                let j = l.other(m.me);
                assert!(adj[m.me as usize].contains(&j), "matched to a neighbour");
                assert!(l.weight > 0, "matched links have positive weight");
                assert_eq!(
                    Some(l),
                    link(salt, m.me, &prices[m.me as usize], j, &prices[j as usize])
                );
            }
        }
    }

    #[test]
    fn small_graphs_match_as_the_sequential_greedy_does() {
        // A chain 0-1-2-3 with a backlog at 0 for 3: 0-1 (weight 3) first, then 2-3 only if
        // positive. Prices: 0 holds 3 for dst 3, 1 holds 1, 2 holds 2.
        let adj = vec![vec![1], vec![0, 2], vec![1, 3], vec![2]];
        let prices = vec![vec![(3, 3)], vec![(3, 1)], vec![(3, 2)], vec![]];
        let (ms, _) = run_matching(&adj, &prices, 1, || false, 0);
        let got: Vec<Option<u32>> = ms
            .iter()
            .map(|m| m.partner.map(|l| l.other(m.me)))
            .collect();
        assert_eq!(got, vec![Some(1), Some(0), Some(3), Some(2)]);
        assert_eq!(ms[0].partner.unwrap().sender, 0);
        assert_eq!(
            ms[2].partner.unwrap().sender,
            2,
            "2 sends to the destination"
        );
        // A star: the centre takes its heaviest leaf only.
        let adj = vec![vec![1, 2, 3], vec![0], vec![0], vec![0]];
        let prices = vec![vec![(9, 3)], vec![(9, 2)], vec![], vec![(9, 1)]];
        let (ms, _) = run_matching(&adj, &prices, 1, || false, 0);
        assert_eq!(ms[0].partner.map(|l| l.other(0)), Some(2));
        assert!(ms[1].partner.is_none() && ms[3].partner.is_none());
        assert_eq!(got_partners(&ms), greedy(&adj, &prices, 1));
    }

    fn got_partners(ms: &[Matcher]) -> Vec<Option<u32>> {
        ms.iter()
            .map(|m| m.partner.map(|l| l.other(m.me)))
            .collect()
    }

    #[test]
    fn messages_heard_before_the_node_starts_matching_count() {
        let l = |s: u32, r: u32, w: u32| LinkChoice {
            sender: s,
            receiver: r,
            dst: 9,
            weight: w,
            tie: 0,
        };
        // 1 asked 0 before 0 started: 0 accepts at once.
        let mut m = Matcher::new(0);
        assert_eq!(m.on_request(1, 0), None);
        assert_eq!(m.start([l(0, 1, 2), l(0, 2, 1)]), Some(MatchMsg::Accept(1)));
        assert_eq!(m.partner, Some(l(0, 1, 2)));
        // 1 was heard taken (by 3) before 0 started: 0 asks its next best.
        let mut m = Matcher::new(0);
        assert_eq!(m.on_accept(1, 3), None);
        assert_eq!(
            m.start([l(0, 1, 2), l(0, 2, 1)]),
            Some(MatchMsg::Request(2))
        );
    }

    #[test]
    fn without_loss_the_distributed_matching_is_the_greedy_one() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for trial in 0..200 {
            let n = rng.gen_range(2..40);
            let (adj, prices) = random_graph(&mut rng, n, 0.35, 6);
            let (ms, _) = run_matching(&adj, &prices, trial, || false, 0);
            check_valid(&adj, &prices, &ms, trial);
            let got = got_partners(&ms);
            // A valid matching: partners are mutual.
            for (i, p) in got.iter().enumerate() {
                if let Some(j) = p {
                    assert_eq!(got[*j as usize], Some(i as u32), "trial {trial}");
                }
            }
            // Maximal among positive-weight links.
            for (i, ns) in adj.iter().enumerate() {
                for &j in ns {
                    if link(trial, i as u32, &prices[i], j, &prices[j as usize]).is_some() {
                        assert!(
                            got[i].is_some() || got[j as usize].is_some(),
                            "trial {trial}: link {i}-{j} could still be added"
                        );
                    }
                }
            }
            assert_eq!(got, greedy(&adj, &prices, trial), "trial {trial}");
        }
    }

    #[test]
    fn with_losses_the_matching_stays_valid_and_retries_recover_most_links() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let mut loss = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
        let (mut matched_lossy, mut matched_clean) = (0, 0);
        for trial in 0..100 {
            let (adj, prices) = random_graph(&mut rng, 30, 0.3, 5);
            let (ms, _) = run_matching(&adj, &prices, trial, || loss.gen_bool(0.2), 3);
            check_valid(&adj, &prices, &ms, trial);
            // A lost ACCEPT can leave one end believing alone; count the links both ends agree on.
            let got = got_partners(&ms);
            matched_lossy += got
                .iter()
                .enumerate()
                .filter(|(i, p)| p.is_some_and(|j| got[j as usize] == Some(*i as u32)))
                .count();
            matched_clean += greedy(&adj, &prices, trial)
                .iter()
                .filter(|p| p.is_some())
                .count();
        }
        assert!(
            matched_lossy as f64 > 0.7 * matched_clean as f64,
            "{matched_lossy} of {matched_clean}"
        );
    }
}
