//! Statistics: per flow, per node, and the run summary.
//!
//! Definitions (DiffQ §6.1 for the fairness metrics):
//! - throughput of a flow: payload bits received during its *measured window* — from
//!   `max(start, warmup)` to `min(stop, duration)` — divided by the window's length;
//! - delay: from the source handing the packet to the network to the sink receiving it, for
//!   packets received in the window (mean, median, 95th percentile);
//! - delivery ratio: of the packets sent in the window, the fraction that reached the sink;
//! - Jain's fairness index `(Σ r_i)² / (N Σ r_i²)`; log utility `Σ ln(r_i)` with `r_i` in bit/s
//!   (a flow that received nothing counts as 1 bit/s, i.e. contributes 0, and is reported in
//!   `starved_flows`); aggregate throughput `Σ r_i`.

pub mod pcap;

use crate::sim::SimTime;

#[derive(Debug, Default, Clone)]
pub struct FlowStats {
    pub sent: u64,
    pub received: u64,
    pub rx_payload_bytes: u64,
    pub delivered_of_sent: u64,
    pub delays_ns: Vec<u64>,
    /// Payload bytes received per time-series bin (from t = 0), when a bin width is set.
    pub bin_bytes: Vec<u64>,
    /// Hops travelled by the data packets that reached the sink (sum, count), over the run.
    pub hops_sum: u64,
    pub hops_n: u64,
    /// The flow's packets (either direction) lost to a full queue (per-destination, MAC or
    /// Fusion queue) or to the MAC's retry limit, anywhere on the path, over the run.
    pub queue_drops: u64,
    pub link_drops: u64,
    /// Datagram (UDP, TFRC) sequence numbers received, one bit each.
    pub seen: Vec<u64>,
    /// Datagrams that arrived again after their first arrival (not counted as received).
    pub duplicates: u64,
}

impl FlowStats {
    /// Records the arrival of datagram `seq`; false if it had arrived before.
    pub fn first_arrival(&mut self, seq: u64) -> bool {
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if self.seen.len() <= word {
            self.seen.resize(word + 1, 0);
        }
        let fresh = self.seen[word] & (1 << bit) == 0;
        self.seen[word] |= 1 << bit;
        if !fresh {
            self.duplicates += 1;
        }
        fresh
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
