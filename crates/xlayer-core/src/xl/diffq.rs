//! DiffQ (Warrier et al., "DiffQ: differential backlog congestion control for wireless multi-hop
//! networks", §4-5): the pieces that do not depend on how queues are stored.
//!
//! - the queue differential `QD_i(d) = |Q_i(d)| - |Q_j(d)|` towards the routing next hop `j`
//!   (eq. 1), or its minimum over a candidate forwarder set (eq. 2): DSDV's K next hops, or the
//!   forwarder list of an opportunistically routed packet (DiffQ-MORE, §4.2: the head packet's
//!   MORE forwarders downstream of the node within one hop, `crate::xl::more`);
//! - the scheduler's choice: the destination whose head-of-line packet has the largest
//!   differential, ties broken by the node's random stream ([`pick`]);
//! - the MAC priority `max(ceil(QD / D · Δ), 0)`, capped at the top level `Δ - 1` ([`priority`]);
//! - source rate control ([`SourceRate`]): the AIMD of the document's pseudo-code on the source's
//!   own destination queue, or the log-utility controller.

use rand::Rng;

use super::{Action, Choice, NodeView, Schedule, SourceRateControl, Tick};
use crate::net::routing::UNREACHABLE;
use crate::sim::rng::Stream;
use crate::sim::SimTime;
use crate::wire::packet::Packet;

/// The document's MAC priority: the differential quantized linearly into `levels` (Δ) steps of
/// `max_queue / levels` (D / Δ), 0 for a differential of 0 or less. `ceil(QD/D·Δ)` reaches Δ at
/// `QD = D`; levels are numbered 0..Δ-1, so the top value is capped at Δ - 1.
pub fn priority(qd: i64, max_queue: u32, levels: u8) -> u8 {
    if qd <= 0 || levels == 0 || max_queue == 0 {
        return 0;
    }
    let q = (qd as u64 * levels as u64).div_ceil(max_queue as u64);
    q.min(levels as u64 - 1) as u8
}

/// Whether a head-of-line packet with differential `qd` may go out now when DiffQ holds
/// negative differentials (`stack.diffq.hold_negative`, the default under `mode = "full"`).
///
/// The document's pseudo-code sends a negative differential at priority 0
/// (`max(ceil(QD/D·Δ), 0)`). Taken literally at 40 nodes and 16-32 flows, relays keep pushing
/// into neighbours whose queues are full (15k transit drops in `scenarios/diffq-ablation.toml`),
/// and a source that also relays keeps its own queue at QUEUE_THRESH while its transit queues
/// grow towards D, so its own destination never has the largest differential and the flow
/// starves. Holding instead is the back-pressure rule of Tassiulas and Ephremides that DiffQ
/// adapts (serve only a non-negative differential): queues then fall towards the destinations,
/// the source's queue carries the path's congestion, and its rate control sees it. Equal
/// queues (QD = 0) still pass, so flat queues along a path keep moving.
///
/// TCP's zero-payload segments (SYN, FIN, pure ACKs) never wait here: under DiffQ they are
/// the document's non-DiffQ traffic ([`is_diffq_traffic`]).
pub fn may_send(qd: i64) -> bool {
    qd >= 0
}

/// Whether a packet goes through DiffQ's destination queues. TCP segments without payload
/// (SYN, FIN, pure ACKs) do not: they bypass them at MAC priority 0, as the document's
/// non-DiffQ traffic does (§5.5). DiffQ's source rate control governs payload only (DiffQ-TCP
/// paces data at the DiffQ rate), and a lone handshake segment behind held data could
/// otherwise wait for tens of seconds: with 32 DiffQ-TCP flows on 40 nodes, 9 flows never
/// finished their handshake in 60 s (`scenarios/diffq-ablation.toml`, seed 2).
pub fn is_diffq_traffic(p: &Packet) -> bool {
    !(p.payload_bytes == 0 && matches!(p.transport, crate::wire::packet::Header::Tcp(_)))
}

/// Eq. 2: the differential against the worst candidate forwarder (the one with the longest
/// queue); eq. 1 is the one-candidate case. `None` without candidates.
pub fn differential(own: u32, candidates: impl IntoIterator<Item = u32>) -> Option<i64> {
    candidates.into_iter().map(|q| own as i64 - q as i64).min()
}

/// The destination to serve: the largest differential among `(destination, differential)`
/// candidates; equal maxima are broken uniformly at random by `rng` (reservoir sampling, so the
/// choice needs no allocation).
pub fn pick<R: Rng>(
    candidates: impl IntoIterator<Item = (u32, i64)>,
    rng: &mut R,
) -> Option<(u32, i64)> {
    let mut best: Option<(u32, i64)> = None;
    let mut ties = 0u32;
    for (d, qd) in candidates {
        match best {
            Some((_, b)) if qd < b => {}
            Some((_, b)) if qd == b => {
                ties += 1;
                if rng.gen_range(0..ties + 1) == 0 {
                    best = Some((d, qd));
                }
            }
            _ => {
                best = Some((d, qd));
                ties = 0;
            }
        }
    }
    best
}

/// How a DiffQ source sets its rate from its own destination queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateControl {
    /// The document's AIMD (§4.1 pseudo-code, §6.1 values): at each packet the source emits,
    /// `rate += alpha` while its queue is at most `queue_thresh`, else `rate *= beta`. The
    /// pseudo-code writes `rate / beta` with beta = 0.5, which would raise the rate under
    /// congestion; the text says the rate must fall when the queue grows, so xlayer multiplies.
    /// `alpha` is in Mbit/s (the document gives 0.01 without a unit; with Mbit/s a source
    /// gains 1 Mbit/s over 100 packets, the testbed's 11 Mbit/s in about a thousand).
    Aimd { alpha_mbps: f64, beta: f64 },
    /// The log-utility controller of the back-pressure literature the document cites (Neely;
    /// Eryilmaz and Srikant): the source admits `V / q` — the rate maximizing
    /// `V·log(r) − q·r` — with `V = max_rate · queue_thresh`, so the rate is the maximum while
    /// the queue is at most `queue_thresh` and falls as `1/q` beyond.
    LogUtility,
}

/// A DiffQ source's rate controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceRate {
    pub control: RateControl,
    pub queue_thresh: u32,
    pub min_bps: f64,
    pub max_bps: f64,
    rate_bps: f64,
}

impl SourceRate {
    pub fn new(control: RateControl, queue_thresh: u32, initial_bps: f64, max_bps: f64) -> Self {
        // 1 kbit/s floor: a source never stops for good, so it can notice the queue drain.
        let min_bps = 1e3f64.min(max_bps);
        SourceRate {
            control,
            queue_thresh,
            min_bps,
            max_bps,
            rate_bps: initial_bps.clamp(min_bps, max_bps),
        }
    }

    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// Updates the rate at a packet the source emits, from its own destination queue's length.
    pub fn on_packet(&mut self, own_queue: u32) -> f64 {
        self.rate_bps = match self.control {
            RateControl::Aimd { alpha_mbps, beta } => {
                if own_queue > self.queue_thresh {
                    self.rate_bps * beta
                } else {
                    self.rate_bps + alpha_mbps * 1e6
                }
            }
            RateControl::LogUtility => {
                self.max_bps * self.queue_thresh.max(1) as f64
                    / own_queue.max(self.queue_thresh.max(1)) as f64
            }
        }
        .clamp(self.min_bps, self.max_bps);
        self.rate_bps
    }
}

/// How often nodes holding DiffQ packets back reconsider them even when they hear nothing
/// (`stack.diffq.hold_negative`): a tenth of a second, like DPCLO's update interval (the
/// document gives none), short against the 1 s soft-state expiry that releases such packets.
pub const DIFFQ_TICK: SimTime = SimTime::from_ms(100);

/// DiffQ's scheduler at every node (`stack.preset = "diffq-udp" | "diffq-tcp"`): the Forwarder
/// Algorithm of §4.1 over per-destination queues.
#[derive(Debug)]
pub struct DiffqScheduler {
    /// Differential scheduling (else round robin) and MAC priorities (else level 0).
    pub scheduling: bool,
    pub prioritization: bool,
    /// D: the per-destination queue size; Δ: the MAC's levels.
    pub max_queue: u32,
    pub levels: u8,
    /// Tie-breaking streams, one per node (`net.diffq`).
    pub rng: Vec<Stream>,
    /// Packets sent per MAC level (priority usage), by level.
    pub level_use: Vec<u64>,
    /// Overheard queue lengths older than this are forgotten (soft state).
    pub expiry: SimTime,
    /// Negative differentials wait ([`may_send`]).
    pub hold_negative: bool,
    /// Times a node had packets but held them all back.
    pub holds: u64,
    /// Candidate forwarders per destination (K of DSDV's next hops; 1: the routing next hop).
    pub next_hops: u32,
}

impl DiffqScheduler {
    /// The choice at `v.node` (§4.1, Forwarder Algorithm): the destination whose queue
    /// differential against its routing next hop is largest (ties at random), and the MAC
    /// priority of its head-of-line packet; destinations with a negative differential wait
    /// under `hold_negative`. Round robin with nothing waiting, or under "rate_only" (at level
    /// 0).
    fn decide(&mut self, v: &NodeView) -> Choice {
        if v.queues.mac_busy() {
            return Choice::RoundRobin(None);
        }
        if !self.scheduling {
            return Choice::RoundRobin(Some(0));
        }
        let (now, expiry, hold) = (v.now, self.expiry, self.hold_negative);
        // The node's stream, copied out for the choice and written back (32 bytes).
        let mut rng = self.rng[v.node as usize].clone();
        let mut held = false;
        let candidates = v.queues.waiting().filter_map(|(dst, own)| {
            let (qd, best) = self.differential_at(v, dst, own);
            if hold && !may_send(best) {
                held = true;
                return None;
            }
            Some((dst, qd))
        });
        let best = pick(candidates, &mut rng);
        let choice = match best {
            Some((dst, qd)) => {
                let level = if self.prioritization {
                    priority(qd, self.max_queue, self.levels)
                } else {
                    0
                };
                // Multi-path: the candidate with the shortest overheard queue, ties at random.
                // An opportunistic packet (DiffQ-MORE) is broadcast to all its candidates.
                let unicast = v.opportunistic_candidates(dst).is_none();
                let next = self.forwarders(v, dst).filter(|_| unicast).map(|cands| {
                    let shortest = cands
                        .iter()
                        .map(|&j| (j, -(v.overheard.fresh_len(j, dst, now, expiry) as i64)));
                    pick(shortest, &mut rng).expect("at least one candidate").0
                });
                Choice::Serve { dst, level, next }
            }
            None if held => Choice::Hold,
            None => Choice::RoundRobin(None),
        };
        self.rng[v.node as usize] = rng;
        self.holds += matches!(choice, Choice::Hold) as u64;
        choice
    }

    /// Multi-path DiffQ's candidate forwarders F_ip from `v.node` towards `dst` (eq. 2):
    /// DSDV's `next_hops` best next hops. `None` for single-path DiffQ (the routing next hop).
    ///
    /// The document's multi-path DiffQ serves opportunistic routing, where any candidate that
    /// hears the packet may forward it; xlayer's MAC is unicast, so the packet goes to the
    /// candidate with the shortest overheard queue (ties at random, spreading load over equally
    /// backlogged candidates; xlayer's choice), while its priority follows the worst
    /// candidate, as eq. 2 has it.
    fn forwarders<'a>(&self, v: &NodeView<'a>, dst: u32) -> Option<&'a [u32]> {
        let k = self.next_hops as usize;
        if k < 2 {
            return None;
        }
        let hops = v.routing.proto()?.nodes[v.node as usize]
            .dsdv
            .as_ref()?
            .next_hops(dst);
        let n = k.min(hops.len());
        (n > 0).then(|| &hops[..n])
    }

    /// The queue differential at `v.node` for `dst` (own queue `own`): eq. 1 against the
    /// routing next hop, or eq. 2 over the candidate forwarders (the worst candidate's
    /// differential, which ranks destinations and sets the priority). Returns it and the
    /// differential towards the candidate with the shortest queue, where the packet would go
    /// (what holding compares).
    fn differential_at(&self, v: &NodeView, dst: u32, own: u32) -> (i64, i64) {
        let (now, expiry) = (v.now, self.expiry);
        if let Some(cands) = v.opportunistic_candidates(dst) {
            // DiffQ-MORE (§4.2): F_ip is the head packet's forwarder list within one hop;
            // eq. 2 against its longest overheard queue, the hold against its shortest. A node
            // with no candidate left (its batch flushed) compares with an empty queue.
            let lens = || {
                cands
                    .iter()
                    .map(|&j| v.overheard.fresh_len(j, dst, now, expiry))
            };
            let qd = differential(own, lens()).unwrap_or(own as i64);
            let best = lens().min().map_or(own as i64, |l| own as i64 - l as i64);
            return (qd, best);
        }
        let Some(cands) = self.forwarders(v, dst) else {
            let next = v.next_hop(dst);
            let theirs = if next == UNREACHABLE {
                0
            } else {
                v.overheard.fresh_len(next, dst, now, expiry)
            };
            let qd = own as i64 - theirs as i64;
            return (qd, qd);
        };
        let len = |j: u32| v.overheard.fresh_len(j, dst, now, expiry);
        let qd = differential(own, cands.iter().map(|&j| len(j))).expect("at least one candidate");
        let shortest = cands
            .iter()
            .map(|&j| len(j))
            .min()
            .expect("at least one candidate");
        (qd, own as i64 - shortest as i64)
    }
}

impl Schedule for DiffqScheduler {
    /// TCP's zero-payload segments bypass the queues ([`is_diffq_traffic`]).
    fn queues(&self, p: &Packet) -> bool {
        is_diffq_traffic(p)
    }
    fn choose(&mut self, v: &NodeView) -> Choice {
        self.decide(v)
    }
    fn level_used(&mut self, level: u8) {
        self.level_use[level as usize] += 1;
    }
    fn repumps_on_overheard(&self) -> bool {
        self.hold_negative
    }
    /// Held packets are looked at again every [`DIFFQ_TICK`].
    fn tick(&mut self, _now: SimTime, _nodes: usize, _out: &mut Vec<Action>) -> Option<Tick> {
        Some(Tick {
            pump_all: true,
            interval: DIFFQ_TICK,
        })
    }
    fn holds(&self) -> u64 {
        self.holds
    }
    fn level_use(&self) -> Option<&[u64]> {
        Some(&self.level_use)
    }
}

/// DiffQ's sources (§4.1): each flow's rate follows its source's own destination queue, for a
/// constant-rate UDP source at each packet and for a paced TCP sender at each departure.
#[derive(Debug)]
pub struct DiffqSources {
    pub rates: Vec<SourceRate>,
}

impl SourceRateControl for DiffqSources {
    fn reads_own_queue(&self) -> bool {
        true
    }
    fn next_interval(&mut self, flow: u32, own: u32, payload: u32) -> Option<SimTime> {
        let rate = self.rates[flow as usize].on_packet(own);
        Some(crate::app::cbr_interval(payload, rate))
    }
    fn pace_rate(&mut self, flow: u32, own: u32) -> Option<f64> {
        Some(self.rates[flow as usize].on_packet(own))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::stream;

    #[test]
    fn priority_quantizes_linearly_and_caps_at_the_top_level() {
        // D = 40, Δ = 8: steps of 5 packets.
        assert_eq!(priority(-3, 40, 8), 0);
        assert_eq!(priority(0, 40, 8), 0);
        assert_eq!(priority(1, 40, 8), 1);
        assert_eq!(priority(5, 40, 8), 1);
        assert_eq!(priority(6, 40, 8), 2);
        assert_eq!(priority(35, 40, 8), 7);
        assert_eq!(priority(40, 40, 8), 7);
        assert_eq!(priority(400, 40, 8), 7);
        assert_eq!(priority(10, 40, 1), 0);
    }

    #[test]
    fn negative_differentials_wait() {
        assert!(may_send(3));
        assert!(may_send(0), "equal queues keep a flat path moving");
        assert!(!may_send(-1));
    }

    #[test]
    fn differential_is_against_the_longest_candidate_queue() {
        assert_eq!(differential(10, [3]), Some(7));
        assert_eq!(differential(10, [3, 12, 5]), Some(-2));
        assert_eq!(differential(10, []), None);
    }

    #[test]
    fn pick_takes_the_largest_differential_and_breaks_ties_evenly() {
        let mut rng = stream(1, 0, "test.diffq");
        assert_eq!(pick([(4, 1), (9, 6), (2, -3)], &mut rng), Some((9, 6)));
        assert_eq!(pick(std::iter::empty(), &mut rng), None);
        let mut counts = [0u32; 3];
        for _ in 0..3000 {
            let (d, _) = pick([(0, 5), (1, 5), (2, 5), (3, 1)], &mut rng).unwrap();
            counts[d as usize] += 1;
        }
        for c in counts {
            assert!((900..1100).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn aimd_adds_below_the_threshold_and_halves_above_it() {
        let mut r = SourceRate::new(
            RateControl::Aimd {
                alpha_mbps: 0.01,
                beta: 0.5,
            },
            5,
            1e6,
            11e6,
        );
        assert_eq!(r.on_packet(5), 1.01e6);
        assert_eq!(r.on_packet(6), 0.505e6);
        for _ in 0..2000 {
            r.on_packet(0);
        }
        assert_eq!(r.rate_bps(), 11e6, "capped at the maximum");
        for _ in 0..100 {
            r.on_packet(50);
        }
        assert_eq!(r.rate_bps(), 1e3, "floored at 1 kbit/s");
    }

    #[test]
    fn log_utility_rate_falls_as_one_over_the_queue() {
        let mut r = SourceRate::new(RateControl::LogUtility, 4, 1e6, 8e6);
        assert_eq!(r.on_packet(2), 8e6);
        assert_eq!(r.on_packet(8), 4e6);
        assert_eq!(r.on_packet(16), 2e6);
    }
}
