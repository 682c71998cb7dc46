//! Passive TCP flavor detection (the flavor-aware link layer, seed document 003 §IV, after its
//! reference [15]: Jaiswal, Iannaccone, Diot, Kurose, Towsley, "Inferring TCP connection
//! characteristics through passive measurements", INFOCOM 2004). A [`Detector`] watches the
//! segments of TCP connections at one point of their path — a node that forwards them, or a
//! capture — with no access to the endpoints' state, and infers for each connection:
//!
//! - **SACK**: both SYNs carry the SACK-permitted option (RFC 2018).
//! - **The sender's congestion window** over time, as Jaiswal et al. do from the data in
//!   flight: the sender's flight at the moment it sent a segment is the highest sequence
//!   number it has sent less the highest acknowledgement it had received then. An observation
//!   point between the ends sees a data segment half a *sender-side round trip* `R_s` after it
//!   left the sender, and an ACK half an `R_s` before it reaches the sender, so the estimate at
//!   the arrival of a new data segment at time `t` is `snd_nxt(t) − una(t − R_s)`, both as seen
//!   here. `R_s` is read off the handshake: from the receiver's SYN (or SYN-ACK) to the
//!   sender's answer, as both pass the observation point.
//! - **Loss recovery**: three duplicate ACKs followed by a retransmission is a fast retransmit;
//!   a retransmission without them is a timeout. A fast recovery lasts until an ACK covers
//!   what was outstanding when it began (the recovery point).
//! - **Westwood by deduction**, as the document does: a fast retransmit that is *not* followed
//!   by an approximate halving of the window. The window before is the largest flight in the
//!   `R_s` before the retransmission; the window after, the largest flight in the first sender
//!   round trip after the recovery ends. A window after more than [`HALVING_SLACK`] segments
//!   above half the window before is not a halving ([`not_halved`]); Westwood is decided after
//!   [`WESTWOOD_MIN_EPISODES`] such recoveries making [`WESTWOOD_MIN_SHARE`] of them.
//! - **Reno against NewReno** (connections without SACK), from the fast-recovery behaviour
//!   under several losses in a window (Jaiswal et al.'s Reno/NewReno distinction): after a
//!   partial ACK (one that advances but stays below the recovery point) NewReno retransmits the
//!   next hole at once, so its retransmission passes here about `R_s` later; Reno leaves fast
//!   recovery and needs three new duplicate ACKs or its retransmission timer (at least 1 s,
//!   RFC 6298). A hole resent within [`PARTIAL_PROMPT_RTTS`] `R_s` of its partial ACK is
//!   NewReno's evidence, later Reno's; Reno is decided when [`RENO_MIN_LATE_SHARE`] of them
//!   were late. With SACK both recover alike (RFC 6675 scoreboard), so
//!   a SACK connection of the Reno family is reported as `newreno` (Linux's "reno" is NewReno).
//!
//! A connection is decided at its first fast recovery whose window after is known; the
//! decision is updated as evidence accumulates. Its confidence is the share of the evidence
//! that agrees with it: for Reno and NewReno the recoveries that halved the window times the
//! share of partial-ACK holes resent late (Reno) or promptly (NewReno); for Westwood the share
//! of recoveries not followed by a halving (a minority whenever losses come with a full queue,
//! see [`WESTWOOD_MIN_SHARE`]). Before any fast recovery the flavor is [`Flavor::Unknown`].
//!
//! Depends on `sim` only: callers turn their packets (simulated, or read from a capture) into
//! [`Segment`]s.

use std::collections::{HashMap, VecDeque};

use crate::sim::SimTime;

/// A window after a fast recovery more than this many segments above half the window before
/// is not a halving: Reno and NewReno set `ssthresh = FlightSize / 2` (RFC 5681), and in the
/// round trip measured after the recovery the window grows by one segment and the estimate
/// rounds up by one (xlayer's choice).
pub const HALVING_SLACK: f64 = 2.0;

/// Westwood is decided once this many fast recoveries were not followed by a halving…
pub const WESTWOOD_MIN_EPISODES: usize = 2;
/// …and they are at least this share of the fast recoveries measured: Westwood+'s window after
/// a loss, `BWE · RTTmin`, is close to a halving whenever the loss came with a full queue (the
/// RTT then near twice RTTmin), so only some of its recoveries show it (xlayer's choice, from
/// the access-point scenario of seed document 003; the README gives the accuracy elsewhere).
pub const WESTWOOD_MIN_SHARE: f64 = 0.1;

/// Reno is decided over NewReno when at least this share of the holes after partial ACKs were
/// resent late (Reno's new duplicate ACKs or timer; xlayer's choice: Reno also resends some
/// holes promptly, when new duplicate ACKs come back within the window).
pub const RENO_MIN_LATE_SHARE: f64 = 0.25;

/// Whether a fast recovery's windows (segments) before and after show no halving.
pub fn not_halved(before: f64, after: f64) -> bool {
    after > before / 2.0 + HALVING_SLACK
}

/// A hole resent within this many sender round trips of its partial ACK was resent by
/// NewReno's partial-ACK rule, not after Reno's new duplicate ACKs or timer (xlayer's choice:
/// one `R_s` for the ACK to reach the sender and the hole to come back, with room for queueing).
pub const PARTIAL_PROMPT_RTTS: f64 = 2.0;

/// The sender-side round trip assumed when the handshake was not seen (100 ms: the document's
/// round trip, and a common one on the Internet).
pub const DEFAULT_RS: SimTime = SimTime(100_000_000);

/// What a detector infers a sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flavor {
    Unknown,
    Reno,
    NewReno,
    Westwood,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Unknown => "unknown",
            Flavor::Reno => "reno",
            Flavor::NewReno => "newreno",
            Flavor::Westwood => "westwood",
        }
    }

    /// The code a `transport.flavor` event carries: 1 Reno, 2 NewReno, 3 Westwood, plus 10 with
    /// SACK (0: unknown).
    pub fn event_code(self, sack: bool) -> f64 {
        let base = match self {
            Flavor::Unknown => return 0.0,
            Flavor::Reno => 1.0,
            Flavor::NewReno => 2.0,
            Flavor::Westwood => 3.0,
        };
        base + if sack { 10.0 } else { 0.0 }
    }

    /// The flavor and SACK of an event code.
    pub fn from_event_code(code: f64) -> (Flavor, bool) {
        let c = code.round() as i64;
        let flavor = match c % 10 {
            1 => Flavor::Reno,
            2 => Flavor::NewReno,
            3 => Flavor::Westwood,
            _ => Flavor::Unknown,
        };
        (flavor, c >= 10)
    }
}

/// One TCP segment as the observation point sees it. Sequence numbers are the data sender's
/// byte offsets (64-bit, unwrapped by the caller); `from_sender` says which way it travels.
#[derive(Debug, Clone, Copy, Default)]
pub struct Segment {
    pub time: SimTime,
    pub from_sender: bool,
    pub seq: u64,
    pub ack: u64,
    pub len: u32,
    pub syn: bool,
    pub fin: bool,
    /// The ACK flag (a receiver's segment without it acknowledges nothing).
    pub ack_flag: bool,
    pub sack_permitted: bool,
    /// SACK blocks carried.
    pub sack_blocks: u8,
    /// The MSS option of a SYN (0: none).
    pub mss: u32,
}

/// A connection's evidence: the windows (before, after) of its measured fast recoveries, and
/// the holes resent promptly and late after partial ACKs.
pub type Evidence<'a> = (&'a [(f64, f64)], u32, u32);

/// What a detector says of one connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detection {
    pub flavor: Flavor,
    pub sack: bool,
    /// Share of the evidence that agrees with the flavor (0 before a decision).
    pub confidence: f64,
    /// When the current flavor was first decided.
    pub decided_at: Option<SimTime>,
    /// Fast recoveries whose window after was measured, and timeouts seen.
    pub fast_recoveries: u32,
    pub timeouts: u32,
}

/// A fast recovery in progress.
#[derive(Debug, Clone, Copy)]
struct Recovery {
    point: u64,
    window_before: f64,
    /// The latest partial ACK: its value and when it passed.
    partial: Option<(u64, SimTime)>,
}

/// A recovery that ended, whose window after is being measured.
#[derive(Debug, Clone, Copy)]
struct AfterRecovery {
    window_before: f64,
    from: SimTime,
    until: SimTime,
    max_after: f64,
}

/// The detector's state of one connection.
#[derive(Debug, Clone)]
struct Conn {
    mss: u32,
    /// SACK-permitted seen on the sender's and the receiver's SYN.
    sack_offered: [bool; 2],
    /// The receiver-side SYN (or SYN-ACK) waiting for the sender's answer, and the sender's
    /// SYN waiting for the receiver's SYN-ACK.
    receiver_syn: Option<SimTime>,
    sender_syn_seen: bool,
    rs: Option<SimTime>,
    snd_nxt: u64,
    started: bool,
    una: u64,
    /// The ACKs that advanced, (time, una), for `una(t − R_s)`.
    una_history: VecDeque<(SimTime, u64)>,
    dupacks: u32,
    /// Flight estimates of the last `R_s`: (time, segments).
    recent: VecDeque<(SimTime, f64)>,
    recovery: Option<Recovery>,
    after: Option<AfterRecovery>,
    /// Windows (before, after) of the fast recoveries measured (segments).
    ratios: Vec<(f64, f64)>,
    /// Partial-ACK evidence: holes resent promptly (NewReno) or late (Reno).
    prompt: u32,
    late: u32,
    timeouts: u32,
    decision: Detection,
    /// The latest window estimate and when it was made.
    last_window: Option<(SimTime, f64)>,
    /// The window estimate over time (segments), when traced.
    pub trace: Vec<(SimTime, f64)>,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            mss: 0,
            sack_offered: [false; 2],
            receiver_syn: None,
            sender_syn_seen: false,
            rs: None,
            snd_nxt: 0,
            started: false,
            una: 0,
            una_history: VecDeque::new(),
            dupacks: 0,
            recent: VecDeque::new(),
            recovery: None,
            after: None,
            ratios: Vec::new(),
            prompt: 0,
            late: 0,
            timeouts: 0,
            decision: Detection {
                flavor: Flavor::Unknown,
                sack: false,
                confidence: 0.0,
                decided_at: None,
                fast_recoveries: 0,
                timeouts: 0,
            },
            last_window: None,
            trace: Vec::new(),
        }
    }

    fn rs(&self) -> SimTime {
        self.rs.unwrap_or(DEFAULT_RS)
    }

    fn sack(&self) -> bool {
        self.sack_offered[0] && self.sack_offered[1]
    }

    /// The highest ACK seen at or before `t`.
    fn una_at(&self, t: SimTime) -> u64 {
        match self.una_history.iter().rposition(|&(at, _)| at <= t) {
            Some(i) => self.una_history[i].1,
            None => self
                .una_history
                .front()
                .map_or(0, |&(_, u)| u.min(self.una)),
        }
    }

    /// The window estimate (segments) at a new data segment's arrival at `t`.
    fn window_at(&self, t: SimTime) -> f64 {
        let una = if t.ns() >= self.rs().ns() {
            self.una_at(t - self.rs())
        } else {
            0
        };
        let flight = self.snd_nxt.saturating_sub(una);
        (flight as f64 / self.mss.max(1) as f64).ceil()
    }
}

/// Passive flavor detection over the connections one observation point sees, keyed by the
/// caller (a flow id, or a hash of the 4-tuple).
#[derive(Debug, Default)]
pub struct Detector {
    conns: HashMap<u64, Conn>,
    /// Keep each connection's window estimate over time.
    pub trace: bool,
}

impl Detector {
    pub fn new(trace: bool) -> Detector {
        Detector {
            conns: HashMap::new(),
            trace,
        }
    }

    /// The current detection of connection `key`.
    pub fn detection(&self, key: u64) -> Option<Detection> {
        self.conns.get(&key).map(|c| Detection {
            sack: c.sack(),
            ..c.decision
        })
    }

    /// The window estimate of `key` over time (segments), if traced.
    pub fn window_trace(&self, key: u64) -> &[(SimTime, f64)] {
        self.conns.get(&key).map_or(&[], |c| &c.trace)
    }

    /// The window ratios (after / before) of `key`'s measured fast recoveries, and its partial-ACK
    /// evidence (holes resent promptly, late).
    pub fn evidence(&self, key: u64) -> Option<Evidence<'_>> {
        self.conns
            .get(&key)
            .map(|c| (&c.ratios[..], c.prompt, c.late))
    }

    /// The latest window estimate of `key` (segments) and when it was made.
    pub fn last_window(&self, key: u64) -> Option<(SimTime, f64)> {
        self.conns.get(&key).and_then(|c| c.last_window)
    }

    /// The connections seen, in key order.
    pub fn keys(&self) -> Vec<u64> {
        let mut k: Vec<u64> = self.conns.keys().copied().collect();
        k.sort_unstable();
        k
    }

    /// Observes a segment of connection `key`. Returns the detection if it changed (a new
    /// flavor or SACK decided).
    pub fn observe(&mut self, key: u64, s: &Segment) -> Option<Detection> {
        let trace = self.trace;
        let c = self.conns.entry(key).or_insert_with(Conn::new);
        let before = (c.decision.flavor, c.sack());
        if s.syn {
            Self::handshake(c, s);
        } else if s.from_sender {
            Self::data(c, s, trace);
        } else if s.ack_flag {
            Self::ack(c, s);
        }
        if c.receiver_syn.is_some()
            && c.sender_syn_seen
            && !s.syn
            && s.from_sender
            && c.rs.is_none()
        {
            // The sender's first segment after the receiver's SYN-ACK (active open by the
            // sender): the handshake's third segment.
            let t0 = c.receiver_syn.take().expect("checked");
            c.rs = Some(s.time - t0);
        }
        let after = (c.decision.flavor, c.sack());
        (after != before).then_some(Detection {
            sack: c.sack(),
            ..c.decision
        })
    }

    fn handshake(c: &mut Conn, s: &Segment) {
        if s.mss > 0 {
            c.mss = c.mss.max(s.mss);
        }
        let side = if s.from_sender { 0 } else { 1 };
        c.sack_offered[side] |= s.sack_permitted;
        if s.from_sender {
            c.sender_syn_seen = true;
            // The sender answers the receiver's SYN (passive open by the sender).
            if let (Some(t0), None) = (c.receiver_syn, c.rs) {
                c.rs = Some(s.time - t0);
                c.receiver_syn = None;
            }
            if !c.started {
                c.snd_nxt = s.seq + 1;
                c.una = s.seq + 1;
                c.started = true;
            }
        } else {
            c.receiver_syn = Some(s.time);
        }
    }

    fn data(c: &mut Conn, s: &Segment, trace: bool) {
        if c.mss == 0 {
            c.mss = s.len.max(1);
        }
        if !c.started {
            c.snd_nxt = s.seq;
            c.una = s.seq;
            c.started = true;
        }
        let t = s.time;
        if s.len == 0 && !s.fin {
            return;
        }
        let end = s.seq + s.len as u64 + s.fin as u64;
        if s.seq >= c.snd_nxt {
            c.snd_nxt = end;
            let w = c.window_at(t);
            c.recent.push_back((t, w));
            while c.recent.front().is_some_and(|&(at, _)| at + c.rs() < t) {
                c.recent.pop_front();
            }
            c.last_window = Some((t, w));
            if trace {
                c.trace.push((t, w));
            }
            if let Some(a) = c.after.as_mut() {
                if t >= a.from && t <= a.until {
                    a.max_after = a.max_after.max(w);
                }
            }
            Self::close_after(c, t);
            return;
        }
        // A retransmission.
        match c.recovery.as_mut() {
            None => {
                if c.dupacks >= 3 {
                    let window_before = c.recent.iter().map(|&(_, w)| w).fold(0.0, f64::max);
                    c.recovery = Some(Recovery {
                        point: c.snd_nxt,
                        window_before,
                        partial: None,
                    });
                } else {
                    c.timeouts += 1;
                    c.decision.timeouts = c.timeouts;
                    c.after = None;
                }
            }
            Some(r) => {
                if let Some((hole, at)) = r.partial {
                    if s.seq == hole {
                        let prompt = t - at
                            <= SimTime::from_secs_f64(
                                c.rs.unwrap_or(DEFAULT_RS).as_secs_f64() * PARTIAL_PROMPT_RTTS,
                            );
                        if prompt {
                            c.prompt += 1;
                        } else {
                            c.late += 1;
                        }
                        r.partial = None;
                        Self::decide(c, t);
                    }
                }
            }
        }
    }

    fn ack(c: &mut Conn, s: &Segment) {
        let t = s.time;
        if s.ack > c.una {
            c.una = s.ack;
            c.dupacks = 0;
            c.una_history.push_back((t, s.ack));
            // Keep one entry older than R_s for `una_at(t − R_s)`.
            while c.una_history.len() > 1 && c.una_history[1].0 + c.rs() < t {
                c.una_history.pop_front();
            }
            let rs = c.rs();
            if let Some(r) = c.recovery.as_mut() {
                if s.ack >= r.point {
                    c.after = Some(AfterRecovery {
                        window_before: r.window_before,
                        from: t + rs,
                        until: t + rs + rs,
                        max_after: 0.0,
                    });
                    c.recovery = None;
                } else {
                    r.partial = Some((s.ack, t));
                }
            }
        } else if s.ack == c.una && s.len == 0 && !s.fin && c.snd_nxt > c.una {
            c.dupacks += 1;
        }
        Self::close_after(c, t);
    }

    /// Ends the measurement of a window after recovery once its round trip has passed.
    fn close_after(c: &mut Conn, t: SimTime) {
        let Some(a) = c.after else {
            return;
        };
        if t <= a.until {
            return;
        }
        c.after = None;
        if a.window_before > 0.0 && a.max_after > 0.0 {
            c.ratios.push((a.window_before, a.max_after));
            c.decision.fast_recoveries = c.ratios.len() as u32;
            Self::decide(c, t);
        }
    }

    /// Decides the flavor from the evidence so far.
    fn decide(c: &mut Conn, t: SimTime) {
        if c.ratios.is_empty() {
            return;
        }
        let n = c.ratios.len();
        let kept = c.ratios.iter().filter(|&&(b, a)| not_halved(b, a)).count();
        let (flavor, confidence) =
            if kept >= WESTWOOD_MIN_EPISODES && kept as f64 >= WESTWOOD_MIN_SHARE * n as f64 {
                (Flavor::Westwood, kept as f64 / n as f64)
            } else if c.sack() {
                (Flavor::NewReno, (n - kept) as f64 / n as f64)
            } else {
                let family = (n - kept) as f64 / n as f64;
                let (p, l) = (c.prompt as f64, c.late as f64);
                if l > 0.0 && l >= RENO_MIN_LATE_SHARE * (p + l) {
                    (Flavor::Reno, family * l / (p + l))
                } else if p > 0.0 {
                    (Flavor::NewReno, family * p / (p + l))
                } else {
                    // No several-loss window seen yet: Reno, the commonest, until NewReno shows.
                    (Flavor::Reno, family * 0.5)
                }
            };
        if flavor != c.decision.flavor {
            c.decision.decided_at = Some(t);
        }
        c.decision.flavor = flavor;
        c.decision.confidence = confidence;
    }
}
