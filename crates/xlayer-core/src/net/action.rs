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
}
