//! Transport glue of [`World`]: a flow's connection (`crate::transport::conn::Conn`: TCP's
//! family, TFRC) is a component that asks for packets, timers and deliveries through a
//! [`ConnOut`]; this file calls its hooks with the flow's ends and state, and carries out what
//! it asks for — packets to the network, timers as `Event::TransportTimer` (lazily cancelled
//! deadlines), delivered bytes and notices into the flow's statistics, tuning events and the
//! TCP trace.

use super::*;
use crate::transport::conn::{is_pace_timer, Ends, FlowState};

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
    fn conn_flow(&self, c: u32) -> (Ends, FlowState) {
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
        let state = FlowState {
            emitting: f.emitting(now),
            running: f.active && now < f.stop,
        };
        (ends, state)
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
