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

use super::tcp::{TcpNotice, TcpOut, TcpReceiver, TcpSender, TcpTimer, TCP_HEADER_BYTES};
use super::tfrc::{TfrcConfig, TfrcFeedback, TfrcReceiver, TfrcSender};
use super::{udp_datagram, Header, ECN_CE, ECN_ECT0, ECN_NOT_ECT};
use crate::sim::SimTime;
use crate::wire::packet::{Control, Packet, IPV4_HEADER_BYTES};

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

/// A flow's transport connection.
#[derive(Debug)]
/// Each variant is boxed: connections differ in size by several times (TFRC's loss history),
/// and a flow's connection is built once.
pub enum Conn {
    Tcp(Box<TcpConn>),
    Tfrc(Box<TfrcConn>),
}

impl Conn {
    /// The flow this connection carries.
    pub fn flow(&self) -> u32 {
        match self {
            Conn::Tcp(c) => c.flow,
            Conn::Tfrc(c) => c.flow,
        }
    }

    /// The transport's name in the results (`flows.csv`'s `transport`).
    pub fn label(&self) -> &'static str {
        match self {
            Conn::Tcp(_) => "tcp",
            Conn::Tfrc(c) if c.sender.config().ecn => "tfrc-ecn",
            Conn::Tfrc(_) => "tfrc",
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
        }
    }

    /// The flow stops (its stop time): a TCP sender sends no new data.
    pub fn halt(&mut self) {
        if let Conn::Tcp(c) = self {
            c.sender.halt();
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
