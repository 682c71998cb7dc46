//! Node assembly and the run loop: the one place that wires the layers of every node together.
//!
//! [`World`] owns the engine's queue, the nodes (each a PHY, a MAC and network counters with
//! their random streams), the channel's precomputed neighbour lists, the packet arena, the
//! transmissions on the air, the flows and their statistics. Events are dispatched by `match`;
//! a transmission schedules signal start/end events only at the nodes in its neighbour list
//! (those whose mean received power can matter), so the cost of a frame grows with the local
//! density, not the network size; and among those only where the frame arrives strong enough to
//! be decoded or carrier-sensed — weaker ones get it in bulk (`crate::phy`, "Weak interference";
//! `radio.weak_interference`), with a wake-up only where their sum may tip carrier sense. Steady state allocates nothing per event: packet and
//! transmission slots are recycled and the MAC's action list is reused.
//!
//! The protocols are components the scenario chooses, each an enum the data path calls through
//! its hooks: the routing ([`Routing`]: static, or ETX probing with DSDV or OLSR), each flow's
//! transport connection (`crate::transport::conn::Conn`: TCP, TFRC), and the cross-layer
//! components of `crate::xl` — the [`Scheduler`] over the per-destination queues, the sources'
//! [`SourceControl`] and the [`AnyGate`]. The side effects they ask for ([`Action`]s, a
//! connection's `ConnOut`) are carried out here and in the submodules: `transport` (a
//! connection's packets, timers and deliveries), `gate` (what a gate such as Fusion decides)
//! and `tuning` (the tuning layers' access to the nodes); `capture` writes the pcap records of
//! the nodes whose capture the caller attached.

use std::time::{Duration, Instant};

use rand_distr::{Distribution, Exp1, StandardNormal};

use crate::app::{Flow, FlowTransport, SourceKind};
use crate::mac::BROADCAST;
use crate::mac::{Frame, Mac, MacAction, QueuedPacket};
use crate::metrics::pcap::PcapWriter;
use crate::metrics::{FlowStats, NetStats};
use crate::net::linkloss::LinkLoss;
use crate::net::queue::{Overheard, Queueing, HEADER_BYTES};
use crate::net::Control;
use crate::net::{routing::UNREACHABLE, Packet, PacketArena, Routing, StaticRoutes};
use crate::phy::radio::Fading;
use crate::phy::{Phy, PhyConfig, PhyTx, RxOutcome, TurnScratch};
use crate::sim::event::NetTimerKind;
use crate::sim::rng::Stream;
use crate::sim::{Event, EventQueue, SimTime, TimerId};
use crate::transport::conn::{Conn, ConnOut};
use crate::transport::tcp::TcpNotice;
use crate::transport::{udp_datagram, Header, ECN_CE, ECN_ECT0};
use crate::tune::{EventBus, TuneEventKind};
use crate::xl::{
    Action, AnyGate, CbrOffer, Choice, Forwarding, NodeView, Prepared, Scheduler, SourceControl,
};

mod capture;
mod gate;
mod transport;
mod tuning;

pub use transport::{FlavorMonitor, TcpTraceRow};

/// A [`NodeView`] of `node` at `now`, borrowing the world's fields one by one (so that a
/// component may be borrowed mutably beside it).
macro_rules! node_view {
    ($w:ident, $node:expr, $now:expr) => {
        NodeView {
            now: $now,
            node: $node,
            queues: $w.nodes[$node as usize].queueing.queues(),
            overheard: $w.nodes[$node as usize].queueing.overheard(),
            routing: &$w.routing,
            neighbours: $w.neighbors[$node as usize].len(),
            packets: &$w.packets,
            forwarding: &$w.forwarding,
        }
    };
}

/// Up to this many nodes (a node array of 2 MiB, about 1,400 nodes) nothing is prefetched
/// ([`Node::prefetch_hot`]): this project's machines have 1 MiB of L2 a core, but a node's hot
/// lines are 15 of its 23, and prefetching from 1 MiB on measured no faster at 900 nodes.
const PREFETCH_MIN_NODES: usize = (2 << 20) / std::mem::size_of::<Node>();

/// A node: its layers and its own random streams. Laid out in declaration order (`repr(C)`),
/// on cache lines of its own (`align(64)`): the PHY's hot fields end `phy` and the MAC's begin
/// `mac`, which starts a line right after it, so that a signal's event at a node that neither
/// sends nor receives it reads four lines of its node, the PHY's last three and the MAC's first
/// (see [`Phy`] and [`Mac`]); what a reception's end reads besides (the queueing, the PHY's and
/// MAC's streams) just before the PHY, but `off` (read at every decoded frame) in the first line,
/// outside the prefetched span (moved into it, it measured no faster); the position and the
/// flavor monitor, which the results and forwarding read, last.
#[repr(C, align(64))]
pub struct Node {
    pub id: u32,
    /// Switched off (scenario event): the radio neither sends nor decodes, the network layer
    /// drops what it would send.
    pub off: bool,
    pub net: NetStats,
    /// The node's capture, when the caller attached one (`World::attach_capture`).
    pub pcap: Option<PcapWriter>,
    rng_fading: Stream,
    rng_mac: Stream,
    rng_phy: Stream,
    /// Queueing above the MAC: FIFO, or per-destination queues a scheduler serves.
    pub queueing: Queueing,
    /// The queue slot of this node's weak-interference wake-up ([`Node::arm_weak_wake`]; made
    /// at the first one).
    weak_timer: Option<TimerId>,
    pub phy: Phy,
    pub mac: Mac,
    pub x: f64,
    pub y: f64,
    /// Passive TCP flavor detection on what the node forwards (`[stack.flavor_link]`).
    pub flavor: Option<Box<transport::FlavorMonitor>>,
}

// The MAC begins a cache line, the PHY ends where it begins and its reception begins a line
// (see [`Node`]'s layout): a field added before them, or to the PHY, may need others moved to
// keep it so.
const _: () = assert!(
    std::mem::offset_of!(Node, mac).is_multiple_of(64)
        && std::mem::offset_of!(Node, phy) + std::mem::size_of::<Phy>()
            == std::mem::offset_of!(Node, mac)
        && (std::mem::offset_of!(Node, phy) + Phy::RX_AT).is_multiple_of(64)
);

impl Node {
    pub(crate) fn new(id: u32, x: f64, y: f64, mac: Mac, seed: u64) -> Node {
        use crate::sim::rng::stream;
        Node {
            id,
            x,
            y,
            phy: Phy::new(),
            mac,
            net: NetStats::default(),
            queueing: Queueing::Fifo,
            rng_mac: stream(seed, id, "mac.backoff"),
            rng_phy: stream(seed, id, "phy.rx"),
            rng_fading: stream(seed, id, "phy.fading"),
            pcap: None,
            flavor: None,
            off: false,
            weak_timer: None,
        }
    }

    /// Asks the CPU for the cache lines an event at this node reads: from the MAC's and PHY's
    /// streams to the MAC's response deadline (15 lines; see the layout notes on [`Node`],
    /// [`Phy`] and [`Mac`]). Once the node array outgrows the caches, an event's first touch of
    /// its node misses them on every line (cachegrind with a 2 MiB last level, the eighteenth
    /// session's layout: about 8 misses an event on `benches/scale.py`'s 10,000-node grid, 0.14
    /// on its 900-node one); prefetched while the event before it runs, the misses overlap that
    /// work instead of stalling their own. A hint only: no value, and so no result, depends on
    /// it.
    #[inline(always)]
    fn prefetch_hot(&self) {
        const FROM: usize = std::mem::offset_of!(Node, rng_mac);
        const TO: usize = std::mem::offset_of!(Node, mac) + crate::mac::Mac::HOT_TO;
        // The span needs the streams and the PHY before the MAC in a node, begins a line (a
        // node does) and stays within 15 lines.
        const _: () = assert!(FROM.is_multiple_of(64) && FROM < TO && TO - FROM <= 15 * 64);
        crate::sim::memory::prefetch_bytes(self, FROM, TO);
    }

    /// Whether the MAC reads carrier sense, so that weak-interference wake-ups are wanted
    /// (`Mac::listens_to_carrier_sense`); if not, the PHY is told none is scheduled for now.
    /// An idle Z-MAC node without an attempt was 87 % of the wake-ups in the first 100 s of
    /// `benches/dpclo-fig8.toml` (1.31 of 1.51 million).
    #[inline]
    fn wants_weak_wake(&mut self, every_node: bool) -> bool {
        if self.mac.listens_to_carrier_sense() || every_node {
            return true;
        }
        self.phy.skip_weak_wake();
        false
    }

    /// A frame sent at `now` reaches this node in bulk over `[start, end)` with `power_mw`:
    /// carrier-sense-only (the MAC asks for it when it decides), or weak interference (no
    /// events unless it may tip carrier sense: then a wake-up is armed).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn arrive_in_bulk(
        &mut self,
        class: LinkClass,
        now: SimTime,
        start: SimTime,
        end: SimTime,
        power_mw: f64,
        cfg: &PhyConfig,
        scratch: &mut TurnScratch,
        queue: &mut EventQueue,
    ) {
        if class == LinkClass::Sensed {
            self.phy.add_sensed(now, start, end, power_mw);
            return;
        }
        self.phy.add_weak(now, start, end, power_mw);
        if self.wants_weak_wake(cfg.wake_every_node) {
            if let Some((at, generation)) = self.phy.weak_wake_raised(now, start, cfg, scratch) {
                self.arm_weak_wake(queue, at, generation);
            }
        }
    }

    /// Schedules the weak-interference wake-up `Phy::weak_wake` asked for (`at`, `generation`).
    /// A newer wake-up always supersedes the one pending (the PHY asks for one only earlier
    /// than that, or when none is pending), so it is one timer moved, not one event more: the
    /// superseded ones were popped and dropped (0.68 million of the 7.9 million events of the
    /// first 100 s of `benches/dpclo-fig8.toml`). The timer takes a new sequence number, as an
    /// event scheduled then would, so equal-time events keep their order.
    #[inline]
    fn arm_weak_wake(&mut self, queue: &mut EventQueue, at: SimTime, generation: u32) {
        let timer = *self.weak_timer.get_or_insert_with(|| queue.new_timer());
        let node = self.id;
        queue.set_timer(timer, at, Event::WeakWake { node, generation });
    }

    /// Hands packet `h` (`p`) for `next` to the MAC at the level it asks for, capped at the
    /// MAC's top level; false if that level's queue is full.
    pub(crate) fn mac_enqueue(
        &mut self,
        now: SimTime,
        h: u32,
        p: &Packet,
        next: u32,
        queue: &mut EventQueue,
    ) -> bool {
        let level = (p.level as usize).min(self.mac.level_count() - 1);
        let item = QueuedPacket {
            packet: h,
            bytes: p.bytes(),
            next_hop: next,
            flow: p.flow,
        };
        self.mac.enqueue(now, level, item, queue, &mut self.rng_mac)
    }
}

/// A directed channel link: who hears a node, how strongly on average, and after what delay.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    pub to: u32,
    pub mean_rx_mw: f64,
    pub delay: SimTime,
}

struct TxSlot {
    phy: PhyTx,
    frame: Frame,
    /// The carried packet as it was sent (receivers copy it).
    packet: Option<Packet>,
    /// Fusion: the congestion bit of the carried data packet.
    congestion_bit: bool,
    /// The receivers that get events of this transmission, in the sender's link list's
    /// (propagation delay) order — every receiver the frame reaches at or above
    /// `PhyConfig::weak_below_mw`; the weaker ones have it in bulk. Each carries what its events
    /// need of the link, so they do not read the sender's link list again. The vector is kept
    /// when the slot is recycled, so steady state allocates nothing.
    receivers: Vec<Receiver>,
}

/// A receiver of a transmission ([`TxSlot::receivers`]).
#[derive(Debug, Clone, Copy)]
struct Receiver {
    /// The receiving node.
    to: u32,
    /// Its index in the sender's link list.
    link: u32,
    /// The propagation delay to it.
    delay: SimTime,
    /// Received power (fading drawn at the start).
    power_mw: f64,
}

/// What a frame sent on a link does at its receiver ([`World::transmit`]): events (decoded or
/// carrier-sensed the usual way), carrier-sense-only in bulk, or weak interference in bulk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum LinkClass {
    Events,
    Sensed,
    Weak,
}

impl LinkClass {
    /// The class of a link whose frame arrives with `power` after `delay`.
    #[inline(always)]
    fn of(power: f64, delay: SimTime, weak_below_mw: f64, sensed_below_mw: f64) -> LinkClass {
        if power < sensed_below_mw && power >= weak_below_mw && delay > SimTime::ZERO {
            LinkClass::Sensed
        } else if power < weak_below_mw && delay > SimTime::ZERO {
            LinkClass::Weak
        } else {
            LinkClass::Events
        }
    }
}

/// A node's link list cut where the class changes, for a sender's transmit power factor
/// (without fading or shadowing the class of each link is fixed). The list is in delay order,
/// and a propagation model whose power falls with distance puts the classes in order: links
/// `..sensed_from` get events, `sensed_from..weak_from` are carrier-sense-only, the rest weak.
/// Where they are not in that order (`cut` false), the transmit loop classifies link by link.
#[derive(Debug, Clone, Copy)]
struct LinkCuts {
    /// The bits of the factor the cuts are for (`u64::MAX`, a NaN: none computed yet).
    factor_bits: u64,
    cut: bool,
    sensed_from: u32,
    weak_from: u32,
}

impl LinkCuts {
    const NONE: LinkCuts = LinkCuts {
        factor_bits: u64::MAX,
        cut: false,
        sensed_from: 0,
        weak_from: 0,
    };

    fn of(links: &[Link], factor: f64, weak_below_mw: f64, sensed_below_mw: f64) -> LinkCuts {
        let class = |l: &Link| {
            LinkClass::of(
                l.mean_rx_mw * factor,
                l.delay,
                weak_below_mw,
                sensed_below_mw,
            )
        };
        let cut = links.windows(2).all(|w| class(&w[0]) <= class(&w[1]));
        let first = |c: LinkClass| {
            links
                .iter()
                .position(|l| class(l) >= c)
                .unwrap_or(links.len())
        };
        LinkCuts {
            factor_bits: factor.to_bits(),
            cut,
            sensed_from: first(LinkClass::Sensed) as u32,
            weak_from: first(LinkClass::Weak) as u32,
        }
    }
}

/// DiffQ's TFRC-ECN: a node marks ECN-capable packets CE when its interface queue is above 75%
/// of its size.
const ECN_MARK_FRACTION: f64 = 0.75;

/// Per-packet channel variation.
#[derive(Debug, Clone, Copy)]
pub struct ChannelVariation {
    pub fading: Fading,
    pub shadowing_sigma_db: f64,
}

pub struct World {
    pub cfg: PhyConfig,
    pub queue: EventQueue,
    pub nodes: Vec<Node>,
    pub links: Vec<Vec<Link>>,
    /// Each node's link list cut by class ([`LinkCuts`]), computed at its first transmission
    /// and again when its transmit power changes.
    link_cuts: Vec<LinkCuts>,
    /// Nodes in reception range (mean power ≥ reception threshold), ascending ids.
    pub neighbors: Vec<Vec<u32>>,
    /// The routing component: static routes, or ETX probing with DSDV or OLSR.
    pub routing: Routing,
    pub packets: PacketArena,
    txs: Vec<TxSlot>,
    tx_free: Vec<u32>,
    /// What `Phy::weak_wake` sorts, for every node in turn.
    turn_scratch: TurnScratch,
    pub flows: Vec<Flow>,
    pub flow_stats: Vec<FlowStats>,
    /// Saturating flows by source node, and where each node's round-robin over them resumes.
    saturating: Vec<Vec<u32>>,
    saturating_next: Vec<usize>,
    out: Vec<MacAction>,
    /// The transmission whose frame the MAC is handling as decoded (its packet is what a
    /// `MacAction::Deliver` hands up); its slot is not freed before the actions are processed.
    /// An index rather than a copy of the packet: most decoded frames are overheard and
    /// delivered nowhere.
    rx_tx: Option<u32>,
    pub variation: ChannelVariation,
    pub ttl: u8,
    pub warmup: SimTime,
    pub end: SimTime,
    /// Each node's network-layer timer of a single-timer kind (`NetTimerKind::is_single`),
    /// created on first use; empty in runs that arm none.
    single_net_timers: Vec<Option<TimerId>>,
    pub wall: Duration,
    /// Bin width of the per-flow throughput time series (`output.timeseries_bin_s`).
    pub timeseries_bin: Option<SimTime>,
    pub events: EventBus,
    frame_scratch: Vec<u8>,
    body_scratch: Vec<u8>,
    /// The airtimes of the frames transmitted last (`PhyTiming::frame_coded`, remembered).
    airtimes: crate::phy::timing::FrameMemo,
    /// The flows' transport connections (`FlowTransport::Conn` indexes them).
    pub conns: Vec<Conn>,
    conn_out: ConnOut,
    /// Per node, the connections registered for its MAC's underflow events (CLAP senders at
    /// their source), set by [`World::register_link_readers`].
    underflow_listeners: Vec<Vec<u32>>,
    /// The MAC tuning layer's parameters a link-reading transport pulls, looked up once.
    link_params: Option<transport::LinkParams>,
    /// Per node, the data flows it relayed recently and when last (kept only while a
    /// link-reading transport runs: a CLAP probe is stamped with the relay's share).
    relayed_flows: Vec<Vec<(u32, SimTime)>>,
    /// Object sizes of an application request (reused).
    app_scratch: Vec<u64>,
    /// The TCP trace, when `output.tcp_trace` is set.
    pub tcp_trace: Option<Vec<TcpTraceRow>>,
    /// Wired links (`[[wired]]`), both directions of each.
    pub wired: crate::mac::wired::Wired,
    /// Injected noise sources (`[[noise]]`), switched by `Event::Noise`.
    pub noise: Vec<crate::phy::noise::NoiseSource>,
    /// Per-link loss probabilities applied at reception (`None`: no lossy links).
    pub link_loss: Option<LinkLoss>,
    /// Scheduled changes, by the index carried in [`Event::ScenarioChange`].
    pub scenario_events: Vec<ScenarioChange>,
    /// The scheduler over the per-destination queues (`crate::xl`).
    pub scheduler: Scheduler,
    /// Z-MAC's set-up phase when it runs until the slot assignment completes.
    pub zmac_setup: Option<crate::mac::zmac::SetupWatch>,
    /// The sources' rate control (`crate::xl`).
    pub sources: SourceControl,
    /// Side effects the components asked for, carried out by `run_actions` (reused).
    xl_out: Vec<Action>,
    /// The gate between forwarding and the MAC (`crate::xl::Gate`; Fusion's, or open).
    pub gate: AnyGate,
    /// How flows' packets travel beyond the routing next hop (`crate::xl::Forward`: unicast,
    /// or MORE).
    pub forwarding: Forwarding,
    /// Packets a flush took out of a queue (reused).
    purged: Vec<u32>,
    /// ECLAIR's optimizing subsystem (optimizers, their timers and records; UTL state).
    pub optimizers: crate::tune::optimizer::OptimizerHost,
    /// Python optimizers the scenario names, loaded by the Python API.
    pub python_optimizers: Vec<crate::scenario::OptimizerSpec>,
    /// Whether the run loop prefetches the node an event is about to run at (the node array
    /// outgrows the caches: more than [`PREFETCH_MIN_NODES`] nodes).
    prefetch: bool,
}

/// A change the scenario schedules (`events`).
#[derive(Debug, Clone, Copy)]
pub enum ScenarioChange {
    NodeOff(u32),
    NodeOn(u32),
    LinkLoss { from: u32, to: u32, loss: f64 },
}

impl World {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        cfg: PhyConfig,
        nodes: Vec<Node>,
        links: Vec<Vec<Link>>,
        neighbors: Vec<Vec<u32>>,
        routes: StaticRoutes,
        flows: Vec<Flow>,
        variation: ChannelVariation,
        ttl: u8,
        warmup: SimTime,
        end: SimTime,
    ) -> World {
        let n = nodes.len();
        let mut saturating = vec![Vec::new(); n];
        let mut queue = EventQueue::new();
        for f in &flows {
            if f.kind == SourceKind::Saturate && f.transport == FlowTransport::Udp {
                saturating[f.src as usize].push(f.id);
            }
            queue.schedule(f.start, Event::FlowStart { flow: f.id });
        }
        let flow_stats = vec![FlowStats::default(); flows.len()];
        World {
            cfg,
            queue,
            link_cuts: vec![LinkCuts::NONE; n],
            nodes,
            links,
            neighbors,
            routing: Routing::Static(routes),
            packets: PacketArena::default(),
            txs: Vec::with_capacity(64),
            tx_free: Vec::with_capacity(64),
            turn_scratch: TurnScratch::default(),
            flows,
            flow_stats,
            saturating,
            saturating_next: vec![0; n],
            out: Vec::with_capacity(16),
            rx_tx: None,
            variation,
            ttl,
            warmup,
            end,
            single_net_timers: Vec::new(),
            wall: Duration::ZERO,
            timeseries_bin: None,
            events: EventBus::default(),
            frame_scratch: Vec::new(),
            body_scratch: Vec::new(),
            airtimes: Default::default(),
            conns: Vec::new(),
            conn_out: ConnOut::default(),
            underflow_listeners: vec![Vec::new(); n],
            link_params: None,
            relayed_flows: Vec::new(),
            app_scratch: Vec::new(),
            tcp_trace: None,
            wired: crate::mac::wired::Wired::new(n),
            noise: Vec::new(),
            link_loss: None,
            scenario_events: Vec::new(),
            scheduler: Scheduler::default(),
            zmac_setup: None,
            sources: SourceControl::default(),
            xl_out: Vec::new(),
            gate: AnyGate::default(),
            forwarding: Forwarding::default(),
            purged: Vec::new(),
            optimizers: Default::default(),
            python_optimizers: Vec::new(),
            prefetch: n > PREFETCH_MIN_NODES,
        }
    }

    /// Turns the prefetching of nodes' cache lines on or off (by default on above
    /// [`PREFETCH_MIN_NODES`] nodes). A hint to the CPU, so no result depends on it; for the
    /// tests that show so.
    #[doc(hidden)]
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
    }

    #[inline]
    pub fn now(&self) -> SimTime {
        self.queue.now()
    }

    /// Runs every event up to `t` (capped at the scenario's end). Returns true at the end.
    pub fn run_until(&mut self, t: SimTime) -> bool {
        let started = Instant::now();
        let until = t.min(self.end);
        if self.optimizers.is_active() {
            // Events published between runs (the API's sets) and optimizers' starts.
            crate::tune::optimizer::end_of_instant(self);
        }
        // An event held outside a handler (a transmission started between runs) joins the heap.
        self.queue.flush_next();
        let prefetch = self.prefetch;
        while let Some(mut ev) = self.queue.pop_until(until) {
            if prefetch {
                if let Some(node) = self.queue.following().and_then(|e| self.event_node(e)) {
                    self.prefetch_node(node);
                }
            }
            loop {
                self.dispatch(ev);
                // An event the handler held with `schedule_next` runs at once when the queue
                // would pop it next, except that optimizers may have to run first.
                let optimizers = self.optimizers.is_active();
                match self.queue.take_next(until, !optimizers) {
                    Some(next) => ev = next,
                    None => break,
                }
            }
            // ECLAIR: optimizers run once the data path has finished the instant.
            if self.optimizers.is_active() && self.queue.peek_time() != Some(self.queue.now()) {
                crate::tune::optimizer::end_of_instant(self);
            }
        }
        self.queue.advance_to(until);
        self.wall += started.elapsed();
        until >= self.end
    }

    /// The node whose state the event `ev` runs at (`None` for flows' events, transport
    /// timers, scenario changes and the like): the one the loop prefetches for it.
    #[inline(always)]
    fn event_node(&self, ev: Event) -> Option<u32> {
        match ev {
            Event::TxEnd { node }
            | Event::MacTimer { node, .. }
            | Event::WeakWake { node, .. }
            | Event::NetTimer { node, .. } => Some(node),
            Event::SignalStart { tx, index } | Event::SignalEnd { tx, index } => self
                .txs
                .get(tx as usize)
                .and_then(|slot| slot.receivers.get(index as usize))
                .map(|r| r.to),
            _ => None,
        }
    }

    /// Prefetches `node`'s hot lines ([`Node::prefetch_hot`]); called only when `prefetch` is
    /// on: for the event the heap holds next while the one just popped runs, and where a
    /// handler schedules a signal's next receiver, which usually runs next.
    #[inline(always)]
    fn prefetch_node(&self, node: u32) {
        if let Some(n) = self.nodes.get(node as usize) {
            n.prefetch_hot();
        }
    }

    fn dispatch(&mut self, ev: Event) {
        let now = self.queue.now();
        match ev {
            Event::TxEnd { node } => {
                let n = &mut self.nodes[node as usize];
                n.phy.end_tx();
                n.mac.set_phy_busy(n.phy.busy(now, &self.cfg));
                n.mac
                    .on_tx_end(now, &mut self.queue, &mut n.rng_mac, &mut self.out);
                self.weak_wake(node);
                self.process_actions(node);
            }
            Event::SignalStart { tx, index } => {
                let slot = &self.txs[tx as usize];
                let info = slot.phy;
                let Receiver {
                    to: node, power_mw, ..
                } = slot.receivers[index as usize];
                if let Some(next) = slot.receivers.get(index as usize + 1) {
                    if self.prefetch {
                        self.prefetch_node(next.to);
                    }
                    self.queue.schedule_next(
                        info.start + next.delay,
                        Event::SignalStart {
                            tx,
                            index: index + 1,
                        },
                    );
                }
                let n = &mut self.nodes[node as usize];
                n.phy.signal_start(now, tx, power_mw, &info, &self.cfg);
                let busy = n.phy.busy(now, &self.cfg);
                n.mac.phy_changed(now, busy, &mut self.queue);
                // Only more power from now on, or a reception (not ambiguous: no wake-up).
                if n.wants_weak_wake(self.cfg.wake_every_node) {
                    if let Some((at, generation)) =
                        n.phy
                            .weak_wake_raised(now, now, &self.cfg, &mut self.turn_scratch)
                    {
                        n.arm_weak_wake(&mut self.queue, at, generation);
                    }
                }
            }
            Event::SignalEnd { tx, index } => {
                let mut repump = false;
                let slot = &self.txs[tx as usize];
                let info = slot.phy;
                let Receiver { to: node, link, .. } = slot.receivers[index as usize];
                let last = match slot.receivers.get(index as usize + 1) {
                    Some(next) => {
                        if self.prefetch {
                            self.prefetch_node(next.to);
                        }
                        self.queue.schedule_next(
                            info.start + next.delay + info.timing.total,
                            Event::SignalEnd {
                                tx,
                                index: index + 1,
                            },
                        );
                        false
                    }
                    None => true,
                };
                let n = &mut self.nodes[node as usize];
                let mut outcome = n.phy.signal_end(now, tx, &self.cfg, &mut n.rng_phy);
                n.mac.set_phy_busy(n.phy.busy(now, &self.cfg));
                if let Some(RxOutcome::Ok { .. }) = outcome {
                    // A lossy link (or a switched-off receiver) turns a good frame into a bad one.
                    let lost = match self.link_loss.as_mut() {
                        Some(ll) => ll.lost(info.src, link as usize, node),
                        None => false,
                    };
                    if lost || n.off {
                        n.net.rx_link_lost += lost as u64;
                        outcome = Some(RxOutcome::Error { tx });
                    }
                }
                if let (Some(RxOutcome::Ok { .. }), Some(d)) = (outcome, n.queueing.dest_mut()) {
                    // Every decoded data frame tells of its sender's queue (DiffQ header).
                    if let Some(p) = self.txs[tx as usize]
                        .packet
                        .filter(|p| !p.control.is_control())
                    {
                        d.overheard.record(Overheard {
                            neighbour: info.src,
                            dst: p.dst,
                            queue_len: p.queue_len as u32,
                            sent: info.start,
                            heard: now,
                        });
                        // A scheduler holding packets back (DPCLO, DiffQ's hold) reconsiders
                        // them on news of a neighbour's queue (after this reception is handled).
                        repump = self.scheduler.repumps_on_overheard();
                    }
                }
                // Fusion: the congestion bit of a decoded data frame, acted on once the MAC has
                // seen the frame.
                let gate_heard = match (outcome, self.gate.hears_bits()) {
                    (Some(RxOutcome::Ok { .. }), true) => self.txs[tx as usize]
                        .packet
                        .filter(|p| !p.control.is_control())
                        .map(|p| (info.src, self.txs[tx as usize].congestion_bit, p)),
                    _ => None,
                };
                match outcome {
                    Some(RxOutcome::Ok { .. }) => {
                        let slot = &self.txs[tx as usize];
                        let frame = slot.frame;
                        self.rx_tx = Some(tx);
                        if let Some(p) = n.pcap.as_mut() {
                            capture::record_frame(
                                p,
                                now,
                                &frame,
                                slot.packet.as_ref(),
                                capture::Side::Rx(n.phy.last_rx()),
                                &mut self.frame_scratch,
                                &mut self.body_scratch,
                            );
                        }
                        n.mac.on_rx(
                            now,
                            Some(&frame),
                            &mut self.queue,
                            &mut n.rng_mac,
                            &mut self.out,
                        );
                        self.process_actions(node);
                        self.rx_tx = None;
                    }
                    Some(RxOutcome::Error { .. }) => {
                        n.mac
                            .on_rx(now, None, &mut self.queue, &mut n.rng_mac, &mut self.out);
                    }
                    None => {
                        let busy = n.phy.busy(now, &self.cfg);
                        n.mac.phy_changed(now, busy, &mut self.queue);
                    }
                }
                self.weak_wake(node);
                if let Some((from, bit, p)) = gate_heard {
                    self.gate_hear(node, from, bit, &p);
                }
                if last {
                    self.tx_free.push(tx);
                }
                if repump {
                    self.repump(node);
                }
            }
            Event::MacTimer {
                node,
                kind,
                generation,
            } => {
                let n = &mut self.nodes[node as usize];
                if self.cfg.sensed_below_mw > self.cfg.weak_below_mw {
                    n.mac.set_sensed_edge(n.phy.sensed_edge(now));
                }
                let deaf = !self.cfg.wake_every_node && !n.mac.listens_to_carrier_sense();
                n.mac.on_timer(
                    now,
                    kind,
                    generation,
                    &mut self.queue,
                    &mut n.rng_mac,
                    &mut self.out,
                );
                if deaf && n.mac.listens_to_carrier_sense() {
                    // A Z-MAC attempt opened: carrier sense afresh, and its wake-ups from now
                    // on (`Mac::listens_to_carrier_sense`).
                    let busy = n.phy.busy(now, &self.cfg);
                    n.mac.phy_changed(now, busy, &mut self.queue);
                    self.weak_wake(node);
                }
                self.process_actions(node);
            }
            Event::AppSend { flow } => match self.flows[flow as usize].app {
                Some(_) => self.app_request(flow),
                None => self.cbr_send(flow),
            },
            Event::FlowStart { flow } => {
                let f = &mut self.flows[flow as usize];
                f.active = true;
                let src = f.src;
                match (f.transport.conn(), f.kind) {
                    (Some(c), _) => {
                        // A request-driven application's first request comes one interval in.
                        if let Some(app) = self.flows[flow as usize].app.as_mut() {
                            let at = now + app.next_delay();
                            if at < self.flows[flow as usize].stop {
                                self.queue.schedule(at, Event::AppSend { flow });
                            }
                        }
                        self.conn_open(c)
                    }
                    (None, SourceKind::Saturate) => self.refill(src),
                    (None, SourceKind::Cbr { .. }) => self.cbr_send(flow),
                }
            }
            Event::FlowStop { flow } => {
                if let Some(c) = self.flows[flow as usize].transport.conn() {
                    self.conns[c as usize].halt();
                }
            }
            Event::TransportTimer { conn, kind } => self.transport_timer(now, conn, kind),
            Event::WeakWake { node, generation } => self.weak_wake_fired(node, generation),
            Event::ScenarioChange { index } => self.scenario_change(index),
            Event::NetTimer { node, kind } => self.net_timer(node, kind),
            Event::Optimizer { slot, tag } => self.optimizers.fired(slot, tag),
            Event::BackpressureTick => self.backpressure_tick(),
            Event::Noise { source } => self.noise_switch(source),
            Event::WiredTxEnd { link } => self.wired_tx_end(link),
            Event::WiredArrive { link, packet } => {
                let to = self.wired.links[link as usize].to;
                self.net_receive(to, packet);
            }
            Event::HookRelease { packet } => {
                let p = *self.packets.get(packet);
                self.packets.release(packet);
                self.sink_up(now, &p);
            }
            Event::ZmacSetupCheck => self.zmac_setup_check(now),
        }
    }

    /// Ends an `"auto"` Z-MAC set-up at the next slot boundary once the slot assignment is
    /// complete, or at its bound (`mac::zmac::SetupWatch`).
    fn zmac_setup_check(&mut self, now: SimTime) {
        let Some(w) = self.zmac_setup else { return };
        if w.end.is_some() {
            return;
        }
        let nodes = &self.nodes;
        let done = crate::mac::drand::complete(nodes.len(), |i| {
            &nodes[i].mac.zmac().expect("zmac mode").colour
        });
        let next = now + w.slot;
        let end = if done {
            for n in self.nodes.iter_mut() {
                n.mac.zmac_end_setup(now, next, &mut self.queue);
            }
            next
        } else if next < w.max_end {
            self.queue.schedule(next, Event::ZmacSetupCheck);
            return;
        } else {
            w.max_end
        };
        self.zmac_setup = Some(crate::mac::zmac::SetupWatch {
            end: Some(end),
            completed: done,
            ..w
        });
        if w.start_tick {
            self.queue.schedule(end, Event::BackpressureTick);
        }
    }

    fn process_actions(&mut self, node: u32) {
        let mut i = 0;
        while i < self.out.len() {
            let a = self.out[i];
            i += 1;
            match a {
                MacAction::Transmit(frame) => self.transmit(node, frame),
                MacAction::Deliver { from, .. } => {
                    // The packet comes from the transmission just decoded (the sender's copy
                    // may be freed before this receiver's copy is needed).
                    let rx = self.rx_tx.and_then(|tx| self.txs[tx as usize].packet);
                    if let Some(p) = rx {
                        if p.control.is_control() {
                            self.control_receive(node, from, p);
                        } else if self.forwarding.takes(&p) {
                            self.forwarding_receive(node, from, p);
                        } else {
                            let h = self.packets.alloc(p);
                            self.net_receive(node, h);
                        }
                    }
                }
                MacAction::Dequeued {
                    packet,
                    delivered,
                    level,
                    underflow,
                    attempts,
                } => {
                    let now = self.now();
                    self.flow_attempts(packet, attempts);
                    if underflow && self.events.wants(TuneEventKind::MacUnderflow) {
                        self.events
                            .publish(now, node, TuneEventKind::MacUnderflow, level as f64);
                    }
                    if underflow && !self.underflow_listeners[node as usize].is_empty() {
                        self.conn_underflow(node);
                    }
                    if self.events.wants(TuneEventKind::MacQueueLen) {
                        let len = self.nodes[node as usize].mac.queue_len(level as usize);
                        self.events
                            .publish(now, node, TuneEventKind::MacQueueLen, len as f64);
                    }
                    if self.events.wants(TuneEventKind::MacTxOutcome) {
                        self.events.publish(
                            now,
                            node,
                            TuneEventKind::MacTxOutcome,
                            if delivered { 1.0 } else { 0.0 },
                        );
                    }
                    if !delivered {
                        self.flow_drop(packet, false);
                        let p = *self.packets.get(packet);
                        if p.control.is_control() && p.dst != BROADCAST {
                            // A unicast control packet the MAC gave up on (MORE's batch ACK).
                            let mut out = std::mem::take(&mut self.xl_out);
                            self.forwarding.unicast_failed(
                                node,
                                p.control,
                                p.seq,
                                &self.routing,
                                now,
                                &mut out,
                            );
                            self.run_actions(out);
                        }
                    }
                    self.packets.release(packet);
                    if let Some(d) = self.nodes[node as usize]
                        .queueing
                        .dest_mut()
                        .filter(|d| d.queues.is_at_mac(packet))
                    {
                        self.scheduler
                            .mac_done(node, delivered, now, &mut d.overheard);
                        if let Some(dst) = d.queues.mac_done(now) {
                            self.publish_queue_change(node, dst);
                        }
                        self.pump(node);
                    }
                    self.gate_dequeued(node, packet);
                    self.refill(node);
                }
            }
        }
        self.out.clear();
    }

    fn transmit(&mut self, node: u32, frame: Frame) {
        let now = self.now();
        let timing =
            self.airtimes
                .frame_coded(&self.cfg.timing, frame.bytes, frame.rate_mbps, frame.code);
        let congestion_bit = self.gate.congestion_bit(node);
        let phy = PhyTx {
            src: node,
            start: now,
            rate_mbps: frame.rate_mbps,
            timing,
        };
        // The slot first, and the packet copied once, straight into it (a 152-byte copy
        // through a local cost one more `memcpy` per transmission).
        let tx = match self.tx_free.pop() {
            Some(i) => {
                let slot = &mut self.txs[i as usize];
                slot.phy = phy;
                slot.frame = frame;
                slot.congestion_bit = congestion_bit;
                slot.receivers.clear();
                i
            }
            None => {
                self.txs.push(TxSlot {
                    phy,
                    frame,
                    packet: None,
                    congestion_bit,
                    receivers: Vec::new(),
                });
                (self.txs.len() - 1) as u32
            }
        };
        let slot = &mut self.txs[tx as usize];
        slot.packet = if frame.packet != crate::mac::frame::NO_PACKET {
            Some(*self.packets.get(frame.packet))
        } else {
            None
        };
        if let (Some(p), Some(d)) = (
            slot.packet.as_mut(),
            self.nodes[node as usize].queueing.dest(),
        ) {
            if !p.control.is_control() {
                // The DiffQ header carries the sender's queue length for the destination now,
                // as the scheduler counts it (`Schedule::header_queue_len`).
                let len = d.queues.len(p.dst);
                let len = self.scheduler.header_queue_len(len);
                p.queue_len = len.min(u16::MAX as u32) as u16;
            }
        }
        let n = &mut self.nodes[node as usize];
        if slot.packet.is_some_and(|p| p.control.is_control()) && !n.off {
            n.net.ctrl_airtime_ns += timing.total.ns();
        }
        n.phy.start_tx();
        n.mac.set_phy_busy(true);
        if let Some(p) = n.pcap.as_mut() {
            capture::record_frame(
                p,
                now,
                &frame,
                slot.packet.as_ref(),
                capture::Side::Tx {
                    power_offset_db: n.phy.tx_power_offset_db,
                },
                &mut self.frame_scratch,
                &mut self.body_scratch,
            );
        }
        let factor = n.phy.tx_power_factor();
        let var = self.variation;
        // A switched-off node's MAC runs down its queue, but nothing reaches the air.
        let links: &[Link] = if n.off {
            &[]
        } else {
            &self.links[node as usize]
        };
        let slot = &mut self.txs[tx as usize];
        let weak_below_mw = self.cfg.weak_below_mw;
        let sensed_below_mw = self.cfg.sensed_below_mw;
        let varies = var.shadowing_sigma_db > 0.0 || var.fading == Fading::Rayleigh;
        let mut cuts = LinkCuts::NONE;
        // (A switched-off sender's empty list is not cut: the cuts are of its whole list.)
        if !varies && !links.is_empty() {
            cuts = self.link_cuts[node as usize];
            if cuts.factor_bits != factor.to_bits() {
                cuts = LinkCuts::of(links, factor, weak_below_mw, sensed_below_mw);
                self.link_cuts[node as usize] = cuts;
            }
        }
        if cuts.cut {
            // The classes in order: a loop over each piece, with nothing to decide per link.
            // The work on different receivers commutes, and the weak piece arms its wake-ups in
            // list order, so this is the loop below exactly.
            let (sensed_from, weak_from) = (cuts.sensed_from as usize, cuts.weak_from as usize);
            for (i, link) in links[..sensed_from].iter().enumerate() {
                slot.receivers.push(Receiver {
                    to: link.to,
                    link: i as u32,
                    delay: link.delay,
                    power_mw: link.mean_rx_mw * factor,
                });
            }
            for (class, first, end) in [
                (LinkClass::Sensed, sensed_from, weak_from),
                (LinkClass::Weak, weak_from, links.len()),
            ] {
                for link in &links[first..end] {
                    let start = now + link.delay;
                    self.nodes[link.to as usize].arrive_in_bulk(
                        class,
                        now,
                        start,
                        start + timing.total,
                        link.mean_rx_mw * factor,
                        &self.cfg,
                        &mut self.turn_scratch,
                        &mut self.queue,
                    );
                }
            }
        } else {
            for (i, link) in links.iter().enumerate() {
                let to = &mut self.nodes[link.to as usize];
                let mut power = link.mean_rx_mw * factor;
                if varies {
                    let rng = &mut to.rng_fading;
                    if var.shadowing_sigma_db > 0.0 {
                        let z: f64 = StandardNormal.sample(rng);
                        power *= 10f64.powf(z * var.shadowing_sigma_db / 10.0);
                    }
                    if var.fading == Fading::Rayleigh {
                        let e: f64 = Exp1.sample(rng);
                        power *= e;
                    }
                }
                match LinkClass::of(power, link.delay, weak_below_mw, sensed_below_mw) {
                    class @ (LinkClass::Sensed | LinkClass::Weak) => {
                        let start = now + link.delay;
                        to.arrive_in_bulk(
                            class,
                            now,
                            start,
                            start + timing.total,
                            power,
                            &self.cfg,
                            &mut self.turn_scratch,
                            &mut self.queue,
                        );
                    }
                    LinkClass::Events => slot.receivers.push(Receiver {
                        to: link.to,
                        link: i as u32,
                        delay: link.delay,
                        power_mw: power,
                    }),
                }
            }
        }
        match slot.receivers.first() {
            Some(first) => {
                let (delay, to) = (first.delay, first.to);
                if self.prefetch {
                    self.prefetch_node(to);
                }
                // Often the next event: the first receiver hears it within a microsecond.
                self.queue
                    .schedule_next(now + delay, Event::SignalStart { tx, index: 0 });
                self.queue.schedule(
                    now + delay + timing.total,
                    Event::SignalEnd { tx, index: 0 },
                );
            }
            None => self.tx_free.push(tx),
        }
        self.queue
            .schedule(now + timing.total, Event::TxEnd { node });
    }

    /// Schedules `node`'s next weak-interference wake-up if its state now asks for one (weak
    /// signals may tip its carrier sense; `Phy::weak_wake`).
    #[inline]
    fn weak_wake(&mut self, node: u32) {
        let now = self.now();
        let n = &mut self.nodes[node as usize];
        if !n.wants_weak_wake(self.cfg.wake_every_node) {
            return;
        }
        if let Some((at, generation)) = n.phy.weak_wake(now, &self.cfg, &mut self.turn_scratch) {
            n.arm_weak_wake(&mut self.queue, at, generation);
        }
    }

    /// A weak-interference wake-up (`Event::WeakWake`): a weak signal arrived or ended at a node
    /// whose carrier sense it may tip; the MAC learns the medium state, as it would at that
    /// signal's own event.
    fn weak_wake_fired(&mut self, node: u32, generation: u32) {
        let now = self.now();
        let n = &mut self.nodes[node as usize];
        if n.phy.wake(now, generation) {
            let busy = n.phy.busy(now, &self.cfg);
            n.mac.phy_changed(now, busy, &mut self.queue);
            self.weak_wake(node);
        }
    }

    fn net_timer(&mut self, node: u32, kind: NetTimerKind) {
        let now = self.now();
        if kind == NetTimerKind::FusionRetry {
            return self.gate_retry(node);
        }
        if matches!(
            kind,
            NetTimerKind::DcloPrice | NetTimerKind::DcloMatch | NetTimerKind::DcloRetry
        ) {
            let mut out = std::mem::take(&mut self.xl_out);
            let view = node_view!(self, node, now);
            self.scheduler.timer(&view, kind, &mut out);
            return self.run_actions(out);
        }
        let mut out = std::mem::take(&mut self.xl_out);
        self.routing.timer(node, kind, now, &mut out);
        self.run_actions(out);
    }

    /// Next hop from `node` towards `dst` under the scenario's routing.
    #[inline]
    fn next_hop(&self, node: u32, dst: u32) -> u32 {
        self.routing.next_hop(node, dst)
    }

    /// The back-pressure tick (`Event::BackpressureTick`): the sources read their queues and
    /// set their rates (DPCLO, DCLO), the scheduler does its periodic work (DCLO: a matching
    /// interval starts), and nodes holding packets back reconsider them (DPCLO, DiffQ holding
    /// negative differentials: their neighbours' queues may have drained).
    fn backpressure_tick(&mut self) {
        let now = self.now();
        let (flows, nodes) = (&self.flows, &self.nodes);
        self.sources.tick(&|i| flows[i].emitting(now), &|i| {
            nodes[flows[i].src as usize]
                .queueing
                .queues()
                .len(flows[i].dst)
        });
        let mut out = std::mem::take(&mut self.xl_out);
        let tick = self.scheduler.tick(now, self.nodes.len(), &mut out);
        self.run_actions(out);
        let Some(tick) = tick else {
            return;
        };
        if tick.pump_all {
            for node in 0..self.nodes.len() as u32 {
                self.repump(node);
            }
        }
        if now + tick.interval < self.end {
            self.queue
                .schedule(now + tick.interval, Event::BackpressureTick);
        }
    }

    /// Carries out the components' side effects in order; `out` is kept for reuse.
    fn run_actions(&mut self, mut out: Vec<Action>) {
        for &a in &out {
            match a {
                Action::SendControl {
                    node,
                    seq,
                    bytes,
                    control,
                } => self.control_send(node, seq, bytes, control),
                Action::Timer { node, at, kind } if kind.is_single() => {
                    // One timer of the kind per node (DSDV's trigger, OLSR's relay wait): moved,
                    // never doubled.
                    if self.single_net_timers.is_empty() {
                        self.single_net_timers = vec![None; self.nodes.len()];
                    }
                    let id = match self.single_net_timers[node as usize] {
                        Some(id) => id,
                        None => {
                            let id = self.queue.new_timer();
                            self.single_net_timers[node as usize] = Some(id);
                            id
                        }
                    };
                    self.queue.set_timer(id, at, Event::NetTimer { node, kind });
                }
                Action::Timer { node, at, kind } => {
                    self.queue.schedule(at, Event::NetTimer { node, kind })
                }
                Action::Relay {
                    node,
                    seq,
                    bytes,
                    control,
                } => {
                    self.nodes[node as usize].net.ctrl_relayed += 1;
                    self.control_send(node, seq, bytes, control);
                }
                Action::Pump { node } => self.repump(node),
                Action::Originate { node, flow, count } => {
                    for _ in 0..count {
                        self.forwarding_originate(node, flow);
                    }
                }
                Action::Purge { node, flow } => self.purge(node, flow),
                Action::Deliver {
                    flow,
                    first_seq,
                    count,
                    created,
                } => self.deliver(flow, first_seq, count, created),
                Action::Unicast {
                    node,
                    next,
                    seq,
                    bytes,
                    control,
                    relayed,
                } => {
                    self.nodes[node as usize].net.ctrl_relayed += relayed as u64;
                    self.control_packet(node, next, seq, bytes, control);
                }
                Action::RoutesUpdated { node, changes } => {
                    if changes > 0 && self.events.wants(TuneEventKind::RouteChange) {
                        let now = self.now();
                        self.events
                            .publish(now, node, TuneEventKind::RouteChange, changes as f64);
                    }
                    self.refill(node);
                }
            }
        }
        out.clear();
        self.xl_out = out;
    }

    /// Pumps `node` if its MAC is free and packets wait in its per-destination queues.
    fn repump(&mut self, node: u32) {
        let Some(d) = self.nodes[node as usize].queueing.dest() else {
            return;
        };
        let q = &d.queues;
        if !q.mac_busy() && q.waiting().next().is_some() {
            self.pump(node);
        }
    }

    fn publish_queue_change(&mut self, node: u32, dst: u32) {
        if self.events.wants(TuneEventKind::QueueChange) {
            let now = self.now();
            self.events
                .publish(now, node, TuneEventKind::QueueChange, dst as f64);
        }
    }

    /// Broadcasts a control packet of `bytes` (network layer) from `node` at its highest MAC
    /// priority level.
    fn control_send(&mut self, node: u32, seq: u64, bytes: u32, control: Control) {
        self.control_packet(node, BROADCAST, seq, bytes, control);
    }

    /// Hands the MAC of `node` a control packet of `bytes` (network layer) for `next`
    /// ([`BROADCAST`], or a neighbour: then with link ACKs and retries) at its highest priority
    /// level, ahead of queued data.
    fn control_packet(&mut self, node: u32, next: u32, seq: u64, bytes: u32, control: Control) {
        let now = self.now();
        let n = &mut self.nodes[node as usize];
        if n.off {
            n.net.drops_node_off += 1;
            return;
        }
        let level = n.mac.level_count() - 1;
        let h = self.packets.alloc(Packet {
            flow: u32::MAX,
            seq,
            src: node,
            dst: next,
            payload_bytes: 0,
            header_bytes: bytes,
            created: now,
            ttl: 1,
            level: level as u8,
            ecn: crate::transport::ECN_NOT_ECT,
            transport: Header::Udp,
            control,
            queue_len: 0,
        });
        let item = QueuedPacket {
            packet: h,
            bytes,
            next_hop: next,
            flow: crate::mac::NO_FLOW,
        };
        if n.mac
            .enqueue_priority(now, level, item, &mut self.queue, &mut n.rng_mac)
        {
            n.net.ctrl_tx += 1;
            n.net.ctrl_tx_bytes += bytes as u64;
        } else {
            n.net.ctrl_drops_queue += 1;
            self.packets.release(h);
        }
    }

    /// A control packet from `from` arrived at `node`.
    fn control_receive(&mut self, node: u32, from: u32, p: Packet) {
        let now = self.now();
        self.nodes[node as usize].net.ctrl_rx += 1;
        if let Control::MoreAck { .. } = p.control {
            let mut out = std::mem::take(&mut self.xl_out);
            self.forwarding
                .control_received(node, from, p.control, &self.routing, now, &mut out);
            return self.run_actions(out);
        }
        if let Control::DcloPrice { .. } | Control::DcloMatch { .. } = p.control {
            let mut out = std::mem::take(&mut self.xl_out);
            self.scheduler
                .control_received(node, from, p.control, now, &mut out);
            return self.run_actions(out);
        }
        let mut out = std::mem::take(&mut self.xl_out);
        self.routing
            .control_received(node, from, p.control, now, &mut out);
        self.run_actions(out);
    }

    /// A packet of the forwarding component's (MORE's coded packet) from `from` reached `node`.
    fn forwarding_receive(&mut self, node: u32, from: u32, p: Packet) {
        let now = self.now();
        let mut out = std::mem::take(&mut self.xl_out);
        self.forwarding
            .receive(node, from, &p, &self.routing, now, &mut out);
        self.run_actions(out);
    }

    /// `node` queues one more packet of `flow` that the forwarding component makes (a MORE
    /// forwarder's coded packet).
    fn forwarding_originate(&mut self, node: u32, flow: u32) {
        let (now, ttl) = (self.now(), self.ttl);
        let Some(p) = self
            .forwarding
            .originate(&self.flows[flow as usize], node, now, ttl)
        else {
            return;
        };
        let h = self.packets.alloc(p);
        self.net_send(node, h);
    }

    /// `node` drops the packets of `flow` waiting in its queue for the flow's destination.
    fn purge(&mut self, node: u32, flow: u32) {
        let now = self.now();
        let dst = self.flows[flow as usize].dst;
        let Some(d) = self.nodes[node as usize].queueing.dest_mut() else {
            return;
        };
        let packets = &self.packets;
        let mut removed = std::mem::take(&mut self.purged);
        let changed = d
            .queues
            .remove_if(now, dst, |h| packets.get(h).flow == flow, &mut removed);
        for h in removed.drain(..) {
            self.packets.release(h);
        }
        self.purged = removed;
        if changed {
            self.publish_queue_change(node, dst);
        }
    }

    /// `natives` packets of `flow` entered the network at its source now (one datagram, or a
    /// MORE batch): counted as sent when now is within the flow's measured window.
    fn count_sent(&mut self, flow: u32, natives: u32) {
        let now = self.now();
        let f = &self.flows[flow as usize];
        let (a, b) = crate::metrics::window(f.start, f.stop, self.warmup, self.end);
        if now >= a && now < b {
            self.flow_stats[flow as usize].sent += natives as u64;
        }
    }

    /// `count` packets of `flow` numbered from `first_seq`, made at `created`, reach its
    /// application (a decoded MORE batch): counted as a sink counts datagrams.
    fn deliver(&mut self, flow: u32, first_seq: u64, count: u32, created: SimTime) {
        let now = self.now();
        let f = &self.flows[flow as usize];
        let (a, b) = crate::metrics::window(f.start, f.stop, self.warmup, self.end);
        let (payload, dst) = (f.payload_bytes as u64, f.dst);
        self.nodes[dst as usize].net.delivered += count as u64;
        let bin = self.timeseries_bin;
        let st = &mut self.flow_stats[flow as usize];
        for seq in first_seq..first_seq + count as u64 {
            if !st.first_arrival(seq) {
                continue;
            }
            if let Some(bin) = bin {
                let i = (now.ns() / bin.ns()) as usize;
                if st.bin_bytes.len() <= i {
                    st.bin_bytes.resize(i + 1, 0);
                }
                st.bin_bytes[i] += payload;
            }
            if now >= a && now < b {
                st.received += 1;
                st.rx_payload_bytes += payload;
                st.delays.record((now - created).ns());
            }
            if created >= a && created < b {
                st.delivered_of_sent += 1;
            }
        }
    }

    /// Hands packet `h` to wired link `link` (a full queue drops it).
    fn wired_send(&mut self, link: u32, h: u32) {
        use crate::mac::wired::Offer;
        let now = self.now();
        let bytes = self.packets.get(h).bytes();
        match self.wired.offer(link, h, bytes, now) {
            Offer::Sending { tx_end } => self.queue.schedule(tx_end, Event::WiredTxEnd { link }),
            Offer::Queued => {}
            Offer::Dropped => {
                self.flow_drop(h, true);
                self.packets.release(h);
            }
        }
    }

    /// Wired link `link` serialized its head packet: it arrives after the propagation delay
    /// (unless the link loses it), and the next one starts.
    fn wired_tx_end(&mut self, link: u32) {
        let now = self.now();
        let (h, arrives, next) = self.wired.tx_end(link, now);
        if arrives {
            let at = now + self.wired.links[link as usize].delay;
            self.queue
                .schedule(at, Event::WiredArrive { link, packet: h });
        } else {
            self.flow_drop(h, false);
            self.packets.release(h);
        }
        if let Some(t) = next {
            self.queue.schedule(t, Event::WiredTxEnd { link });
        }
    }

    /// Noise source `source` switches on or off: every node it reaches sees the change in its
    /// SINR from now (and in carrier sense if the source asks), and the next switch is due.
    fn noise_switch(&mut self, source: u32) {
        let now = self.now();
        let src = &mut self.noise[source as usize];
        let next = src.switch(now);
        let src = &self.noise[source as usize];
        for &(node, mw) in &src.targets {
            let n = &mut self.nodes[node as usize];
            n.phy
                .switch_injected_noise(now, mw, src.carrier_sense, src.on, &self.cfg);
            if src.carrier_sense {
                let busy = n.phy.busy(now, &self.cfg);
                n.mac.phy_changed(now, busy, &mut self.queue);
                if n.wants_weak_wake(self.cfg.wake_every_node) {
                    if let Some((at, generation)) =
                        n.phy.weak_wake(now, &self.cfg, &mut self.turn_scratch)
                    {
                        n.arm_weak_wake(&mut self.queue, at, generation);
                    }
                }
            }
            if self.events.wants(TuneEventKind::PhyNoise) {
                let mw = n.phy.injected_noise_mw();
                self.events.publish(now, node, TuneEventKind::PhyNoise, mw);
            }
        }
        if let Some(t) = next.filter(|&t| t < self.end) {
            self.queue.schedule(t, Event::Noise { source });
        }
    }

    fn scenario_change(&mut self, index: u32) {
        match self.scenario_events[index as usize] {
            ScenarioChange::NodeOff(node) => self.nodes[node as usize].off = true,
            ScenarioChange::NodeOn(node) => {
                self.nodes[node as usize].off = false;
                self.refill(node);
            }
            ScenarioChange::LinkLoss { from, to, loss } => {
                if let Some(ll) = self.link_loss.as_mut() {
                    ll.set(from, to, loss);
                }
            }
        }
    }

    /// Hands a packet originated or forwarded at `node` to the MAC towards its next hop.
    fn net_send(&mut self, node: u32, h: u32) {
        let now = self.now();
        let p = *self.packets.get(h);
        let next = self.next_hop(node, p.dst);
        let n = &mut self.nodes[node as usize];
        if n.off {
            n.net.drops_node_off += 1;
            self.packets.release(h);
            return;
        }
        if n.queueing.dest().is_some() && self.scheduler.queues(&p) {
            self.dest_enqueue(node, h);
            return;
        }
        if self.gate.holds_queue() && next != UNREACHABLE {
            self.gate_enqueue(node, h);
            return;
        }
        if next == UNREACHABLE {
            n.net.drops_no_route += 1;
            self.packets.release(h);
            return;
        }
        if let Some(link) = self.wired.link(node, next) {
            return self.wired_send(link, h);
        }
        let level = (p.level as usize).min(n.mac.level_count() - 1);
        if p.ecn == ECN_ECT0
            && n.mac.queue_len(level) as f64
                > ECN_MARK_FRACTION * n.mac.params.queue_capacity as f64
        {
            self.packets.get_mut(h).ecn = ECN_CE;
        }
        let item = QueuedPacket {
            packet: h,
            bytes: p.bytes(),
            next_hop: next,
            flow: p.flow,
        };
        let queued = n
            .mac
            .enqueue(now, level, item, &mut self.queue, &mut n.rng_mac);
        if queued && self.events.wants(TuneEventKind::MacQueueLen) {
            let len = n.mac.queue_len(level);
            self.events
                .publish(now, node, TuneEventKind::MacQueueLen, len as f64);
        }
        if !queued {
            self.count_queue_drop(node, level, &p);
            self.packets.release(h);
        }
    }

    /// Queues a data packet in `node`'s per-destination queue (the source adds the DiffQ
    /// header), then feeds the MAC.
    fn dest_enqueue(&mut self, node: u32, h: u32) {
        let now = self.now();
        let p = self.packets.get_mut(h);
        if p.src == node {
            p.header_bytes += HEADER_BYTES;
        }
        let dst = p.dst;
        if !self.nodes[node as usize]
            .queueing
            .queues_mut()
            .push(now, dst, h)
        {
            let transit = self.packets.get(h).src != node;
            let net = &mut self.nodes[node as usize].net;
            net.drops_dest_queue += 1;
            if transit {
                net.drops_dest_queue_transit += 1;
            }
            self.flow_drop(h, true);
            self.packets.release(h);
            if self.events.wants(TuneEventKind::QueueOverflow) {
                self.events
                    .publish(now, node, TuneEventKind::QueueOverflow, dst as f64);
            }
            return;
        }
        self.publish_queue_change(node, dst);
        self.pump(node);
    }

    /// Hands the MAC `node`'s next per-destination packet if it has none; the next hop is
    /// chosen now.
    fn pump(&mut self, node: u32) {
        let now = self.now();
        loop {
            let view = node_view!(self, node, now);
            let (choice, level, next_override) = match self.scheduler.choose(&view) {
                Choice::RoundRobin(level) => (None, level, None),
                Choice::Serve { dst, level, next } => (Some(dst), Some(level), next),
                Choice::Hold => break,
            };
            let taken = match choice {
                Some(d) => self.nodes[node as usize]
                    .queueing
                    .queues_mut()
                    .take_for_mac(d),
                None => self.nodes[node as usize]
                    .queueing
                    .queues_mut()
                    .next_for_mac(),
            };
            let Some((h, dst)) = taken else {
                break;
            };
            if let Some(l) = level {
                self.packets.get_mut(h).level = l;
            }
            let prepared =
                self.forwarding
                    .prepare(node, self.packets.get_mut(h), &self.routing, now);
            if prepared == Prepared::Drop {
                self.packets.release(h);
                if let Some(dst) = self.nodes[node as usize]
                    .queueing
                    .queues_mut()
                    .mac_done(now)
                {
                    self.publish_queue_change(node, dst);
                }
                continue;
            }
            if let Some(l) = level {
                self.scheduler.level_used(l);
            }
            let next = match prepared {
                Prepared::Broadcast { natives } => {
                    if natives > 0 {
                        let flow = self.packets.get(h).flow;
                        self.count_sent(flow, natives);
                    }
                    BROADCAST
                }
                _ => next_override.unwrap_or_else(|| self.next_hop(node, dst)),
            };
            let p = *self.packets.get(h);
            let n = &mut self.nodes[node as usize];
            // (BROADCAST and UNREACHABLE are both u32::MAX.)
            if (next == UNREACHABLE && prepared == Prepared::Routed) || n.off {
                n.net.count_unsendable(n.off);
                self.packets.release(h);
                if let Some(dst) = n.queueing.queues_mut().mac_done(now) {
                    self.publish_queue_change(node, dst);
                }
                continue;
            }
            if n.mac_enqueue(now, h, &p, next, &mut self.queue) {
                self.scheduler.handed_to_mac(node, next, dst);
                return;
            }
            self.flow_drop(h, true);
            self.packets.release(h);
            if let Some(dst) = self.nodes[node as usize]
                .queueing
                .queues_mut()
                .mac_done(now)
            {
                self.publish_queue_change(node, dst);
            }
        }
    }

    /// Whether a source at `node` may queue one more packet for `dst` at `level`.
    fn source_has_room(&self, node: u32, level: usize, dst: u32, bytes: u32) -> bool {
        if let Some(room) = self.gate.source_room(node) {
            return room;
        }
        let n = &self.nodes[node as usize];
        match n.queueing.dest() {
            None => n.mac.queue_has_room(level, bytes),
            Some(d) => d.queues.has_room(dst),
        }
    }

    /// A packet arrived at `node` from the MAC.
    fn net_receive(&mut self, node: u32, h: u32) {
        let now = self.now();
        let p = self.packets.get_mut(h);
        if p.dst == node {
            let p = *p;
            self.packets.release(h);
            self.nodes[node as usize].net.delivered += 1;
            self.sink(now, &p);
            return;
        }
        p.ttl = p.ttl.saturating_sub(1);
        if p.ttl == 0 {
            self.nodes[node as usize].net.drops_ttl += 1;
            self.packets.release(h);
            return;
        }
        self.nodes[node as usize].net.forwarded += 1;
        if self.nodes[node as usize].flavor.is_some() {
            self.flavor_observe(node, h);
        }
        if self.link_params.is_some() {
            self.note_relayed(node, h);
        }
        if self.gate.holds_queue() {
            let src = self.packets.get(h).src;
            self.gate.forwarded(node, src, now);
            // A token earned may let this node's own sources go on.
            self.net_send(node, h);
            self.gate_drain_cbr(node);
            self.refill(node);
            return;
        }
        self.net_send(node, h);
    }

    /// Counts packet `h`'s loss against its flow: to a full queue, or else to the MAC's retry
    /// limit. Control packets belong to no flow.
    fn flow_drop(&mut self, h: u32, queue: bool) {
        Self::flow_drop_of(&mut self.flow_stats, self.packets.get(h), queue);
    }

    fn flow_drop_of(flow_stats: &mut [FlowStats], p: &Packet, queue: bool) {
        if p.control.is_control() {
            return;
        }
        if let Some(st) = flow_stats.get_mut(p.flow as usize) {
            if queue {
                st.queue_drops += 1;
            } else {
                st.link_drops += 1;
            }
        }
    }

    /// Counts the link-layer attempts a packet of a flow took to leave a MAC queue (every
    /// hop, either direction, delivered or dropped).
    fn flow_attempts(&mut self, h: u32, attempts: u32) {
        let p = self.packets.get(h);
        if p.control.is_control() {
            return;
        }
        if let Some(st) = self.flow_stats.get_mut(p.flow as usize) {
            st.mac_attempts += attempts as u64;
            st.mac_frames += 1;
        }
    }

    /// Counts the hops a data packet arriving at its flow's destination travelled: TTL falls at
    /// each relay, so the source's hop plus one per relay.
    fn count_hops(&mut self, p: &Packet) {
        if p.dst == self.flows[p.flow as usize].dst && p.payload_bytes > 0 {
            let st = &mut self.flow_stats[p.flow as usize];
            st.hops_sum += self.ttl.saturating_sub(p.ttl) as u64 + 1;
            st.hops_n += 1;
        }
    }

    fn sink(&mut self, now: SimTime, p: &Packet) {
        if let Header::Tcp(h) = p.transport {
            self.count_hops(p);
            if p.dst == self.flows[p.flow as usize].dst && h.len > 0 {
                if self.events.wants(TuneEventKind::TcpSegmentRx) {
                    self.events.publish_flow(
                        now,
                        p.dst,
                        p.flow,
                        TuneEventKind::TcpSegmentRx,
                        h.len as f64,
                    );
                }
                if self.optimizers.per_packet {
                    let delay = crate::tune::optimizer::per_packet(self, p.dst, p.flow, h.len);
                    if delay > SimTime::ZERO {
                        // The hook's optimizers hold the packet in the receive path for their
                        // processing time; it reaches its transport when they are done.
                        let h = self.packets.alloc(*p);
                        self.queue
                            .schedule(now + delay, Event::HookRelease { packet: h });
                        return;
                    }
                }
            }
        }
        self.sink_up(now, p);
    }

    /// The second half of [`Self::sink`]: packet `p` goes up to its connection or, a datagram,
    /// is counted at its destination.
    fn sink_up(&mut self, now: SimTime, p: &Packet) {
        if let Some(c) = self.flows[p.flow as usize].transport.conn() {
            if p.transport.is_clap_data() {
                self.count_hops(p);
            }
            // The connection takes its packets; datagram data still counts at the sink.
            if !self.conn_packet(c, p) {
                return;
            }
        }
        let f = &self.flows[p.flow as usize];
        let (a, b) = crate::metrics::window(f.start, f.stop, self.warmup, self.end);
        let st = &mut self.flow_stats[p.flow as usize];
        if !st.first_arrival(p.seq) {
            return;
        }
        self.count_hops(p);
        let st = &mut self.flow_stats[p.flow as usize];
        if let Some(bin) = self.timeseries_bin {
            let i = (now.ns() / bin.ns()) as usize;
            if st.bin_bytes.len() <= i {
                st.bin_bytes.resize(i + 1, 0);
            }
            st.bin_bytes[i] += p.payload_bytes as u64;
        }
        if now >= a && now < b {
            st.received += 1;
            st.rx_payload_bytes += p.payload_bytes as u64;
            st.delays.record((now - p.created).ns());
        }
        if p.created >= a && p.created < b {
            st.delivered_of_sent += 1;
        }
    }

    fn originate(&mut self, flow: u32) {
        let now = self.now();
        let ttl = self.ttl;
        let f = &self.flows[flow as usize];
        let src = f.src;
        // A flow whose packets the forwarding component makes (MORE: coded packets, counted as
        // sent per batch when the batch starts).
        if let Some(p) = self.forwarding.originate(f, src, now, ttl) {
            self.nodes[src as usize].net.originated += 1;
            let h = self.packets.alloc(p);
            return self.net_send(src, h);
        }
        let f = &mut self.flows[flow as usize];
        let seq = f.next_seq;
        f.next_seq += 1;
        let p = udp_datagram(flow, seq, f.src, f.dst, f.payload_bytes, now, ttl, f.level);
        self.send_from_source(flow, p);
    }

    /// Hands data packet `p` of `flow` to the network at the flow's source, counting it as sent
    /// when it leaves within the flow's measured window.
    fn send_from_source(&mut self, flow: u32, p: Packet) {
        self.count_sent(flow, 1);
        let src = self.flows[flow as usize].src;
        self.nodes[src as usize].net.originated += 1;
        if self.dropped_at_full_source(src, &p) {
            return;
        }
        let h = self.packets.alloc(p);
        self.net_send(src, h);
    }

    /// [`World::net_send`]'s drop at a full MAC queue for a packet `node` originates, without
    /// the packet put in the arena and taken out again: true, with the drop counted as
    /// `net_send` counts it, where `net_send` would hand the packet to a plain (FIFO, no gate,
    /// no wired link) MAC queue with no room; false, with nothing done, otherwise. A
    /// constant-bit-rate source offering more than its first hop carries spends most of its
    /// sends here (666,742 of `scenarios/mesh-7x7.toml`'s 708,016). Skipping the arena changes
    /// no handle: the slot the allocation would have taken is the one the release would have
    /// freed for the next.
    fn dropped_at_full_source(&mut self, node: u32, p: &Packet) -> bool {
        let n = &self.nodes[node as usize];
        if n.off || n.queueing.dest().is_some() || self.gate.holds_queue() || !self.wired.is_empty()
        {
            return false;
        }
        let level = (p.level as usize).min(n.mac.level_count() - 1);
        if n.mac.queue_has_room(level, p.bytes()) || self.next_hop(node, p.dst) == UNREACHABLE {
            return false;
        }
        self.nodes[node as usize].mac.stats.drops_queue += 1;
        self.count_queue_drop(node, level, p);
        true
    }

    /// A data packet `node`'s MAC queue at `level` refused: the flow's count and the tuning
    /// event.
    fn count_queue_drop(&mut self, node: u32, level: usize, p: &Packet) {
        Self::flow_drop_of(&mut self.flow_stats, p, true);
        if self.events.wants(TuneEventKind::QueueOverflow) {
            self.events
                .publish(self.now(), node, TuneEventKind::QueueOverflow, level as f64);
        }
    }

    fn cbr_send(&mut self, flow: u32) {
        let now = self.now();
        let f = &self.flows[flow as usize];
        let SourceKind::Cbr { interval } = f.kind else {
            return;
        };
        if !f.emitting(now) {
            return;
        }
        let src = f.src;
        match self.gate.cbr_offer(src, flow, now) {
            CbrOffer::Send => self.originate(flow),
            // The packet waits for a token behind the flows' earlier ones.
            CbrOffer::Waiting => self.gate_drain_cbr(src),
            CbrOffer::Open => {
                if self.sources.counts_refusals() {
                    let f = &self.flows[flow as usize];
                    let room = self.nodes[f.src as usize].queueing.queues().has_room(f.dst);
                    self.sources.offered(flow, room);
                }
                self.originate(flow)
            }
        }
        // A controlled source's rate follows its own destination queue (DiffQ §4.1, DPCLO
        // §IV-C, DCLO eq. 2).
        let f = &self.flows[flow as usize];
        let own = if self.sources.reads_own_queue() {
            self.nodes[f.src as usize].queueing.queues().len(f.dst)
        } else {
            0
        };
        let interval = self
            .sources
            .next_interval(flow, own, f.payload_bytes)
            .unwrap_or(interval);
        let next = now + interval;
        if next < self.flows[flow as usize].stop {
            self.queue.schedule(next, Event::AppSend { flow });
        }
    }

    /// Tops up the MAC queue of `node` from its saturating sources, one packet per flow in
    /// turn, resuming after the flow served last so that flows sharing a source share its queue.
    fn refill(&mut self, node: u32) {
        let count = self.saturating[node as usize].len();
        if count == 0 {
            return;
        }
        let now = self.now();
        let mut idle_turns = 0;
        while idle_turns < count {
            let k = self.saturating_next[node as usize] % count;
            self.saturating_next[node as usize] = (k + 1) % count;
            let flow = self.saturating[node as usize][k];
            let f = &self.flows[flow as usize];
            let level = (f.level as usize).min(self.nodes[node as usize].mac.level_count() - 1);
            // A source without a route (dynamic routing still converging) or switched off
            // waits: it is refilled again when routes change.
            if f.emitting(now)
                && self.source_has_room(
                    node,
                    level,
                    f.dst,
                    f.payload_bytes + crate::net::UDP_HEADER_BYTES + crate::net::IPV4_HEADER_BYTES,
                )
                && (!self.routing.is_dynamic()
                    || (!self.nodes[node as usize].off
                        && self.next_hop(node, f.dst) != UNREACHABLE))
                && self.forwarding.source_may_send(flow, &self.routing, now)
                && self.gate_source_may_send(node)
            {
                self.originate(flow);
                idle_turns = 0;
            } else {
                idle_turns += 1;
            }
        }
    }
}
