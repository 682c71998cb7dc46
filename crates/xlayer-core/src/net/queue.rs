//! Per-destination queues with a piggy-backed queue length (DPCLO §IV-D, DiffQ §4 and §5.3).
//!
//! Depends on `sim` only. A node keeps one FIFO queue per destination, each holding at most
//! `capacity` packets (DPCLO Table I: 3), counted with the packet that is at the MAC. Queues are
//! soft state: one appears with its first packet and disappears when it empties. The node hands
//! the MAC one data packet at a time, taking destinations in turn (round robin by id; the
//! back-pressure schedulers of DiffQ/DPCLO replace this choice), so the next hop is chosen when
//! the packet leaves its queue and head-of-line blocking across destinations cannot build up in
//! the MAC.
//!
//! Every data frame carries the DiffQ header (type, flow id, queue length, timestamp, sequence
//! number: [`HEADER_BYTES`]); its queue-length field is written by each transmitting node with
//! its current queue length for the packet's destination, and every node that decodes the
//! frame — addressee or not — records, per neighbour and destination, the last length heard and
//! when ([`Overheard`]).

use std::collections::VecDeque;

use crate::sim::SimTime;

/// DiffQ header (Fig. 4): type (1 byte), flow id (2), queue length (2), timestamp (4),
/// sequence number (4).
pub const HEADER_BYTES: u32 = 13;

#[derive(Debug)]
struct DestQueue {
    dst: u32,
    items: VecDeque<u32>,
}

/// One node's per-destination queues.
#[derive(Debug)]
pub struct PerDestQueues {
    pub capacity: u32,
    /// Sorted by destination.
    queues: Vec<DestQueue>,
    spare: Vec<VecDeque<u32>>,
    /// The data packet handed to the MAC, and its destination.
    at_mac: Option<(u32, u32)>,
    /// Destination served last (round robin resumes after it).
    last_served: Option<u32>,
    /// Queue-length history `(time, destination, length)`, when enabled (tests, traces).
    pub log: Option<Vec<(SimTime, u32, u32)>>,
}

/// What a node heard of a neighbour's queue for a destination.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overheard {
    pub neighbour: u32,
    pub dst: u32,
    pub queue_len: u32,
    /// When the frame carrying it started (its sender wrote the length then) and ended.
    pub sent: SimTime,
    pub heard: SimTime,
}

impl PerDestQueues {
    pub fn new(capacity: u32) -> PerDestQueues {
        PerDestQueues {
            capacity,
            queues: Vec::new(),
            spare: Vec::new(),
            at_mac: None,
            last_served: None,
            log: None,
        }
    }

    fn find(&self, dst: u32) -> Result<usize, usize> {
        self.queues.binary_search_by_key(&dst, |q| q.dst)
    }

    /// Packets held for `dst`, the one at the MAC included.
    pub fn len(&self, dst: u32) -> u32 {
        let queued = self
            .find(dst)
            .map(|i| self.queues[i].items.len() as u32)
            .unwrap_or(0);
        queued + self.at_mac.is_some_and(|(_, d)| d == dst) as u32
    }

    pub fn has_room(&self, dst: u32) -> bool {
        self.len(dst) < self.capacity
    }

    /// Destinations with a queue, and their lengths.
    /// In destination order; allocates nothing (DCLO's PRICE lists them every interval).
    pub fn lengths(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        // The destination of the packet at the MAC may have no queue left: merge it in.
        let mut extra = self
            .at_mac
            .map(|(_, d)| d)
            .filter(|&d| self.find(d).is_err());
        let mut dsts = self.queues.iter().map(|q| q.dst).peekable();
        std::iter::from_fn(move || match (extra, dsts.peek()) {
            (Some(e), Some(&d)) if e < d => extra.take(),
            (Some(_), None) => extra.take(),
            _ => dsts.next(),
        })
        .map(move |d| (d, self.len(d)))
    }

    fn record(&mut self, now: SimTime, dst: u32) {
        let len = self.len(dst);
        if let Some(log) = self.log.as_mut() {
            log.push((now, dst, len));
        }
    }

    /// Queues packet `h` for `dst`; false if that destination's queue is full.
    pub fn push(&mut self, now: SimTime, dst: u32, h: u32) -> bool {
        if !self.has_room(dst) {
            return false;
        }
        let i = match self.find(dst) {
            Ok(i) => i,
            Err(i) => {
                let items = self.spare.pop().unwrap_or_default();
                self.queues.insert(i, DestQueue { dst, items });
                i
            }
        };
        self.queues[i].items.push_back(h);
        self.record(now, dst);
        true
    }

    /// The next packet for the MAC, if none is there: the head of the next destination's queue
    /// in round robin. The packet stays counted in its queue until [`Self::mac_done`].
    pub fn next_for_mac(&mut self) -> Option<(u32, u32)> {
        if self.at_mac.is_some() || self.queues.is_empty() {
            return None;
        }
        let i = match self.last_served {
            Some(d) => match self.find(d) {
                Ok(i) => (i + 1) % self.queues.len(),
                Err(i) => i % self.queues.len(),
            },
            None => 0,
        };
        Some(self.hand_to_mac(i))
    }

    /// Hands the head of queue `i` to the MAC (a queue left empty is removed, its buffer kept
    /// for reuse): `(packet, destination)`.
    fn hand_to_mac(&mut self, i: usize) -> (u32, u32) {
        let q = &mut self.queues[i];
        let h = q.items.pop_front().expect("queues are never kept empty");
        let dst = q.dst;
        if q.items.is_empty() {
            let items = std::mem::take(&mut self.queues[i].items);
            self.spare.push(items);
            self.queues.remove(i);
        }
        self.at_mac = Some((h, dst));
        self.last_served = Some(dst);
        (h, dst)
    }

    /// Whether `h` is the packet at the MAC.
    pub fn is_at_mac(&self, h: u32) -> bool {
        self.at_mac.is_some_and(|(p, _)| p == h)
    }

    /// Whether a packet of these queues is at the MAC.
    pub fn mac_busy(&self) -> bool {
        self.at_mac.is_some()
    }

    /// Destinations with packets waiting (not at the MAC) and their queue lengths, by id —
    /// the candidates a back-pressure scheduler chooses among.
    pub fn waiting(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.queues.iter().map(|q| (q.dst, self.len(q.dst)))
    }

    /// The head-of-line packet of `dst`'s queue (not the one at the MAC), if any.
    pub fn head(&self, dst: u32) -> Option<u32> {
        let i = self.find(dst).ok()?;
        self.queues[i].items.front().copied()
    }

    /// Removes from `dst`'s queue every packet `drop` says to (not the one at the MAC), in
    /// queue order, appending them to `removed`; an emptied queue vanishes. Returns whether any
    /// went (MORE's flush of a batch).
    pub fn remove_if(
        &mut self,
        now: SimTime,
        dst: u32,
        mut drop: impl FnMut(u32) -> bool,
        removed: &mut Vec<u32>,
    ) -> bool {
        let Ok(i) = self.find(dst) else {
            return false;
        };
        let before = removed.len();
        self.queues[i].items.retain(|&h| {
            let gone = drop(h);
            if gone {
                removed.push(h);
            }
            !gone
        });
        if removed.len() == before {
            return false;
        }
        if self.queues[i].items.is_empty() {
            let items = std::mem::take(&mut self.queues[i].items);
            self.spare.push(items);
            self.queues.remove(i);
        }
        self.record(now, dst);
        true
    }

    /// Like [`Self::next_for_mac`], but serving the scheduler's choice `dst`.
    pub fn take_for_mac(&mut self, dst: u32) -> Option<(u32, u32)> {
        if self.at_mac.is_some() {
            return None;
        }
        let i = self.find(dst).ok()?;
        Some(self.hand_to_mac(i))
    }

    /// The MAC is done with its packet (sent, dropped, or refused); returns its destination,
    /// whose queue just shrank.
    pub fn mac_done(&mut self, now: SimTime) -> Option<u32> {
        let (_, dst) = self.at_mac.take()?;
        self.record(now, dst);
        Some(dst)
    }
}

/// A node's queueing above the MAC, a component the scenario chooses
/// (`net.dest_queue_packets`): the MAC's FIFO interface queues alone, or per-destination
/// queues that a scheduler (`crate::xl::Scheduler`) serves, with what the node overheard of its
/// neighbours' queues.
#[derive(Debug, Default)]
pub enum Queueing {
    /// Packets go straight to the MAC's FIFO interface queue of their level.
    #[default]
    Fifo,
    /// Per-destination queues of `capacity` packets each (boxed: most nodes of most scenarios
    /// run FIFO, and a node's fields stay small).
    PerDestination(Box<DestQueueing>),
}

/// A node's per-destination queues and what it overheard of its neighbours'.
#[derive(Debug)]
pub struct DestQueueing {
    pub queues: PerDestQueues,
    pub overheard: NeighbourQueues,
}

impl Queueing {
    /// Per-destination queues of `capacity` packets each.
    pub fn per_destination(capacity: u32) -> Queueing {
        Queueing::PerDestination(Box::new(DestQueueing {
            queues: PerDestQueues::new(capacity),
            overheard: NeighbourQueues::default(),
        }))
    }

    /// The per-destination queues and overheard lengths, if the node has them.
    #[inline]
    pub fn dest(&self) -> Option<&DestQueueing> {
        match self {
            Queueing::Fifo => None,
            Queueing::PerDestination(d) => Some(d),
        }
    }

    #[inline]
    pub fn dest_mut(&mut self) -> Option<&mut DestQueueing> {
        match self {
            Queueing::Fifo => None,
            Queueing::PerDestination(d) => Some(d),
        }
    }

    /// The per-destination queues of a node the data path knows to have them (a scheduler
    /// serves them, a source's rate follows them).
    #[inline]
    pub fn queues(&self) -> &PerDestQueues {
        match self {
            Queueing::PerDestination(d) => &d.queues,
            Queueing::Fifo => unreachable!("asked for the per-destination queues of a FIFO node"),
        }
    }

    /// What the node overheard of its neighbours' queues (as [`Queueing::queues`]).
    #[inline]
    pub fn overheard(&self) -> &NeighbourQueues {
        match self {
            Queueing::PerDestination(d) => &d.overheard,
            Queueing::Fifo => unreachable!("asked for the overheard queues of a FIFO node"),
        }
    }

    #[inline]
    pub fn queues_mut(&mut self) -> &mut PerDestQueues {
        match self {
            Queueing::PerDestination(d) => &mut d.queues,
            Queueing::Fifo => unreachable!("asked for the per-destination queues of a FIFO node"),
        }
    }
}

/// What one node overheard of its neighbours' queues: the last length per (neighbour,
/// destination).
#[derive(Debug, Default)]
pub struct NeighbourQueues {
    /// Sorted by (neighbour, destination).
    pub entries: Vec<Overheard>,
}

impl NeighbourQueues {
    pub fn record(&mut self, o: Overheard) {
        match self
            .entries
            .binary_search_by_key(&(o.neighbour, o.dst), |e| (e.neighbour, e.dst))
        {
            Ok(i) => self.entries[i] = o,
            Err(i) => self.entries.insert(i, o),
        }
    }

    /// The back-pressure schedulers' view of `neighbour`'s queue for `dst` at `now`: its last
    /// overheard length, or 0 when the neighbour is the destination (which queues nothing), was
    /// never heard, or was last heard more than `expiry` ago (queue state is soft).
    pub fn fresh_len(&self, neighbour: u32, dst: u32, now: SimTime, expiry: SimTime) -> u32 {
        if neighbour == dst {
            return 0;
        }
        self.get(neighbour, dst)
            .filter(|o| now.saturating_sub(o.heard) <= expiry)
            .map(|o| o.queue_len)
            .unwrap_or(0)
    }

    pub fn get(&self, neighbour: u32, dst: u32) -> Option<&Overheard> {
        self.entries
            .binary_search_by_key(&(neighbour, dst), |e| (e.neighbour, e.dst))
            .ok()
            .map(|i| &self.entries[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_destination_holds_at_most_its_capacity_and_empty_queues_vanish() {
        let t = SimTime::ZERO;
        let mut q = PerDestQueues::new(3);
        for h in 0..5 {
            assert_eq!(q.push(t, 7, h), h < 3);
        }
        assert!(q.push(t, 8, 10));
        assert_eq!((q.len(7), q.len(8)), (3, 1));
        // Round robin across destinations; the packet at the MAC still counts.
        assert_eq!(q.next_for_mac(), Some((0, 7)));
        assert_eq!(q.len(7), 3);
        assert!(!q.push(t, 7, 99));
        assert_eq!(q.next_for_mac(), None, "one packet at the MAC at a time");
        q.mac_done(t);
        assert_eq!(q.next_for_mac(), Some((10, 8)));
        q.mac_done(t);
        assert_eq!(
            q.lengths().collect::<Vec<_>>(),
            vec![(7, 2)],
            "8's queue is gone"
        );
        assert_eq!(q.next_for_mac(), Some((1, 7)));
        q.mac_done(t);
        assert_eq!(q.next_for_mac(), Some((2, 7)));
        q.mac_done(t);
        assert_eq!(q.lengths().count(), 0);
    }

    #[test]
    fn removing_a_flows_packets_keeps_the_others_in_order() {
        let t = SimTime::ZERO;
        let mut q = PerDestQueues::new(10);
        for h in 0..6 {
            q.push(t, 4, h);
        }
        assert_eq!(q.next_for_mac(), Some((0, 4)));
        let mut removed = vec![];
        // The odd handles go; the one at the MAC stays counted.
        assert!(q.remove_if(t, 4, |h| h % 2 == 1, &mut removed));
        assert_eq!(removed, vec![1, 3, 5]);
        assert_eq!((q.len(4), q.head(4)), (3, Some(2)));
        assert!(!q.remove_if(t, 9, |_| true, &mut removed), "no queue for 9");
        assert!(q.remove_if(t, 4, |_| true, &mut removed));
        assert_eq!(q.head(4), None);
        assert_eq!(q.len(4), 1, "the packet at the MAC");
    }
}
