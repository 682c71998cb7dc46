//! Back-pressure schedulers of [`World`]: DiffQ (`crate::net::diffq`), DPCLO
//! (`crate::net::dpclo`) and DCLO (`crate::net::dclo`) choose, when a node's MAC is free, which
//! destination's packet goes next, to which neighbour and at which MAC level (`World::pump`), and
//! run their periodic work on `Event::BackpressureTick`.

use super::*;

/// DiffQ at every node (`stack.preset = "diffq-udp" | "diffq-tcp"`; `crate::net::diffq`).
#[derive(Debug)]
pub struct DiffqState {
    /// Differential scheduling (else round robin) and MAC priorities (else level 0).
    pub scheduling: bool,
    pub prioritization: bool,
    /// D: the per-destination queue size; Δ: the MAC's levels.
    pub max_queue: u32,
    pub levels: u8,
    /// Each flow's source rate controller (all flows are DiffQ flows under the presets).
    pub rates: Vec<crate::net::diffq::SourceRate>,
    /// Tie-breaking streams, one per node (`net.diffq`).
    pub rng: Vec<Stream>,
    /// Packets sent per MAC level (priority usage), by level.
    pub level_use: Vec<u64>,
    /// Overheard queue lengths older than this are forgotten (soft state).
    pub expiry: SimTime,
    /// Negative differentials wait (`crate::net::diffq::may_send`).
    pub hold_negative: bool,
    /// Times a node had packets but held them all back.
    pub holds: u64,
    /// Candidate forwarders per destination (K of DSDV's next hops; 1: the routing next hop).
    pub next_hops: u32,
}

/// How often nodes holding DiffQ packets back reconsider them even when they hear nothing
/// (`stack.diffq.hold_negative`): a tenth of a second, like DPCLO's update interval (the
/// document gives none), short against the 1 s soft-state expiry that releases such packets.
pub const DIFFQ_TICK: SimTime = SimTime::from_ms(100);

/// What DiffQ's scheduler decided at a node (`World::diffq_choice`).
pub(super) enum DiffqChoice {
    /// Not DiffQ's decision: the queues' round robin, at this MAC level if given.
    RoundRobin(Option<u8>),
    /// Serve this destination's head-of-line packet at this MAC level, to this next hop
    /// (multi-path DiffQ) or the routing next hop.
    Serve(u32, u8, Option<u32>),
    /// Every destination's differential is negative: send nothing now.
    Hold,
}

/// DPCLO at every node (`stack.preset = "dpclo-zmacplus" | "dpclo-80211e"`;
/// `crate::net::dpclo`).
#[derive(Debug)]
pub struct DpcloState {
    pub l_lowmark: u32,
    pub l_highmark: u32,
    pub beta: f64,
    /// A bound on K besides `ceil(β·N)` (`stack.dpclo.k_max`; 1: single-path DPCLO).
    pub k_max: u32,
    /// The per-destination queue size.
    pub cap: u32,
    /// K per node and destination, `(destination, k)` sorted by destination.
    pub k: Vec<Vec<(u32, u32)>>,
    /// Each flow's source rate (packets/s).
    pub rates: Vec<crate::net::dpclo::SourceRate>,
    pub interval: SimTime,
    /// Packets sent per MAC level, by level.
    pub level_use: Vec<u64>,
    /// Scheduling decisions that held every packet back (no positive price).
    pub holds: u64,
    /// Overheard queue lengths older than this count as 0 (as for DiffQ).
    pub expiry: SimTime,
    /// Per node, the (next hop, destination) of the packet at its MAC.
    pub at_mac: Vec<Option<(u32, u32)>>,
    /// Per flow, packets its full source queue refused since the last rate sample.
    pub refused: Vec<u32>,
}

/// DCLO at every node (`stack.preset = "dclo"`; `crate::net::dclo`).
#[derive(Debug)]
pub struct DcloState {
    pub interval: SimTime,
    pub price_jitter: SimTime,
    pub match_delay: SimTime,
    pub request_timeout: SimTime,
    pub max_requests: u32,
    /// Eq. 2: w, and each flow's rate bounds (packets/s).
    pub utility_weight: f64,
    pub min_pps: f64,
    pub max_pps: Vec<f64>,
    /// The per-destination queue size (a partner's room).
    pub cap: u32,
    /// Seeds the tie-breaking hash of link weights.
    pub seed: u64,
    /// The current matching interval, numbered from 1.
    pub current: u32,
    pub nodes: Vec<crate::net::dclo::DcloNode>,
    /// Each flow's source rate (packets/s).
    pub rates: Vec<f64>,
    /// PRICE jitter streams, one per node (`net.dclo`).
    pub rng: Vec<Stream>,
    /// Node-intervals spent matched, and PRICE, REQUEST and ACCEPT messages sent.
    pub matched: u64,
    pub prices_sent: u64,
    pub requests_sent: u64,
    pub accepts_sent: u64,
}

impl World {
    /// DiffQ's choice at `node` (DiffQ §4.1, Forwarder Algorithm): the destination whose queue
    /// differential against its routing next hop is largest (ties at random), and the MAC
    /// priority of its head-of-line packet; destinations with a negative differential wait
    /// under `hold_negative`. Round robin without DiffQ, with nothing waiting, or under
    /// "rate_only" (at level 0).
    pub(super) fn diffq_choice(&mut self, node: u32) -> DiffqChoice {
        let Some(dq) = self.diffq.as_ref() else {
            return DiffqChoice::RoundRobin(None);
        };
        if self.dest_queues[node as usize].mac_busy() {
            return DiffqChoice::RoundRobin(None);
        }
        if !dq.scheduling {
            return DiffqChoice::RoundRobin(Some(0));
        }
        let (max_queue, levels, prio, hold) =
            (dq.max_queue, dq.levels, dq.prioritization, dq.hold_negative);
        let now = self.now();
        let expiry = dq.expiry;
        // The node's stream, copied out for the choice and written back (32 bytes).
        let mut rng = dq.rng[node as usize].clone();
        let overheard = &self.overheard[node as usize];
        let mut held = false;
        let candidates = self.dest_queues[node as usize]
            .waiting()
            .filter_map(|(dst, own)| {
                let (qd, best) = self.diffq_differential(node, dst, own, overheard, now, expiry);
                if hold && !crate::net::diffq::may_send(best) {
                    held = true;
                    return None;
                }
                Some((dst, qd))
            });
        let best = crate::net::diffq::pick(candidates, &mut rng);
        let choice = match best {
            Some((dst, qd)) => {
                let level = if prio {
                    crate::net::diffq::priority(qd, max_queue, levels)
                } else {
                    0
                };
                // Multi-path: the candidate with the shortest overheard queue, ties at random.
                let to = self.diffq_forwarders(node, dst).map(|cands| {
                    let overheard = &self.overheard[node as usize];
                    let shortest = cands
                        .iter()
                        .map(|&j| (j, -(overheard.fresh_len(j, dst, now, expiry) as i64)));
                    crate::net::diffq::pick(shortest, &mut rng)
                        .expect("at least one candidate")
                        .0
                });
                DiffqChoice::Serve(dst, level, to)
            }
            None if held => DiffqChoice::Hold,
            None => DiffqChoice::RoundRobin(None),
        };
        let dq = self.diffq.as_mut().expect("diffq");
        dq.rng[node as usize] = rng;
        dq.holds += matches!(choice, DiffqChoice::Hold) as u64;
        choice
    }

    /// Multi-path DiffQ's candidate forwarders F_ip from `node` towards `dst` (eq. 2): DSDV's
    /// `next_hops` best next hops. `None` for single-path DiffQ (the routing next hop).
    ///
    /// The document's multi-path DiffQ serves opportunistic routing, where any candidate that
    /// hears the packet may forward it; xlayer's MAC is unicast, so the packet goes to the
    /// candidate with the shortest overheard queue (ties at random, spreading load over equally
    /// backlogged candidates; xlayer's choice), while its priority follows the worst candidate,
    /// as eq. 2 has it.
    pub(super) fn diffq_forwarders(&self, node: u32, dst: u32) -> Option<&[u32]> {
        let k = self.diffq.as_ref().map_or(1, |d| d.next_hops) as usize;
        if k < 2 {
            return None;
        }
        let route = self.proto.as_ref()?.nodes[node as usize]
            .dsdv
            .as_ref()?
            .route(dst)?;
        let n = k.min(route.next_hops.len());
        (n > 0).then(|| &route.next_hops[..n])
    }

    /// DiffQ's queue differential at `node` for `dst` (own queue `own`): eq. 1 against the
    /// routing next hop, or eq. 2 over the candidate forwarders (the worst candidate's
    /// differential, which ranks destinations and sets the priority). Returns it and the
    /// differential towards the candidate with the shortest queue, where the packet would go
    /// (what holding compares).
    pub(super) fn diffq_differential(
        &self,
        node: u32,
        dst: u32,
        own: u32,
        overheard: &crate::net::queue::NeighbourQueues,
        now: SimTime,
        expiry: SimTime,
    ) -> (i64, i64) {
        let Some(cands) = self.diffq_forwarders(node, dst) else {
            let next = self.next_hop(node, dst);
            let theirs = if next == UNREACHABLE {
                0
            } else {
                overheard.fresh_len(next, dst, now, expiry)
            };
            let qd = own as i64 - theirs as i64;
            return (qd, qd);
        };
        let len = |j: u32| overheard.fresh_len(j, dst, now, expiry);
        let qd = crate::net::diffq::differential(own, cands.iter().map(|&j| len(j)))
            .expect("at least one candidate");
        let shortest = cands
            .iter()
            .map(|&j| len(j))
            .min()
            .expect("at least one candidate");
        (qd, own as i64 - shortest as i64)
    }

    /// DPCLO's choice at `node` (§IV-B, D, E): over the destinations with packets waiting and
    /// their K best DSDV-ETX next hops, the pair with the largest differential congestion price
    /// (eq. 7), if it is positive, with its MAC priority. `None` without DPCLO; `Some(None)`:
    /// nothing to send now (flow control holds the packets, or the MAC is busy).
    pub(super) fn dpclo_choice(&mut self, node: u32) -> Option<Option<(u32, u32, u8)>> {
        use crate::net::dpclo::{adapt_k, price, priority};
        let dp = self.dpclo.as_mut()?;
        if self.dest_queues[node as usize].mac_busy() {
            return Some(None);
        }
        let Some(np) = self.proto.as_ref().map(|p| &p.nodes[node as usize]) else {
            return Some(None);
        };
        let Some(dsdv) = np.dsdv.as_ref() else {
            return Some(None);
        };
        let now = self.queue.now();
        let overheard = &self.overheard[node as usize];
        let expiry = dp.expiry;
        let theirs = |j: u32, dst: u32| overheard.fresh_len(j, dst, now, expiry);
        let n_neighbours = self.neighbors[node as usize].len() as f64;
        let cap_k = ((dp.beta * n_neighbours).ceil() as u32).clamp(1, dp.k_max.max(1));
        let ks = &mut dp.k[node as usize];
        let mut best: Option<(u32, u32, f64)> = None;
        for (dst, own) in self.dest_queues[node as usize].waiting() {
            let Some(route) = dsdv.route(dst) else {
                continue;
            };
            if route.next_hops.is_empty() {
                continue;
            }
            let slot = match ks.binary_search_by_key(&dst, |e| e.0) {
                Ok(i) => i,
                Err(i) => {
                    ks.insert(i, (dst, 1));
                    i
                }
            };
            let k = ks[slot].1.min(route.next_hops.len() as u32);
            let k = adapt_k(
                k,
                route.next_hops[..k as usize]
                    .iter()
                    .map(|&j| theirs(j, dst)),
                dp.l_lowmark,
                dp.l_highmark,
                cap_k.min(route.next_hops.len() as u32),
            );
            ks[slot].1 = k;
            for &j in &route.next_hops[..k as usize] {
                let Some(etx) = np.etx.etx(j) else {
                    continue;
                };
                let c = price(own, theirs(j, dst), etx);
                if best.is_none_or(|b| c > b.2) {
                    best = Some((dst, j, c));
                }
            }
        }
        match best {
            Some((d, j, c)) if c > 0.0 => Some(Some((d, j, priority(c, dp.cap)))),
            Some(_) => {
                dp.holds += 1;
                Some(None)
            }
            None => Some(None),
        }
    }

    /// DPCLO: `node`'s MAC is done with its data packet. If the next hop acknowledged it, its
    /// queue for the destination holds one more packet than `node` last heard: `node` counts
    /// it at once (our choice, not in the document: without it a node keeps handing packets to
    /// a neighbour it believes empty until that neighbour next transmits, and overflows its
    /// 3-packet queue — hop-by-hop flow control, §IV-B, is meant to prevent exactly that).
    pub(super) fn dpclo_handed_over(&mut self, node: u32, delivered: bool) {
        let Some(dp) = self.dpclo.as_mut() else {
            return;
        };
        let Some((j, dst)) = dp.at_mac[node as usize].take() else {
            return;
        };
        if !delivered || j == dst {
            return;
        }
        let now = self.queue.now();
        let o = &mut self.overheard[node as usize];
        let len = o.fresh_len(j, dst, now, dp.expiry) + 1;
        o.record(crate::net::queue::Overheard {
            neighbour: j,
            dst,
            queue_len: len,
            sent: now,
            heard: now,
        });
    }

    /// The back-pressure tick. DCLO: a matching interval starts. DPCLO: every source samples
    /// its own queue and sets its rate (§IV-C). DPCLO and DiffQ (holding negative
    /// differentials): nodes holding packets back reconsider them (their neighbours' queues may
    /// have drained).
    pub(super) fn backpressure_tick(&mut self) {
        if self.dclo.is_some() {
            return self.dclo_tick();
        }
        let now = self.now();
        let interval = match self.dpclo.as_mut() {
            Some(dp) => {
                for (i, f) in self.flows.iter().enumerate() {
                    let refused = std::mem::take(&mut dp.refused[i]);
                    if f.emitting(now) {
                        let own = self.dest_queues[f.src as usize].len(f.dst);
                        dp.rates[i].sample(own, refused);
                    }
                }
                dp.interval
            }
            None => DIFFQ_TICK,
        };
        for node in 0..self.nodes.len() as u32 {
            let q = &self.dest_queues[node as usize];
            if !q.mac_busy() && q.waiting().next().is_some() {
                self.pump(node);
            }
        }
        if now + interval < self.end {
            self.queue.schedule(now + interval, Event::BackpressureTick);
        }
    }

    /// DCLO's matching interval starts: every node forgets the last one's matching, sources set
    /// their rate from their own queue (eq. 2), and the PRICE and matching instants of every
    /// node are scheduled.
    pub(super) fn dclo_tick(&mut self) {
        use rand::Rng;
        let now = self.now();
        let dc = self.dclo.as_mut().expect("dclo");
        dc.current += 1;
        let current = dc.current;
        for (i, st) in dc.nodes.iter_mut().enumerate() {
            st.reset(i as u32, current);
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.emitting(now) {
                // The source's price is at least the packet it is about to send.
                let p = self.dest_queues[f.src as usize].len(f.dst).max(1);
                dc.rates[i] =
                    crate::net::dclo::source_rate(p, dc.utility_weight, dc.min_pps, dc.max_pps[i]);
            }
        }
        // Both instants are jittered: broadcasts sent in the same instant collide under CSMA.
        let jitter = dc.price_jitter.ns();
        for node in 0..self.nodes.len() as u32 {
            let mut draw = || {
                if jitter > 0 {
                    SimTime(dc.rng[node as usize].gen_range(0..jitter))
                } else {
                    SimTime::ZERO
                }
            };
            let at = [
                (now + draw(), NetTimerKind::DcloPrice),
                (now + dc.match_delay + draw(), NetTimerKind::DcloMatch),
            ];
            for (t, kind) in at {
                self.queue.schedule(t, Event::NetTimer { node, kind });
            }
        }
        if now + dc.interval < self.end {
            self.queue
                .schedule(now + dc.interval, Event::BackpressureTick);
        }
    }

    pub(super) fn dclo_timer(&mut self, node: u32, kind: NetTimerKind) {
        let now = self.now();
        let Some(dc) = self.dclo.as_mut() else {
            return;
        };
        let current = dc.current;
        let st = &mut dc.nodes[node as usize];
        match kind {
            NetTimerKind::DcloPrice => {
                let bytes = st.publish(current, self.dest_queues[node as usize].lengths());
                dc.prices_sent += 1;
                self.control_send(
                    node,
                    current as u64,
                    bytes,
                    Control::DcloPrice { interval: current },
                );
            }
            NetTimerKind::DcloMatch => {
                let salt = crate::sim::rng::splitmix64(dc.seed) ^ current as u64;
                // The matcher is taken out while the links are read from every node's prices.
                let mut m = std::mem::take(&mut dc.nodes[node as usize].matcher);
                let out = m.start(crate::net::dclo::candidates(&dc.nodes, node, current, salt));
                dc.nodes[node as usize].matcher = m;
                self.dclo_send(node, out);
            }
            _ => {
                if st.retry_at != Some(now) {
                    return;
                }
                st.retry_at = None;
                if st.matcher.waiting() && st.requests < dc.max_requests {
                    let out = st.matcher.retry();
                    self.dclo_send(node, out);
                }
            }
        }
    }

    /// Sends what `node`'s matching asks for; a REQUEST arms its repeat, a new match lets the
    /// node forward.
    pub(super) fn dclo_send(&mut self, node: u32, msg: Option<crate::net::dclo::MatchMsg>) {
        use crate::net::dclo::{MatchMsg, MATCH_BYTES};
        use rand::Rng;
        let now = self.now();
        let dc = self.dclo.as_mut().expect("dclo");
        let current = dc.current;
        let (target, accept) = match msg {
            Some(MatchMsg::Request(t)) => (t, false),
            Some(MatchMsg::Accept(t)) => (t, true),
            None => return,
        };
        let st = &mut dc.nodes[node as usize];
        // A node is matched exactly when it sends its first ACCEPT of the interval.
        let newly = accept && !st.announced;
        if accept {
            dc.accepts_sent += 1;
            st.announced = true;
            st.retry_at = None;
            dc.matched += newly as u64;
        } else {
            dc.requests_sent += 1;
            st.requests += 1;
            if st.requests < dc.max_requests {
                // Uniform in [1, 2) timeouts, so that nodes that lost their REQUESTs to each
                // other do not repeat them in step.
                let t = dc.request_timeout.ns();
                let at = now + dc.request_timeout + SimTime(dc.rng[node as usize].gen_range(0..t));
                st.retry_at = Some(at);
                self.queue.schedule(
                    at,
                    Event::NetTimer {
                        node,
                        kind: NetTimerKind::DcloRetry,
                    },
                );
            }
        }
        self.control_send(
            node,
            current as u64,
            MATCH_BYTES,
            Control::DcloMatch {
                interval: current,
                target,
                accept,
            },
        );
        if newly {
            let q = &self.dest_queues[node as usize];
            if !q.mac_busy() && q.waiting().next().is_some() {
                self.pump(node);
            }
        }
    }

    /// A DCLO control packet from `from` arrived at `node`; packets of an earlier interval are
    /// ignored.
    pub(super) fn dclo_receive(&mut self, node: u32, from: u32, control: Control) {
        let Some(dc) = self.dclo.as_mut() else {
            return;
        };
        let current = dc.current;
        let st = &mut dc.nodes[node as usize];
        let out = match control {
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
        self.dclo_send(node, out);
    }

    /// DCLO's choice at `node`: a matched sender hands the MAC a packet of its link's
    /// destination k* for its partner while the partner has room (`net::dclo::may_send`);
    /// unmatched nodes and receivers hold their packets. `None` without DCLO.
    pub(super) fn dclo_choice(&mut self, node: u32) -> Option<Option<(u32, u32, u8)>> {
        let dc = self.dclo.as_mut()?;
        let q = &self.dest_queues[node as usize];
        if q.mac_busy() {
            return Some(None);
        }
        let st = &mut dc.nodes[node as usize];
        let Some(link) = st.matcher.partner else {
            return Some(None);
        };
        let theirs = st.receiver_price(&link);
        if !crate::net::dclo::may_send(&link, node, theirs, st.sent, dc.cap)
            || !q.waiting().any(|(d, _)| d == link.dst)
        {
            return Some(None);
        }
        st.sent += 1;
        Some(Some((link.dst, link.receiver, 0)))
    }
}
