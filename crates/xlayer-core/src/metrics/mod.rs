//! Statistics: per flow, per node, and the run summary.
//!
//! Definitions (DiffQ §6.1 for the fairness metrics):
//! - throughput of a flow: payload bits received during its *measured window* — from
//!   `max(start, warmup)` to `min(stop, duration)` — divided by the window's length;
//! - delay: from the source handing the packet to the network to the sink receiving it, for
//!   packets received in the window: the mean exactly, the median and 95th percentile from a
//!   histogram to 3 significant digits ([`Delays`]), so a flow's memory does not grow with its
//!   packets;
//! - delivery ratio: of the packets sent in the window, the fraction that reached the sink;
//! - Jain's fairness index `(Σ r_i)² / (N Σ r_i²)`; log utility `Σ ln(r_i)` with `r_i` in bit/s
//!   (a flow that received nothing counts as 1 bit/s, i.e. contributes 0, and is reported in
//!   `starved_flows`); aggregate throughput `Σ r_i`.

pub mod hdr;
pub mod pcap;

use crate::sim::SimTime;

#[derive(Debug, Default, Clone)]
pub struct FlowStats {
    pub sent: u64,
    pub received: u64,
    pub rx_payload_bytes: u64,
    pub delivered_of_sent: u64,
    pub delays: Delays,
    /// Payload bytes received per time-series bin (from t = 0), when a bin width is set.
    pub bin_bytes: Vec<u64>,
    /// Hops travelled by the data packets that reached the sink (sum, count), over the run.
    pub hops_sum: u64,
    pub hops_n: u64,
    /// The flow's packets (either direction) lost to a full queue (per-destination, MAC or
    /// Fusion queue) or to the MAC's retry limit, anywhere on the path, over the run.
    pub queue_drops: u64,
    pub link_drops: u64,
    /// Datagram (UDP, TFRC) sequence numbers received, one bit each, over a sliding window of
    /// [`SEEN_WINDOW_WORDS`] words whose first word is number `seen_base`.
    pub seen: std::collections::VecDeque<u64>,
    pub seen_base: u64,
    /// Datagrams that arrived again after their first arrival (not counted as received).
    pub duplicates: u64,
    /// Link-layer attempts of the flow's packets leaving MAC queues (every hop, either
    /// direction, delivered or dropped at the retry limit), and how many packets left.
    pub mac_attempts: u64,
    pub mac_frames: u64,
}

impl FlowStats {
    /// Records the arrival of datagram `seq`; false if it had arrived before. Only the latest
    /// [`SEEN_WINDOW_WORDS`] × 64 sequence numbers are remembered: a datagram older than that
    /// window counts as a duplicate (it would have been overtaken by 65,536 later ones).
    pub fn first_arrival(&mut self, seq: u64) -> bool {
        let (word, bit) = (seq / 64, seq % 64);
        let fresh = if word < self.seen_base {
            false
        } else {
            let end = self.seen_base + self.seen.len() as u64;
            if word >= end {
                for _ in end..=word {
                    self.seen.push_back(0);
                }
                while self.seen.len() > SEEN_WINDOW_WORDS {
                    self.seen.pop_front();
                    self.seen_base += 1;
                }
            }
            let w = &mut self.seen[(word - self.seen_base) as usize];
            let fresh = *w & (1 << bit) == 0;
            *w |= 1 << bit;
            fresh
        };
        if !fresh {
            self.duplicates += 1;
        }
        fresh
    }
}

/// Words of the duplicate-detection window: 1024 × 64 = 65,536 sequence numbers (8 KiB a flow).
pub const SEEN_WINDOW_WORDS: usize = 1024;

/// A flow's packet delays in bounded memory: the exact count and sum (an exact mean) and the
/// bins of an HDR histogram (Gil Tene's HdrHistogram) with 3 significant decimal digits for the
/// quantiles, so a reported quantile is within 0.1 % of the exact order statistic. The bins
/// ([`hdr::HdrBins`]: the quantiles of the `hdrhistogram` crate, held sparsely) grow with the
/// spread of the delays (a few kB an octave), never with the number of packets.
#[derive(Debug, Default, Clone)]
pub struct Delays {
    count: u64,
    sum_ns: u128,
    bins: hdr::HdrBins,
}

impl Delays {
    /// Significant decimal digits the quantiles keep.
    pub const SIGNIFICANT_DIGITS: u8 = 3;

    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += ns as u128;
        // A zero delay counts as 1 ns (the histogram's lowest value).
        self.bins.record(ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum_ns(&self) -> u128 {
        self.sum_ns
    }

    /// The mean delay in seconds (NaN without samples).
    pub fn mean_s(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            self.sum_ns as f64 * 1e-9 / self.count as f64
        }
    }

    /// The `q` quantile (nearest rank) in nanoseconds, to the histogram's precision; `None`
    /// without samples.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        (self.count > 0).then(|| self.bins.value_at_quantile(q))
    }

    /// Bytes the histogram's bins hold.
    pub fn memory_bytes(&self) -> usize {
        self.bins.memory_bytes()
    }
}

/// Network-layer counters of a node (the MAC and PHY keep their own).
#[derive(Debug, Default, Clone, Copy)]
pub struct NetStats {
    pub originated: u64,
    pub forwarded: u64,
    pub delivered: u64,
    pub drops_ttl: u64,
    pub drops_no_route: u64,
    /// Frames decoded correctly but lost to the link's loss probability (`link_loss`).
    pub rx_link_lost: u64,
    /// Packets dropped because the node was switched off.
    pub drops_node_off: u64,
    /// Control packets (probes, routing updates) this node originated or relayed.
    pub ctrl_tx: u64,
    /// Their bytes (network layer).
    pub ctrl_tx_bytes: u64,
    /// Airtime of the control frames this node put on the air (ns).
    pub ctrl_airtime_ns: u64,
    /// Control packets this node received.
    pub ctrl_rx: u64,
    /// Control packets refused by a full MAC queue.
    pub ctrl_drops_queue: u64,
    /// Data packets refused by a full per-destination queue.
    pub drops_dest_queue: u64,
    /// Of those, packets this node was forwarding for others (DiffQ §6.4's "queue drops at
    /// intermediate nodes").
    pub drops_dest_queue_transit: u64,
    /// Control packets relayed for others (OLSR TC flooding); included in `ctrl_tx`.
    pub ctrl_relayed: u64,
}

impl NetStats {
    /// A packet the node could not send: it is switched off, or has no route.
    pub fn count_unsendable(&mut self, off: bool) {
        if off {
            self.drops_node_off += 1;
        } else {
            self.drops_no_route += 1;
        }
    }
}

/// The measured window of a flow.
pub fn window(start: SimTime, stop: SimTime, warmup: SimTime, end: SimTime) -> (SimTime, SimTime) {
    let a = start.max(warmup);
    let b = stop.min(end);
    (a, b.max(a))
}

pub fn jain_index(rates: &[f64]) -> f64 {
    let n = rates.len() as f64;
    let s: f64 = rates.iter().sum();
    let s2: f64 = rates.iter().map(|r| r * r).sum();
    if s2 == 0.0 {
        if rates.is_empty() {
            f64::NAN
        } else {
            1.0 // all equal (all zero)
        }
    } else {
        s * s / (n * s2)
    }
}

pub fn log_utility(rates: &[f64]) -> f64 {
    rates
        .iter()
        .map(|&r| if r >= 1.0 { r.ln() } else { 0.0 })
        .sum()
}

/// Percentile by nearest rank on a sorted slice (`q` in 0..=1).
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_quantiles_stay_within_a_thousandth_of_the_exact_ones_in_bounded_memory() {
        let mut d = Delays::default();
        let mut exact = Vec::new();
        // A million delays spread over five decades (1 us .. 10 s), deterministic.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ns = 1_000 * 10u64.pow((x % 5) as u32 + 1) + x % 1_000_000;
            d.record(ns);
            exact.push(ns);
        }
        exact.sort_unstable();
        for q in [0.5, 0.95, 0.99] {
            let want = percentile(&exact, q).unwrap() as f64;
            let got = d.quantile_ns(q).unwrap() as f64;
            assert!((got - want).abs() <= want * 1e-3, "q {q}: {got} vs {want}");
        }
        let mean = exact.iter().map(|&v| v as f64).sum::<f64>() / exact.len() as f64;
        assert!((d.mean_s() * 1e9 - mean).abs() <= mean * 1e-12);
        assert!(d.memory_bytes() < 200_000, "{} bytes", d.memory_bytes());
        assert_eq!(Delays::default().quantile_ns(0.5), None);
        assert!(Delays::default().mean_s().is_nan());
    }

    #[test]
    fn duplicates_are_found_within_the_window_and_memory_stays_bounded() {
        let mut s = FlowStats::default();
        assert!(s.first_arrival(5));
        assert!(!s.first_arrival(5));
        for seq in 0..10_000_000u64 {
            if seq != 5 {
                assert!(s.first_arrival(seq));
            }
        }
        assert!(s.seen.len() <= SEEN_WINDOW_WORDS);
        assert!(!s.first_arrival(9_999_999), "a recent duplicate");
        assert!(
            !s.first_arrival(3),
            "older than the window: taken as a duplicate"
        );
        assert_eq!(s.duplicates, 3);
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_one_winner() {
        assert!((jain_index(&[5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[9.0, 0.0, 0.0]) - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn log_utility_sums_natural_logs() {
        assert!((log_utility(&[std::f64::consts::E, 1.0]) - 1.0).abs() < 1e-12);
        assert_eq!(log_utility(&[0.0]), 0.0);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50));
        assert_eq!(percentile(&v, 0.95), Some(95));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
