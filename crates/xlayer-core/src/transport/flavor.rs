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

/// CUBIC's multiplicative decrease: after a loss the window is β·W (RFC 9438 §4.6, β_cubic =
/// 0.7; Linux's `beta` of 717/1024). A recovery whose window after lies above a halving
/// ([`not_halved`]) and below [`KEPT_RATIO`] of the window before is CUBIC's evidence.
pub const CUBIC_BETA: f64 = 0.7;

/// A window after a fast recovery at least this share of the window before was *kept*: BBR
/// does not reduce its window on loss (Cardwell et al., "BBR: Congestion-Based Congestion
/// Control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-control §4.3.4.1:
/// in loss recovery it only conserves packets for a round, then restores the window), and
/// CUBIC's 0.7 sits well below it (xlayer's choice, between the two).
pub const KEPT_RATIO: f64 = 0.9;

/// CUBIC is decided once this many recoveries fell between a halving and a kept window…
pub const CUBIC_MIN_EPISODES: usize = 2;
/// …and they are at least this share of the recoveries measured (xlayer's choice: Westwood+'s
/// windows after a loss spread from well below a halving to above it, CUBIC's gather at β).
pub const CUBIC_MIN_SHARE: f64 = 0.6;

/// BBR's ProbeRTT: every [`BBR_PROBE_RTT_INTERVAL`] without a new minimum RTT it cuts its
/// window to [`BBR_PROBE_RTT_CWND`] segments for at least [`BBR_PROBE_RTT_DURATION`] and a
/// round trip (draft-cardwell-iccrg-bbr-congestion-control §4.3.4.4: `BBRMinPipeCwnd` = 4,
/// `ProbeRTTDuration` = 200 ms, `MinRTTFilterLen` = 10 s; Linux `tcp_bbr.c`).
pub const BBR_PROBE_RTT_CWND: f64 = 4.0;
pub const BBR_PROBE_RTT_DURATION: SimTime = SimTime(200_000_000);
pub const BBR_PROBE_RTT_INTERVAL: SimTime = SimTime(10_000_000_000);

/// A window estimate at most this many segments is in a dip: ProbeRTT's 4 segments, with two
/// of slack for the estimate's rounding up and an ACK crossing (xlayer's choice).
pub const DIP_MAX_SEGMENTS: f64 = BBR_PROBE_RTT_CWND + 2.0;
/// Estimates in a dip stay at least this many segments: ProbeRTT holds 4 segments in flight
/// (3 with an ACK crossing), where the slow start after a timeout begins at 1 or 2
/// (xlayer's choice).
pub const DIP_MIN_SEGMENTS: f64 = BBR_PROBE_RTT_CWND - 1.0;
/// A dip counts only from a window at least this many times [`DIP_MAX_SEGMENTS`] in the
/// [`DIP_PEAK_ROUNDS`] round trips before it (a connection that never grew has no dips to
/// show)…
pub const DIP_PEAK_FACTOR: f64 = 2.5;
pub const DIP_PEAK_ROUNDS: f64 = 4.0;
/// …and only when the window comes back to at least this many segments within ProbeRTT's
/// time: ProbeRTT restores the window it saved (draft-cardwell-iccrg-bbr-congestion-control
/// §4.3.4.4, `BBRRestoreCwnd`) and the flight refills at the pacing rate within a round or two,
/// where a Reno or CUBIC window shrunk by losses grows back about one segment a round
/// (xlayer's choice: twice the dip's ceiling).
pub const DIP_RESTORED_SEGMENTS: f64 = 2.0 * DIP_MAX_SEGMENTS;
/// A dip counts when its estimates stay at most [`DIP_MAX_SEGMENTS`] for at least this long
/// (ProbeRTT's 200 ms, less the spacing of the few segments sent meanwhile; xlayer's
/// choice)…
pub const DIP_MIN: SimTime = SimTime(150_000_000);
/// …and the window comes back within [`BBR_PROBE_RTT_DURATION`] + this many round trips
/// (ProbeRTT lasts 200 ms and a round, and the window is restored at once; a slow start after
/// a timeout takes longer).
pub const DIP_MAX_ROUNDS: f64 = 3.0;
/// A dip starting within this many round trips of a retransmission is the loss recovery's
/// (a window shrunk by several losses), not ProbeRTT's, which no loss starts; retransmissions
/// during a dip do not void it (xlayer's choice).
pub const DIP_CAUSE_ROUNDS: f64 = 2.0;
/// A dip counts only when the window climbs from it to [`DIP_RESTORED_SEGMENTS`] within this
/// many round trips of its last low estimate: BBR restores its saved window and refills the
/// flight at its pacing rate in well under a round (about half a round on the tuning
/// captures), where a slow start needs a round per doubling (xlayer's choice).
pub const DIP_RESTORE_ROUNDS: f64 = 0.8;
/// Dips within this long after a timeout are its slow start's, not ProbeRTT's.
pub const DIP_QUIET: SimTime = SimTime(1_000_000_000);
/// A dip counts only this share of [`BBR_PROBE_RTT_INTERVAL`] or more after the first data
/// segment or the previous dip: BBR's min-RTT filter expires only that long after the sample
/// it holds (xlayer's choice of 0.9: the filter restarts at its first sample, a round trip
/// after the first data).
pub const DIP_INTERVAL_SHARE: f64 = 0.9;
/// BBR is decided on this many ProbeRTT dips, unless at least [`BBR_MAX_HALVED_SHARE`] of
/// the recoveries halved the window (a Reno-family connection) or at most
/// [`CUBIC_MAX_KEPT_SHARE`] kept it (CUBIC). Without a dip — a connection
/// shorter than ProbeRTT's interval — BBR's windows after losses (mostly kept, some near a
/// halving after its round of packet conservation) look like Westwood+'s, and it is reported
/// as `westwood`.
pub const BBR_MIN_DIPS: u32 = 1;
pub const BBR_MAX_HALVED_SHARE: f64 = 0.5;
/// CUBIC is not decided when more than this share of the recoveries kept the window
/// (xlayer's choice: 0 to 6 % of CUBIC's recoveries on the tuning captures, 30 % or more of
/// BBR's and Westwood+'s).
pub const CUBIC_MAX_KEPT_SHARE: f64 = 0.15;

/// What a detector infers a sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flavor {
    Unknown,
    Reno,
    NewReno,
    Westwood,
    /// CUBIC (RFC 9438), Linux's default: β = 0.7 after a loss.
    Cubic,
    /// BBR (Cardwell et al. 2016): no loss-driven reduction, ProbeRTT dips.
    Bbr,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Unknown => "unknown",
            Flavor::Reno => "reno",
            Flavor::NewReno => "newreno",
            Flavor::Westwood => "westwood",
            Flavor::Cubic => "cubic",
            Flavor::Bbr => "bbr",
        }
    }

    /// The code a `transport.flavor` event carries: 1 Reno, 2 NewReno, 3 Westwood, 4 CUBIC,
    /// 5 BBR, plus 10 with SACK (0: unknown).
    pub fn event_code(self, sack: bool) -> f64 {
        let base = match self {
            Flavor::Unknown => return 0.0,
            Flavor::Reno => 1.0,
            Flavor::NewReno => 2.0,
            Flavor::Westwood => 3.0,
            Flavor::Cubic => 4.0,
            Flavor::Bbr => 5.0,
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
            4 => Flavor::Cubic,
            5 => Flavor::Bbr,
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

/// A stretch of low window estimates that may be a ProbeRTT dip.
#[derive(Debug, Clone, Copy)]
struct Dip {
    start: SimTime,
    /// The last estimate at most [`DIP_MAX_SEGMENTS`].
    last_low: SimTime,
    /// The window it fell from.
    peak: f64,
    /// Not a loss recovery's or a timeout's, from a large enough window, late enough.
    valid: bool,
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
    /// The sender's SYN (or SYN-ACK) waiting for the receiver's answer, and the
    /// *receiver-side* round trip it gives (here → receiver → here).
    sender_syn: Option<SimTime>,
    rr: Option<SimTime>,
    /// The last duplicate ACK carried SACK blocks.
    dup_sack: bool,
    /// Window estimates of the last [`BBR_PROBE_RTT_INTERVAL`]'s peaks: (time, segments), kept
    /// decreasing so the front is the largest.
    peaks: VecDeque<(SimTime, f64)>,
    /// A stretch of low estimates in progress: when it began, the window it fell from, and
    /// whether it can be a ProbeRTT dip (not a loss recovery's or a timeout's, from a large
    /// enough window, late enough).
    dip: Option<Dip>,
    /// The first new data segment.
    first_data: Option<SimTime>,
    /// When each counted dip began.
    dips: Vec<SimTime>,
    /// The last retransmission without a fast retransmit (a timeout), and the last of any kind.
    last_timeout: Option<SimTime>,
    last_retransmit: Option<SimTime>,
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
            sender_syn: None,
            rr: None,
            dup_sack: false,
            peaks: VecDeque::new(),
            dip: None,
            dips: Vec::new(),
            first_data: None,
            last_timeout: None,
            last_retransmit: None,
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

    /// The span over which windows are measured: the longer of the two round trips the
    /// handshake shows (here → sender → here, here → receiver → here), so one sender round
    /// trip wherever the observation point is — at the sender the first is nearly zero, at the
    /// receiver the second.
    fn period(&self) -> SimTime {
        match (self.rs, self.rr) {
            (Some(a), Some(b)) => a.max(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => DEFAULT_RS,
        }
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

    /// A new sample of `key`'s sender-side round trip (here → sender → here), e.g. from TCP
    /// timestamps (RFC 7323: a data segment echoing the TSval of an ACK that passed here), which
    /// follows the queueing the handshake did not see. The estimate moves by 1/8 of the
    /// difference (RFC 6298's α).
    pub fn round_trip_sample(&mut self, key: u64, sample: SimTime) {
        if let Some(c) = self.conns.get_mut(&key) {
            let rs = match c.rs {
                None => sample,
                Some(old) => SimTime::from_secs_f64(
                    old.as_secs_f64() + (sample.as_secs_f64() - old.as_secs_f64()) / 8.0,
                ),
            };
            c.rs = Some(rs);
        }
    }

    /// When each ProbeRTT dip seen on `key` began, and its two round trips (here → sender →
    /// here, the latest estimate; here → receiver → here, from the handshake), when known.
    pub fn dips_and_round_trips(
        &self,
        key: u64,
    ) -> Option<(&[SimTime], Option<SimTime>, Option<SimTime>)> {
        self.conns.get(&key).map(|c| (&c.dips[..], c.rs, c.rr))
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
        if !s.syn && !s.from_sender && c.rr.is_none() {
            // The receiver's answer to the sender's SYN-ACK (passive open by the sender).
            if let Some(t0) = c.sender_syn.take() {
                c.rr = Some(s.time.saturating_sub(t0));
            }
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
            if c.rr.is_none() {
                c.sender_syn = Some(s.time);
            }
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
            // The receiver answers the sender's SYN (active open by the sender).
            if let (Some(t0), None) = (c.sender_syn, c.rr) {
                c.rr = Some(s.time.saturating_sub(t0));
                c.sender_syn = None;
            }
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
            let period = c.period();
            while c.recent.front().is_some_and(|&(at, _)| at + period < t) {
                c.recent.pop_front();
            }
            c.first_data.get_or_insert(t);
            Self::track_dips(c, t, w);
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
        c.last_retransmit = Some(t);
        match c.recovery.as_mut() {
            None => {
                // Three duplicate ACKs (RFC 5681); with SACK, fewer whose SACK blocks show
                // data beyond a hole (RFC 6675's IsLost, Linux's RACK, RFC 8985).
                if c.dupacks >= 3 || (c.sack() && c.dupacks >= 1 && c.dup_sack) {
                    let window_before = c.recent.iter().map(|&(_, w)| w).fold(0.0, f64::max);
                    c.recovery = Some(Recovery {
                        point: c.snd_nxt,
                        window_before,
                        partial: None,
                    });
                } else {
                    c.last_timeout = Some(t);
                    c.dip = None;
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
        if s.sack_blocks > 0 {
            // SACK in use, though the handshake may not have been captured.
            c.sack_offered = [true, true];
        }
        if s.ack > c.una {
            c.una = s.ack;
            c.dupacks = 0;
            c.dup_sack = false;
            c.una_history.push_back((t, s.ack));
            // Keep one entry older than R_s for `una_at(t − R_s)`.
            while c.una_history.len() > 1 && c.una_history[1].0 + c.rs() < t {
                c.una_history.pop_front();
            }
            let (rs, period) = (c.rs(), c.period());
            if let Some(r) = c.recovery.as_mut() {
                if s.ack >= r.point {
                    c.after = Some(AfterRecovery {
                        window_before: r.window_before,
                        from: t + rs,
                        until: t + rs + period,
                        max_after: 0.0,
                    });
                    c.recovery = None;
                } else {
                    r.partial = Some((s.ack, t));
                }
            }
        } else if s.ack == c.una && s.len == 0 && !s.fin && c.snd_nxt > c.una {
            c.dupacks += 1;
            c.dup_sack = s.sack_blocks > 0;
        }
        Self::close_after(c, t);
    }

    /// Follows the window estimate for BBR's ProbeRTT dips: a fall to at most
    /// [`DIP_MAX_SEGMENTS`] from a window [`DIP_PEAK_FACTOR`] times larger, lasting at least
    /// [`DIP_MIN`] and recovering within ProbeRTT's time, with no timeout in it or shortly
    /// before (a slow start after a timeout dips too).
    fn track_dips(c: &mut Conn, t: SimTime, w: f64) {
        while c
            .peaks
            .front()
            .is_some_and(|&(at, _)| at + BBR_PROBE_RTT_INTERVAL < t)
        {
            c.peaks.pop_front();
        }
        let quiet = c
            .last_timeout
            .is_none_or(|r| t.saturating_sub(r) > DIP_QUIET);
        let period = c.period().as_secs_f64();
        // A dip that starts within DIP_CAUSE_ROUNDS of a retransmission is the loss
        // recovery's.
        let caused = c.recovery.is_some()
            || c.last_retransmit.is_some_and(|r| {
                t.saturating_sub(r).as_secs_f64() <= DIP_CAUSE_ROUNDS * period.max(0.01)
            });
        // ProbeRTT comes no sooner than its interval after the connection's first round trip
        // sample, or after the previous ProbeRTT.
        let since = c.dips.last().copied().or(c.first_data).unwrap_or(t);
        let due = t.saturating_sub(since).as_secs_f64()
            >= DIP_INTERVAL_SHARE * BBR_PROBE_RTT_INTERVAL.as_secs_f64();
        match c.dip {
            None if w <= DIP_MAX_SEGMENTS => {
                // The largest window of the last rounds: the first of the decreasing peaks
                // that falls in them.
                let from = SimTime::from_secs_f64(
                    (t.as_secs_f64() - DIP_PEAK_ROUNDS * period.max(0.01)).max(0.0),
                );
                let peak = c
                    .peaks
                    .iter()
                    .find(|&&(at, _)| at >= from)
                    .map_or(0.0, |&(_, p)| p);
                let valid = quiet
                    && !caused
                    && due
                    && w >= DIP_MIN_SEGMENTS
                    && peak >= DIP_PEAK_FACTOR * DIP_MAX_SEGMENTS;
                c.dip = Some(Dip {
                    start: t,
                    last_low: t,
                    peak,
                    valid,
                });
            }
            Some(mut dip) => {
                let lasted = (t - dip.start).as_secs_f64();
                let longest = BBR_PROBE_RTT_DURATION.as_secs_f64() + DIP_MAX_ROUNDS * period;
                if !quiet || w < DIP_MIN_SEGMENTS {
                    dip.valid = false;
                }
                if w <= DIP_MAX_SEGMENTS {
                    dip.last_low = t;
                    c.dip = Some(dip);
                } else if !dip.valid || lasted > longest {
                    c.dip = None;
                } else if w >= DIP_RESTORED_SEGMENTS.min(dip.peak) {
                    c.dip = None;
                    let climb = (t - dip.last_low).as_secs_f64();
                    if dip.last_low - dip.start >= DIP_MIN && climb <= DIP_RESTORE_ROUNDS * period {
                        c.dips.push(dip.start);
                        Self::decide(c, t);
                    }
                } else {
                    c.dip = Some(dip);
                }
            }
            None => {}
        }
        while c.peaks.back().is_some_and(|&(_, p)| p <= w) {
            c.peaks.pop_back();
        }
        c.peaks.push_back((t, w));
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

    /// Decides the flavor from the evidence so far: ProbeRTT dips make BBR; otherwise the
    /// windows after fast recoveries — mostly kept: BBR; mostly between a halving and kept:
    /// CUBIC; some not halved: Westwood; halved: the Reno family, told apart by the partial
    /// ACKs.
    fn decide(c: &mut Conn, t: SimTime) {
        let n = c.ratios.len();
        let halved = c.ratios.iter().filter(|&&(b, a)| !not_halved(b, a)).count();
        let kept = c
            .ratios
            .iter()
            .filter(|&&(b, a)| not_halved(b, a) && a >= KEPT_RATIO * b)
            .count();
        let between = n - halved - kept;
        let (flavor, confidence) = if c.dips.len() as u32 >= BBR_MIN_DIPS
            && (n == 0
                || ((halved as f64) < BBR_MAX_HALVED_SHARE * n as f64
                    && kept as f64 > CUBIC_MAX_KEPT_SHARE * n as f64))
        {
            let d = c.dips.len() as f64;
            (Flavor::Bbr, (d + (n - halved) as f64) / (d + n as f64))
        } else if n == 0 {
            return;
        } else if between >= CUBIC_MIN_EPISODES
            && between as f64 >= CUBIC_MIN_SHARE * n as f64
            && kept as f64 <= CUBIC_MAX_KEPT_SHARE * n as f64
        {
            (Flavor::Cubic, between as f64 / n as f64)
        } else if n - halved >= WESTWOOD_MIN_EPISODES
            && (n - halved) as f64 >= WESTWOOD_MIN_SHARE * n as f64
        {
            (Flavor::Westwood, (n - halved) as f64 / n as f64)
        } else if c.sack() {
            (Flavor::NewReno, halved as f64 / n as f64)
        } else {
            let family = halved as f64 / n as f64;
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

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const RTT: f64 = 0.1;

    /// A bulk sender watched at the sender itself, round by round and ACK-clocked: in round
    /// `k` each ACK of round `k − 1`'s segments arrives and releases one of round `k`'s
    /// (`windows[k]` of them, spread over the round trip). A round listed in `losses` loses its
    /// first segment: the ACKs of that round then repeat the hole (with SACK blocks when
    /// `sack`), the sender resends it after the third, and the first ACK of the round after
    /// covers everything (the recovery's end). Returns the detector and its decision.
    fn sender(windows: &[u32], losses: &[usize], sack: bool) -> (Detector, Detection) {
        let mut d = Detector::new(true);
        let at = |t: f64| SimTime::from_secs_f64(t);
        let seg = |t: f64, from_sender: bool| Segment {
            time: at(t),
            from_sender,
            ack_flag: true,
            sack_permitted: sack,
            mss: MSS as u32,
            ..Segment::default()
        };
        // Handshake: the sender's SYN, the receiver's SYN-ACK a round trip later, the ACK.
        let mut t = 0.0f64;
        d.observe(
            0,
            &Segment {
                syn: true,
                ack_flag: false,
                ..seg(t, true)
            },
        );
        t += RTT;
        d.observe(
            0,
            &Segment {
                syn: true,
                ..seg(t, false)
            },
        );
        t += 1e-6;
        d.observe(
            0,
            &Segment {
                seq: 1,
                ack: 1,
                ..seg(t, true)
            },
        );
        let mut next = 1u64; // next new byte
        let mut prev: Vec<u64> = Vec::new(); // the last round's segments (their ends)
        let mut hole: Option<u64> = None; // the first segment of a lossy round
        for (k, &w) in windows.iter().enumerate() {
            let start = t + 1e-6;
            let steps = prev.len().max(w as usize).max(1);
            let step = RTT / steps as f64;
            let mut cur = Vec::new();
            let mut dups = 0;
            for i in 0..steps {
                t = start + i as f64 * step;
                if let Some(&end) = prev.get(i) {
                    let ack = match hole {
                        Some(h) if end > h => {
                            dups += 1;
                            h
                        }
                        _ => end,
                    };
                    let a = Segment {
                        ack,
                        sack_blocks: u8::from(sack && ack != end),
                        ..seg(t, false)
                    };
                    d.observe(0, &a);
                    if dups == 3 {
                        let h = hole.expect("dupacks only after a loss");
                        d.observe(
                            0,
                            &Segment {
                                seq: h,
                                len: MSS as u32,
                                ..seg(t + 1e-7, true)
                            },
                        );
                    }
                }
                if i < w as usize {
                    let s = Segment {
                        seq: next,
                        len: MSS as u32,
                        ..seg(t + 2e-7, true)
                    };
                    d.observe(0, &s);
                    next += MSS;
                    cur.push(next);
                }
            }
            if hole.take().is_some() {
                // The retransmission arrived: the next ACK covers the whole lossy round.
                let all = prev.last().copied().unwrap_or(next);
                d.observe(
                    0,
                    &Segment {
                        ack: all,
                        ..seg(t + 3e-7, false)
                    },
                );
            }
            if losses.contains(&k) {
                hole = cur.first().map(|&end| end - MSS);
            }
            prev = cur;
            t = start + RTT - 1e-6;
        }
        let det = d.detection(0).expect("seen");
        (d, det)
    }

    /// Windows growing by one a round from `from`, cut to `beta` of themselves at each loss
    /// (every `every` rounds), for `rounds` rounds; the rounds with a loss.
    fn sawtooth(from: u32, beta: f64, every: usize, rounds: usize) -> (Vec<u32>, Vec<usize>) {
        let mut w = from as f64;
        let (mut ws, mut losses) = (Vec::new(), Vec::new());
        for k in 0..rounds {
            ws.push(w.round() as u32);
            if k % every == every - 1 {
                losses.push(k);
                w *= beta;
            } else {
                w += 1.0;
            }
        }
        (ws, losses)
    }

    #[test]
    fn halving_windows_are_newreno_with_sack() {
        let (w, l) = sawtooth(40, 0.5, 12, 120);
        let (_, det) = sender(&w, &l, true);
        assert_eq!((det.flavor, det.sack), (Flavor::NewReno, true));
        assert!(det.confidence > 0.9, "{det:?}");
    }

    #[test]
    fn a_decrease_to_seven_tenths_is_cubic() {
        let (w, l) = sawtooth(40, CUBIC_BETA, 12, 120);
        let (d, det) = sender(&w, &l, true);
        assert_eq!(det.flavor, Flavor::Cubic, "{:?}", d.evidence(0));
        assert!(det.confidence > 0.9);
        for (b, a) in d.evidence(0).unwrap().0 {
            assert!((a / b - 0.7).abs() < 0.12, "window after {a} of {b}");
        }
    }

    #[test]
    fn a_dip_to_four_segments_after_ten_seconds_without_loss_is_bbr() {
        // 30 segments a round, losses that do not reduce the window, and ProbeRTT at 12 s:
        // 4 segments for 200 ms and a round (3 rounds), then the window again.
        let mut w = vec![30u32; 200];
        for r in w.iter_mut().skip(120).take(3) {
            *r = 4;
        }
        let losses = [20, 50, 80, 150];
        let (d, det) = sender(&w, &losses, true);
        assert_eq!(det.flavor, Flavor::Bbr, "{:?}", d.dips_and_round_trips(0));
        assert_eq!(d.dips_and_round_trips(0).unwrap().0.len(), 1);
        // Without the dip the kept windows read as Westwood (see BBR_MIN_DIPS).
        let (_, det) = sender(&vec![30u32; 200], &losses, true);
        assert_eq!(det.flavor, Flavor::Westwood);
    }

    #[test]
    fn a_dip_in_the_first_seconds_or_right_after_a_loss_is_not_probe_rtt() {
        let mut w = vec![30u32; 200];
        for r in w.iter_mut().skip(30).take(3) {
            *r = 4; // at 3 s: too early for ProbeRTT
        }
        for r in w.iter_mut().skip(151).take(3) {
            *r = 4; // right after the loss of round 150
        }
        let (d, det) = sender(&w, &[20, 50, 80, 150], true);
        assert!(d.dips_and_round_trips(0).unwrap().0.is_empty());
        assert_ne!(det.flavor, Flavor::Bbr);
    }

    #[test]
    fn tiny_windows_keep_the_confidence_a_share() {
        // Windows of 2-3 segments: a recovery can look both halved and kept.
        let w: Vec<u32> = (0..120).map(|k| 2 + (k % 2) as u32).collect();
        let losses: Vec<usize> = (5..120).step_by(6).collect();
        let (_, det) = sender(&w, &losses, true);
        assert!((0.0..=1.0).contains(&det.confidence), "{det:?}");
    }

    #[test]
    fn event_codes_round_trip_for_every_flavor() {
        for f in [
            Flavor::Reno,
            Flavor::NewReno,
            Flavor::Westwood,
            Flavor::Cubic,
            Flavor::Bbr,
        ] {
            for sack in [false, true] {
                assert_eq!(Flavor::from_event_code(f.event_code(sack)), (f, sack));
            }
        }
        assert_eq!(Flavor::from_event_code(0.0).0, Flavor::Unknown);
    }
}
