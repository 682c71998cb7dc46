//! DPCLO, the practical cross-layer optimization of the DPCLO document (§IV): the pieces that
//! do not depend on how queues, routes and neighbours are stored.
//!
//! - the differential congestion price `C_ij^k = (l_i^k - l_j^k) / ETX_ij` (eq. 7) — a node
//!   serves the destination and next hop with the largest price, and sends only while it is
//!   positive (hop-by-hop flow control, §IV-B: no packet goes to a neighbour whose queue is at
//!   least as long);
//! - the price's MAC priority: high, medium or low ([`priority`]);
//! - K, the number of next hops considered per destination ([`adapt_k`], §IV-E);
//! - source rate adaptation from the source's own queue ([`SourceRate`], §IV-C).

use super::{Action, Choice, NodeView, Schedule, SourceRateControl, Tick};
use crate::net::queue::{NeighbourQueues, Overheard};
use crate::sim::SimTime;

/// Eq. 7.
#[inline]
pub fn price(own: u32, theirs: u32, etx: f64) -> f64 {
    (own as f64 - theirs as f64) / etx.max(1.0)
}

/// The priority of a price: the document names three levels (low, medium, high) without the
/// boundaries; xlayer splits the possible positive prices — at most the queue size `cap` over an
/// ETX of at least 1 — in thirds: above 2/3 of `cap` high (2), above 1/3 medium (1), else low
/// (0). The MAC's level above these is reserved for routing messages.
pub fn priority(price: f64, cap: u32) -> u8 {
    let cap = cap.max(1) as f64;
    if price > 2.0 * cap / 3.0 {
        2
    } else if price > cap / 3.0 {
        1
    } else {
        0
    }
}

/// §IV-E: K grows by one when the queues of all current K next hops exceed `high`, shrinks by
/// one when they are all below `low`, and stays within 1..=`cap` (`cap = max(1, ceil(β·N))` for
/// N neighbours; the document's `β·N` rounds to 0 for fewer than ten neighbours, so xlayer
/// rounds up).
pub fn adapt_k(
    k: u32,
    next_hop_queues: impl IntoIterator<Item = u32>,
    low: u32,
    high: u32,
    cap: u32,
) -> u32 {
    let (mut all_high, mut all_low, mut any) = (true, true, false);
    for q in next_hop_queues {
        any = true;
        all_high &= q > high;
        all_low &= q < low;
    }
    let cap = cap.max(1);
    let k = if !any {
        k
    } else if all_high {
        k + 1
    } else if all_low {
        k.saturating_sub(1)
    } else {
        k
    };
    k.clamp(1, cap)
}

/// §IV-C: every `interval` the source samples its own queue; an unchanged queue probes for
/// bandwidth (`rate += delta`), a changed one moves the rate by `QueueDiff / interval`. The
/// document does not say which way QueueDiff is taken; a growing queue must slow the source
/// (§IV-C's goal), so xlayer uses `previous - current` (packets/s per packet of change).
///
/// The queue holds at most 3 packets (Table I), so a source sending faster than its queue
/// drains finds it full and unchanged, and would probe upwards for ever. xlayer counts the
/// packets the full queue refused since the last sample as growth (our choice: they are the
/// backlog an unbounded queue would have gained), so `QueueDiff / interval` is then exactly the
/// excess of the sending rate over the drain rate and the source falls back to the latter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceRate {
    pub rate_pps: f64,
    pub delta_pps: f64,
    pub interval_s: f64,
    pub max_pps: f64,
    last: Option<u32>,
}

/// The slowest a DPCLO source goes (packets/s): it keeps sampling a drained queue.
pub const MIN_RATE_PPS: f64 = 1.0;

impl SourceRate {
    pub fn new(initial_pps: f64, delta_pps: f64, interval_s: f64, max_pps: f64) -> SourceRate {
        SourceRate {
            rate_pps: initial_pps.clamp(MIN_RATE_PPS, max_pps.max(MIN_RATE_PPS)),
            delta_pps,
            interval_s,
            max_pps,
            last: None,
        }
    }

    /// One sample of the source's own queue, with the packets it refused (full) since the
    /// last sample; returns the new rate (packets/s).
    pub fn sample(&mut self, queue: u32, refused: u32) -> f64 {
        let r = match self.last {
            Some(prev) if prev == queue && refused == 0 => self.rate_pps + self.delta_pps,
            Some(prev) => {
                let growth = queue as f64 - prev as f64 + refused as f64;
                self.rate_pps - growth / self.interval_s
            }
            None => self.rate_pps,
        };
        self.last = Some(queue);
        self.rate_pps = r.clamp(MIN_RATE_PPS, self.max_pps.max(MIN_RATE_PPS));
        self.rate_pps
    }
}

/// DPCLO's scheduler at every node (`stack.preset = "dpclo-zmacplus" | "dpclo-80211e"`).
#[derive(Debug)]
pub struct DpcloScheduler {
    pub l_lowmark: u32,
    pub l_highmark: u32,
    pub beta: f64,
    /// A bound on K besides `ceil(β·N)` (`stack.dpclo.k_max`; 1: single-path DPCLO).
    pub k_max: u32,
    /// Whether eq. 7 divides by the link's ETX (`stack.dpclo.etx`); `false`: ETX = 1.
    pub use_etx: bool,
    /// The per-destination queue size.
    pub cap: u32,
    /// K per node and destination, `(destination, k)` sorted by destination.
    pub k: Vec<Vec<(u32, u32)>>,
    /// The update interval (§IV-C): sources sample their queue, held nodes look again.
    pub interval: SimTime,
    /// Packets sent per MAC level, by level.
    pub level_use: Vec<u64>,
    /// Scheduling decisions that held every packet back (no positive price).
    pub holds: u64,
    /// Overheard queue lengths older than this count as 0 (as for DiffQ).
    pub expiry: SimTime,
    /// Per node, the (next hop, destination) of the packet at its MAC.
    pub at_mac: Vec<Option<(u32, u32)>>,
}

impl DpcloScheduler {
    /// The choice at `v.node` (§IV-B, D, E): over the destinations with packets waiting and
    /// their K best DSDV-ETX next hops, the pair with the largest differential congestion price
    /// (eq. 7), if it is positive, with its MAC priority; else nothing now (flow control holds
    /// the packets, or the MAC is busy, or DSDV has no table yet).
    fn decide(&mut self, v: &NodeView) -> Choice {
        if v.queues.mac_busy() {
            return Choice::Hold;
        }
        let Some(np) = v.routing.proto().map(|p| &p.nodes[v.node as usize]) else {
            return Choice::Hold;
        };
        let Some(dsdv) = np.dsdv.as_ref() else {
            return Choice::Hold;
        };
        let (now, expiry) = (v.now, self.expiry);
        let theirs = |j: u32, dst: u32| v.overheard.fresh_len(j, dst, now, expiry);
        let cap_k = ((self.beta * v.neighbours as f64).ceil() as u32).clamp(1, self.k_max.max(1));
        let ks = &mut self.k[v.node as usize];
        let mut best: Option<(u32, u32, f64)> = None;
        for (dst, own) in v.queues.waiting() {
            let hops = dsdv.next_hops(dst);
            if hops.is_empty() {
                continue;
            }
            let slot = match ks.binary_search_by_key(&dst, |e| e.0) {
                Ok(i) => i,
                Err(i) => {
                    ks.insert(i, (dst, 1));
                    i
                }
            };
            let k = ks[slot].1.min(hops.len() as u32);
            let k = adapt_k(
                k,
                hops[..k as usize].iter().map(|&j| theirs(j, dst)),
                self.l_lowmark,
                self.l_highmark,
                cap_k.min(hops.len() as u32),
            );
            ks[slot].1 = k;
            for &j in &hops[..k as usize] {
                let Some(etx) = np.etx.etx(j) else {
                    continue;
                };
                let c = price(own, theirs(j, dst), if self.use_etx { etx } else { 1.0 });
                if best.is_none_or(|b| c > b.2) {
                    best = Some((dst, j, c));
                }
            }
        }
        match best {
            Some((dst, j, c)) if c > 0.0 => Choice::Serve {
                dst,
                level: priority(c, self.cap),
                next: Some(j),
            },
            Some(_) => {
                self.holds += 1;
                Choice::Hold
            }
            None => Choice::Hold,
        }
    }

    /// `node`'s MAC is done with its data packet. If the next hop acknowledged it, its queue
    /// for the destination holds one more packet than `node` last heard: `node` counts it at
    /// once (our choice, not in the document: without it a node keeps handing packets to a
    /// neighbour it believes empty until that neighbour next transmits, and overflows its
    /// 3-packet queue — hop-by-hop flow control, §IV-B, is meant to prevent exactly that).
    pub fn handed_over(
        &mut self,
        node: u32,
        delivered: bool,
        now: SimTime,
        overheard: &mut NeighbourQueues,
    ) {
        let Some((j, dst)) = self.at_mac[node as usize].take() else {
            return;
        };
        if !delivered || j == dst {
            return;
        }
        let len = overheard.fresh_len(j, dst, now, self.expiry) + 1;
        overheard.record(Overheard {
            neighbour: j,
            dst,
            queue_len: len,
            sent: now,
            heard: now,
        });
    }
}

/// DPCLO's sources: each flow's rate, sampled every update interval.
#[derive(Debug)]
pub struct DpcloSources {
    /// Each flow's source rate (packets/s).
    pub rates: Vec<SourceRate>,
    /// Per flow, packets its full source queue refused since the last rate sample.
    pub refused: Vec<u32>,
}

impl DpcloSources {
    /// Every emitting flow samples its own queue, with what its queue refused since the last
    /// sample (§IV-C).
    pub fn sample(&mut self, emitting: &dyn Fn(usize) -> bool, own: &dyn Fn(usize) -> u32) {
        for i in 0..self.rates.len() {
            let refused = std::mem::take(&mut self.refused[i]);
            if emitting(i) {
                self.rates[i].sample(own(i), refused);
            }
        }
    }
}

impl Schedule for DpcloScheduler {
    fn choose(&mut self, v: &NodeView) -> Choice {
        self.decide(v)
    }
    fn level_used(&mut self, level: u8) {
        self.level_use[level as usize] += 1;
    }
    fn handed_to_mac(&mut self, node: u32, next: u32, dst: u32) {
        self.at_mac[node as usize] = Some((next, dst));
    }
    fn mac_done(&mut self, node: u32, delivered: bool, now: SimTime, heard: &mut NeighbourQueues) {
        self.handed_over(node, delivered, now, heard);
    }
    /// DPCLO's header counts the queue without the packet on the air, which has left it (as
    /// in ns-2, where the routing queue hands it to the MAC): with it, a neighbour that sent
    /// its last packet would look non-empty until its length expires (1 s), and a path of
    /// 3-packet queues could keep its falling gradient for only three hops (measured on
    /// scenarios/dpclo-fig9.toml: flows of 4+ hops carried 2-6 kbit/s, about one packet per
    /// expiry).
    fn header_queue_len(&self, len: u32) -> u32 {
        len.saturating_sub(1)
    }
    fn repumps_on_overheard(&self) -> bool {
        true
    }
    /// Every update interval held packets are looked at again (sources sample their queues in
    /// [`DpcloSources`]).
    fn tick(&mut self, _now: SimTime, _nodes: usize, _out: &mut Vec<Action>) -> Option<Tick> {
        Some(Tick {
            pump_all: true,
            interval: self.interval,
        })
    }
    fn holds(&self) -> u64 {
        self.holds
    }
    fn level_use(&self) -> Option<&[u64]> {
        Some(&self.level_use)
    }
}

impl SourceRateControl for DpcloSources {
    fn counts_refusals(&self) -> bool {
        true
    }
    fn offered(&mut self, flow: u32, room: bool) {
        if !room {
            self.refused[flow as usize] += 1;
        }
    }
    fn next_interval(&mut self, flow: u32, _own: u32, _payload: u32) -> Option<SimTime> {
        Some(SimTime::from_secs_f64(
            1.0 / self.rates[flow as usize].rate_pps,
        ))
    }
    fn tick(&mut self, emitting: &dyn Fn(usize) -> bool, own: &dyn Fn(usize) -> u32) {
        self.sample(emitting, own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_divides_the_queue_difference_by_the_link_etx() {
        assert_eq!(price(3, 1, 1.0), 2.0);
        assert_eq!(price(3, 1, 2.0), 1.0);
        assert_eq!(price(1, 3, 1.0), -2.0);
        assert_eq!(price(2, 0, 0.5), 2.0, "ETX is at least 1");
    }

    #[test]
    fn priority_splits_the_price_range_in_thirds_of_the_queue() {
        assert_eq!(priority(0.5, 3), 0);
        assert_eq!(priority(1.0, 3), 0);
        assert_eq!(priority(1.5, 3), 1);
        assert_eq!(priority(2.5, 3), 2);
        assert_eq!(priority(3.0, 3), 2);
    }

    #[test]
    fn k_grows_when_every_next_hop_is_full_and_shrinks_when_all_are_short() {
        assert_eq!(adapt_k(1, [3], 2, 2, 3), 2);
        assert_eq!(adapt_k(2, [3, 3], 2, 2, 3), 3);
        assert_eq!(adapt_k(3, [3, 3, 3], 2, 2, 3), 3, "capped");
        assert_eq!(adapt_k(2, [3, 1], 2, 2, 3), 2);
        assert_eq!(adapt_k(2, [1, 0], 2, 2, 3), 1);
        assert_eq!(adapt_k(1, [0], 2, 2, 3), 1, "at least one");
        assert_eq!(adapt_k(2, [], 2, 2, 3), 2);
    }

    #[test]
    fn source_probes_while_its_queue_holds_and_follows_its_changes() {
        let mut r = SourceRate::new(10.0, 5.0, 0.1, 1000.0);
        assert_eq!(r.sample(2, 0), 10.0, "first sample sets the reference");
        assert_eq!(r.sample(2, 0), 15.0);
        assert_eq!(
            r.sample(3, 0),
            5.0,
            "one more packet in 0.1 s: -10 packets/s"
        );
        assert_eq!(r.sample(1, 0), 25.0);
        assert_eq!(r.sample(3, 0), 5.0);
        assert_eq!(r.sample(3, 0), 10.0);
        let mut r = SourceRate::new(10.0, 5.0, 0.1, 12.0);
        r.sample(0, 0);
        assert_eq!(r.sample(0, 0), 12.0, "capped");
    }

    #[test]
    fn a_full_source_queue_that_refuses_packets_slows_the_source_to_its_drain_rate() {
        // Sending 100 packets/s into a full queue that drains 60/s: 4 refused per 0.1 s.
        let mut r = SourceRate::new(100.0, 10.0, 0.1, 1000.0);
        r.sample(3, 0);
        assert!((r.sample(3, 4) - 60.0).abs() < 1e-9);
    }
}
