//! Fusion's glue in [`World`] (`crate::xl::fusion`): the interface queue with its congestion
//! bit, hop-by-hop flow control on overheard bits, parent-clocked source rate limiting and the
//! prioritized MAC for congested nodes.

use super::*;

/// Fusion at every node (`stack.preset = "fusion"`; `crate::xl::fusion`).
#[derive(Debug)]
pub struct FusionState {
    pub params: crate::xl::fusion::FusionParams,
    pub nodes: Vec<crate::xl::fusion::FusionNode>,
    /// Each node's MAC levels as configured (a congested node divides their windows).
    pub base_levels: Vec<crate::mac::EdcaLevel>,
}

impl World {
    /// Fusion: queues a data packet in `node`'s interface queue (drop-tail; overflows count in
    /// the MAC's `drops_queue`, the same queue under another layer), then feeds the MAC.
    pub(super) fn fusion_enqueue(&mut self, node: u32, h: u32) {
        let now = self.now();
        let transit = self.packets.get(h).src != node;
        let f = self.fusion.as_mut().expect("fusion");
        let st = &mut f.nodes[node as usize];
        if !st.has_room(&f.params) {
            st.drops += 1;
            st.drops_transit += transit as u64;
            self.nodes[node as usize].mac.stats.drops_queue += 1;
            self.flow_drop(h, true);
            self.packets.release(h);
            if self.events.wants(TuneEventKind::QueueOverflow) {
                self.events
                    .publish(now, node, TuneEventKind::QueueOverflow, 0.0);
            }
            return;
        }
        st.queue.push_back(h);
        self.fusion_update(node);
        self.fusion_pump(node);
    }

    /// Fusion: re-evaluates `node`'s congestion bit; a congested node contends with
    /// `CW / cw_divisor` (prioritized MAC).
    pub(super) fn fusion_update(&mut self, node: u32) {
        let now = self.now();
        let f = self.fusion.as_mut().expect("fusion");
        let Some(congested) = f.nodes[node as usize].update_congestion(now, &f.params) else {
            return;
        };
        if !f.params.prioritized_mac {
            return;
        }
        let mac = &mut self.nodes[node as usize].mac;
        for (l, base) in f.base_levels.iter().enumerate().take(mac.level_count()) {
            let mut p = *base;
            if congested {
                p.cw_min = crate::xl::fusion::quarter_window(base.cw_min, f.params.cw_divisor);
                p.cw_max = crate::xl::fusion::quarter_window(base.cw_max, f.params.cw_divisor);
            }
            mac.set_level_params(l, p);
        }
    }

    /// Fusion: hands the MAC `node`'s head packet if the MAC holds none of its packets and the
    /// next hop's congestion bit allows (hop-by-hop flow control).
    pub(super) fn fusion_pump(&mut self, node: u32) {
        let now = self.now();
        let f = self.fusion.as_ref().expect("fusion");
        let st = &f.nodes[node as usize];
        if st.at_mac.is_some() {
            return;
        }
        let Some(&h) = st.queue.front() else {
            return;
        };
        let p = *self.packets.get(h);
        let next = self.next_hop(node, p.dst);
        if f.params.flow_control && next != p.dst {
            if let Some(until) = st.next_hop_congested(next, now, &f.params) {
                let f = self.fusion.as_mut().expect("fusion");
                f.nodes[node as usize].note_blocked();
                self.fusion_arm_retry(node, until);
                return;
            }
        }
        let f = self.fusion.as_mut().expect("fusion");
        let st = &mut f.nodes[node as usize];
        st.queue.pop_front();
        st.head_sent();
        let n = &mut self.nodes[node as usize];
        if next == UNREACHABLE || n.off {
            n.net.count_unsendable(n.off);
            self.packets.release(h);
            self.fusion_update(node);
            return self.fusion_pump(node);
        }
        if n.mac_enqueue(now, h, &p, next, &mut self.queue) {
            st.at_mac = Some(h);
        } else {
            self.flow_drop(h, true);
            self.packets.release(h);
            self.fusion_update(node);
        }
    }

    /// Fusion: `node`'s packet left the MAC.
    pub(super) fn fusion_dequeued(&mut self, node: u32) {
        let f = self.fusion.as_mut().expect("fusion");
        f.nodes[node as usize].at_mac = None;
        self.fusion_update(node);
        self.fusion_pump(node);
    }

    /// Fusion: `node` decoded data packet `p` from `from` carrying congestion bit `bit`. If
    /// `from` is the node's next hop towards the packet's destination (its parent), the packet
    /// clocks the node's source tokens (the paper's rate limiting as recalled; `xl::fusion`).
    pub(super) fn fusion_hear(&mut self, node: u32, from: u32, bit: bool, p: &Packet) {
        let now = self.now();
        let parent = p.dst != node && self.next_hop(node, p.dst) == from;
        let f = self.fusion.as_mut().expect("fusion");
        let params = f.params;
        let st = &mut f.nodes[node as usize];
        let cleared = st.hear(from, bit, now);
        let token =
            parent && params.rate_limit && st.on_parent_forward(p.src, p.flow, p.seq, now, &params);
        if cleared {
            self.fusion_pump(node);
        }
        if token {
            self.fusion_drain_cbr(node);
            self.refill(node);
        }
    }

    /// Fusion: schedules a retry of `node`'s pump and sources at `at` (one pending at a time,
    /// the earliest kept).
    pub(super) fn fusion_arm_retry(&mut self, node: u32, at: SimTime) {
        let f = self.fusion.as_mut().expect("fusion");
        let st = &mut f.nodes[node as usize];
        if st.retry_at.is_some_and(|t| t <= at) {
            return;
        }
        st.retry_at = Some(at);
        self.queue.schedule(
            at,
            Event::NetTimer {
                node,
                kind: NetTimerKind::FusionRetry,
            },
        );
    }

    pub(super) fn fusion_retry(&mut self, node: u32) {
        let now = self.now();
        let Some(f) = self.fusion.as_mut() else {
            return;
        };
        let st = &mut f.nodes[node as usize];
        if st.retry_at.is_some_and(|t| t <= now) {
            st.retry_at = None;
        }
        self.fusion_pump(node);
        self.fusion_drain_cbr(node);
        self.refill(node);
    }

    /// Fusion: sends the CBR packets waiting at `node` while tokens last; retries when the
    /// transit traffic leaves the window if some still wait.
    pub(super) fn fusion_drain_cbr(&mut self, node: u32) {
        let now = self.now();
        loop {
            let f = self.fusion.as_mut().expect("fusion");
            let st = &mut f.nodes[node as usize];
            let Some(&flow) = st.cbr_waiting.front() else {
                return;
            };
            if !st.take_token(now, &f.params) {
                if let Some(at) = st.transit_expiry(&f.params) {
                    let at = at + SimTime(1);
                    self.fusion_arm_retry(node, at);
                }
                return;
            }
            st.cbr_waiting.pop_front();
            if self.flows[flow as usize].emitting(now) {
                self.originate(flow);
            }
        }
    }

    /// Fusion's rate limiting for one packet of a source at `node`: takes a token (true
    /// without Fusion or without rate limiting).
    pub(super) fn fusion_token(&mut self, node: u32) -> bool {
        let now = self.now();
        match self.fusion.as_mut() {
            Some(f) if f.params.rate_limit => f.nodes[node as usize].take_token(now, &f.params),
            _ => true,
        }
    }

    /// Whether a saturating source at `node` may originate a packet now (takes the token); a
    /// source without one waits, counted once per wait, until a forwarded packet earns one or
    /// the transit traffic leaves the window.
    pub(super) fn fusion_source_may_send(&mut self, node: u32) -> bool {
        if self.fusion_token(node) {
            return true;
        }
        let f = self.fusion.as_mut().expect("fusion");
        let st = &mut f.nodes[node as usize];
        st.note_source_waiting();
        if let Some(at) = st.transit_expiry(&f.params) {
            let at = at + SimTime(1);
            self.fusion_arm_retry(node, at);
        }
        false
    }
}
