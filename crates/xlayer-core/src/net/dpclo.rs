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
