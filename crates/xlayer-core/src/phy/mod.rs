//! The physical layer: propagation, noise, SINR reception, rates and error models.
//!
//! Depends only on `sim` and the scenario types. One [`Phy`] per node tracks every signal
//! arriving at its antenna. It locks onto a frame whose power reaches the reception threshold
//! while it is idle, and integrates the frame's SINR over *chunks* of constant interference
//! (cumulative interference of every overlapping signal, plus thermal noise). At the frame's end
//! the error model decides: with `ber`, the frame survives with probability
//! `Π_chunks (1 − BER(SINR))^bits`; with `threshold`, it survives if its SINR never fell below the
//! rate's threshold. A stronger frame arriving during the current frame's PLCP preamble takes the
//! receiver over when it is `capture_db` stronger (preamble capture). Carrier sense is busy while
//! the node transmits, while it receives a frame, or while the total received energy reaches the
//! carrier-sense threshold — a threshold apart from the reception one, so a 550 m carrier-sense
//! range can surround a 250 m reception range as in ns-2.
//!
//! # Weak interference
//!
//! A signal below both the reception and the carrier-sense threshold at a receiver (after fading)
//! can neither be decoded nor, alone, make the medium busy; in a dense network such signals are
//! most of what a transmission delivers (`scenarios/random-200.toml`: 190 receivers per frame, 14
//! that can decode it). With [`WeakInterference::Bulk`] they get no events of their own: the
//! sender hands each weak receiver the signal's arrival, end and power ([`Phy::add_weak`]), and
//! the receiver keeps it in a short list until it is over. What it changes is kept exactly:
//!
//! - **SINR.** When a reception's chunk closes (at the next event of the receiver), the span is
//!   cut at every weak arrival and end inside it and each piece integrated with the weak power
//!   then on the air — the same pieces and SINRs as one event per arrival and end would make. The
//!   sums are taken in another order, so a result may differ in the last bits of a probability.
//! - **Carrier sense** is energy detection on the total power. A node not transmitting nor
//!   receiving whose event-driven energy is below the threshold, but would reach it with every
//!   weak signal of its list added, is *ambiguous*: the weak signals may tip it either way. Only
//!   then does it schedule a wake-up ([`Event::WeakWake`](crate::sim::Event)), at the first weak
//!   arrival or end where the sum crosses the threshold (an idle medium can turn busy only at an
//!   arrival, a busy one idle only at an end), where the MAC learns the medium state as it would
//!   have at that signal's event. At the other arrivals and ends, and outside that band, weak
//!   signals do not change carrier sense, and the MAC is not told of them (with events it is,
//!   but nothing changes for it). Nor is a MAC that reads no carrier sense until its next call
//!   could make it listen: an idle Z-MAC node with no attempt gets no wake-ups, and carrier
//!   sense afresh where its next slot opens an attempt ([`PhyConfig::wake_every_node`]; 87 %
//!   of the wake-ups, 18 % of the events, in the first 100 s of `benches/dpclo-fig8.toml`).
//!
//! **Carrier-sense-only signals** (at least the carrier-sense threshold, below the reception
//! one: the 550 m ring around ns-2's 250 m reception range) go in bulk too where every MAC is
//! Z-MAC's ([`PhyConfig::sensed_below_mw`]), which reads carrier sense only when it decides: at an
//! access (has the medium stayed idle since the attempt's origin?) and at a response timeout (is
//! a frame arriving?). They count in a reception's SINR as weak signals do, stay out of
//! [`Phy::busy`] and of wake-ups, and the MAC asks [`Phy::sensed_edge`] when it decides: each
//! alone makes the medium busy, so the medium was idle over an interval exactly when the signals
//! with events left it idle and no sensed one was on the air in it. The runs are those of one
//! event per arrival and end to the last bit on every shipped Z-MAC scenario
//! (`scripts/result_hashes.py`), with 37-57 % fewer events. DCF counts its backoff down through
//! every busy period and keeps the events.
//!
//! Equal-time order is the one thing that moves: a weak arrival or end at the instant of another
//! event counts as already there. [`WeakInterference::Events`] keeps one start and one end event
//! per receiver for every signal, the reference `validation/weak_interference.py` holds the bulk
//! path against.
//!
//! Thermal noise: `−174 dBm/Hz + 10 log10(bandwidth) + noise figure` (ns-3 `YansWifiPhy`, noise
//! figure default 7 dB). Injected noise ([`noise`], the scenario's `[[noise]]`) adds to it while
//! a source is on; carrier sense counts it only for sources that ask.

pub mod error_model;
pub mod fec;
pub mod noise;
pub mod propagation;
pub mod radio;
pub mod timing;
pub mod tuning;

use rand::Rng;

use crate::sim::rng::Stream;
use crate::sim::SimTime;
use error_model::{grid_pos, ln_ok_per_bit_at, Modulation};
pub use radio::WeakInterference;
use radio::{ErrorModelKind, Standard};
pub use timing::{FrameTiming, PhyTiming};

/// Weak signals on the air or coming that [`Phy::next_weak_wake`] sweeps in time order (a
/// signal's index in the sweep's lists takes 8 bits); a longer list takes
/// [`Phy::idle_turn_exact`].
const TURN_SIGNALS: usize = 256;

/// The lists [`Phy::next_weak_wake`] sorts and sweeps, kept by its caller (the [`World`]
/// holds one for all nodes) so that a call neither allocates nor clears arrays on the stack.
/// The stack held 24 signals; longer lists (10,000 calls in the first 100 s of
/// `benches/dpclo-fig8.toml`, 52 signals on average) took the quadratic exact search.
///
/// [`World`]: crate::world::World
#[derive(Debug, Default)]
pub struct TurnScratch {
    arrivals: Vec<u64>,
    ends: Vec<u64>,
    powers: Vec<f64>,
}

/// Lists in bulk (weak and carrier-sense-only together) up to this long have each piece of a
/// reception's chunk summed signal by signal ([`Phy::close_chunk`]); longer ones are swept.
const SCAN_SIGNALS: usize = 16;
/// Lists up to this long are swept with their arrivals and ends sorted on the stack; longer
/// ones are summed signal by signal.
const SWEEP_SIGNALS: usize = 128;

/// Sorts a few nearly sorted integers.
#[inline]
fn insertion_sort(v: &mut [u64]) {
    for i in 1..v.len() {
        let e = v[i];
        let mut k = i;
        while k > 0 && v[k - 1] > e {
            v[k] = v[k - 1];
            k -= 1;
        }
        v[k] = e;
    }
}

/// Calls of [`Phy::idle_turn_exact`] (a test checks that it ran).
#[cfg(test)]
static TURN_EXACT_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Radio parameters shared by every node of a scenario.
#[derive(Debug, Clone)]
pub struct PhyConfig {
    pub standard: Standard,
    pub timing: PhyTiming,
    pub error_model: ErrorModelKind,
    pub rx_threshold_mw: f64,
    pub cs_threshold_mw: f64,
    pub noise_mw: f64,
    /// Power ratio for preamble capture (`None`: no capture).
    pub capture_ratio: Option<f64>,
    /// Preamble detection (`None`: every frame reaching `rx_threshold_mw` is locked onto).
    pub preamble_detection: Option<PreambleDetection>,
    /// Linear SINR thresholds of the threshold model, per rate of the standard.
    pub sinr_thresholds: Vec<(f64, f64)>,
    /// A signal arriving with less power than this is weak interference, delivered in bulk (see
    /// the module documentation): the lower of the two thresholds under
    /// [`WeakInterference::Bulk`], 0 mW (nothing is weak) under [`WeakInterference::Events`].
    pub weak_below_mw: f64,
    /// A signal from `weak_below_mw` up to this power is carrier-sense-only and delivered in
    /// bulk too ([`Phy::add_sensed`]): the reception threshold where every MAC reads carrier
    /// sense only when it decides (Z-MAC; see the module documentation), else `weak_below_mw`
    /// (no such band).
    pub sensed_below_mw: f64,
    /// Weak-interference wake-ups ([`Phy::weak_wake`]) for every node; false (the default):
    /// none where the MAC reads no carrier sense (an idle Z-MAC node with no attempt,
    /// `Mac::listens_to_carrier_sense`), which reports it afresh where an attempt opens. True
    /// is the reference `tests/weak_interference.rs` holds that to (the same runs to the bit).
    pub wake_every_node: bool,
}

/// ns-3's `ThresholdPreambleDetectionModel` (see the module documentation, "Preamble detection").
#[derive(Debug, Clone, Copy)]
pub struct PreambleDetection {
    /// Linear SINR a preamble needs to be detected (ns-3 `Threshold`, 4 dB by default).
    pub min_sinr: f64,
    /// Power a preamble needs to be detected (mW; ns-3 `MinimumRssi`, −82 dBm by default).
    pub min_rssi_mw: f64,
    /// How long after a frame's start a later arrival can still undo its detection: ns-3 3.44's
    /// `WifiPhy::GetPreambleDetectionDuration`, 4 µs.
    pub window: SimTime,
}

impl PreambleDetection {
    /// ns-3 3.44's preamble detection period (`WifiPhy::GetPreambleDetectionDuration`).
    pub const WINDOW: SimTime = SimTime::from_us(4);
}

impl PhyConfig {
    fn sinr_threshold(&self, rate: f64) -> f64 {
        self.sinr_thresholds
            .iter()
            .find(|(r, _)| *r == rate)
            .map(|(_, t)| *t)
            .unwrap_or(1.0)
    }
}

/// What a receiver needs to know about a transmission on the air.
#[derive(Debug, Clone, Copy)]
pub struct PhyTx {
    pub src: u32,
    pub start: SimTime,
    pub rate_mbps: f64,
    pub timing: FrameTiming,
}

#[derive(Debug, Clone, Copy, Default)]
struct Signal {
    tx: u32,
    power_mw: f64,
}

/// The signals with events on the air at a receiver, in arrival order (with `swap_remove`'s
/// reordering): inline while they are few, so the event that touches them reads the node's own
/// cache lines rather than a heap block of its own; all of them in `spill` while more are on
/// the air (its capacity is kept, so steady state allocates nothing). Laid out in declaration
/// order (`repr(C)`): the length and the inline signals last, where the [`Phy`]'s hot fields are.
#[derive(Debug, Default)]
#[repr(C)]
struct SignalList {
    spill: Vec<Signal>,
    inline: [Signal; SignalList::INLINE],
    len: u32,
    spilled: bool,
}

impl SignalList {
    /// A node of a grid hears its four neighbours.
    const INLINE: usize = 4;

    #[inline]
    fn as_slice(&self) -> &[Signal] {
        if self.spilled {
            &self.spill
        } else {
            &self.inline[..self.len as usize]
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    fn push(&mut self, s: Signal) {
        if self.spilled {
            self.spill.push(s);
        } else if (self.len as usize) < Self::INLINE {
            self.inline[self.len as usize] = s;
        } else {
            self.spill.clear();
            self.spill.extend_from_slice(&self.inline);
            self.spill.push(s);
            self.spilled = true;
        }
        self.len += 1;
    }

    /// `Vec::swap_remove`: the last signal takes the place of the `i`th.
    #[inline]
    fn swap_remove(&mut self, i: usize) -> Signal {
        self.len -= 1;
        if self.spilled {
            let gone = self.spill.swap_remove(i);
            if self.spill.len() <= Self::INLINE {
                self.inline[..self.spill.len()].copy_from_slice(&self.spill);
                self.spill.clear();
                self.spilled = false;
            }
            gone
        } else {
            let last = self.len as usize;
            let gone = self.inline[i];
            self.inline[i] = self.inline[last];
            gone
        }
    }
}

/// A weak signal at a receiver: on the air here over `[start, end)`.
#[derive(Debug, Clone, Copy)]
struct WeakSignal {
    start: SimTime,
    end: SimTime,
    power_mw: f64,
}

#[derive(Debug, Clone, Copy)]
struct Reception {
    tx: u32,
    power_mw: f64,
    /// The frame's arrival here (its preamble detection period starts then).
    start: SimTime,
    header_end: SimTime,
    end: SimTime,
    rate_mbps: f64,
    header_mod: Modulation,
    payload_mod: Modulation,
    header_bits_per_ns: f64,
    payload_bits_per_ns: f64,
    chunk_start: SimTime,
    /// Interference of the signals with events (the weak ones are added piece by piece).
    interference_mw: f64,
    min_sinr: f64,
    ln_ok: f64,
    /// Injected noise was on at some time during the reception.
    noisy: bool,
    /// The largest thermal plus injected noise over the reception (mW).
    noise_mw: f64,
    /// At this SINR and above a piece loses no bit of the header's nor of the payload's
    /// modulation ([`error_model::exact_from_sinr`]): `ln_ok` is left as it is.
    exact_sinr: f64,
    /// A chunk whose lowest possible SINR is at least this is closed whole, not piece by
    /// piece: `exact_sinr` when nothing reads `min_sinr` and the bit-error model decides,
    /// else infinite ([`Phy::close_chunk`]).
    whole_sinr: f64,
}

impl Default for Reception {
    /// No frame yet: what [`Phy::last_rx`] reports before the first reception (zeros).
    fn default() -> Reception {
        Reception {
            tx: 0,
            power_mw: 0.0,
            start: SimTime::ZERO,
            header_end: SimTime::ZERO,
            end: SimTime::ZERO,
            rate_mbps: 0.0,
            header_mod: Modulation::Dbpsk,
            payload_mod: Modulation::Dbpsk,
            header_bits_per_ns: 0.0,
            payload_bits_per_ns: 0.0,
            chunk_start: SimTime::ZERO,
            interference_mw: 0.0,
            min_sinr: 0.0,
            ln_ok: 0.0,
            noisy: false,
            noise_mw: 0.0,
            exact_sinr: 0.0,
            whole_sinr: 0.0,
        }
    }
}

/// What the receiver measured over the last frame it finished receiving (decoded or lost;
/// [`Phy::last_rx`] says when to read it), for captures: its power, the noise (thermal plus
/// injected, the largest over the frame) and its lowest SINR, the one the threshold error model
/// compares.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RxReport {
    pub power_mw: f64,
    pub noise_mw: f64,
    pub min_sinr: f64,
}

/// The outcome of a frame this node was receiving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxOutcome {
    /// Decoded: hand transmission `tx` to the MAC.
    Ok { tx: u32 },
    /// Lost to noise or interference (the MAC then defers by EIFS).
    Error { tx: u32 },
}

/// Per-node PHY state.
///
/// Laid out in declaration order (`repr(C)`), for a node array that outgrows the caches
/// (10,000 nodes: 14 MB), where every line an event touches is a miss. Most events are a
/// signal's arrival or end at a node that neither sends nor receives it: they read the bulk
/// lists' bounds, the wake-up, the energy, the flags and the signal list, so those end the
/// `Phy`, in its last three cache lines once a [`Node`](crate::world::Node) ends it on a line,
/// where the [`Mac`](crate::mac::Mac)'s first line, with what its carrier sense reads, follows.
/// Before them the reception, which begins a line in a node (its 120 bytes take two), then the
/// rest of what a reception or injected noise reads (the noise's start and sources, the
/// decoded count, the carrier-sense-only list and its bounds); first the other counters and
/// the transmit power. The reception is a plain field with `receiving` beside the other flags
/// (an `Option` kept its tag inside the reception, a line away from them), and stays after its
/// end, which [`Phy::last_rx`] reports.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Phy {
    /// Frames reaching the reception threshold while the receiver was free whose preamble was
    /// not detected, or whose detection a later arrival undid (preamble detection only).
    pub rx_undetected: u64,
    /// Frames lost while locked whose reception overlapped injected noise (also in
    /// `rx_errors`).
    pub rx_errors_noise: u64,
    /// Frames lost while locked (interference, noise, capture, or our own transmission).
    pub rx_errors: u64,
    /// Transmit power offset from the scenario's `tx_power_dbm` (tuning layer; ≤ 0 dB), and
    /// the factor it multiplies received powers by.
    pub tx_power_offset_db: f64,
    tx_power_factor: f64,
    /// The time under injected noise before `noise_since`.
    noise_before: SimTime,
    /// The frame being received while `receiving`; after it, the last one, whose measures
    /// [`Phy::last_rx`] reports (a reception's fields stay until the next lock).
    rx: Reception,
    /// Since when injected noise has been on.
    noise_since: Option<SimTime>,
    /// How many injected-noise sources are on (at zero the sums below are reset exactly).
    injected_sources: u32,
    /// Decoded frames.
    pub rx_ok: u64,
    /// The latest end of a signal that has left `sensed`.
    sensed_last_end: SimTime,
    /// The earliest end in `sensed` (`SimTime::MAX` when empty).
    sensed_first_end: SimTime,
    /// Carrier-sense-only signals delivered in bulk ([`Phy::add_sensed`]) that are, or will be,
    /// on the air here and have not yet been integrated into the reception: each strong enough
    /// alone to make the medium busy, so they count in the SINR as `weak` does but stay out of
    /// carrier sense's sums, which [`Phy::sensed_edge`] answers for them.
    sensed: Vec<WeakSignal>,
    /// Weak signals delivered in bulk that are, or will be, on the air here and have not yet been
    /// integrated into the reception (see the module documentation). Short: the weak signals of
    /// the transmissions under way.
    weak: Vec<WeakSignal>,
    /// The sum of `weak`'s powers: more than the weak energy at any time until the list grows.
    weak_bound_mw: f64,
    /// The earliest end in `weak` (`SimTime::MAX` when empty): nothing to prune before it.
    weak_first_end: SimTime,
    /// When the scheduled wake-up is due (`None`: none scheduled).
    wake_at: Option<SimTime>,
    /// The generation of the latest wake-up scheduled (`wake_at`'s; an older one firing is
    /// stale).
    wake_generation: u32,
    /// Injected noise at the antenna now (mW), and the part of it carrier sense counts.
    injected_mw: f64,
    injected_cs_mw: f64,
    /// Total power of `signals`, kept as a running sum so carrier sense and interference cost
    /// O(1) per event; summed afresh whenever two signals or fewer remain, which bounds
    /// rounding drift.
    energy_mw: f64,
    /// Locked onto `rx`.
    receiving: bool,
    transmitting: bool,
    /// Nothing reads the lowest SINR of this node's receptions: the bit-error model decides
    /// them and no capture reports it ([`Phy::set_min_sinr_unread`]), so a chunk whose every
    /// piece loses no bit need not be cut into pieces ([`Phy::close_chunk`]). False by default.
    min_sinr_unread: bool,
    /// Whether `weak_busy` is what carrier sense answers from now until the scheduled wake-up
    /// (`wake_at`, which is no later than its first turn): set where [`Phy::next_weak_wake`]
    /// looked, kept while only weak signals are added, cleared where a change of state finds
    /// the node not ambiguous ([`Phy::weak_wake_raised`] reads it).
    weak_known: bool,
    weak_busy: bool,
    signals: SignalList,
}

// What a signal's event at a node that neither sends nor receives it reads, from `weak` on, is
// the PHY's last three cache lines once a `Node` ends the PHY on a line (see the layout note).
const _: () = assert!(std::mem::size_of::<Phy>() - std::mem::offset_of!(Phy, weak) <= 3 * 64);
// The reception's two lines (it has the default layout: rustc's choice, checked here).
const _: () = assert!(std::mem::size_of::<Reception>() <= 2 * 64);

impl Phy {
    /// Where the reception begins: a `Node` puts it on a line of its own (its 120 bytes then
    /// take two lines, not three).
    pub(crate) const RX_AT: usize = std::mem::offset_of!(Phy, rx);

    pub fn new() -> Phy {
        Phy {
            weak_first_end: SimTime::MAX,
            sensed_first_end: SimTime::MAX,
            tx_power_factor: 1.0,
            ..Default::default()
        }
    }

    /// Whether anything reads the lowest SINR of this node's receptions (false: the bit-error
    /// model decides them and no capture reports it; it is then not kept where no bit is lost).
    pub fn set_min_sinr_unread(&mut self, unread: bool) {
        self.min_sinr_unread = unread;
    }

    /// Sets the transmit power offset (dB, at most 0) and the factor it makes.
    pub fn set_tx_power_offset_db(&mut self, db: f64) {
        self.tx_power_offset_db = db;
        self.tx_power_factor = 10f64.powf(db / 10.0);
    }

    /// What received powers are multiplied by: the transmit power offset as a factor.
    #[inline]
    pub fn tx_power_factor(&self) -> f64 {
        self.tx_power_factor
    }

    /// Physical carrier sense at `now`: energy detection on the total power, weak signals
    /// included (summed only when they could tip it).
    #[inline]
    pub fn busy(&self, now: SimTime, cfg: &PhyConfig) -> bool {
        if self.transmitting || self.receiving {
            return true;
        }
        let energy = self.total_mw() + self.injected_cs_mw;
        if energy >= cfg.cs_threshold_mw {
            return true;
        }
        if self.weak.is_empty() || energy + self.weak_bound_mw < cfg.cs_threshold_mw {
            return false;
        }
        energy + self.weak_mw_at(now) >= cfg.cs_threshold_mw
    }

    /// The weak power on the air at `t` (a signal starting at `t` counts, one ending does not).
    fn weak_mw_at(&self, t: SimTime) -> f64 {
        Self::weak_sum(&self.weak, t)
    }

    /// Every signal in bulk on the air at `t`, the carrier-sense-only ones too: what a
    /// reception's interference counts.
    fn bulk_mw_at(&self, t: SimTime) -> f64 {
        Self::weak_sum(&self.weak, t) + Self::weak_sum(&self.sensed, t)
    }

    fn weak_sum(weak: &[WeakSignal], t: SimTime) -> f64 {
        weak.iter()
            .filter(|w| w.start <= t && t < w.end)
            .map(|w| w.power_mw)
            .sum()
    }

    /// Carrier sense's view of the carrier-sense-only signals delivered in bulk at `now`:
    /// `None` while one is on the air, else the latest instant one ended (`SimTime::ZERO` if
    /// none ever did). Each alone makes the medium busy, so the medium was idle over `[t, now]`
    /// if [`Phy::busy`] (everything else) was and this edge is at most `t`.
    pub fn sensed_edge(&self, now: SimTime) -> Option<SimTime> {
        let mut edge = self.sensed_last_end;
        for w in &self.sensed {
            if w.start <= now {
                if now < w.end {
                    return None;
                }
                edge = edge.max(w.end);
            }
        }
        Some(edge)
    }

    /// Weak interference in bulk: a signal of `power_mw` (below [`PhyConfig::weak_below_mw`])
    /// will be on the air here over `[start, end)`; `now` (before `start`) is when it is sent.
    pub fn add_weak(&mut self, now: SimTime, start: SimTime, end: SimTime, power_mw: f64) {
        debug_assert!(now < start && start < end);
        self.prune_weak(now);
        self.weak.push(WeakSignal {
            start,
            end,
            power_mw,
        });
        self.weak_bound_mw += power_mw;
        self.weak_first_end = self.weak_first_end.min(end);
    }

    /// A carrier-sense-only signal in bulk: one of `power_mw` (at least the carrier-sense
    /// threshold, below the reception threshold) will be on the air here over `[start, end)`.
    /// It counts in a reception's SINR as a weak signal does; carrier sense learns of it only
    /// when the MAC asks ([`Phy::sensed_edge`]), never through [`Phy::busy`] or a wake-up.
    /// `now` (before `start`) is when it is sent.
    pub fn add_sensed(&mut self, now: SimTime, start: SimTime, end: SimTime, power_mw: f64) {
        debug_assert!(now < start && start < end);
        self.prune_weak(now);
        self.sensed.push(WeakSignal {
            start,
            end,
            power_mw,
        });
        self.sensed_first_end = self.sensed_first_end.min(end);
    }

    /// Drops the signals in bulk that are over and integrated: ended by `now`, and by the start
    /// of the reception's open chunk. Called at every signal delivered in bulk, so the test
    /// that nothing is due stays inline.
    #[inline(always)]
    fn prune_weak(&mut self, now: SimTime) {
        // The horizon is at most `now`: nothing is due before the first ends, and the
        // reception (on another cache line) is not read.
        if now < self.sensed_first_end && now < self.weak_first_end {
            return;
        }
        self.prune_due(now);
    }

    /// [`Phy::prune_weak`] when a signal in bulk may be over: apart, so that the test above
    /// is inlined without this function's register saves (left in one function, the
    /// compiler kept it out of line, and a call that returned at once paid them; apart, the
    /// first 100 s of `benches/dpclo-fig8.toml` take 1.1 % fewer instructions).
    #[inline(never)]
    fn prune_due(&mut self, now: SimTime) {
        let horizon = if self.receiving {
            self.rx.chunk_start.min(now)
        } else {
            now
        };
        if horizon >= self.sensed_first_end {
            self.prune_sensed(horizon);
        }
        if horizon >= self.weak_first_end {
            self.prune_weak_list(horizon);
        }
    }

    /// Drops the weak signals ended by `horizon` in one pass that keeps the others in order,
    /// sums their powers afresh in that order (no drift: the bound [`Phy::busy`] and the
    /// wake-ups compare is the float a sum over the kept list gives) and finds their first end.
    fn prune_weak_list(&mut self, horizon: SimTime) {
        let (mut kept, mut bound, mut first_end) = (0, -0.0_f64, SimTime::MAX);
        for i in 0..self.weak.len() {
            let w = self.weak[i];
            if w.end > horizon {
                self.weak[kept] = w;
                kept += 1;
                bound += w.power_mw;
                first_end = first_end.min(w.end);
            }
        }
        self.weak.truncate(kept);
        self.weak_bound_mw = bound;
        self.weak_first_end = first_end;
    }

    /// Drops the carrier-sense-only signals ended by `horizon` in one pass, remembering the
    /// latest end among them.
    fn prune_sensed(&mut self, horizon: SimTime) {
        let (mut kept, mut last, mut first_end) = (0, self.sensed_last_end, SimTime::MAX);
        for i in 0..self.sensed.len() {
            let w = self.sensed[i];
            if w.end > horizon {
                self.sensed[kept] = w;
                kept += 1;
                first_end = first_end.min(w.end);
            } else {
                last = last.max(w.end);
            }
        }
        self.sensed.truncate(kept);
        self.sensed_last_end = last;
        self.sensed_first_end = first_end;
    }

    /// Whether weak signals can change carrier sense from `now` on: the node neither transmits
    /// nor receives, its other energy is below the threshold, and with every weak signal of its
    /// list added it would not be.
    fn ambiguous(&self, cfg: &PhyConfig) -> bool {
        // The sums first: most nodes are answered by them, without the reception's line.
        let energy = self.total_mw() + self.injected_cs_mw;
        if energy >= cfg.cs_threshold_mw || energy + self.weak_bound_mw < cfg.cs_threshold_mw {
            return false;
        }
        !(self.transmitting || self.receiving || self.weak.is_empty())
    }

    /// A wake-up to schedule after this node's state changed at `now`: while the node is
    /// ambiguous, at the first weak arrival or end after `now` where its carrier sense turns,
    /// unless one is due by then. Returns its time and generation; the caller schedules
    /// `Event::WeakWake`.
    /// The common case, a node that is not ambiguous, stays inline in the caller (the Python
    /// module's LTO left the whole function out of line, 3 % of a 108-node run's samples).
    #[inline]
    pub fn weak_wake(
        &mut self,
        now: SimTime,
        cfg: &PhyConfig,
        scratch: &mut TurnScratch,
    ) -> Option<(SimTime, u32)> {
        if !self.ambiguous(cfg) {
            self.weak_known = false;
            return None;
        }
        self.next_weak_wake(now, cfg, scratch)
    }

    /// No wake-up wanted now (the MAC reads no carrier sense: `Mac::listens_to_carrier_sense`):
    /// nothing is known of when carrier sense turns, so the next [`Phy::weak_wake_raised`]
    /// looks again. A wake-up already scheduled stays so.
    #[inline]
    pub fn skip_weak_wake(&mut self) {
        self.weak_known = false;
    }

    /// [`Phy::weak_wake`] after the power at this node was raised from `from` on (a weak signal
    /// arriving then was added, or a signal with events arrived now) and nothing else changed.
    /// More power can only turn carrier sense busy sooner and idle later, so where it is known
    /// since the last look (`next_weak_wake`) it cannot turn sooner than the wake-up
    /// already due when the medium is busy, nor when it is idle and the power rises only after
    /// that wake-up; only otherwise does it look again. The answers are [`Phy::weak_wake`]'s.
    pub fn weak_wake_raised(
        &mut self,
        now: SimTime,
        from: SimTime,
        cfg: &PhyConfig,
        scratch: &mut TurnScratch,
    ) -> Option<(SimTime, u32)> {
        if !self.ambiguous(cfg) {
            self.weak_known = false;
            return None;
        }
        if self.weak_known && (self.weak_busy || self.wake_at.is_some_and(|at| at <= from)) {
            return None;
        }
        self.next_weak_wake(now, cfg, scratch)
    }

    /// [`Phy::weak_wake`] for an ambiguous node: the first instant after `now` at which
    /// [`Phy::busy`] answers otherwise than at `now`, its own sum taken there.
    ///
    /// Until the node's state changes otherwise (a signal with events, a weak one added, its
    /// own transmission or reception, injected noise: each asks again), carrier sense moves
    /// only at the weak arrivals and ends in its list, and only in one direction at each: an
    /// idle medium can turn busy only where a signal arrives, a busy one idle only where one
    /// ends. A wake-up where it does not turn would tell the MAC what it knows (on the first
    /// 100 s of `benches/dpclo-fig8.toml`, 4.3 million of 5.5 million wake-ups did), so only
    /// the edge where it turns gets one. The candidates are taken in time order and [`Phy::busy`]'s sum
    /// is formed afresh at each, in the list's order, so the answer is the float the wake-up
    /// will compute; the signals pruned before then are over by then and add nothing to it.
    fn next_weak_wake(
        &mut self,
        now: SimTime,
        cfg: &PhyConfig,
        scratch: &mut TurnScratch,
    ) -> Option<(SimTime, u32)> {
        let energy = self.total_mw() + self.injected_cs_mw;
        let thr = cfg.cs_threshold_mw;
        // One pass at `now`: the sum carrier sense takes, the power still to arrive and its
        // first arrival.
        let (mut on, mut coming, mut first_start) = (0.0, 0.0, SimTime::MAX);
        for w in &self.weak {
            if w.start <= now {
                if now < w.end {
                    on += w.power_mw;
                }
            } else {
                coming += w.power_mw;
                first_start = first_start.min(w.start);
            }
        }
        let busy = energy + on >= thr;
        self.weak_known = true;
        self.weak_busy = busy;
        if !busy && (energy + on + coming) * (1.0 + 1e-9) < thr {
            // Idle, and every signal still to come added at once would leave it so.
            return None;
        }
        let next = if busy {
            // Busy: it can turn idle only where a signal ends, often many ends on: the
            // power changes sorted once and summed in time order.
            // Arrivals and ends apart: an integer each, the time then the signal's index in
            // `powers`.
            let TurnScratch {
                arrivals,
                ends,
                powers,
            } = scratch;
            arrivals.clear();
            ends.clear();
            powers.clear();
            let mut total = energy;
            let mut fits = true;
            for w in &self.weak {
                if w.end <= now {
                    continue;
                }
                // Past what the encoding can hold: the exact search.
                if powers.len() == TURN_SIGNALS || w.end.ns() >= 1 << 56 {
                    fits = false;
                    break;
                }
                let m = powers.len() as u64;
                powers.push(w.power_mw);
                if w.start > now {
                    arrivals.push((w.start.ns() << 8) | m);
                }
                ends.push((w.end.ns() << 8) | m);
                total += w.power_mw;
            }
            if fits {
                self.idle_turn_swept(arrivals, ends, powers, energy, thr, on, total)?
            } else {
                self.idle_turn_exact(now, energy, thr)?
            }
        } else {
            // Idle: it can turn busy only at an arrival, of which few are still to come.
            let mut edge = first_start;
            loop {
                if edge == SimTime::MAX {
                    return None;
                }
                // The sum at `edge` and the next arrival after it, in one pass.
                let (mut sum, mut after) = (0.0, SimTime::MAX);
                for w in &self.weak {
                    if w.start <= edge {
                        if edge < w.end {
                            sum += w.power_mw;
                        }
                    } else {
                        after = after.min(w.start);
                    }
                }
                if energy + sum >= thr {
                    break edge;
                }
                edge = after;
            }
        };
        if self.wake_at.is_some_and(|at| at <= next) {
            return None;
        }
        self.wake_generation = self.wake_generation.wrapping_add(1);
        self.wake_at = Some(next);
        Some((next, self.wake_generation))
    }

    /// The first end in `ends` at which carrier sense, busy now with `on` the bulk power now,
    /// turns idle (an arrival cannot turn it): the power changes summed in time order, the
    /// arrivals with theirs, and where that sum is within 1e-9 of the largest power involved
    /// (`total`) of the threshold, [`Phy::busy`]'s own sum at that instant decides. Rounding
    /// in the running sum is far below that margin (a few ulps of `total` for each change of
    /// at most [`TURN_SIGNALS`] signals), so outside it the running sum and `busy`'s agree on
    /// which side they lie. An arrival or an end is its time shifted 8 bits left, then the signal's index
    /// in `powers`.
    #[allow(clippy::too_many_arguments)]
    fn idle_turn_swept(
        &self,
        arrivals: &mut [u64],
        ends: &mut [u64],
        powers: &[f64],
        energy: f64,
        thr: f64,
        on: f64,
        total: f64,
    ) -> Option<SimTime> {
        // The arrivals are few and nearly sorted: an insertion sort. The ends are not: a long
        // broadcast sent early ends after the frames behind it in the list, and an insertion
        // sort of them was 40 % of this function's instructions on the first 40 s of
        // `benches/dpclo-fig8.toml` (the standard sort: 0.6 % fewer instructions and 3 % fewer
        // mispredicted branches over the whole run, by cachegrind).
        insertion_sort(arrivals);
        ends.sort_unstable();
        let margin = total * 1e-9;
        let mut sum = on;
        let (mut i, mut k) = (0, 0);
        while k < ends.len() {
            let t = ends[k] >> 8;
            while i < arrivals.len() && arrivals[i] >> 8 <= t {
                sum += powers[(arrivals[i] & 255) as usize];
                i += 1;
            }
            while k < ends.len() && ends[k] >> 8 == t {
                sum -= powers[(ends[k] & 255) as usize];
                k += 1;
            }
            let over = energy + sum - thr;
            let idle = if over >= margin {
                false
            } else if over < -margin {
                true
            } else {
                energy + Self::weak_sum(&self.weak, SimTime(t)) < thr
            };
            if idle {
                return Some(SimTime(t));
            }
        }
        None
    }

    /// [`Phy::idle_turn_swept`] for a list too long for the stack: the ends in time order,
    /// each judged by [`Phy::busy`]'s own sum.
    fn idle_turn_exact(&self, now: SimTime, energy: f64, thr: f64) -> Option<SimTime> {
        #[cfg(test)]
        TURN_EXACT_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut edge = now;
        loop {
            let next = self
                .weak
                .iter()
                .map(|w| w.end)
                .filter(|&t| t > edge)
                .min()?;
            if energy + Self::weak_sum(&self.weak, next) < thr {
                return Some(next);
            }
            edge = next;
        }
    }

    /// A wake-up fires at `now`: true if it is the current one (the caller then tells the MAC
    /// the medium state and asks for the next one).
    pub fn wake(&mut self, now: SimTime, generation: u32) -> bool {
        if generation != self.wake_generation {
            return false;
        }
        self.wake_at = None;
        self.prune_weak(now);
        true
    }

    /// Injected noise power at the antenna now, mW.
    pub fn injected_noise_mw(&self) -> f64 {
        self.injected_mw
    }

    /// Time spent under injected noise up to `now`.
    pub fn noise_time(&self, now: SimTime) -> SimTime {
        self.noise_before + self.noise_since.map_or(SimTime::ZERO, |t| now - t)
    }

    /// A noise source reaching this node with `mw` switches on (`on`) or off at `now`. The
    /// reception under way sees the new noise from now on (its SINR chunk closes first).
    pub fn switch_injected_noise(
        &mut self,
        now: SimTime,
        mw: f64,
        carrier_sense: bool,
        on: bool,
        cfg: &PhyConfig,
    ) {
        let injected = self.injected_mw;
        if self.receiving {
            Self::close_chunk(&mut self.rx, now, cfg, injected, &self.weak, &self.sensed);
        }
        if on {
            self.injected_sources += 1;
            self.injected_mw += mw;
            if carrier_sense {
                self.injected_cs_mw += mw;
            }
            if self.noise_since.is_none() {
                self.noise_since = Some(now);
            }
        } else {
            self.injected_sources = self.injected_sources.saturating_sub(1);
            self.injected_mw -= mw;
            if carrier_sense {
                self.injected_cs_mw -= mw;
            }
            if self.injected_sources == 0 {
                self.injected_mw = 0.0;
                self.injected_cs_mw = 0.0;
                if let Some(t) = self.noise_since.take() {
                    self.noise_before += now - t;
                }
            }
        }
        if self.receiving && self.injected_mw > 0.0 {
            self.rx.noisy = true;
        }
    }

    pub fn is_transmitting(&self) -> bool {
        self.transmitting
    }

    pub fn is_receiving(&self) -> bool {
        self.receiving
    }

    #[inline]
    fn total_mw(&self) -> f64 {
        self.energy_mw
    }

    /// Integrates the reception's SINR from its chunk start to `now`, with `injected_mw` of
    /// injected noise over the chunk: piece by piece between the weak signals' arrivals and
    /// ends, each piece with the weak power then on the air.
    ///
    /// Where nothing reads the lowest SINR (`Reception::whole_sinr` is finite) and even every
    /// signal in bulk on the air at once would lose no bit, the chunk is closed whole: no
    /// piece would change `ln_ok` (see [`error_model::exact_from_sinr`]).
    ///
    /// A short list ([`SCAN_SIGNALS`]) is summed afresh at every piece, in the lists' order
    /// ([`Phy::close_chunk_scanned`]). A long one is swept ([`Phy::close_chunk_swept`]): the
    /// power on the air at the chunk's start summed once, then a running sum that adds each
    /// arrival and takes off each end. On the first 40 s of `benches/dpclo-fig8.toml` a chunk
    /// had 7 pieces and 33 signals in bulk on average, about 15 of them on the air at a piece,
    /// and the sums afresh were a quarter of the run's instructions. The running sum differs
    /// from the sum afresh in its last bits (a relative 1e-15 of the largest power in the
    /// chunk, far below the noise floor), so the SINR is the same to rounding, not to the bit
    /// (a lowest SINR within an ulp of the threshold model's threshold can come out the other
    /// way); every recorded run (`tests/data/result_hashes.json`) came out byte for byte the
    /// same.
    fn close_chunk(
        rx: &mut Reception,
        now: SimTime,
        cfg: &PhyConfig,
        injected_mw: f64,
        weak: &[WeakSignal],
        sensed: &[WeakSignal],
    ) {
        if rx.whole_sinr < f64::INFINITY && rx.chunk_start < now {
            // Every signal in bulk on the air during the chunk at once: if even that leaves
            // the SINR where no bit is lost, no piece loses one (each piece's sum is of some of
            // them; `whole_sinr` has a margin far above the sums' rounding), and nothing reads
            // the pieces' lowest SINR.
            // Two plain loops, not one over `weak.iter().chain(sensed)` (as in
            // [`Phy::close_chunk_scanned`]): the same sum in the same order.
            let mut all_mw = 0.0;
            for w in weak.iter() {
                if w.end > rx.chunk_start && w.start < now {
                    all_mw += w.power_mw;
                }
            }
            for w in sensed.iter() {
                if w.end > rx.chunk_start && w.start < now {
                    all_mw += w.power_mw;
                }
            }
            let noise = cfg.noise_mw + injected_mw;
            if rx.power_mw / (noise + rx.interference_mw + all_mw) >= rx.whole_sinr {
                rx.noise_mw = rx.noise_mw.max(noise);
                rx.chunk_start = now;
                return;
            }
        }
        let len = weak.len() + sensed.len();
        if len > SCAN_SIGNALS && len <= SWEEP_SIGNALS && now.ns() < 1 << 56 {
            Self::close_chunk_swept(rx, now, cfg, injected_mw, weak, sensed);
        } else {
            Self::close_chunk_scanned(rx, now, cfg, injected_mw, weak, sensed);
        }
    }

    /// [`Phy::close_chunk`] by a running sum, for at most [`SWEEP_SIGNALS`] signals in bulk
    /// and times before 2^56 ns: an arrival or an end is one integer, its time then the
    /// signal's index in the lists. The standard unstable sort orders them: each list is in
    /// the order its signals were sent, but the arrivals of the weak list then those of the
    /// sensed one are two runs, which cost the insertion sort used before a pass over the weak
    /// run for every sensed arrival, and ends are far from sorted (a long frame sent early ends
    /// after the frames sent behind it). On the first 40 s of `benches/dpclo-fig8.toml`
    /// (DPCLO-ZMAC+): 7.541 G instructions and 52.5 M mispredicted branches with the insertion
    /// sort, 7.391 G and 51.2 M with this one.
    fn close_chunk_swept(
        rx: &mut Reception,
        now: SimTime,
        cfg: &PhyConfig,
        injected_mw: f64,
        weak: &[WeakSignal],
        sensed: &[WeakSignal],
    ) {
        let start = rx.chunk_start;
        if start >= now {
            return;
        }
        // The power on the air at the chunk's start, and the arrivals and ends inside it.
        let mut weak_mw = 0.0;
        let mut arrivals = [0u64; SWEEP_SIGNALS];
        let mut ends = [0u64; SWEEP_SIGNALS];
        let (mut na, mut ne) = (0, 0);
        // The weak list then the sensed one, a signal's index running on across both (two
        // loops, not one over a chain of the lists: the same sum in the same order).
        let mut take = |j: usize, w: &WeakSignal| {
            if w.end <= start || w.start >= now {
                return;
            }
            if w.start <= start {
                weak_mw += w.power_mw;
            } else {
                arrivals[na] = (w.start.ns() << 8) | j as u64;
                na += 1;
            }
            if w.end < now {
                ends[ne] = (w.end.ns() << 8) | j as u64;
                ne += 1;
            }
        };
        for (j, w) in weak.iter().enumerate() {
            take(j, w);
        }
        for (j, w) in sensed.iter().enumerate() {
            take(weak.len() + j, w);
        }
        let (arrivals, ends) = (&mut arrivals[..na], &mut ends[..ne]);
        arrivals.sort_unstable();
        ends.sort_unstable();
        let power = |e: u64| {
            let j = (e & 255) as usize;
            match weak.get(j) {
                Some(w) => w.power_mw,
                None => sensed[j - weak.len()].power_mw,
            }
        };
        let (mut a, mut i, mut k) = (start, 0, 0);
        while a < now {
            let next = |edges: &[u64], i: usize| edges.get(i).map_or(now.ns(), |&e| e >> 8);
            let b = SimTime(next(arrivals, i).min(next(ends, k)));
            // Not below 0: a power taken off leaves at most a rounding error behind.
            Self::integrate(
                rx,
                a,
                b,
                cfg,
                injected_mw,
                rx.interference_mw + weak_mw.max(0.0),
            );
            while i < arrivals.len() && arrivals[i] >> 8 == b.ns() {
                weak_mw += power(arrivals[i]);
                i += 1;
            }
            while k < ends.len() && ends[k] >> 8 == b.ns() {
                weak_mw -= power(ends[k]);
                k += 1;
            }
            a = b;
        }
        rx.chunk_start = now;
    }

    /// [`Phy::close_chunk`] summing the signals on the air afresh at every piece, in the lists'
    /// order.
    fn close_chunk_scanned(
        rx: &mut Reception,
        now: SimTime,
        cfg: &PhyConfig,
        injected_mw: f64,
        weak: &[WeakSignal],
        sensed: &[WeakSignal],
    ) {
        let mut a = rx.chunk_start;
        while a < now {
            // The power in bulk over [a, b), b the next arrival or end in bulk (or now).
            // Two plain loops, not one over `weak.iter().chain(sensed)`: the same sum in the
            // same order, without the chain's test of which list it is in at every signal.
            let (mut weak_mw, mut b) = (0.0, now);
            Self::piece(weak, a, &mut weak_mw, &mut b);
            Self::piece(sensed, a, &mut weak_mw, &mut b);
            let interference_mw = rx.interference_mw + weak_mw;
            Self::integrate(rx, a, b, cfg, injected_mw, interference_mw);
            a = b;
        }
        rx.chunk_start = rx.chunk_start.max(now);
    }

    /// Adds to `weak_mw` the power of the signals of `list` on the air at `a`, in the list's
    /// order, and lowers `b` to the first of their arrivals and ends after `a`.
    #[inline(always)]
    fn piece(list: &[WeakSignal], a: SimTime, weak_mw: &mut f64, b: &mut SimTime) {
        for w in list {
            if w.start <= a {
                if w.end > a {
                    *weak_mw += w.power_mw;
                    *b = (*b).min(w.end);
                }
            } else {
                *b = (*b).min(w.start);
            }
        }
    }

    /// Integrates `[a, b)` at constant interference `interference_mw`.
    fn integrate(
        rx: &mut Reception,
        a: SimTime,
        b: SimTime,
        cfg: &PhyConfig,
        injected_mw: f64,
        interference_mw: f64,
    ) {
        let sinr = rx.power_mw / (cfg.noise_mw + injected_mw + interference_mw);
        rx.min_sinr = rx.min_sinr.min(sinr);
        rx.noise_mw = rx.noise_mw.max(cfg.noise_mw + injected_mw);
        if cfg.error_model == ErrorModelKind::Ber && sinr < rx.exact_sinr {
            let header_ns = b.min(rx.header_end).ns().saturating_sub(a.ns());
            let payload_ns = b.ns().saturating_sub(a.max(rx.header_end).ns());
            let pos = grid_pos(sinr);
            if header_ns > 0 {
                rx.ln_ok += ln_ok_per_bit_at(rx.header_mod, pos)
                    * (header_ns as f64 * rx.header_bits_per_ns);
            }
            if payload_ns > 0 {
                rx.ln_ok += ln_ok_per_bit_at(rx.payload_mod, pos)
                    * (payload_ns as f64 * rx.payload_bits_per_ns);
            }
        }
    }

    fn lock(&mut self, now: SimTime, tx: u32, power_mw: f64, info: &PhyTx, cfg: &PhyConfig) {
        let t = &info.timing;
        let payload_ns = (t.total - t.header).ns().max(1);
        let exact_sinr = error_model::exact_from_sinr(t.header_modulation)
            .max(error_model::exact_from_sinr(t.payload_modulation));
        self.receiving = true;
        self.rx = Reception {
            tx,
            power_mw,
            start: now,
            // `now` is the frame's arrival here (locking happens only at a signal's start), which
            // is later than `info.start` by the propagation delay.
            header_end: now + t.header,
            end: now + t.total,
            rate_mbps: info.rate_mbps,
            header_mod: t.header_modulation,
            payload_mod: t.payload_modulation,
            header_bits_per_ns: t.header_bits / t.header.ns().max(1) as f64,
            payload_bits_per_ns: t.payload_bits / payload_ns as f64,
            chunk_start: now,
            interference_mw: (self.energy_mw - power_mw).max(0.0),
            min_sinr: f64::INFINITY,
            ln_ok: 0.0,
            noisy: self.injected_mw > 0.0,
            noise_mw: 0.0,
            exact_sinr,
            whole_sinr: if self.min_sinr_unread && cfg.error_model == ErrorModelKind::Ber {
                exact_sinr * (1.0 + 1e-9)
            } else {
                f64::INFINITY
            },
        };
    }

    /// The first bit of `tx` arrives. Returns true if the receiver locked onto it.
    pub fn signal_start(
        &mut self,
        now: SimTime,
        tx: u32,
        power_mw: f64,
        info: &PhyTx,
        cfg: &PhyConfig,
    ) -> bool {
        self.signals.push(Signal { tx, power_mw });
        self.energy_mw += power_mw;
        if self.transmitting {
            return false;
        }
        if !self.receiving {
            if power_mw < cfg.rx_threshold_mw {
                return false;
            }
            if let Some(pd) = &cfg.preamble_detection {
                return self.detect(now, tx, power_mw, info, cfg, pd);
            }
            self.lock(now, tx, power_mw, info, cfg);
            return true;
        }
        let rx = &mut self.rx;
        if let Some(pd) = &cfg.preamble_detection {
            if now < rx.start + pd.window {
                // Still in the locked frame's detection period: ns-3 decides at its end, with
                // this arrival on the air.
                let others = (self.energy_mw - rx.power_mw).max(0.0)
                    + Self::weak_sum(&self.weak, now)
                    + Self::weak_sum(&self.sensed, now);
                let sinr = rx.power_mw / (cfg.noise_mw + self.injected_mw + others);
                if power_mw > rx.power_mw || sinr < pd.min_sinr {
                    self.receiving = false;
                    self.rx_undetected += 1;
                    return power_mw >= cfg.rx_threshold_mw
                        && self.detect(now, tx, power_mw, info, cfg, pd);
                }
            }
        }
        let capture = match cfg.capture_ratio {
            Some(ratio) => {
                now < rx.header_end
                    && power_mw >= rx.power_mw * ratio
                    && power_mw >= cfg.rx_threshold_mw
            }
            None => false,
        };
        if capture {
            self.rx_errors += 1;
            self.lock(now, tx, power_mw, info, cfg);
            true
        } else {
            Self::close_chunk(rx, now, cfg, self.injected_mw, &self.weak, &self.sensed);
            rx.interference_mw += power_mw;
            false
        }
    }

    /// Preamble detection of a frame arriving at a free receiver (already counted in
    /// `energy_mw`): locks onto it if its power reaches the minimum RSSI and its SINR against
    /// the noise and every other signal on the air reaches the threshold.
    fn detect(
        &mut self,
        now: SimTime,
        tx: u32,
        power_mw: f64,
        info: &PhyTx,
        cfg: &PhyConfig,
        pd: &PreambleDetection,
    ) -> bool {
        let others = (self.energy_mw - power_mw).max(0.0) + self.bulk_mw_at(now);
        let sinr = power_mw / (cfg.noise_mw + self.injected_mw + others);
        if power_mw >= pd.min_rssi_mw && sinr >= pd.min_sinr {
            self.lock(now, tx, power_mw, info, cfg);
            true
        } else {
            self.rx_undetected += 1;
            false
        }
    }

    /// The last bit of `tx` arrives. Returns the outcome if it was the frame being received.
    pub fn signal_end(
        &mut self,
        now: SimTime,
        tx: u32,
        cfg: &PhyConfig,
        rng: &mut Stream,
    ) -> Option<RxOutcome> {
        if let Some(i) = self.signals.as_slice().iter().position(|s| s.tx == tx) {
            let gone = self.signals.swap_remove(i);
            self.energy_mw = if self.signals.len() <= 2 {
                self.signals.as_slice().iter().map(|s| s.power_mw).sum()
            } else {
                self.energy_mw - gone.power_mw
            };
        }
        if !self.receiving {
            return None;
        }
        let rx = &mut self.rx;
        Self::close_chunk(rx, now, cfg, self.injected_mw, &self.weak, &self.sensed);
        if rx.tx != tx {
            rx.interference_mw = (self.energy_mw - rx.power_mw).max(0.0);
            self.prune_weak(now);
            return None;
        }
        debug_assert_eq!(rx.end, now);
        let ok = match cfg.error_model {
            ErrorModelKind::Threshold => rx.min_sinr >= cfg.sinr_threshold(rx.rate_mbps),
            ErrorModelKind::Ber => rng.gen::<f64>() < rx.ln_ok.exp(),
        };
        let noisy = rx.noisy;
        self.receiving = false;
        self.prune_weak(now);
        if ok {
            self.rx_ok += 1;
            Some(RxOutcome::Ok { tx })
        } else {
            self.rx_errors += 1;
            self.rx_errors_noise += noisy as u64;
            Some(RxOutcome::Error { tx })
        }
    }

    /// What the receiver measured over the frame whose end `signal_end` last reported: to be
    /// read right after that report, before the node locks onto another frame or abandons one
    /// (the reception's fields stay in `rx` until the next lock, and an abandoned reception's
    /// would be reported).
    pub fn last_rx(&self) -> RxReport {
        debug_assert!(!self.receiving, "last_rx read during a reception");
        RxReport {
            power_mw: self.rx.power_mw,
            noise_mw: self.rx.noise_mw,
            min_sinr: self.rx.min_sinr,
        }
    }

    /// The node starts transmitting: a frame being received is lost (half duplex).
    pub fn start_tx(&mut self) {
        if self.receiving {
            self.receiving = false;
            self.rx_errors += 1;
        }
        self.transmitting = true;
    }

    pub fn end_tx(&mut self) {
        self.transmitting = false;
    }
}

/// Thermal noise power in mW for a bandwidth and noise figure.
pub fn thermal_noise_mw(bandwidth_hz: f64, noise_figure_db: f64) -> f64 {
    propagation::dbm_to_mw(-174.0 + 10.0 * bandwidth_hz.log10() + noise_figure_db)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::radio::Preamble;

    fn cfg(model: ErrorModelKind, capture: Option<f64>) -> PhyConfig {
        let timing = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        PhyConfig {
            standard: Standard::Dot11b,
            timing,
            error_model: model,
            rx_threshold_mw: 1e-9,
            cs_threshold_mw: 1e-10,
            noise_mw: thermal_noise_mw(22e6, 7.0),
            capture_ratio: capture,
            preamble_detection: None,
            sinr_thresholds: vec![(11.0, 10f64.powf(0.8))],
            weak_below_mw: 1e-10,
            sensed_below_mw: 1e-10,
            wake_every_node: false,
        }
    }

    fn tx(start: u64) -> PhyTx {
        let timing = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        PhyTx {
            src: 0,
            start: SimTime(start),
            rate_mbps: 11.0,
            timing: timing.frame(1064, 11.0),
        }
    }

    #[test]
    fn lone_strong_frame_is_received() {
        let c = cfg(ErrorModelKind::Ber, None);
        let mut p = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let t = tx(0);
        assert!(p.signal_start(SimTime(0), 7, 1e-6, &t, &c));
        assert!(p.busy(SimTime(0), &c));
        assert_eq!(
            p.signal_end(SimTime(0) + t.timing.total, 7, &c, &mut rng),
            Some(RxOutcome::Ok { tx: 7 })
        );
        assert!(!p.busy(SimTime(0) + t.timing.total, &c));
    }

    #[test]
    fn equal_power_overlap_destroys_the_frame() {
        for model in [ErrorModelKind::Ber, ErrorModelKind::Threshold] {
            let c = cfg(model, None);
            let mut p = Phy::new();
            let mut rng = crate::sim::rng::stream(1, 0, "t");
            let (a, b) = (tx(0), tx(100_000));
            p.signal_start(SimTime(0), 1, 1e-6, &a, &c);
            assert!(!p.signal_start(SimTime(100_000), 2, 1e-6, &b, &c));
            assert_eq!(
                p.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
                Some(RxOutcome::Error { tx: 1 })
            );
            assert_eq!(
                p.signal_end(b.start + b.timing.total, 2, &c, &mut rng),
                None
            );
        }
    }

    #[test]
    fn much_stronger_frame_survives_weak_interference() {
        let c = cfg(ErrorModelKind::Threshold, None);
        let mut p = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let (a, b) = (tx(0), tx(100_000));
        p.signal_start(SimTime(0), 1, 1e-6, &a, &c);
        p.signal_start(SimTime(100_000), 2, 1e-9, &b, &c); // 30 dB weaker
        assert_eq!(
            p.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
            Some(RxOutcome::Ok { tx: 1 })
        );
    }

    #[test]
    fn stronger_frame_captures_during_preamble_only() {
        let c = cfg(ErrorModelKind::Threshold, Some(10.0));
        let mut p = Phy::new();
        let (a, b) = (tx(0), tx(50_000));
        p.signal_start(SimTime(0), 1, 1e-8, &a, &c);
        assert!(
            p.signal_start(SimTime(50_000), 2, 1e-6, &b, &c),
            "inside the 192 us preamble"
        );
        let mut q = Phy::new();
        let late = tx(300_000);
        q.signal_start(SimTime(0), 1, 1e-8, &a, &c);
        assert!(
            !q.signal_start(SimTime(300_000), 2, 1e-6, &late, &c),
            "after the preamble"
        );
    }

    #[test]
    fn energy_below_reception_threshold_still_senses_busy() {
        let c = cfg(ErrorModelKind::Ber, None);
        let mut p = Phy::new();
        assert!(!p.signal_start(SimTime(0), 1, 5e-10, &tx(0), &c));
        assert!(p.busy(SimTime(0), &c));
    }

    /// `cfg` with ns-3's default preamble detection: 4 dB, −82 dBm, 4 µs.
    fn pd_cfg(model: ErrorModelKind) -> PhyConfig {
        PhyConfig {
            preamble_detection: Some(PreambleDetection {
                min_sinr: 10f64.powf(0.4),
                min_rssi_mw: propagation::dbm_to_mw(-82.0),
                window: PreambleDetection::WINDOW,
            }),
            ..cfg(model, None)
        }
    }

    #[test]
    fn equally_strong_frames_starting_together_are_both_missed_with_preamble_detection() {
        // 60 ns apart (20 m of propagation): neither preamble reaches 4 dB over the other, so
        // neither ends as a frame in error (no EIFS), while carrier sense stays busy.
        let c = pd_cfg(ErrorModelKind::Ber);
        let mut p = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let (a, b) = (tx(0), tx(60));
        assert!(
            p.signal_start(SimTime(0), 1, 1e-6, &a, &c),
            "alone: detected"
        );
        assert!(!p.signal_start(SimTime(60), 2, 1e-6, &b, &c));
        assert!(!p.is_receiving());
        assert!(p.busy(SimTime(60), &c));
        assert_eq!(
            p.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
            None
        );
        assert_eq!(
            p.signal_end(SimTime(60) + b.timing.total, 2, &c, &mut rng),
            None
        );
        assert_eq!((p.rx_undetected, p.rx_errors, p.rx_ok), (2, 0, 0));
        // Without detection the first frame keeps the receiver and is lost: EIFS follows.
        let c = cfg(ErrorModelKind::Ber, None);
        let mut q = Phy::new();
        q.signal_start(SimTime(0), 1, 1e-6, &a, &c);
        q.signal_start(SimTime(60), 2, 1e-6, &b, &c);
        assert_eq!(
            q.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
            Some(RxOutcome::Error { tx: 1 })
        );
    }

    #[test]
    fn a_stronger_frame_within_the_detection_period_is_received_instead() {
        // ns-3 keeps the strongest preamble of its 4 us detection period: B, 10 dB stronger and
        // 2 us after A, is decoded; A is dropped without an error.
        let c = pd_cfg(ErrorModelKind::Threshold);
        let mut p = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let (a, b) = (tx(0), tx(2_000));
        assert!(p.signal_start(SimTime(0), 1, 1e-7, &a, &c));
        assert!(p.signal_start(SimTime(2_000), 2, 1e-6, &b, &c));
        assert_eq!(
            p.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
            None
        );
        assert_eq!(
            p.signal_end(b.start + b.timing.total, 2, &c, &mut rng),
            Some(RxOutcome::Ok { tx: 2 })
        );
        assert_eq!((p.rx_undetected, p.rx_errors), (1, 0));
    }

    #[test]
    fn an_equal_frame_after_the_detection_period_is_interference_and_the_frame_is_lost() {
        // 10 us after A's start its preamble is detected: B only interferes, and A ends in error.
        let c = pd_cfg(ErrorModelKind::Ber);
        let mut p = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let (a, b) = (tx(0), tx(10_000));
        assert!(p.signal_start(SimTime(0), 1, 1e-6, &a, &c));
        assert!(!p.signal_start(SimTime(10_000), 2, 1e-6, &b, &c));
        assert!(p.is_receiving());
        assert_eq!(
            p.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
            Some(RxOutcome::Error { tx: 1 })
        );
    }

    #[test]
    fn preamble_detection_needs_the_minimum_rssi_and_the_sinr_threshold() {
        let c = pd_cfg(ErrorModelKind::Ber);
        let dbm = propagation::dbm_to_mw;
        // Above the reception threshold (-90 dBm) but below -82 dBm: not detected, yet sensed.
        let mut p = Phy::new();
        assert!(!p.signal_start(SimTime(0), 1, dbm(-84.0), &tx(0), &c));
        assert!(p.busy(SimTime(0), &c));
        assert!(Phy::new().signal_start(SimTime(0), 1, dbm(-80.0), &tx(0), &c));
        // Over an undetected signal already on the air: 3 dB stronger is short of 4 dB, 5 dB
        // is enough.
        for (db, detected) in [(3.0, false), (5.0, true)] {
            let mut p = Phy::new();
            p.signal_start(SimTime(0), 1, dbm(-84.0), &tx(0), &c);
            let later = tx(50_000);
            assert_eq!(
                p.signal_start(SimTime(50_000), 2, dbm(-84.0 + db), &later, &c),
                detected,
                "{db} dB"
            );
        }
    }

    fn tx_of(start: u64, bytes: u32) -> PhyTx {
        let timing = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        PhyTx {
            src: 0,
            start: SimTime(start),
            rate_mbps: 11.0,
            timing: timing.frame(bytes, 11.0),
        }
    }

    /// The reception's SINR record (lowest SINR, log of the success probability) closed at
    /// `now`, without ending it.
    fn sinr_record(p: &Phy, now: SimTime, c: &PhyConfig) -> (f64, f64) {
        assert!(p.receiving);
        let mut rx = p.rx;
        Phy::close_chunk(&mut rx, now, c, p.injected_mw, &p.weak, &p.sensed);
        (rx.min_sinr, rx.ln_ok)
    }

    fn close(a: f64, b: f64) -> bool {
        a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
    }

    #[test]
    fn a_chunk_closed_whole_where_no_bit_can_be_lost_gives_the_success_of_its_pieces() {
        // A receiver whose lowest SINR nobody reads closes a chunk whole when even every
        // signal in bulk at once leaves no bit lost: its success (`ln_ok`, to the bit) and
        // noise are those of the same reception closed piece by piece, over random signals in
        // bulk and receptions from well below to well above that SINR (802.11b, 11 Mbit/s:
        // 12.7 dB), with and without injected noise.
        use rand::{Rng, SeedableRng};
        let strong = tx_of(0, 1500);
        let frame_end = strong.timing.total.ns();
        let c = cfg(ErrorModelKind::Ber, None);
        let (mut whole, mut pieces, mut lossy) = (0, 0, 0);
        for seed in 0..8 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            for round in 0..100 {
                let mut signals = |n: usize, lo_dbm: f64, hi_dbm: f64| -> Vec<WeakSignal> {
                    (0..n)
                        .map(|_| {
                            let start = rng.gen_range(1..frame_end);
                            let end = start + 1 + rng.gen_range(1..frame_end / 2);
                            WeakSignal {
                                start: SimTime(start),
                                end: SimTime(end),
                                power_mw: propagation::dbm_to_mw(rng.gen_range(lo_dbm..hi_dbm)),
                            }
                        })
                        .collect()
                };
                let n = [3, 12, 20, 40, 90][round % 5];
                let weak = signals(n * 2 / 3, -112.0, -101.0);
                let sensed = signals(n - n * 2 / 3, -100.0, -91.0);
                let power = propagation::dbm_to_mw(rng.gen_range(-90.0..-55.0));
                let injected = [0.0, 3e-11][round % 3 / 2];
                let (mut p, mut q) = (Phy::new(), Phy::new());
                p.set_min_sinr_unread(true);
                assert!(p.signal_start(SimTime(0), 1, power, &strong, &c));
                assert!(q.signal_start(SimTime(0), 1, power, &strong, &c));
                assert!(p.receiving && q.receiving);
                let (mut a, mut b) = (p.rx, q.rx);
                let mut stops: Vec<u64> = (0..3).map(|_| rng.gen_range(1..frame_end)).collect();
                stops.push(frame_end);
                stops.sort_unstable();
                for &t in &stops {
                    let t = SimTime(t);
                    let before = a.min_sinr;
                    Phy::close_chunk(&mut a, t, &c, injected, &weak, &sensed);
                    Phy::close_chunk(&mut b, t, &c, injected, &weak, &sensed);
                    if a.min_sinr == before && b.min_sinr < before {
                        whole += 1;
                    } else {
                        pieces += 1;
                    }
                    assert_eq!(a.chunk_start, b.chunk_start);
                    assert_eq!(a.noise_mw, b.noise_mw);
                    assert_eq!(
                        a.ln_ok.to_bits(),
                        b.ln_ok.to_bits(),
                        "seed {seed}, round {round}"
                    );
                }
                if b.ln_ok < 0.0 {
                    lossy += 1;
                }
            }
        }
        eprintln!("whole {whole}, pieces {pieces}, lossy {lossy}");
        assert!(
            whole > 500 && pieces > 500 && lossy > 200,
            "{whole} {pieces} {lossy}"
        );
    }

    #[test]
    fn a_swept_chunk_has_the_sinr_of_sums_afresh_to_rounding() {
        // Random signals in bulk (weak and carrier-sense-only) over a reception a few dB above
        // the noise, with interference from signals with events and injected noise, half the
        // rounds on a 20 us grid so that arrivals, ends and the chunk's bounds coincide:
        // `close_chunk` (swept for lists of more than SCAN_SIGNALS, up to SWEEP_SIGNALS) gives
        // the lowest SINR and the success probability of the sums afresh, to rounding, for
        // both error models and lists on both sides of both limits.
        use rand::{Rng, SeedableRng};
        let strong = tx_of(0, 1500);
        let frame_end = strong.timing.total.ns();
        let (mut swept, mut closes, mut lossy) = (0, 0, 0);
        for seed in 0..8 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            for round in 0..100 {
                let model = if round % 2 == 0 {
                    ErrorModelKind::Ber
                } else {
                    ErrorModelKind::Threshold
                };
                let c = cfg(model, None);
                let grid = round % 4 < 2;
                let time = |rng: &mut rand::rngs::StdRng, lo: u64, hi: u64| {
                    let t = rng.gen_range(lo..hi);
                    if grid {
                        (t / 20_000 * 20_000).max(lo)
                    } else {
                        t
                    }
                };
                let mut signals = |n: usize, lo_dbm: f64, hi_dbm: f64| -> Vec<WeakSignal> {
                    (0..n)
                        .map(|_| {
                            let start = time(&mut rng, 1, frame_end);
                            let end = start + 1 + time(&mut rng, 1, frame_end / 2);
                            let dbm = rng.gen_range(lo_dbm..hi_dbm);
                            WeakSignal {
                                start: SimTime(start),
                                end: SimTime(end),
                                power_mw: propagation::dbm_to_mw(dbm),
                            }
                        })
                        .collect()
                };
                let n = [3, 12, 20, 40, 90, 127, 129, 160][round % 8];
                let weak = signals(n * 2 / 3, -112.0, -101.0);
                let sensed = signals(n - n * 2 / 3, -100.0, -91.0);
                let power = propagation::dbm_to_mw(rng.gen_range(-89.0..-80.0));
                let injected = [0.0, 3e-11][round % 3 / 2];
                let mut p = Phy::new();
                assert!(p.signal_start(SimTime(0), 1, power, &strong, &c));
                assert!(p.receiving);
                let mut a = p.rx;
                a.interference_mw = [0.0, 2e-10][round % 5 / 4];
                let mut b = a;
                // Close at a few instants, the last one the frame's end.
                let mut stops: Vec<u64> = (0..3).map(|_| time(&mut rng, 1, frame_end)).collect();
                stops.push(frame_end);
                stops.sort_unstable();
                for &t in &stops {
                    let t = SimTime(t);
                    let len = weak.len() + sensed.len();
                    if len > SCAN_SIGNALS && len <= SWEEP_SIGNALS {
                        swept += 1;
                    }
                    Phy::close_chunk(&mut a, t, &c, injected, &weak, &sensed);
                    Phy::close_chunk_scanned(&mut b, t, &c, injected, &weak, &sensed);
                    closes += 1;
                    if b.ln_ok < -1e-6 {
                        lossy += 1;
                    }
                    assert_eq!(a.chunk_start, b.chunk_start);
                    assert!(
                        close(a.min_sinr, b.min_sinr) && close(a.ln_ok, b.ln_ok),
                        "seed {seed}, round {round}: swept ({}, {}) against afresh ({}, {})",
                        a.min_sinr,
                        a.ln_ok,
                        b.min_sinr,
                        b.ln_ok
                    );
                }
            }
        }
        // Enough swept chunks, and enough of them where the BER model loses bits.
        assert!(
            swept > 1500 && closes > 3000 && lossy > 800,
            "{swept} {closes} {lossy}"
        );

        // Two signals end and a stronger one arrives at one instant: no piece between them
        // counts the arrival with only some of the ends (its SINR would be the chunk's lowest).
        let c = cfg(ErrorModelKind::Threshold, None);
        let (t, p_w) = (400_000, 4e-11);
        let w = |start: u64, end: u64, power_mw: f64| WeakSignal {
            start: SimTime(start),
            end: SimTime(end),
            power_mw,
        };
        let mut weak: Vec<WeakSignal> = (0..SCAN_SIGNALS)
            .map(|i| w(1 + i as u64, 50, 1e-14))
            .collect();
        weak.extend([w(10, t, p_w), w(20, t, p_w), w(t, frame_end, 1.5 * p_w)]);
        let mut p = Phy::new();
        assert!(p.signal_start(SimTime(0), 1, 1e-8, &strong, &c));
        assert!(p.receiving);
        let (mut a, mut b) = (p.rx, p.rx);
        Phy::close_chunk(&mut a, SimTime(frame_end), &c, 0.0, &weak, &[]);
        Phy::close_chunk_scanned(&mut b, SimTime(frame_end), &c, 0.0, &weak, &[]);
        assert!(
            close(a.min_sinr, b.min_sinr),
            "{} against {}",
            a.min_sinr,
            b.min_sinr
        );
    }

    #[test]
    fn weak_interference_in_bulk_gives_the_sinr_of_events() {
        // Frame A (strong, locked) from 0; weak W1 and W2 (below both thresholds) and strong S
        // overlap it, W2 and S ending inside it: the chunks are [0, W1), [W1, W2), [W2, S),
        // [S, W2 end), [W2 end, S end), [S end, A end).
        for model in [ErrorModelKind::Ber, ErrorModelKind::Threshold] {
            let c = cfg(model, None);
            let a = tx_of(0, 1064);
            let a_end = SimTime(0) + a.timing.total;
            let (w1, w2, s) = (
                tx_of(150_000, 1064),
                tx_of(250_000, 100),
                tx_of(300_000, 200),
            );
            let (p_a, p_w1, p_w2, p_s) = (2e-9, 6e-11, 9e-11, 1e-10);
            assert!(p_w1 < c.weak_below_mw && p_w2 < c.weak_below_mw && p_s >= c.weak_below_mw);
            let span = |t: &PhyTx| (t.start, t.start + t.timing.total);

            // Every signal with its events, in time order.
            let mut ev = Phy::new();
            let mut rng = crate::sim::rng::stream(1, 0, "t");
            let mut list = vec![
                (span(&a).0, true, 1, p_a, a),
                (span(&w1).0, true, 2, p_w1, w1),
                (span(&w2).0, true, 3, p_w2, w2),
                (span(&s).0, true, 4, p_s, s),
                (span(&w2).1, false, 3, 0.0, w2),
                (span(&s).1, false, 4, 0.0, s),
            ];
            list.sort_by_key(|e| e.0);
            for (t, start, id, power, info) in list {
                if start {
                    ev.signal_start(t, id, power, &info, &c);
                } else {
                    assert_eq!(ev.signal_end(t, id, &c, &mut rng), None);
                }
            }

            // The weak ones in bulk, handed over when sent (before they arrive).
            let mut bulk = Phy::new();
            let mut rng_b = crate::sim::rng::stream(1, 0, "t");
            bulk.signal_start(SimTime(0), 1, p_a, &a, &c);
            bulk.add_weak(SimTime(100_000), span(&w1).0, span(&w1).1, p_w1);
            bulk.add_weak(SimTime(200_000), span(&w2).0, span(&w2).1, p_w2);
            bulk.signal_start(span(&s).0, 4, p_s, &s, &c);
            assert_eq!(bulk.signal_end(span(&s).1, 4, &c, &mut rng_b), None);

            let (min_ev, ln_ev) = sinr_record(&ev, a_end, &c);
            let (min_bulk, ln_bulk) = sinr_record(&bulk, a_end, &c);
            assert!(close(min_ev, min_bulk), "{model:?}: {min_ev} vs {min_bulk}");
            assert!(close(ln_ev, ln_bulk), "{model:?}: {ln_ev} vs {ln_bulk}");
            // The lowest SINR is the piece under A's three interferers.
            let three = p_a / (c.noise_mw + p_w1 + p_w2 + p_s);
            assert!(close(min_bulk, three), "{min_bulk} vs {three}");
            assert_eq!(
                ev.signal_end(a_end, 1, &c, &mut rng),
                bulk.signal_end(a_end, 1, &c, &mut rng_b)
            );
            assert!(close(ev.last_rx().min_sinr, bulk.last_rx().min_sinr));
        }
    }

    #[test]
    fn carrier_sense_only_signals_in_bulk_give_the_sinr_of_events_and_answer_when_asked() {
        let c = cfg(ErrorModelKind::Ber, None);
        let a = tx_of(0, 1064);
        let a_end = SimTime(0) + a.timing.total;
        let (s1, s2) = (tx_of(150_000, 200), tx_of(600_000, 1064));
        // Between the carrier-sense and the reception threshold: sensed, never decoded.
        let (p_a, p_s1, p_s2) = (2e-9, 3e-10, 5e-10);
        assert!(p_s1 >= c.cs_threshold_mw && p_s2 < c.rx_threshold_mw);
        let span = |t: &PhyTx| (t.start, t.start + t.timing.total);
        assert!(span(&s1).1 < span(&s2).0 && span(&s2).1 > a_end);

        // A locked, S1 and S2 with their events ...
        let mut ev = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        ev.signal_start(SimTime(0), 1, p_a, &a, &c);
        ev.signal_start(span(&s1).0, 2, p_s1, &s1, &c);
        assert_eq!(ev.signal_end(span(&s1).1, 2, &c, &mut rng), None);
        ev.signal_start(span(&s2).0, 3, p_s2, &s2, &c);
        // ... and in bulk, handed over when sent.
        let mut bulk = Phy::new();
        let mut rng_b = crate::sim::rng::stream(1, 0, "t");
        bulk.signal_start(SimTime(0), 1, p_a, &a, &c);
        bulk.add_sensed(SimTime(100_000), span(&s1).0, span(&s1).1, p_s1);
        bulk.add_sensed(SimTime(550_000), span(&s2).0, span(&s2).1, p_s2);
        let (min_ev, ln_ev) = sinr_record(&ev, a_end, &c);
        let (min_bulk, ln_bulk) = sinr_record(&bulk, a_end, &c);
        assert!(close(min_ev, min_bulk), "{min_ev} vs {min_bulk}");
        assert!(close(ln_ev, ln_bulk), "{ln_ev} vs {ln_bulk}");
        assert!(close(min_bulk, p_a / (c.noise_mw + p_s2)));
        assert_eq!(
            ev.signal_end(a_end, 1, &c, &mut rng),
            bulk.signal_end(a_end, 1, &c, &mut rng_b)
        );

        // Carrier sense: not in `busy`, which follows the signals with events, but in the edge.
        let mut p = Phy::new();
        let (start, end) = span(&s1);
        p.add_sensed(SimTime(100_000), start, end, p_s1);
        for t in [
            SimTime(120_000),
            start,
            end - SimTime(1),
            end,
            end + SimTime(5),
        ] {
            assert!(!p.busy(t, &c), "{t:?}");
            assert!(
                p.weak_wake(t, &c, &mut TurnScratch::default()).is_none(),
                "no wake-up for a sensed signal"
            );
        }
        assert_eq!(
            p.sensed_edge(SimTime(120_000)),
            Some(SimTime::ZERO),
            "not yet arrived"
        );
        assert_eq!(p.sensed_edge(start), None);
        assert_eq!(p.sensed_edge(end - SimTime(1)), None);
        assert_eq!(p.sensed_edge(end), Some(end));
        // Once dropped from the list (another sent after its end), its end is still the edge.
        let later = end + SimTime(1_000_000);
        p.add_sensed(end + SimTime(10), later, later + SimTime(500), p_s2);
        assert!(p.sensed.len() == 1);
        assert_eq!(p.sensed_edge(end + SimTime(20)), Some(end));
        assert_eq!(
            p.sensed_edge(later + SimTime(500)),
            Some(later + SimTime(500))
        );
    }

    #[test]
    fn weak_signals_summing_past_the_threshold_sense_busy_on_time() {
        // Two weak signals, each below the carrier-sense threshold (1e-10 mW), together above.
        let c = cfg(ErrorModelKind::Ber, None);
        let (w1, w2) = (tx_of(1_000, 100), tx_of(50_000, 100));
        let (e1, e2) = (w1.start + w1.timing.total, w2.start + w2.timing.total);
        let mut p = Phy::new();
        p.add_weak(SimTime(0), w1.start, e1, 6e-11);
        p.add_weak(SimTime(0), w2.start, e2, 6e-11);
        assert!(!p.busy(SimTime(0), &c));
        // Ambiguous: a wake-up where carrier sense turns, telling what one event per signal
        // would have told there; none at w1's arrival, where it stays idle.
        let mut now = SimTime(0);
        let mut seen = Vec::new();
        while let Some((at, generation)) = p.weak_wake(now, &c, &mut TurnScratch::default()) {
            assert!(p.wake(at, generation));
            now = at;
            seen.push((at, p.busy(at, &c)));
        }
        assert_eq!(
            seen,
            vec![(w2.start, true), (e1, false)],
            "after e1 one weak signal is left, below the threshold alone: no more wake-ups"
        );
        // A stale wake-up is refused.
        let mut q = Phy::new();
        q.add_weak(SimTime(0), w1.start, e1, 6e-11);
        q.add_weak(SimTime(0), w2.start, e2, 6e-11);
        let (old_at, old) = q
            .weak_wake(SimTime(0), &c, &mut TurnScratch::default())
            .unwrap();
        assert_eq!(old_at, w2.start);
        // A third signal, arriving before w1, tips it at w1's arrival: sooner.
        q.add_weak(SimTime(500), SimTime(600), SimTime(60_000), 9e-11);
        let (at, new) = q
            .weak_wake(SimTime(500), &c, &mut TurnScratch::default())
            .unwrap();
        assert_eq!(at, w1.start);
        assert!(!q.wake(at, old) && q.wake(at, new));
    }

    /// Random weak signals added as a sender hands them over, signals with events arriving
    /// and ending, and the wake-ups the PHY asks for, run as the world runs them: at every
    /// instant where any signal arrives or ends, once everything due then has run, what the
    /// MAC was last told is what carrier sense answers (one event per signal would tell it
    /// there), and every wake-up that fires finds carrier sense turned unless something
    /// changed after it was asked for.
    #[test]
    fn wake_ups_tell_the_mac_every_turn_of_carrier_sense_and_only_turns() {
        use std::collections::BTreeSet;
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        enum Ev {
            Weak(usize),
            Start(usize),
            End(usize),
            Wake(u32),
            Check,
        }
        let c = cfg(ErrorModelKind::Ber, None);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let (mut turns, mut wakes, mut idle_wakes) = (0, 0, 0);
        // One for every call, as the World keeps one for all its nodes.
        let mut scratch = TurnScratch::default();
        for round in 0..400 {
            // Times on a grid in half the rounds, so that arrivals, ends and other events fall
            // on the same instants; every fifth round crowded, and every twentieth so crowded
            // that a busy node's list is too long to sweep ([`Phy::idle_turn_exact`]).
            let quantum = [1, 1, 5_000, 20_000][round % 4];
            let crowded = round % 5 == 4;
            let packed = round % 20 == 19;
            let step = |x: u64| (x / quantum).max(1) * quantum;
            let mut p = Phy::new();
            let mut rng = crate::sim::rng::stream(1, 0, "t");
            let mut queue: BTreeSet<(u64, u64, Ev)> = BTreeSet::new();
            let mut seq = 0u64;
            let mut push = |q: &mut BTreeSet<(u64, u64, Ev)>, t: u64, ev: Ev| {
                seq += 1;
                // Checks run after everything else due at the same instant.
                let order = if ev == Ev::Check { u64::MAX } else { seq };
                q.insert((t, order, ev));
            };
            // Weak signals: (handed over at, arrival, end, power); with events: (start, end, power).
            let mut weak = Vec::new();
            let mut strong = Vec::new();
            let (count, span) = if packed {
                (300 + next(40), 100_000)
            } else if crowded {
                (50 + next(20), 100_000)
            } else {
                (5 + next(30), 400_000)
            };
            for _ in 0..count {
                let sent = next(span) / quantum * quantum;
                let start = sent + step(1 + next(3_000));
                let end = start + step(1_000 + next(150_000 + 200_000 * crowded as u64));
                // Crowded: weaker, so that only some 25 of them on the air turn it busy.
                let power = (1 + next(if crowded { 9 } else { 95 })) as f64 * 1e-12;
                weak.push((sent, start, end, power));
            }
            for _ in 0..next(6) {
                let start = next(400_000) / quantum * quantum;
                strong.push((
                    start,
                    start + step(500 + next(100_000)),
                    (1 + next(90)) as f64 * 1e-12,
                ));
            }
            for (i, &(sent, start, end, _)) in weak.iter().enumerate() {
                push(&mut queue, sent, Ev::Weak(i));
                push(&mut queue, start, Ev::Check);
                push(&mut queue, end, Ev::Check);
            }
            for (i, &(start, end, _)) in strong.iter().enumerate() {
                push(&mut queue, start, Ev::Start(i));
                push(&mut queue, end, Ev::End(i));
                push(&mut queue, start, Ev::Check);
                push(&mut queue, end, Ev::Check);
            }
            let mut told = false;
            // A wake-up fired at a turn unless the node changed after asking for it.
            let mut asked_at = 0u64;
            let mut changed_since = false;
            while let Some((t, _, ev)) = queue.pop_first() {
                let now = SimTime(t);
                let asked = match ev {
                    Ev::Weak(i) => {
                        let (_, start, end, power) = weak[i];
                        p.add_weak(now, SimTime(start), SimTime(end), power);
                        changed_since = true;
                        p.weak_wake_raised(now, SimTime(start), &c, &mut scratch)
                    }
                    Ev::Start(i) => {
                        let (start, end, power) = strong[i];
                        let info = PhyTx {
                            timing: FrameTiming {
                                total: SimTime(end - start),
                                ..tx_of(start, 100).timing
                            },
                            ..tx_of(start, 100)
                        };
                        p.signal_start(now, 100 + i as u32, power, &info, &c);
                        told = p.busy(now, &c);
                        changed_since = true;
                        p.weak_wake_raised(now, now, &c, &mut scratch)
                    }
                    Ev::End(i) => {
                        p.signal_end(now, 100 + i as u32, &c, &mut rng);
                        told = p.busy(now, &c);
                        changed_since = true;
                        p.weak_wake(now, &c, &mut scratch)
                    }
                    Ev::Wake(generation) => {
                        if !p.wake(now, generation) {
                            continue;
                        }
                        let busy = p.busy(now, &c);
                        wakes += 1;
                        if busy != told {
                            turns += 1;
                        } else {
                            idle_wakes += 1;
                            assert!(
                                changed_since,
                                "a wake-up asked for at {asked_at} fired at {t} to no turn"
                            );
                        }
                        told = busy;
                        changed_since = false;
                        p.weak_wake(now, &c, &mut scratch)
                    }
                    Ev::Check => {
                        assert_eq!(told, p.busy(now, &c), "at {t} the MAC was last told {told}");
                        None
                    }
                };
                if let Some((at, generation)) = asked {
                    assert!(at > now);
                    asked_at = t;
                    changed_since = false;
                    push(&mut queue, at.ns(), Ev::Wake(generation));
                }
            }
        }
        assert!(
            TURN_EXACT_CALLS.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "no crowded round took the long list's path"
        );
        assert!(
            turns > 500,
            "the rounds turned carrier sense {turns} times at {wakes} wake-ups ({idle_wakes} found none)"
        );
    }

    #[test]
    fn weak_signals_that_cannot_tip_carrier_sense_ask_for_no_wake_up() {
        let c = cfg(ErrorModelKind::Ber, None);
        let mut p = Phy::new();
        p.add_weak(SimTime(0), SimTime(1_000), SimTime(9_000), 1e-11);
        p.add_weak(SimTime(0), SimTime(2_000), SimTime(8_000), 2e-11);
        assert_eq!(
            p.weak_wake(SimTime(0), &c, &mut TurnScratch::default()),
            None
        );
        // Already busy on strong energy alone: nothing weak can change it.
        p.signal_start(SimTime(500), 9, 5e-10, &tx_of(500, 100), &c);
        assert!(p.busy(SimTime(500), &c));
        assert_eq!(
            p.weak_wake(SimTime(500), &c, &mut TurnScratch::default()),
            None
        );
        // Over and integrated, they leave the list.
        p.add_weak(SimTime(20_000), SimTime(21_000), SimTime(22_000), 1e-11);
        assert_eq!(p.weak.len(), 1);
    }
}

#[cfg(test)]
mod signal_list_tests {
    use super::{Signal, SignalList};

    /// The inline list holds what a `Vec` with `swap_remove` would, in the same order, through
    /// spilling and coming back inline.
    #[test]
    fn signal_list_behaves_as_a_vec() {
        let mut list = SignalList::default();
        let mut reference: Vec<Signal> = Vec::new();
        let mut x: u64 = 7;
        for step in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let grow = reference.len() < 2 || (x >> 60) < 9 && reference.len() < 12;
            if grow {
                let s = Signal {
                    tx: step,
                    power_mw: step as f64,
                };
                list.push(s);
                reference.push(s);
            } else {
                let i = (x >> 33) as usize % reference.len();
                assert_eq!(list.swap_remove(i).tx, reference.swap_remove(i).tx);
            }
            assert_eq!(list.len(), reference.len());
            let a: Vec<u32> = list.as_slice().iter().map(|s| s.tx).collect();
            let b: Vec<u32> = reference.iter().map(|s| s.tx).collect();
            assert_eq!(a, b);
        }
    }
}
