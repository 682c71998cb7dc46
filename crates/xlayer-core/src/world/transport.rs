//! Transport glue of [`World`]: TCP connections and TFRC senders/receivers are sans-IO state
//! machines (`crate::transport`); this file hands them arrivals, arms their timers through
//! `Event::TransportTimer` (lazily cancelled deadlines) and sends what they emit.

use super::*;

/// A TCP connection: the sender at the flow's source, the receiver at its destination.
#[derive(Debug)]
pub struct TcpConn {
    pub flow: u32,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
}

/// A TFRC connection, with the times of its pending timer events (each timer keeps at most one
/// event in the queue that matters; stale ones find nothing due).
#[derive(Debug)]
pub struct TfrcConn {
    pub flow: u32,
    pub sender: TfrcSender,
    pub receiver: TfrcReceiver,
    send_pending: Option<SimTime>,
    nofeedback_pending: Option<SimTime>,
    feedback_pending: Option<SimTime>,
    pub feedbacks_sent: u64,
}

impl TfrcConn {
    pub fn new(flow: u32, cfg: TfrcConfig) -> TfrcConn {
        TfrcConn {
            flow,
            sender: TfrcSender::new(cfg, SimTime::ZERO),
            receiver: TfrcReceiver::new(cfg),
            send_pending: None,
            nofeedback_pending: None,
            feedback_pending: None,
            feedbacks_sent: 0,
        }
    }
}

/// TFRC data and feedback packets carry a 16-byte TFRC header over UDP (sequence number,
/// timestamp and RTT estimate; echoed timestamp, elapsed time, receive rate and loss event rate).
pub const TFRC_HEADER_BYTES: u32 = 16;

/// One row of the per-connection TCP trace (`output.tcp_trace`).
#[derive(Debug, Clone, Copy)]
pub struct TcpTraceRow {
    pub flow: u32,
    pub time: SimTime,
    /// "window", "loss_dupack" or "loss_timeout".
    pub event: &'static str,
    pub cwnd: f64,
    pub ssthresh: f64,
    pub srtt_s: f64,
    pub rto_s: f64,
    pub retransmits: u64,
    pub timeouts: u64,
}

/// Timer codes of `Event::TransportTimer`.
const TIMER_TCP_RTO: u8 = 0;
const TIMER_TCP_PACE: u8 = 1;
const TIMER_TCP_DELACK: u8 = 2;
const TIMER_TFRC_SEND: u8 = 3;
const TIMER_TFRC_NOFEEDBACK: u8 = 4;
const TIMER_TFRC_FEEDBACK: u8 = 5;

impl World {
    /// A transport timer fired (`Event::TransportTimer`): deadlines are cancelled lazily, so
    /// each handler checks that the deadline is still the connection's.
    pub(super) fn transport_timer(&mut self, now: SimTime, conn: u32, kind: u8) {
        match kind {
            TIMER_TCP_RTO | TIMER_TCP_PACE => {
                if kind == TIMER_TCP_PACE && self.sources.reads_own_queue() {
                    // A paced sender's rate may follow its source's own queue (DiffQ-TCP).
                    let flow = self.tcp[conn as usize].flow;
                    let f = &self.flows[flow as usize];
                    let own = self.dest_queues[f.src as usize].len(f.dst);
                    if let Some(rate) = self.sources.pace_rate(flow, own) {
                        self.tcp[conn as usize].sender.set_pace_rate_quiet(rate);
                    }
                }
                let k = if kind == TIMER_TCP_RTO {
                    TcpTimer::Rto
                } else {
                    TcpTimer::Pace
                };
                self.tcp[conn as usize]
                    .sender
                    .on_timer(now, k, &mut self.tcp_out);
                self.tcp_flush(conn, true, None);
            }
            TIMER_TCP_DELACK => {
                self.tcp[conn as usize]
                    .receiver
                    .on_timer(now, &mut self.tcp_out);
                self.tcp_flush(conn, false, None);
            }
            TIMER_TFRC_SEND => {
                let t = &mut self.tfrc[conn as usize];
                if t.send_pending == Some(now) {
                    t.send_pending = None;
                }
                self.tfrc_send(conn);
            }
            TIMER_TFRC_NOFEEDBACK => {
                let t = &mut self.tfrc[conn as usize];
                if t.nofeedback_pending == Some(now) {
                    t.nofeedback_pending = None;
                }
                if now >= t.sender.nofeedback_deadline()
                    && self.flows[t.flow as usize].emitting(now)
                {
                    t.sender.on_nofeedback(now);
                }
                self.tfrc_arm(conn);
            }
            TIMER_TFRC_FEEDBACK => {
                let t = &mut self.tfrc[conn as usize];
                if t.feedback_pending == Some(now) {
                    t.feedback_pending = None;
                }
                if t.receiver.feedback_due().is_some_and(|d| now >= d) {
                    if let Some(fb) = t.receiver.on_feedback_timer(now) {
                        self.tfrc_feedback(conn, fb);
                    }
                }
                self.tfrc_arm(conn);
            }
            _ => {}
        }
    }

    /// Sends the TFRC data packets now due on connection `c` and re-arms its timers.
    pub(super) fn tfrc_send(&mut self, c: u32) {
        let now = self.now();
        let flow = self.tfrc[c as usize].flow;
        if self.flows[flow as usize].emitting(now) {
            // At most one packet per call: the sender catches up by one packet when late.
            if now >= self.tfrc[c as usize].sender.next_send() {
                let hdr = self.tfrc[c as usize].sender.on_send(now);
                let f = &mut self.flows[flow as usize];
                let ecn = if self.tfrc[c as usize].sender.config().ecn {
                    ECN_ECT0
                } else {
                    ECN_NOT_ECT
                };
                let mut p = udp_datagram(
                    flow,
                    hdr.seq,
                    f.src,
                    f.dst,
                    f.payload_bytes,
                    now,
                    self.ttl,
                    f.level,
                );
                f.next_seq = hdr.seq + 1;
                p.header_bytes += TFRC_HEADER_BYTES;
                p.ecn = ecn;
                p.transport = Header::TfrcData(hdr);
                self.send_from_source(flow, p);
            }
        }
        self.tfrc_arm(c);
    }

    /// Schedules the events connection `c`'s deadlines need (one per timer at a time).
    pub(super) fn tfrc_arm(&mut self, c: u32) {
        let now = self.now();
        let t = &mut self.tfrc[c as usize];
        let f = &self.flows[t.flow as usize];
        let mut want: [(Option<SimTime>, u8); 3] = [(None, 0); 3];
        if f.active && now < f.stop {
            let at = t.sender.next_send().max(now);
            if t.send_pending.is_none_or(|p| p > at) {
                t.send_pending = Some(at);
                want[0] = (Some(at), TIMER_TFRC_SEND);
            }
            let at = t.sender.nofeedback_deadline().max(now);
            if t.nofeedback_pending.is_none_or(|p| p > at) {
                t.nofeedback_pending = Some(at);
                want[1] = (Some(at), TIMER_TFRC_NOFEEDBACK);
            }
        }
        if let Some(at) = t.receiver.feedback_due() {
            let at = at.max(now);
            if t.feedback_pending.is_none_or(|p| p > at) {
                t.feedback_pending = Some(at);
                want[2] = (Some(at), TIMER_TFRC_FEEDBACK);
            }
        }
        for (at, kind) in want {
            if let Some(at) = at {
                self.queue
                    .schedule(at, Event::TransportTimer { conn: c, kind });
            }
        }
    }

    /// Sends a TFRC feedback report from the flow's receiver to its sender.
    pub(super) fn tfrc_feedback(&mut self, c: u32, fb: crate::transport::tfrc::TfrcFeedback) {
        let now = self.now();
        let t = &mut self.tfrc[c as usize];
        t.feedbacks_sent += 1;
        let f = &self.flows[t.flow as usize];
        let mut p = udp_datagram(t.flow, 0, f.dst, f.src, 0, now, self.ttl, f.level);
        p.header_bytes += TFRC_HEADER_BYTES;
        p.transport = Header::TfrcFeedback(fb);
        let dst = f.dst;
        self.nodes[dst as usize].net.originated += 1;
        let h = self.packets.alloc(p);
        self.net_send(dst, h);
    }

    /// Sets the sending rate of paced TCP connection `c` (the tuning layer's `tcp.pace_rate`).
    pub(crate) fn set_pace_rate(&mut self, c: usize, rate_bps: f64) {
        let now = self.now();
        self.tcp[c]
            .sender
            .set_pace_rate(now, rate_bps, &mut self.tcp_out);
        self.tcp_flush(c as u32, true, None);
    }

    /// Sends what a TCP endpoint of connection `c` produced (`from_sender`: the sender at the
    /// flow's source, else the receiver at its destination), arms its timers, credits delivered
    /// bytes to the flow, and publishes its notices. `arrival` is the creation time of the
    /// segment whose arrival caused the call (its network delay is recorded).
    pub(super) fn tcp_flush(&mut self, c: u32, from_sender: bool, arrival: Option<SimTime>) {
        let mut out = std::mem::take(&mut self.tcp_out);
        let now = self.now();
        let flow = self.tcp[c as usize].flow;
        let f = &self.flows[flow as usize];
        let (src, dst, level) = if from_sender {
            (f.src, f.dst, f.level)
        } else {
            (f.dst, f.src, f.level)
        };
        let (a, b) = crate::metrics::window(f.start, f.stop, self.warmup, self.end);
        let in_window = now >= a && now < b;
        for h in &out.segments {
            let p = crate::net::Packet {
                flow,
                seq: h.seq,
                src,
                dst,
                payload_bytes: h.len,
                header_bytes: crate::net::IPV4_HEADER_BYTES
                    + crate::transport::tcp::TCP_HEADER_BYTES
                    + h.option_bytes(),
                created: now,
                ttl: self.ttl,
                level,
                ecn: crate::transport::ECN_NOT_ECT,
                transport: Header::Tcp(*h),
                control: crate::net::Control::None,
                queue_len: 0,
            };
            if h.len > 0 && in_window {
                self.flow_stats[flow as usize].sent += 1;
            }
            self.nodes[src as usize].net.originated += 1;
            let hnd = self.packets.alloc(p);
            self.net_send(src, hnd);
        }
        for &(kind, at) in &out.timers {
            let code = match kind {
                TcpTimer::Rto => TIMER_TCP_RTO,
                TcpTimer::Pace => TIMER_TCP_PACE,
                TcpTimer::DelAck => TIMER_TCP_DELACK,
            };
            self.queue.schedule(
                at,
                Event::TransportTimer {
                    conn: c,
                    kind: code,
                },
            );
        }
        if !out.delivered.is_empty() {
            let st = &mut self.flow_stats[flow as usize];
            for &(_, len, _) in &out.delivered {
                if let Some(bin) = self.timeseries_bin {
                    let i = (now.ns() / bin.ns()) as usize;
                    if st.bin_bytes.len() <= i {
                        st.bin_bytes.resize(i + 1, 0);
                    }
                    st.bin_bytes[i] += len as u64;
                }
                if in_window {
                    st.received += 1;
                    st.delivered_of_sent += 1;
                    st.rx_payload_bytes += len as u64;
                }
            }
            if let (Some(t), true) = (arrival, in_window) {
                st.delays.record((now - t).ns());
            }
        }
        if !out.notices.is_empty() {
            let conn = &self.tcp[c as usize];
            let s = &conn.sender;
            for &n in &out.notices {
                let (kind, value, label) = match n {
                    TcpNotice::Window { cwnd } => (TuneEventKind::TcpWindow, cwnd, "window"),
                    TcpNotice::Loss { timeout: false } => {
                        (TuneEventKind::TcpLoss, 0.0, "loss_dupack")
                    }
                    TcpNotice::Loss { timeout: true } => {
                        (TuneEventKind::TcpLoss, 1.0, "loss_timeout")
                    }
                };
                if self.events.wants(kind) {
                    self.events.publish_flow(now, src, flow, kind, value);
                }
                if label == "loss_timeout" && self.events.wants(TuneEventKind::TcpRto) {
                    self.events
                        .publish_flow(now, src, flow, TuneEventKind::TcpRto, s.rto());
                }
                if let Some(trace) = self.tcp_trace.as_mut() {
                    trace.push(TcpTraceRow {
                        flow,
                        time: now,
                        event: label,
                        cwnd: s.cwnd(),
                        ssthresh: s.ssthresh(),
                        srtt_s: s.srtt().unwrap_or(f64::NAN),
                        rto_s: s.rto(),
                        retransmits: s.stats.retransmits,
                        timeouts: s.stats.timeouts,
                    });
                }
            }
        }
        out.clear();
        self.tcp_out = out;
    }
}
