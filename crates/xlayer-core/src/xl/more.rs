//! MORE, opportunistic routing with intra-flow network coding (Chachulski, Jennings, Katti,
//! Katabi, "Trading structure for randomness in wireless opportunistic routing", SIGCOMM 2007;
//! the DiffQ document's §2 and §6.2 run it with and without DiffQ): a forwarding component
//! ([`super::Forward`]) that replaces the routing next hop for its flows.
//!
//! - **Batches.** A flow's source cuts its data into batches of `K` native packets (K = 32) and
//!   broadcasts random linear combinations of the current batch over GF(2^8) for as long as the
//!   MAC takes them (`crate::net::coding`; the coefficients are drawn when the packet leaves
//!   the node's queue for the MAC, so a combination mixes everything the node holds then). It
//!   moves to the next batch when the batch ACK arrives.
//! - **Forwarders.** At the start of each batch the source orders the nodes closer to the
//!   destination than itself by their ETX distance to it (link cost `1/p`, `p` the link's
//!   measured delivery ratio in the direction of travel: broadcasts get no link ACKs, so
//!   only the forward ratio counts, as in ExOR), computes for each the expected number of
//!   transmissions `z_j` per native packet and its TX credit (below), and prunes the forwarders
//!   expected to make less than `prune_threshold` (10 %) of the batch's transmissions: those
//!   with `z = 0` at once, then the smallest one at a time, recomputing over the others, until
//!   none falls below (forwarders side by side share their stage's load, so each may fall below
//!   10 % while the stage does not; dropping them together would cut the path). The list with the credits travels
//!   in every coded packet of the batch (its bytes are counted; the list itself stays here,
//!   published for the batch); a batch that lasts beyond [`LIST_REFRESH`] gets a list made from
//!   the measurements of then (forwarders keep what they hold).
//! - **Credits** (MORE §4.2, as recalled — see below): with nodes ordered from the source
//!   (farthest) to the destination and `ε_ij` the loss probability from `i` to `j`,
//!   `L_src = 1`, `L_j = Σ_{i upstream of j} z_i (1 − ε_ij) Π_{k downstream of j} ε_ik` (the
//!   packets `j` hears that no node closer to the destination hears), `z_j = L_j / (1 − Π_{k
//!   downstream of j} ε_jk)`, and `TX_credit_j = z_j / Σ_{i upstream of j} z_i (1 − ε_ij)`.
//! - **Forwarding.** A forwarder keeps the innovative packets it hears of the current batch
//!   (exact rank over the real code vectors) and adds its TX credit to its credit counter for
//!   each packet heard from an upstream node (one farther from the destination); while the
//!   counter is positive it queues one more coded packet (a fresh combination of what it
//!   holds, drawn when the packet leaves for the MAC) and takes 1 off. Coded packets are MAC
//!   broadcasts: no link ACKs, no retries. A forwarder flushes a batch (its code vectors, its
//!   credit, its queued packets) when it hears a packet of a later batch or relays the batch's
//!   ACK.
//! - **Destination.** At rank `K` it decodes, hands the `K` native packets to the application
//!   and unicasts the batch ACK back along the shortest-ETX path to the source (link cost
//!   `1/(p_xy p_yx)`: the ACK goes with link ACKs and retries), hop by hop at the top MAC
//!   level, ahead of queued data; a relay whose MAC gives up on the ACK hands it to the MAC
//!   again (up to [`ACK_REQUEUES`] times), and the destination sends it again when packets of
//!   the decoded batch keep coming after [`REACK_INTERVAL`].
//!
//! **Link knowledge.** The delivery ratios are those the ETX probes measure at every node
//! (`crate::net::etx`, `[net.etx]`): the source reads every node's measurements, as a
//! link-state protocol would spread them (MORE runs its own ETX module and link-state
//! flooding; the cost of that flooding is not modelled beyond the probes). A flow whose
//! destination the measurements do not reach yet waits: its source's packets are dropped
//! (`more_stale`) and it tries again at most every [`NO_PATH_RETRY`].
//!
//! **Sources.** What the paper's abstract and the DiffQ document confirm: batches of K = 32,
//! random linear network coding over the batch at the source and the forwarders, forwarders
//! chosen by proximity to the destination in ETX, TX credits, innovative packets kept, decoding
//! at rank K, ACKs to the source, the source broadcasting "as fast as it can" (DiffQ §6.2). The
//! credit equations, the 10 % pruning, the ACK on the shortest ETX path ahead of data and the
//! flush on a later batch are the paper's §4 *as recalled*: the paper's body could not be read
//! with the search tools available. [`REACK_INTERVAL`], [`ACK_REQUEUES`], [`NO_PATH_RETRY`],
//! [`LIST_REFRESH`] and the order of the pruning are xlayer's choices.
//!
//! **Queues.** MORE runs over per-destination queues (the presets set them): a forwarder's
//! credit becomes packets in its queue for the flow's destination, and the node hands the MAC
//! one packet at a time — round robin over destinations under `more`, DiffQ's differential
//! scheduling under `diffq-more` (whose eq. 2 reads [`More::candidates`]). A queue of
//! `net.dest_queue_packets` bounds a forwarder's unspent credit.

use rand::Rng;

use super::{Action, Forward, Prepared};
use crate::app::Flow;
use crate::net::coding::Basis;
use crate::net::queue::HEADER_BYTES;
use crate::net::routing::Routing;
use crate::sim::rng::{stream, Stream};
use crate::sim::SimTime;
use crate::transport::ECN_NOT_ECT;
use crate::wire::more::{coded_header_bytes, MoreCoded, ACK_BYTES, MAX_BATCH};
use crate::wire::packet::{Control, Header, Packet};

/// Random stream of each node's code coefficients.
pub const STREAM: &str = "net.more";

/// Forwarders expected to make less than this share of a batch's transmissions are pruned
/// (MORE §4.2 as recalled: 10 %); `stack.more.prune_threshold`.
pub const PRUNE_THRESHOLD: f64 = 0.1;

/// Forwarders a list holds at most (the header's forwarder count is one byte; the longest
/// lists on 50 nodes hold about 15).
pub const MAX_FORWARDERS: usize = 64;

/// The destination sends a batch's ACK again if packets of the batch still arrive this long
/// after it sent the last one (xlayer's choice).
pub const REACK_INTERVAL: SimTime = SimTime::from_ms(200);

/// A relay hands an ACK its MAC gave up on back to it this many times (xlayer's choice: with
/// the MAC's 7 attempts a hop, 28 attempts in all).
pub const ACK_REQUEUES: u64 = 3;

/// A batch that lasts longer gets a new forwarder list from the measurements of then, at the
/// pace the probes refresh them (xlayer's choice: the ETX probe period's default).
pub const LIST_REFRESH: SimTime = SimTime::from_ms(1000);

/// A source whose destination the link measurements do not reach tries again after this long
/// (xlayer's choice).
pub const NO_PATH_RETRY: SimTime = SimTime::from_ms(100);

/// MORE's parameters (`[stack.more]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoreParams {
    /// K: native packets per batch (1..=32).
    pub batch_size: usize,
    /// Forwarders expected to make less than this share of the transmissions are pruned.
    pub prune_threshold: f64,
}

impl Default for MoreParams {
    fn default() -> Self {
        MoreParams {
            batch_size: MAX_BATCH,
            prune_threshold: PRUNE_THRESHOLD,
        }
    }
}

/// A node of a batch's forwarder list (the source first, the destination last).
#[derive(Debug, Clone, Copy)]
struct Member {
    node: u32,
    /// ETX distance to the destination (broadcast metric).
    dist: f64,
    /// Expected transmissions per native packet.
    z: f64,
    /// Credit added per packet heard from upstream.
    credit: f64,
    /// Its downstream members within one hop (measured delivery above 0), as a range of
    /// [`FlowState::candidates`].
    cands: (u32, u32),
}

/// What a flow's source publishes for its current batch, and the flow's counters.
#[derive(Debug, Clone)]
pub struct FlowState {
    pub src: u32,
    pub dst: u32,
    pub payload_bytes: u32,
    /// The current batch, numbered from 0.
    pub batch: u32,
    /// When the current batch started at the source, and when its list was made.
    pub started_at: SimTime,
    list_at: SimTime,
    /// Whether the forwarder list of the current batch is computed.
    ready: bool,
    /// The batch started and no coded packet of it left the source yet (its native packets
    /// count as sent with the first).
    announce: bool,
    /// A failed attempt (no path): not before this time again.
    retry_at: SimTime,
    /// Source, forwarders, destination, in that order.
    members: Vec<Member>,
    candidates: Vec<u32>,
    /// Header bytes of the batch's coded packets (MORE header with its list, IPv4/UDP, and the
    /// per-destination queueing's 13-byte header).
    header_bytes: u32,
    /// ETX distance of every node to the source (unicast metric), for the ACK's path.
    ack_dist: Vec<f64>,
    /// Batches decoded at the destination, and the sum of their decoding delays (from the
    /// batch's start at the source to its decoding).
    pub batches: u64,
    pub decode_delay_sum: SimTime,
    /// Coded packets sent (source and forwarders).
    pub coded_tx: u64,
    /// Forwarder lists computed, and their forwarders summed.
    pub lists: u64,
    pub forwarders_sum: u64,
    /// The source's ETX distance to the destination (broadcast metric) when its first list was
    /// made: the path's ETX as the measurements had it before the flow's own traffic (under
    /// load, lost probes inflate the later ones); NaN before.
    pub path_etx: f64,
}

impl FlowState {
    /// The forwarders of the current batch's list (the source and destination left out).
    pub fn forwarders(&self) -> impl Iterator<Item = u32> + '_ {
        let n = self.members.len();
        self.members[1.min(n)..n.saturating_sub(1)]
            .iter()
            .map(|m| m.node)
    }

    /// The credit of forwarder `node` in the current list, if it is one.
    pub fn credit_of(&self, node: u32) -> Option<f64> {
        let n = self.members.len();
        self.members[1.min(n)..n.saturating_sub(1)]
            .iter()
            .find(|m| m.node == node)
            .map(|m| m.credit)
    }

    /// The current batch's list, source first and destination last: each node with its ETX
    /// distance to the destination, its expected transmissions per native packet `z` and its
    /// TX credit (0 for the source and the destination). Empty before the first batch starts.
    pub fn list(&self) -> impl Iterator<Item = (u32, f64, f64, f64)> + '_ {
        self.members.iter().map(|m| (m.node, m.dist, m.z, m.credit))
    }

    fn position(&self, node: u32) -> Option<usize> {
        self.members.iter().position(|m| m.node == node)
    }
}

/// What one node holds of one flow: the batch it works on, its code vectors, its credit; at
/// the destination, the next batch it expects and when it last sent an ACK.
#[derive(Debug, Clone)]
struct NodeFlow {
    flow: u32,
    batch: u32,
    basis: Basis,
    credit: f64,
    /// Destination: batches decoded (the next one expected), and when the last ACK left.
    decoded: u32,
    acked_at: Option<SimTime>,
}

/// One node's MORE counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeStats {
    /// Coded packets sent as a source and as a forwarder.
    pub source_tx: u64,
    pub forward_tx: u64,
    /// Coded packets of a flow it forwards for or decodes, heard and innovative / not.
    pub innovative: u64,
    pub redundant: u64,
    /// Batch ACKs sent (as the destination, again, or relayed).
    pub acks_tx: u64,
    /// Packets dropped when leaving its queue: of a batch it flushed, or from a source without
    /// a path yet.
    pub stale: u64,
}

/// MORE at every node (per-flow state by flow id, per-node state by node id).
#[derive(Debug)]
pub struct More {
    pub params: MoreParams,
    /// By flow id; `None` for flows MORE does not carry.
    pub flows: Vec<Option<FlowState>>,
    nodes: Vec<Vec<NodeFlow>>,
    pub stats: Vec<NodeStats>,
    rng: Vec<Stream>,
    // Scratch, reused (no allocation per batch once grown).
    dist: Vec<f64>,
    done: Vec<bool>,
    list: Vec<u32>,
    active: Vec<usize>,
    order: Vec<(f64, u32)>,
    eps: Vec<f64>,
    suffix: Vec<f64>,
    z: Vec<f64>,
    credit: Vec<f64>,
}

impl More {
    /// MORE over `nodes` nodes carrying the flows `flows` (flow id, source, destination,
    /// payload bytes), seeded by the scenario's `seed`.
    pub fn new(
        params: MoreParams,
        nodes: usize,
        flows: impl IntoIterator<Item = (u32, u32, u32, u32)>,
        flow_count: usize,
        seed: u64,
    ) -> More {
        let k = params.batch_size;
        let mut m = More {
            params,
            flows: vec![None; flow_count],
            nodes: vec![Vec::new(); nodes],
            stats: vec![NodeStats::default(); nodes],
            rng: (0..nodes as u32).map(|i| stream(seed, i, STREAM)).collect(),
            dist: vec![f64::INFINITY; nodes],
            done: vec![false; nodes],
            list: Vec::new(),
            active: Vec::new(),
            order: Vec::new(),
            eps: Vec::new(),
            suffix: Vec::new(),
            z: Vec::new(),
            credit: Vec::new(),
        };
        for (id, src, dst, payload) in flows {
            m.flows[id as usize] = Some(FlowState {
                src,
                dst,
                payload_bytes: payload,
                batch: 0,
                started_at: SimTime::ZERO,
                list_at: SimTime::ZERO,
                ready: false,
                announce: false,
                retry_at: SimTime::ZERO,
                members: Vec::new(),
                candidates: Vec::new(),
                header_bytes: coded_header_bytes(k, 0) + HEADER_BYTES,
                ack_dist: vec![f64::INFINITY; nodes],
                batches: 0,
                decode_delay_sum: SimTime::ZERO,
                coded_tx: 0,
                lists: 0,
                forwarders_sum: 0,
                path_etx: f64::NAN,
            });
            m.node_flow(dst, id);
        }
        m
    }

    /// `node`'s state of `flow`, made on first use.
    fn node_flow(&mut self, node: u32, flow: u32) -> &mut NodeFlow {
        let k = self.params.batch_size;
        let v = &mut self.nodes[node as usize];
        let i = match v.iter().position(|e| e.flow == flow) {
            Some(i) => i,
            None => {
                v.push(NodeFlow {
                    flow,
                    batch: 0,
                    basis: Basis::new(k),
                    credit: 0.0,
                    decoded: 0,
                    acked_at: None,
                });
                v.len() - 1
            }
        };
        &mut v[i]
    }

    fn find(&self, node: u32, flow: u32) -> Option<usize> {
        self.nodes[node as usize]
            .iter()
            .position(|e| e.flow == flow)
    }

    /// The flows MORE carries.
    pub fn flow(&self, flow: u32) -> Option<&FlowState> {
        self.flows.get(flow as usize).and_then(Option::as_ref)
    }

    /// Whether `flow`'s current batch has its forwarder list, starting the batch now if it has
    /// none (not more often than every [`NO_PATH_RETRY`] while that fails).
    fn ensure_batch(&mut self, flow: u32, routing: &Routing, now: SimTime) -> bool {
        let f = self.flows[flow as usize].as_ref().expect("a MORE flow");
        if f.ready {
            if now >= f.list_at + LIST_REFRESH {
                // The list travels in every packet: a long batch gets one from fresher
                // measurements (kept as it was if they reach the destination no longer).
                self.start_batch(flow, routing, now);
            }
            return true;
        }
        if now < f.retry_at {
            return false;
        }
        if self.start_batch(flow, routing, now) {
            return true;
        }
        let f = self.flows[flow as usize].as_mut().expect("a MORE flow");
        f.retry_at = now + NO_PATH_RETRY;
        false
    }

    /// Starts batch `f.batch` of `flow` at `now` (or, if it has started, publishes a new list
    /// for it): the forwarder list, the credits and the candidates of each member. False if the
    /// measurements do not reach the destination (yet).
    fn start_batch(&mut self, flow: u32, routing: &Routing, now: SimTime) -> bool {
        match routing.proto() {
            Some(proto) => self.start_batch_on(proto, flow, now),
            None => false,
        }
    }

    /// [`More::start_batch`] over the link measurements `links`.
    pub fn start_batch_on<L: Links + ?Sized>(
        &mut self,
        links: &L,
        flow: u32,
        now: SimTime,
    ) -> bool {
        let (src, dst) = {
            let f = self.flows[flow as usize].as_ref().expect("a MORE flow");
            (f.src, f.dst)
        };
        // ETX distances to the destination over the forward delivery ratios.
        broadcast_distances(links, dst, &mut self.dist, &mut self.done);
        let d_src = self.dist[src as usize];
        if !d_src.is_finite() {
            return false;
        }
        self.list.clear();
        self.list.push(src);
        self.order.clear();
        self.order.extend(
            (0..self.dist.len() as u32)
                .filter(|&v| v != src && v != dst && self.dist[v as usize] < d_src)
                .map(|v| (self.dist[v as usize], v)),
        );
        // Farthest first; equal distances by id.
        self.order
            .sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        self.list.extend(self.order.iter().map(|c| c.1));
        self.list.push(dst);
        // The loss probabilities among the candidates, once.
        let m0 = self.list.len();
        self.eps.clear();
        self.eps.resize(m0 * m0, 1.0);
        for (a, &i) in self.list.iter().enumerate() {
            for (b, &j) in self.list.iter().enumerate() {
                if a != b {
                    self.eps[a * m0 + b] = 1.0 - links.delivery(i, j);
                }
            }
        }
        self.active.clear();
        self.active.extend(0..m0);
        if !self.credits() {
            return false;
        }
        // Pruning: the forwarders that can do nothing (z = 0) go at once; then, one at a time,
        // the one expected to make the smallest share while it is below the threshold (or the
        // list too long), recomputing z over the others — forwarders sharing a stage of the
        // path share its load, so dropping them together would cut the path.
        let useless = |z: &[f64], m: usize| (1..m - 1).any(|j| z[j] <= 0.0);
        if useless(&self.z, self.active.len()) {
            let z = &self.z;
            let m = self.active.len();
            let mut j = 0;
            self.active.retain(|_| {
                let keep = j == 0 || j == m - 1 || z[j] > 0.0;
                j += 1;
                keep
            });
            if !self.credits() {
                return false;
            }
        }
        loop {
            let m = self.active.len();
            if m <= 2 {
                break;
            }
            let total: f64 = self.z[..m - 1].iter().sum();
            let (jmin, zmin) = (1..m - 1)
                .map(|j| (j, self.z[j]))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("a forwarder");
            if zmin >= self.params.prune_threshold * total && m - 2 <= MAX_FORWARDERS {
                break;
            }
            let gone = self.active.remove(jmin);
            if !self.credits() {
                // Without it the source would reach nobody: it stays.
                self.active.insert(jmin, gone);
                let ok = self.credits();
                debug_assert!(ok, "the list before this removal was fine");
                break;
            }
        }
        // Publish the list.
        let m = self.active.len();
        let f = self.flows[flow as usize].as_mut().expect("a MORE flow");
        f.members.clear();
        f.candidates.clear();
        for (j, &a) in self.active.iter().enumerate() {
            let node = self.list[a];
            let start = f.candidates.len() as u32;
            for &b in &self.active[j + 1..] {
                if self.eps[a * m0 + b] < 1.0 {
                    f.candidates.push(self.list[b]);
                }
            }
            f.members.push(Member {
                node,
                dist: self.dist[node as usize],
                z: self.z[j],
                credit: self.credit[j],
                cands: (start, f.candidates.len() as u32),
            });
        }
        f.header_bytes = coded_header_bytes(self.params.batch_size, m - 2) + HEADER_BYTES;
        if !f.ready {
            f.announce = true;
            f.started_at = now;
        }
        f.ready = true;
        f.list_at = now;
        f.lists += 1;
        if f.lists == 1 {
            f.path_etx = d_src;
        }
        f.forwarders_sum += (m - 2) as u64;
        true
    }

    /// `z` and the TX credits of the candidates `self.active` (indices into `self.list`, the
    /// source first and the destination last), from the loss probabilities `self.eps`; false if
    /// the source reaches none of the others.
    fn credits(&mut self) -> bool {
        let m0 = self.list.len();
        let m = self.active.len();
        let eps = |a: usize, b: usize| self.eps[self.active[a] * m0 + self.active[b]];
        // suffix[a·m + j] = Π_{k > j} ε_ak: no node closer than j hears a's packet.
        self.suffix.clear();
        self.suffix.resize(m * m, 1.0);
        for a in 0..m {
            let mut s = 1.0;
            for j in (0..m).rev() {
                self.suffix[a * m + j] = s;
                s *= eps(a, j);
            }
        }
        self.z.clear();
        self.z.resize(m, 0.0);
        self.credit.clear();
        self.credit.resize(m, 0.0);
        let reach = |s: &[f64], j: usize| 1.0 - s[j * m + j];
        if reach(&self.suffix, 0) <= 0.0 {
            return false;
        }
        self.z[0] = 1.0 / reach(&self.suffix, 0);
        for j in 1..m - 1 {
            let (mut load, mut heard) = (0.0, 0.0);
            for i in 0..j {
                let got = self.z[i] * (1.0 - eps(i, j));
                heard += got;
                load += got * self.suffix[i * m + j];
            }
            let r = reach(&self.suffix, j);
            // A forwarder that reaches no node closer than itself cannot help (z = 0: pruned).
            self.z[j] = if r > 0.0 { load / r } else { 0.0 };
            self.credit[j] = if heard > 0.0 { self.z[j] / heard } else { 0.0 };
        }
        true
    }

    /// The next hop of a batch ACK at `node` towards `flow`'s source: the neighbour minimizing
    /// the unicast ETX of the link plus its distance to the source.
    fn ack_next_hop(&self, routing: &Routing, flow: u32, node: u32) -> Option<u32> {
        let links = routing.proto()?;
        let f = self.flows[flow as usize].as_ref()?;
        let mut best: Option<(f64, u32)> = None;
        links.heard_by(node, &mut |y, p_yx| {
            let p_xy = links.delivery(node, y);
            if p_yx <= 0.0 || p_xy <= 0.0 {
                return;
            }
            let c = 1.0 / (p_xy * p_yx) + f.ack_dist[y as usize];
            if c.is_finite() && best.is_none_or(|(b, _)| c < b) {
                best = Some((c, y));
            }
        });
        best.map(|b| b.1)
    }

    /// The batch ACK of `flow`'s batch `batch` leaves `node` (the destination, or a relay).
    #[allow(clippy::too_many_arguments)]
    fn send_ack(
        &mut self,
        routing: &Routing,
        flow: u32,
        batch: u32,
        node: u32,
        attempt: u64,
        relayed: bool,
        out: &mut Vec<Action>,
    ) {
        let Some(next) = self.ack_next_hop(routing, flow, node) else {
            return;
        };
        self.stats[node as usize].acks_tx += 1;
        out.push(Action::Unicast {
            node,
            next,
            seq: attempt,
            bytes: ACK_BYTES,
            control: Control::MoreAck { flow, batch },
            relayed,
        });
    }

    /// The destination decoded `flow`'s current batch.
    fn decoded(
        &mut self,
        routing: &Routing,
        flow: u32,
        node: u32,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        let k = self.params.batch_size;
        let f = self.flows[flow as usize].as_mut().expect("a MORE flow");
        let batch = f.batch;
        f.batches += 1;
        f.decode_delay_sum += now - f.started_at;
        out.push(Action::Deliver {
            flow,
            first_seq: batch as u64 * k as u64,
            count: k as u32,
            created: f.started_at,
        });
        // The ACK's path: shortest unicast ETX to the source, from the measurements of now.
        if let Some(proto) = routing.proto() {
            unicast_distances(proto, f.src, &mut f.ack_dist, &mut self.done);
        }
        let nf = self.node_flow(node, flow);
        nf.decoded = batch + 1;
        nf.acked_at = Some(now);
        self.send_ack(routing, flow, batch, node, 0, false, out);
    }
}

/// What MORE knows of the links: the delivery ratio of every measured link.
pub trait Links {
    /// The delivery ratio of the link from `from` to `to` (0 if unmeasured).
    fn delivery(&self, from: u32, to: u32) -> f64;
    /// Calls `f(v, p)` for every node `v` that `u` hears, `p` the delivery ratio from `v` to
    /// `u`, by id.
    fn heard_by(&self, u: u32, f: &mut dyn FnMut(u32, f64));
}

/// The ETX probes' measurements at every node (`crate::net::etx`): `p(v → u)` is the share of
/// `v`'s probes `u` heard over its window.
impl Links for crate::net::proto::NetProto {
    fn delivery(&self, from: u32, to: u32) -> f64 {
        self.nodes[to as usize]
            .etx
            .delivery_from(from)
            .unwrap_or(0.0)
    }
    fn heard_by(&self, u: u32, f: &mut dyn FnMut(u32, f64)) {
        for (v, p) in self.nodes[u as usize].etx.deliveries() {
            f(v, p);
        }
    }
}

/// ETX distance of every node to `dst` over the links' forward delivery ratios (`1/p` a link,
/// ExOR's and MORE's metric for broadcasts), by Dijkstra over every node's measurements.
fn broadcast_distances<L: Links + ?Sized>(
    links: &L,
    dst: u32,
    dist: &mut [f64],
    done: &mut [bool],
) {
    dijkstra(dist, done, dst, |u, relax| {
        links.heard_by(u, &mut |v, p| {
            if p > 0.0 {
                relax(v, 1.0 / p);
            }
        });
    });
}

/// ETX distance of every node to `src` over the unicast metric `1/(p_vu p_uv)` (a link used
/// with link-layer ACKs), for the batch ACK's path.
fn unicast_distances<L: Links + ?Sized>(links: &L, src: u32, dist: &mut [f64], done: &mut [bool]) {
    dijkstra(dist, done, src, |u, relax| {
        links.heard_by(u, &mut |v, p_vu| {
            let p_uv = links.delivery(u, v);
            if p_vu > 0.0 && p_uv > 0.0 {
                relax(v, 1.0 / (p_vu * p_uv));
            }
        });
    });
}

/// Shortest distances to `root` (O(n²) selection: networks here have tens to hundreds of
/// nodes, and a batch starts every few dozen packets). `links(u, relax)` calls `relax(v, cost)`
/// for every link from `v` into `u`.
fn dijkstra(
    dist: &mut [f64],
    done: &mut [bool],
    root: u32,
    mut links: impl FnMut(u32, &mut dyn FnMut(u32, f64)),
) {
    dist.fill(f64::INFINITY);
    done.fill(false);
    dist[root as usize] = 0.0;
    loop {
        let mut u = None;
        let mut best = f64::INFINITY;
        for (i, (&d, &fin)) in dist.iter().zip(done.iter()).enumerate() {
            if !fin && d < best {
                best = d;
                u = Some(i);
            }
        }
        let Some(u) = u else { break };
        done[u] = true;
        let du = dist[u];
        links(u as u32, &mut |v, cost| {
            let nd = du + cost;
            if !done[v as usize] && nd < dist[v as usize] {
                dist[v as usize] = nd;
            }
        });
    }
}

impl Forward for More {
    /// A MORE flow's packet as its source or a forwarder queues it: a coded packet whose batch
    /// and coefficients are set when it leaves the queue ([`More::prepare`]).
    fn originate(&mut self, flow: &Flow, node: u32, now: SimTime, ttl: u8) -> Option<Packet> {
        let f = self.flow(flow.id)?;
        let _ = node;
        Some(Packet {
            flow: flow.id,
            seq: 0,
            src: f.src,
            dst: f.dst,
            payload_bytes: f.payload_bytes,
            header_bytes: coded_header_bytes(self.params.batch_size, 0),
            created: now,
            ttl,
            level: flow.level,
            ecn: ECN_NOT_ECT,
            transport: Header::More(MoreCoded {
                batch: 0,
                coeffs: [0; MAX_BATCH],
            }),
            control: Control::None,
            queue_len: 0,
        })
    }

    /// A source sends once its current batch has a forwarder list (made now if need be, at
    /// most every [`NO_PATH_RETRY`] while the measurements do not reach the destination).
    fn source_may_send(&mut self, flow: u32, routing: &Routing, now: SimTime) -> bool {
        self.ensure_batch(flow, routing, now)
    }

    #[inline]
    fn takes(&self, p: &Packet) -> bool {
        p.transport.is_more_coded() && !p.control.is_control()
    }

    fn receive(
        &mut self,
        node: u32,
        from: u32,
        p: &Packet,
        routing: &Routing,
        now: SimTime,
        out: &mut Vec<Action>,
    ) {
        let Header::More(h) = p.transport else {
            return;
        };
        let flow = p.flow;
        let Some(f) = self.flows.get(flow as usize).and_then(Option::as_ref) else {
            return;
        };
        let k = self.params.batch_size;
        if node == f.dst {
            let (current, ready) = (f.batch, f.ready);
            let nf = self.node_flow(node, flow);
            if h.batch < nf.decoded {
                // A batch already decoded: its ACK may have been lost.
                let again = h.batch + 1 == nf.decoded
                    && nf.acked_at.is_some_and(|t| now >= t + REACK_INTERVAL);
                if again {
                    nf.acked_at = Some(now);
                    self.send_ack(routing, flow, h.batch, node, 0, false, out);
                }
                return;
            }
            if h.batch != current || !ready {
                return;
            }
            if nf.batch != h.batch {
                nf.batch = h.batch;
                nf.basis.clear(k);
            }
            let innovative = nf.basis.insert(&h.coeffs);
            let complete = nf.basis.complete();
            let st = &mut self.stats[node as usize];
            st.innovative += innovative as u64;
            st.redundant += !innovative as u64;
            if complete {
                self.decoded(routing, flow, node, now, out);
            }
            return;
        }
        if h.batch != f.batch || !f.ready {
            return; // not the batch whose list is published
        }
        let Some(me) = f.position(node).filter(|&i| i > 0) else {
            return; // not a forwarder of this batch
        };
        // Upstream: the source, or a forwarder earlier in the list (farther away).
        let upstream = f.position(from).is_some_and(|i| i < me);
        let credit = f.members[me].credit;
        let nf = self.node_flow(node, flow);
        if nf.batch != h.batch {
            // A later batch: flush the earlier one.
            nf.batch = h.batch;
            nf.basis.clear(k);
            nf.credit = 0.0;
            out.push(Action::Purge { node, flow });
        }
        let innovative = nf.basis.insert(&h.coeffs);
        let mut count = 0;
        if upstream {
            nf.credit += credit;
            while nf.credit > 0.0 {
                nf.credit -= 1.0;
                count += 1;
            }
        }
        let st = &mut self.stats[node as usize];
        st.innovative += innovative as u64;
        st.redundant += !innovative as u64;
        if count > 0 {
            out.push(Action::Originate { node, flow, count });
        }
    }

    fn prepare(&mut self, node: u32, p: &mut Packet, routing: &Routing, now: SimTime) -> Prepared {
        let Header::More(_) = p.transport else {
            return Prepared::Routed;
        };
        let flow = p.flow;
        let k = self.params.batch_size;
        let Some(f) = self.flows.get(flow as usize).and_then(Option::as_ref) else {
            return Prepared::Routed;
        };
        let mut natives = 0;
        let mut coeffs = [0u8; MAX_BATCH];
        if node == f.src {
            if !self.ensure_batch(flow, routing, now) {
                self.stats[node as usize].stale += 1;
                return Prepared::Drop;
            }
            let f = self.flows[flow as usize].as_mut().expect("a MORE flow");
            if f.announce {
                // The batch's native packets enter the network with its first coded packet.
                f.announce = false;
                natives = k as u32;
            }
            // The source holds every native packet: a uniformly random combination.
            self.rng[node as usize].fill(&mut coeffs[..k]);
            self.stats[node as usize].source_tx += 1;
        } else {
            let (batch, ready) = (f.batch, f.ready);
            let Some(i) = self.find(node, flow) else {
                self.stats[node as usize].stale += 1;
                return Prepared::Drop;
            };
            let nf = &self.nodes[node as usize][i];
            if !ready || nf.batch != batch || nf.basis.rank() == 0 {
                self.stats[node as usize].stale += 1;
                return Prepared::Drop;
            }
            let mut draw = [0u8; MAX_BATCH];
            let rng = &mut self.rng[node as usize];
            rng.fill(&mut draw[..nf.basis.rank()]);
            let mut it = draw.iter().copied();
            coeffs = nf.basis.combination(|| it.next().unwrap_or(0));
            self.stats[node as usize].forward_tx += 1;
        }
        let f = self.flows[flow as usize].as_mut().expect("a MORE flow");
        f.coded_tx += 1;
        p.header_bytes = f.header_bytes;
        p.transport = Header::More(MoreCoded {
            batch: f.batch,
            coeffs,
        });
        Prepared::Broadcast { natives }
    }

    fn control_received(
        &mut self,
        node: u32,
        _from: u32,
        control: Control,
        routing: &Routing,
        _now: SimTime,
        out: &mut Vec<Action>,
    ) {
        let Control::MoreAck { flow, batch } = control else {
            return;
        };
        let Some(f) = self.flows.get_mut(flow as usize).and_then(Option::as_mut) else {
            return;
        };
        if node == f.src {
            if batch == f.batch {
                f.batch += 1;
                f.ready = false;
                f.retry_at = SimTime::ZERO;
            }
            return;
        }
        // A relay on the ACK's path flushes the batch.
        if let Some(i) = self.find(node, flow) {
            let nf = &mut self.nodes[node as usize][i];
            if nf.batch <= batch {
                nf.batch = batch + 1;
                let k = self.params.batch_size;
                nf.basis.clear(k);
                nf.credit = 0.0;
                out.push(Action::Purge { node, flow });
            }
        }
        self.send_ack(routing, flow, batch, node, 0, true, out);
    }

    fn unicast_failed(
        &mut self,
        node: u32,
        control: Control,
        attempt: u64,
        routing: &Routing,
        _now: SimTime,
        out: &mut Vec<Action>,
    ) {
        let Control::MoreAck { flow, batch } = control else {
            return;
        };
        if attempt < ACK_REQUEUES {
            let relayed = self.flow(flow).is_some_and(|f| f.dst != node);
            self.send_ack(routing, flow, batch, node, attempt + 1, relayed, out);
        }
    }

    fn candidates(&self, node: u32, flow: u32) -> Option<&[u32]> {
        let f = self.flow(flow)?;
        let Some(i) = f.position(node).filter(|_| f.ready) else {
            return Some(&[]);
        };
        let (a, b) = f.members[i].cands;
        Some(&f.candidates[a as usize..b as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Delivery ratios given as a matrix: `p[from][to]`.
    struct Matrix(Vec<Vec<f64>>);

    impl Links for Matrix {
        fn delivery(&self, from: u32, to: u32) -> f64 {
            self.0[from as usize][to as usize]
        }
        fn heard_by(&self, u: u32, f: &mut dyn FnMut(u32, f64)) {
            for v in 0..self.0.len() {
                if v != u as usize && self.0[v][u as usize] > 0.0 {
                    f(v as u32, self.0[v][u as usize]);
                }
            }
        }
    }

    fn matrix(n: usize, links: &[(u32, u32, f64)]) -> Matrix {
        let mut p = vec![vec![0.0; n]; n];
        for &(a, b, q) in links {
            p[a as usize][b as usize] = q;
            p[b as usize][a as usize] = q;
        }
        Matrix(p)
    }

    /// MORE carrying one flow 0 → `dst` over `n` nodes.
    fn more(n: usize, dst: u32, prune: f64) -> More {
        let params = MoreParams {
            batch_size: 32,
            prune_threshold: prune,
        };
        More::new(params, n, [(0, 0, dst, 1400)], 1, 7)
    }

    fn list(m: &More) -> Vec<(u32, f64, f64)> {
        m.flow(0)
            .unwrap()
            .list()
            .map(|(n, _, z, c)| (n, z, c))
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// The diamond: source 0 reaches forwarders 1 and 2 with 0.5 each, they reach the
    /// destination 3 with 1, nothing else. The source sends until one of them has the packet
    /// (z = 1/(1 − 0.25) = 4/3); 1 comes first in the order (equal distances go by id) and
    /// forwards what only it heard (4/3 · 0.5 · 0.5 = 1/3), 2 forwards all it heard (2/3): one
    /// forwarding per packet, credits 1/3 ÷ 2/3 = 0.5 and 2/3 ÷ 2/3 = 1.
    #[test]
    fn credits_follow_the_expected_transmissions_on_a_diamond() {
        let links = matrix(4, &[(0, 1, 0.5), (0, 2, 0.5), (1, 3, 1.0), (2, 3, 1.0)]);
        let mut m = more(4, 3, 0.0);
        assert!(m.start_batch_on(&links, 0, SimTime::ZERO));
        let l = list(&m);
        assert_eq!(l.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert!(close(l[0].1, 4.0 / 3.0), "{l:?}");
        assert!(close(l[1].1, 1.0 / 3.0) && close(l[1].2, 0.5), "{l:?}");
        assert!(close(l[2].1, 2.0 / 3.0) && close(l[2].2, 1.0), "{l:?}");
        // The source's candidates are both forwarders; each forwarder's, the destination.
        assert_eq!(m.candidates(0, 0), Some(&[1, 2][..]));
        assert_eq!(m.candidates(1, 0), Some(&[3][..]));
        assert_eq!(m.candidates(2, 0), Some(&[3][..]));
    }

    /// A chain 0 - 1 - 2 - 3 with perfect links plus node 4 behind the source: the forwarders
    /// are the nodes closer to the destination than the source, farthest first.
    #[test]
    fn forwarders_are_the_nodes_closer_than_the_source_farthest_first() {
        let links = matrix(
            5,
            &[
                (0, 1, 1.0),
                (1, 2, 1.0),
                (2, 3, 1.0),
                (4, 0, 1.0),
                (0, 2, 0.2),
            ],
        );
        let mut m = more(5, 3, 0.0);
        assert!(m.start_batch_on(&links, 0, SimTime::ZERO));
        let f = m.flow(0).unwrap();
        assert_eq!(f.forwarders().collect::<Vec<_>>(), vec![1, 2]);
        let d: Vec<f64> = f.list().map(|x| x.1).collect();
        assert!(d.windows(2).all(|w| w[0] > w[1]), "{d:?}");
        assert!(
            f.credit_of(4).is_none(),
            "node 4 is farther than the source"
        );
    }

    /// Node 3 hears the source rarely (0.02) but reaches the destination; it would make about
    /// 2 % of the transmissions, so the 10 % rule prunes it, and no pruning keeps it.
    #[test]
    fn forwarders_making_less_than_a_tenth_of_the_transmissions_are_pruned() {
        let edges = [(0, 1, 0.9), (1, 2, 0.9), (0, 3, 0.02), (3, 2, 1.0)];
        let links = matrix(4, &edges);
        let mut kept = more(4, 2, 0.0);
        assert!(kept.start_batch_on(&links, 0, SimTime::ZERO));
        let all: Vec<u32> = kept.flow(0).unwrap().forwarders().collect();
        assert_eq!(all.len(), 2, "{all:?}");
        let mut pruned = more(4, 2, PRUNE_THRESHOLD);
        assert!(pruned.start_batch_on(&links, 0, SimTime::ZERO));
        assert_eq!(
            pruned.flow(0).unwrap().forwarders().collect::<Vec<_>>(),
            vec![1]
        );
    }

    /// A new list for a running batch keeps its number and start; the list follows the links.
    #[test]
    fn a_new_list_for_a_running_batch_keeps_the_batch() {
        let mut m = more(4, 3, 0.0);
        let a = matrix(4, &[(0, 1, 0.9), (1, 3, 0.9)]);
        assert!(m.start_batch_on(&a, 0, SimTime::from_ms(10)));
        let b = matrix(4, &[(0, 2, 0.9), (2, 3, 0.9)]);
        assert!(m.start_batch_on(&b, 0, SimTime::from_ms(1010)));
        let f = m.flow(0).unwrap();
        assert_eq!((f.batch, f.started_at), (0, SimTime::from_ms(10)));
        assert_eq!(f.forwarders().collect::<Vec<_>>(), vec![2]);
        assert_eq!(f.lists, 2);
    }

    #[test]
    fn no_path_no_batch() {
        let links = matrix(3, &[(0, 1, 1.0)]);
        let mut m = more(3, 2, PRUNE_THRESHOLD);
        assert!(!m.start_batch_on(&links, 0, SimTime::ZERO));
    }

    fn coded(batch: u32, coeffs: Coeffs) -> Packet {
        Packet {
            flow: 0,
            seq: 0,
            src: 0,
            dst: 3,
            payload_bytes: 1400,
            header_bytes: 100,
            created: SimTime::ZERO,
            ttl: 64,
            level: 0,
            ecn: 0,
            transport: Header::More(MoreCoded { batch, coeffs }),
            control: Control::None,
            queue_len: 0,
        }
    }

    type Coeffs = crate::net::coding::Coeffs;

    fn unit(i: usize) -> Coeffs {
        let mut v = [0u8; MAX_BATCH];
        v[i] = 1;
        v
    }

    /// On the diamond, forwarder 2 (credit 1) earns one packet to send per packet heard from
    /// the source or from forwarder 1 (upstream), nothing from the destination's side; a
    /// packet of a later batch flushes what it held.
    #[test]
    fn a_forwarder_earns_its_credit_from_upstream_packets_only() {
        let links = matrix(
            4,
            &[
                (0, 1, 0.5),
                (0, 2, 0.5),
                (1, 3, 1.0),
                (2, 3, 1.0),
                (1, 2, 0.3),
            ],
        );
        let mut m = more(4, 3, 0.0);
        assert!(m.start_batch_on(&links, 0, SimTime::ZERO));
        let credit = m.flow(0).unwrap().credit_of(2).unwrap();
        let routing = Routing::default();
        let t = SimTime::ZERO;
        let mut out = vec![];
        let mut earned = 0.0;
        for i in 0..10 {
            m.receive(2, 0, &coded(0, unit(i)), &routing, t, &mut out);
            earned += credit;
        }
        let queued: u32 = out
            .iter()
            .map(|a| match a {
                Action::Originate {
                    node: 2,
                    flow: 0,
                    count,
                } => *count,
                other => panic!("{other:?}"),
            })
            .sum();
        // Sends while the counter is positive: ceil of the credit earned.
        assert_eq!(queued, earned.ceil() as u32);
        out.clear();
        m.receive(2, 3, &coded(0, unit(20)), &routing, t, &mut out);
        assert!(out.is_empty(), "the destination is downstream: {out:?}");
        assert_eq!(m.stats[2].innovative, 11);
        // What it sends is a combination of what it holds: batch 0, and 11 packets' span.
        let mut p = coded(0, [0; MAX_BATCH]);
        assert_eq!(
            m.prepare(2, &mut p, &routing, t),
            Prepared::Broadcast { natives: 0 }
        );
        let Header::More(h) = p.transport else {
            unreachable!()
        };
        assert_eq!(h.batch, 0);
        assert!(h
            .coeffs
            .iter()
            .enumerate()
            .all(|(i, &c)| c == 0 || i < 10 || i == 20));
        assert_eq!(m.stats[2].forward_tx, 1);
    }

    /// The destination decodes at rank K: it hands the batch's K native packets, numbered
    /// from batch · K, to the application, made when the batch started.
    #[test]
    fn the_destination_delivers_the_batch_at_rank_k() {
        let links = matrix(2, &[(0, 1, 0.7)]);
        let mut m = more(2, 1, PRUNE_THRESHOLD);
        let start = SimTime::from_ms(5);
        assert!(m.start_batch_on(&links, 0, start));
        let routing = Routing::default();
        let mut out = vec![];
        let mut rng = stream(3, 0, "test");
        let mut sent = 0;
        while out.is_empty() {
            let mut v = [0u8; MAX_BATCH];
            rng.fill(&mut v[..]);
            m.receive(1, 0, &coded(0, v), &routing, SimTime::from_ms(50), &mut out);
            sent += 1;
            assert!(sent <= 34);
        }
        assert!(sent >= 32);
        assert_eq!(
            out[0],
            Action::Deliver {
                flow: 0,
                first_seq: 0,
                count: 32,
                created: start
            }
        );
        let f = m.flow(0).unwrap();
        assert_eq!((f.batches, f.decode_delay_sum), (1, SimTime::from_ms(45)));
        // Packets of the decoded batch change nothing more.
        out.clear();
        m.receive(
            1,
            0,
            &coded(0, unit(0)),
            &routing,
            SimTime::from_ms(60),
            &mut out,
        );
        assert!(out.is_empty());
    }

    #[test]
    fn dijkstra_finds_the_cheapest_path() {
        // 0 <- 1 (cost 1), 0 <- 2 (cost 5), 1 <- 2 (cost 1): 2 reaches 0 at 2 through 1.
        let mut dist = vec![0.0; 3];
        let mut done = vec![false; 3];
        dijkstra(&mut dist, &mut done, 0, |u, relax| match u {
            0 => {
                relax(1, 1.0);
                relax(2, 5.0);
            }
            1 => relax(2, 1.0),
            _ => {}
        });
        assert_eq!(dist, vec![0.0, 1.0, 2.0]);
    }
}
