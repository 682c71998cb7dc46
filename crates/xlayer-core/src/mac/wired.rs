//! Wired point-to-point links: a rate, a propagation delay, a drop-tail queue (packets, and
//! optionally bytes) and an optional random loss, per direction. A node may have wired links
//! and a radio (an access point); static routing runs over the graph of both.
//!
//! The model is ns-2's `duplex-link` with a `DropTail` queue: a packet waits in the queue of its
//! direction, is serialized at the link rate (network-layer bytes: the IP packet; no link-layer
//! framing is added), then arrives after the propagation delay. A lost packet (probability
//! `loss`, drawn per packet from the link's own stream) takes the link's time and never arrives,
//! as ns-2's `ErrorModel` on a link drops it after transmission. The node assembly carries out
//! what [`Wired`] answers: `Event::WiredTxEnd` when the serialization ends, `Event::WiredArrive`
//! when the packet reaches the other end.

use std::collections::VecDeque;

use rand::Rng;

use crate::sim::rng::{stream, Stream};
use crate::sim::SimTime;

/// Random stream of each wired direction's losses (one per direction, by its index).
pub const STREAM: &str = "net.wired.loss";

/// Counters of one direction of a wired link.
#[derive(Debug, Default, Clone, Copy)]
pub struct WiredStats {
    /// Packets serialized onto the link.
    pub tx: u64,
    pub tx_bytes: u64,
    /// Packets refused by the full queue.
    pub drops_queue: u64,
    /// Packets lost on the link (its `loss`).
    pub lost: u64,
}

/// One direction of a wired link.
#[derive(Debug)]
pub struct WiredLink {
    pub from: u32,
    pub to: u32,
    pub rate_bps: f64,
    pub delay: SimTime,
    pub queue_packets: u32,
    pub queue_bytes: Option<u32>,
    pub loss: f64,
    /// Waiting packets (handles, with their bytes), the head one on the wire while `busy`.
    queue: VecDeque<(u32, u32)>,
    bytes: u64,
    busy: bool,
    rng: Stream,
    pub stats: WiredStats,
}

/// What happens to a packet handed to a wired link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// It goes on the wire now: its serialization ends at `tx_end`.
    Sending { tx_end: SimTime },
    /// It waits behind others.
    Queued,
    /// The queue is full: it is dropped.
    Dropped,
}

/// Every wired link of a network, both directions of each.
#[derive(Debug, Default)]
pub struct Wired {
    pub links: Vec<WiredLink>,
    /// Per node: (neighbour, link index) of its outgoing directions, by neighbour.
    out: Vec<Vec<(u32, u32)>>,
}

impl Wired {
    /// A network of `nodes` nodes without wired links.
    pub fn new(nodes: usize) -> Wired {
        Wired {
            links: Vec::new(),
            out: vec![Vec::new(); nodes],
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Adds the direction `from → to`.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        from: u32,
        to: u32,
        rate_bps: f64,
        delay: SimTime,
        queue_packets: u32,
        queue_bytes: Option<u32>,
        loss: f64,
        seed: u64,
    ) {
        let index = self.links.len() as u32;
        self.links.push(WiredLink {
            from,
            to,
            rate_bps,
            delay,
            queue_packets,
            queue_bytes,
            loss,
            queue: VecDeque::new(),
            bytes: 0,
            busy: false,
            rng: stream(seed, index, STREAM),
            stats: WiredStats::default(),
        });
        let out = &mut self.out[from as usize];
        let at = out.partition_point(|&(n, _)| n < to);
        out.insert(at, (to, index));
    }

    /// The link from `from` to its neighbour `to`, if they are wired.
    #[inline]
    pub fn link(&self, from: u32, to: u32) -> Option<u32> {
        let out = self.out.get(from as usize)?;
        out.binary_search_by_key(&to, |&(n, _)| n)
            .ok()
            .map(|i| out[i].1)
    }

    /// The wired neighbours of `node`, ascending.
    pub fn neighbours(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        self.out[node as usize].iter().map(|&(n, _)| n)
    }

    /// Serialization time of `bytes` on `link`.
    fn tx_time(l: &WiredLink, bytes: u32) -> SimTime {
        SimTime::from_secs_f64(bytes as f64 * 8.0 / l.rate_bps)
    }

    /// Packet `h` of `bytes` is handed to `link` at `now`.
    pub fn offer(&mut self, link: u32, h: u32, bytes: u32, now: SimTime) -> Offer {
        let l = &mut self.links[link as usize];
        let full = l.queue.len() >= l.queue_packets as usize
            || l.queue_bytes
                .is_some_and(|cap| l.bytes + bytes as u64 > cap as u64);
        if full {
            l.stats.drops_queue += 1;
            return Offer::Dropped;
        }
        l.queue.push_back((h, bytes));
        l.bytes += bytes as u64;
        if l.busy {
            return Offer::Queued;
        }
        l.busy = true;
        l.stats.tx += 1;
        l.stats.tx_bytes += bytes as u64;
        Offer::Sending {
            tx_end: now + Self::tx_time(l, bytes),
        }
    }

    /// The head packet of `link` is serialized (at `now`): it leaves the queue. Returns it and
    /// whether it arrives (else it is lost), and the end of the next packet's serialization if
    /// one waits.
    pub fn tx_end(&mut self, link: u32, now: SimTime) -> (u32, bool, Option<SimTime>) {
        let l = &mut self.links[link as usize];
        let (h, bytes) = l
            .queue
            .pop_front()
            .expect("a serialized packet heads its queue");
        l.bytes -= bytes as u64;
        let arrives = !(l.loss > 0.0 && l.rng.gen::<f64>() < l.loss);
        if !arrives {
            l.stats.lost += 1;
        }
        let next = match l.queue.front() {
            Some(&(_, b)) => {
                l.stats.tx += 1;
                l.stats.tx_bytes += b as u64;
                Some(now + Self::tx_time(l, b))
            }
            None => {
                l.busy = false;
                None
            }
        };
        (h, arrives, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(rate: f64, queue: u32) -> Wired {
        let mut w = Wired::new(2);
        w.add(
            0,
            1,
            rate,
            SimTime::from_secs_f64(0.01),
            queue,
            None,
            0.0,
            1,
        );
        w
    }

    #[test]
    fn packets_are_serialized_one_after_another_and_a_full_queue_drops() {
        // 1000 bytes at 1 Mbit/s: 8 ms each.
        let mut w = one(1e6, 2);
        let t0 = SimTime::ZERO;
        assert_eq!(w.link(0, 1), Some(0));
        assert_eq!(w.link(1, 0), None);
        let ms = |x: f64| SimTime::from_secs_f64(x / 1000.0);
        assert_eq!(w.offer(0, 7, 1000, t0), Offer::Sending { tx_end: ms(8.0) });
        assert_eq!(w.offer(0, 8, 1000, t0), Offer::Queued);
        assert_eq!(w.offer(0, 9, 1000, t0), Offer::Dropped);
        assert_eq!(w.tx_end(0, ms(8.0)), (7, true, Some(ms(16.0))));
        assert_eq!(w.tx_end(0, ms(16.0)), (8, true, None));
        assert_eq!(w.links[0].stats.drops_queue, 1);
        assert_eq!(w.links[0].stats.tx, 2);
    }

    #[test]
    fn a_lossy_direction_loses_its_share() {
        let mut w = Wired::new(2);
        w.add(0, 1, 1e9, SimTime::ZERO, 10, None, 0.25, 3);
        let mut lost = 0;
        let n = 40_000;
        for k in 0..n {
            let t = SimTime(k * 1000);
            w.offer(0, k as u32, 100, t);
            lost += !w.tx_end(0, t).1 as u32;
        }
        // Binomial(40 000, 0.25): standard deviation 87.
        assert!((lost as f64 - 10_000.0).abs() < 400.0, "{lost}");
    }
}
