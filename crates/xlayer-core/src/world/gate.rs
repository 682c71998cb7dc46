//! The gate's glue (`crate::xl::Gate`, Fusion's variant in `crate::xl::fusion`): the world
//! carries out what a gate decides — queueing a packet in its interface queue, handing its head
//! to the MAC, originating the constant-rate packets it released, retrying when it says.

use super::*;

impl World {
    /// Queues a data packet in `node`'s gate-held interface queue (overflows count in the MAC's
    /// `drops_queue`, the same queue under another layer), then feeds the MAC.
    pub(super) fn gate_enqueue(&mut self, node: u32, h: u32) {
        let now = self.now();
        let transit = self.packets.get(h).src != node;
        if !self.gate.admit(node, transit) {
            self.nodes[node as usize].mac.stats.drops_queue += 1;
            self.flow_drop(h, true);
            self.packets.release(h);
            if self.events.wants(TuneEventKind::QueueOverflow) {
                self.events
                    .publish(now, node, TuneEventKind::QueueOverflow, 0.0);
            }
            return;
        }
        self.gate.push(node, h);
        self.gate_update(node);
        self.gate_pump(node);
    }

    /// `node`'s gate re-evaluates its state after its queue changed.
    pub(super) fn gate_update(&mut self, node: u32) {
        let now = self.now();
        self.gate
            .update(node, now, &mut self.nodes[node as usize].mac);
    }

    /// Hands the MAC the packet `node`'s gate releases, if any.
    pub(super) fn gate_pump(&mut self, node: u32) {
        let now = self.now();
        loop {
            let mut out = std::mem::take(&mut self.xl_out);
            let (routing, packets) = (&self.routing, &self.packets);
            let route = |h: u32| {
                let dst = packets.get(h).dst;
                (routing.next_hop(node, dst), dst)
            };
            let chosen = self.gate.next_for_mac(node, now, &route, &mut out);
            self.run_actions(out);
            let Some((h, next)) = chosen else {
                return;
            };
            let p = *self.packets.get(h);
            let n = &mut self.nodes[node as usize];
            if next == UNREACHABLE || n.off {
                n.net.count_unsendable(n.off);
                self.packets.release(h);
                self.gate_update(node);
                continue;
            }
            if n.mac_enqueue(now, h, &p, next, &mut self.queue) {
                self.gate.accepted(node, h);
            } else {
                self.flow_drop(h, true);
                self.packets.release(h);
                self.gate_update(node);
            }
            return;
        }
    }

    /// `node`'s MAC is done with `packet`: if it was the gate's, the gate moves on.
    pub(super) fn gate_dequeued(&mut self, node: u32, packet: u32) {
        if self.gate.dequeued(node, packet) {
            self.gate_update(node);
            self.gate_pump(node);
        }
    }

    /// `node` decoded data packet `p` from `from` carrying congestion bit `bit`.
    pub(super) fn gate_hear(&mut self, node: u32, from: u32, bit: bool, p: &Packet) {
        let now = self.now();
        let parent = p.dst != node && self.next_hop(node, p.dst) == from;
        let heard = self.gate.heard(node, from, bit, p, parent, now);
        if heard.cleared {
            self.gate_pump(node);
        }
        if heard.token {
            self.gate_drain_cbr(node);
            self.refill(node);
        }
    }

    /// The gate's retry timer fired at `node`: its queue and sources try again.
    pub(super) fn gate_retry(&mut self, node: u32) {
        let now = self.now();
        self.gate.retry_fired(node, now);
        self.gate_pump(node);
        self.gate_drain_cbr(node);
        self.refill(node);
    }

    /// Sends the constant-rate packets waiting at `node` that the gate releases.
    pub(super) fn gate_drain_cbr(&mut self, node: u32) {
        let now = self.now();
        let mut out = std::mem::take(&mut self.xl_out);
        while let Some(flow) = self.gate.next_waiting_cbr(node, now, &mut out) {
            if self.flows[flow as usize].emitting(now) {
                self.originate(flow);
            }
        }
        self.run_actions(out);
    }

    /// Whether a saturating source at `node` may originate a packet now (the gate may arm a
    /// retry for a source it holds back).
    pub(super) fn gate_source_may_send(&mut self, node: u32) -> bool {
        let now = self.now();
        let mut out = std::mem::take(&mut self.xl_out);
        let may = self.gate.source_may_send(node, now, &mut out);
        self.run_actions(out);
        may
    }
}
