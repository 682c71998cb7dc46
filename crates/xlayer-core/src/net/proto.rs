//! Per-node state of the network-layer control protocols (ETX probing, and the routing
//! protocols built on it), and the glue that turns their timers and received control packets
//! into state changes. The node assembly (`crate::world`) owns one [`NetProto`] when a scenario
//! asks for any of them, sends the control packets it asks for through the MAC as broadcast
//! frames, and hands back the ones that arrive.
//!
//! Depends on `sim` and the protocol state machines beside it. Control packets are real frames:
//! they take airtime and are lost like data. Their contents stay in the sender's state here,
//! published under the handle the packet carries ([`crate::net::Control`]); a receiver reads the
//! sender's published contents if the handle is still its latest (a probe carries entries
//! published at most one probe period ago; a packet that waited longer in a queue is read
//! for its sequence number only).

use rand::Rng;

use super::action::Action;
use super::dsdv::{
    Dsdv, DsdvParams, Entry, ENTRIES_PER_PACKET, ENTRY_BYTES, PROBE_SEQ_BYTES, UPDATE_BASE_BYTES,
};
use super::etx::{Etx, EtxParams, PROBE_BASE_BYTES, PROBE_ENTRY_BYTES, STREAM as ETX_STREAM};
use super::olsr::{Olsr, OlsrParams, TC_BASE_BYTES, TC_ENTRY_BYTES};
use super::routing::UNREACHABLE;
use crate::sim::event::NetTimerKind;
use crate::sim::rng::{stream, Stream};
use crate::sim::SimTime;
use crate::wire::packet::Control;

/// One node's protocol state.
#[derive(Debug)]
pub struct NodeProto {
    pub etx: Etx,
    rng_probe: Stream,
    /// The latest probe sent: its sequence number and entries (neighbour, probes heard), by id.
    probe_seq: u32,
    probe_entries: Vec<(u32, u32)>,
    /// The DSDV sequence number the latest probe carries (when DSDV runs).
    probe_dsdv_seq: u32,
    pub dsdv: Option<Dsdv>,
    rng_dsdv: Stream,
    /// The latest DSDV update sent: its handle and entries.
    dsdv_id: u32,
    dsdv_entries: Vec<Entry>,
    /// When a triggered-update timer is pending.
    pub dsdv_trigger_timer: Option<SimTime>,
    pub olsr: Option<Olsr>,
    rng_olsr: Stream,
    /// Published with each HELLO (probe): our usable neighbours and our MPR set.
    hello_links: Vec<u32>,
    hello_mprs: Vec<u32>,
    /// Our latest TC: its ANSN and advertised links.
    tc_ansn: u32,
    tc_links: Vec<(u32, f64)>,
    /// TCs waiting for their relay jitter: (origin, ANSN, due).
    relays: Vec<(u32, u32, SimTime)>,
    pub relay_timer: Option<SimTime>,
}

/// Random stream of each node's OLSR jitter (TC period, relays).
pub const OLSR_STREAM: &str = "net.olsr.jitter";

/// Random stream of each node's DSDV update jitter.
pub const DSDV_STREAM: &str = "net.dsdv.update";

/// A routing update to send: its handle, and the network-layer size of each of its packets.
#[derive(Debug, Clone, Copy)]
pub struct UpdateOut {
    pub id: u32,
    pub parts: u32,
    pub entries: u32,
}

impl UpdateOut {
    /// Asks for the update's packets to be broadcast from `node`.
    fn send(&self, node: u32, out: &mut Vec<Action>) {
        for part in 0..self.parts {
            out.push(Action::SendControl {
                node,
                seq: self.id as u64,
                bytes: self.bytes(part),
                control: Control::DsdvUpdate { id: self.id, part },
            });
        }
    }

    /// Bytes of packet `part`.
    pub fn bytes(&self, part: u32) -> u32 {
        let per = ENTRIES_PER_PACKET as u32;
        let n = (self.entries - part * per).min(per);
        UPDATE_BASE_BYTES + ENTRY_BYTES * n
    }
}

/// What a probe instant asks the node to do.
#[derive(Debug, Clone, Copy)]
pub struct ProbeOut {
    pub seq: u32,
    /// Network-layer size of the probe packet.
    pub bytes: u32,
    /// When the next probe is due, from now.
    pub next_in: SimTime,
    /// The set of usable neighbours changed.
    pub changed: bool,
}

#[derive(Debug)]
pub struct NetProto {
    pub nodes: Vec<NodeProto>,
    scratch_ids: Vec<u32>,
    scratch_mprs: Vec<u32>,
    scratch_links: Vec<(u32, f64)>,
    scratch_relays: Vec<(u32, u32, u32)>,
}

impl NetProto {
    /// The next hop from `node` towards `dst`: DSDV's or OLSR's table when the node runs one,
    /// else `routes`.
    #[inline]
    pub fn next_hop(&self, routes: &super::StaticRoutes, node: u32, dst: u32) -> u32 {
        match &self.nodes[node as usize] {
            NodeProto { dsdv: Some(d), .. } => d.next_hop(dst).unwrap_or(UNREACHABLE),
            NodeProto { olsr: Some(o), .. } => o.next_hop(dst).unwrap_or(UNREACHABLE),
            _ => routes.next_hop(node, dst),
        }
    }

    /// A timer of `node`'s protocols fired: probes, periodic and triggered DSDV updates, OLSR
    /// TCs and their relays. What the node must send and the timers it needs go to `out`.
    pub fn timer(&mut self, node: u32, kind: NetTimerKind, now: SimTime, out: &mut Vec<Action>) {
        let timer = |at: SimTime, kind| Action::Timer { node, at, kind };
        match kind {
            NetTimerKind::EtxProbe => {
                let p = self.probe(node, now);
                out.push(timer(now + p.next_in, NetTimerKind::EtxProbe));
                out.push(Action::SendControl {
                    node,
                    seq: p.seq as u64,
                    bytes: p.bytes,
                    control: Control::EtxProbe { seq: p.seq },
                });
                self.arm_dsdv_trigger(node, now, out);
                self.routes_updated(node, out);
            }
            NetTimerKind::DsdvPeriodic => {
                let next = self.dsdv_next_periodic(node, false);
                let update = self.dsdv_periodic(node, now);
                out.push(timer(now + next, NetTimerKind::DsdvPeriodic));
                if let Some(u) = update {
                    u.send(node, out);
                }
            }
            NetTimerKind::OlsrTc => {
                let next = self.olsr_next_tc(node, false);
                let tc = self.olsr_make_tc(node);
                out.push(timer(now + next, NetTimerKind::OlsrTc));
                if let Some((ansn, bytes)) = tc {
                    out.push(Action::SendControl {
                        node,
                        seq: ansn as u64,
                        bytes,
                        control: Control::OlsrTc { origin: node, ansn },
                    });
                }
            }
            NetTimerKind::OlsrRelay => {
                let mut due = std::mem::take(&mut self.scratch_relays);
                let next = self.olsr_due_relays(node, now, &mut due);
                for &(origin, ansn, bytes) in &due {
                    out.push(Action::Relay {
                        node,
                        seq: ansn as u64,
                        bytes,
                        control: Control::OlsrTc { origin, ansn },
                    });
                }
                self.scratch_relays = due;
                if let Some(at) = next.filter(|&t| t > now) {
                    out.push(timer(at, NetTimerKind::OlsrRelay));
                }
            }
            NetTimerKind::DsdvTrigger => {
                self.nodes[node as usize].dsdv_trigger_timer = None;
                if let Some(u) = self.dsdv_triggered(node, now) {
                    u.send(node, out);
                }
                self.arm_dsdv_trigger(node, now, out);
            }
            // Timers of the cross-layer components, not of routing.
            NetTimerKind::FusionRetry
            | NetTimerKind::DcloPrice
            | NetTimerKind::DcloMatch
            | NetTimerKind::DcloRetry => {}
        }
    }

    /// A control packet of the routing protocols from `from` arrived at `node`.
    pub fn control_received(
        &mut self,
        node: u32,
        from: u32,
        control: Control,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        match control {
            Control::EtxProbe { seq } => {
                if self.on_probe(node, from, seq, now) {
                    self.arm_dsdv_trigger(node, now, out);
                    self.routes_updated(node, out);
                }
            }
            Control::OlsrTc { origin, ansn } => {
                if let Some(at) = self.on_olsr_tc(node, from, origin, ansn, now) {
                    out.push(Action::Timer {
                        node,
                        at,
                        kind: NetTimerKind::OlsrRelay,
                    });
                }
            }
            Control::DsdvUpdate { id, part } => {
                self.on_dsdv(node, from, id, part, now);
                self.arm_dsdv_trigger(node, now, out);
                self.routes_updated(node, out);
            }
            // Other components' control packets, and data.
            Control::DcloPrice { .. }
            | Control::DcloMatch { .. }
            | Control::MoreAck { .. }
            | Control::None => {}
        }
    }

    /// Asks for a triggered-update timer of `node` if DSDV has a change waiting.
    fn arm_dsdv_trigger(&mut self, node: u32, now: SimTime, out: &mut Vec<Action>) {
        if let Some(at) = self.dsdv_trigger_needed(node) {
            out.push(Action::Timer {
                node,
                at: at.max(now),
                kind: NetTimerKind::DsdvTrigger,
            });
        }
    }

    /// Reports how many of `node`'s routes changed since last asked.
    fn routes_updated(&mut self, node: u32, out: &mut Vec<Action>) {
        let st = &mut self.nodes[node as usize];
        let changes = st
            .dsdv
            .as_mut()
            .map(|d| d.take_route_changes())
            .unwrap_or(0)
            + st.olsr
                .as_mut()
                .map(|o| o.take_route_changes())
                .unwrap_or(0);
        out.push(Action::RoutesUpdated { node, changes });
    }

    pub fn new(n: usize, seed: u64, etx: EtxParams) -> NetProto {
        NetProto {
            nodes: (0..n as u32)
                .map(|i| NodeProto {
                    etx: Etx::new(etx),
                    rng_probe: stream(seed, i, ETX_STREAM),
                    probe_seq: 0,
                    probe_entries: Vec::new(),
                    probe_dsdv_seq: 0,
                    dsdv: None,
                    rng_dsdv: stream(seed, i, DSDV_STREAM),
                    dsdv_id: 0,
                    dsdv_entries: Vec::new(),
                    dsdv_trigger_timer: None,
                    olsr: None,
                    rng_olsr: stream(seed, i, OLSR_STREAM),
                    hello_links: Vec::new(),
                    hello_mprs: Vec::new(),
                    tc_ansn: 0,
                    tc_links: Vec::new(),
                    relays: Vec::new(),
                    relay_timer: None,
                })
                .collect(),
            scratch_ids: Vec::new(),
            scratch_mprs: Vec::new(),
            scratch_links: Vec::new(),
            scratch_relays: Vec::new(),
        }
    }

    /// Runs the OLSR-like protocol on every node.
    pub fn enable_olsr(&mut self, params: OlsrParams) {
        let n = self.nodes.len();
        for (i, st) in self.nodes.iter_mut().enumerate() {
            st.olsr = Some(Olsr::new(i as u32, n, params));
        }
    }

    /// Delay until `node`'s next TC (first: uniform over an interval; then the interval less a
    /// jitter of up to `max_jitter`, RFC 3626 §18.3).
    pub fn olsr_next_tc(&mut self, node: u32, first: bool) -> SimTime {
        let st = &mut self.nodes[node as usize];
        let Some(o) = st.olsr.as_ref() else {
            return SimTime::MAX;
        };
        let p = o.params.tc_interval.ns();
        let j = o.params.max_jitter.ns().min(p / 2).max(1);
        SimTime(if first {
            st.rng_olsr.gen_range(0..p)
        } else {
            p - st.rng_olsr.gen_range(0..j)
        })
    }

    /// `node` originates a TC: returns its ANSN and size, if it has links to advertise.
    pub fn olsr_make_tc(&mut self, node: u32) -> Option<(u32, u32)> {
        let st = &mut self.nodes[node as usize];
        let o = st.olsr.as_mut()?;
        let ansn = o.make_tc(&st.etx, &mut st.tc_links);
        st.tc_ansn = ansn;
        if st.tc_links.is_empty() {
            return None;
        }
        Some((
            ansn,
            TC_BASE_BYTES + TC_ENTRY_BYTES * st.tc_links.len() as u32,
        ))
    }

    /// `node` received TC `ansn` of `origin` from `from`. Returns when a relay timer is needed.
    pub fn on_olsr_tc(
        &mut self,
        node: u32,
        from: u32,
        origin: u32,
        ansn: u32,
        now: SimTime,
    ) -> Option<SimTime> {
        let o = &self.nodes[origin as usize];
        if o.tc_ansn != ansn {
            return None; // superseded while it travelled: its contents are gone
        }
        self.scratch_links.clear();
        self.scratch_links.extend_from_slice(&o.tc_links);
        let st = &mut self.nodes[node as usize];
        let olsr = st.olsr.as_mut()?;
        if !olsr.on_tc(now, origin, ansn, from, &self.scratch_links) {
            return None;
        }
        let jitter = olsr.params.max_jitter.ns().max(1);
        let due = now + SimTime(st.rng_olsr.gen_range(0..jitter));
        st.relays.push((origin, ansn, due));
        if st.relay_timer.is_some_and(|t| t <= due) {
            return None;
        }
        st.relay_timer = Some(due);
        Some(due)
    }

    /// TCs `node` relays now: (origin, ANSN, size), written to `out`; returns when the next
    /// relay is due.
    pub fn olsr_due_relays(
        &mut self,
        node: u32,
        now: SimTime,
        out: &mut Vec<(u32, u32, u32)>,
    ) -> Option<SimTime> {
        out.clear();
        let (nodes, i) = (&mut self.nodes, node as usize);
        let mut k = 0;
        while k < nodes[i].relays.len() {
            let (origin, ansn, due) = nodes[i].relays[k];
            if due <= now {
                nodes[i].relays.swap_remove(k);
                let o = &nodes[origin as usize];
                if o.tc_ansn == ansn {
                    out.push((
                        origin,
                        ansn,
                        TC_BASE_BYTES + TC_ENTRY_BYTES * o.tc_links.len() as u32,
                    ));
                }
            } else {
                k += 1;
            }
        }
        let st = &mut nodes[i];
        st.relay_timer = st.relays.iter().map(|r| r.2).min();
        st.relay_timer
    }

    /// Runs DSDV on every node.
    pub fn enable_dsdv(&mut self, params: DsdvParams) {
        for (i, st) in self.nodes.iter_mut().enumerate() {
            st.dsdv = Some(Dsdv::new(i as u32, params));
        }
    }

    /// Delay until the next periodic DSDV update of `node` (first: uniform over a period;
    /// then the period jittered by ±10 %, as the probes).
    pub fn dsdv_next_periodic(&mut self, node: u32, first: bool) -> SimTime {
        let st = &mut self.nodes[node as usize];
        let Some(d) = st.dsdv.as_ref() else {
            return SimTime::MAX;
        };
        let p = d.params.update_interval.ns() as f64;
        let f = if first {
            st.rng_dsdv.gen_range(0.0..1.0)
        } else {
            st.rng_dsdv.gen_range(0.9..=1.1)
        };
        SimTime((p * f) as u64)
    }

    fn publish(st: &mut NodeProto) -> UpdateOut {
        st.dsdv_id = st.dsdv_id.wrapping_add(1);
        let entries = st.dsdv_entries.len() as u32;
        UpdateOut {
            id: st.dsdv_id,
            parts: entries.div_ceil(ENTRIES_PER_PACKET as u32).max(1),
            entries,
        }
    }

    /// `node`'s periodic DSDV update.
    pub fn dsdv_periodic(&mut self, node: u32, now: SimTime) -> Option<UpdateOut> {
        let st = &mut self.nodes[node as usize];
        st.dsdv.as_mut()?.periodic(now, &mut st.dsdv_entries);
        Some(Self::publish(st))
    }

    /// `node`'s triggered DSDV update, if one is due.
    pub fn dsdv_triggered(&mut self, node: u32, now: SimTime) -> Option<UpdateOut> {
        let st = &mut self.nodes[node as usize];
        if st.dsdv.as_mut()?.triggered(now, &mut st.dsdv_entries) {
            Some(Self::publish(st))
        } else {
            None
        }
    }

    /// When `node` needs a triggered-update timer that is not yet pending.
    pub fn dsdv_trigger_needed(&mut self, node: u32) -> Option<SimTime> {
        let st = &mut self.nodes[node as usize];
        let at = st.dsdv.as_ref()?.trigger_at()?;
        if st.dsdv_trigger_timer.is_some_and(|t| t <= at) {
            return None;
        }
        st.dsdv_trigger_timer = Some(at);
        Some(at)
    }

    /// `node` received part `part` of DSDV update `id` of `from`.
    pub fn on_dsdv(&mut self, node: u32, from: u32, id: u32, part: u32, now: SimTime) {
        let (n, f) = (node as usize, from as usize);
        // The sender's published entries are read in place (no copy), beside the receiver's
        // state.
        let (sender, st) = match n.cmp(&f) {
            std::cmp::Ordering::Less => {
                let (low, high) = self.nodes.split_at_mut(f);
                (&high[0], &mut low[n])
            }
            std::cmp::Ordering::Greater => {
                let (low, high) = self.nodes.split_at_mut(n);
                (&low[f], &mut high[0])
            }
            std::cmp::Ordering::Equal => return, // it has no link to itself: nothing to learn
        };
        if sender.dsdv_id != id {
            return; // superseded while the packet waited: its contents are gone
        }
        let a = (part as usize * ENTRIES_PER_PACKET).min(sender.dsdv_entries.len());
        let b = (a + ENTRIES_PER_PACKET).min(sender.dsdv_entries.len());
        if let Some(d) = st.dsdv.as_mut() {
            d.on_update(now, from, &sender.dsdv_entries[a..b], &st.etx);
        }
    }

    /// When `node` sends its first probe: uniform over the first period.
    pub fn first_probe(&mut self, node: u32) -> SimTime {
        let st = &mut self.nodes[node as usize];
        let period = st.etx.params.probe_period.ns();
        SimTime(st.rng_probe.gen_range(0..period))
    }

    /// `node`'s probe instant: updates its estimates and publishes the probe's contents.
    pub fn probe(&mut self, node: u32, now: SimTime) -> ProbeOut {
        let st = &mut self.nodes[node as usize];
        let (seq, changed) = st.etx.on_probe_tick(now);
        st.etx.probe_entries(now, &mut st.probe_entries);
        st.probe_seq = seq;
        let mut dsdv_bytes = 0;
        if let Some(d) = st.dsdv.as_mut() {
            d.on_links_changed(now, &st.etx);
            st.probe_dsdv_seq = d.own_seq();
            dsdv_bytes = PROBE_SEQ_BYTES;
        }
        if let Some(o) = st.olsr.as_mut() {
            o.on_tick(now, &st.etx);
            st.hello_links.clear();
            st.hello_links.extend(st.etx.links().map(|(v, _)| v));
            st.hello_mprs.clear();
            st.hello_mprs.extend_from_slice(&o.mprs);
        }
        ProbeOut {
            seq,
            bytes: PROBE_BASE_BYTES
                + PROBE_ENTRY_BYTES * st.probe_entries.len() as u32
                + dsdv_bytes,
            next_in: st.etx.next_probe_delay(&mut st.rng_probe),
            changed,
        }
    }

    /// `node` received probe `seq` of `from`. Under DSDV a probe is also the sender's advert
    /// of itself under the number it carries (the 1-hop route, kept by hearing the neighbour,
    /// as ns-2's `Agent/DSDV` keeps a neighbour's route while it hears it); returns whether
    /// DSDV took it.
    pub fn on_probe(&mut self, node: u32, from: u32, seq: u32, now: SimTime) -> bool {
        let sender = &self.nodes[from as usize];
        let reported = if sender.probe_seq == seq {
            Some(
                sender
                    .probe_entries
                    .binary_search_by_key(&node, |e| e.0)
                    .map(|i| sender.probe_entries[i].1)
                    .unwrap_or(0),
            )
        } else {
            None
        };
        let fresh = sender.probe_seq == seq;
        if fresh && sender.olsr.is_some() {
            self.scratch_ids.clear();
            self.scratch_ids.extend_from_slice(&sender.hello_links);
            self.scratch_mprs.clear();
            self.scratch_mprs.extend_from_slice(&sender.hello_mprs);
        }
        let st = &mut self.nodes[node as usize];
        st.etx.on_probe(now, from, seq, reported);
        if let (true, Some(o)) = (fresh, st.olsr.as_mut()) {
            o.on_hello(now, from, &self.scratch_ids, &self.scratch_mprs);
        }
        let own = self.nodes[from as usize].probe_dsdv_seq;
        let st = &mut self.nodes[node as usize];
        match (fresh, st.dsdv.as_mut()) {
            (true, Some(d)) if own > 0 => {
                d.on_update(now, from, &[(from, own, 0.0)], &st.etx);
                true
            }
            _ => false,
        }
    }
}
