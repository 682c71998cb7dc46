//! DiffQ (Warrier et al., "DiffQ: differential backlog congestion control for wireless multi-hop
//! networks", §4-5): the pieces that do not depend on how queues are stored.
//!
//! - the queue differential `QD_i(d) = |Q_i(d)| - |Q_j(d)|` towards the routing next hop `j`
//!   (eq. 1), or its minimum over a candidate forwarder set (eq. 2);
//! - the scheduler's choice: the destination whose head-of-line packet has the largest
//!   differential, ties broken by the node's random stream ([`pick`]);
//! - the MAC priority `max(ceil(QD / D · Δ), 0)`, capped at the top level `Δ - 1` ([`priority`]);
//! - source rate control ([`SourceRate`]): the AIMD of the document's pseudo-code on the source's
//!   own destination queue, or the log-utility controller.

use rand::Rng;

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
pub fn is_diffq_traffic(p: &crate::net::Packet) -> bool {
    !(p.payload_bytes == 0 && matches!(p.transport, crate::transport::Header::Tcp(_)))
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
