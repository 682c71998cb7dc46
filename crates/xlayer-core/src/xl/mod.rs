//! Cross-layer data-path components: what sits between the network layer's queues and the MAC
//! and decides, per packet, what goes next, to whom and at which MAC priority, and how fast
//! sources may send (ARCHITECTURE.md, "Components").
//!
//! Two component kinds, each an enum of the built-in variants whose methods are the hooks the
//! node assembly (`crate::world`) calls; a variant that has nothing to do in a hook takes the
//! default arm (smoltcp's congestion `Controller` is the model):
//!
//! - [`Scheduler`]: over per-destination queues, which destination's head packet the MAC gets
//!   next, its next hop and MAC level — round robin, DiffQ (§4.1), DPCLO (§IV-B..E) or DCLO's
//!   matching — plus what the scheduler keeps of the packets it handed over and its periodic
//!   work;
//! - [`SourceControl`]: how fast each flow's source sends — at its own rate, DiffQ's AIMD or
//!   log-utility controller, DPCLO's queue-driven rate, or DCLO's `w/p`.
//!
//! One protocol is one file ([`diffq`], [`dpclo`], [`dclo`], [`fusion`]) holding its state and
//! its decisions. Components never touch the world: they read a [`NodeView`] of the node's
//! queues, what it overheard and its routes, and ask for side effects (control packets, timers,
//! a new look at a node's queues) through [`Action`]s the world carries out in order.
//!
//! Depends on `sim`, `wire` and `net` only.

pub mod dclo;
pub mod diffq;
pub mod dpclo;
pub mod fusion;

use crate::net::proto::NetProto;
use crate::net::queue::{NeighbourQueues, PerDestQueues};
use crate::net::StaticRoutes;
use crate::sim::event::NetTimerKind;
use crate::sim::SimTime;
use crate::wire::packet::{Control, Packet};

/// What a scheduler sees of one node when it chooses: its queues, what it overheard of its
/// neighbours' queues, its routes, and how many neighbours it has in range.
pub struct NodeView<'a> {
    pub now: SimTime,
    pub node: u32,
    pub queues: &'a PerDestQueues,
    pub overheard: &'a NeighbourQueues,
    pub routes: &'a StaticRoutes,
    pub proto: Option<&'a NetProto>,
    pub neighbours: usize,
}

impl NodeView<'_> {
    /// The routing next hop towards `dst` (`crate::net::routing::UNREACHABLE` if none).
    #[inline]
    pub fn next_hop(&self, dst: u32) -> u32 {
        crate::net::proto::next_hop(self.routes, self.proto, self.node, dst)
    }
}

/// A scheduler's decision at a node whose MAC is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Not the scheduler's decision: the queues' round robin, at this MAC level if given.
    RoundRobin(Option<u8>),
    /// Serve `dst`'s head-of-line packet at MAC `level`, to `next` (else the routing next hop).
    Serve {
        dst: u32,
        level: u8,
        next: Option<u32>,
    },
    /// Send nothing now.
    Hold,
}

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
    /// Fire `Event::NetTimer { node, kind }` at `at`.
    Timer {
        node: u32,
        at: SimTime,
        kind: NetTimerKind,
    },
    /// Look at `node`'s queues again (hand the MAC a packet if it is free and some wait).
    Pump { node: u32 },
}

/// What the world does after a scheduler's periodic tick.
#[derive(Debug, Clone, Copy)]
pub struct Tick {
    /// Every node with packets waiting and a free MAC is pumped.
    pub pump_all: bool,
    /// The next tick, this long after this one.
    pub interval: SimTime,
}

/// The scheduler over a node's per-destination queues (the same variant at every node; its
/// per-node state is indexed by node id).
#[derive(Debug, Default)]
pub enum Scheduler {
    /// Round robin over the destinations with packets waiting (plain per-destination queueing,
    /// or FIFO interface queues that never consult a scheduler).
    #[default]
    RoundRobin,
    Diffq(diffq::DiffqScheduler),
    Dpclo(dpclo::DpcloScheduler),
    Dclo(dclo::Dclo),
}

impl Scheduler {
    /// Whether packet `p` goes through the per-destination queues (DiffQ lets TCP's
    /// zero-payload segments bypass them; `diffq::is_diffq_traffic`).
    #[inline]
    pub fn queues(&self, p: &Packet) -> bool {
        match self {
            Scheduler::Diffq(_) => diffq::is_diffq_traffic(p),
            _ => true,
        }
    }

    /// The choice at a node whose MAC may take a packet.
    pub fn choose(&mut self, v: &NodeView) -> Choice {
        match self {
            Scheduler::RoundRobin => Choice::RoundRobin(None),
            Scheduler::Diffq(d) => d.choose(v),
            Scheduler::Dpclo(d) => d.choose(v),
            Scheduler::Dclo(d) => d.choose(v),
        }
    }

    /// A packet chosen by [`Scheduler::choose`] goes out at MAC `level` (priority usage).
    #[inline]
    pub fn level_used(&mut self, level: u8) {
        match self {
            Scheduler::Diffq(d) => d.level_use[level as usize] += 1,
            Scheduler::Dpclo(d) => d.level_use[level as usize] += 1,
            _ => {}
        }
    }

    /// `node`'s MAC accepted its packet for `dst`, to `next`.
    #[inline]
    pub fn handed_to_mac(&mut self, node: u32, next: u32, dst: u32) {
        if let Scheduler::Dpclo(d) = self {
            d.at_mac[node as usize] = Some((next, dst));
        }
    }

    /// `node`'s MAC is done with the packet it was handed (acknowledged or dropped).
    #[inline]
    pub fn mac_done(
        &mut self,
        node: u32,
        delivered: bool,
        now: SimTime,
        overheard: &mut NeighbourQueues,
    ) {
        if let Scheduler::Dpclo(d) = self {
            d.handed_over(node, delivered, now, overheard);
        }
    }

    /// The queue length a data frame's header carries for its destination, from the sender's
    /// queue length `len` as it stands (DPCLO counts it without the packet on the air).
    #[inline]
    pub fn header_queue_len(&self, len: u32) -> u32 {
        match self {
            Scheduler::Dpclo(_) => len.saturating_sub(1),
            _ => len,
        }
    }

    /// Whether news of a neighbour's queue (an overheard data frame) should make a node with
    /// packets waiting look at them again.
    #[inline]
    pub fn repumps_on_overheard(&self) -> bool {
        match self {
            Scheduler::Dpclo(_) => true,
            Scheduler::Diffq(d) => d.hold_negative,
            _ => false,
        }
    }

    /// The periodic tick (`Event::BackpressureTick`) of `nodes` nodes; `None` for schedulers
    /// that have none.
    pub fn tick(&mut self, now: SimTime, nodes: usize, out: &mut Vec<Action>) -> Option<Tick> {
        match self {
            Scheduler::RoundRobin => None,
            Scheduler::Diffq(_) => Some(Tick {
                pump_all: true,
                interval: diffq::DIFFQ_TICK,
            }),
            Scheduler::Dpclo(d) => Some(Tick {
                pump_all: true,
                interval: d.interval,
            }),
            Scheduler::Dclo(d) => Some(d.tick(now, nodes, out)),
        }
    }

    /// A network timer of the scheduler's (`NetTimerKind::Dclo*`) fired at `node`.
    pub fn timer(&mut self, v: &NodeView, kind: NetTimerKind, out: &mut Vec<Action>) {
        if let Scheduler::Dclo(d) = self {
            d.timer(v, kind, out);
        }
    }

    /// The scheduler's control packet `control` from `from` reached `node`.
    pub fn control_received(
        &mut self,
        node: u32,
        from: u32,
        control: Control,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        if let Scheduler::Dclo(d) = self {
            d.receive(node, from, control, now, out);
        }
    }

    /// Scheduling decisions that held every packet back.
    pub fn holds(&self) -> u64 {
        match self {
            Scheduler::Diffq(d) => d.holds,
            Scheduler::Dpclo(d) => d.holds,
            _ => 0,
        }
    }

    /// Packets sent per MAC level by the schedulers that set priorities.
    pub fn level_use(&self) -> Option<&[u64]> {
        match self {
            Scheduler::Diffq(d) => Some(&d.level_use),
            Scheduler::Dpclo(d) => Some(&d.level_use),
            _ => None,
        }
    }

    pub fn dclo(&self) -> Option<&dclo::Dclo> {
        match self {
            Scheduler::Dclo(d) => Some(d),
            _ => None,
        }
    }
}

/// How fast each flow's source sends (one controller per flow, indexed by flow id).
#[derive(Debug, Default)]
pub enum SourceControl {
    /// Every source at the rate its flow gives.
    #[default]
    Fixed,
    /// DiffQ's source rate control (§4.1): AIMD or log utility on the source's own queue.
    Diffq(Vec<diffq::SourceRate>),
    /// DPCLO's rate adaptation on the source's own queue (§IV-C), sampled each tick.
    Dpclo(dpclo::DpcloSources),
    /// DCLO's `w/p` (eq. 2), set at the start of each matching interval.
    Dclo(dclo::DcloSources),
}

impl SourceControl {
    /// A constant-rate source of `flow` offers a packet; `room`: whether its own queue can take
    /// it.
    #[inline]
    pub fn offered(&mut self, flow: u32, room: bool) {
        if let (SourceControl::Dpclo(d), false) = (self, room) {
            d.refused[flow as usize] += 1;
        }
    }

    /// The time to the next packet of a constant-rate `flow` of `payload` bytes that has just
    /// sent one, its own queue holding `own` packets for the destination; `None`: the flow's
    /// own interval.
    #[inline]
    pub fn next_interval(&mut self, flow: u32, own: u32, payload: u32) -> Option<SimTime> {
        match self {
            SourceControl::Fixed => None,
            SourceControl::Diffq(rates) => {
                let rate = rates[flow as usize].on_packet(own);
                Some(crate::app::cbr_interval(payload, rate))
            }
            SourceControl::Dpclo(d) => Some(SimTime::from_secs_f64(
                1.0 / d.rates[flow as usize].rate_pps,
            )),
            SourceControl::Dclo(d) => Some(SimTime::from_secs_f64(1.0 / d.rates[flow as usize])),
        }
    }

    /// The pacing rate (bit/s) of a paced TCP `flow` about to send, its own queue holding `own`
    /// packets; `None`: the rate stays.
    #[inline]
    pub fn pace_rate(&mut self, flow: u32, own: u32) -> Option<f64> {
        match self {
            SourceControl::Diffq(rates) => Some(rates[flow as usize].on_packet(own)),
            _ => None,
        }
    }

    /// The periodic tick: every emitting flow `i` (`emitting[i]`) reads its own queue
    /// (`own(i)`) and sets its rate.
    pub fn tick(&mut self, emitting: impl Fn(usize) -> bool, own: impl Fn(usize) -> u32) {
        match self {
            SourceControl::Dpclo(d) => d.sample(emitting, own),
            SourceControl::Dclo(d) => d.set_rates(emitting, own),
            _ => {}
        }
    }
}
