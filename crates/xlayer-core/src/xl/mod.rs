//! Cross-layer data-path components: what sits between the network layer's queues and the MAC
//! and decides, per packet, what goes next, to whom and at which MAC priority, and how fast
//! sources may send (ARCHITECTURE.md, "Components").
//!
//! Three component kinds, each a trait whose hooks default to doing nothing ([`Schedule`],
//! [`SourceRateControl`], [`Gate`]) and an enum of the built-in components the node assembly
//! (`crate::world`) calls through, dispatched statically by `match` (smoltcp's congestion
//! `Controller` and `AnyController` are the model):
//!
//! - [`Scheduler`]: over per-destination queues, which destination's head packet the MAC gets
//!   next, its next hop and MAC level — round robin, DiffQ (§4.1), DPCLO (§IV-B..E) or DCLO's
//!   matching — plus what the scheduler keeps of the packets it handed over and its periodic
//!   work;
//! - [`SourceControl`]: how fast each flow's source sends — at its own rate, DiffQ's AIMD or
//!   log-utility controller, DPCLO's queue-driven rate, or DCLO's `w/p`;
//! - [`AnyGate`]: between forwarding and the MAC — open, or Fusion's interface queue with its
//!   congestion bit, hop-by-hop flow control and token-bucket sources;
//! - [`Forwarding`]: how a flow's packets travel beyond the routing next hop — unicast to it
//!   (every hook's default), or MORE's opportunistic routing with network coding (coded
//!   packets broadcast, kept by the forwarders that hear them, decoded per batch).
//!
//! One protocol is one file ([`diffq`], [`dpclo`], [`dclo`], [`fusion`], [`more`]) holding its
//! state and its decisions. Components never touch the world: they read a [`NodeView`] of the node's
//! queues, what it overheard and its routes, and ask for side effects (control packets, timers,
//! a new look at a node's queues) through [`Action`]s the world carries out in order.
//!
//! Depends on the layers below it: `sim`, `wire`, `mac` (a gate retunes its node's contention
//! windows), `net` and `app`.

pub mod dclo;
pub mod diffq;
pub mod dpclo;
pub mod fusion;
pub mod more;

use crate::app::Flow;
pub use crate::net::action::Action;
use crate::net::queue::{NeighbourQueues, PerDestQueues};
use crate::net::routing::Routing;
use crate::sim::event::NetTimerKind;
use crate::sim::SimTime;
use crate::wire::packet::{Control, Packet, PacketArena};

/// What a scheduler sees of one node when it chooses: its queues (and the packets in them),
/// what it overheard of its neighbours' queues, its routes, how many neighbours it has in range,
/// and the forwarding component (an opportunistic one names a packet's candidate forwarders).
pub struct NodeView<'a> {
    pub now: SimTime,
    pub node: u32,
    pub queues: &'a PerDestQueues,
    pub overheard: &'a NeighbourQueues,
    pub routing: &'a Routing,
    pub neighbours: usize,
    pub packets: &'a PacketArena,
    pub forwarding: &'a Forwarding,
}

impl<'a> NodeView<'a> {
    /// The routing next hop towards `dst` (`crate::net::routing::UNREACHABLE` if none).
    #[inline]
    pub fn next_hop(&self, dst: u32) -> u32 {
        self.routing.next_hop(self.node, dst)
    }

    /// The candidate forwarders of the head-of-line packet of `dst`'s queue when its flow is
    /// routed opportunistically (MORE: the downstream forwarders of the batch's list within one
    /// hop); `None` for a packet routed to one next hop.
    #[inline]
    pub fn opportunistic_candidates(&self, dst: u32) -> Option<&'a [u32]> {
        let h = self.queues.head(dst)?;
        self.forwarding
            .candidates(self.node, self.packets.get(h).flow)
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

/// What the world does after a scheduler's periodic tick.
#[derive(Debug, Clone, Copy)]
pub struct Tick {
    /// Every node with packets waiting and a free MAC is pumped.
    pub pump_all: bool,
    /// The next tick, this long after this one.
    pub interval: SimTime,
}

/// A scheduler over per-destination queues: which destination's head packet a node's free MAC
/// gets, to which neighbour, at which level, and what the scheduler keeps of it. Every hook has
/// a default that does nothing (round robin, the routing next hop, level unchanged), so a
/// scheduler writes only the hooks it needs.
pub trait Schedule {
    /// Whether packet `p` goes through the per-destination queues at all.
    fn queues(&self, _p: &Packet) -> bool {
        true
    }

    /// The choice at a node whose MAC may take a packet.
    fn choose(&mut self, _v: &NodeView) -> Choice {
        Choice::RoundRobin(None)
    }

    /// A packet chosen by [`Schedule::choose`] goes out at MAC `level` (priority usage).
    fn level_used(&mut self, _level: u8) {}

    /// `node`'s MAC accepted its packet for `dst`, to `next`.
    fn handed_to_mac(&mut self, _node: u32, _next: u32, _dst: u32) {}

    /// `node`'s MAC is done with the packet it was handed (acknowledged or dropped).
    fn mac_done(
        &mut self,
        _node: u32,
        _delivered: bool,
        _now: SimTime,
        _heard: &mut NeighbourQueues,
    ) {
    }

    /// The queue length a data frame's header carries for its destination, from the sender's
    /// queue length `len` as it stands.
    fn header_queue_len(&self, len: u32) -> u32 {
        len
    }

    /// Whether news of a neighbour's queue (an overheard data frame) should make a node with
    /// packets waiting look at them again.
    fn repumps_on_overheard(&self) -> bool {
        false
    }

    /// The periodic tick (`Event::BackpressureTick`) of `nodes` nodes; `None` without one.
    fn tick(&mut self, _now: SimTime, _nodes: usize, _out: &mut Vec<Action>) -> Option<Tick> {
        None
    }

    /// A network timer of the scheduler's fired at `v.node`.
    fn timer(&mut self, _v: &NodeView, _kind: NetTimerKind, _out: &mut Vec<Action>) {}

    /// The scheduler's control packet `control` from `from` reached `node`.
    fn control_received(
        &mut self,
        _node: u32,
        _from: u32,
        _control: Control,
        _now: SimTime,
        _out: &mut Vec<Action>,
    ) {
    }

    /// Scheduling decisions that held every packet back.
    fn holds(&self) -> u64 {
        0
    }

    /// Packets sent per MAC level, for schedulers that set priorities.
    fn level_use(&self) -> Option<&[u64]> {
        None
    }
}

/// Round robin over the destinations with packets waiting (plain per-destination queueing, or
/// FIFO interface queues that never consult a scheduler): every hook's default.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoundRobin;

impl Schedule for RoundRobin {}

/// How fast each flow's source sends (one controller per flow, indexed by flow id). Every hook
/// has a default that leaves the flow at its own rate.
pub trait SourceRateControl {
    /// Whether the controller reads the source's own queue (the world then looks it up).
    fn reads_own_queue(&self) -> bool {
        false
    }

    /// Whether the controller counts the packets its sources' own queues refuse ([`offered`]).
    ///
    /// [`offered`]: SourceRateControl::offered
    fn counts_refusals(&self) -> bool {
        false
    }

    /// A constant-rate source of `flow` offers a packet; `room`: whether its own queue can take
    /// it.
    fn offered(&mut self, _flow: u32, _room: bool) {}

    /// The time to the next packet of a constant-rate `flow` of `payload` bytes that has just
    /// sent one, its own queue holding `own` packets for the destination; `None`: the flow's
    /// own interval.
    fn next_interval(&mut self, _flow: u32, _own: u32, _payload: u32) -> Option<SimTime> {
        None
    }

    /// The pacing rate (bit/s) of a paced TCP `flow` about to send, its own queue holding `own`
    /// packets; `None`: the rate stays.
    fn pace_rate(&mut self, _flow: u32, _own: u32) -> Option<f64> {
        None
    }

    /// The periodic tick: every emitting flow `i` (`emitting(i)`) reads its own queue
    /// (`own(i)`) and sets its rate.
    fn tick(&mut self, _emitting: &dyn Fn(usize) -> bool, _own: &dyn Fn(usize) -> u32) {}
}

/// Every source at the rate its flow gives: every hook's default.
#[derive(Debug, Default, Clone, Copy)]
pub struct FixedRate;

impl SourceRateControl for FixedRate {}

/// A gate between forwarding and the MAC: it may keep a node's interface queue itself and hand
/// the MAC one packet at a time (hop-by-hop flow control), stamp a congestion bit on the data
/// frames a node sends and react to the bits it overhears, and admit sources' packets at its own
/// pace. Every hook defaults to an open gate: packets go straight to the MAC's queues.
pub trait Gate {
    /// Whether the gate keeps the interface queue (packets with a route go to it).
    fn holds_queue(&self) -> bool {
        false
    }
    /// A packet for `node`'s interface queue (`transit`: forwarded for another node); false if
    /// refused (the gate counts it).
    fn admit(&mut self, _node: u32, _transit: bool) -> bool {
        true
    }
    fn push(&mut self, _node: u32, _packet: u32) {}
    /// `node`'s queue changed: re-evaluate its state (and retune its MAC).
    fn update(&mut self, _node: u32, _now: SimTime, _mac: &mut crate::mac::Mac) {}
    /// The packet `node`'s MAC gets next, and its next hop (`route(packet)` gives the packet's
    /// next hop and destination); `None`: nothing now.
    fn next_for_mac(
        &mut self,
        _node: u32,
        _now: SimTime,
        _route: &dyn Fn(u32) -> (u32, u32),
        _out: &mut Vec<Action>,
    ) -> Option<(u32, u32)> {
        None
    }
    /// `node`'s MAC accepted `packet`.
    fn accepted(&mut self, _node: u32, _packet: u32) {}
    /// `node`'s MAC is done with `packet`; true if it was the gate's.
    fn dequeued(&mut self, _node: u32, _packet: u32) -> bool {
        false
    }
    /// Whether the gate reads the congestion bits of the data frames a node decodes.
    fn hears_bits(&self) -> bool {
        false
    }
    /// The congestion bit `node` stamps on the data frame it sends.
    fn congestion_bit(&self, _node: u32) -> bool {
        false
    }
    /// `node` decoded data packet `p` from `from` carrying `bit`; `parent`: `from` is `node`'s
    /// next hop towards `p`'s destination.
    fn heard(
        &mut self,
        _node: u32,
        _from: u32,
        _bit: bool,
        _p: &Packet,
        _parent: bool,
        _now: SimTime,
    ) -> Heard {
        Heard::default()
    }
    /// `node` forwards a packet of source `src`.
    fn forwarded(&mut self, _node: u32, _src: u32, _now: SimTime) {}
    /// Whether a saturating source at `node` may queue one more packet; `None`: the queues say.
    fn source_room(&self, _node: u32) -> Option<bool> {
        None
    }
    /// A constant-rate `flow` at `node` offers a packet.
    fn cbr_offer(&mut self, _node: u32, _flow: u32, _now: SimTime) -> CbrOffer {
        CbrOffer::Open
    }
    /// The next constant-rate flow waiting at `node` that may send now.
    fn next_waiting_cbr(
        &mut self,
        _node: u32,
        _now: SimTime,
        _out: &mut Vec<Action>,
    ) -> Option<u32> {
        None
    }
    /// Whether a saturating source at `node` may originate a packet now.
    fn source_may_send(&mut self, _node: u32, _now: SimTime, _out: &mut Vec<Action>) -> bool {
        true
    }
    /// The gate's retry timer (`NetTimerKind::FusionRetry`) fired at `node`.
    fn retry_fired(&mut self, _node: u32, _now: SimTime) {}
}

/// What hearing a neighbour's congestion bit did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Heard {
    /// The node's next hops cleared: its queue may move again.
    pub cleared: bool,
    /// The node's sources earned a token.
    pub token: bool,
}

/// What the gate makes of a constant-rate source's packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CbrOffer {
    /// Not the gate's business: the source sends as usual.
    Open,
    /// Send it now.
    Send,
    /// It waits for a token.
    Waiting,
}

/// The open gate: every hook's default.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenGate;

impl Gate for OpenGate {}

/// Calls `$body` with `$v` bound to the variant's component, whichever it is (static dispatch
/// over an enum of the built-in components).
macro_rules! each_variant {
    ($enum:ident { $($variant:ident),* }, $value:expr, $v:ident => $body:expr) => {
        match $value {
            $($enum::$variant($v) => $body,)*
        }
    };
}

/// The built-in schedulers, one of which runs at every node (its per-node state is indexed by
/// node id). Adding one is a file implementing [`Schedule`], a variant here and a preset.
#[derive(Debug)]
pub enum Scheduler {
    RoundRobin(RoundRobin),
    Diffq(diffq::DiffqScheduler),
    Dpclo(dpclo::DpcloScheduler),
    Dclo(dclo::Dclo),
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler::RoundRobin(RoundRobin)
    }
}

macro_rules! scheduler {
    ($value:expr, $v:ident => $body:expr) => {
        each_variant!(Scheduler { RoundRobin, Diffq, Dpclo, Dclo }, $value, $v => $body)
    };
}

impl Scheduler {
    #[inline]
    pub fn queues(&self, p: &Packet) -> bool {
        scheduler!(self, s => s.queues(p))
    }
    #[inline]
    pub fn choose(&mut self, v: &NodeView) -> Choice {
        scheduler!(self, s => s.choose(v))
    }
    #[inline]
    pub fn level_used(&mut self, level: u8) {
        scheduler!(self, s => s.level_used(level))
    }
    #[inline]
    pub fn handed_to_mac(&mut self, node: u32, next: u32, dst: u32) {
        scheduler!(self, s => s.handed_to_mac(node, next, dst))
    }
    #[inline]
    pub fn mac_done(
        &mut self,
        node: u32,
        delivered: bool,
        now: SimTime,
        heard: &mut NeighbourQueues,
    ) {
        scheduler!(self, s => s.mac_done(node, delivered, now, heard))
    }
    #[inline]
    pub fn header_queue_len(&self, len: u32) -> u32 {
        scheduler!(self, s => s.header_queue_len(len))
    }
    #[inline]
    pub fn repumps_on_overheard(&self) -> bool {
        scheduler!(self, s => s.repumps_on_overheard())
    }
    pub fn tick(&mut self, now: SimTime, nodes: usize, out: &mut Vec<Action>) -> Option<Tick> {
        scheduler!(self, s => s.tick(now, nodes, out))
    }
    pub fn timer(&mut self, v: &NodeView, kind: NetTimerKind, out: &mut Vec<Action>) {
        scheduler!(self, s => s.timer(v, kind, out))
    }
    pub fn control_received(
        &mut self,
        node: u32,
        from: u32,
        control: Control,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        scheduler!(self, s => s.control_received(node, from, control, now, out))
    }
    pub fn holds(&self) -> u64 {
        scheduler!(self, s => s.holds())
    }
    pub fn level_use(&self) -> Option<&[u64]> {
        scheduler!(self, s => s.level_use())
    }

    /// DCLO's state, for its summary columns.
    pub fn dclo(&self) -> Option<&dclo::Dclo> {
        match self {
            Scheduler::Dclo(d) => Some(d),
            _ => None,
        }
    }
}

/// The built-in gates.
#[derive(Debug)]
pub enum AnyGate {
    Open(OpenGate),
    Fusion(fusion::Fusion),
}

impl Default for AnyGate {
    fn default() -> Self {
        AnyGate::Open(OpenGate)
    }
}

macro_rules! gate {
    ($value:expr, $v:ident => $body:expr) => {
        each_variant!(AnyGate { Open, Fusion }, $value, $v => $body)
    };
}

impl AnyGate {
    #[inline]
    pub fn holds_queue(&self) -> bool {
        gate!(self, g => g.holds_queue())
    }
    pub fn admit(&mut self, node: u32, transit: bool) -> bool {
        gate!(self, g => g.admit(node, transit))
    }
    pub fn push(&mut self, node: u32, packet: u32) {
        gate!(self, g => g.push(node, packet))
    }
    pub fn update(&mut self, node: u32, now: SimTime, mac: &mut crate::mac::Mac) {
        gate!(self, g => g.update(node, now, mac))
    }
    pub fn next_for_mac(
        &mut self,
        node: u32,
        now: SimTime,
        route: &dyn Fn(u32) -> (u32, u32),
        out: &mut Vec<Action>,
    ) -> Option<(u32, u32)> {
        gate!(self, g => g.next_for_mac(node, now, route, out))
    }
    pub fn accepted(&mut self, node: u32, packet: u32) {
        gate!(self, g => g.accepted(node, packet))
    }
    #[inline]
    pub fn dequeued(&mut self, node: u32, packet: u32) -> bool {
        gate!(self, g => g.dequeued(node, packet))
    }
    #[inline]
    pub fn hears_bits(&self) -> bool {
        gate!(self, g => g.hears_bits())
    }
    #[inline]
    pub fn congestion_bit(&self, node: u32) -> bool {
        gate!(self, g => g.congestion_bit(node))
    }
    pub fn heard(
        &mut self,
        node: u32,
        from: u32,
        bit: bool,
        p: &Packet,
        parent: bool,
        now: SimTime,
    ) -> Heard {
        gate!(self, g => g.heard(node, from, bit, p, parent, now))
    }
    pub fn forwarded(&mut self, node: u32, src: u32, now: SimTime) {
        gate!(self, g => g.forwarded(node, src, now))
    }
    #[inline]
    pub fn source_room(&self, node: u32) -> Option<bool> {
        gate!(self, g => g.source_room(node))
    }
    pub fn cbr_offer(&mut self, node: u32, flow: u32, now: SimTime) -> CbrOffer {
        gate!(self, g => g.cbr_offer(node, flow, now))
    }
    pub fn next_waiting_cbr(
        &mut self,
        node: u32,
        now: SimTime,
        out: &mut Vec<Action>,
    ) -> Option<u32> {
        gate!(self, g => g.next_waiting_cbr(node, now, out))
    }
    #[inline]
    pub fn source_may_send(&mut self, node: u32, now: SimTime, out: &mut Vec<Action>) -> bool {
        gate!(self, g => g.source_may_send(node, now, out))
    }
    pub fn retry_fired(&mut self, node: u32, now: SimTime) {
        gate!(self, g => g.retry_fired(node, now))
    }

    /// Fusion's state, for its node columns.
    pub fn fusion(&self) -> Option<&fusion::Fusion> {
        match self {
            AnyGate::Fusion(f) => Some(f),
            _ => None,
        }
    }
}

/// The built-in source rate controllers, one per scenario (per-flow state indexed by flow id).
#[derive(Debug)]
pub enum SourceControl {
    Fixed(FixedRate),
    /// DiffQ's source rate control (§4.1): AIMD or log utility on the source's own queue.
    Diffq(diffq::DiffqSources),
    /// DPCLO's rate adaptation on the source's own queue (§IV-C), sampled each tick.
    Dpclo(dpclo::DpcloSources),
    /// DCLO's `w/p` (eq. 2), set at the start of each matching interval.
    Dclo(dclo::DcloSources),
}

impl Default for SourceControl {
    fn default() -> Self {
        SourceControl::Fixed(FixedRate)
    }
}

macro_rules! sources {
    ($value:expr, $v:ident => $body:expr) => {
        each_variant!(SourceControl { Fixed, Diffq, Dpclo, Dclo }, $value, $v => $body)
    };
}

impl SourceControl {
    #[inline]
    pub fn reads_own_queue(&self) -> bool {
        sources!(self, s => s.reads_own_queue())
    }
    #[inline]
    pub fn counts_refusals(&self) -> bool {
        sources!(self, s => s.counts_refusals())
    }
    #[inline]
    pub fn offered(&mut self, flow: u32, room: bool) {
        sources!(self, s => s.offered(flow, room))
    }
    #[inline]
    pub fn next_interval(&mut self, flow: u32, own: u32, payload: u32) -> Option<SimTime> {
        sources!(self, s => s.next_interval(flow, own, payload))
    }
    #[inline]
    pub fn pace_rate(&mut self, flow: u32, own: u32) -> Option<f64> {
        sources!(self, s => s.pace_rate(flow, own))
    }
    pub fn tick(&mut self, emitting: &dyn Fn(usize) -> bool, own: &dyn Fn(usize) -> u32) {
        sources!(self, s => s.tick(emitting, own))
    }
}

/// What becomes of a packet leaving a node's queue for the MAC ([`Forward::prepare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// Not the forwarding component's: to the scheduler's or the routing next hop.
    Routed,
    /// A MAC broadcast (MORE's coded packet, its coefficients now drawn); `natives` packets of
    /// the flow's data entered the network with it (a new batch at its source), else 0.
    Broadcast { natives: u32 },
    /// Nothing to send any more (a flushed batch): the packet is dropped.
    Drop,
}

/// How a flow's packets travel beyond the routing next hop: the forwarding component (one per
/// scenario, its per-flow and per-node state indexed by their ids). Every hook defaults to
/// plain unicast forwarding: packets follow the routing (or the scheduler's) next hop and the
/// component never sees them.
pub trait Forward {
    /// The packet `node` queues for `flow` when the flow's source (or, asked by an
    /// [`Action::Originate`], a forwarder) sends one, if the component makes the flow's
    /// packets; `None`: the flow's transport makes it.
    fn originate(&mut self, _flow: &Flow, _node: u32, _now: SimTime, _ttl: u8) -> Option<Packet> {
        None
    }
    /// Whether a backlogged source of `flow` may queue a packet now (MORE: once its batch's
    /// forwarder list could be made; a source whose destination the link measurements do not
    /// reach yet waits).
    fn source_may_send(&mut self, _flow: u32, _routing: &Routing, _now: SimTime) -> bool {
        true
    }
    /// Whether a data packet arriving from the MAC is the component's (it then gets
    /// [`Forward::receive`] instead of the network layer's forwarding).
    fn takes(&self, _p: &Packet) -> bool {
        false
    }
    /// `node` decoded packet `p` of the component's, sent by `from`.
    fn receive(
        &mut self,
        _node: u32,
        _from: u32,
        _p: &Packet,
        _routing: &Routing,
        _now: SimTime,
        _out: &mut Vec<Action>,
    ) {
    }
    /// Packet `p` leaves `node`'s queue for the MAC.
    fn prepare(
        &mut self,
        _node: u32,
        _p: &mut Packet,
        _routing: &Routing,
        _now: SimTime,
    ) -> Prepared {
        Prepared::Routed
    }
    /// The component's control packet `control` from `from` reached `node`.
    fn control_received(
        &mut self,
        _node: u32,
        _from: u32,
        _control: Control,
        _routing: &Routing,
        _now: SimTime,
        _out: &mut Vec<Action>,
    ) {
    }
    /// `node`'s MAC gave up on the component's unicast control packet `control`, handed to it
    /// for the `attempt`-th time (0 first).
    fn unicast_failed(
        &mut self,
        _node: u32,
        _control: Control,
        _attempt: u64,
        _routing: &Routing,
        _now: SimTime,
        _out: &mut Vec<Action>,
    ) {
    }
    /// The candidate forwarders at `node` of a packet of `flow` routed opportunistically (the
    /// DiffQ document's F_ip, §4.2); `None` for flows that follow one next hop.
    fn candidates(&self, _node: u32, _flow: u32) -> Option<&[u32]> {
        None
    }
}

/// Unicast forwarding to the routing next hop: every hook's default.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unicast;

impl Forward for Unicast {}

/// The built-in forwarding components.
#[derive(Debug)]
pub enum Forwarding {
    Unicast(Unicast),
    /// MORE (boxed: its tables are large and most scenarios run unicast).
    More(Box<more::More>),
}

impl Default for Forwarding {
    fn default() -> Self {
        Forwarding::Unicast(Unicast)
    }
}

macro_rules! forwarding {
    ($value:expr, $v:ident => $body:expr) => {
        each_variant!(Forwarding { Unicast, More }, $value, $v => $body)
    };
}

impl Forwarding {
    #[inline]
    pub fn originate(&mut self, flow: &Flow, node: u32, now: SimTime, ttl: u8) -> Option<Packet> {
        forwarding!(self, f => f.originate(flow, node, now, ttl))
    }
    #[inline]
    pub fn source_may_send(&mut self, flow: u32, routing: &Routing, now: SimTime) -> bool {
        forwarding!(self, f => f.source_may_send(flow, routing, now))
    }
    #[inline]
    pub fn takes(&self, p: &Packet) -> bool {
        forwarding!(self, f => f.takes(p))
    }
    pub fn receive(
        &mut self,
        node: u32,
        from: u32,
        p: &Packet,
        routing: &Routing,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        forwarding!(self, f => f.receive(node, from, p, routing, now, out))
    }
    #[inline]
    pub fn prepare(
        &mut self,
        node: u32,
        p: &mut Packet,
        routing: &Routing,
        now: SimTime,
    ) -> Prepared {
        forwarding!(self, f => f.prepare(node, p, routing, now))
    }
    pub fn control_received(
        &mut self,
        node: u32,
        from: u32,
        control: Control,
        routing: &Routing,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        forwarding!(self, f => f.control_received(node, from, control, routing, now, out))
    }
    pub fn unicast_failed(
        &mut self,
        node: u32,
        control: Control,
        attempt: u64,
        routing: &Routing,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        forwarding!(self, f => f.unicast_failed(node, control, attempt, routing, now, out))
    }
    #[inline]
    pub fn candidates(&self, node: u32, flow: u32) -> Option<&[u32]> {
        forwarding!(self, f => f.candidates(node, flow))
    }

    /// MORE's state, for its result columns.
    pub fn more(&self) -> Option<&more::More> {
        match self {
            Forwarding::More(m) => Some(m),
            _ => None,
        }
    }
}
