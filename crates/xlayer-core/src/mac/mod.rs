//! The MAC: IEEE 802.11 DCF and EDCA with N priority levels.
//!
//! Depends on `sim`, `phy` (timing) and its own frames. DCF is EDCA with one level of AIFSN 2
//! (DIFS = SIFS + 2 slots). Each level has its own drop-tail queue, contention window, AIFSN and
//! backoff counter (802.11-2016 §10.22.2). Backoff counts idle slots after AIFS (or EIFS after an
//! erroneous frame) and freezes while the medium is busy — physically (PHY carrier sense), by the
//! NAV, or by a frame exchange of our own. When several levels of one node reach zero together
//! the highest wins and the others behave as after a collision (internal collision resolution).
//! Unicast data is acknowledged; an unanswered frame doubles the contention window and is
//! retried until the short (or, after RTS, long) retry limit, then dropped. RTS/CTS with NAV is
//! optional. Broadcast frames are sent once at the basic rate with no ACK. Receivers filter
//! duplicates by (source, sequence number, retry bit).
//!
//! Response timeouts follow 802.11-2016 §10.3.2.9 (ACK) and §10.3.2.7 (CTS), as ns-3 3.44's
//! `FrameExchangeManager` does: the timeout is `aSIFSTime + aSlotTime + aRxPHYStartDelay` after
//! the frame's end (plus the round trip to the farthest neighbour, so a long link still gets its
//! response). If the medium is busy when it expires — a response has begun arriving
//! (PHY-RXSTART; the MAC sees carrier sense, which stands for it) — the sender waits for it, up
//! to `SIFS + response airtime + slot + round trip`;
//! otherwise the attempt failed and the backoff starts from the timeout. A sender that collided
//! thus resumes before the bystanders, which defer EIFS from the collided frames' end. The
//! `ns2-2mbps` radio keeps ns-2 `Mac/802_11`'s timeout, `SIFS + response airtime + slot + round
//! trip` in one piece.
//!
//! Sequence numbers count per priority level (802.11e numbers each TID apart) and are fixed at a
//! packet's first attempt; the Retry bit is set only once its DATA frame has been on the air, and
//! receivers filter duplicates per (transmitter, level).
//!
//! The MAC never calls upward: what the network layer must learn is pushed into an output list
//! of [`MacAction`]s that the node assembly (`crate::world`) carries out.

pub mod drand;
pub mod tuning;
pub mod wired;
pub mod zmac;

use std::collections::VecDeque;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::phy::fec::CodeRate;
use crate::phy::PhyTiming;
use crate::sim::rng::Stream;
use crate::sim::{Event, EventQueue, SimTime, TimerId, TimerKind};
pub use crate::wire::frame;
pub use crate::wire::frame::{Frame, FrameKind};
pub use crate::wire::BROADCAST;
use frame::{ACK_BYTES, CTS_BYTES, DATA_OVERHEAD_BYTES, LLC_SNAP_BYTES};

/// A packet waiting in a MAC queue.
/// One EDCA priority level (index 0 is the lowest priority): its arbitration inter-frame
/// space number and contention window bounds (802.11-2016 §10.22.2). Scenarios give it as
/// `mac.levels` (`crate::scenario`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdcaLevel {
    pub aifsn: u32,
    pub cw_min: u32,
    pub cw_max: u32,
}

#[derive(Debug, Clone, Copy)]
pub struct QueuedPacket {
    pub packet: u32,
    /// Network-layer packet length in bytes (IP header included).
    pub bytes: u32,
    pub next_hop: u32,
    /// The flow the packet belongs to ([`NO_FLOW`] for control packets): a flow may have its
    /// own retry limit at this node ([`Mac::set_flow_retry_limit`]).
    pub flow: u32,
}

/// [`QueuedPacket::flow`] of packets that belong to no flow (routing and probe packets).
pub const NO_FLOW: u32 = u32::MAX;

/// What the MAC asks the rest of the node to do.
#[derive(Debug, Clone, Copy)]
pub enum MacAction {
    /// Put this frame on the air now.
    Transmit(Frame),
    /// A data frame for this node (or broadcast) arrived: hand its packet up.
    Deliver { packet: u32, from: u32 },
    /// A packet left the queue: acknowledged (`delivered`) or dropped at the retry limit.
    /// `underflow`: it was delivered and every queue of the MAC is now empty. `attempts`:
    /// how many times it was tried (failures counted against the retry limits, plus the
    /// success).
    Dequeued {
        packet: u32,
        level: u8,
        delivered: bool,
        underflow: bool,
        attempts: u32,
    },
}

/// Settings shared by all nodes (tunable per node through `crate::tune`).
#[derive(Debug, Clone)]
pub struct MacParams {
    pub timing: PhyTiming,
    pub data_rate_mbps: f64,
    pub basic_rate_mbps: f64,
    /// RTS/CTS precedes unicast frames longer than this many bytes (`None`: never).
    pub rts_threshold: Option<u32>,
    pub short_retry_limit: u32,
    pub long_retry_limit: u32,
    pub queue_capacity: u32,
    /// A level's queue also holds at most this many bytes of packets (`None`: packets only).
    pub queue_bytes: Option<u32>,
    pub levels: Vec<EdcaLevel>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Contending (or idle).
    Idle,
    /// Our frame is on the air; `after` says what follows its end.
    Transmitting(After),
    WaitAck,
    WaitCts,
    /// A response (ACK, CTS, or DATA after CTS) goes out when SIFS expires.
    SifsPending,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    WaitAck,
    WaitCts,
    /// Broadcast: done at the end of transmission.
    BroadcastDone,
    /// A response frame (ACK/CTS): back to contention.
    Nothing,
    /// Z-MAC: our ZMAC+ beacon; the Z-MAC backoff follows (`zmac`).
    ZmacBeacon,
    /// Z-MAC: our STATE or ECN broadcast.
    ZmacControl,
}

#[derive(Debug, Clone, Copy)]
struct Commit {
    /// When the medium had become idle.
    t0: SimTime,
    /// When it turned busy again.
    busy_at: SimTime,
}

#[derive(Debug)]
struct Level {
    params: EdcaLevel,
    queue: VecDeque<QueuedPacket>,
    cw: u32,
    /// Remaining backoff slots; `None` when no backoff is pending.
    backoff: Option<u32>,
    short_retries: u32,
    long_retries: u32,
    /// Next sequence number of this level (802.11e numbers each TID apart).
    next_seq: u16,
    /// Sequence number of the head packet, fixed at its first attempt.
    head_seq: Option<u16>,
    /// Whether the head packet's DATA frame has been on the air (its retries carry Retry = 1).
    head_on_air: bool,
    /// When the head packet became the head (its service began).
    head_since: SimTime,
    /// Bytes of the packets in `queue`.
    bytes: u64,
}

/// A MAC's priority levels: DCF's one inline in the [`Mac`], where the carrier sense changes
/// that read its backoff find it in the MAC's own cache lines (at 10,000 nodes a heap block of
/// each MAC's own was one more miss per event); EDCA's several in a vector.
#[derive(Debug)]
enum Levels {
    One([Level; 1]),
    Many(Vec<Level>),
}

impl std::ops::Deref for Levels {
    type Target = [Level];

    #[inline]
    fn deref(&self) -> &[Level] {
        match self {
            Levels::One(l) => l,
            Levels::Many(l) => l,
        }
    }
}

impl std::ops::DerefMut for Levels {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Level] {
        match self {
            Levels::One(l) => l,
            Levels::Many(l) => l,
        }
    }
}

/// The MAC's sending rate, the link status CLAP reads (`mac.send_rate_bps`): each unicast
/// frame the MAC delivers (acknowledged) is a sample of its bits and its service time, the
/// service time running from when it reached the head of its queue (or the previous head left)
/// to its acknowledgement — contention, deferral, retries and the exchange included, so the rate
/// is what the link delivers when it has packets, whatever the load. Bits and service times are
/// each smoothed by an exponentially weighted moving average of gain 1/8, RFC 6298's gain for
/// the smoothed RTT (the slides give no estimator), and the rate is their ratio: averaging the
/// samples' rates instead would overstate a link whose service times vary (a 1 ms and a 10 ms
/// service of the same frame average to 5.5 times the rate of the 10 ms one, not twice it). The
/// first sample is taken as it is.
#[derive(Debug, Default, Clone, Copy)]
pub struct SendRate {
    /// The smoothed rate, bit/s (0 before the first sample).
    pub bps: f64,
    pub samples: u64,
    /// Smoothed bits and service time (seconds) of a delivered frame.
    bits: f64,
    service_s: f64,
}

impl SendRate {
    /// EWMA gain.
    pub const GAIN: f64 = 1.0 / 8.0;

    fn sample(&mut self, bytes: u32, service: SimTime) {
        let s = service.ns().max(1) as f64 * 1e-9;
        let b = bytes as f64 * 8.0;
        if self.samples == 0 {
            self.bits = b;
            self.service_s = s;
        } else {
            self.bits += Self::GAIN * (b - self.bits);
            self.service_s += Self::GAIN * (s - self.service_s);
        }
        self.bps = self.bits / self.service_s;
        self.samples += 1;
    }
}

/// A MAC's settings of its own for some flows (retry limit, code rate), sorted by flow: a
/// binary search per frame, nothing allocated once set.
#[derive(Debug, Clone)]
struct PerFlow<T>(Vec<(u32, T)>);

impl<T> Default for PerFlow<T> {
    fn default() -> Self {
        PerFlow(Vec::new())
    }
}

impl<T: Copy> PerFlow<T> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn get(&self, flow: u32) -> Option<T> {
        self.0
            .binary_search_by_key(&flow, |e| e.0)
            .ok()
            .map(|i| self.0[i].1)
    }

    fn set(&mut self, flow: u32, value: T) {
        match self.0.binary_search_by_key(&flow, |e| e.0) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (flow, value)),
        }
    }
}

/// How a MAC gets the medium, a component the scenario chooses (`mac.access`). DCF and EDCA
/// are this file's contention machinery; Z-MAC and ZMAC+ (`zmac`, one file) run their TDMA slots
/// and owner priority over it, through the hooks the MAC calls where their access differs
/// (queueing, re-evaluating the medium, slot timers, receiving beacons and state, an exchange's
/// outcome, the end of their own broadcasts). Boxed: the Z-MAC state is large and most MACs run
/// DCF.
#[derive(Debug, Default)]
pub enum Access {
    /// 802.11 DCF (one level) or EDCA (several): contention by backoff.
    #[default]
    Csma,
    /// Z-MAC or ZMAC+ (`zmac::Zmac` holds which, its slots and its state).
    Zmac(Box<zmac::Zmac>),
}

impl Access {
    #[inline]
    pub fn is_zmac(&self) -> bool {
        matches!(self, Access::Zmac(_))
    }

    pub fn zmac(&self) -> Option<&zmac::Zmac> {
        match self {
            Access::Zmac(z) => Some(z),
            Access::Csma => None,
        }
    }

    pub fn zmac_mut(&mut self) -> Option<&mut zmac::Zmac> {
        match self {
            Access::Zmac(z) => Some(z),
            Access::Csma => None,
        }
    }
}

/// Per-node MAC counters.
#[derive(Debug, Default, Clone, Copy)]
pub struct MacStats {
    pub data_tx: u64,
    pub rts_tx: u64,
    pub retries: u64,
    pub drops_retry_limit: u64,
    pub drops_queue: u64,
    pub internal_collisions: u64,
    pub acks_sent: u64,
    pub delivered_up: u64,
    pub duplicates: u64,
}

/// A node's MAC. Laid out in declaration order (`repr(C)`): what carrier sense and the access
/// timer read at every signal's arrival and end (state, idle and NAV times, the timers, the
/// levels' backoffs, the timing parameters) first, next to the PHY's hot fields that end the
/// [`Phy`](crate::phy::Phy) before it in a node (see there); counters and per-flow tables last.
/// What a carrier-sense report reads when it changes nothing (the state, the access, the idle
/// and NAV times) is the first 64 bytes, one line in a [`Node`](crate::world::Node).
#[derive(Debug)]
#[repr(C)]
pub struct Mac {
    state: State,
    phy_busy: bool,
    /// Contention changed while idle (a level started a backoff): reschedule the access timer.
    dirty: bool,
    /// Apply EIFS instead of AIFS: the last frame heard was received in error.
    eifs: bool,
    /// Whether the current exchange began with RTS.
    active_rts: bool,
    pending_after: After,
    id: u32,
    /// How the MAC gets the medium (`mac.access`): DCF/EDCA contention or Z-MAC/ZMAC+.
    access: Access,
    /// Packets in all the levels' queues: Z-MAC asks whether there is any at every change of
    /// carrier sense ([`Mac::zmac_update`]), and the levels' queues are four cache lines
    /// away (ZMAC+). Changed only where a queue is ([`Mac::enqueue`],
    /// [`Mac::enqueue_priority`], `finish_head`).
    queued: u32,
    /// When the medium last became idle for contention; `None` while busy.
    idle_since: Option<SimTime>,
    nav_until: SimTime,
    nav_timer_at: SimTime,
    generation: [u32; 6],
    /// Each timer kind's slot in the event queue, taken when first armed: re-arming moves the
    /// pending firing and cancelling removes it, so no cancelled timer is ever popped.
    timers: [Option<TimerId>; 6],
    /// The medium turned busy too shortly before a slot boundary for carrier sense to notice:
    /// the access due at that boundary still happens (see [`Mac::cca_latency`]).
    commit: Option<Commit>,
    levels: Levels,
    pub params: MacParams,
    /// Longest propagation delay to a node this one exchanges frames with; response timeouts
    /// wait for the round trip (ns-2 adds the maximum propagation delay both ways too).
    max_propagation: SimTime,
    /// Level whose frame is in the current exchange.
    active: usize,
    /// Carrier sense of the carrier-sense-only signals the PHY keeps in bulk
    /// (`Phy::sensed_edge`): `None` while one is on the air, else when the last one ended. Set
    /// by the caller before a timer that reads the medium (Z-MAC's access, a response
    /// timeout); `Some(ZERO)` when the scenario delivers none in bulk.
    sensed_edge: Option<SimTime>,
    ack_time: SimTime,
    cts_time: SimTime,
    /// [`Mac::rx_phy_start_delay`], computed once (it was an airtime computation at every
    /// response timeout armed).
    rx_start_delay: SimTime,
    /// While waiting for an ACK or CTS: when the response, if one has begun arriving by the
    /// timeout, is due to have ended ([`Mac::response_timeout`]).
    response_deadline: SimTime,
    /// Flows with their own FEC code rate at this node, by flow ([`Mac::set_flow_code`]).
    flow_codes: PerFlow<CodeRate>,
    pending: Option<Frame>,
    /// The DATA frame that follows a successful RTS/CTS handshake.
    after_cts: Option<Frame>,
    /// Last sequence number seen per (transmitter, priority level), for duplicate detection.
    last_seq: Vec<(u32, u8, u16)>,
    pub stats: MacStats,
    /// The smoothed sending rate of delivered frames ([`SendRate`]).
    pub send_rate: SendRate,
    /// Retry limits of flows that have their own at this node: (flow, limit), by flow.
    flow_retry_limits: PerFlow<u32>,
}

fn kind_index(k: TimerKind) -> usize {
    match k {
        TimerKind::Access => 0,
        TimerKind::ResponseTimeout => 1,
        TimerKind::Sifs => 2,
        TimerKind::NavEnd => 3,
        TimerKind::ZmacSlot => 4,
        TimerKind::ZmacAccess => 5,
    }
}

// A carrier-sense report that changes nothing reads the MAC's first line only (see above).
const _: () = assert!(std::mem::offset_of!(Mac, nav_timer_at) + 8 <= 64);

impl Mac {
    /// Where the fields a signal's event reads end (`response_deadline` included).
    pub(crate) const HOT_TO: usize =
        std::mem::offset_of!(Mac, response_deadline) + std::mem::size_of::<SimTime>();

    pub fn new(id: u32, params: MacParams) -> Mac {
        let levels = params
            .levels
            .iter()
            .map(|p| Level {
                params: *p,
                // Grown as packets come (and kept): reserving `queue_capacity` up front gave
                // every node a block of 800 bytes among its hot ones, most never filled.
                queue: VecDeque::new(),
                cw: p.cw_min,
                backoff: None,
                short_retries: 0,
                long_retries: 0,
                next_seq: 0,
                head_seq: None,
                head_on_air: false,
                head_since: SimTime::ZERO,
                bytes: 0,
            })
            .collect::<Vec<Level>>();
        let levels = match <[Level; 1]>::try_from(levels) {
            Ok(one) => Levels::One(one),
            Err(many) => Levels::Many(many),
        };
        let ack_time = params.timing.duration(ACK_BYTES, params.basic_rate_mbps);
        let cts_time = params.timing.duration(CTS_BYTES, params.basic_rate_mbps);
        let mut mac = Mac {
            id,
            params,
            levels,
            state: State::Idle,
            active: 0,
            active_rts: false,
            phy_busy: false,
            sensed_edge: Some(SimTime::ZERO),
            nav_until: SimTime::ZERO,
            nav_timer_at: SimTime::ZERO,
            idle_since: Some(SimTime::ZERO),
            eifs: false,
            dirty: false,
            commit: None,
            generation: [0; 6],
            timers: [None; 6],
            pending: None,
            pending_after: After::Nothing,
            after_cts: None,
            last_seq: Vec::new(),
            max_propagation: SimTime::ZERO,
            ack_time,
            cts_time,
            rx_start_delay: SimTime::ZERO,
            response_deadline: SimTime::ZERO,
            stats: MacStats::default(),
            send_rate: SendRate::default(),
            flow_retry_limits: PerFlow::default(),
            flow_codes: PerFlow::default(),
            access: Access::Csma,
            queued: 0,
        };
        mac.rx_start_delay = mac.rx_phy_start_delay();
        mac
    }

    pub fn level_count(&self) -> usize {
        self.levels.len()
    }

    pub fn queue_len(&self, level: usize) -> usize {
        self.levels[level].queue.len()
    }

    /// Whether `level`'s queue takes one more packet of `bytes`.
    pub fn queue_has_room(&self, level: usize, bytes: u32) -> bool {
        let l = &self.levels[level];
        l.queue.len() < self.params.queue_capacity as usize
            && self
                .params
                .queue_bytes
                .is_none_or(|cap| l.bytes + bytes as u64 <= cap as u64)
    }

    /// Bytes of the packets queued at `level`.
    pub fn queue_bytes(&self, level: usize) -> u64 {
        self.levels[level].bytes
    }

    /// `flow`'s own retry limit at this node, if it has one: its frames are tried at most this
    /// many times (RTS and DATA attempts together) instead of the short and long limits.
    pub fn flow_retry_limit(&self, flow: u32) -> Option<u32> {
        self.flow_retry_limits.get(flow)
    }

    /// Gives `flow` its own retry limit at this node (the document's per-flow ARQ persistence).
    pub fn set_flow_retry_limit(&mut self, flow: u32, limit: u32) {
        self.flow_retry_limits.set(flow, limit);
    }

    /// `flow`'s own FEC code rate at this node, if it has one: its unicast data frames go out
    /// as 802.11a BPSK OFDM with that code (`phy::fec`), at `12 · R` Mbit/s.
    pub fn flow_code(&self, flow: u32) -> Option<CodeRate> {
        self.flow_codes.get(flow)
    }

    /// Gives `flow` its own FEC code rate at this node (the flavor-aware link layer's per-flow
    /// FEC). Only for 802.11a radios (checked by the scenario and the tuning layer).
    pub fn set_flow_code(&mut self, flow: u32, code: CodeRate) {
        self.flow_codes.set(flow, code);
    }

    pub fn level_params(&self, level: usize) -> EdcaLevel {
        self.levels[level].params
    }

    /// Changes a level's contention parameters (tuning layer). Takes effect at the next draw;
    /// a new AIFSN moves the access time at the next update ([`Mac::refresh`]).
    pub fn set_level_params(&mut self, level: usize, p: EdcaLevel) {
        let l = &mut self.levels[level];
        l.params = p;
        l.cw = l.cw.clamp(p.cw_min, p.cw_max);
        self.dirty = true; // the access time depends on AIFSN: re-arm at the next update
    }

    /// Sets the longest one-way propagation delay to a neighbour (the builder knows it).
    pub fn set_max_propagation(&mut self, d: SimTime) {
        self.max_propagation = d;
    }

    /// Time the PHY needs to report a busy medium (aCCATime): 15 µs for DSSS (802.11-2016
    /// Table 16-5), 4 µs for OFDM (Table 17-21). A station whose backoff ends within this time
    /// after another station started transmitting transmits too — the collisions of stations
    /// that picked the same slot, which Bianchi's model counts.
    fn cca_latency(&self) -> SimTime {
        match self.params.timing.standard {
            crate::phy::radio::Standard::Dot11a => SimTime::from_us(4),
            _ => SimTime::from_us(15),
        }
    }

    fn round_trip(&self) -> SimTime {
        SimTime(2 * self.max_propagation.ns())
    }

    /// aRxPHYStartDelay: from the start of a frame on the air to PHY-RXSTART, the PLCP preamble
    /// and header — 192 µs for the long DSSS preamble and 96 µs for the short one (the PHY
    /// characteristics of 802.11-2016 Clauses 15 and 16), 20 µs for 20 MHz OFDM (802.11-2020
    /// Table 17-21, the OFDM preamble and SIGNAL field, as ns-3 3.44 cites and uses it; this
    /// was 25 µs, a value taken from memory of an older edition).
    fn rx_phy_start_delay(&self) -> SimTime {
        match self.params.timing.standard {
            crate::phy::radio::Standard::Dot11a => SimTime::from_us(20),
            _ => {
                self.params
                    .timing
                    .frame(ACK_BYTES, self.params.basic_rate_mbps)
                    .header
            }
        }
    }

    /// Arms the response timeout at the end of our frame, for a response of `airtime`: ACKTimeout
    /// (CTSTimeout) = aSIFSTime + aSlotTime + aRxPHYStartDelay (802.11-2016 §10.3.2.9,
    /// §10.3.2.7; ns-3 3.44 `FrameExchangeManager`) plus the round trip, and up to the
    /// response's end when it has begun arriving by then (`ResponseTimeout` in
    /// [`Mac::on_timer`]). The `ns2-2mbps` radio keeps ns-2 `Mac/802_11`'s single timeout,
    /// SIFS + response airtime + slot + round trip.
    fn response_timeout(&mut self, now: SimTime, airtime: SimTime, q: &mut EventQueue) {
        let rtt = self.round_trip();
        self.response_deadline = now + self.sifs() + airtime + self.slot() + rtt;
        let at = match self.params.timing.standard {
            crate::phy::radio::Standard::Ns2 => self.response_deadline,
            _ => now + self.sifs() + self.slot() + self.rx_start_delay + rtt,
        };
        self.timer(q, TimerKind::ResponseTimeout, at);
    }

    fn slot(&self) -> SimTime {
        self.params.timing.slot
    }

    fn sifs(&self) -> SimTime {
        self.params.timing.sifs
    }

    /// AIFS of a level, extended to EIFS after an erroneous frame (802.11-2016 §10.3.2.3.7:
    /// EIFS = SIFS + ACK airtime at the lowest basic rate + AIFS).
    fn ifs(&self, level: usize) -> SimTime {
        let aifs = self.sifs() + SimTime(self.slot().ns() * self.levels[level].params.aifsn as u64);
        if self.eifs {
            aifs + self.sifs() + self.ack_time
        } else {
            aifs
        }
    }

    fn timer(&mut self, q: &mut EventQueue, kind: TimerKind, at: SimTime) {
        let i = kind_index(kind);
        self.generation[i] = self.generation[i].wrapping_add(1);
        let id = *self.timers[i].get_or_insert_with(|| q.new_timer());
        q.set_timer(
            id,
            at,
            Event::MacTimer {
                node: self.id,
                kind,
                generation: self.generation[i],
            },
        );
    }

    fn cancel(&mut self, q: &mut EventQueue, kind: TimerKind) {
        let i = kind_index(kind);
        self.generation[i] = self.generation[i].wrapping_add(1);
        if let Some(id) = self.timers[i] {
            q.cancel_timer(id);
        }
    }

    fn draw_backoff(&mut self, level: usize, rng: &mut Stream) {
        let cw = self.levels[level].cw;
        self.levels[level].backoff = Some(rng.gen_range(0..=cw));
        self.dirty = true;
    }

    /// Queues a packet at `level`. Returns false (and counts a drop) when the queue is full.
    pub fn enqueue(
        &mut self,
        now: SimTime,
        level: usize,
        item: QueuedPacket,
        q: &mut EventQueue,
        rng: &mut Stream,
    ) -> bool {
        if !self.queue_has_room(level, item.bytes) {
            self.stats.drops_queue += 1;
            return false;
        }
        let l = &mut self.levels[level];
        if l.queue.is_empty() {
            l.head_since = now;
        }
        l.bytes += item.bytes as u64;
        l.queue.push_back(item);
        self.queued += 1;
        if self.access.is_zmac() {
            self.update(now, q);
            return true;
        }
        if self.levels[level].backoff.is_none() {
            if self.idle_since.is_some() {
                // Medium idle: access as soon as AIFS has passed (802.11-2016 §10.3.4.2).
                self.levels[level].backoff = Some(0);
                self.dirty = true;
            } else {
                self.draw_backoff(level, rng);
            }
        }
        self.update(now, q);
        true
    }

    /// Queues a packet at `level` right behind the head (which may be in an exchange), beyond
    /// the drop-tail capacity: network control packets (routing, link probes) jump the data
    /// queue as ns-2's `Queue/DropTail/PriQueue` puts routing packets at the head. Returns false
    /// (and counts a drop) only if the level already holds twice its capacity.
    pub fn enqueue_priority(
        &mut self,
        now: SimTime,
        level: usize,
        item: QueuedPacket,
        q: &mut EventQueue,
        rng: &mut Stream,
    ) -> bool {
        let l = &mut self.levels[level];
        let len = l.queue.len();
        let over_bytes = self
            .params
            .queue_bytes
            .is_some_and(|cap| l.bytes + item.bytes as u64 > 2 * cap as u64);
        if len >= 2 * self.params.queue_capacity as usize || over_bytes {
            self.stats.drops_queue += 1;
            return false;
        }
        if len == 0 {
            return self.enqueue(now, level, item, q, rng);
        }
        l.bytes += item.bytes as u64;
        l.queue.insert(1, item);
        self.queued += 1;
        true
    }

    /// The PHY's carrier sense may have changed.
    pub fn phy_changed(&mut self, now: SimTime, busy: bool, q: &mut EventQueue) {
        self.phy_busy = busy;
        self.update(now, q);
    }

    /// Records carrier sense of the signals the PHY keeps in bulk (`Phy::sensed_edge`), for the
    /// timer about to fire.
    #[inline]
    pub fn set_sensed_edge(&mut self, edge: Option<SimTime>) {
        self.sensed_edge = edge;
    }

    /// Re-evaluates the medium and the access timer now, as a carrier-sense report would: after
    /// a tuning write of a level's parameters, so that a new AIFSN moves the access time at
    /// once rather than at whatever report comes next (the PHY reports carrier sense only where
    /// it turns, `Phy::weak_wake`, so the next could be far).
    pub fn refresh(&mut self, now: SimTime, q: &mut EventQueue) {
        self.update(now, q);
    }

    /// Whether this MAC reads carrier sense before the next call that could make it listen
    /// (false only for an idle Z-MAC node with no attempt: `zmac_listens`). While it does
    /// not, the world skips the PHY's weak-interference wake-ups for it; where a timer makes
    /// it listen, the world reports carrier sense afresh ([`Mac::phy_changed`]).
    #[inline]
    pub fn listens_to_carrier_sense(&self) -> bool {
        !self.access.is_zmac() || self.zmac_listens()
    }

    /// Records carrier sense without re-evaluating (a handler call follows).
    pub fn set_phy_busy(&mut self, busy: bool) {
        self.phy_busy = busy;
    }

    fn freeze(&mut self, t0: SimTime, now: SimTime) {
        let slot = self.slot().ns();
        let mut eifs_elapsed = false;
        for i in 0..self.levels.len() {
            let start = t0 + self.ifs(i);
            if now >= start {
                eifs_elapsed = true;
            }
            if let Some(b) = self.levels[i].backoff {
                if now > start {
                    let elapsed = ((now - start).ns() / slot) as u32;
                    self.levels[i].backoff = Some(b - elapsed.min(b));
                }
            }
        }
        if self.eifs && eifs_elapsed {
            self.eifs = false;
        }
    }

    /// Re-evaluates whether the medium is idle for contention and (re)arms the access timer.
    fn update(&mut self, now: SimTime, q: &mut EventQueue) {
        if self.access.is_zmac() {
            return self.zmac_update(now, q);
        }
        let idle = !self.phy_busy && self.nav_until <= now && self.state == State::Idle;
        match (self.idle_since, idle) {
            (None, true) => {
                if let Some(c) = self.commit.take() {
                    self.freeze(c.t0, c.busy_at);
                }
                self.idle_since = Some(now);
                self.schedule_access(now, q);
            }
            (Some(t0), false) => {
                let next = (0..self.levels.len())
                    .filter_map(|i| self.access_time(t0, i))
                    .min();
                let unnoticed = self.state == State::Idle
                    && next.is_some_and(|at| at < now + self.cca_latency());
                if unnoticed {
                    // Keep the access timer: the busy medium is not yet visible to carrier sense.
                    self.commit = Some(Commit { t0, busy_at: now });
                } else {
                    self.freeze(t0, now);
                    self.cancel(q, TimerKind::Access);
                }
                self.idle_since = None;
            }
            (Some(_), true) if self.dirty => self.schedule_access(now, q),
            _ => {}
        }
        if self.nav_until > now && self.nav_timer_at != self.nav_until {
            self.nav_timer_at = self.nav_until;
            let at = self.nav_until;
            self.timer(q, TimerKind::NavEnd, at);
        }
    }

    fn access_time(&self, t0: SimTime, level: usize) -> Option<SimTime> {
        self.levels[level]
            .backoff
            .map(|b| t0 + self.ifs(level) + SimTime(self.slot().ns() * b as u64))
    }

    fn schedule_access(&mut self, now: SimTime, q: &mut EventQueue) {
        self.dirty = false;
        let Some(t0) = self.idle_since else { return };
        let next = (0..self.levels.len())
            .filter_map(|i| self.access_time(t0, i))
            .min();
        match next {
            Some(at) => self.timer(q, TimerKind::Access, at.max(now)),
            None => self.cancel(q, TimerKind::Access),
        }
    }

    /// A MAC timer fired.
    pub fn on_timer(
        &mut self,
        now: SimTime,
        kind: TimerKind,
        generation: u32,
        q: &mut EventQueue,
        rng: &mut Stream,
        out: &mut Vec<MacAction>,
    ) {
        if self.generation[kind_index(kind)] != generation {
            return; // cancelled
        }
        match kind {
            TimerKind::Access => self.on_access(now, q, rng, out),
            TimerKind::ResponseTimeout => {
                match self.state {
                    State::WaitAck | State::WaitCts
                        if (self.phy_busy || self.sensed_edge.is_none())
                            && now < self.response_deadline =>
                    {
                        // A frame began arriving within the timeout (PHY-RXSTART): wait for
                        // its end before judging the attempt (802.11-2016 §10.3.2.9).
                        let at = self.response_deadline;
                        self.timer(q, TimerKind::ResponseTimeout, at);
                        return;
                    }
                    State::WaitAck | State::WaitCts => {
                        if self.access.is_zmac() {
                            self.zmac_outcome(now, true);
                        }
                        let long = self.state == State::WaitAck && self.active_rts;
                        self.state = State::Idle;
                        self.failure(now, self.active, long, true, rng, out);
                    }
                    _ => {}
                }
                self.update(now, q);
            }
            TimerKind::Sifs => {
                if self.state == State::SifsPending {
                    if let Some(f) = self.pending.take() {
                        self.state = State::Transmitting(self.pending_after);
                        if f.kind == FrameKind::Data {
                            self.stats.data_tx += 1;
                            self.levels[self.active].head_on_air = true;
                        } else if f.kind == FrameKind::Ack {
                            self.stats.acks_sent += 1;
                        }
                        out.push(MacAction::Transmit(f));
                    } else {
                        self.state = State::Idle;
                    }
                }
                self.update(now, q);
            }
            TimerKind::NavEnd => {
                self.nav_timer_at = SimTime::ZERO;
                self.update(now, q);
            }
            TimerKind::ZmacSlot => self.zmac_slot(now, q),
            TimerKind::ZmacAccess => {
                self.zmac_access(now, q, out);
                self.update(now, q);
            }
        }
    }

    fn on_access(
        &mut self,
        now: SimTime,
        q: &mut EventQueue,
        rng: &mut Stream,
        out: &mut Vec<MacAction>,
    ) {
        if self.state != State::Idle {
            return;
        }
        let commit = self.commit.take();
        let (t0, freeze_at) = match (self.idle_since, commit) {
            (Some(t0), _) => (t0, now),
            (None, Some(c)) => (c.t0, c.busy_at),
            (None, None) => return,
        };
        // Levels whose backoff ran out by now (at most 64 levels: see the scenario validation).
        let mut due: u64 = 0;
        for i in 0..self.levels.len() {
            if self.access_time(t0, i).is_some_and(|at| at <= now) {
                due |= 1 << i;
            }
        }
        let winner = (0..self.levels.len())
            .rev()
            .find(|&i| due & (1 << i) != 0 && !self.levels[i].queue.is_empty());
        let Some(w) = winner else {
            for i in 0..self.levels.len() {
                if due & (1 << i) != 0 {
                    self.levels[i].backoff = None; // post-backoff finished
                }
            }
            if commit.is_some() {
                self.freeze(t0, freeze_at);
            } else {
                self.schedule_access(now, q);
            }
            return;
        };
        // The medium is ours: every level's counter stops where it is now ...
        self.freeze(t0, freeze_at);
        // ... then the other levels that also reached zero lose the internal collision and
        // back off as after a failed attempt (802.11-2016 §10.22.2.4), with a fresh draw.
        for i in 0..self.levels.len() {
            if i == w || due & (1 << i) == 0 {
                continue;
            }
            if self.levels[i].queue.is_empty() {
                self.levels[i].backoff = None;
            } else {
                self.stats.internal_collisions += 1;
                self.failure(now, i, false, false, rng, out);
            }
        }
        self.levels[w].backoff = None;
        self.idle_since = None;
        self.eifs = false;
        self.cancel(q, TimerKind::Access);
        self.transmit_head(w, out);
    }

    fn data_frame(&mut self, level: usize) -> Frame {
        let head = self.levels[level].queue[0];
        let l = &mut self.levels[level];
        let retry = l.head_on_air;
        let seq = match l.head_seq {
            Some(s) => s,
            None => {
                let s = l.next_seq;
                l.next_seq = (l.next_seq + 1) & 0x0fff;
                l.head_seq = Some(s);
                s
            }
        };
        let bytes = DATA_OVERHEAD_BYTES + LLC_SNAP_BYTES + head.bytes;
        let broadcast = head.next_hop == BROADCAST;
        let code = match self.flow_codes.is_empty() || broadcast {
            true => None,
            false => self.flow_code(head.flow),
        };
        let rate = match (broadcast, code) {
            (true, _) => self.params.basic_rate_mbps,
            (false, Some(c)) => c.bpsk_ofdm_rate_mbps(),
            (false, None) => self.params.data_rate_mbps,
        };
        let duration = if broadcast {
            SimTime::ZERO
        } else {
            self.sifs() + self.ack_time
        };
        Frame {
            kind: FrameKind::Data,
            src: self.id,
            dst: head.next_hop,
            duration,
            seq,
            tid: level as u8,
            retry,
            packet: head.packet,
            bytes,
            rate_mbps: rate,
            code: code.map_or(0, CodeRate::id),
        }
    }

    fn transmit_head(&mut self, level: usize, out: &mut Vec<MacAction>) {
        self.active = level;
        let data = self.data_frame(level);
        let use_rts =
            !data.is_broadcast() && self.params.rts_threshold.is_some_and(|t| data.bytes > t);
        self.active_rts = use_rts;
        if use_rts {
            let data_time = self
                .params
                .timing
                .frame_coded(data.bytes, data.rate_mbps, data.code)
                .total;
            let duration =
                SimTime(self.sifs().ns() * 3) + self.cts_time + data_time + self.ack_time;
            let rts = Frame::control(
                FrameKind::Rts,
                self.id,
                data.dst,
                duration,
                self.params.basic_rate_mbps,
            );
            self.stats.rts_tx += 1;
            self.after_cts = Some(data);
            self.state = State::Transmitting(After::WaitCts);
            out.push(MacAction::Transmit(rts));
        } else {
            self.stats.data_tx += 1;
            self.levels[level].head_on_air = true;
            self.state = State::Transmitting(if data.is_broadcast() {
                After::BroadcastDone
            } else {
                After::WaitAck
            });
            out.push(MacAction::Transmit(data));
        }
    }

    /// An attempt of `level`'s head packet failed: no ACK or CTS (`on_air`), or an internal
    /// collision (not on the air). `long`: the failed frame was a DATA sent after RTS/CTS, which
    /// counts against the long retry limit; RTS failures and frames sent without RTS count
    /// against the short one (802.11-2016 §10.3.4.4).
    fn failure(
        &mut self,
        now: SimTime,
        level: usize,
        long: bool,
        on_air: bool,
        rng: &mut Stream,
        out: &mut Vec<MacAction>,
    ) {
        let own = match self.flow_retry_limits.is_empty() {
            true => None,
            false => self.levels[level]
                .queue
                .front()
                .and_then(|h| self.flow_retry_limit(h.flow)),
        };
        let limit;
        {
            let l = &mut self.levels[level];
            if long {
                l.long_retries += 1;
            } else {
                l.short_retries += 1;
            }
            limit = match own {
                Some(n) => l.short_retries + l.long_retries >= n,
                None if long => l.long_retries >= self.params.long_retry_limit,
                None => l.short_retries >= self.params.short_retry_limit,
            };
        }
        if limit {
            self.stats.drops_retry_limit += 1;
            self.finish_head(now, level, false, out);
        } else {
            if on_air {
                self.stats.retries += 1;
            }
            let l = &mut self.levels[level];
            l.cw = (2 * (l.cw + 1) - 1).min(l.params.cw_max);
        }
        self.draw_backoff(level, rng);
    }

    fn success(&mut self, now: SimTime, rng: &mut Stream, out: &mut Vec<MacAction>) {
        let level = self.active;
        self.finish_head(now, level, true, out);
        self.draw_backoff(level, rng); // post-backoff
    }

    /// The head packet of `level` leaves the queue, acknowledged or dropped: its retry counters,
    /// contention window and sequence state start over for the next packet.
    fn finish_head(
        &mut self,
        now: SimTime,
        level: usize,
        delivered: bool,
        out: &mut Vec<MacAction>,
    ) {
        let l = &mut self.levels[level];
        let head = l
            .queue
            .pop_front()
            .expect("a finished exchange has a head packet");
        self.queued -= 1;
        // Every failure counted one retry; a delivery is one more attempt.
        let attempts = l.short_retries + l.long_retries + delivered as u32;
        l.bytes -= head.bytes as u64;
        l.short_retries = 0;
        l.long_retries = 0;
        l.cw = l.params.cw_min;
        l.head_seq = None;
        l.head_on_air = false;
        let served_since = std::mem::replace(&mut l.head_since, now);
        if delivered && head.next_hop != BROADCAST {
            self.send_rate.sample(head.bytes, now - served_since);
        }
        let underflow = delivered && self.levels.iter().all(|l| l.queue.is_empty());
        out.push(MacAction::Dequeued {
            packet: head.packet,
            level: level as u8,
            delivered,
            underflow,
            attempts,
        });
    }

    /// Our transmission ended.
    pub fn on_tx_end(
        &mut self,
        now: SimTime,
        q: &mut EventQueue,
        rng: &mut Stream,
        out: &mut Vec<MacAction>,
    ) {
        let State::Transmitting(after) = self.state else {
            debug_assert!(false, "tx end while not transmitting");
            return;
        };
        match after {
            After::WaitAck => {
                self.state = State::WaitAck;
                self.response_timeout(now, self.ack_time, q);
            }
            After::WaitCts => {
                self.state = State::WaitCts;
                self.response_timeout(now, self.cts_time, q);
            }
            After::BroadcastDone => {
                self.state = State::Idle;
                self.success(now, rng, out);
            }
            After::Nothing => self.state = State::Idle,
            After::ZmacBeacon | After::ZmacControl => self.zmac_tx_end(now, after, q),
        }
        self.update(now, q);
    }

    /// The PHY finished receiving a frame: `frame` decoded, or `None` when received in error.
    pub fn on_rx(
        &mut self,
        now: SimTime,
        frame: Option<&Frame>,
        q: &mut EventQueue,
        rng: &mut Stream,
        out: &mut Vec<MacAction>,
    ) {
        let Some(f) = frame else {
            self.eifs = true;
            self.update(now, q);
            return;
        };
        self.eifs = false;
        if self.access.is_zmac() {
            match f.kind {
                FrameKind::Beacon | FrameKind::ZmacState | FrameKind::ZmacEcn => {
                    self.zmac_rx(now, f);
                    self.update(now, q);
                    return;
                }
                FrameKind::Ack if f.dst == self.id && self.state == State::WaitAck => {
                    self.zmac_outcome(now, false)
                }
                _ => {}
            }
        }
        if f.dst == self.id {
            match f.kind {
                FrameKind::Ack => {
                    if self.state == State::WaitAck && self.head_next_hop() == Some(f.src) {
                        self.cancel(q, TimerKind::ResponseTimeout);
                        self.state = State::Idle;
                        self.success(now, rng, out);
                    }
                }
                FrameKind::Cts => {
                    if self.state == State::WaitCts && self.head_next_hop() == Some(f.src) {
                        self.cancel(q, TimerKind::ResponseTimeout);
                        // A CTS answers the RTS: the short retry count starts over (§10.3.4.4).
                        self.levels[self.active].short_retries = 0;
                        if let Some(data) = self.after_cts.take() {
                            self.respond(now, data, After::WaitAck, q);
                        }
                    }
                }
                FrameKind::Rts => {
                    if self.state == State::Idle && self.nav_until <= now {
                        let duration = f.duration.saturating_sub(self.sifs() + self.cts_time);
                        let cts = Frame::control(
                            FrameKind::Cts,
                            self.id,
                            f.src,
                            duration,
                            self.params.basic_rate_mbps,
                        );
                        self.respond(now, cts, After::Nothing, q);
                    }
                }
                FrameKind::Data => {
                    if matches!(self.state, State::WaitAck | State::WaitCts) {
                        // A frame for us arrived where our response was due: our exchange failed.
                        let long = self.state == State::WaitAck && self.active_rts;
                        self.cancel(q, TimerKind::ResponseTimeout);
                        self.state = State::Idle;
                        self.failure(now, self.active, long, true, rng, out);
                    }
                    if self.state == State::Idle {
                        let ack = Frame::control(
                            FrameKind::Ack,
                            self.id,
                            f.src,
                            SimTime::ZERO,
                            self.params.basic_rate_mbps,
                        );
                        self.respond(now, ack, After::Nothing, q);
                    }
                    if self.is_duplicate(f) {
                        self.stats.duplicates += 1;
                    } else {
                        self.stats.delivered_up += 1;
                        out.push(MacAction::Deliver {
                            packet: f.packet,
                            from: f.src,
                        });
                    }
                }
                FrameKind::Beacon | FrameKind::ZmacState | FrameKind::ZmacEcn => {}
            }
        } else if f.is_broadcast() {
            if f.kind == FrameKind::Data {
                self.stats.delivered_up += 1;
                out.push(MacAction::Deliver {
                    packet: f.packet,
                    from: f.src,
                });
            }
        } else {
            // Someone else's exchange: honour its reservation (virtual carrier sense).
            let until = now + f.duration;
            if until > self.nav_until {
                self.nav_until = until;
            }
        }
        self.update(now, q);
    }

    fn respond(&mut self, now: SimTime, frame: Frame, after: After, q: &mut EventQueue) {
        self.pending = Some(frame);
        self.pending_after = after;
        self.state = State::SifsPending;
        let at = now + self.sifs();
        self.timer(q, TimerKind::Sifs, at);
    }

    fn head_next_hop(&self) -> Option<u32> {
        self.levels[self.active].queue.front().map(|p| p.next_hop)
    }

    fn is_duplicate(&mut self, f: &Frame) -> bool {
        match self
            .last_seq
            .iter_mut()
            .find(|(src, tid, _)| *src == f.src && *tid == f.tid)
        {
            Some(entry) => {
                let dup = f.retry && entry.2 == f.seq;
                entry.2 = f.seq;
                dup
            }
            None => {
                self.last_seq.push((f.src, f.tid, f.seq));
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::radio::{Preamble, Standard};

    fn params(levels: Vec<EdcaLevel>) -> MacParams {
        MacParams {
            timing: PhyTiming::new(Standard::Dot11b, Preamble::Long),
            data_rate_mbps: 11.0,
            basic_rate_mbps: 1.0,
            rts_threshold: None,
            short_retry_limit: 7,
            long_retry_limit: 4,
            queue_capacity: 2,
            queue_bytes: None,
            levels,
        }
    }

    fn pkt(packet: u32, bytes: u32, next_hop: u32) -> QueuedPacket {
        QueuedPacket {
            packet,
            bytes,
            next_hop,
            flow: 0,
        }
    }

    fn dcf() -> Vec<EdcaLevel> {
        vec![EdcaLevel {
            aifsn: 2,
            cw_min: 31,
            cw_max: 1023,
        }]
    }

    fn run_timers(mac: &mut Mac, q: &mut EventQueue, rng: &mut Stream, out: &mut Vec<MacAction>) {
        while let Some(ev) = q.pop_until(SimTime::MAX) {
            if let Event::MacTimer {
                kind, generation, ..
            } = ev
            {
                mac.on_timer(q.now(), kind, generation, q, rng, out);
                if out.iter().any(|a| matches!(a, MacAction::Transmit(_))) {
                    return;
                }
            }
        }
    }

    /// An AIFSN lowered at run time moves the pending access to the new AIFS at once, whatever
    /// carrier sense reports afterwards (the world refreshes the MAC after a tuning write).
    #[test]
    fn a_lowered_aifsn_moves_the_access_at_once() {
        let access_at = |refresh: bool, report: bool| {
            let mut mac = Mac::new(0, params(dcf()));
            let mut q = EventQueue::new();
            let mut rng = crate::sim::rng::stream(1, 0, "t");
            let mut out = vec![];
            let item = QueuedPacket {
                packet: 5,
                bytes: 1028,
                next_hop: 1,
                flow: 0,
            };
            // Idle medium: access at DIFS (SIFS + 2 slots = 50 us).
            assert!(mac.enqueue(SimTime::ZERO, 0, item, &mut q, &mut rng));
            mac.set_level_params(
                0,
                EdcaLevel {
                    aifsn: 1,
                    ..dcf()[0]
                },
            );
            if refresh {
                mac.refresh(SimTime::from_us(10), &mut q);
            }
            if report {
                // A carrier-sense report that changes nothing, at 35 us.
                mac.phy_changed(SimTime::from_us(35), false, &mut q);
            }
            run_timers(&mut mac, &mut q, &mut rng, &mut out);
            assert!(matches!(out[0], MacAction::Transmit(_)));
            q.now()
        };
        // SIFS + 1 slot = 30 us, with or without a later report.
        assert_eq!(access_at(true, false), SimTime::from_us(30));
        assert_eq!(access_at(true, true), SimTime::from_us(30));
        // Without the refresh the old access time stands until some report re-arms it.
        assert_eq!(access_at(false, false), SimTime::from_us(50));
    }

    #[test]
    fn idle_medium_transmits_after_difs() {
        let mut mac = Mac::new(0, params(dcf()));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        assert!(mac.enqueue(
            SimTime::ZERO,
            0,
            QueuedPacket {
                packet: 5,
                bytes: 1028,
                next_hop: 1,
                flow: 0
            },
            &mut q,
            &mut rng
        ));
        run_timers(&mut mac, &mut q, &mut rng, &mut out);
        assert_eq!(q.now(), SimTime::from_us(50), "DIFS = SIFS + 2 slots");
        match out[0] {
            MacAction::Transmit(f) => {
                assert_eq!(f.kind, FrameKind::Data);
                assert_eq!(f.bytes, 28 + 8 + 1028);
                assert_eq!(f.duration, SimTime::from_us(10 + 304));
            }
            a => panic!("{a:?}"),
        }
    }

    #[test]
    fn full_queue_drops_and_counts() {
        let mut mac = Mac::new(0, params(dcf()));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        mac.set_phy_busy(true);
        for i in 0..2 {
            assert!(mac.enqueue(
                SimTime::ZERO,
                0,
                QueuedPacket {
                    packet: i,
                    bytes: 100,
                    next_hop: 1,
                    flow: 0
                },
                &mut q,
                &mut rng
            ));
        }
        assert!(!mac.enqueue(
            SimTime::ZERO,
            0,
            QueuedPacket {
                packet: 9,
                bytes: 100,
                next_hop: 1,
                flow: 0
            },
            &mut q,
            &mut rng
        ));
        assert_eq!(mac.stats.drops_queue, 1);
    }

    #[test]
    fn missing_acks_double_the_window_until_the_retry_limit() {
        let mut mac = Mac::new(0, params(dcf()));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        mac.enqueue(SimTime::ZERO, 0, pkt(5, 1028, 1), &mut q, &mut rng);
        let mut windows = vec![];
        for _ in 0..7 {
            out.clear();
            run_timers(&mut mac, &mut q, &mut rng, &mut out);
            assert!(matches!(out.last(), Some(MacAction::Transmit(_))));
            windows.push(mac.levels[0].cw);
            q.schedule_in(SimTime::from_us(966), Event::TxEnd { node: 0 });
            let _ = q.pop_until(SimTime::MAX);
            out.clear();
            mac.on_tx_end(q.now(), &mut q, &mut rng, &mut out);
        }
        // the 7th attempt's timeout drops the packet
        out.clear();
        while let Some(ev) = q.pop_until(SimTime::MAX) {
            if let Event::MacTimer {
                kind: TimerKind::ResponseTimeout,
                generation,
                ..
            } = ev
            {
                mac.on_timer(
                    q.now(),
                    TimerKind::ResponseTimeout,
                    generation,
                    &mut q,
                    &mut rng,
                    &mut out,
                );
                break;
            }
        }
        assert_eq!(windows, vec![31, 63, 127, 255, 511, 1023, 1023]);
        assert!(out.iter().any(|a| matches!(
            a,
            MacAction::Dequeued {
                delivered: false,
                ..
            }
        )));
        assert_eq!(mac.stats.drops_retry_limit, 1);
        assert_eq!(mac.levels[0].cw, 31);
    }

    /// Sends one DATA frame of 1064 bytes (966 µs at 11 Mbit/s) and returns when it ended.
    fn send_one_frame(
        mac: &mut Mac,
        q: &mut EventQueue,
        rng: &mut Stream,
        out: &mut Vec<MacAction>,
    ) -> SimTime {
        mac.enqueue(SimTime::ZERO, 0, pkt(5, 1028, 1), q, rng);
        run_timers(mac, q, rng, out);
        q.schedule_in(SimTime::from_us(966), Event::TxEnd { node: 0 });
        let _ = q.pop_until(SimTime::MAX);
        out.clear();
        mac.on_tx_end(q.now(), q, rng, out);
        q.now()
    }

    /// The next ResponseTimeout that fires (stale generations are skipped): its time.
    fn next_response_timeout(
        mac: &mut Mac,
        q: &mut EventQueue,
        rng: &mut Stream,
        out: &mut Vec<MacAction>,
    ) -> SimTime {
        while let Some(ev) = q.pop_until(SimTime::MAX) {
            if let Event::MacTimer {
                kind: TimerKind::ResponseTimeout,
                generation,
                ..
            } = ev
            {
                if mac.generation[kind_index(TimerKind::ResponseTimeout)] == generation {
                    mac.on_timer(q.now(), TimerKind::ResponseTimeout, generation, q, rng, out);
                    return q.now();
                }
            }
        }
        panic!("no response timeout");
    }

    #[test]
    fn unanswered_frame_times_out_after_sifs_slot_and_rx_phy_start_delay() {
        // 802.11-2016 §10.3.2.9: ACKTimeout = aSIFSTime + aSlotTime + aRxPHYStartDelay,
        // 10 + 20 + 192 µs on 802.11b with the long preamble (ns-3 3.44 waits the same).
        let mut mac = Mac::new(0, params(dcf()));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        let end = send_one_frame(&mut mac, &mut q, &mut rng, &mut out);
        let at = next_response_timeout(&mut mac, &mut q, &mut rng, &mut out);
        assert_eq!(at - end, SimTime::from_us(10 + 20 + 192));
        assert_eq!(mac.stats.retries, 1);
        assert_eq!(mac.levels[0].cw, 63);
    }

    #[test]
    fn an_ofdm_frame_times_out_after_sifs_slot_and_the_ofdm_preamble_and_signal() {
        // 802.11-2020 Table 17-21: aRxPHYStartDelay is 20 µs for 20 MHz OFDM, so ACKTimeout =
        // 16 + 9 + 20 = 45 µs on 802.11a (ns-3 3.44's timeout for the same PHY).
        let mut p = params(dcf());
        p.timing = PhyTiming::new(Standard::Dot11a, Preamble::Long);
        p.data_rate_mbps = 6.0;
        p.basic_rate_mbps = 6.0;
        let mut mac = Mac::new(0, p);
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        let end = send_one_frame(&mut mac, &mut q, &mut rng, &mut out);
        let at = next_response_timeout(&mut mac, &mut q, &mut rng, &mut out);
        assert_eq!(at - end, SimTime::from_us(16 + 9 + 20));
    }

    #[test]
    fn a_response_arriving_at_the_timeout_is_waited_for() {
        // The medium turned busy within the timeout (the ACK's preamble): the sender waits up to
        // the ACK's end plus a slot, SIFS + 304 + 20 µs, and the ACK then completes the exchange.
        let mut mac = Mac::new(0, params(dcf()));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        let end = send_one_frame(&mut mac, &mut q, &mut rng, &mut out);
        mac.phy_changed(end + SimTime::from_us(10), true, &mut q);
        let at = next_response_timeout(&mut mac, &mut q, &mut rng, &mut out);
        assert_eq!(at - end, SimTime::from_us(10 + 20 + 192));
        assert_eq!(mac.stats.retries, 0, "still waiting");
        let ack = Frame::control(FrameKind::Ack, 1, 0, SimTime::ZERO, 1.0);
        mac.set_phy_busy(false);
        mac.on_rx(
            end + SimTime::from_us(10 + 304),
            Some(&ack),
            &mut q,
            &mut rng,
            &mut out,
        );
        assert!(out.iter().any(|a| matches!(
            a,
            MacAction::Dequeued {
                delivered: true,
                ..
            }
        )));
        assert_eq!(mac.stats.retries, 0);
    }

    #[test]
    fn broadcast_goes_once_at_the_basic_rate_without_ack() {
        let mut mac = Mac::new(0, params(dcf()));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        mac.enqueue(SimTime::ZERO, 0, pkt(3, 100, BROADCAST), &mut q, &mut rng);
        run_timers(&mut mac, &mut q, &mut rng, &mut out);
        let Some(MacAction::Transmit(f)) = out.last().copied() else {
            panic!("{out:?}")
        };
        assert!(f.is_broadcast());
        assert_eq!(f.rate_mbps, 1.0);
        assert_eq!(
            f.duration,
            SimTime::ZERO,
            "no NAV: nothing follows a broadcast"
        );
        out.clear();
        mac.on_tx_end(SimTime::from_us(1000), &mut q, &mut rng, &mut out);
        assert!(matches!(
            out[..],
            [MacAction::Dequeued {
                packet: 3,
                delivered: true,
                ..
            }]
        ));
        assert_eq!(mac.state, State::Idle);
    }

    #[test]
    fn duplicate_retransmission_is_acknowledged_but_not_delivered() {
        let mut mac = Mac::new(1, params(dcf()));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 1, "t");
        let mut out = vec![];
        let data = Frame {
            kind: FrameKind::Data,
            src: 0,
            dst: 1,
            duration: SimTime::ZERO,
            seq: 5,
            tid: 0,
            retry: false,
            packet: 9,
            bytes: 100,
            rate_mbps: 11.0,
            code: 0,
        };
        mac.on_rx(SimTime::ZERO, Some(&data), &mut q, &mut rng, &mut out);
        assert!(out.iter().any(|a| matches!(a, MacAction::Deliver { .. })));
        // our ACK goes out after SIFS
        out.clear();
        run_timers(&mut mac, &mut q, &mut rng, &mut out);
        assert!(matches!(
            out.last(),
            Some(MacAction::Transmit(Frame {
                kind: FrameKind::Ack,
                dst: 0,
                ..
            }))
        ));
        mac.on_tx_end(q.now() + SimTime::from_us(304), &mut q, &mut rng, &mut out);
        out.clear();
        let again = Frame {
            retry: true,
            ..data
        };
        mac.on_rx(
            SimTime::from_ms(2),
            Some(&again),
            &mut q,
            &mut rng,
            &mut out,
        );
        assert!(!out.iter().any(|a| matches!(a, MacAction::Deliver { .. })));
        assert_eq!(mac.stats.duplicates, 1);
    }

    #[test]
    fn internal_collision_loser_draws_a_whole_fresh_backoff() {
        // Level 0 (AIFSN 1, CW 3..7) reaches zero in the same slot as level 1 (AIFSN 4, CW 0)
        // when it drew 3: it then loses, doubles its window to 7 and must draw uniformly in 0..=7,
        // not a draw shortened by the slots that had already passed.
        let lv = vec![
            EdcaLevel {
                aifsn: 1,
                cw_min: 3,
                cw_max: 7,
            },
            EdcaLevel {
                aifsn: 4,
                cw_min: 0,
                cw_max: 0,
            },
        ];
        let mut draws = vec![];
        for seed in 0..400 {
            let mut mac = Mac::new(0, params(lv.clone()));
            let mut q = EventQueue::new();
            let mut rng = crate::sim::rng::stream(seed, 0, "t");
            let mut out = vec![];
            mac.set_phy_busy(true);
            mac.phy_changed(SimTime::ZERO, true, &mut q);
            mac.enqueue(SimTime::ZERO, 0, pkt(1, 100, 1), &mut q, &mut rng);
            mac.enqueue(SimTime::ZERO, 1, pkt(2, 100, 1), &mut q, &mut rng);
            mac.phy_changed(SimTime::ZERO, false, &mut q);
            run_timers(&mut mac, &mut q, &mut rng, &mut out);
            if mac.stats.internal_collisions == 1 {
                draws.push(mac.levels[0].backoff.expect("the loser backs off"));
            }
        }
        assert!(draws.len() > 50, "{} collisions", draws.len());
        assert!(draws.iter().all(|&b| b <= 7));
        assert!(
            draws.iter().any(|&b| b >= 5),
            "draws never reach the top of the window: {draws:?}"
        );
        let zeros = draws.iter().filter(|&&b| b == 0).count() as f64 / draws.len() as f64;
        assert!(zeros < 0.3, "{zeros}");
    }

    #[test]
    fn cts_resets_the_short_retry_count() {
        let mut p = params(dcf());
        p.rts_threshold = Some(0);
        let mut mac = Mac::new(0, p);
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        mac.enqueue(SimTime::ZERO, 0, pkt(5, 1028, 1), &mut q, &mut rng);
        run_timers(&mut mac, &mut q, &mut rng, &mut out);
        mac.levels[0].short_retries = 3; // three RTS attempts had failed before this one
        let end = q.now() + SimTime::from_us(352);
        mac.on_tx_end(end, &mut q, &mut rng, &mut out);
        let cts = Frame::control(FrameKind::Cts, 1, 0, SimTime::ZERO, 1.0);
        mac.on_rx(
            end + SimTime::from_us(314),
            Some(&cts),
            &mut q,
            &mut rng,
            &mut out,
        );
        assert_eq!(mac.levels[0].short_retries, 0);
    }

    #[test]
    fn higher_level_wins_internal_collision() {
        let lv = vec![
            EdcaLevel {
                aifsn: 2,
                cw_min: 31,
                cw_max: 1023,
            },
            EdcaLevel {
                aifsn: 2,
                cw_min: 31,
                cw_max: 1023,
            },
        ];
        let mut mac = Mac::new(0, params(lv));
        let mut q = EventQueue::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let mut out = vec![];
        mac.enqueue(SimTime::ZERO, 0, pkt(1, 100, 1), &mut q, &mut rng);
        mac.enqueue(SimTime::ZERO, 1, pkt(2, 100, 1), &mut q, &mut rng);
        run_timers(&mut mac, &mut q, &mut rng, &mut out);
        match out.last() {
            Some(MacAction::Transmit(f)) => assert_eq!(f.packet, 2),
            a => panic!("{a:?}"),
        }
        assert_eq!(mac.stats.internal_collisions, 1);
        assert_eq!(mac.levels[0].cw, 63);
    }
}
