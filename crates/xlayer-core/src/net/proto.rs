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

use super::etx::{Etx, EtxParams, PROBE_BASE_BYTES, PROBE_ENTRY_BYTES, STREAM as ETX_STREAM};
use crate::sim::rng::{stream, Stream};
use crate::sim::SimTime;

/// One node's protocol state.
#[derive(Debug)]
pub struct NodeProto {
    pub etx: Etx,
    rng_probe: Stream,
    /// The latest probe sent: its sequence number and entries (neighbour, probes heard), by id.
    probe_seq: u32,
    probe_entries: Vec<(u32, u32)>,
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
}

impl NetProto {
    pub fn new(n: usize, seed: u64, etx: EtxParams) -> NetProto {
        NetProto {
            nodes: (0..n as u32)
                .map(|i| NodeProto {
                    etx: Etx::new(etx),
                    rng_probe: stream(seed, i, ETX_STREAM),
                    probe_seq: 0,
                    probe_entries: Vec::new(),
                })
                .collect(),
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
        ProbeOut {
            seq,
            bytes: PROBE_BASE_BYTES + PROBE_ENTRY_BYTES * st.probe_entries.len() as u32,
            next_in: st.etx.next_probe_delay(&mut st.rng_probe),
            changed,
        }
    }

    /// `node` received probe `seq` of `from`.
    pub fn on_probe(&mut self, node: u32, from: u32, seq: u32, now: SimTime) {
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
        self.nodes[node as usize]
            .etx
            .on_probe(now, from, seq, reported);
    }
}
