//! Transport glue of [`World`]: a flow's connection (`crate::transport::conn::Conn`: TCP's
//! family, TFRC) is a component that asks for packets, timers and deliveries through a
//! [`ConnOut`]; this file calls its hooks with the flow's ends and state, and carries out what
//! it asks for — packets to the network, timers as `Event::TransportTimer` (lazily cancelled
//! deadlines), delivered bytes and notices into the flow's statistics, tuning events and the
//! TCP trace. A transport that reads its MAC (CLAP) pulls the source's status through the MAC
//! tuning layer's declarations and is called on the MAC underflow events it registers for; a
//! CLAP probe is stamped at each relay with the relay's MAC sending rate, read the same way.

use super::*;
use crate::transport::clap::LinkStatus;
use crate::transport::conn::{is_pace_timer, Ends, FlowState};
use crate::tune::ParamSpec;
use crate::wire::clap::ClapHeader;

/// How long a relay counts a flow among those it relays after its last packet (1 s: ten of
/// CLAP's default probe intervals; xlayer's choice).
const RELAY_SHARE_WINDOW: SimTime = SimTime(1_000_000_000);

/// The MAC tuning layer's parameters CLAP pulls (`tune::split` of their names, once).
#[derive(Debug, Clone, Copy)]
pub struct LinkParams {
    send_rate: &'static ParamSpec,
    queue_len: &'static ParamSpec,
    queue_capacity: &'static ParamSpec,
    data_rate: &'static ParamSpec,
}

impl LinkParams {
    fn new() -> LinkParams {
        let spec = |name: &str| {
            crate::tune::split(name)
                .unwrap_or_else(|e| panic!("{name} is declared by the MAC tuning layer: {e}"))
                .0
        };
        LinkParams {
            send_rate: spec("mac.send_rate_bps"),
            queue_len: spec("mac.queue_len.0"),
            queue_capacity: spec("net.queue_capacity"),
            data_rate: spec("phy.data_rate_mbps"),
        }
    }
}

/// A node's passive flavor detection (`transport::flavor`) over the TCP flows it forwards, keyed
/// by flow, with the error of its window estimate against each sender's true window.
#[derive(Debug, Default)]
pub struct FlavorMonitor {
    pub detector: crate::transport::flavor::Detector,
    /// Per flow: the sum of |estimate − cwnd| / cwnd and the samples, at each new data segment.
    pub window_error: Vec<(f64, u64)>,
}

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

impl World {
    /// The ends of connection `c`'s flow and where its application stands now.
    fn conn_flow(&mut self, c: u32) -> (Ends, FlowState) {
        let now = self.now();
        let f = &self.flows[self.conns[c as usize].flow() as usize];
        let ends = Ends {
            flow: f.id,
            src: f.src,
            dst: f.dst,
            payload_bytes: f.payload_bytes,
            level: f.level,
            ttl: self.ttl,
        };
        let (emitting, running, level) = (f.emitting(now), f.active && now < f.stop, f.level);
        let link = if self.conns[c as usize].reads_link_status() {
            Some(self.link_status(ends.src, level))
        } else {
            None
        };
        let state = FlowState {
            emitting,
            running,
            link,
        };
        (ends, state)
    }

    /// Registers the connections that read their MAC (CLAP) for the underflow events of their
    /// source's MAC. Called once the connections are built.
    pub(crate) fn register_link_readers(&mut self) {
        for (c, conn) in self.conns.iter().enumerate() {
            if conn.reads_link_status() {
                let src = self.flows[conn.flow() as usize].src;
                self.underflow_listeners[src as usize].push(c as u32);
                self.link_params.get_or_insert_with(LinkParams::new);
                self.relayed_flows = vec![Vec::new(); self.nodes.len()];
            }
        }
    }

    /// Reads a MAC parameter of `node` through its tuning layer; `None` if the layer refuses
    /// (it failed and was unloaded), so the transport falls back as if it had no sample.
    fn pull(&mut self, node: u32, spec: &'static ParamSpec, index: Option<usize>) -> Option<f64> {
        crate::tune::get_spec(self, node, spec, index, spec.name).ok()
    }

    /// The MAC status of `node` at the flow's priority `level`, pulled through the MAC tuning
    /// layer (`mac.send_rate_bps`, `mac.queue_len.<level>`, `net.queue_capacity`,
    /// `phy.data_rate_mbps`).
    fn link_status(&mut self, node: u32, level: u8) -> LinkStatus {
        let Some(lp) = self.link_params else {
            return LinkStatus::default();
        };
        let level = (level as usize).min(self.nodes[node as usize].mac.level_count() - 1);
        LinkStatus {
            send_rate_bps: self.pull(node, lp.send_rate, None).unwrap_or(0.0),
            queue_len: self.pull(node, lp.queue_len, Some(level)).unwrap_or(0.0) as u32,
            queue_capacity: self.pull(node, lp.queue_capacity, None).unwrap_or(0.0) as u32,
            data_rate_bps: self.pull(node, lp.data_rate, None).unwrap_or(0.0) * 1e6,
        }
    }

    /// Relay `node` forwards packet `h`: a TCP segment goes to its flavor detector, a decision
    /// is published as `transport.flavor` (at the node, for the flow).
    pub(super) fn flavor_observe(&mut self, node: u32, h: u32) {
        use crate::transport::flavor::Segment;
        use crate::wire::tcp::{ACK, FIN, SACK_PERMITTED, SYN};
        let p = *self.packets.get(h);
        let Header::Tcp(t) = p.transport else {
            return;
        };
        let now = self.now();
        let f = &self.flows[p.flow as usize];
        let from_sender = p.src == f.src;
        let seg = Segment {
            time: now,
            from_sender,
            seq: t.seq,
            ack: t.ack,
            len: t.len,
            syn: t.has(SYN),
            fin: t.has(FIN),
            ack_flag: t.has(ACK),
            sack_permitted: t.has(SACK_PERMITTED),
            sack_blocks: t.nsack,
            mss: t.mss,
        };
        let truth = f
            .transport
            .conn()
            .and_then(|c| self.conns[c as usize].tcp())
            .map(|c| c.sender.cwnd());
        let m = self.nodes[node as usize]
            .flavor
            .as_mut()
            .expect("called for a node with a flavor monitor");
        let changed = m.detector.observe(p.flow as u64, &seg);
        if from_sender && t.len > 0 {
            if let (Some(cwnd), Some((at, est))) = (truth, m.detector.last_window(p.flow as u64)) {
                if at == now && cwnd > 0.0 {
                    let i = p.flow as usize;
                    if m.window_error.len() <= i {
                        m.window_error.resize(i + 1, (0.0, 0));
                    }
                    m.window_error[i].0 += (est - cwnd).abs() / cwnd;
                    m.window_error[i].1 += 1;
                }
            }
        }
        if let (Some(d), true) = (changed, self.events.wants(TuneEventKind::TcpFlavor)) {
            let code = d.flavor.event_code(d.sack);
            self.events
                .publish_flow(now, node, p.flow, TuneEventKind::TcpFlavor, code);
        }
    }

    /// `node`'s MAC ran its queues empty: the connections registered there are called.
    pub(super) fn conn_underflow(&mut self, node: u32) {
        let now = self.now();
        for i in 0..self.underflow_listeners[node as usize].len() {
            let c = self.underflow_listeners[node as usize][i];
            let (e, st) = self.conn_flow(c);
            self.conns[c as usize].mac_underflow(now, &e, st, &mut self.conn_out);
            self.conn_flush(c, None);
        }
    }

    /// Relay `node` forwards packet `h` (kept only while a CLAP flow runs): a data packet's
    /// flow is noted as relayed now; a CLAP probe takes `min(PPrate, Nrate)`.
    pub(super) fn note_relayed(&mut self, node: u32, h: u32) {
        let now = self.now();
        let p = *self.packets.get(h);
        if p.control.is_control() {
            return;
        }
        let relayed = &mut self.relayed_flows[node as usize];
        match relayed.iter_mut().find(|(f, _)| *f == p.flow) {
            Some(e) => e.1 = now,
            None => relayed.push((p.flow, now)),
        }
        if p.transport.stamped_by_relays() {
            self.relay_stamp(node, h);
        }
    }

    /// Stamps CLAP probe `h` at relay `node` with `min(PPrate, Nrate)`. The slides define
    /// `Nrate` as the node's rate and say no more; xlayer reads it as the rate at which the
    /// relay can take more of this flow: its MAC sending rate (pulled through its tuning layer)
    /// shared equally among the flows it relayed within the last [`RELAY_SHARE_WINDOW`], and
    /// scaled down linearly from 1 with an empty interface queue to 1/2 with a full one (the
    /// same range as the source's own queue brake, `transport::clap::BOOST_MIN`). Without the
    /// queue term the sources' rates add up to exactly what the relay sends, a critically
    /// loaded queue that fills and drops (measured: a third of the data and of the probes lost
    /// at the relay of `scenarios/clap-multihop.toml`). A MAC without a sample yet leaves the
    /// probe as it is.
    fn relay_stamp(&mut self, node: u32, h: u32) {
        let Some(lp) = self.link_params else {
            return;
        };
        let now = self.now();
        let level = self.packets.get(h).level;
        let link = self.link_status(node, level);
        let relayed = &mut self.relayed_flows[node as usize];
        relayed.retain(|&(_, t)| t + RELAY_SHARE_WINDOW >= now);
        let share = relayed.len().max(1) as f64;
        let brake = if link.queue_capacity > 0 {
            1.0 - 0.5 * (link.queue_len as f64 / link.queue_capacity as f64).min(1.0)
        } else {
            1.0
        };
        let _ = lp;
        if let Header::Clap(ClapHeader::Probe(pr)) = &mut self.packets.get_mut(h).transport {
            if link.send_rate_bps > 0.0 {
                pr.rate_bps = pr.rate_bps.min(link.send_rate_bps / share * brake);
            }
        }
    }

    /// The flow of connection `c` starts.
    pub(super) fn conn_open(&mut self, c: u32) {
        let now = self.now();
        let (e, st) = self.conn_flow(c);
        self.conns[c as usize].open(now, &e, st, &mut self.conn_out);
        self.conn_flush(c, None);
    }

    /// A transport timer fired (`Event::TransportTimer`).
    pub(super) fn transport_timer(&mut self, now: SimTime, c: u32, code: u8) {
        let (e, st) = self.conn_flow(c);
        let pace = if is_pace_timer(code) && self.sources.reads_own_queue() {
            // A paced sender's rate may follow its source's own queue (DiffQ-TCP).
            let own = self.nodes[e.src as usize].queueing.queues().len(e.dst);
            self.sources.pace_rate(e.flow, own)
        } else {
            None
        };
        self.conns[c as usize].timer(now, code, &e, st, pace, &mut self.conn_out);
        self.conn_flush(c, None);
    }

    /// Packet `p` of connection `c`'s flow reached its destination node. Returns true if its
    /// payload counts at the sink as the application's (datagram transports).
    pub(super) fn conn_packet(&mut self, c: u32, p: &Packet) -> bool {
        let now = self.now();
        let (e, st) = self.conn_flow(c);
        let counts = self.conns[c as usize].on_packet(now, &e, st, p, &mut self.conn_out);
        self.conn_flush(c, Some(p.created));
        counts
    }

    /// A request of flow `flow`'s application (web page, e-mail): the server writes its
    /// objects into the connection, and the next request is scheduled.
    pub(super) fn app_request(&mut self, flow: u32) {
        let now = self.now();
        let f = &self.flows[flow as usize];
        let (Some(c), true) = (f.transport.conn(), f.emitting(now)) else {
            return;
        };
        let (written, _) = self.conns[c as usize].stream_bytes();
        let mut sizes = std::mem::take(&mut self.app_scratch);
        let app = self.flows[flow as usize]
            .app
            .as_mut()
            .expect("an app request belongs to a flow with an app");
        app.request(now, written, &mut sizes);
        let next = now + app.next_delay();
        let (e, _) = self.conn_flow(c);
        for &s in &sizes {
            self.conns[c as usize].write(now, s, &e, &mut self.conn_out);
            self.conn_flush(c, None);
        }
        self.app_scratch = sizes;
        if next < self.flows[flow as usize].stop {
            self.queue.schedule(next, Event::AppSend { flow });
        }
    }

    /// Sets the sending rate of paced TCP connection `c` (the tuning layer's `tcp.pace_rate`).
    pub(crate) fn set_pace_rate(&mut self, c: usize, rate_bps: f64) {
        let now = self.now();
        let (e, _) = self.conn_flow(c as u32);
        self.conns[c].set_pace_rate(now, rate_bps, &e, &mut self.conn_out);
        self.conn_flush(c as u32, None);
    }

    /// Carries out what connection `c` asked for: sends its packets (a packet with payload
    /// from the flow's source counts as sent within the measured window), arms its timers,
    /// credits delivered bytes to the flow, and publishes its notices. `arrival` is the
    /// creation time of the packet whose arrival caused the call (its network delay is recorded
    /// when the arrival delivered data).
    fn conn_flush(&mut self, c: u32, arrival: Option<SimTime>) {
        let mut out = std::mem::take(&mut self.conn_out);
        let now = self.now();
        let flow = self.conns[c as usize].flow();
        let f = &self.flows[flow as usize];
        let flow_src = f.src;
        let (a, b) = crate::metrics::window(f.start, f.stop, self.warmup, self.end);
        let in_window = now >= a && now < b;
        for p in &out.packets {
            if p.src == flow_src && p.payload_bytes > 0 && in_window {
                self.flow_stats[flow as usize].sent += 1;
            }
            self.nodes[p.src as usize].net.originated += 1;
            let h = self.packets.alloc(*p);
            self.net_send(p.src, h);
        }
        for &(at, kind) in &out.timers {
            self.queue
                .schedule(at, Event::TransportTimer { conn: c, kind });
        }
        if !out.delivered.is_empty() {
            if let Some(app) = self.flows[flow as usize].app.as_mut() {
                let (_, delivered) = self.conns[c as usize].stream_bytes();
                app.delivered(now, delivered);
            }
            let st = &mut self.flow_stats[flow as usize];
            for &len in &out.delivered {
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
        if let (false, Some(conn)) = (out.notices.is_empty(), self.conns[c as usize].tcp()) {
            // Notices come from the sender, at the flow's source.
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
                    self.events.publish_flow(now, flow_src, flow, kind, value);
                }
                if label == "loss_timeout" && self.events.wants(TuneEventKind::TcpRto) {
                    self.events
                        .publish_flow(now, flow_src, flow, TuneEventKind::TcpRto, s.rto());
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
        self.conn_out = out;
    }
}
