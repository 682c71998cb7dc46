//! Z-MAC and ZMAC+ channel access on the 802.11 PHY (`mac.access = "zmac" | "zmacplus"`).
//!
//! **Z-MAC** (Rhee, Warrier, Aia, Min, Sichitiu, "Z-MAC: a hybrid MAC for wireless sensor
//! networks", SenSys 2005 / IEEE/ACM ToN 2008): CSMA whose contention is steered by a TDMA
//! schedule used as a hint.
//!
//! - *Time synchronisation*: like the DPCLO document (§V: "given tight time synchronization"),
//!   all nodes share one clock: slot `k` starts at `k·L` for every node. No synchronisation
//!   messages are modelled.
//! - *Slot length* `L` ([`slot_length`]): one data exchange at the standard's timing — DIFS, the
//!   largest contention window `Tno` slots, a DATA frame carrying `slot_payload_bytes` at the data
//!   rate, SIFS, an ACK at the basic rate, and one slot time of guard (propagation and carrier
//!   sense latency); for ZMAC+ also the longest priority wait `2T + SIFS` and one beacon `T`.
//!   802.11b at 11 Mbit/s, 1500-byte packets: 50 + 32·20 + 1310 + 10 + 304 + 20 = 2334 µs.
//! - *Set-up* (`mac::drand`): from time zero until the slot assignment completes
//!   ([`SetupWatch`], `setup_s = "auto"`) or for a fixed `setup_s` seconds, nodes exchange STATE
//!   announcements (broadcast frames at the basic rate, sent with the slot access below as
//!   non-owners, one every `announce_interval_slots` slots on average, uniformly jittered
//!   between half and 1.5 times that) and colour themselves; data frames wait until the set-up
//!   phase ends. Its cost is in the node counters (`zmac_ctrl_frames`, `zmac_ctrl_airtime_s`).
//! - *Access*: a node with something to send contends at the next slot boundary `t_s`. The
//!   slot's owner draws its backoff uniformly in `[0, To)`, every other node in `[To, Tno)`
//!   (units of the PHY slot time; Z-MAC's To = 8, Tno = 32), and transmits at
//!   `t_s + DIFS + backoff` if the medium has stayed idle since `t_s` (physical carrier sense;
//!   two nodes that pick the same backoff collide). Otherwise it gives up the slot and tries
//!   again at the next one it may use. The exchange itself (DATA, ACK timeout, retry limit,
//!   duplicate filter) is the 802.11 one of `mac::Mac`; a failed frame is retried in a later
//!   slot with the same rules (no window doubling: Z-MAC's windows are fixed).
//! - *Contention levels*: a node in low contention (LCL) may contend in every slot. A node that
//!   loses `ecn_loss_threshold` DATA frames in a row (no ACK) broadcasts an explicit contention
//!   notification (ECN) — at most one per half HCL period. Every one-hop neighbour that decodes it
//!   forwards the ECN once (simplification: Z-MAC forwards only from the neighbour on the
//!   originator's routing path; the MAC does not see routes, and the receiver of a flow whose
//!   frames all collide never decodes data from its sender, so "on the path" cannot be learnt
//!   from the data either); a node that receives a forwarded ECN (a two-hop neighbour of the originator, the potential hidden
//!   terminal) enters high contention (HCL) for `hcl_duration_s`. In HCL a node contends only in
//!   slots it owns or that a one-hop neighbour owns (Z-MAC §3.3), so it stays out of the slots
//!   of its two-hop neighbours. ECN frames use the same slot access, without the HCL
//!   restriction.
//!
//! **ZMAC+** (DPCLO §IV-F, Fig. 1): four MAC levels, 0 low, 1 medium, 2 high, 3 reserved for
//! routing/control messages. At the slot start a node waits, depending on the level of the
//! packet it would send (its highest non-empty level): control 0, high SIFS, medium `T + SIFS`,
//! low `2T + SIFS`, `T` being the beacon's airtime. If the medium turns busy during the wait it
//! defers to the next slot; otherwise it transmits a beacon (a real frame of `beacon_bytes`
//! PSDU bytes at the basic rate — 0 by default: the PLCP preamble and header only, 192 µs on
//! 802.11b with the long preamble, 20 µs on 802.11a — that neighbours sense) and then runs the
//! Z-MAC contention above, counted from the end of its beacon (the medium must stay idle from
//! SIFS after the beacon's end, so that beacons of equal priority sent in the same instant, which
//! end within a propagation delay of each other, do not make each other's senders defer).
//!
//! Randomness: streams `zmac.drand` (priorities) and `zmac.access` (backoffs, announcement
//! jitter). The payload of STATE and ECN frames is carried in a [`Board`] shared by the MACs of
//! one world, indexed by sender: a sender has at most one frame on the air, writes its entry
//! when the frame goes on the air and receivers read it when they decode the frame; the bytes
//! on the air are the frame's length.

use std::sync::{Arc, Mutex};

use rand::Rng;

use super::drand::{Colouring, Entry};
use super::frame::{
    BROADCAST, DATA_OVERHEAD_BYTES, LLC_SNAP_BYTES, NO_PACKET, ZMAC_ECN_PAYLOAD_BYTES,
    ZMAC_STATE_ENTRY_BYTES, ZMAC_STATE_HEADER_BYTES,
};
use super::{After, Frame, FrameKind, Mac, MacAction, State};
use crate::phy::PhyTiming;
use crate::sim::rng::Stream;
use crate::sim::{EventQueue, SimTime, TimerKind};

/// The payload a node's current (or last) Z-MAC control frame carries.
#[derive(Debug, Clone, Default)]
pub struct Announcement {
    pub entries: Vec<Entry>,
    pub ecn_origin: u32,
}

/// Control-frame payloads of one world's MACs, by sender.
pub type Board = Arc<Mutex<Vec<Announcement>>>;

pub fn new_board(nodes: usize) -> Board {
    Arc::new(Mutex::new(vec![Announcement::default(); nodes]))
}

/// Z-MAC settings shared by all nodes.
#[derive(Debug, Clone, Copy)]
pub struct ZmacParams {
    /// ZMAC+ priority waits and beacons on top of Z-MAC.
    pub plus: bool,
    pub to_slots: u32,
    pub tno_slots: u32,
    /// TDMA slot length.
    pub slot: SimTime,
    pub setup_end: SimTime,
    /// Nodes take slots only after this (they first learn their neighbourhood).
    pub discovery_end: SimTime,
    pub announce_interval_slots: u32,
    pub ecn_loss_threshold: u32,
    pub hcl_duration: SimTime,
    pub beacon_bytes: u32,
}

/// An `"auto"` set-up phase (`mac.zmac.setup_s = "auto"`), watched by the world
/// (`Event::ZmacSetupCheck`, once per TDMA slot from the end of discovery): the phase ends at the
/// slot boundary after the slot assignment completes ([`super::drand::complete`]: every node
/// holds a slot and knows its two-hop neighbours' current slots and frames), at the latest at
/// `max_end` (`setup_max_s`).
///
/// Z-MAC's set-up is a network-wide phase run once at deployment, before normal operation
/// (neighbour discovery, DRAND, local frame exchange; Rhee et al. SenSys 2005 §3, ToN 2008
/// §III), and DRAND runs until every node has decided its slot (DRAND's rounds continue while
/// any node is undecided). xlayer takes that reading: one end for every node, at the instant
/// the assignment is complete. How the nodes would learn that instant is not modelled (like the
/// shared clock: DPCLO §V assumes tight synchronisation); the colouring itself is the simulated
/// message exchange of `mac::drand`. The check reads every node once per slot, during set-up
/// only.
#[derive(Debug, Clone, Copy)]
pub struct SetupWatch {
    pub slot: SimTime,
    pub max_end: SimTime,
    /// When the set-up phase ended (the bound when the assignment never completed).
    pub end: Option<SimTime>,
    /// Whether the assignment completed before the bound.
    pub completed: bool,
    /// Start DCLO's matching intervals (`Event::BackpressureTick`) when the set-up ends.
    pub start_tick: bool,
}

/// The TDMA slot length: one data exchange (see the module doc).
#[allow(clippy::too_many_arguments)]
pub fn slot_length(
    timing: &PhyTiming,
    data_rate_mbps: f64,
    basic_rate_mbps: f64,
    tno_slots: u32,
    slot_payload_bytes: u32,
    plus: bool,
    beacon_bytes: u32,
) -> SimTime {
    let difs = timing.sifs + SimTime(2 * timing.slot.ns());
    let data = timing.duration(
        DATA_OVERHEAD_BYTES + LLC_SNAP_BYTES + slot_payload_bytes,
        data_rate_mbps,
    );
    let ack = timing.duration(super::frame::ACK_BYTES, basic_rate_mbps);
    let mut l = difs
        + SimTime(tno_slots as u64 * timing.slot.ns())
        + data
        + timing.sifs
        + ack
        + timing.slot;
    if plus {
        let t = timing.duration(beacon_bytes, basic_rate_mbps);
        l = l + SimTime(3 * t.ns()) + timing.sifs;
    }
    l
}

/// Per-node Z-MAC counters.
#[derive(Debug, Default, Clone, Copy)]
pub struct ZmacStats {
    pub state_tx: u64,
    pub ecn_tx: u64,
    pub ecn_forwarded: u64,
    pub beacons_tx: u64,
    /// Airtime of this node's STATE, ECN and beacon frames.
    pub ctrl_airtime_ns: u64,
    /// Time spent in HCL (scheduled; the last period may run past the end of the run).
    pub hcl_ns: u64,
    /// Slots contended in as owner / as non-owner (ZMAC+: including the priority wait).
    pub owner_attempts: u64,
    pub non_owner_attempts: u64,
    /// DATA frames put on the air in an owned / a not owned slot.
    pub owner_data_tx: u64,
    pub non_owner_data_tx: u64,
    /// Attempts given up because the medium turned busy before the backoff or wait ended.
    pub deferrals: u64,
    /// Slots skipped because HCL forbids contending in them.
    pub hcl_skips: u64,
    /// When this node's slot or frame last changed during set-up (its colouring settled).
    pub settled_at: SimTime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    State,
    Ecn,
    Data(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// ZMAC+ priority wait before the beacon.
    Wait,
    /// Z-MAC backoff.
    Contend,
}

#[derive(Debug, Clone, Copy)]
struct Attempt {
    /// Since when the medium must have stayed idle.
    origin: SimTime,
    phase: Phase,
    what: What,
    owner: bool,
}

/// A node's Z-MAC state.
#[derive(Debug)]
pub struct Zmac {
    pub p: ZmacParams,
    pub colour: Colouring,
    board: Board,
    rng: Stream,
    /// Slot index from which the next STATE announcement is due (set-up phase).
    state_due: u64,
    /// Originator of an ECN waiting to go out (ours or one to forward).
    ecn_pending: Option<u32>,
    slot_armed: bool,
    attempt: Option<Attempt>,
    /// A control frame of ours is on the air.
    ctl_on_air: Option<What>,
    busy: bool,
    idle_edge: SimTime,
    losses: u32,
    last_ecn: Option<SimTime>,
    hcl_until: SimTime,
    pub stats: ZmacStats,
}

impl Zmac {
    pub fn new(id: u32, p: ZmacParams, board: Board, seed: u64) -> Zmac {
        use crate::sim::rng::stream;
        let priority: u32 = stream(seed, id, "zmac.drand").gen();
        let mut rng = stream(seed, id, "zmac.access");
        let state_due = rng.gen_range(0..p.announce_interval_slots.max(1)) as u64;
        Zmac {
            p,
            colour: Colouring::new(id, priority),
            board,
            rng,
            state_due,
            ecn_pending: None,
            slot_armed: false,
            attempt: None,
            ctl_on_air: None,
            busy: false,
            idle_edge: SimTime::ZERO,
            losses: 0,
            last_ecn: None,
            hcl_until: SimTime::ZERO,
            stats: ZmacStats::default(),
        }
    }

    fn slot_of(&self, t: SimTime) -> u64 {
        t.ns() / self.p.slot.ns()
    }

    fn slot_start(&self, k: u64) -> SimTime {
        SimTime(k * self.p.slot.ns())
    }

    pub fn in_hcl(&self, now: SimTime) -> bool {
        now < self.hcl_until
    }

    fn enter_hcl(&mut self, now: SimTime) {
        let until = now + self.p.hcl_duration;
        let from = self.hcl_until.max(now);
        if until > from {
            self.stats.hcl_ns += (until - from).ns();
            self.hcl_until = until;
        }
    }
}

impl Mac {
    /// Switches this MAC to Z-MAC / ZMAC+ access (builder) and arms its first slot.
    pub fn enable_zmac(&mut self, z: Zmac, q: &mut EventQueue) {
        self.access = super::Access::Zmac(Box::new(z));
        self.zmac_poke(SimTime::ZERO, q);
    }

    pub fn zmac(&self) -> Option<&Zmac> {
        self.access.zmac()
    }

    /// The set-up phase ends at `end` (an `"auto"` set-up completed): data may go from then on.
    pub fn zmac_end_setup(&mut self, now: SimTime, end: SimTime, q: &mut EventQueue) {
        let z = self.access.zmac_mut().expect("zmac mode");
        z.p.setup_end = end;
        if z.slot_armed {
            // armed for data at the bound, or for a STATE announcement past the new end
            z.slot_armed = false;
            self.zmac_poke(now, q);
        }
    }

    /// Whether a Z-MAC node will read carrier sense before its next slot: only an attempt
    /// reads it (at its access: has the medium stayed idle since the attempt's origin, the
    /// slot's start?) and the exchange it opens (a response timeout). An idle node with no
    /// attempt reads nothing until its next slot opens one, and what the attempt's access
    /// asks is answered by carrier sense at its origin and the reports after it, so the
    /// reports before do not matter then: the world gives such a node no weak-interference
    /// wake-ups (`Phy::weak_wake`), and reports carrier sense to it afresh where an attempt
    /// opens ([`Mac::listens_to_carrier_sense`]). What a report does besides, a poke, arms
    /// nothing there: every call into the MAC ends with one, a slot once armed stays armed
    /// until it fires, and a poke that wants no slot wants none later.
    pub(super) fn zmac_listens(&self) -> bool {
        self.state != State::Idle || self.access.zmac().is_some_and(|z| z.attempt.is_some())
    }

    fn zmac_has_data(&self) -> bool {
        debug_assert_eq!(
            self.queued as usize,
            self.levels.iter().map(|l| l.queue.len()).sum::<usize>()
        );
        self.queued > 0
    }

    /// Z-MAC's part of `update`: tracks when the medium last became idle and arms the next slot
    /// when there is something to send.
    pub(super) fn zmac_update(&mut self, now: SimTime, q: &mut EventQueue) {
        let busy = self.phy_busy;
        let z = self.access.zmac_mut().expect("zmac mode");
        if busy != z.busy {
            z.busy = busy;
            if !busy {
                z.idle_edge = now;
            }
        }
        if self.state == State::Idle && z.attempt.is_none() {
            self.zmac_poke(now, q);
        }
    }

    /// Arms the slot timer at the first slot boundary (from `now` on) where there is something to
    /// send.
    fn zmac_poke(&mut self, now: SimTime, q: &mut EventQueue) {
        let z = self.access.zmac().expect("zmac mode");
        if z.slot_armed || z.attempt.is_some() {
            return;
        }
        // After the test above: most pokes find the slot armed.
        let has_data = self.zmac_has_data();
        let z = self.access.zmac().expect("zmac mode");
        if !has_data && z.ecn_pending.is_none() && now >= z.p.setup_end {
            // Nothing to send and set-up over: no slot is wanted. Most pokes of a node with
            // nothing queued end here, before the two 64-bit divisions below (a poke follows
            // every change of carrier sense).
            return;
        }
        let l = z.p.slot.ns();
        let next = now.ns().div_ceil(l);
        let setup_slots = z.p.setup_end.ns().div_ceil(l);
        let mut want: Option<u64> = None;
        if z.ecn_pending.is_some() {
            want = Some(next);
        }
        if has_data {
            let k = next.max(setup_slots);
            want = Some(want.map_or(k, |w| w.min(k)));
        }
        if now < z.p.setup_end {
            let k = next.max(z.state_due);
            if k < setup_slots {
                want = Some(want.map_or(k, |w| w.min(k)));
            }
        }
        if let Some(k) = want {
            let at = z.slot_start(k);
            self.access.zmac_mut().expect("zmac mode").slot_armed = true;
            self.timer(q, TimerKind::ZmacSlot, at);
        }
    }

    /// A slot boundary: decide whether and how to contend in this slot.
    pub(super) fn zmac_slot(&mut self, now: SimTime, q: &mut EventQueue) {
        let top = (0..self.levels.len())
            .rev()
            .find(|&i| !self.levels[i].queue.is_empty());
        let idle_state = self.state == State::Idle;
        let levels = self.levels.len();
        let sifs = self.sifs();
        let difs = sifs + SimTime(2 * self.slot().ns());
        let slot_time = self.slot();
        let beacon = self.params.timing.duration(
            self.access.zmac().unwrap().p.beacon_bytes,
            self.params.basic_rate_mbps,
        );
        let z = self.access.zmac_mut().expect("zmac mode");
        z.slot_armed = false;
        if !idle_state || z.attempt.is_some() {
            return; // an exchange is under way; `update` re-arms when it ends
        }
        let k = z.slot_of(now);
        let setup = now < z.p.setup_end;
        if setup {
            let may_decide = now >= z.p.discovery_end;
            if z.colour.step(may_decide) {
                z.stats.settled_at = now;
            }
        }
        let what = if let Some(_o) = z.ecn_pending {
            What::Ecn
        } else if setup && k >= z.state_due {
            What::State
        } else if let (false, Some(w)) = (setup, top) {
            What::Data(w)
        } else {
            self.zmac_poke(now + SimTime(1), q);
            return;
        };
        let owner = !setup && z.colour.owns(k);
        if let What::Data(_) = what {
            if !owner && z.in_hcl(now) && !z.colour.one_hop_owns(k) {
                z.stats.hcl_skips += 1;
                self.zmac_poke(now + SimTime(1), q);
                return;
            }
        }
        // ZMAC+ priority of what we would send: control frames go at the top level.
        let wait = if z.p.plus {
            let level = match what {
                What::Data(w) => w.min(levels - 1),
                _ => 3,
            };
            Some(match level {
                3.. => SimTime::ZERO,
                2 => sifs,
                1 => beacon + sifs,
                _ => SimTime(2 * beacon.ns()) + sifs,
            })
        } else {
            None
        };
        let mut a = Attempt {
            origin: now,
            phase: Phase::Contend,
            what,
            owner,
        };
        let at = match wait {
            Some(w) => {
                a.phase = Phase::Wait;
                now + w
            }
            None => now + difs + SimTime(Self::zmac_backoff(z, owner) * slot_time.ns()),
        };
        if owner {
            z.stats.owner_attempts += 1;
        } else {
            z.stats.non_owner_attempts += 1;
        }
        z.attempt = Some(a);
        self.timer(q, TimerKind::ZmacAccess, at);
    }

    fn zmac_backoff(z: &mut Zmac, owner: bool) -> u64 {
        let (lo, hi) = if owner {
            (0, z.p.to_slots)
        } else {
            (z.p.to_slots, z.p.tno_slots)
        };
        if hi > lo {
            z.rng.gen_range(lo..hi) as u64
        } else {
            lo as u64
        }
    }

    /// The priority wait or the backoff ended: transmit if the medium stayed idle.
    pub(super) fn zmac_access(
        &mut self,
        now: SimTime,
        q: &mut EventQueue,
        out: &mut Vec<MacAction>,
    ) {
        let idle_state = self.state == State::Idle;
        let phy_busy = self.phy_busy;
        let sensed_edge = self.sensed_edge;
        let id = self.id;
        let basic = self.params.basic_rate_mbps;
        let z = self.access.zmac_mut().expect("zmac mode");
        let Some(a) = z.attempt.take() else { return };
        // Idle since the attempt's origin: by the signals carrier sense followed with events
        // (`busy`, `idle_edge`) and by those the PHY keeps in bulk (`sensed_edge`).
        let idle = idle_state
            && !phy_busy
            && !z.busy
            && z.idle_edge <= a.origin
            && sensed_edge.is_some_and(|e| e <= a.origin);
        if !idle {
            z.stats.deferrals += 1;
            self.zmac_poke(z_next(now), q);
            return;
        }
        match a.phase {
            Phase::Wait => {
                let bytes = z.p.beacon_bytes;
                let t = self.params.timing.duration(bytes, basic).ns();
                let z = self.access.zmac_mut().expect("zmac mode");
                z.stats.beacons_tx += 1;
                z.stats.ctrl_airtime_ns += t;
                z.attempt = Some(Attempt {
                    phase: Phase::Contend,
                    ..a
                });
                self.state = State::Transmitting(After::ZmacBeacon);
                out.push(MacAction::Transmit(zmac_frame(
                    FrameKind::Beacon,
                    id,
                    bytes,
                    basic,
                )));
            }
            Phase::Contend => match a.what {
                What::Data(w) => {
                    if self.levels[w].queue.is_empty() {
                        self.zmac_poke(now, q);
                        return;
                    }
                    if a.owner {
                        z.stats.owner_data_tx += 1;
                    } else {
                        z.stats.non_owner_data_tx += 1;
                    }
                    self.transmit_head(w, out);
                }
                What::State | What::Ecn => {
                    let mut board = z.board.lock().expect("zmac board");
                    let entry = &mut board[id as usize];
                    let (kind, bytes) = if a.what == What::State {
                        z.colour.announce(&mut entry.entries);
                        z.stats.state_tx += 1;
                        (
                            FrameKind::ZmacState,
                            ZMAC_STATE_HEADER_BYTES
                                + ZMAC_STATE_ENTRY_BYTES * entry.entries.len() as u32,
                        )
                    } else {
                        let o = z.ecn_pending.expect("an ECN is pending");
                        entry.ecn_origin = o;
                        if o == id {
                            z.stats.ecn_tx += 1;
                        } else {
                            z.stats.ecn_forwarded += 1;
                        }
                        (FrameKind::ZmacEcn, ZMAC_ECN_PAYLOAD_BYTES)
                    };
                    drop(board);
                    let bytes = DATA_OVERHEAD_BYTES + bytes;
                    z.stats.ctrl_airtime_ns += self.params.timing.duration(bytes, basic).ns();
                    z.ctl_on_air = Some(a.what);
                    self.state = State::Transmitting(After::ZmacControl);
                    out.push(MacAction::Transmit(zmac_frame(kind, id, bytes, basic)));
                }
            },
        }
    }

    /// Our beacon or control frame ended.
    pub(super) fn zmac_tx_end(&mut self, now: SimTime, after: After, q: &mut EventQueue) {
        let sifs = self.sifs();
        let difs = sifs + SimTime(2 * self.slot().ns());
        let slot_time = self.slot();
        let z = self.access.zmac_mut().expect("zmac mode");
        self.state = State::Idle;
        match after {
            After::ZmacBeacon => {
                // Beacons of other nodes that started in the same instant end within their
                // propagation delay: the medium must be idle from SIFS after our beacon on.
                let owner = z.attempt.as_mut().map(|a| {
                    a.origin = now + sifs;
                    a.owner
                });
                if let Some(owner) = owner {
                    let b = Self::zmac_backoff(z, owner);
                    let at = now + difs + SimTime(b * slot_time.ns());
                    self.timer(q, TimerKind::ZmacAccess, at);
                }
            }
            _ => match z.ctl_on_air.take() {
                Some(What::State) => {
                    let i = z.p.announce_interval_slots.max(2) as u64;
                    let k = z.slot_of(now);
                    z.state_due = k + z.rng.gen_range(i / 2..=i + i / 2);
                }
                Some(What::Ecn) => z.ecn_pending = None,
                _ => {}
            },
        }
    }

    /// A decoded Z-MAC frame (beacon, STATE, ECN) from `f.src`.
    pub(super) fn zmac_rx(&mut self, now: SimTime, f: &Frame) {
        let id = self.id;
        let z = self.access.zmac_mut().expect("zmac mode");
        match f.kind {
            FrameKind::ZmacState => {
                let board = z.board.lock().expect("zmac board");
                z.colour.on_announcement(&board[f.src as usize].entries);
                drop(board);
                if now < z.p.setup_end {
                    let changed = z.colour.step(now >= z.p.discovery_end);
                    if changed {
                        z.stats.settled_at = now;
                        // announce a new slot soon
                        let k = z.slot_of(now) + 1 + z.rng.gen_range(0..4u64);
                        z.state_due = z.state_due.min(k);
                    }
                }
            }
            FrameKind::ZmacEcn => {
                let o = z.board.lock().expect("zmac board")[f.src as usize].ecn_origin;
                if o == f.src {
                    if z.ecn_pending.is_none() {
                        z.ecn_pending = Some(o);
                    }
                } else if o != id {
                    z.enter_hcl(now);
                }
            }
            _ => {}
        }
    }

    /// A DATA frame of ours went unacknowledged (`lost`) or was acknowledged.
    pub(super) fn zmac_outcome(&mut self, now: SimTime, lost: bool) {
        let id = self.id;
        let z = self.access.zmac_mut().expect("zmac mode");
        if !lost {
            z.losses = 0;
            return;
        }
        z.losses += 1;
        let half = SimTime(z.p.hcl_duration.ns() / 2);
        if z.losses >= z.p.ecn_loss_threshold
            && z.ecn_pending.is_none()
            && z.last_ecn.is_none_or(|t| now >= t + half)
        {
            z.ecn_pending = Some(id);
            z.last_ecn = Some(now);
            z.losses = 0;
        }
    }
}

/// The earliest instant after `now` at which the next slot may be armed.
fn z_next(now: SimTime) -> SimTime {
    now + SimTime(1)
}

fn zmac_frame(kind: FrameKind, src: u32, bytes: u32, rate_mbps: f64) -> Frame {
    Frame {
        kind,
        src,
        dst: BROADCAST,
        duration: SimTime::ZERO,
        seq: 0,
        tid: 0,
        retry: false,
        packet: NO_PACKET,
        bytes,
        rate_mbps,
        code: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::radio::{Preamble, Standard};

    #[test]
    fn slot_holds_one_exchange_at_the_standards_timing() {
        let t = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        // DIFS 50 + 32 x 20 + DATA (192 + 1536 B at 11 Mbit/s = 1118) + SIFS 10 + ACK 304 + 20.
        assert_eq!(
            slot_length(&t, 11.0, 1.0, 32, 1500, false, 0),
            SimTime::from_us(2334)
        );
        // ZMAC+: + 3 beacons of 192 us (PLCP only) + SIFS.
        assert_eq!(
            slot_length(&t, 11.0, 1.0, 32, 1500, true, 0),
            SimTime::from_us(2920)
        );
    }
}
