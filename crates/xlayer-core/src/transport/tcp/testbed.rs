//! An ideal wired path for checking the TCP endpoints against analytic models: one sender, one
//! receiver, a fixed one-way delay each way, a bottleneck rate in the data direction (a FIFO
//! without a size limit, so the only losses are the ones drawn), and a loss process on data
//! segments. This is the set-up of Padhye et al.'s model (fixed RTT, losses independent of the
//! window); the wireless simulator is not involved.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;

use super::{TcpConfig, TcpHeader, TcpOut, TcpReceiver, TcpSender, TcpTimer};
use crate::sim::rng::{stream, Stream};
use crate::sim::SimTime;

/// How data segments are lost on the path (ACKs are never lost unless `ack_loss` is set).
#[derive(Debug, Clone)]
pub enum Loss {
    None,
    /// Each data segment independently with this probability.
    Bernoulli(f64),
    /// Bursts: every `period`-th data transmission starts a burst of `burst` consecutive losses.
    Bursts {
        period: u64,
        burst: u64,
    },
    /// These data transmissions (counted from 0) are lost.
    Listed(Vec<u64>),
}

#[derive(Debug, Clone)]
pub struct PathConfig {
    pub one_way_delay: SimTime,
    pub rate_bps: f64,
    pub loss: Loss,
    /// Probability of losing an ACK (or any receiver-to-sender segment).
    pub ack_loss: f64,
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    ToReceiver(u64),
    ToSender(u64),
    SenderTimer(u8),
    ReceiverTimer,
}

/// The outcome of a run.
#[derive(Debug, Clone, Default)]
pub struct PathReport {
    /// Application bytes the receiver delivered in order.
    pub delivered_bytes: u64,
    /// Each in-order chunk handed to the application: (offset, bytes, checksum ok).
    pub chunks: Vec<(u64, u32, bool)>,
    pub completed_at: Option<SimTime>,
    pub data_transmissions: u64,
    pub data_lost: u64,
    pub timeouts: u64,
    pub retransmits: u64,
    pub fast_retransmits: u64,
    pub sender_done: bool,
    /// (time, cwnd) after every change.
    pub cwnd_trace: Vec<(SimTime, f64)>,
    /// (cwnd before, cwnd after) at every loss detected by duplicate ACKs or SACK.
    pub fast_loss_steps: Vec<(f64, f64)>,
}

struct Bed<'a> {
    path: &'a PathConfig,
    rng: Stream,
    heap: BinaryHeap<Reverse<(SimTime, u64, Ev)>>,
    segments: Vec<TcpHeader>,
    seq: u64,
    link_free: SimTime,
    data_tx: u64,
    burst_left: u64,
    rep: PathReport,
}

impl Bed<'_> {
    fn push(&mut self, t: SimTime, e: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, e)));
    }

    fn data_lost(&mut self) -> bool {
        let k = self.data_tx;
        self.data_tx += 1;
        match &self.path.loss {
            Loss::None => false,
            Loss::Bernoulli(p) => self.rng.gen::<f64>() < *p,
            Loss::Bursts { period, burst } => {
                if k % period == period - 1 {
                    self.burst_left = *burst;
                }
                if self.burst_left > 0 {
                    self.burst_left -= 1;
                    true
                } else {
                    false
                }
            }
            Loss::Listed(v) => v.contains(&k),
        }
    }

    fn wire_bytes(h: &TcpHeader) -> u32 {
        h.len + 40 + h.option_bytes()
    }

    fn route_from_sender(&mut self, now: SimTime, out: &mut TcpOut) {
        for h in out.segments.drain(..) {
            let tx = SimTime::from_secs_f64(Self::wire_bytes(&h) as f64 * 8.0 / self.path.rate_bps);
            let start = self.link_free.max(now);
            self.link_free = start + tx;
            if h.len > 0 {
                self.rep.data_transmissions += 1;
                if self.data_lost() {
                    self.rep.data_lost += 1;
                    continue;
                }
            }
            let i = self.segments.len() as u64;
            self.segments.push(h);
            self.push(self.link_free + self.path.one_way_delay, Ev::ToReceiver(i));
        }
        for (kind, at) in out.timers.drain(..) {
            let k = match kind {
                TcpTimer::Rto => 0,
                TcpTimer::Pace => 1,
                TcpTimer::DelAck => 2,
            };
            self.push(at, Ev::SenderTimer(k));
        }
        out.clear();
    }

    fn route_from_receiver(&mut self, now: SimTime, out: &mut TcpOut, keep_chunks: bool) {
        for h in out.segments.drain(..) {
            if self.path.ack_loss > 0.0 && self.rng.gen::<f64>() < self.path.ack_loss {
                continue;
            }
            let i = self.segments.len() as u64;
            self.segments.push(h);
            self.push(now + self.path.one_way_delay, Ev::ToSender(i));
        }
        for _ in out.timers.drain(..) {}
        if keep_chunks {
            self.rep.chunks.extend(out.delivered.iter().copied());
        }
        out.clear();
    }
}

/// Runs one connection over the path until `until` (or until nothing is left to do).
pub fn run(cfg: TcpConfig, path: &PathConfig, until: SimTime, keep_chunks: bool) -> PathReport {
    let mut s = TcpSender::new(cfg);
    let mut r = TcpReceiver::new(cfg);
    let mut bed = Bed {
        path,
        rng: stream(path.seed, 0, "testbed.loss"),
        heap: BinaryHeap::new(),
        segments: Vec::new(),
        seq: 0,
        link_free: SimTime::ZERO,
        data_tx: 0,
        burst_left: 0,
        rep: PathReport::default(),
    };
    let mut out = TcpOut::default();
    let mut last_cwnd = s.cwnd();
    s.open(SimTime::ZERO, &mut out);
    bed.route_from_sender(SimTime::ZERO, &mut out);
    while let Some(Reverse((now, _, ev))) = bed.heap.pop() {
        if now > until {
            break;
        }
        match ev {
            Ev::ToReceiver(i) => {
                let h = bed.segments[i as usize];
                r.on_segment(now, &h, &mut out);
                // The receiver's delayed-ACK timer is the only one it asks for.
                let timers: Vec<SimTime> = out.timers.iter().map(|t| t.1).collect();
                bed.route_from_receiver(now, &mut out, keep_chunks);
                for at in timers {
                    bed.push(at, Ev::ReceiverTimer);
                }
            }
            Ev::ReceiverTimer => {
                r.on_timer(now, &mut out);
                let timers: Vec<SimTime> = out.timers.iter().map(|t| t.1).collect();
                bed.route_from_receiver(now, &mut out, keep_chunks);
                for at in timers {
                    bed.push(at, Ev::ReceiverTimer);
                }
            }
            Ev::ToSender(i) => {
                let h = bed.segments[i as usize];
                let before = s.cwnd();
                s.on_ack(now, &h, &mut out);
                if out
                    .notices
                    .contains(&super::TcpNotice::Loss { timeout: false })
                {
                    bed.rep.fast_loss_steps.push((before, s.cwnd()));
                }
                bed.route_from_sender(now, &mut out);
            }
            Ev::SenderTimer(k) => {
                let kind = if k == 0 {
                    TcpTimer::Rto
                } else {
                    TcpTimer::Pace
                };
                s.on_timer(now, kind, &mut out);
                bed.route_from_sender(now, &mut out);
            }
        }
        if s.cwnd() != last_cwnd {
            last_cwnd = s.cwnd();
            bed.rep.cwnd_trace.push((now, last_cwnd));
        }
    }
    let mut rep = bed.rep;
    rep.delivered_bytes = r.delivered_bytes;
    rep.completed_at = r.completed_at;
    rep.timeouts = s.stats.timeouts;
    rep.retransmits = s.stats.retransmits;
    rep.fast_retransmits = s.stats.fast_retransmits;
    rep.sender_done = s.state == super::sender::SendState::Done;
    rep
}
