//! The sending end of a TCP connection: active open, segmentation of the application's bulk
//! stream, the congestion window and its variants, loss recovery, the retransmission timer and
//! the active close.

use std::collections::VecDeque;

use super::{
    content_checksum, CcKind, TcpConfig, TcpHeader, TcpNotice, TcpOut, TcpTimer, ACK, FIN,
    SACK_PERMITTED, SYN, TCP_HEADER_BYTES,
};
use crate::sim::SimTime;
use crate::wire::packet::IPV4_HEADER_BYTES;

/// Scoreboard flags of an outstanding segment.
const SACKED: u8 = 1;
const RETX: u8 = 2;
const LOST: u8 = 4;

/// RFC 6675 DupThresh.
const DUP_THRESH: u32 = 3;
/// RFC 6298 clock granularity G (1 ms, Linux's jiffy at HZ = 1000).
const CLOCK_GRANULARITY_S: f64 = 0.001;
/// RFC 6298 (2.1): RTO before the first RTT sample.
const INITIAL_RTO_S: f64 = 1.0;
/// RFC 6298 (5.7): the RTO after a lost SYN when data transmission begins.
const RTO_AFTER_SYN_LOSS_S: f64 = 3.0;
/// Westwood+ samples the bandwidth once per RTT but not more often than every 50 ms, and
/// filters with two stages of 7/8 (Linux `tcp_westwood.c`, TCP_WESTWOOD_RTT_MIN, the filter of
/// Mascolo et al.).
const WESTWOOD_MIN_INTERVAL_S: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendState {
    Closed,
    SynSent,
    Established,
    /// Our FIN is out; waiting for the receiver's FIN-ACK.
    FinSent,
    Done,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SenderStats {
    /// Data segments sent for the first time.
    pub segments_sent: u64,
    pub retransmits: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
}

#[derive(Debug)]
pub struct TcpSender {
    cfg: TcpConfig,
    pub state: SendState,
    /// Data segments of the transfer (`u64::MAX`: long-lived); the FIN is segment `nsegs`.
    nsegs: u64,
    total: u64,
    /// App-limited mode (`TcpConfig::app_limited`): each write the application made, as (its
    /// first segment, its first byte). A write starts a new segment, so a write's last segment
    /// may be short; there is no FIN. Empty in bulk mode, where segments are MSS-sized.
    writes: Vec<(u64, u64)>,
    /// First unacknowledged segment, next segment to send, one past the highest ever sent.
    una: u64,
    nxt: u64,
    high: u64,
    board: VecDeque<u8>,
    /// Congestion window and slow-start threshold, in segments.
    cwnd: f64,
    ssthresh: f64,
    /// The peer's advertised window, bytes.
    rwnd: u32,
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582 `recover`: one past the highest segment sent when recovery (or an RTO) began.
    recover: u64,
    sack_ok: bool,
    srtt: Option<f64>,
    rttvar: f64,
    rto_s: f64,
    rtt_min: f64,
    /// The segment being timed (Karn: never a retransmitted one) and when it was sent.
    timed: Option<(u64, SimTime)>,
    rto_deadline: Option<SimTime>,
    rto_pending: Option<SimTime>,
    syn_sent_at: SimTime,
    syn_lost: bool,
    pace_rate_bps: f64,
    pace_next: SimTime,
    pace_pending: Option<SimTime>,
    // Westwood+ bandwidth estimation.
    bwe: f64,
    bwe_ns: f64,
    w_bytes: u64,
    w_accounted: u64,
    w_stamp: SimTime,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(cfg: TcpConfig) -> TcpSender {
        let (nsegs, total) = match (cfg.app_limited, cfg.total_bytes) {
            (true, _) => (0, 0),
            (false, Some(t)) => (t.div_ceil(cfg.mss as u64), t),
            (false, None) => (u64::MAX, u64::MAX),
        };
        let pace = match cfg.cc {
            CcKind::Paced { rate_bps } => rate_bps,
            _ => 0.0,
        };
        TcpSender {
            cfg,
            state: SendState::Closed,
            nsegs,
            total,
            writes: Vec::new(),
            una: 0,
            nxt: 0,
            high: 0,
            board: VecDeque::with_capacity(64),
            cwnd: cfg.initial_cwnd as f64,
            // RFC 5681 §3.1: "arbitrarily high", here the largest window the peer could offer.
            ssthresh: f64::MAX,
            rwnd: cfg.mss,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            sack_ok: false,
            srtt: None,
            rttvar: 0.0,
            rto_s: INITIAL_RTO_S.max(cfg.min_rto.as_secs_f64()),
            rtt_min: f64::INFINITY,
            timed: None,
            rto_deadline: None,
            rto_pending: None,
            syn_sent_at: SimTime::ZERO,
            syn_lost: false,
            pace_rate_bps: pace,
            pace_next: SimTime::ZERO,
            pace_pending: None,
            bwe: 0.0,
            bwe_ns: 0.0,
            w_bytes: 0,
            w_accounted: 0,
            w_stamp: SimTime::ZERO,
            stats: SenderStats::default(),
        }
    }

    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    pub fn srtt(&self) -> Option<f64> {
        self.srtt
    }
    pub fn rto(&self) -> f64 {
        self.rto_s
    }
    pub fn peer_window(&self) -> u32 {
        self.rwnd
    }
    /// Westwood+'s bandwidth estimate (bytes/s; 0 for other variants).
    pub fn bandwidth_estimate(&self) -> f64 {
        self.bwe
    }
    pub fn pace_rate(&self) -> f64 {
        self.pace_rate_bps
    }
    pub fn cc_name(&self) -> &'static str {
        self.cfg.cc.name()
    }
    /// Whether the connection asked for SACK (it is used if the peer agrees).
    pub fn sack_requested(&self) -> bool {
        self.cfg.sack
    }
    pub fn is_paced(&self) -> bool {
        matches!(self.cfg.cc, CcKind::Paced { .. })
    }

    /// Sets the sending rate of the paced mode (DiffQ's source rate control).
    pub fn set_pace_rate(&mut self, now: SimTime, rate_bps: f64, out: &mut TcpOut) {
        let old = self.pace_rate_bps.max(1.0);
        self.pace_rate_bps = rate_bps.max(1.0);
        if self.pace_next > now {
            // The wait left at the old rate is rescaled to the new one.
            let left = (self.pace_next - now).as_secs_f64() * old / self.pace_rate_bps;
            self.pace_next = now + secs(left);
            self.pace_pending = None;
        }
        self.try_send(now, out);
    }

    /// Sets the paced rate without sending (set-up, and rate controllers that call before the
    /// pacing clock's own tick).
    pub fn set_pace_rate_quiet(&mut self, rate_bps: f64) {
        self.pace_rate_bps = rate_bps.max(1.0);
    }

    /// Active open: sends the SYN.
    pub fn open(&mut self, now: SimTime, out: &mut TcpOut) {
        if self.state != SendState::Closed {
            return;
        }
        self.state = SendState::SynSent;
        self.syn_sent_at = now;
        self.send_syn(out);
        self.rto_deadline = Some(now + secs(self.rto_s));
        self.arm_rto(out);
    }

    /// The application hands `bytes` more to send (app-limited mode): they go out as the
    /// window allows, right away if the connection is open and idle.
    pub fn write(&mut self, now: SimTime, bytes: u64, out: &mut TcpOut) {
        if !self.cfg.app_limited || bytes == 0 || self.state == SendState::Done {
            return;
        }
        self.writes.push((self.nsegs, self.total));
        self.nsegs += bytes.div_ceil(self.cfg.mss as u64);
        self.total += bytes;
        self.try_send(now, out);
    }

    /// Bytes the application has written (app-limited mode) or will send.
    pub fn written_bytes(&self) -> u64 {
        self.total
    }

    /// The write holding segment `k` (app-limited mode): (its first segment, first byte, and
    /// the first byte of the next write, or the total).
    fn write_of(&self, k: u64) -> (u64, u64, u64) {
        let i = self.writes.partition_point(|w| w.0 <= k).max(1) - 1;
        let (s, b) = self.writes[i];
        let end = self.writes.get(i + 1).map_or(self.total, |w| w.1);
        (s, b, end)
    }

    /// The application stopped (the flow's stop time): nothing more is sent.
    pub fn halt(&mut self) {
        self.state = SendState::Done;
        self.rto_deadline = None;
    }

    fn send_syn(&mut self, out: &mut TcpOut) {
        let mut flags = SYN;
        if self.cfg.sack {
            flags |= SACK_PERMITTED;
        }
        out.segments.push(TcpHeader {
            seq: 0,
            flags,
            wnd: self.cfg.max_window(),
            mss: self.cfg.mss,
            ..TcpHeader::default()
        });
    }

    fn seg_len(&self, k: u64) -> u32 {
        if k >= self.nsegs {
            0
        } else if self.cfg.app_limited {
            let (s, b, end) = self.write_of(k);
            let start = b + (k - s) * self.cfg.mss as u64;
            (end - start).min(self.cfg.mss as u64) as u32
        } else if self.total == u64::MAX {
            self.cfg.mss
        } else {
            (self.total - k * self.cfg.mss as u64).min(self.cfg.mss as u64) as u32
        }
    }

    fn seg_seq(&self, k: u64) -> u64 {
        if self.cfg.app_limited {
            if k >= self.nsegs {
                return 1 + self.total;
            }
            let (s, b, _) = self.write_of(k);
            return 1 + b + (k - s) * self.cfg.mss as u64;
        }
        1 + (k * self.cfg.mss as u64).min(self.total)
    }

    /// One past the last segment the connection sends (the FIN included).
    fn end(&self) -> u64 {
        if self.cfg.app_limited {
            // No FIN: the connection stays open for the application's next write.
            self.nsegs
        } else if self.nsegs == u64::MAX {
            u64::MAX
        } else {
            self.nsegs + 1
        }
    }

    /// Segments fully acknowledged by a cumulative ACK number.
    fn acked_segments(&self, ack: u64) -> u64 {
        let b = ack.saturating_sub(1);
        if self.cfg.app_limited {
            if b >= self.total {
                return self.nsegs;
            }
            // The write holding byte b, and the segment of it that starts at or before b.
            let i = self.writes.partition_point(|w| w.1 <= b).max(1) - 1;
            let (s, first) = self.writes[i];
            return s + (b - first) / self.cfg.mss as u64;
        }
        if self.total != u64::MAX && b >= self.total {
            if b > self.total {
                self.nsegs + 1
            } else {
                self.nsegs
            }
        } else {
            b / self.cfg.mss as u64
        }
    }

    fn flag(&self, k: u64) -> u8 {
        if k >= self.una && k < self.high {
            self.board[(k - self.una) as usize]
        } else {
            0
        }
    }

    fn set_flag(&mut self, k: u64, f: u8) {
        if k >= self.una && k < self.high {
            self.board[(k - self.una) as usize] |= f;
        }
    }

    fn rwnd_segments(&self) -> u64 {
        (self.rwnd / self.cfg.mss).max(1) as u64
    }

    fn send_segment(&mut self, now: SimTime, k: u64, out: &mut TcpOut) {
        let len = self.seg_len(k);
        let mut flags = ACK;
        if k == self.nsegs {
            flags |= FIN;
            if self.state == SendState::Established {
                self.state = SendState::FinSent;
            }
        }
        let checksum = if self.cfg.verify_stream && len > 0 {
            let offset = if self.cfg.app_limited {
                self.seg_seq(k) - 1
            } else {
                k * self.cfg.mss as u64
            };
            content_checksum(self.cfg.stream_key, offset, len)
        } else {
            0
        };
        out.segments.push(TcpHeader {
            seq: self.seg_seq(k),
            ack: 1,
            flags,
            wnd: self.cfg.max_window(),
            len,
            checksum,
            ..TcpHeader::default()
        });
        if k < self.high {
            self.stats.retransmits += 1;
            self.set_flag(k, RETX);
            if self.timed.is_some_and(|(t, _)| t == k) {
                self.timed = None;
            }
        } else {
            while self.high <= k {
                self.board.push_back(0);
                self.high += 1;
            }
            if len > 0 {
                self.stats.segments_sent += 1;
            }
            if self.timed.is_none() {
                self.timed = Some((k, now));
            }
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + secs(self.rto_s));
        }
    }

    fn can_send(&self) -> bool {
        matches!(self.state, SendState::Established | SendState::FinSent)
    }

    /// Sends what the window (or the pacing clock) allows.
    fn try_send(&mut self, now: SimTime, out: &mut TcpOut) {
        if !self.can_send() {
            return;
        }
        if self.is_paced() {
            self.pace_send(now, out);
        } else if self.sack_ok && self.in_recovery {
            // RFC 6675 §5 (C): send while cwnd - pipe >= 1 segment.
            while self.cwnd - self.pipe() as f64 >= 1.0 {
                match self.next_segment() {
                    Some(k) => self.send_segment(now, k, out),
                    None => break,
                }
            }
        } else {
            let wnd = (self.cwnd.floor() as u64).max(1).min(self.rwnd_segments());
            while self.nxt < self.end() && self.nxt - self.una < wnd {
                let k = self.nxt;
                self.nxt += 1;
                if self.flag(k) & SACKED != 0 {
                    continue;
                }
                self.send_segment(now, k, out);
            }
        }
        self.arm_rto(out);
    }

    /// The paced mode: one segment per tick of a clock at the set rate, limited only by the
    /// receive window; lost segments go before new ones.
    fn pace_send(&mut self, now: SimTime, out: &mut TcpOut) {
        if now < self.pace_next {
            self.arm_pace(out);
            return;
        }
        let k = if self.in_recovery {
            self.next_segment()
        } else {
            None
        };
        let k = k.or_else(|| {
            while self.nxt < self.end() && self.nxt - self.una < self.rwnd_segments() {
                let k = self.nxt;
                self.nxt += 1;
                if self.flag(k) & SACKED == 0 {
                    return Some(k);
                }
            }
            None
        });
        if let Some(k) = k {
            self.send_segment(now, k, out);
            let bits = (self.seg_len(k) + TCP_HEADER_BYTES + IPV4_HEADER_BYTES) as f64 * 8.0;
            self.pace_next = now + secs(bits / self.pace_rate_bps.max(1.0));
            self.arm_pace(out);
        }
    }

    fn arm_pace(&mut self, out: &mut TcpOut) {
        let at = self.pace_next;
        if self.pace_pending.is_none_or(|p| p > at) {
            self.pace_pending = Some(at);
            out.timers.push((TcpTimer::Pace, at));
        }
    }

    fn arm_rto(&mut self, out: &mut TcpOut) {
        if let Some(d) = self.rto_deadline {
            if self.rto_pending.is_none_or(|p| p > d) {
                self.rto_pending = Some(d);
                out.timers.push((TcpTimer::Rto, d));
            }
        }
    }

    /// RFC 6675 `IsLost` for every outstanding segment: DupThresh SACKed segments above it.
    fn update_lost(&mut self) {
        let mut above = 0u32;
        for f in self.board.iter_mut().rev() {
            if *f & SACKED != 0 {
                above += 1;
            } else if above >= DUP_THRESH {
                *f |= LOST;
            }
        }
    }

    /// RFC 6675 `SetPipe`: segments believed in the network.
    fn pipe(&self) -> u64 {
        let mut pipe = 0;
        for &f in &self.board {
            if f & SACKED == 0 {
                if f & LOST == 0 {
                    pipe += 1;
                }
                if f & RETX != 0 {
                    pipe += 1;
                }
            }
        }
        pipe
    }

    /// RFC 6675 `NextSeg` rules 1 and 2 (rules 3 and 4, the optional rescue retransmissions,
    /// are not implemented): the first lost segment not yet retransmitted, else new data.
    fn next_segment(&mut self) -> Option<u64> {
        if let Some(i) = self
            .board
            .iter()
            .position(|&f| f & (SACKED | RETX) == 0 && f & LOST != 0)
        {
            return Some(self.una + i as u64);
        }
        if self.nxt < self.end() && self.nxt - self.una < self.rwnd_segments() {
            let k = self.nxt;
            self.nxt += 1;
            return Some(k);
        }
        None
    }

    fn rtt_sample(&mut self, r: f64) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2.0;
            }
            Some(s) => {
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - r).abs();
                self.srtt = Some(0.875 * s + 0.125 * r);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        self.rto_s = (srtt + (4.0 * self.rttvar).max(CLOCK_GRANULARITY_S))
            .max(self.cfg.min_rto.as_secs_f64())
            .min(self.cfg.max_rto.as_secs_f64());
        self.rtt_min = self.rtt_min.min(r);
    }

    /// Westwood+: counts the bytes an ACK reports delivered (a duplicate ACK one MSS, a
    /// cumulative ACK what it covers beyond what duplicates already counted) and samples the
    /// bandwidth once per RTT.
    fn westwood_ack(&mut self, now: SimTime, newly_bytes: u64) {
        let mss = self.cfg.mss as u64;
        let mut cumul = newly_bytes;
        if cumul == 0 {
            self.w_accounted += mss;
            cumul = mss;
        } else if cumul > mss {
            if self.w_accounted >= cumul {
                self.w_accounted -= cumul;
                cumul = mss;
            } else {
                cumul -= self.w_accounted;
                self.w_accounted = 0;
            }
        }
        self.w_bytes += cumul;
        let delta = (now - self.w_stamp).as_secs_f64();
        let interval = self.srtt.unwrap_or(0.0).max(WESTWOOD_MIN_INTERVAL_S);
        if delta >= interval {
            let sample = self.w_bytes as f64 / delta;
            if self.bwe == 0.0 {
                self.bwe_ns = sample;
                self.bwe = sample;
            } else {
                self.bwe_ns = (7.0 * self.bwe_ns + sample) / 8.0;
                self.bwe = (7.0 * self.bwe + self.bwe_ns) / 8.0;
            }
            self.w_bytes = 0;
            self.w_stamp = now;
        }
    }

    /// ssthresh after a loss: half the flight (RFC 5681 (4), at least two segments), or
    /// Westwood+'s `BWE · RTTmin / MSS`.
    fn ssthresh_after_loss(&self) -> f64 {
        match self.cfg.cc {
            CcKind::Westwood if self.bwe > 0.0 && self.rtt_min.is_finite() => {
                (self.bwe * self.rtt_min / self.cfg.mss as f64).max(2.0)
            }
            _ => ((self.high - self.una) as f64 / 2.0).max(2.0),
        }
    }

    fn window_notice(&self, out: &mut TcpOut) {
        out.notices.push(TcpNotice::Window { cwnd: self.cwnd });
    }

    /// An ACK (or the receiver's SYN-ACK or FIN-ACK) arrived.
    pub fn on_ack(&mut self, now: SimTime, h: &TcpHeader, out: &mut TcpOut) {
        match self.state {
            SendState::Closed | SendState::Done => {
                if self.state == SendState::Done && h.has(FIN) {
                    self.send_final_ack(out);
                }
                return;
            }
            SendState::SynSent => {
                if h.has(SYN) && h.has(ACK) && h.ack == 1 {
                    self.state = SendState::Established;
                    self.sack_ok = self.cfg.sack && h.has(SACK_PERMITTED);
                    self.rwnd = h.wnd;
                    self.rto_deadline = None;
                    if self.syn_lost {
                        // RFC 5681 §3.1: one segment after a lost SYN; RFC 6298 (5.7).
                        self.cwnd = 1.0;
                        self.rto_s = RTO_AFTER_SYN_LOSS_S.max(self.cfg.min_rto.as_secs_f64());
                    } else {
                        self.rtt_sample((now - self.syn_sent_at).as_secs_f64());
                    }
                    self.w_stamp = now;
                    out.segments.push(TcpHeader {
                        seq: 1,
                        ack: 1,
                        flags: ACK,
                        wnd: self.cfg.max_window(),
                        ..TcpHeader::default()
                    });
                    self.window_notice(out);
                    self.try_send(now, out);
                }
                return;
            }
            SendState::Established | SendState::FinSent => {}
        }
        if h.has(SYN) {
            return;
        }
        self.rwnd = h.wnd;
        let acked = self.acked_segments(h.ack).min(self.high);
        if h.has(FIN) && acked > self.nsegs {
            self.advance(now, acked, out);
            self.send_final_ack(out);
            self.state = SendState::Done;
            self.rto_deadline = None;
            return;
        }
        if self.sack_ok && h.nsack > 0 {
            for &(l, r) in &h.sack[..h.nsack as usize] {
                if r <= l {
                    continue;
                }
                let first = self.acked_segments(l).max(self.una);
                // Segments wholly inside [l, r).
                let mut k = if self.seg_seq(first) >= l {
                    first
                } else {
                    first + 1
                };
                // Data segments only: the FIN has no octets to SACK (RFC 2018).
                while k < self.high
                    && k < self.nsegs
                    && self.seg_seq(k) + self.seg_len(k) as u64 <= r
                {
                    self.set_flag(k, SACKED);
                    k += 1;
                }
            }
            self.update_lost();
        }
        if acked > self.una {
            self.advance(now, acked, out);
        } else if acked == self.una && self.una < self.high && h.len == 0 && !h.has(FIN) {
            self.duplicate_ack(now, out);
        }
        self.try_send(now, out);
    }

    fn send_final_ack(&self, out: &mut TcpOut) {
        out.segments.push(TcpHeader {
            seq: self.total.saturating_add(2),
            ack: 2,
            flags: ACK,
            wnd: self.cfg.max_window(),
            ..TcpHeader::default()
        });
    }

    /// A cumulative ACK covering new data.
    fn advance(&mut self, now: SimTime, acked: u64, out: &mut TcpOut) {
        let newly = acked - self.una;
        if let Some((k, t)) = self.timed {
            if acked > k {
                self.rtt_sample((now - t).as_secs_f64());
                self.timed = None;
            }
        }
        if self.cfg.cc == CcKind::Westwood {
            let bytes = if self.cfg.app_limited {
                self.seg_seq(acked) - self.seg_seq(self.una)
            } else {
                newly * self.cfg.mss as u64
            };
            self.westwood_ack(now, bytes);
        }
        for _ in 0..newly.min(self.board.len() as u64) {
            self.board.pop_front();
        }
        self.una = acked;
        if self.nxt < self.una {
            self.nxt = self.una;
        }
        self.dupacks = 0;
        let paced = self.is_paced();
        if self.in_recovery {
            if acked >= self.recover {
                self.in_recovery = false;
                if !paced {
                    let flight = (self.high - self.una) as f64;
                    self.cwnd = match (self.cfg.cc, self.sack_ok) {
                        // RFC 6582 §3.2 (3) option 1.
                        (CcKind::Reno, _) | (_, true) => self.ssthresh,
                        _ => self.ssthresh.min(flight.max(1.0) + 1.0),
                    };
                    self.window_notice(out);
                }
            } else if self.cfg.cc == CcKind::Reno && !self.sack_ok {
                // Reno: any new ACK ends fast recovery.
                self.in_recovery = false;
                self.cwnd = self.ssthresh;
                self.window_notice(out);
            } else if !self.sack_ok {
                // RFC 6582 §3.2 (3) partial ACK: retransmit the next hole, deflate by what was
                // acknowledged, add back one segment; restart the timer (the "Slow-but-Steady"
                // variant of §4).
                let k = self.una;
                self.send_segment(now, k, out);
                if !paced {
                    self.cwnd = (self.cwnd - newly as f64 + 1.0).max(1.0);
                    self.window_notice(out);
                }
                self.rto_deadline = Some(now + secs(self.rto_s));
            }
        } else if !paced && self.cwnd <= self.rwnd_segments() as f64 + 1.0 {
            // The window grows only while it is what limits the sender, not the peer's
            // receive window (RFC 7661's cwnd-limited rule, Linux `tcp_is_cwnd_limited`).
            if self.cwnd < self.ssthresh {
                // RFC 5681 (2): at most one SMSS per ACK in slow start.
                self.cwnd += 1.0;
            } else {
                let inc = match self.cfg.cc {
                    CcKind::Few { alpha } => alpha,
                    _ => 1.0,
                };
                // RFC 5681 (3): SMSS·SMSS/cwnd per ACK, i.e. about one segment per RTT.
                self.cwnd += inc / self.cwnd;
            }
            self.window_notice(out);
        }
        // RFC 6298 (5.2), (5.3).
        self.rto_deadline = if self.una < self.high {
            Some(now + secs(self.rto_s))
        } else {
            None
        };
    }

    fn duplicate_ack(&mut self, now: SimTime, out: &mut TcpOut) {
        self.dupacks += 1;
        if self.cfg.cc == CcKind::Westwood {
            self.westwood_ack(now, 0);
        }
        let paced = self.is_paced();
        if self.in_recovery {
            if !self.sack_ok && !paced {
                // RFC 5681 (4): inflate by one segment per further duplicate.
                self.cwnd += 1.0;
            }
            return;
        }
        let sack_lost = self.sack_ok && self.flag(self.una) & LOST != 0;
        if self.dupacks < DUP_THRESH && !sack_lost {
            return;
        }
        // RFC 6582 §3.2 (2): no new recovery for duplicates of data sent before the last
        // recovery or timeout (Reno has no `recover` and always enters).
        if self.cfg.cc != CcKind::Reno && self.una < self.recover {
            return;
        }
        self.stats.fast_retransmits += 1;
        out.notices.push(TcpNotice::Loss { timeout: false });
        self.in_recovery = true;
        self.recover = self.high;
        self.set_flag(self.una, LOST);
        if !paced {
            self.ssthresh = self.ssthresh_after_loss();
            // Westwood+ never raises the window on a loss: cwnd = min(cwnd, ssthresh).
            let base = if self.cfg.cc == CcKind::Westwood {
                self.cwnd.min(self.ssthresh)
            } else {
                self.ssthresh
            };
            self.cwnd = if self.sack_ok {
                base
            } else {
                base + DUP_THRESH as f64
            };
            self.window_notice(out);
        }
        let k = self.una;
        if !paced {
            self.send_segment(now, k, out);
        }
    }

    /// A timer fired (stale firings are ignored).
    pub fn on_timer(&mut self, now: SimTime, kind: TcpTimer, out: &mut TcpOut) {
        match kind {
            TcpTimer::Rto => {
                if self.rto_pending == Some(now) {
                    self.rto_pending = None;
                }
                if self.rto_deadline.is_some_and(|d| now >= d) {
                    self.rto_deadline = None;
                    self.timeout(now, out);
                }
                self.arm_rto(out);
            }
            TcpTimer::Pace => {
                if self.pace_pending == Some(now) {
                    self.pace_pending = None;
                }
                if self.can_send() {
                    self.pace_send(now, out);
                }
                self.arm_rto(out);
            }
            TcpTimer::DelAck => {}
        }
    }

    fn timeout(&mut self, now: SimTime, out: &mut TcpOut) {
        self.rto_s = (self.rto_s * 2.0).min(self.cfg.max_rto.as_secs_f64());
        match self.state {
            SendState::SynSent => {
                self.syn_lost = true;
                self.send_syn(out);
                self.rto_deadline = Some(now + secs(self.rto_s));
            }
            SendState::Established | SendState::FinSent => {
                self.stats.timeouts += 1;
                out.notices.push(TcpNotice::Loss { timeout: true });
                if !self.is_paced() {
                    self.ssthresh = self.ssthresh_after_loss();
                    // RFC 5681 (5): the loss window is one segment.
                    self.cwnd = 1.0;
                    self.window_notice(out);
                }
                self.recover = self.high;
                self.in_recovery = false;
                self.dupacks = 0;
                // SACK information is kept across the timeout (as Linux does; RFC 2018 §8's
                // SHOULD-clear guards against a receiver reneging, which xlayer's never does).
                for f in self.board.iter_mut() {
                    *f &= SACKED;
                }
                self.nxt = self.una;
                self.timed = None;
                // Go back: the first unacknowledged segment goes now (not behind the pacer).
                let k = self.nxt;
                self.nxt += 1;
                self.send_segment(now, k, out);
                if !self.is_paced() {
                    self.try_send(now, out);
                }
            }
            _ => {}
        }
    }
}

fn secs(s: f64) -> SimTime {
    SimTime::from_secs_f64(s)
}
