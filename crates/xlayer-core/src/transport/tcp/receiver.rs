//! The receiving end of a TCP connection: passive open, reassembly, (delayed) ACKs with SACK
//! blocks, in-order delivery to the application, and the passive close.

use super::{
    content_checksum, TcpConfig, TcpHeader, TcpOut, TcpTimer, ACK, FIN, SACK_PERMITTED, SYN,
};
use crate::sim::SimTime;

/// FIN retransmissions before the receiver closes anyway (Linux's `tcp_orphan_retries`
/// default of 8 is for orphaned sockets; 6 doublings from 1 s cover about two minutes).
pub const FIN_RETRIES: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvState {
    Listen,
    SynReceived,
    Established,
    /// The sender's FIN arrived and was answered with our FIN; waiting for its ACK.
    LastAck,
    Closed,
}

#[derive(Debug)]
pub struct TcpReceiver {
    cfg: TcpConfig,
    pub state: RecvState,
    /// Next byte sequence expected.
    rcv_nxt: u64,
    /// Segments received out of order `(seq, len, checksum)`, sorted by sequence.
    ooo: Vec<(u64, u32, u64)>,
    /// Sequence of the latest out-of-order arrival (its block goes first, RFC 2018 §4).
    recent: u64,
    sack_ok: bool,
    /// Full-sized segments received since the last ACK.
    unacked: u32,
    delack_deadline: Option<SimTime>,
    /// When our FIN is retransmitted if unacknowledged, and the current interval.
    fin_deadline: Option<SimTime>,
    fin_rto_s: f64,
    fin_retries: u32,
    /// Earliest timer event scheduled and not yet fired.
    timer_pending: Option<SimTime>,
    /// Sequence number of the sender's FIN once seen.
    fin_seq: Option<u64>,
    /// Advertised-window limit set through the tuning layer (bytes).
    rwnd_limit: u32,
    /// Application bytes delivered in order.
    pub delivered_bytes: u64,
    /// In-order chunks whose checksum did not match the bytes expected at their offset.
    pub stream_errors: u64,
    /// When the last byte (and the FIN) arrived.
    pub completed_at: Option<SimTime>,
    pub acks_sent: u64,
}

impl TcpReceiver {
    pub fn new(cfg: TcpConfig) -> TcpReceiver {
        TcpReceiver {
            cfg,
            state: RecvState::Listen,
            rcv_nxt: 0,
            ooo: Vec::with_capacity(64),
            recent: 0,
            sack_ok: false,
            unacked: 0,
            delack_deadline: None,
            fin_deadline: None,
            fin_rto_s: 1.0,
            fin_retries: 0,
            timer_pending: None,
            fin_seq: None,
            rwnd_limit: u32::MAX,
            delivered_bytes: 0,
            stream_errors: 0,
            completed_at: None,
            acks_sent: 0,
        }
    }

    /// The window advertised: the receive buffer (the application reads in-order data at
    /// once), capped at 65535 without window scaling and by the tuning layer's limit.
    pub fn advertised_window(&self) -> u32 {
        self.cfg.max_window().min(self.rwnd_limit)
    }

    /// Sets the advertised window (ECLAIR's receiver window control); at least one MSS.
    pub fn set_window_limit(&mut self, bytes: u32) {
        self.rwnd_limit = bytes.max(self.cfg.mss);
    }

    pub fn on_segment(&mut self, now: SimTime, h: &TcpHeader, out: &mut TcpOut) {
        if h.has(SYN) {
            match self.state {
                RecvState::Listen | RecvState::SynReceived => {
                    self.state = RecvState::SynReceived;
                    self.rcv_nxt = h.seq + 1;
                    self.sack_ok = self.cfg.sack && h.has(SACK_PERMITTED);
                    let mut flags = SYN | ACK;
                    if self.sack_ok {
                        flags |= SACK_PERMITTED;
                    }
                    self.send(flags, 0, out);
                }
                _ => self.ack_now(out),
            }
            return;
        }
        if self.state == RecvState::SynReceived && h.has(ACK) {
            self.state = RecvState::Established;
        }
        if self.state == RecvState::LastAck && h.has(ACK) && h.ack >= 2 && !h.has(FIN) && h.len == 0
        {
            self.state = RecvState::Closed;
            return;
        }
        if !matches!(self.state, RecvState::Established | RecvState::LastAck) {
            return;
        }
        let mut immediate = false;
        if h.len > 0 {
            if h.seq == self.rcv_nxt {
                let filled_hole = !self.ooo.is_empty();
                self.deliver(h.seq, h.len, h.checksum, out);
                // Drain what the arrival made contiguous.
                while let Some(&(s, l, c)) = self.ooo.first() {
                    if s > self.rcv_nxt {
                        break;
                    }
                    self.ooo.remove(0);
                    if s == self.rcv_nxt {
                        self.deliver(s, l, c, out);
                    }
                }
                if filled_hole {
                    immediate = true;
                } else {
                    self.unacked += 1;
                    if !self.cfg.delayed_ack || self.unacked >= 2 {
                        immediate = true;
                    } else if self.delack_deadline.is_none() {
                        let at = now + self.cfg.delack_timeout;
                        self.delack_deadline = Some(at);
                        if self.timer_pending.is_none_or(|p| p > at) {
                            self.timer_pending = Some(at);
                            out.timers.push((TcpTimer::DelAck, at));
                        }
                    }
                }
            } else if h.seq > self.rcv_nxt {
                if let Err(i) = self.ooo.binary_search_by_key(&h.seq, |e| e.0) {
                    self.ooo.insert(i, (h.seq, h.len, h.checksum));
                }
                self.recent = h.seq;
                immediate = true;
            } else {
                // An old duplicate: tell the sender where we are (RFC 793).
                immediate = true;
            }
        }
        if h.has(FIN) {
            self.fin_seq = Some(h.seq + h.len as u64);
            immediate = true;
        }
        if let Some(f) = self.fin_seq {
            if f == self.rcv_nxt && self.state == RecvState::Established {
                self.rcv_nxt += 1;
                self.state = RecvState::LastAck;
                immediate = true;
                if self.completed_at.is_none() {
                    self.completed_at = Some(now);
                }
            }
            if self.state == RecvState::LastAck && h.has(FIN) {
                // Our FIN rides on the ACK of theirs (and is repeated for a repeated FIN).
                self.send_fin(out);
                self.arm_fin(now, out);
                return;
            }
        }
        if immediate {
            self.ack_now(out);
        }
        if self.state == RecvState::LastAck {
            self.arm_fin(now, out);
        }
    }

    /// Arms the FIN retransmission timer if it is not running.
    fn arm_fin(&mut self, now: SimTime, out: &mut TcpOut) {
        if self.fin_deadline.is_none() {
            let at = now + SimTime::from_secs_f64(self.fin_rto_s);
            self.fin_deadline = Some(at);
            if self.timer_pending.is_none_or(|p| p > at) {
                self.timer_pending = Some(at);
                out.timers.push((TcpTimer::DelAck, at));
            }
        }
    }

    /// The receiver's timer fired (delayed ACK or FIN retransmission).
    pub fn on_timer(&mut self, now: SimTime, out: &mut TcpOut) {
        if self.timer_pending == Some(now) {
            self.timer_pending = None;
        }
        if self.delack_deadline.is_some_and(|d| now >= d) {
            self.ack_now(out);
        }
        if self.fin_deadline.is_some_and(|d| now >= d) {
            self.fin_deadline = None;
            if self.state == RecvState::LastAck {
                self.fin_retries += 1;
                if self.fin_retries > FIN_RETRIES {
                    self.state = RecvState::Closed;
                } else {
                    self.fin_rto_s = (self.fin_rto_s * 2.0).min(60.0);
                    self.send_fin(out);
                    self.arm_fin(now, out);
                }
            }
        }
        let next = match (self.delack_deadline, self.fin_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = next {
            if self.timer_pending.is_none_or(|p| p > at) {
                self.timer_pending = Some(at);
                out.timers.push((TcpTimer::DelAck, at));
            }
        }
    }

    fn deliver(&mut self, seq: u64, len: u32, checksum: u64, out: &mut TcpOut) {
        let offset = seq - 1;
        let ok = !self.cfg.verify_stream
            || checksum == content_checksum(self.cfg.stream_key, offset, len);
        if !ok {
            self.stream_errors += 1;
        }
        self.rcv_nxt = seq + len as u64;
        self.delivered_bytes += len as u64;
        out.delivered.push((offset, len, ok));
    }

    fn ack_now(&mut self, out: &mut TcpOut) {
        match self.state {
            // Every ACK sent in LAST-ACK carries our FIN again (RFC 793: the FIN is
            // retransmitted until acknowledged).
            RecvState::LastAck => self.send_fin(out),
            RecvState::Closed => self.send(ACK, 2, out),
            _ => self.send(ACK, 1, out),
        }
    }

    /// Sends our FIN (with the ACK of theirs) and arms its retransmission: RFC 6298's initial
    /// 1 s, doubled at each expiry; after [`FIN_RETRIES`] the receiver gives up and closes
    /// (the sender has every byte acknowledged by then or is gone).
    fn send_fin(&mut self, out: &mut TcpOut) {
        self.send(FIN | ACK, 1, out);
    }

    fn send(&mut self, flags: u8, seq: u64, out: &mut TcpOut) {
        self.unacked = 0;
        self.delack_deadline = None;
        self.acks_sent += 1;
        let mut h = TcpHeader {
            seq,
            ack: self.rcv_nxt,
            flags,
            wnd: self.advertised_window(),
            mss: self.cfg.mss,
            ..TcpHeader::default()
        };
        if self.sack_ok && !self.ooo.is_empty() && flags & SYN == 0 {
            self.fill_sack(&mut h);
        }
        out.segments.push(h);
    }

    /// SACK blocks: the block holding the latest arrival first, then the others from the
    /// highest down (RFC 2018 §4), at most three.
    fn fill_sack(&self, h: &mut TcpHeader) {
        let mut n = 0usize;
        let mut first: Option<(u64, u64)> = None;
        // Contiguous runs of out-of-order segments, walked from the highest.
        let mut i = self.ooo.len();
        let mut blocks_desc: [(u64, u64); 16] = [(0, 0); 16];
        let mut nb = 0usize;
        while i > 0 {
            let mut j = i - 1;
            let right = self.ooo[j].0 + self.ooo[j].1 as u64;
            while j > 0 && self.ooo[j - 1].0 + self.ooo[j - 1].1 as u64 >= self.ooo[j].0 {
                j -= 1;
            }
            let left = self.ooo[j].0;
            if left <= self.recent && self.recent < right {
                first = Some((left, right));
            } else if nb < blocks_desc.len() {
                blocks_desc[nb] = (left, right);
                nb += 1;
            }
            i = j;
        }
        if let Some(b) = first {
            h.sack[0] = b;
            n = 1;
        }
        for &b in &blocks_desc[..nb] {
            if n == h.sack.len() {
                break;
            }
            h.sack[n] = b;
            n += 1;
        }
        h.nsack = n as u8;
    }
}
