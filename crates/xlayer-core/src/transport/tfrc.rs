//! TFRC, TCP-Friendly Rate Control (RFC 5348), and TFRC-ECN as the DiffQ evaluation uses it.
//!
//! Sans-IO state machines: [`TfrcSender`] and [`TfrcReceiver`] never own a clock, a queue or a
//! random stream. The owner passes `now` and the headers it moved, and asks for the next
//! deadlines ([`TfrcSender::next_send`], [`TfrcSender::nofeedback_deadline`],
//! [`TfrcReceiver::feedback_due`]). The transport layer depends only on [`crate::sim::SimTime`].
//!
//! The model, section by section of RFC 5348:
//!
//! - §3.1 — the TCP throughput equation with b = 1 and t_RTO = 4R ([`tcp_throughput_equation`]).
//! - §3.2.1/§3.2.2 — the data header ([`TfrcData`]: sequence number, timestamp, the sender's RTT
//!   estimate) and the feedback report ([`TfrcFeedback`]: echoed timestamp, the time the report
//!   waited at the receiver, X_recv, p).
//! - §4.2 — the sender starts at one segment per second with a 2 s nofeedback timer; the first
//!   feedback sets R and the initial rate W_init/R with W_init = min(4s, max(2s, 4380 bytes)).
//! - §4.3 — per feedback: R sample, EWMA with q = 0.9, t_RTO = max(4R, 2s/X); slow start doubles
//!   X at most once per R, limited by recv_limit = 2·max(X_recv_set); once p > 0 the rate is
//!   X = max(min(X_Bps, recv_limit), s/t_mbi) with t_mbi = 64 s. X_recv_set starts as
//!   {Infinity}, so the first two RTTs double freely; afterwards a report's X_recv describes
//!   packets sent one to two RTTs before it arrives, and the RFC's slow start grows by 2× per one
//!   to two RTTs rather than per RTT (pinned by a test).
//! - §4.4 — nofeedback expiry halves the rate (directly while p = 0, through Update_Limits
//!   once p > 0) unless the sender was idle at a low rate, and re-arms after max(4R, 2s/X).
//! - §4.6 — packets are spaced s/X apart.
//! - §5.1/§5.2 — a packet is lost once NDUPACK = 3 packets with higher sequence numbers have
//!   arrived; its nominal arrival time is interpolated; losses whose nominal times fall within R
//!   of the start of the current loss event belong to it.
//! - §5.3/§5.4 — the average loss interval over n = 8 intervals with weights
//!   (1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2), taking the open interval I_0 into account only when it
//!   raises the mean (max of the two sums); p = 1/I_mean.
//! - §6.1/§6.2/§6.3 — the receiver reports on the first packet, immediately when p increases,
//!   and otherwise once per R_m (the RTT carried by the data) while data arrives.
//! - §6.3.1 — the first loss interval is synthetic: 1/p for the p at which the equation gives the
//!   largest X_recv seen so far ([`loss_event_rate_for_throughput`]).
//!
//! TFRC-ECN ([`TfrcConfig::ecn`]) follows the DiffQ paper's baseline description (seed document
//! 002, §6.1 "Experimental Setup", TFRC-ECN): "we switch off TFRC's response to packet losses. Instead, intermediate
//! nodes … set the ECN bit in the IP header whenever the queue size exceeds 75% of the maximum
//! queue size. Marked packets within an RTT are treated as a congestion event." The marking is
//! the network's job; here a CE-marked arrival starts a loss event, CE marks whose arrival falls
//! within R_m of the event's start belong to it, and sequence gaps never count. Plain TFRC treats
//! a CE mark exactly like a loss (RFC 3168 §5: CE is a congestion indication equivalent to a
//! dropped packet).
//!
//! Simplifications (each repeated where it is implemented):
//!
//! - The sender is never considered data-limited (§8.2.1 is not implemented): X_recv_set is always
//!   updated with the "typical behavior" branch of §4.3 step 4. An application cap
//!   ([`TfrcConfig::max_rate_bps`]) limits the packets actually sent; X_recv then follows the
//!   cap, so recv_limit keeps the allowed rate within twice the cap.
//! - No oscillation reduction (§4.5, optional) and no burst allowance t_gap (§4.6, optional).
//! - X_recv is measured in packets and scaled by s (received packets × s / interval), so that it
//!   is in the same unit as X; the RFC allows the packet-rate form (§6.3.1, "X_pps").
//! - X_recv_set (§4.3) is kept as a fixed array of [`X_RECV_SET_CAPACITY`] timestamped entries;
//!   when it is full the oldest entry is replaced.
//! - t_RTO is computed with the X just updated rather than the X before the report (§4.3 step 3
//!   computes it first), as Linux DCCP CCID-3 does; see [`TfrcSender::on_feedback`].
//! - Update_Limits (§4.4) also lowers the cached X_recv to timer_limit/2, so that repeated
//!   expiries keep halving (Linux CCID-3 again); see [`TfrcSender::on_nofeedback`].
//!
//! No randomness and no per-packet heap allocation: the receive history, the loss intervals and
//! X_recv_set are fixed arrays inside the structs.

pub use crate::wire::tfrc::{TfrcData, TfrcFeedback};

use crate::sim::SimTime;

/// Packets with a higher sequence number that must arrive before a missing one is declared lost
/// (RFC 5348 §5.1, NDUPACK = 3).
pub const NDUPACK: u64 = 3;

/// Weight of the old estimate in the RTT moving average (RFC 5348 §4.3 step 2, q = 0.9).
pub const RTT_EWMA_Q: f64 = 0.9;

/// Maximum backoff interval: the rate never falls below s/t_mbi (RFC 5348 §4.3, t_mbi = 64 s).
pub const T_MBI: SimTime = SimTime::from_ms(64_000);

/// Nofeedback timer before the first RTT sample (RFC 5348 §4.2: "set to expire after two seconds").
pub const INITIAL_NOFEEDBACK: SimTime = SimTime::from_ms(2_000);

/// Upper bound on the byte term of the initial window (RFC 5348 §4.2 after RFC 3390:
/// W_init = min(4s, max(2s, 4380))).
pub const INITIAL_WINDOW_BYTES: u32 = 4380;

/// Number of closed loss intervals averaged (RFC 5348 §5.4, n = 8).
pub const LOSS_INTERVALS: usize = 8;

/// The weights w_0 … w_7 of RFC 5348 §5.4: w_i = 1 for i < n/2, else 2(n − i)/(n + 2).
pub const LOSS_INTERVAL_WEIGHTS: [f64; LOSS_INTERVALS] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// Sequence numbers the receiver keeps for loss detection. Not in the RFC (which leaves the
/// history's size to the implementation): 128 packets is far more than the NDUPACK = 3 reordering
/// window needs. A packet arriving 128 or more sequence numbers ahead of the oldest unresolved
/// one forces the unresolved holes to be declared lost; a packet older than the resolved
/// frontier is counted for X_recv but no longer changes the loss history.
pub const RECEIVE_HISTORY: usize = 128;

/// Capacity of the sender's X_recv_set. Not in the RFC: the set holds the reports of the last two
/// RTTs, about three at one report per RTT plus reports triggered by loss; 8 leaves room. When
/// full the oldest entry is dropped.
pub const X_RECV_SET_CAPACITY: usize = 8;

/// Smallest RTT sample accepted, in seconds. Not in the RFC: a guard so that a zero sample (equal
/// timestamps in simulation) cannot make the equation divide by zero. 1 µs is below any wireless
/// multi-hop round trip.
pub const MIN_RTT_SAMPLE_S: f64 = 1e-6;

/// Search range of p when inverting the equation for the first loss interval (§6.3.1). Not in the
/// RFC: 1e-10 corresponds to a loss interval far longer than any simulation, 1 to every packet.
const P_SEARCH_MIN: f64 = 1e-10;
const P_SEARCH_MAX: f64 = 1.0;
/// Bisection steps over log p; 100 halvings of a 23-decade range leave an error far inside the
/// RFC's "within 5% of X_target".
const P_SEARCH_STEPS: u32 = 100;

/// Configuration shared by a TFRC sender and its receiver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TfrcConfig {
    /// Segment size s in bytes used by the throughput equation and the send schedule (the whole
    /// packet as sent: payload + headers).
    pub segment_bytes: u32,
    /// TFRC-ECN: packet losses do not count as loss events; only ECN CE marks do (marks within
    /// one RTT = one event).
    pub ecn: bool,
    /// The application's cap on the sending rate (bit/s), None: greedy.
    pub max_rate_bps: Option<f64>,
}

impl TfrcConfig {
    fn check(&self) {
        assert!(self.segment_bytes > 0, "TFRC segment size must be positive");
        if let Some(cap) = self.max_rate_bps {
            assert!(cap > 0.0, "TFRC rate cap must be positive, got {cap}");
        }
    }
}

/// The TCP throughput equation of RFC 5348 §3.1 (bytes/s), b = 1, t_RTO = 4R:
///
/// X = s / (R·√(2bp/3) + t_RTO·(3·√(3bp/8))·p·(1 + 32p²)).
///
/// Infinite when p ≤ 0 or R ≤ 0 (no constraint).
pub fn tcp_throughput_equation(s_bytes: f64, rtt_s: f64, p: f64) -> f64 {
    if p <= 0.0 || rtt_s <= 0.0 {
        return f64::INFINITY;
    }
    let b = 1.0;
    let t_rto = 4.0 * rtt_s;
    let denominator = rtt_s * (2.0 * b * p / 3.0).sqrt()
        + t_rto * (3.0 * (3.0 * b * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
    s_bytes / denominator
}

/// The loss event rate p at which [`tcp_throughput_equation`] gives `x_target` bytes/s (RFC 5348
/// §6.3.1), by bisection over log p in [1e-10, 1] (the equation decreases in p). Deterministic.
pub fn loss_event_rate_for_throughput(s_bytes: f64, rtt_s: f64, x_target: f64) -> f64 {
    if tcp_throughput_equation(s_bytes, rtt_s, P_SEARCH_MIN) <= x_target {
        return P_SEARCH_MIN;
    }
    if tcp_throughput_equation(s_bytes, rtt_s, P_SEARCH_MAX) >= x_target {
        return P_SEARCH_MAX;
    }
    let (mut lo, mut hi) = (P_SEARCH_MIN.ln(), P_SEARCH_MAX.ln());
    for _ in 0..P_SEARCH_STEPS {
        let mid = 0.5 * (lo + hi);
        if tcp_throughput_equation(s_bytes, rtt_s, mid.exp()) > x_target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
}

/// The average loss interval of RFC 5348 §5.4. `closed` holds the closed intervals most recent
/// first (I_1, I_2, …; only the first [`LOSS_INTERVALS`] are used), `open` is I_0, the interval
/// since the start of the most recent loss event. With k closed intervals:
///
/// I_tot0 = Σ_{i=0}^{k−1} I_i·w_i, I_tot1 = Σ_{i=1}^{k} I_i·w_{i−1}, W_tot = Σ_{i=0}^{k−1} w_i,
/// I_mean = max(I_tot0, I_tot1)/W_tot
///
/// (with k < n the RFC's sums run over the intervals that exist). None without a closed interval.
pub fn mean_loss_interval(closed: &[f64], open: f64) -> Option<f64> {
    let k = closed.len().min(LOSS_INTERVALS);
    if k == 0 {
        return None;
    }
    let weights = &LOSS_INTERVAL_WEIGHTS[..k];
    // I_0 … I_(k−1) against w_0 … w_(k−1).
    let tot0: f64 = std::iter::once(open)
        .chain(closed[..k - 1].iter().copied())
        .zip(weights)
        .map(|(interval, w)| interval * w)
        .sum();
    // I_1 … I_k against w_0 … w_(k−1).
    let tot1: f64 = closed[..k]
        .iter()
        .zip(weights)
        .map(|(interval, w)| interval * w)
        .sum();
    let w_tot: f64 = weights.iter().sum();
    Some(tot0.max(tot1) / w_tot)
}

/// W_init/R in bytes/s (RFC 5348 §4.2); also the sender's recover_rate (§4.4).
fn initial_rate(s: f64, rtt_s: f64) -> f64 {
    let w_init = (4.0 * s).min((2.0 * s).max(INITIAL_WINDOW_BYTES as f64));
    w_init / rtt_s
}

/// The sender's X_recv_set (RFC 5348 §4.3), a fixed array of (time, bytes/s) entries.
#[derive(Debug, Clone, Copy)]
struct XRecvSet {
    entries: [(SimTime, f64); X_RECV_SET_CAPACITY],
    len: usize,
}

impl XRecvSet {
    fn new() -> Self {
        XRecvSet {
            entries: [(SimTime::ZERO, 0.0); X_RECV_SET_CAPACITY],
            len: 0,
        }
    }

    /// Replaces the contents with one entry.
    fn reset(&mut self, now: SimTime, value: f64) {
        self.entries[0] = (now, value);
        self.len = 1;
    }

    /// "Update X_recv_set()": add X_recv, delete values older than two round-trip times.
    fn update(&mut self, now: SimTime, x_recv: f64, rtt_s: f64) {
        let horizon = SimTime::from_secs_f64(2.0 * rtt_s);
        let mut kept = 0;
        for i in 0..self.len {
            if now.saturating_sub(self.entries[i].0) <= horizon {
                self.entries[kept] = self.entries[i];
                kept += 1;
            }
        }
        self.len = kept;
        if self.len == X_RECV_SET_CAPACITY {
            // Entries are kept in insertion order: drop the oldest.
            self.entries.copy_within(1.., 0);
            self.len -= 1;
        }
        self.entries[self.len] = (now, x_recv);
        self.len += 1;
    }

    fn max(&self) -> f64 {
        self.entries[..self.len]
            .iter()
            .map(|e| e.1)
            .fold(0.0, f64::max)
    }
}

/// The sending side of a TFRC flow (RFC 5348 §4).
///
/// The owner sends a packet (header from [`on_send`](Self::on_send)) whenever
/// `now >= next_send()`, hands arriving reports to [`on_feedback`](Self::on_feedback), calls
/// [`on_nofeedback`](Self::on_nofeedback) at [`nofeedback_deadline`](Self::nofeedback_deadline),
/// and re-reads both deadlines after each of these calls (every one of them can move them).
#[derive(Debug, Clone)]
pub struct TfrcSender {
    cfg: TfrcConfig,
    /// s, bytes.
    s: f64,
    /// Allowed sending rate X, bytes/s.
    x: f64,
    /// X_Bps of the last equation evaluation, bytes/s (infinite while p = 0).
    x_eq: f64,
    /// X_recv of the last report, bytes/s.
    x_recv: f64,
    x_recv_set: XRecvSet,
    /// R, seconds; None before the first feedback.
    rtt_s: Option<f64>,
    /// Time the rate last doubled in slow start (tld).
    tld: Option<SimTime>,
    /// Last p reported.
    p: f64,
    nofeedback_at: SimTime,
    /// Whether a packet was sent since the nofeedback timer was last armed (§4.4 "idle").
    sent_since_armed: bool,
    /// Start of the schedule, and the nominal send time of the last packet (§4.6).
    start: SimTime,
    last_nominal: Option<SimTime>,
    next_seq: u64,
    feedbacks: u64,
}

impl TfrcSender {
    /// A sender that may send its first packet at `now`, at one segment per second until the
    /// first feedback (RFC 5348 §4.2). Panics on a zero segment size or a non-positive cap
    /// (configuration is validated by the scenario layer before it reaches here).
    pub fn new(cfg: TfrcConfig, now: SimTime) -> Self {
        cfg.check();
        let s = cfg.segment_bytes as f64;
        TfrcSender {
            cfg,
            s,
            x: s,
            x_eq: f64::INFINITY,
            x_recv: 0.0,
            x_recv_set: XRecvSet::new(),
            rtt_s: None,
            tld: None,
            p: 0.0,
            nofeedback_at: now + INITIAL_NOFEEDBACK,
            sent_since_armed: false,
            start: now,
            last_nominal: None,
            next_seq: 0,
            feedbacks: 0,
        }
    }

    /// The rate packets are actually sent at, bytes/s: X, further limited by the application cap.
    fn effective_rate(&self) -> f64 {
        match self.cfg.max_rate_bps {
            Some(cap) => self.x.min(cap / 8.0),
            None => self.x,
        }
    }

    /// The inter-packet interval s/X (§4.6), at least one nanosecond.
    fn send_interval(&self) -> SimTime {
        let ipi = SimTime::from_secs_f64(self.s / self.effective_rate());
        ipi.max(SimTime(1))
    }

    /// When the next data packet may be sent (inter-packet interval s/X). It moves when X does:
    /// query it again after [`on_feedback`](Self::on_feedback) and
    /// [`on_nofeedback`](Self::on_nofeedback).
    pub fn next_send(&self) -> SimTime {
        match self.last_nominal {
            None => self.start,
            Some(last) => last + self.send_interval(),
        }
    }

    /// Builds the header of the data packet sent at `now` and advances the schedule. The packet's
    /// nominal send time is `now` when sent early, and the scheduled time when sent late, but never
    /// more than one interval before `now`: a late owner may catch up by one packet, not burst.
    pub fn on_send(&mut self, now: SimTime) -> TfrcData {
        let ipi = self.send_interval();
        let nominal = now.min(self.next_send()).max(now.saturating_sub(ipi));
        self.last_nominal = Some(nominal);
        self.sent_since_armed = true;
        let seq = self.next_seq;
        self.next_seq += 1;
        TfrcData {
            seq,
            timestamp: now,
            rtt: self.rtt().unwrap_or(SimTime::ZERO),
        }
    }

    /// A feedback report arrived (RFC 5348 §4.3 steps 1–4 and 6; the first report also performs
    /// the initialisation of §4.2).
    pub fn on_feedback(&mut self, now: SimTime, fb: &TfrcFeedback) {
        // Step 1: the RTT sample.
        let sample = now
            .saturating_sub(fb.timestamp_echo)
            .saturating_sub(fb.elapsed)
            .as_secs_f64()
            .max(MIN_RTT_SAMPLE_S);
        // Step 2: the moving average.
        let first = self.rtt_s.is_none();
        let r = match self.rtt_s {
            None => sample,
            Some(r) => RTT_EWMA_Q * r + (1.0 - RTT_EWMA_Q) * sample,
        };
        self.rtt_s = Some(r);
        self.p = if fb.p.is_finite() {
            fb.p.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.x_recv = if fb.x_recv_bps.is_finite() {
            (fb.x_recv_bps / 8.0).max(0.0)
        } else {
            0.0
        };
        if first {
            // §4.2: the first feedback sets X to W_init/R; X_recv_set starts as {Infinity},
            // so the receive rate does not limit the first two RTTs.
            self.x = initial_rate(self.s, r);
            self.tld = Some(now);
            self.x_recv_set.reset(now, f64::INFINITY);
        }
        // Step 4, "typical behavior" branch (the sender is never treated as data-limited).
        self.x_recv_set.update(now, self.x_recv, r);
        let recv_limit = 2.0 * self.x_recv_set.max();
        self.recompute_rate(now, recv_limit);
        // Steps 3 and 6: t_RTO = max(4R, 2s/X), with the X just computed. RFC 5348 computes it
        // in step 3 with the X in force before the report, which after the first report (X still
        // one segment per second) or a nofeedback backoff arms a timer of 2 s to 128 s; Linux
        // DCCP CCID-3 (net/dccp/ccids/ccid3.c, ccid3_hc_tx_packet_recv) uses the updated
        // interval, and so do we.
        self.arm_nofeedback(now);
        self.feedbacks += 1;
    }

    /// The rate update of §4.3 step 4 given recv_limit.
    fn recompute_rate(&mut self, now: SimTime, recv_limit: f64) {
        let r = self.rtt_s.expect("rate update before any RTT sample");
        let floor = self.s / T_MBI.as_secs_f64();
        if self.p > 0.0 {
            self.x_eq = tcp_throughput_equation(self.s, r, self.p);
            self.x = self.x_eq.min(recv_limit).max(floor);
        } else {
            self.x_eq = f64::INFINITY;
            let due = match self.tld {
                None => true,
                Some(tld) => now.saturating_sub(tld).as_secs_f64() >= r,
            };
            if due {
                self.x = (2.0 * self.x).min(recv_limit).max(initial_rate(self.s, r));
                self.tld = Some(now);
            }
        }
    }

    /// Re-arms the nofeedback timer after t_RTO = max(4R, 2s/X) (§4.3 step 3, §4.4). Before any
    /// RTT sample the timer is max(2 s, 2s/X): the 2 s of §4.2, stretched to two packet
    /// intervals once the rate has been halved below one packet per second (the choice is ours;
    /// the RFC only gives the initial 2 s). X here is the rate packets are actually sent at (X
    /// under the application cap), so that "two packet intervals" stays true for a capped flow.
    fn arm_nofeedback(&mut self, now: SimTime) {
        let two_packets = 2.0 * self.s / self.effective_rate();
        let t = match self.rtt_s {
            Some(r) => (4.0 * r).max(two_packets),
            None => INITIAL_NOFEEDBACK.as_secs_f64().max(two_packets),
        };
        self.nofeedback_at = now + SimTime::from_secs_f64(t).max(SimTime(1));
        self.sent_since_armed = false;
    }

    /// When the nofeedback timer expires (RFC 5348 §4.3/§4.4).
    pub fn nofeedback_deadline(&self) -> SimTime {
        self.nofeedback_at
    }

    /// Called by the owner when `now >= nofeedback_deadline()`; halves the rate as §4.4 says and
    /// re-arms. "X_recv" in §4.4 is the X_recv of the most recent report, or timer_limit/2 if an
    /// expiry since then went through Update_Limits.
    pub fn on_nofeedback(&mut self, now: SimTime) {
        let floor = self.s / T_MBI.as_secs_f64();
        let idle = !self.sent_since_armed;
        match self.rtt_s {
            None => {
                // No RTT sample and no feedback: halve (whether idle or not — without R there is
                // no recover_rate to compare with, and the p = 0 branch halves too).
                self.x = (self.x / 2.0).max(floor);
            }
            Some(r) => {
                let recover_rate = initial_rate(self.s, r);
                let low = if self.p > 0.0 {
                    self.x_recv < recover_rate
                } else {
                    self.x < 2.0 * recover_rate
                };
                if idle && low {
                    // Idle at a low rate: don't halve.
                } else if self.p == 0.0 {
                    self.x = (self.x / 2.0).max(floor);
                } else if self.x_eq > 2.0 * self.x_recv {
                    // 2·X_recv was limiting the rate.
                    self.update_limits(now, self.x_recv);
                } else {
                    // X_Bps was limiting the rate.
                    self.update_limits(now, self.x_eq / 2.0);
                }
            }
        }
        self.arm_nofeedback(now);
    }

    /// Update_Limits(timer_limit) of RFC 5348 §4.4.
    fn update_limits(&mut self, now: SimTime, timer_limit: f64) {
        let timer_limit = timer_limit.max(self.s / T_MBI.as_secs_f64());
        self.x_recv_set.reset(now, timer_limit / 2.0);
        // The cached X_recv follows the set, so that the next expiry compares X_Bps with the
        // reduced value and halves again (as Linux DCCP CCID-3 does in
        // ccid3_hc_tx_no_feedback_timer); otherwise X_Bps/2 would be a fixed point.
        self.x_recv = timer_limit / 2.0;
        let recv_limit = 2.0 * self.x_recv_set.max();
        self.recompute_rate(now, recv_limit);
    }

    /// The rate packets are sent at, bit/s: X (§4.3), limited by the application cap.
    pub fn rate_bps(&self) -> f64 {
        8.0 * self.effective_rate()
    }

    /// The allowed sending rate X, bit/s, before the application cap.
    pub fn allowed_rate_bps(&self) -> f64 {
        8.0 * self.x
    }

    /// The RTT estimate R; None before the first feedback.
    pub fn rtt(&self) -> Option<SimTime> {
        self.rtt_s.map(SimTime::from_secs_f64)
    }

    /// The last p reported.
    pub fn loss_event_rate(&self) -> f64 {
        self.p
    }

    /// X_recv of the last report (or as reduced by Update_Limits on nofeedback expiry), bit/s.
    pub fn x_recv_bps(&self) -> f64 {
        8.0 * self.x_recv
    }

    /// Whether the sender is in initial slow start (no loss reported: p = 0).
    pub fn in_slow_start(&self) -> bool {
        self.p == 0.0
    }

    /// Data packets sent so far (the next sequence number).
    pub fn packets_sent(&self) -> u64 {
        self.next_seq
    }

    /// Feedback reports processed so far.
    pub fn feedbacks_received(&self) -> u64 {
        self.feedbacks
    }

    pub fn config(&self) -> &TfrcConfig {
        &self.cfg
    }
}

/// One entry of the receiver's packet history.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    seq: u64,
    arrival: SimTime,
    ce: bool,
    received: bool,
}

/// The receiving side of a TFRC flow (RFC 5348 §5, §6).
#[derive(Debug, Clone)]
pub struct TfrcReceiver {
    cfg: TfrcConfig,
    s: f64,
    started: bool,
    /// R_m: the latest RTT carried by the data; None while the sender has none.
    rtt_m: Option<SimTime>,
    // Loss detection (§5.1): sequence numbers below `resolved_upto` are decided (received, lost,
    // or marked); `received_above` counts received ones in [resolved_upto, max_seq].
    history: [Slot; RECEIVE_HISTORY],
    first_seq: u64,
    max_seq: u64,
    resolved_upto: u64,
    received_above: u64,
    /// The last received packet at or below the resolved frontier (S_before of §5.2).
    last_resolved_rx: (u64, SimTime),
    // Loss events (§5.2, §5.3): the current event's first sequence number and nominal time.
    event_start: Option<(u64, SimTime)>,
    /// Closed loss intervals, most recent first; `interval_count` of them are valid.
    intervals: [f64; LOSS_INTERVALS],
    interval_count: usize,
    loss_events: u64,
    p: f64,
    // Feedback (§6).
    last_arrival: SimTime,
    last_timestamp: SimTime,
    last_report: SimTime,
    packets_since_report: u64,
    reports: u64,
    /// X_recv of the last report and the largest so far, bytes/s.
    x_recv: f64,
    x_recv_max: f64,
    first_arrival: SimTime,
    packets_received: u64,
    payload_bytes_received: u64,
}

impl TfrcReceiver {
    pub fn new(cfg: TfrcConfig) -> Self {
        cfg.check();
        TfrcReceiver {
            cfg,
            s: cfg.segment_bytes as f64,
            started: false,
            rtt_m: None,
            history: [Slot::default(); RECEIVE_HISTORY],
            first_seq: 0,
            max_seq: 0,
            resolved_upto: 0,
            received_above: 0,
            last_resolved_rx: (0, SimTime::ZERO),
            event_start: None,
            intervals: [0.0; LOSS_INTERVALS],
            interval_count: 0,
            loss_events: 0,
            p: 0.0,
            last_arrival: SimTime::ZERO,
            last_timestamp: SimTime::ZERO,
            last_report: SimTime::ZERO,
            packets_since_report: 0,
            reports: 0,
            x_recv: 0.0,
            x_recv_max: 0.0,
            first_arrival: SimTime::ZERO,
            packets_received: 0,
            payload_bytes_received: 0,
        }
    }

    /// A data packet arrived (`ce`: ECN congestion experienced). Returns a feedback report to send
    /// now (first packet, or a new loss event as §6.1 says), else None.
    ///
    /// Packets are decided in sequence order (§5.1), so a CE mark behind a hole counts once the
    /// hole is decided, NDUPACK packets later; this holds for TFRC-ECN too, where the hole itself
    /// is then ignored.
    ///
    /// §6.1 sends at once when p increases (p > p_prev). While the data carries no RTT (the
    /// sender has not had feedback yet) the receiver has no R_m to time reports by, so it reports
    /// every packet; the sender sends one packet per second or less in that state.
    pub fn on_data(
        &mut self,
        now: SimTime,
        hdr: &TfrcData,
        payload_bytes: u32,
        ce: bool,
    ) -> Option<TfrcFeedback> {
        self.packets_received += 1;
        self.payload_bytes_received += payload_bytes as u64;
        self.packets_since_report += 1;
        if hdr.rtt > SimTime::ZERO {
            self.rtt_m = Some(hdr.rtt);
        }
        self.last_arrival = now;
        self.last_timestamp = hdr.timestamp;
        if !self.started {
            // §6.3: the first packet initialises the receiver; p = 0, X_recv = 0, report now.
            self.started = true;
            self.first_seq = hdr.seq;
            self.max_seq = hdr.seq;
            self.resolved_upto = hdr.seq;
            self.first_arrival = now;
            self.record(hdr.seq, now, ce);
            self.resolve(0, (hdr.seq, now));
            return Some(self.report(now, false));
        }
        let p_prev = self.p;
        if hdr.seq >= self.resolved_upto {
            let window = RECEIVE_HISTORY as u64;
            if hdr.seq >= self.resolved_upto + window {
                // Too far ahead for the history: decide everything that would be overwritten.
                self.resolve(hdr.seq + 1 - window, (hdr.seq, now));
            }
            self.record(hdr.seq, now, ce);
            self.resolve(0, (hdr.seq, now));
        }
        self.p = self.compute_p();
        if self.rtt_m.is_none() {
            return Some(self.report(now, false));
        }
        if self.p > p_prev {
            return Some(self.report(now, true));
        }
        None
    }

    /// Stores an arrival at or above the resolved frontier (duplicates are ignored).
    fn record(&mut self, seq: u64, now: SimTime, ce: bool) {
        let slot = &mut self.history[(seq % RECEIVE_HISTORY as u64) as usize];
        if slot.received && slot.seq == seq {
            return;
        }
        *slot = Slot {
            seq,
            arrival: now,
            ce,
            received: true,
        };
        self.received_above += 1;
        self.max_seq = self.max_seq.max(seq);
    }

    fn slot(&self, seq: u64) -> Option<Slot> {
        let slot = self.history[(seq % RECEIVE_HISTORY as u64) as usize];
        (slot.received && slot.seq == seq).then_some(slot)
    }

    /// Decides sequence numbers in order from the frontier (§5.1): a received packet is decided
    /// at once (a congestion indication if CE-marked); a missing one is lost once NDUPACK later
    /// packets have arrived, or when it lies below `force_below`. `incoming` is the packet being
    /// recorded, used as S_after when no stored packet follows a forced hole.
    fn resolve(&mut self, force_below: u64, incoming: (u64, SimTime)) {
        // S_after for a run of holes, found once per run.
        let mut after: Option<(u64, SimTime)> = None;
        loop {
            let x = self.resolved_upto;
            if x > self.max_seq && x >= force_below {
                break;
            }
            if let Some(slot) = self.slot(x) {
                self.received_above -= 1;
                if slot.ce {
                    self.congestion_indication(x, slot.arrival);
                }
                self.last_resolved_rx = (x, slot.arrival);
                after = None;
            } else if self.received_above >= NDUPACK || x < force_below {
                if !self.cfg.ecn {
                    let next = match after {
                        Some(a) if a.0 > x => a,
                        _ => self.next_received_above(x).unwrap_or(incoming),
                    };
                    after = Some(next);
                    let t = interpolate(self.last_resolved_rx, next, x);
                    self.congestion_indication(x, t);
                }
            } else {
                break;
            }
            self.resolved_upto += 1;
        }
    }

    fn next_received_above(&self, x: u64) -> Option<(u64, SimTime)> {
        (x + 1..=self.max_seq)
            .find_map(|seq| self.slot(seq))
            .map(|slot| (slot.seq, slot.arrival))
    }

    /// A lost or CE-marked packet `seq` with nominal arrival `t` (§5.2): it starts a new loss event
    /// unless it falls within R_m of the start of the current one.
    fn congestion_indication(&mut self, seq: u64, t: SimTime) {
        match self.event_start {
            None => {
                let first = self.first_loss_interval(seq);
                self.push_interval(first);
                self.event_start = Some((seq, t));
                self.loss_events += 1;
            }
            Some((start_seq, start_t)) => {
                let r = self.rtt_m.unwrap_or(SimTime::ZERO);
                if t <= start_t + r {
                    return;
                }
                self.push_interval(seq.saturating_sub(start_seq).max(1) as f64);
                self.event_start = Some((seq, t));
                self.loss_events += 1;
            }
        }
    }

    /// The synthetic first loss interval of §6.3.1: 1/p for the p at which the equation gives
    /// X_target, the largest X_recv reported so far. Before any non-zero X_recv, X_target is the
    /// average receive rate since the first packet; without an R_m or any rate, the number of
    /// packets up to the loss (the RFC 3448 seed) is used.
    fn first_loss_interval(&self, seq: u64) -> f64 {
        let fallback = (seq.saturating_sub(self.first_seq) + 1) as f64;
        let x_target = if self.x_recv_max > 0.0 {
            self.x_recv_max
        } else {
            let span = self.last_arrival.saturating_sub(self.first_arrival);
            if span > SimTime::ZERO {
                self.packets_received as f64 * self.s / span.as_secs_f64()
            } else {
                0.0
            }
        };
        match self.rtt_m {
            Some(r) if x_target > 0.0 => {
                1.0 / loss_event_rate_for_throughput(self.s, r.as_secs_f64(), x_target)
            }
            _ => fallback,
        }
    }

    fn push_interval(&mut self, interval: f64) {
        self.intervals.copy_within(0..LOSS_INTERVALS - 1, 1);
        self.intervals[0] = interval;
        self.interval_count = (self.interval_count + 1).min(LOSS_INTERVALS);
    }

    /// p = 1/I_mean (§5.4), 0 before the first loss event.
    fn compute_p(&self) -> f64 {
        match mean_loss_interval(self.loss_intervals(), self.open_interval().unwrap_or(0.0)) {
            Some(mean) if mean > 0.0 => (1.0 / mean).min(1.0),
            _ => 0.0,
        }
    }

    /// Builds a report and restarts the feedback timer (§6.2). X_recv is the packets received
    /// since the previous report times s over the time since it; the first report carries 0
    /// (§6.3). A report sent early because p rose keeps the previous X_recv when there is one
    /// (the interval since the last report can be arbitrarily short; the same choice as Linux
    /// DCCP CCID-3, net/dccp/ccids/ccid3.c, CCID3_FBACK_PARAM_CHANGE).
    fn report(&mut self, now: SimTime, early: bool) -> TfrcFeedback {
        if self.reports == 0 {
            self.x_recv = 0.0;
        } else if !(early && self.x_recv > 0.0) {
            let dt = now.saturating_sub(self.last_report).as_secs_f64();
            if dt > 0.0 {
                self.x_recv = self.packets_since_report as f64 * self.s / dt;
            }
        }
        self.x_recv_max = self.x_recv_max.max(self.x_recv);
        self.reports += 1;
        self.last_report = now;
        self.packets_since_report = 0;
        TfrcFeedback {
            timestamp_echo: self.last_timestamp,
            elapsed: now.saturating_sub(self.last_arrival),
            x_recv_bps: 8.0 * self.x_recv,
            p: self.p,
        }
    }

    /// When periodic feedback (once per RTT while data arrives, §6.2) is next due; None if
    /// nothing to report (no data since the last report, or no R_m yet, in which case every
    /// packet is reported from [`on_data`](Self::on_data)).
    pub fn feedback_due(&self) -> Option<SimTime> {
        if !self.started || self.packets_since_report == 0 {
            return None;
        }
        self.rtt_m.map(|r| self.last_report + r)
    }

    /// Called by the owner at `feedback_due()`; returns the report to send (None if no data
    /// arrived since the last).
    pub fn on_feedback_timer(&mut self, now: SimTime) -> Option<TfrcFeedback> {
        if !self.started || self.packets_since_report == 0 {
            return None;
        }
        Some(self.report(now, false))
    }

    pub fn loss_event_rate(&self) -> f64 {
        self.p
    }

    /// Loss events (or, with ECN, congestion events) detected so far.
    pub fn loss_event_count(&self) -> u64 {
        self.loss_events
    }

    /// The closed loss intervals in packets, most recent first (the oldest is the synthetic one of
    /// §6.3.1 until eight events have closed it out).
    pub fn loss_intervals(&self) -> &[f64] {
        &self.intervals[..self.interval_count]
    }

    /// I_0: packets from the start of the current loss event to the highest sequence number
    /// received, inclusive; None before the first loss event.
    pub fn open_interval(&self) -> Option<f64> {
        self.event_start
            .map(|(start, _)| (self.max_seq.saturating_sub(start) + 1) as f64)
    }

    /// R_m, the latest RTT carried by the data.
    pub fn sender_rtt(&self) -> Option<SimTime> {
        self.rtt_m
    }

    /// X_recv of the last report, bit/s.
    pub fn x_recv_bps(&self) -> f64 {
        8.0 * self.x_recv
    }

    pub fn packets_received(&self) -> u64 {
        self.packets_received
    }

    pub fn payload_bytes_received(&self) -> u64 {
        self.payload_bytes_received
    }

    pub fn config(&self) -> &TfrcConfig {
        &self.cfg
    }
}

/// The nominal arrival time of lost packet `seq` between received packets `before` and `after`
/// (RFC 5348 §5.2): T_before + (T_after − T_before)·(seq − S_before)/(S_after − S_before).
fn interpolate(before: (u64, SimTime), after: (u64, SimTime), seq: u64) -> SimTime {
    let (s0, t0) = before;
    let (s1, t1) = after;
    if s1 <= s0 || t1 <= t0 {
        return t0.max(t1.min(t0));
    }
    let fraction = (seq - s0) as f64 / (s1 - s0) as f64;
    let span = (t1 - t0).ns() as f64;
    t0 + SimTime((span * fraction).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn cfg(ecn: bool) -> TfrcConfig {
        TfrcConfig {
            segment_bytes: 1000,
            ecn,
            max_rate_bps: None,
        }
    }

    fn data(seq: u64, t: SimTime, rtt: SimTime) -> TfrcData {
        TfrcData {
            seq,
            timestamp: t,
            rtt,
        }
    }

    /// Feeds `seqs` to `rx`, one every 10 ms starting at 0, with R_m = 100 ms; `ce` says which
    /// sequence numbers are CE-marked.
    fn feed(rx: &mut TfrcReceiver, seqs: impl IntoIterator<Item = u64>, ce: impl Fn(u64) -> bool) {
        let rtt = SimTime::from_ms(100);
        for (i, seq) in seqs.into_iter().enumerate() {
            let t = SimTime::from_ms(10 * i as u64);
            rx.on_data(t, &data(seq, t, rtt), 972, ce(seq));
        }
    }

    #[test]
    fn equation_matches_hand_computed_values() {
        // s = 1000 B, R = 0.1 s, p = 0.01, b = 1, t_RTO = 0.4 s:
        // R·√(2p/3) = 0.1 · 0.0816497 = 0.00816497
        // t_RTO·3√(3p/8)·p·(1+32p²) = 0.4 · 0.1837117 · 0.01 · 1.0032 = 0.00073720
        // X = 1000 / 0.00890217 = 112 332.2 B/s
        let x = tcp_throughput_equation(1000.0, 0.1, 0.01);
        assert!((x - 112_332.2).abs() < 0.5, "{x}");
        // The same from the terms written out, for other points.
        for &(s, r, p) in &[(1460.0, 0.05, 0.1), (1000.0, 0.2, 0.5), (500.0, 0.01, 1e-4)] {
            let first = r * f64::sqrt(2.0 * p / 3.0);
            let second = (4.0 * r) * (3.0 * f64::sqrt(3.0 * p / 8.0)) * p * (1.0 + 32.0 * p * p);
            let expected = s / (first + second);
            let got = tcp_throughput_equation(s, r, p);
            assert!(
                (got - expected).abs() <= 1e-9 * expected,
                "{got} vs {expected}"
            );
        }
        // Checked against an independent evaluation: 51 686.98 B/s at (1460, 0.05, 0.1).
        assert!((tcp_throughput_equation(1460.0, 0.05, 0.1) - 51_686.98).abs() < 0.01);
        assert!(tcp_throughput_equation(1000.0, 0.1, 0.0).is_infinite());
        // Monotone: more loss, less rate.
        assert!(tcp_throughput_equation(1000.0, 0.1, 0.02) < x);
    }

    #[test]
    fn equation_inversion_recovers_p() {
        for &p in &[1e-4, 0.003, 0.05, 0.3] {
            let x = tcp_throughput_equation(1000.0, 0.08, p);
            let back = loss_event_rate_for_throughput(1000.0, 0.08, x);
            assert!((back - p).abs() < 1e-9 * p.max(1e-3), "{p} -> {back}");
        }
    }

    #[test]
    fn average_loss_interval_applies_rfc_weights() {
        // I_1 … I_8 (most recent first) and an open interval I_0 = 10 shorter than the rest:
        // I_tot1 = 100·1 + 120·1 + 80·1 + 90·1 + 110·0.8 + 70·0.6 + 100·0.4 + 60·0.2 = 572
        // W_tot = 6, so I_mean = 572/6 (I_0 is ignored because it would lower the mean).
        let closed = [100.0, 120.0, 80.0, 90.0, 110.0, 70.0, 100.0, 60.0];
        let mean = mean_loss_interval(&closed, 10.0).unwrap();
        assert!((mean - 572.0 / 6.0).abs() < 1e-12, "{mean}");
        // A long open interval counts: I_tot0 = 400·1 + 100 + 120 + 80 + 90·0.8 + 110·0.6
        // + 70·0.4 + 100·0.2 = 886, above I_tot1 = 572.
        let mean = mean_loss_interval(&closed, 400.0).unwrap();
        assert!((mean - 886.0 / 6.0).abs() < 1e-12, "{mean}");
        // Intervals beyond the eighth are ignored.
        let mut nine = closed.to_vec();
        nine.push(1e9);
        assert_eq!(
            mean_loss_interval(&nine, 10.0),
            mean_loss_interval(&closed, 10.0)
        );
        // Fewer than n intervals: the weights that exist. k = 2: I_tot1 = 50 + 30, W_tot = 2.
        assert_eq!(mean_loss_interval(&[50.0, 30.0], 5.0), Some(40.0));
        assert_eq!(mean_loss_interval(&[], 5.0), None);
    }

    #[test]
    fn losses_within_one_rtt_are_one_loss_event() {
        // 10 ms spacing, R_m = 100 ms: losses at 10 and 13 (30 ms apart) are one event, the loss
        // at 40 (300 ms after 10) starts a second, whose closed predecessor spans 40 − 10 = 30.
        let mut rx = TfrcReceiver::new(cfg(false));
        feed(
            &mut rx,
            (0..60).filter(|s| ![10, 13, 40].contains(s)),
            |_| false,
        );
        assert_eq!(rx.loss_event_count(), 2);
        let intervals = rx.loss_intervals();
        assert_eq!(intervals.len(), 2);
        assert_eq!(intervals[0], 30.0);
        // I_0 runs from 40 to the highest sequence number, 59.
        assert_eq!(rx.open_interval(), Some(20.0));
        // p from the §5.4 formula with k = 2 closed intervals (the older one synthetic).
        let expected = 1.0 / mean_loss_interval(intervals, 20.0).unwrap();
        assert!((rx.loss_event_rate() - expected).abs() < 1e-15);
        assert!(rx.loss_event_rate() > 0.0);
    }

    #[test]
    fn packet_two_late_is_not_lost_but_three_late_is() {
        let mut rx = TfrcReceiver::new(cfg(false));
        // 3 overtaken by 4 and 5 only: reordering, no loss.
        feed(&mut rx, [0, 1, 2, 4, 5, 3, 6, 7, 8, 9], |_| false);
        assert_eq!(rx.loss_event_count(), 0);
        assert_eq!(rx.loss_event_rate(), 0.0);

        let mut rx = TfrcReceiver::new(cfg(false));
        // 3 overtaken by 4, 5 and 6: declared lost when 6 arrives; its late arrival changes nothing.
        feed(&mut rx, [0, 1, 2, 4, 5, 6, 3, 7, 8, 9], |_| false);
        assert_eq!(rx.loss_event_count(), 1);
        assert!(rx.loss_event_rate() > 0.0);

        let mut rx = TfrcReceiver::new(cfg(false));
        // A hole is not declared before the third later packet.
        feed(&mut rx, [0, 1, 2, 4, 5], |_| false);
        assert_eq!(rx.loss_event_count(), 0);
        feed(&mut rx, [6], |_| false);
        assert_eq!(rx.loss_event_count(), 1);
    }

    #[test]
    fn jumps_duplicates_and_stragglers_keep_the_history_consistent() {
        let mut rx = TfrcReceiver::new(cfg(false));
        // A jump far beyond the history window: the skipped packets are lost, as one event
        // (their interpolated times all fall within one RTT).
        feed(&mut rx, (0..10).chain(1000..1010), |_| false);
        assert_eq!(rx.loss_event_count(), 1);
        assert_eq!(rx.open_interval(), Some(1000.0));
        // Duplicates and packets older than the decided frontier change nothing but the counts.
        let p = rx.loss_event_rate();
        feed(&mut rx, [1009, 1009, 5, 500], |_| false);
        assert_eq!(rx.loss_event_count(), 1);
        assert_eq!(rx.loss_event_rate(), p);
        assert_eq!(rx.packets_received(), 24);
        assert_eq!(rx.payload_bytes_received(), 24 * 972);
    }

    #[test]
    fn new_loss_event_triggers_immediate_feedback() {
        let rtt = SimTime::from_ms(100);
        let mut rx = TfrcReceiver::new(cfg(false));
        let mut immediate = Vec::new();
        for (i, seq) in (0..30u64).filter(|&s| s != 10).enumerate() {
            let t = SimTime::from_ms(10 * i as u64);
            if rx.on_data(t, &data(seq, t, rtt), 972, false).is_some() {
                immediate.push(seq);
            }
        }
        // The first packet, then the packet that completes NDUPACK after the hole at 10.
        assert_eq!(immediate, vec![0, 13]);
    }

    #[test]
    fn tfrc_ecn_ignores_losses_and_counts_marks_once_per_rtt() {
        // Heavy loss (every third packet missing), no marks: no loss event with ECN…
        let lossy = || (0..200u64).filter(|s| s % 3 != 0 || *s == 0);
        let mut rx = TfrcReceiver::new(cfg(true));
        feed(&mut rx, lossy(), |_| false);
        assert_eq!(rx.loss_event_count(), 0);
        assert_eq!(rx.loss_event_rate(), 0.0);
        // …while plain TFRC sees many.
        let mut plain = TfrcReceiver::new(cfg(false));
        feed(&mut plain, lossy(), |_| false);
        assert!(plain.loss_event_count() > 5);

        // Marks on 20, 22, 25 (within 100 ms of 20's arrival at 200 ms): one event. The mark on
        // 60 (400 ms later) starts a second; 61 is within its RTT.
        let mut rx = TfrcReceiver::new(cfg(true));
        feed(&mut rx, 0..100, |s| [20, 22, 25, 60, 61].contains(&s));
        assert_eq!(rx.loss_event_count(), 2);
        assert_eq!(rx.loss_intervals()[0], 40.0);
        assert!(rx.loss_event_rate() > 0.0);

        // Marks still count when some packets are lost around them.
        let mut rx = TfrcReceiver::new(cfg(true));
        feed(&mut rx, (0..100).filter(|s| s % 7 != 3), |s| s == 50);
        assert_eq!(rx.loss_event_count(), 1);
    }

    #[test]
    fn nofeedback_timer_halves_the_rate() {
        let t0 = SimTime::ZERO;
        let mut tx = TfrcSender::new(cfg(false), t0);
        assert_eq!(
            tx.rate_bps(),
            8000.0,
            "one segment per second before feedback"
        );
        assert_eq!(tx.nofeedback_deadline(), SimTime::from_ms(2000));
        tx.on_send(t0);
        tx.on_nofeedback(SimTime::from_ms(2000));
        assert_eq!(tx.rate_bps(), 4000.0);

        // After feedback (R = 100 ms, p = 0): X = W_init/R = 4000 B / 0.1 s; halved on expiry.
        let mut tx = TfrcSender::new(cfg(false), t0);
        let hdr = tx.on_send(t0);
        let fb = TfrcFeedback {
            timestamp_echo: hdr.timestamp,
            elapsed: SimTime::ZERO,
            x_recv_bps: 0.0,
            p: 0.0,
        };
        tx.on_feedback(SimTime::from_ms(100), &fb);
        assert_eq!(tx.rtt(), Some(SimTime::from_ms(100)));
        assert!((tx.rate_bps() - 8.0 * 40_000.0).abs() < 1e-6);
        // t_RTO = max(4R, 2s/X) = max(400 ms, 2·1000/40000 s) = 400 ms.
        assert_eq!(tx.nofeedback_deadline(), SimTime::from_ms(500));
        tx.on_send(SimTime::from_ms(100));
        tx.on_nofeedback(SimTime::from_ms(500));
        assert!((tx.rate_bps() - 8.0 * 20_000.0).abs() < 1e-6);
        // Re-armed after max(4R, 2s/X) = 400 ms.
        assert_eq!(tx.nofeedback_deadline(), SimTime::from_ms(900));

        // With p > 0 the equation limits X; expiry halves through Update_Limits(X_Bps/2).
        let fb = TfrcFeedback {
            timestamp_echo: SimTime::from_ms(800),
            elapsed: SimTime::ZERO,
            x_recv_bps: 8.0 * 150_000.0,
            p: 0.01,
        };
        tx.on_feedback(SimTime::from_ms(900), &fb);
        let x_eq = tcp_throughput_equation(1000.0, 0.1, 0.01);
        assert!((tx.allowed_rate_bps() / 8.0 - x_eq).abs() < 1e-6);
        tx.on_send(SimTime::from_ms(900));
        let deadline = tx.nofeedback_deadline();
        tx.on_nofeedback(deadline);
        assert!((tx.allowed_rate_bps() / 8.0 - x_eq / 2.0).abs() < 1e-6);
        // Repeated expiry keeps halving, down to s/t_mbi.
        for _ in 0..40 {
            tx.on_send(tx.nofeedback_deadline());
            tx.on_nofeedback(tx.nofeedback_deadline());
        }
        assert!((tx.allowed_rate_bps() - 8.0 * 1000.0 / 64.0).abs() < 1e-9);
    }

    #[test]
    fn idle_sender_at_low_rate_is_not_halved() {
        let mut tx = TfrcSender::new(cfg(false), SimTime::ZERO);
        let hdr = tx.on_send(SimTime::ZERO);
        let fb = TfrcFeedback {
            timestamp_echo: hdr.timestamp,
            elapsed: SimTime::ZERO,
            x_recv_bps: 0.0,
            p: 0.0,
        };
        tx.on_feedback(SimTime::from_ms(100), &fb);
        let x = tx.allowed_rate_bps();
        // p = 0 and X < 2·recover_rate, no packet sent since the timer was armed: keep X.
        tx.on_nofeedback(tx.nofeedback_deadline());
        assert_eq!(tx.allowed_rate_bps(), x);
    }

    /// A deterministic path for closed-loop tests: constant one-way delay, optionally a FIFO
    /// bottleneck of `capacity` bytes/s with an unbounded buffer, optionally dropping every
    /// k-th data packet (sequence numbers k−1, 2k−1, …).
    struct Path {
        one_way: SimTime,
        drop_every: Option<u64>,
        capacity: Option<f64>,
    }

    #[derive(Default)]
    struct Trace {
        /// Send times of all data packets.
        sends: Vec<SimTime>,
        /// (time, allowed X in bytes/s, X_recv of the report in bytes/s) after each feedback.
        feedback: Vec<(SimTime, f64, f64)>,
    }

    fn run(config: TfrcConfig, path: &Path, until: SimTime) -> (TfrcSender, TfrcReceiver, Trace) {
        let mut tx = TfrcSender::new(config, SimTime::ZERO);
        let mut rx = TfrcReceiver::new(config);
        let mut to_rx: VecDeque<(SimTime, TfrcData)> = VecDeque::new();
        let mut to_tx: VecDeque<(SimTime, TfrcFeedback)> = VecDeque::new();
        let mut link_free = SimTime::ZERO;
        let mut trace = Trace::default();
        let s = config.segment_bytes as f64;
        loop {
            let t_send = tx.next_send();
            let t_nofb = tx.nofeedback_deadline();
            let t_rx = rx.feedback_due();
            let t_data = to_rx.front().map(|e| e.0);
            let t_fb = to_tx.front().map(|e| e.0);
            let t = [Some(t_send), Some(t_nofb), t_rx, t_data, t_fb]
                .into_iter()
                .flatten()
                .min()
                .unwrap();
            if t > until {
                break;
            }
            if t_fb == Some(t) {
                let (_, fb) = to_tx.pop_front().unwrap();
                tx.on_feedback(t, &fb);
                trace
                    .feedback
                    .push((t, tx.allowed_rate_bps() / 8.0, fb.x_recv_bps / 8.0));
            } else if t_data == Some(t) {
                let (_, hdr) = to_rx.pop_front().unwrap();
                if let Some(fb) = rx.on_data(t, &hdr, 972, false) {
                    to_tx.push_back((t + path.one_way, fb));
                }
            } else if t_rx == Some(t) {
                if let Some(fb) = rx.on_feedback_timer(t) {
                    to_tx.push_back((t + path.one_way, fb));
                }
            } else if t_nofb == t {
                tx.on_nofeedback(t);
            } else {
                let hdr = tx.on_send(t);
                trace.sends.push(t);
                if path.drop_every.is_some_and(|k| hdr.seq % k == k - 1) {
                    continue;
                }
                let depart = match path.capacity {
                    Some(c) => {
                        link_free = link_free.max(t) + SimTime::from_secs_f64(s / c);
                        link_free
                    }
                    None => t,
                };
                to_rx.push_back((depart + path.one_way, hdr));
            }
        }
        (tx, rx, trace)
    }

    /// Bytes/s sent in [from, to).
    fn send_rate(trace: &Trace, s: f64, from: SimTime, to: SimTime) -> f64 {
        let n = trace.sends.iter().filter(|&&t| t >= from && t < to).count();
        n as f64 * s / (to - from).as_secs_f64()
    }

    fn closed_loop_rate_matches_equation(k: u64) {
        let path = Path {
            one_way: SimTime::from_ms(50),
            drop_every: Some(k),
            capacity: None,
        };
        let until = SimTime::from_secs_f64(120.0);
        let (tx, rx, trace) = run(cfg(false), &path, until);
        let measured = send_rate(&trace, 1000.0, SimTime::from_secs_f64(40.0), until);
        let expected = tcp_throughput_equation(1000.0, 0.1, 1.0 / k as f64);
        let p = rx.loss_event_rate();
        assert!(
            (measured - expected).abs() <= 0.25 * expected,
            "k = {k}: sent {measured:.0} B/s, equation {expected:.0} B/s, p = {p}"
        );
        // Every drop is its own loss event here, so p settles at 1/k.
        assert!(
            (tx.loss_event_rate() - 1.0 / k as f64).abs() < 0.2 / k as f64,
            "p = {p}"
        );
        assert!((tx.rtt().unwrap().as_secs_f64() - 0.1).abs() < 1e-3);
    }

    #[test]
    fn closed_loop_rate_follows_equation_at_one_percent_loss() {
        closed_loop_rate_matches_equation(100);
    }

    #[test]
    fn closed_loop_rate_follows_equation_at_five_percent_loss() {
        closed_loop_rate_matches_equation(20);
    }

    #[test]
    fn slow_start_doubles_at_most_once_per_rtt_limited_by_twice_x_recv() {
        // R = 100 ms, no loss, no bottleneck. The first feedback sets W_init/R; while X_recv_set
        // still holds its initial Infinity (two RTTs) the rate doubles exactly once per RTT;
        // afterwards each step is min(2X, 2·max X_recv of the last two RTTs) (RFC 5348 §4.3
        // step 4). A report's X_recv describes packets sent two to one RTTs before it reaches
        // the sender, so the RFC's slow start then grows by 2× per one to two RTTs.
        let path = Path {
            one_way: SimTime::from_ms(50),
            drop_every: None,
            capacity: None,
        };
        let (tx, _rx, trace) = run(cfg(false), &path, SimTime::from_secs_f64(1.6));
        assert!(tx.in_slow_start());
        let initial = 40_000.0; // W_init/R = min(4s, max(2s, 4380)) / R = 4000 B / 0.1 s
        let first = trace.feedback[0];
        assert_eq!(first.1, initial);
        assert_eq!(trace.feedback[1].1, 2.0 * initial);
        assert_eq!(trace.feedback[2].1, 4.0 * initial);
        let mut last_increase = first.0;
        let mut x = initial;
        for (i, &(t, x_new, _)) in trace.feedback.iter().enumerate().skip(1) {
            assert!(x_new >= x, "no loss, no decrease");
            if x_new > x {
                assert!(x_new <= 2.0 * x + 1e-9, "at most doubling: {x} -> {x_new}");
                assert!(t - last_increase >= SimTime::from_ms(100), "once per RTT");
                last_increase = t;
            }
            if t - first.0 > SimTime::from_ms(200) {
                // Infinity has aged out of X_recv_set: 2·X_recv of the last two RTTs caps X.
                let recent = trace.feedback[..=i]
                    .iter()
                    .filter(|f| t - f.0 <= SimTime::from_ms(200))
                    .map(|f| f.2)
                    .fold(0.0, f64::max);
                assert!(x_new <= 2.0 * recent + 1e-6, "{t}: X {x_new} > 2·{recent}");
            }
            x = x_new;
        }
        // 15 RTTs after the first feedback: at least a doubling per two RTTs.
        assert!(x >= initial * 128.0, "X = {x}");
    }

    #[test]
    fn slow_start_is_capped_by_twice_the_receive_rate() {
        // A 125 kB/s bottleneck with an unbounded buffer: no loss, so p stays 0, and X_recv can
        // never exceed the bottleneck rate; X must stop at about twice it instead of doubling on.
        let capacity = 125_000.0;
        let path = Path {
            one_way: SimTime::from_ms(50),
            drop_every: None,
            capacity: Some(capacity),
        };
        let (tx, _rx, trace) = run(cfg(false), &path, SimTime::from_secs_f64(10.0));
        assert!(tx.in_slow_start());
        let peak = trace.feedback.iter().map(|f| f.1).fold(0.0, f64::max);
        // One packet of measurement granularity per report interval (≥ 100 ms, ≥ 12 packets).
        assert!(peak <= 2.0 * capacity * 1.1, "X peaked at {peak}");
        assert!(
            peak >= 1.5 * capacity,
            "X peaked at {peak}, the cap never bound"
        );
        for &(_, _, x_recv) in &trace.feedback {
            assert!(x_recv <= capacity * 1.1, "X_recv {x_recv}");
        }
    }

    #[test]
    fn application_cap_limits_the_send_rate() {
        let config = TfrcConfig {
            max_rate_bps: Some(80_000.0),
            ..cfg(false)
        };
        let path = Path {
            one_way: SimTime::from_ms(50),
            drop_every: None,
            capacity: None,
        };
        let until = SimTime::from_secs_f64(20.0);
        let (tx, _rx, trace) = run(config, &path, until);
        let rate = send_rate(&trace, 1000.0, SimTime::from_secs_f64(5.0), until);
        assert!((rate - 10_000.0).abs() <= 200.0, "{rate}");
        // X_recv follows the cap, so the allowed rate stays within twice it, or at the floor
        // W_init/R of slow start (§4.3 step 4: X = max(min(2X, recv_limit), initial_rate)).
        let initial_bps = 8.0 * 4000.0 / 0.1;
        assert!(tx.allowed_rate_bps() <= (2.0 * 80_000.0 * 1.1f64).max(initial_bps));
        assert!(tx.allowed_rate_bps() >= 80_000.0);
    }

    #[test]
    fn send_schedule_spaces_packets_by_s_over_x() {
        let mut tx = TfrcSender::new(cfg(false), SimTime::from_ms(5));
        assert_eq!(tx.next_send(), SimTime::from_ms(5));
        tx.on_send(SimTime::from_ms(5));
        // One segment per second before feedback.
        assert_eq!(tx.next_send(), SimTime::from_ms(1005));
        // Sent late by 3 s: catch up by at most one packet.
        let hdr = tx.on_send(SimTime::from_ms(4005));
        assert_eq!(hdr.seq, 1);
        assert_eq!(hdr.rtt, SimTime::ZERO);
        assert_eq!(tx.next_send(), SimTime::from_ms(4005));
        tx.on_send(SimTime::from_ms(4005));
        assert_eq!(tx.next_send(), SimTime::from_ms(5005));
    }
}
