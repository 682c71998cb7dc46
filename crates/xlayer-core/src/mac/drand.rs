//! Z-MAC's TDMA slot assignment: a distributed randomized two-hop colouring, the state one
//! node keeps while it runs.
//!
//! Z-MAC (Rhee, Warrier, Aia, Min, Sichitiu, SenSys 2005 §3.1) assigns slots with DRAND (Rhee et
//! al., "DRAND: distributed randomized TDMA scheduling", 2006): every node ends up with the
//! smallest slot number not taken by any node within two hops, the nodes deciding in a random
//! order. DRAND serialises those choices with rounds of REQUEST / GRANT / REJECT / RELEASE
//! messages between one-hop neighbours. xlayer implements the same greedy rule with a simpler
//! exchange (a documented equivalent, not DRAND's message sequence):
//!
//! - every node draws a random priority (stream `zmac.drand`; ties broken by node id);
//! - during the set-up phase every node broadcasts STATE announcements (real frames on the air,
//!   `FrameKind::ZmacState`) listing itself and every one-hop neighbour it has heard, each with
//!   priority, slot (or none yet), frame size and a version number; a receiver learns its one-hop
//!   neighbours (the senders it decodes) and two-hop neighbours (the lists), keeping per node the
//!   entry of highest version;
//! - after a discovery period a node without a slot takes one as soon as every known node within
//!   two hops with a higher priority has one: the smallest slot no known two-hop neighbour holds;
//! - a node that learns that a higher-priority node within two hops holds its slot picks again
//!   (repair after lost or late announcements); the higher-priority node keeps its slot, so the
//!   colouring settles in priority order.
//!
//! With lossless announcements this yields exactly the greedy colouring in priority order that
//! DRAND produces; losses delay it (announcements repeat) rather than break it. Links are
//! assumed symmetric (one-hop = "I decode its frames"); a node that never decoded a neighbour
//! cannot avoid it. The local time frame follows Z-MAC §3.2: with `F` the largest slot number
//! within two hops (slots numbered from 0 here), the node's frame is `2^a` with
//! `2^(a-1) ≤ F < 2^a` (a frame of 1 for `F = 0`), i.e. the smallest power of two above `F`, and
//! it owns every slot `s + k·2^a`.

/// "No slot" on the wire.
pub const NO_SLOT: u16 = u16::MAX;

/// One node's line in a STATE announcement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: u32,
    pub priority: u32,
    pub slot: u16,
    /// Local time-frame length in slots.
    pub frame: u32,
    pub version: u16,
}

#[derive(Debug, Clone, Copy)]
struct Peer {
    e: Entry,
    /// 1: heard directly; 2: only listed by a neighbour.
    hops: u8,
}

/// A node's view of the colouring.
#[derive(Debug, Clone)]
pub struct Colouring {
    pub id: u32,
    pub priority: u32,
    pub slot: Option<u16>,
    pub frame: u32,
    version: u16,
    peers: Vec<Peer>,
}

impl Colouring {
    pub fn new(id: u32, priority: u32) -> Colouring {
        Colouring {
            id,
            priority,
            slot: None,
            frame: 1,
            version: 0,
            peers: Vec::new(),
        }
    }

    fn me(&self) -> Entry {
        Entry {
            id: self.id,
            priority: self.priority,
            slot: self.slot.unwrap_or(NO_SLOT),
            frame: self.frame,
            version: self.version,
        }
    }

    /// Whether `a` ranks above `b` (decides first).
    fn above(a: &Entry, b: &Entry) -> bool {
        (a.priority, a.id) < (b.priority, b.id)
    }

    /// Writes this node's announcement: itself first, then every one-hop neighbour heard.
    pub fn announce(&self, out: &mut Vec<Entry>) {
        out.clear();
        out.push(self.me());
        out.extend(self.peers.iter().filter(|p| p.hops == 1).map(|p| p.e));
    }

    /// An announcement from one-hop neighbour `entries[0]`.
    pub fn on_announcement(&mut self, entries: &[Entry]) {
        for (i, e) in entries.iter().enumerate() {
            if e.id == self.id {
                continue;
            }
            let hops = if i == 0 { 1 } else { 2 };
            match self.peers.iter_mut().find(|p| p.e.id == e.id) {
                Some(p) => {
                    p.hops = p.hops.min(hops);
                    if e.version >= p.e.version || i == 0 {
                        p.e = *e;
                    }
                }
                None => self.peers.push(Peer { e: *e, hops }),
            }
        }
    }

    /// Takes or repairs a slot if the rule allows (`may_decide`: the discovery period is over).
    /// Returns true when this node's slot or frame changed.
    pub fn step(&mut self, may_decide: bool) -> bool {
        let me = self.me();
        let pick = match self.slot {
            None => {
                may_decide
                    && self
                        .peers
                        .iter()
                        .filter(|p| Self::above(&p.e, &me))
                        .all(|p| p.e.slot != NO_SLOT)
            }
            Some(s) => self
                .peers
                .iter()
                .any(|p| p.e.slot == s && Self::above(&p.e, &me)),
        };
        let before = (self.slot, self.frame);
        if pick {
            let mut s = 0u16;
            while self.peers.iter().any(|p| p.e.slot == s) {
                s += 1;
            }
            self.slot = Some(s);
        }
        self.frame = frame_for(self.max_slot_two_hop());
        if (self.slot, self.frame) != before {
            self.version = self.version.wrapping_add(1);
            true
        } else {
            false
        }
    }

    /// Largest slot number held within two hops (this node included), if any.
    pub fn max_slot_two_hop(&self) -> Option<u16> {
        self.peers
            .iter()
            .filter(|p| p.e.slot != NO_SLOT)
            .map(|p| p.e.slot)
            .chain(self.slot)
            .max()
    }

    /// Whether this node owns TDMA slot `k` (counted from time zero).
    pub fn owns(&self, k: u64) -> bool {
        self.slot.is_some_and(|s| k % self.frame as u64 == s as u64)
    }

    /// Whether a one-hop neighbour owns slot `k` (by its announced slot and frame).
    pub fn one_hop_owns(&self, k: u64) -> bool {
        self.peers.iter().any(|p| {
            p.hops == 1 && p.e.slot != NO_SLOT && k % p.e.frame.max(1) as u64 == p.e.slot as u64
        })
    }

    /// Whether this node holds a slot that `step` would keep, with the frame its view gives.
    pub fn settled(&self) -> bool {
        let Some(s) = self.slot else { return false };
        let me = self.me();
        !self
            .peers
            .iter()
            .any(|p| p.e.slot == s && Self::above(&p.e, &me))
            && self.frame == frame_for(self.max_slot_two_hop())
    }

    pub fn one_hop_count(&self) -> usize {
        self.peers.iter().filter(|p| p.hops == 1).count()
    }

    pub fn two_hop_count(&self) -> usize {
        self.peers.len()
    }
}

/// Whether the slot assignment of a network is complete: every node holds a slot it keeps, and
/// every node knows the current slot and frame of every node it has learnt within two hops (so
/// the local frames are final: Z-MAC's "local frame exchange" is done). `nodes[i].id` must be
/// `i`. This is the observer that ends an `"auto"` set-up phase (`mac::zmac::SetupWatch`).
pub fn complete<'a>(n: usize, node: impl Fn(usize) -> &'a Colouring) -> bool {
    (0..n).all(|i| node(i).settled())
        && (0..n).all(|i| {
            node(i).peers.iter().all(|p| {
                let id = p.e.id as usize;
                id < n && {
                    let o = node(id);
                    o.slot.unwrap_or(NO_SLOT) == p.e.slot && o.frame == p.e.frame
                }
            })
        })
}

/// Z-MAC's local frame for largest two-hop slot number `max_slot`: `2^a` with
/// `2^(a-1) ≤ F < 2^a` (1 when `F` is 0 or no slot is known).
pub fn frame_for(max_slot: Option<u16>) -> u32 {
    match max_slot {
        None => 1,
        Some(f) => (f as u32 + 1).next_power_of_two(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_rule_is_the_smallest_power_of_two_above_the_largest_slot() {
        assert_eq!(frame_for(Some(0)), 1);
        assert_eq!(frame_for(Some(1)), 2);
        assert_eq!(frame_for(Some(3)), 4);
        assert_eq!(frame_for(Some(4)), 8);
        assert_eq!(frame_for(Some(7)), 8);
        assert_eq!(frame_for(Some(8)), 16);
    }

    #[test]
    fn a_node_waits_for_higher_priorities_then_takes_the_smallest_free_slot() {
        let mut c = Colouring::new(2, 50);
        let hi = Entry {
            id: 1,
            priority: 10,
            slot: NO_SLOT,
            frame: 1,
            version: 0,
        };
        let other = Entry {
            id: 3,
            priority: 5,
            slot: 0,
            frame: 1,
            version: 1,
        };
        c.on_announcement(&[hi, other]);
        assert!(!c.step(true), "node 1 ranks above and has no slot yet");
        c.on_announcement(&[Entry {
            slot: 1,
            version: 1,
            ..hi
        }]);
        assert!(c.step(true));
        assert_eq!(c.slot, Some(2));
        assert_eq!(c.frame, 4);
        // a higher-priority node on our slot makes us move
        c.on_announcement(&[Entry {
            id: 9,
            priority: 1,
            slot: 2,
            frame: 4,
            version: 3,
        }]);
        assert!(c.step(true));
        assert_eq!(c.slot, Some(3));
    }
}
