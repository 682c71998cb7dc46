//! A flow's transport connection as one component kind: [`Conn`], an enum of the built-in
//! connection-oriented transports (TCP's family, TFRC and TFRC-ECN), dispatched by `match`.
//!
//! A connection owns both endpoints of its flow (the sender at the source, the receiver at the
//! destination; both sans-IO state machines) and speaks to the node assembly through four
//! hooks — [`Conn::open`], [`Conn::on_packet`], [`Conn::timer`] and [`Conn::halt`] — that
//! write what it asks for into a reused [`ConnOut`]: packets to send (each from its `src`),
//! timers to arm (`Event::TransportTimer` with the connection's code), bytes handed in order to
//! the receiving application, and the sender's notices for the tuning events and the TCP trace.
//! The world (`crate::world`) carries them out in that order and keeps the per-flow statistics.
//!
//! Adding a transport is a new file beside this one, a variant of [`Conn`] and its arms here.
//! UDP flows have no connection: the application's datagrams go to the network as they are.

use std::collections::VecDeque;

use super::clap::{ClapConfig, ClapReceiver, ClapSender, LinkStatus};
use super::tcp::{TcpNotice, TcpOut, TcpReceiver, TcpSender, TcpTimer, TCP_HEADER_BYTES};
use super::tfrc::{TfrcConfig, TfrcFeedback, TfrcReceiver, TfrcSender};
use super::{udp_datagram, Header, ECN_CE, ECN_ECT0, ECN_NOT_ECT};
use crate::sim::SimTime;
use crate::wire::clap::{ClapHeader, ClapNack, CLAP_HEADER_BYTES};
use crate::wire::packet::{Control, Packet, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};

/// TFRC data and feedback packets carry a 16-byte TFRC header over UDP (sequence number,
/// timestamp and RTT estimate; echoed timestamp, elapsed time, receive rate and loss event rate).
pub const TFRC_HEADER_BYTES: u32 = 16;

/// Timer codes of `Event::TransportTimer`.
const TIMER_TCP_RTO: u8 = 0;
const TIMER_TCP_PACE: u8 = 1;
const TIMER_TCP_DELACK: u8 = 2;
const TIMER_TFRC_SEND: u8 = 3;
const TIMER_TFRC_NOFEEDBACK: u8 = 4;
const TIMER_TFRC_FEEDBACK: u8 = 5;
const TIMER_CLAP_SEND: u8 = 6;
const TIMER_CLAP_PROBE: u8 = 7;
const TIMER_CLAP_NACK: u8 = 8;
const TIMER_CLAP_TAIL: u8 = 9;

/// Whether a timer code is TCP's pacing timer (a paced sender's rate may be refreshed first).
pub fn is_pace_timer(code: u8) -> bool {
    code == TIMER_TCP_PACE
}

/// The flow a connection carries, as the transport needs it to build packets.
#[derive(Debug, Clone, Copy)]
pub struct Ends {
    pub flow: u32,
    pub src: u32,
    pub dst: u32,
    /// Application bytes per data packet (TCP: the MSS).
    pub payload_bytes: u32,
    /// MAC priority level of the flow's packets.
    pub level: u8,
    /// Initial TTL of the flow's packets.
    pub ttl: u8,
}

/// Where the flow's application stands at the time of a hook.
#[derive(Debug, Clone, Copy)]
pub struct FlowState {
    /// The source may emit now (started, not stopped).
    pub emitting: bool,
    /// The flow has started and its stop time is still ahead (its timers stay armed).
    pub running: bool,
    /// The source's MAC status, read through its tuning layer, for transports that read it
    /// ([`Conn::reads_link_status`]: CLAP); `None` for the others.
    pub link: Option<LinkStatus>,
}

/// What a connection asks of the world after a hook, in the order the world carries it out.
#[derive(Debug, Default)]
pub struct ConnOut {
    /// Packets to hand to the network, each at its `src` node.
    pub packets: Vec<Packet>,
    /// Timers to arm: `(when, code)` for `Event::TransportTimer`. Deadlines are cancelled
    /// lazily: a stale timer finds nothing due when it fires.
    pub timers: Vec<(SimTime, u8)>,
    /// Bytes handed in order to the receiving application (TCP; datagram transports count
    /// their arrivals at the sink instead).
    pub delivered: Vec<u32>,
    /// The sender's notices (TCP: window changes and losses).
    pub notices: Vec<TcpNotice>,
    /// TCP's own output, converted into the fields above.
    tcp: TcpOut,
}

impl ConnOut {
    pub fn clear(&mut self) {
        self.packets.clear();
        self.timers.clear();
        self.delivered.clear();
        self.notices.clear();
        self.tcp.clear();
    }
}

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

    /// Sends the data packet now due, if any (at most one per call: the sender catches up by
    /// one packet when late), and re-arms the timers.
    fn send(&mut self, now: SimTime, e: &Ends, st: FlowState, out: &mut ConnOut) {
        if st.emitting && now >= self.sender.next_send() {
            let hdr = self.sender.on_send(now);
            let mut p = udp_datagram(
                e.flow,
                hdr.seq,
                e.src,
                e.dst,
                e.payload_bytes,
                now,
                e.ttl,
                e.level,
            );
            p.header_bytes += TFRC_HEADER_BYTES;
            p.ecn = if self.sender.config().ecn {
                ECN_ECT0
            } else {
                ECN_NOT_ECT
            };
            p.transport = Header::TfrcData(hdr);
            out.packets.push(p);
        }
        self.arm(now, st, out);
    }

    /// A feedback report from the receiver to the sender.
    fn feedback(&mut self, now: SimTime, e: &Ends, fb: TfrcFeedback, out: &mut ConnOut) {
        self.feedbacks_sent += 1;
        let mut p = udp_datagram(e.flow, 0, e.dst, e.src, 0, now, e.ttl, e.level);
        p.header_bytes += TFRC_HEADER_BYTES;
        p.transport = Header::TfrcFeedback(fb);
        out.packets.push(p);
    }

    /// Asks for the timer events the deadlines need (one per timer at a time).
    fn arm(&mut self, now: SimTime, st: FlowState, out: &mut ConnOut) {
        if st.running {
            let at = self.sender.next_send().max(now);
            if self.send_pending.is_none_or(|p| p > at) {
                self.send_pending = Some(at);
                out.timers.push((at, TIMER_TFRC_SEND));
            }
            let at = self.sender.nofeedback_deadline().max(now);
            if self.nofeedback_pending.is_none_or(|p| p > at) {
                self.nofeedback_pending = Some(at);
                out.timers.push((at, TIMER_TFRC_NOFEEDBACK));
            }
        }
        if let Some(at) = self.receiver.feedback_due() {
            let at = at.max(now);
            if self.feedback_pending.is_none_or(|p| p > at) {
                self.feedback_pending = Some(at);
                out.timers.push((at, TIMER_TFRC_FEEDBACK));
            }
        }
    }
}

/// NACK bitmaps a CLAP connection keeps for its NACKs in flight (the newest ones; an older
/// NACK is ignored by the sender once a newer one arrived).
const CLAP_BITMAPS_KEPT: usize = 16;

/// A CLAP connection (`transport::clap`): the sender at the flow's source, the receiver at its
/// destination, the bitmaps of the NACKs in flight (their contents, which the packets do not
/// carry), and the times of its pending timer events.
#[derive(Debug)]
pub struct ClapConn {
    pub flow: u32,
    pub sender: ClapSender,
    pub receiver: ClapReceiver,
    bitmaps: VecDeque<(u32, Vec<u64>)>,
    spare: Vec<Vec<u64>>,
    send_pending: Option<SimTime>,
    probe_pending: Option<SimTime>,
    nack_pending: Option<SimTime>,
    tail_pending: Option<SimTime>,
    /// IP bytes of probes and probe replies sent.
    pub probe_bytes: u64,
    /// The first and last times a probe or reply was sent (the span its overhead is spread
    /// over).
    pub probe_span: Option<(SimTime, SimTime)>,
    /// IP bytes of NACKs sent.
    pub nack_bytes: u64,
}

impl ClapConn {
    pub fn new(flow: u32, cfg: ClapConfig) -> ClapConn {
        ClapConn {
            flow,
            sender: ClapSender::new(cfg),
            receiver: ClapReceiver::new(cfg),
            bitmaps: VecDeque::with_capacity(CLAP_BITMAPS_KEPT),
            spare: Vec::new(),
            send_pending: None,
            probe_pending: None,
            nack_pending: None,
            tail_pending: None,
            probe_bytes: 0,
            probe_span: None,
            nack_bytes: 0,
        }
    }

    /// A CLAP packet of the flow, from `from` to `to`.
    fn packet(now: SimTime, e: &Ends, from_source: bool, payload: u32, h: ClapHeader) -> Packet {
        let (src, dst) = if from_source {
            (e.src, e.dst)
        } else {
            (e.dst, e.src)
        };
        let mut p = udp_datagram(e.flow, 0, src, dst, payload, now, e.ttl, e.level);
        p.header_bytes += h.bytes();
        p.seq = match h {
            ClapHeader::Data(d) => d.seq as u64,
            _ => 0,
        };
        p.transport = Header::Clap(h);
        p
    }

    fn probe_sent(&mut self, now: SimTime) {
        self.probe_bytes += self.sender.config().probe_bytes as u64;
        self.probe_span = Some(match self.probe_span {
            None => (now, now),
            Some((a, _)) => (a, now),
        });
    }

    /// Sends what the sender and its probe timer have due, then arms the timers.
    fn pump(&mut self, now: SimTime, e: &Ends, st: FlowState, out: &mut ConnOut) {
        if st.emitting {
            let link = st.link.unwrap_or_default();
            if let Some((d, len)) = self.sender.poll_send(now, &link) {
                out.packets
                    .push(Self::packet(now, e, true, len, ClapHeader::Data(d)));
            }
            if let Some(probe) = self.sender.poll_probe(now) {
                let pad = self.sender.config().probe_bytes
                    - (IPV4_HEADER_BYTES + UDP_HEADER_BYTES + CLAP_HEADER_BYTES);
                out.packets
                    .push(Self::packet(now, e, true, pad, ClapHeader::Probe(probe)));
                self.probe_sent(now);
            }
        }
        self.arm(now, st, out);
    }

    /// A NACK from the receiver to the sender; its bitmap is kept under its id.
    fn nack(
        &mut self,
        now: SimTime,
        e: &Ends,
        n: ClapNack,
        bitmap: Option<Vec<u64>>,
        out: &mut ConnOut,
    ) {
        if let Some(b) = bitmap {
            if self.bitmaps.len() == CLAP_BITMAPS_KEPT {
                if let Some((_, old)) = self.bitmaps.pop_front() {
                    self.spare.push(old);
                }
            }
            self.bitmaps.push_back((n.id, b));
        }
        let p = Self::packet(now, e, false, 0, ClapHeader::Nack(n));
        self.nack_bytes += p.bytes() as u64;
        out.packets.push(p);
    }

    /// Asks for the timer events the deadlines need (one per timer at a time).
    fn arm(&mut self, now: SimTime, st: FlowState, out: &mut ConnOut) {
        let mut want = |pending: &mut Option<SimTime>, at: Option<SimTime>, code: u8| {
            if let Some(at) = at {
                let at = at.max(now);
                if pending.is_none_or(|p| p > at || p < now) {
                    *pending = Some(at);
                    out.timers.push((at, code));
                }
            }
        };
        if st.running {
            let s = &self.sender;
            want(
                &mut self.send_pending,
                s.has_data().then(|| s.next_send()),
                TIMER_CLAP_SEND,
            );
            want(
                &mut self.probe_pending,
                s.active().then(|| s.next_probe()),
                TIMER_CLAP_PROBE,
            );
            want(&mut self.tail_pending, s.tail_deadline(), TIMER_CLAP_TAIL);
        }
        want(
            &mut self.nack_pending,
            self.receiver.nack_due(),
            TIMER_CLAP_NACK,
        );
    }

    fn on_packet(
        &mut self,
        now: SimTime,
        e: &Ends,
        st: FlowState,
        p: &Packet,
        h: ClapHeader,
        out: &mut ConnOut,
    ) {
        match h {
            ClapHeader::Data(d) => {
                if let Some(n) = self
                    .receiver
                    .on_data(now, &d, p.payload_bytes, &mut out.delivered)
                {
                    self.nack(now, e, n, None, out);
                }
            }
            ClapHeader::Nack(n) => {
                let i = self.bitmaps.iter().position(|(id, _)| *id == n.id);
                let bitmap: &[u64] = match i {
                    Some(i) => &self.bitmaps[i].1,
                    None => &[],
                };
                self.sender.on_nack(&n, bitmap);
                // Bitmaps of this NACK and older ones are of no further use.
                while self.bitmaps.front().is_some_and(|(id, _)| *id <= n.id) {
                    let (_, b) = self.bitmaps.pop_front().expect("checked");
                    self.spare.push(b);
                }
            }
            ClapHeader::Probe(probe) => {
                let pad = self.sender.config().probe_bytes
                    - (IPV4_HEADER_BYTES + UDP_HEADER_BYTES + CLAP_HEADER_BYTES);
                out.packets.push(Self::packet(
                    now,
                    e,
                    false,
                    pad,
                    ClapHeader::ProbeReply(probe),
                ));
                self.probe_sent(now);
            }
            ClapHeader::ProbeReply(r) => self.sender.on_probe_reply(now, &r),
        }
        self.pump(now, e, st, out);
    }

    fn timer(&mut self, now: SimTime, code: u8, e: &Ends, st: FlowState, out: &mut ConnOut) {
        let clear = |pending: &mut Option<SimTime>| {
            if *pending == Some(now) {
                *pending = None;
            }
        };
        match code {
            TIMER_CLAP_SEND => clear(&mut self.send_pending),
            TIMER_CLAP_PROBE => clear(&mut self.probe_pending),
            TIMER_CLAP_TAIL => {
                clear(&mut self.tail_pending);
                if st.emitting {
                    self.sender.on_tail_timeout(now);
                }
            }
            TIMER_CLAP_NACK => {
                clear(&mut self.nack_pending);
                let mut b = self.spare.pop().unwrap_or_default();
                match self.receiver.on_nack_timer(now, st.running, &mut b) {
                    Some(n) => self.nack(now, e, n, Some(b), out),
                    None => self.spare.push(b),
                }
            }
            _ => {}
        }
        self.pump(now, e, st, out);
    }
}

/// A flow's transport connection.
#[derive(Debug)]
/// Each variant is boxed: connections differ in size by several times (TFRC's loss history),
/// and a flow's connection is built once.
pub enum Conn {
    Tcp(Box<TcpConn>),
    Tfrc(Box<TfrcConn>),
    Clap(Box<ClapConn>),
}

impl Conn {
    /// The flow this connection carries.
    pub fn flow(&self) -> u32 {
        match self {
            Conn::Tcp(c) => c.flow,
            Conn::Tfrc(c) => c.flow,
            Conn::Clap(c) => c.flow,
        }
    }

    /// Whether the connection's sender reads its MAC's status ([`FlowState::link`]) and
    /// registers for the MAC's underflow events ([`Conn::mac_underflow`]).
    pub fn reads_link_status(&self) -> bool {
        matches!(self, Conn::Clap(_))
    }

    /// The transport's name in the results (`flows.csv`'s `transport`).
    pub fn label(&self) -> &'static str {
        match self {
            Conn::Tcp(_) => "tcp",
            Conn::Tfrc(c) if c.sender.config().ecn => "tfrc-ecn",
            Conn::Tfrc(_) => "tfrc",
            Conn::Clap(_) => "clap",
        }
    }

    pub fn clap(&self) -> Option<&ClapConn> {
        match self {
            Conn::Clap(c) => Some(c),
            _ => None,
        }
    }

    pub fn tcp(&self) -> Option<&TcpConn> {
        match self {
            Conn::Tcp(c) => Some(c),
            _ => None,
        }
    }

    pub fn tcp_mut(&mut self) -> Option<&mut TcpConn> {
        match self {
            Conn::Tcp(c) => Some(c),
            _ => None,
        }
    }

    pub fn tfrc(&self) -> Option<&TfrcConn> {
        match self {
            Conn::Tfrc(c) => Some(c),
            _ => None,
        }
    }

    /// The flow starts: the sender opens.
    pub fn open(&mut self, now: SimTime, e: &Ends, st: FlowState, out: &mut ConnOut) {
        match self {
            Conn::Tcp(c) => {
                c.sender.open(now, &mut out.tcp);
                tcp_convert(now, e, true, out);
            }
            Conn::Tfrc(c) => {
                c.sender = TfrcSender::new(*c.sender.config(), now);
                c.send(now, e, st, out);
            }
            Conn::Clap(c) => c.pump(now, e, st, out),
        }
    }

    /// The flow stops (its stop time): a TCP or CLAP sender sends no new data.
    pub fn halt(&mut self) {
        match self {
            Conn::Tcp(c) => c.sender.halt(),
            Conn::Clap(c) => c.sender.halt(),
            Conn::Tfrc(_) => {}
        }
    }

    /// The source's MAC ran its interface queues empty (`mac.underflow`), for a connection
    /// that registered for it ([`Conn::reads_link_status`]).
    pub fn mac_underflow(&mut self, now: SimTime, e: &Ends, st: FlowState, out: &mut ConnOut) {
        if let Conn::Clap(c) = self {
            c.sender.on_underflow();
            c.pump(now, e, st, out);
        }
    }

    /// Packet `p` of the flow arrived at its destination node (`p.dst`). Returns true if its
    /// payload counts as the application's at the sink (datagram transports), false if the
    /// connection accounts for what it delivers itself (through [`ConnOut::delivered`]) or the
    /// packet carries no application data.
    pub fn on_packet(
        &mut self,
        now: SimTime,
        e: &Ends,
        st: FlowState,
        p: &Packet,
        out: &mut ConnOut,
    ) -> bool {
        match (self, p.transport) {
            (Conn::Tcp(c), Header::Tcp(h)) => {
                let at_receiver = p.dst == e.dst;
                if at_receiver {
                    c.receiver.on_segment(now, &h, &mut out.tcp);
                } else {
                    c.sender.on_ack(now, &h, &mut out.tcp);
                }
                tcp_convert(now, e, !at_receiver, out);
                false
            }
            (Conn::Tfrc(c), Header::TfrcFeedback(fb)) => {
                c.sender.on_feedback(now, &fb);
                c.send(now, e, st, out);
                false
            }
            (Conn::Tfrc(c), Header::TfrcData(hdr)) => {
                if let Some(fb) = c
                    .receiver
                    .on_data(now, &hdr, p.payload_bytes, p.ecn == ECN_CE)
                {
                    c.feedback(now, e, fb, out);
                }
                c.arm(now, st, out);
                true
            }
            (Conn::Clap(c), Header::Clap(h)) => {
                c.on_packet(now, e, st, p, h, out);
                false
            }
            // A header of another transport: not this connection's.
            _ => false,
        }
    }

    /// Timer `code` fired. `pace_bps`: a rate for a paced TCP sender to take first (DiffQ-TCP's
    /// sources follow their own queue).
    pub fn timer(
        &mut self,
        now: SimTime,
        code: u8,
        e: &Ends,
        st: FlowState,
        pace_bps: Option<f64>,
        out: &mut ConnOut,
    ) {
        match self {
            Conn::Tcp(c) => match code {
                TIMER_TCP_RTO | TIMER_TCP_PACE => {
                    if let (TIMER_TCP_PACE, Some(rate)) = (code, pace_bps) {
                        c.sender.set_pace_rate_quiet(rate);
                    }
                    let k = if code == TIMER_TCP_RTO {
                        TcpTimer::Rto
                    } else {
                        TcpTimer::Pace
                    };
                    c.sender.on_timer(now, k, &mut out.tcp);
                    tcp_convert(now, e, true, out);
                }
                TIMER_TCP_DELACK => {
                    c.receiver.on_timer(now, &mut out.tcp);
                    tcp_convert(now, e, false, out);
                }
                _ => {}
            },
            Conn::Tfrc(c) => match code {
                TIMER_TFRC_SEND => {
                    if c.send_pending == Some(now) {
                        c.send_pending = None;
                    }
                    c.send(now, e, st, out);
                }
                TIMER_TFRC_NOFEEDBACK => {
                    if c.nofeedback_pending == Some(now) {
                        c.nofeedback_pending = None;
                    }
                    if now >= c.sender.nofeedback_deadline() && st.emitting {
                        c.sender.on_nofeedback(now);
                    }
                    c.arm(now, st, out);
                }
                TIMER_TFRC_FEEDBACK => {
                    if c.feedback_pending == Some(now) {
                        c.feedback_pending = None;
                    }
                    if c.receiver.feedback_due().is_some_and(|d| now >= d) {
                        if let Some(fb) = c.receiver.on_feedback_timer(now) {
                            c.feedback(now, e, fb, out);
                        }
                    }
                    c.arm(now, st, out);
                }
                _ => {}
            },
            Conn::Clap(c) => c.timer(now, code, e, st, out),
        }
    }

    /// The application at the source writes `bytes` more (TCP in app-limited mode).
    pub fn write(&mut self, now: SimTime, bytes: u64, e: &Ends, out: &mut ConnOut) {
        if let Conn::Tcp(c) = self {
            c.sender.write(now, bytes, &mut out.tcp);
            tcp_convert(now, e, true, out);
        }
    }

    /// Bytes the source's application wrote, and the destination's application got in order
    /// (TCP; zeros for others).
    pub fn stream_bytes(&self) -> (u64, u64) {
        match self {
            Conn::Tcp(c) => (c.sender.written_bytes(), c.receiver.delivered_bytes),
            Conn::Clap(c) => (0, c.receiver.delivered_bytes),
            _ => (0, 0),
        }
    }

    /// Sets a paced TCP sender's rate (the tuning layer's `tcp.pace_rate`).
    pub fn set_pace_rate(&mut self, now: SimTime, rate_bps: f64, e: &Ends, out: &mut ConnOut) {
        if let Conn::Tcp(c) = self {
            c.sender.set_pace_rate(now, rate_bps, &mut out.tcp);
            tcp_convert(now, e, true, out);
        }
    }
}

/// Turns what a TCP endpoint produced into the connection's output: segments become packets
/// (`from_sender`: from the flow's source to its destination, else back), timers get their
/// codes.
fn tcp_convert(now: SimTime, e: &Ends, from_sender: bool, out: &mut ConnOut) {
    let (src, dst) = if from_sender {
        (e.src, e.dst)
    } else {
        (e.dst, e.src)
    };
    let tcp = &mut out.tcp;
    for h in &tcp.segments {
        out.packets.push(Packet {
            flow: e.flow,
            seq: h.seq,
            src,
            dst,
            payload_bytes: h.len,
            header_bytes: IPV4_HEADER_BYTES + TCP_HEADER_BYTES + h.option_bytes(),
            created: now,
            ttl: e.ttl,
            level: e.level,
            ecn: ECN_NOT_ECT,
            transport: Header::Tcp(*h),
            control: Control::None,
            queue_len: 0,
        });
    }
    for &(kind, at) in &tcp.timers {
        let code = match kind {
            TcpTimer::Rto => TIMER_TCP_RTO,
            TcpTimer::Pace => TIMER_TCP_PACE,
            TcpTimer::DelAck => TIMER_TCP_DELACK,
        };
        out.timers.push((at, code));
    }
    out.delivered
        .extend(tcp.delivered.iter().map(|&(_, len, _)| len));
    out.notices.extend_from_slice(&tcp.notices);
    tcp.clear();
}
