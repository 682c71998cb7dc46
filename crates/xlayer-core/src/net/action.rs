//! The side effects a network-layer or cross-layer component asks the node assembly for.
//!
//! Components never touch the world: routing protocols (`super::routing::Routing`) and the
//! data-path components of `crate::xl` push [`Action`]s into a reused vector, and the world
//! carries them out in the order given (so that the event queue sees the same schedule as if
//! the component had acted itself).

use crate::sim::event::NetTimerKind;
use crate::sim::SimTime;
use crate::wire::packet::Control;

/// A side effect a component asks the world for; carried out in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Broadcast a network-layer control packet from `node` at its top MAC level.
    SendControl {
        node: u32,
        seq: u64,
        bytes: u32,
        control: Control,
    },
    /// Broadcast again a control packet `node` relays for another (counted as relayed).
    Relay {
        node: u32,
        seq: u64,
        bytes: u32,
        control: Control,
    },
    /// Fire `Event::NetTimer { node, kind }` at `at`.
    Timer {
        node: u32,
        at: SimTime,
        kind: NetTimerKind,
    },
    /// Look at `node`'s queues again (hand the MAC a packet if it is free and some wait).
    Pump { node: u32 },
    /// `node`'s routing state was updated (`changes` routes changed, possibly none): the
    /// route-change tuning event is published if any changed, and sources that waited for a
    /// route try again.
    RoutesUpdated { node: u32, changes: u64 },
    /// `node` sends `count` more packets of `flow` that the forwarding component makes itself
    /// (MORE: the coded packets a forwarder's TX credit allows), queued like any packet it
    /// sends.
    Originate { node: u32, flow: u32, count: u32 },
    /// `node` drops the packets of `flow` waiting in its queues (MORE: a batch it flushed).
    Purge { node: u32, flow: u32 },
    /// `count` packets of `flow`, numbered from `first_seq` and made at `created`, reach the
    /// flow's application at its destination (MORE: a decoded batch).
    Deliver {
        flow: u32,
        first_seq: u64,
        count: u32,
        created: SimTime,
    },
    /// Unicast a control packet of `bytes` from `node` to its neighbour `next` at the top MAC
    /// level, ahead of queued data, with link-layer ACKs and retries (MORE's batch ACK);
    /// `relayed`: on behalf of another node (counted as relayed).
    Unicast {
        node: u32,
        next: u32,
        seq: u64,
        bytes: u32,
        control: Control,
        relayed: bool,
    },
}
