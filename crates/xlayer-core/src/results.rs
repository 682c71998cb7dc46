//! Turning the world's counters into result tables: the summary, one row per flow, one row
//! per node. Definitions are in `crate::metrics`.

use crate::app::FlowTransport;
use crate::metrics::{jain_index, log_utility, window};
use crate::net::routing::UNREACHABLE;
use crate::scenario::Scenario;
use crate::sim::SimTime;
use crate::world::World;

/// A cell of a result table.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
}

pub type Row = Vec<(&'static str, Value)>;

#[derive(Debug, Clone)]
pub struct Results {
    pub summary: Row,
    pub flows: Vec<Row>,
    pub nodes: Vec<Row>,
    /// Per-flow throughput per bin (`flow`, `t_s` = bin start, `throughput_bps`), when
    /// `output.timeseries_bin_s` is set; empty otherwise.
    pub timeseries: Vec<Row>,
    /// Per-connection TCP trace rows, when `output.tcp_trace` is set.
    pub tcp_trace: Vec<Row>,
    /// One row per attached optimizer (status, failure, counts); empty without optimizers.
    pub optimizers: Vec<Row>,
    /// Conflicts and dependency cycles between optimizers.
    pub conflicts: Vec<Row>,
    /// ECLAIR's core: every item optimizers read or tuning layers wrote, its score and whether
    /// it is in the core (`core_rows`); empty without optimizers.
    pub core: Vec<Row>,
}

impl Results {
    pub fn summary_value(&self, key: &str) -> Option<&Value> {
        self.summary.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub fn summary_f64(&self, key: &str) -> f64 {
        match self.summary_value(key) {
            Some(Value::Float(f)) => *f,
            Some(Value::Int(i)) => *i as f64,
            _ => f64::NAN,
        }
    }

    /// A numeric column of flow `flow`; NaN if it has none.
    pub fn flow_f64(&self, flow: usize, key: &str) -> f64 {
        cell_f64(&self.flows[flow], key).unwrap_or(f64::NAN)
    }

    /// A numeric column of node `node`; NaN if it has none.
    pub fn node_f64(&self, node: usize, key: &str) -> f64 {
        cell_f64(&self.nodes[node], key).unwrap_or(f64::NAN)
    }

    /// A numeric column summed over the nodes (a node without it counts 0).
    pub fn node_total(&self, key: &str) -> f64 {
        self.nodes.iter().filter_map(|n| cell_f64(n, key)).sum()
    }
}

/// A numeric cell (`Int` or `Float`) of a result row; `None` if the row has no such column or
/// it holds text.
pub fn cell_f64(row: &[(&'static str, Value)], key: &str) -> Option<f64> {
    match row.iter().find(|(k, _)| *k == key).map(|(_, v)| v) {
        Some(Value::Float(f)) => Some(*f),
        Some(Value::Int(i)) => Some(*i as f64),
        _ => None,
    }
}

/// The transport columns of a file-transfer connection's row: its name, completion time (from
/// the flow's start; NaN if unfinished), bytes delivered in order, `[retransmits,
/// fast_retransmits, timeouts]` and stream errors.
fn push_transfer(
    row: &mut Row,
    transport: String,
    start: SimTime,
    completed_at: Option<SimTime>,
    delivered_bytes: u64,
    [retransmits, fast, timeouts]: [u64; 3],
    stream_errors: u64,
) {
    use Value::*;
    let completion = completed_at.map_or(f64::NAN, |t| (t - start).as_secs_f64());
    row.push(("transport", Str(transport)));
    row.push(("completion_s", Float(completion)));
    row.push(("app_bytes", Int(delivered_bytes as i64)));
    row.push(("retransmits", Int(retransmits as i64)));
    row.push(("fast_retransmits", Int(fast as i64)));
    row.push(("timeouts", Int(timeouts as i64)));
    row.push(("stream_errors", Int(stream_errors as i64)));
}

fn secs(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

pub(crate) fn collect(sc: &Scenario, w: &World) -> Results {
    use Value::*;
    let mut flows = Vec::with_capacity(w.flows.len());
    let any_app = w.flows.iter().any(|f| f.app.is_some());
    let any_clap = w.conns.iter().any(|c| c.clap().is_some());
    let monitors: Vec<&crate::world::FlavorMonitor> =
        w.nodes.iter().filter_map(|n| n.flavor.as_deref()).collect();
    let mut rates = Vec::with_capacity(w.flows.len());
    let (mut all_delay_sum, mut all_delay_n) = (0u128, 0u64);
    let (mut sent_total, mut delivered_total) = (0u64, 0u64);
    for (f, st) in w.flows.iter().zip(&w.flow_stats) {
        let (a, b) = window(f.start, f.stop, w.warmup, w.end);
        let span = (b - a).as_secs_f64();
        let tput = if span > 0.0 {
            st.rx_payload_bytes as f64 * 8.0 / span
        } else {
            0.0
        };
        rates.push(tput);
        let d = &st.delays;
        let mean = d.mean_s();
        all_delay_sum += d.sum_ns();
        all_delay_n += d.count();
        sent_total += st.sent;
        delivered_total += st.delivered_of_sent;
        let hops = w.routing.static_routes().hops(f.src, f.dst);
        flows.push(vec![
            ("flow", Int(f.id as i64)),
            ("src", Int(f.src as i64)),
            ("dst", Int(f.dst as i64)),
            (
                "hops",
                Int(if hops == UNREACHABLE { -1 } else { hops as i64 }),
            ),
            (
                "rate",
                Str(match f.kind {
                    crate::app::SourceKind::Saturate => "saturate".into(),
                    crate::app::SourceKind::Cbr { interval } => {
                        format!("{}", f.payload_bytes as f64 * 8.0 / interval.as_secs_f64())
                    }
                }),
            ),
            (
                "hops_mean",
                Float(if st.hops_n > 0 {
                    st.hops_sum as f64 / st.hops_n as f64
                } else {
                    f64::NAN
                }),
            ),
            ("payload_bytes", Int(f.payload_bytes as i64)),
            ("sent", Int(st.sent as i64)),
            ("received", Int(st.delivered_of_sent as i64)),
            ("arrived_in_window", Int(st.received as i64)),
            ("throughput_bps", Float(tput)),
            // Datagrams that arrived more than once (counted once; TCP reports its own).
            ("duplicates", Int(st.duplicates as i64)),
            ("delay_mean_s", Float(mean)),
            (
                "delay_median_s",
                Float(d.quantile_ns(0.5).map(secs).unwrap_or(f64::NAN)),
            ),
            (
                "delay_p95_s",
                Float(d.quantile_ns(0.95).map(secs).unwrap_or(f64::NAN)),
            ),
            (
                "delivery_ratio",
                Float(if st.sent > 0 {
                    st.delivered_of_sent as f64 / st.sent as f64
                } else {
                    f64::NAN
                }),
            ),
            ("queue_drops", Int(st.queue_drops as i64)),
            ("link_drops", Int(st.link_drops as i64)),
            (
                "mac_attempts_mean",
                Float(if st.mac_frames > 0 {
                    st.mac_attempts as f64 / st.mac_frames as f64
                } else {
                    f64::NAN
                }),
            ),
        ]);
        let row = flows.last_mut().expect("just pushed");
        match f.transport {
            FlowTransport::Tcp(c) => {
                let conn = w.conns[c as usize]
                    .tcp()
                    .expect("a TCP flow's connection is TCP");
                let s = &conn.sender;
                let transport = format!(
                    "tcp-{}{}",
                    s.cc_name(),
                    if s.sack_requested() { "+sack" } else { "" }
                );
                let r = &conn.receiver;
                push_transfer(
                    row,
                    transport,
                    f.start,
                    r.completed_at,
                    r.delivered_bytes,
                    [
                        s.stats.retransmits,
                        s.stats.fast_retransmits,
                        s.stats.timeouts,
                    ],
                    r.stream_errors,
                );
            }
            FlowTransport::Clap(c) => {
                let conn = w.conns[c as usize]
                    .clap()
                    .expect("a CLAP flow's connection is CLAP");
                let s = &conn.sender.stats;
                let r = &conn.receiver;
                // Timeouts: the sender's tail timeouts (it resent what was not reported held).
                push_transfer(
                    row,
                    "clap".into(),
                    f.start,
                    r.completed_at,
                    r.delivered_bytes,
                    [s.retransmits, 0, s.tail_timeouts],
                    r.stream_errors,
                );
            }
            FlowTransport::Tfrc(_) | FlowTransport::Udp => {
                row.push(("transport", Str(transport_name(w, f))));
                row.push(("completion_s", Float(f64::NAN)));
                row.push(("app_bytes", Int(st.rx_payload_bytes as i64)));
                row.push(("retransmits", Int(0)));
                row.push(("fast_retransmits", Int(0)));
                row.push(("timeouts", Int(0)));
                row.push(("stream_errors", Int(0)));
            }
        }
        if any_clap {
            // CLAP's probes and NACKs (`transport::clap`); zeros and NaN for other flows.
            let conn = f.transport.conn().and_then(|c| w.conns[c as usize].clap());
            let nan = f64::NAN;
            let (probes, replies, probe_bytes, overhead, rtt, path, nacks, nack_bytes, rate) =
                match conn {
                    Some(c) => {
                        let s = &c.sender.stats;
                        // The sender probes while it is active: from the flow's start to the
                        // file's completion, or to the flow's stop (or the run's end).
                        let until = c
                            .receiver
                            .completed_at
                            .unwrap_or(f.stop.min(w.end))
                            .max(f.start);
                        let active = (until - f.start).as_secs_f64();
                        let mean = |sum: f64, n: u64| if n > 0 { sum / n as f64 } else { nan };
                        (
                            s.probes_sent,
                            s.probe_replies,
                            c.probe_bytes,
                            if active > 0.0 {
                                c.probe_bytes as f64 * 8.0 / active
                            } else {
                                nan
                            },
                            mean(s.probe_rtt_sum_s, s.probe_replies),
                            Some(c.sender.path_rate_bps())
                                .filter(|r| r.is_finite())
                                .unwrap_or(nan),
                            c.receiver.nacks_sent,
                            c.nack_bytes,
                            mean(s.rate_sum_bps, s.rate_samples),
                        )
                    }
                    None => (0, 0, 0, nan, nan, nan, 0, 0, nan),
                };
            row.push(("clap_probes", Int(probes as i64)));
            row.push(("clap_probe_replies", Int(replies as i64)));
            row.push(("clap_probe_bytes", Int(probe_bytes as i64)));
            row.push(("clap_probe_overhead_bps", Float(overhead)));
            row.push(("clap_probe_rtt_mean_s", Float(rtt)));
            // The last path rate probed (NaN: no relay stamped it, as on a one-hop path).
            row.push(("clap_path_rate_bps", Float(path)));
            row.push(("clap_nacks", Int(nacks as i64)));
            row.push(("clap_nack_bytes", Int(nack_bytes as i64)));
            row.push(("clap_rate_mean_bps", Float(rate)));
        }
        if !monitors.is_empty() {
            // Passive flavor detection (`transport::flavor`) at the first detecting node that
            // saw the flow: its decision, and its window estimate's error against the sender's
            // cwnd (mean |estimate − cwnd| / cwnd over the flow's new data segments).
            let key = f.id as u64;
            let seen = monitors
                .iter()
                .find(|m| m.detector.detection(key).is_some());
            let d = seen.and_then(|m| m.detector.detection(key));
            let err = seen
                .and_then(|m| m.window_error.get(f.id as usize))
                .filter(|e| e.1 > 0)
                .map_or(f64::NAN, |e| e.0 / e.1 as f64);
            row.push((
                "flavor_detected",
                Str(d.map_or("", |d| d.flavor.name()).into()),
            ));
            row.push(("flavor_sack", Int(d.is_some_and(|d| d.sack) as i64)));
            row.push((
                "flavor_confidence",
                Float(d.map_or(f64::NAN, |d| d.confidence)),
            ));
            row.push((
                "flavor_decided_s",
                Float(
                    d.and_then(|d| d.decided_at)
                        .map_or(f64::NAN, |t| t.as_secs_f64()),
                ),
            ));
            row.push((
                "flavor_fast_recoveries",
                Int(d.map_or(0, |d| d.fast_recoveries) as i64),
            ));
            row.push(("flavor_window_error", Float(err)));
        }
        if let Some(more) = w.forwarding.more() {
            // MORE (`xl::more`): batches decoded, their mean decoding delay (from the batch's
            // start at the source), coded packets sent for the flow (source and forwarders) in
            // all and per native packet decoded, the mean forwarder list size, and the source's
            // ETX distance to the destination when its first list was made.
            let m = more.flow(f.id);
            let k = more.params.batch_size as f64;
            let (batches, delay, coded, lists, fwd, etx) =
                m.map_or((0, 0.0, 0, 0, 0, f64::NAN), |m| {
                    (
                        m.batches,
                        m.decode_delay_sum.as_secs_f64(),
                        m.coded_tx,
                        m.lists,
                        m.forwarders_sum,
                        m.path_etx,
                    )
                });
            let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
            row.push(("more_batches", Int(batches as i64)));
            row.push(("more_decode_delay_s", Float(ratio(delay, batches as f64))));
            row.push(("more_coded_tx", Int(coded as i64)));
            row.push((
                "more_tx_per_packet",
                Float(ratio(coded as f64, batches as f64 * k)),
            ));
            row.push(("more_forwarders", Float(ratio(fwd as f64, lists as f64))));
            row.push(("more_path_etx", Float(etx)));
        }
        if any_app {
            // Request-driven applications (`app::traffic`): requests (pages, e-mails) and
            // objects asked for and delivered over the run, and their mean response times.
            let a = f.app.as_ref().map(|a| a.stats).unwrap_or_default();
            let mean = |sum: f64, n: u64| if n > 0 { sum / n as f64 } else { f64::NAN };
            row.push((
                "app",
                Str(f.app.as_ref().map_or("", |a| a.model.name()).into()),
            ));
            row.push(("requests", Int(a.requests as i64)));
            row.push(("requests_done", Int(a.requests_done as i64)));
            row.push((
                "request_time_mean_s",
                Float(mean(a.request_time_s, a.requests_done)),
            ));
            row.push(("objects", Int(a.objects as i64)));
            row.push(("objects_done", Int(a.objects_done as i64)));
            row.push((
                "object_time_mean_s",
                Float(mean(a.object_time_s, a.objects_done)),
            ));
        }
    }
    let nodes = w
        .nodes
        .iter()
        .map(|n| {
            let m = n.mac.stats;
            let mut row = vec![
                ("node", Int(n.id as i64)),
                ("x", Float(n.x)),
                ("y", Float(n.y)),
                ("neighbors", Int(w.neighbors[n.id as usize].len() as i64)),
                ("originated", Int(n.net.originated as i64)),
                ("forwarded", Int(n.net.forwarded as i64)),
                ("delivered", Int(n.net.delivered as i64)),
                ("mac_tx", Int(m.data_tx as i64)),
                ("mac_rts", Int(m.rts_tx as i64)),
                ("mac_retries", Int(m.retries as i64)),
                ("drops_retry_limit", Int(m.drops_retry_limit as i64)),
                ("drops_queue", Int(m.drops_queue as i64)),
                ("drops_ttl", Int(n.net.drops_ttl as i64)),
                ("drops_no_route", Int(n.net.drops_no_route as i64)),
                ("internal_collisions", Int(m.internal_collisions as i64)),
                ("acks_sent", Int(m.acks_sent as i64)),
                ("duplicates", Int(m.duplicates as i64)),
                ("rx_ok", Int(n.phy.rx_ok as i64)),
                ("rx_errors", Int(n.phy.rx_errors as i64)),
                ("rx_link_lost", Int(n.net.rx_link_lost as i64)),
                ("drops_node_off", Int(n.net.drops_node_off as i64)),
                ("ctrl_tx", Int(n.net.ctrl_tx as i64)),
                ("ctrl_tx_bytes", Int(n.net.ctrl_tx_bytes as i64)),
                ("ctrl_airtime_s", Float(n.net.ctrl_airtime_ns as f64 * 1e-9)),
                ("ctrl_rx", Int(n.net.ctrl_rx as i64)),
                ("ctrl_drops_queue", Int(n.net.ctrl_drops_queue as i64)),
                ("ctrl_relayed", Int(n.net.ctrl_relayed as i64)),
                ("drops_dest_queue", Int(n.net.drops_dest_queue as i64)),
                (
                    "drops_dest_queue_transit",
                    Int(n.net.drops_dest_queue_transit as i64),
                ),
            ];
            if !w.wired.is_empty() {
                // Wired links (`mac::wired`): what the node's outgoing directions sent, refused
                // to a full queue, and lost on the wire.
                let mut st = crate::mac::wired::WiredStats::default();
                for l in w.wired.links.iter().filter(|l| l.from == n.id) {
                    st.tx += l.stats.tx;
                    st.tx_bytes += l.stats.tx_bytes;
                    st.drops_queue += l.stats.drops_queue;
                    st.lost += l.stats.lost;
                }
                row.push(("wired_tx", Int(st.tx as i64)));
                row.push(("wired_tx_bytes", Int(st.tx_bytes as i64)));
                row.push(("wired_drops_queue", Int(st.drops_queue as i64)));
                row.push(("wired_lost", Int(st.lost as i64)));
            }
            if !w.noise.is_empty() {
                // Injected noise (`phy::noise`): time under noise over the run, and the frames
                // lost while locked whose reception overlapped it (part of `rx_errors`).
                let end = w.now().min(w.end);
                row.push(("noise_s", Float(n.phy.noise_time(end).as_secs_f64())));
                row.push(("rx_errors_noise", Int(n.phy.rx_errors_noise as i64)));
            }
            if let Some(z) = n.mac.zmac() {
                row.extend(zmac_columns(z));
            }
            if let Some(more) = w.forwarding.more() {
                // MORE (`xl::more`): coded packets sent as a source and as a forwarder, coded
                // packets heard for flows it forwards or decodes (innovative or not), batch ACKs
                // sent, packets dropped leaving the queue (a flushed batch, or no path yet).
                let st = more.stats[n.id as usize];
                row.extend([
                    ("more_source_tx", Int(st.source_tx as i64)),
                    ("more_forward_tx", Int(st.forward_tx as i64)),
                    ("more_innovative", Int(st.innovative as i64)),
                    ("more_redundant", Int(st.redundant as i64)),
                    ("more_acks_tx", Int(st.acks_tx as i64)),
                    ("more_stale", Int(st.stale as i64)),
                ]);
            }
            if let Some(f) = w.gate.fusion() {
                // Fusion (`xl::fusion`): time with the congestion bit set, packets held for a
                // congested next hop, own packets held for want of a token, interface queue
                // overflows of packets in transit (all overflows are in `drops_queue`).
                let st = &f.nodes[n.id as usize];
                row.extend([
                    (
                        "fusion_congested_s",
                        Float(st.congested_time(w.now()).as_secs_f64()),
                    ),
                    ("fusion_blocked", Int(st.blocked as i64)),
                    ("fusion_rate_limited", Int(st.rate_limited as i64)),
                    ("fusion_drops_queue_transit", Int(st.drops_transit as i64)),
                ]);
            }
            row
        })
        .collect();
    let aggregate: f64 = rates.iter().sum();
    let holds = w.scheduler.holds();
    let mut summary = vec![
        ("name", Str(sc.name.clone())),
        ("seed", Int(sc.seed as i64)),
        ("xlayer_version", Str(crate::VERSION.to_string())),
        ("nodes", Int(w.nodes.len() as i64)),
        ("flows", Int(w.flows.len() as i64)),
        ("sim_time_s", Float(w.now().as_secs_f64())),
        ("duration_s", Float(sc.duration_s)),
        ("warmup_s", Float(sc.warmup_s)),
        ("aggregate_throughput_bps", Float(aggregate)),
        ("jain_index", Float(jain_index(&rates))),
        ("log_utility", Float(log_utility(&rates))),
        (
            "starved_flows",
            Int(rates.iter().filter(|&&r| r < 1.0).count() as i64),
        ),
        (
            "delivery_ratio",
            Float(if sent_total > 0 {
                delivered_total as f64 / sent_total as f64
            } else {
                f64::NAN
            }),
        ),
        (
            "delay_mean_s",
            Float(if all_delay_n > 0 {
                all_delay_sum as f64 * 1e-9 / all_delay_n as f64
            } else {
                f64::NAN
            }),
        ),
        (
            "mac_level_use",
            Str(w
                .scheduler
                .level_use()
                .map(|u| {
                    u.iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_default()),
        ),
        ("backpressure_holds", Int(holds as i64)),
        // Network-layer control traffic of every node (routing, link probes, DCLO's matching).
        (
            "ctrl_tx",
            Int(w.nodes.iter().map(|n| n.net.ctrl_tx as i64).sum()),
        ),
        (
            "ctrl_tx_bytes",
            Int(w.nodes.iter().map(|n| n.net.ctrl_tx_bytes as i64).sum()),
        ),
        (
            "ctrl_airtime_s",
            Float(secs(w.nodes.iter().map(|n| n.net.ctrl_airtime_ns).sum())),
        ),
        // DCLO: matching intervals run, and links matched per interval on average.
        (
            "dclo_intervals",
            Int(w.scheduler.dclo().map(|d| d.current as i64).unwrap_or(0)),
        ),
        (
            "dclo_links_per_interval",
            Float(w.scheduler.dclo().map_or(0.0, |d| d.links_per_interval())),
        ),
        (
            "events",
            Int((w.queue.executed() - w.optimizers.engine_events) as i64),
        ),
        ("wall_s", Float(w.wall.as_secs_f64())),
        ("optimizers", Int(w.optimizers.slots.len() as i64)),
        (
            "optimizer_failures",
            Int(w
                .optimizers
                .slots
                .iter()
                .filter(|s| s.status == crate::tune::optimizer::Status::Failed)
                .count() as i64),
        ),
        (
            "optimizer_conflicts",
            Int(w.optimizers.conflicts.len() as i64),
        ),
        (
            "optimizer_wall_s",
            Float(w.optimizers.callback_wall.as_secs_f64()),
        ),
        (
            "optimizer_memory_bytes",
            Int(if w.optimizers.slots.is_empty() {
                0
            } else {
                w.optimizers.memory_bytes() as i64
            }),
        ),
    ];
    if let Some(z0) = w.nodes.first().and_then(|n| n.mac.zmac()) {
        // When the set-up phase ended (data could go), and the nodes it left without a slot.
        let end = w.zmac_setup.and_then(|s| s.end).unwrap_or(z0.p.setup_end);
        let uncoloured: Vec<String> = w
            .nodes
            .iter()
            .filter(|n| n.mac.zmac().is_some_and(|z| z.colour.slot.is_none()))
            .map(|n| n.id.to_string())
            .collect();
        summary.push(("zmac_setup_end_s", Float(end.as_secs_f64())));
        summary.push(("zmac_uncoloured", Int(uncoloured.len() as i64)));
        if !uncoloured.is_empty() {
            let shown = uncoloured.len().min(20);
            summary.push((
                "warning",
                Str(format!(
                    "Z-MAC's set-up ended at {:.3} s with {} of {} nodes without a slot (they contend \
                     as non-owners in every slot; raise mac.zmac.setup_max_s or setup_s): nodes {}{}",
                    end.as_secs_f64(),
                    uncoloured.len(),
                    w.nodes.len(),
                    uncoloured[..shown].join(", "),
                    if shown < uncoloured.len() { ", …" } else { "" }
                )),
            ));
        }
    }
    let packets: u64 = w.flow_stats.iter().map(|s| s.received).sum();
    summary.extend(eclair_summary(
        &w.optimizers,
        w.queue.executed() - w.optimizers.engine_events,
        packets,
    ));
    let mut timeseries = Vec::new();
    if let Some(bin) = w.timeseries_bin {
        let bins = w.now().ns().div_ceil(bin.ns()) as usize;
        for (f, st) in w.flows.iter().zip(&w.flow_stats) {
            for i in 0..bins {
                let bytes = st.bin_bytes.get(i).copied().unwrap_or(0);
                let start = i as u64 * bin.ns();
                let width = bin.ns().min(w.now().ns() - start) as f64 * 1e-9;
                timeseries.push(vec![
                    ("flow", Int(f.id as i64)),
                    ("t_s", Float(start as f64 * 1e-9)),
                    ("throughput_bps", Float(bytes as f64 * 8.0 / width)),
                ]);
            }
        }
    }
    let tcp_trace = w
        .tcp_trace
        .iter()
        .flatten()
        .map(|r| {
            vec![
                ("flow", Int(r.flow as i64)),
                ("t_s", Float(r.time.as_secs_f64())),
                ("event", Str(r.event.to_string())),
                ("cwnd_segments", Float(r.cwnd)),
                (
                    "ssthresh_segments",
                    Float(if r.ssthresh >= 1e15 {
                        f64::NAN
                    } else {
                        r.ssthresh
                    }),
                ),
                ("srtt_s", Float(r.srtt_s)),
                ("rto_s", Float(r.rto_s)),
                ("retransmits", Int(r.retransmits as i64)),
                ("timeouts", Int(r.timeouts as i64)),
            ]
        })
        .collect();
    Results {
        summary,
        flows,
        nodes,
        timeseries,
        tcp_trace,
        optimizers: optimizer_rows(w),
        conflicts: conflict_rows(w),
        core: core_rows(&w.optimizers),
    }
}

fn transport_name(w: &World, f: &crate::app::Flow) -> String {
    if w.forwarding.more().is_some_and(|m| m.flow(f.id).is_some()) {
        return "more".into();
    }
    match f.transport.conn() {
        None => "udp".into(),
        Some(c) => w.conns[c as usize].label().into(),
    }
}

/// The Z-MAC columns of a node's row in the node table (only present when Z-MAC runs).
fn zmac_columns(z: &crate::mac::zmac::Zmac) -> Row {
    use Value::{Float, Int};
    let s = z.stats;
    vec![
        ("zmac_slot", Int(z.colour.slot.map_or(-1, |s| s as i64))),
        ("zmac_frame", Int(z.colour.frame as i64)),
        ("zmac_settled_s", Float(s.settled_at.as_secs_f64())),
        (
            "zmac_slots_owned_per_s",
            Float(
                1e9 / (z.p.slot.ns() as f64 * z.colour.frame as f64)
                    * z.colour.slot.map_or(0.0, |_| 1.0),
            ),
        ),
        ("zmac_one_hop", Int(z.colour.one_hop_count() as i64)),
        ("zmac_two_hop", Int(z.colour.two_hop_count() as i64)),
        ("zmac_state_tx", Int(s.state_tx as i64)),
        ("zmac_ecn_tx", Int(s.ecn_tx as i64)),
        ("zmac_ecn_forwarded", Int(s.ecn_forwarded as i64)),
        ("zmac_beacons_tx", Int(s.beacons_tx as i64)),
        (
            "zmac_ctrl_frames",
            Int((s.state_tx + s.ecn_tx + s.ecn_forwarded + s.beacons_tx) as i64),
        ),
        (
            "zmac_ctrl_airtime_s",
            Float(s.ctrl_airtime_ns as f64 * 1e-9),
        ),
        ("zmac_hcl_s", Float(s.hcl_ns as f64 * 1e-9)),
        ("zmac_owner_attempts", Int(s.owner_attempts as i64)),
        ("zmac_non_owner_attempts", Int(s.non_owner_attempts as i64)),
        ("zmac_owner_data_tx", Int(s.owner_data_tx as i64)),
        ("zmac_non_owner_data_tx", Int(s.non_owner_data_tx as i64)),
        ("zmac_deferrals", Int(s.deferrals as i64)),
        ("zmac_hcl_skips", Int(s.hcl_skips as i64)),
    ]
}

/// Rows of the `optimizers` result table.
fn optimizer_rows(w: &World) -> Vec<Row> {
    use Value::*;
    w.optimizers
        .slots
        .iter()
        .enumerate()
        .map(|(id, s)| {
            vec![
                ("id", Int(id as i64)),
                ("name", Str(s.name.clone())),
                ("language", Str(s.language.to_string())),
                ("node", Int(s.node as i64)),
                ("status", Str(s.status.name().to_string())),
                (
                    "ended_s",
                    Float(s.ended_at.map(|t| t.as_secs_f64()).unwrap_or(f64::NAN)),
                ),
                ("error", Str(s.error.clone().unwrap_or_default())),
                ("deliveries", Int(s.deliveries as i64)),
                ("events", Int(s.events as i64)),
                ("timers", Int(s.timers as i64)),
                ("sets", Int(s.sets as i64)),
            ]
        })
        .collect()
}

/// Rows of the `conflicts` result table.
fn conflict_rows(w: &World) -> Vec<Row> {
    use Value::*;
    w.optimizers
        .conflicts
        .iter()
        .map(|c| {
            vec![
                ("kind", Str(c.kind.to_string())),
                ("t_s", Float(c.time.as_secs_f64())),
                ("node", Int(c.node as i64)),
                ("param", Str(c.param.clone())),
                ("optimizer_id", Int(c.optimizer_id as i64)),
                ("optimizer", Str(c.optimizer.clone())),
                ("value", Float(c.value)),
                ("other_id", Int(c.other_id as i64)),
                ("other", Str(c.other.clone())),
                ("other_value", Float(c.other_value)),
                ("other_t_s", Float(c.other_time.as_secs_f64())),
            ]
        })
        .collect()
}

// --- ECLAIR's evaluation metrics and the core's report --------------------------------------
// ECLAIR's evaluation metrics as numbers in the results (the document's "Metrics for CLF
// architecture evaluation": time and space overhead, user-kernel crossings, data-path delay),
// and the core's report: the summary's `eclair_*` keys and the `core` table.
//
// - Time overhead: the wall time the optimizing subsystem spends (deliveries off the data
//   path with the optimizers' callbacks, their timers, per-packet hooks), per simulation
//   event (`eclair_time_per_event_ns`) and per packet delivered to a flow's destination
//   (`eclair_time_per_packet_ns`); wall-clock, so left out of the result hashes.
// - Space overhead: bytes the subsystem holds (`eclair_memory_bytes`, the same as
//   `optimizer_memory_bytes`), of which the core's item table (`eclair_core_memory_bytes`).
// - Crossings between the core and Python optimizers (`eclair_crossings`): each call of a
//   Python callback and each call the callback makes into the core through its context; the
//   analogue of ECLAIR's user-kernel crossings. `eclair_python_invocations` is the first part.
// - Data-path delay (`eclair_data_path_delay_s`): the mean processing latency the per-packet
//   hooks' optimizers add to a packet that went through a hook (`eclair_hooked_packets`); the
//   packet is held that long before it reaches its transport (`World::sink`), so the delay is
//   in the flow's measured delay too. Off the data path (ECLAIR) it is 0.

use crate::tune::core::Core;
use crate::tune::optimizer::OptimizerHost;

/// Summary keys whose values are wall-clock measurements or depend on them (the measured costs
/// choose the core), hence differ from run to run; `scripts/result_hashes.py` leaves them out.
pub const ECLAIR_WALL_CLOCK_KEYS: &[&str] = &[
    "eclair_wall_s",
    "eclair_time_per_event_ns",
    "eclair_time_per_packet_ns",
    "eclair_cost_read_layer_ns",
    "eclair_cost_read_core_ns",
    "eclair_cost_write_core_ns",
    "eclair_core_items",
    "eclair_core_hits",
    "eclair_core_gain_ns_per_s",
];

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for x in xs.filter(|x| x.is_finite()) {
        s += x;
        n += 1;
    }
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// The `eclair_*` summary keys; `events` the simulation's events, `packets` the packets the
/// flows' destinations received. A cost nothing measured, or a time per nothing, is 0 (not
/// NaN, so that summaries compare equal).
pub fn eclair_summary(host: &OptimizerHost, events: u64, packets: u64) -> Row {
    use Value::{Float, Int};
    let core: &Core = &host.core;
    let wall = host.subsystem_wall.as_secs_f64();
    let per = |n: u64| {
        if n == 0 {
            0.0
        } else {
            wall * 1e9 / n as f64
        }
    };
    let memory = if host.slots.is_empty() {
        0
    } else {
        host.memory_bytes()
    };
    let costs: Vec<(f64, f64, f64)> = core.items.iter().map(|i| i.measured()).collect();
    vec![
        ("eclair_wall_s", Float(wall)),
        ("eclair_time_per_event_ns", Float(per(events))),
        ("eclair_time_per_packet_ns", Float(per(packets))),
        ("eclair_memory_bytes", Int(memory as i64)),
        (
            "eclair_core_memory_bytes",
            Int(if host.slots.is_empty() {
                0
            } else {
                core.memory_bytes() as i64
            }),
        ),
        ("eclair_crossings", Int(host.crossings as i64)),
        (
            "eclair_python_invocations",
            Int(host.python_invocations as i64),
        ),
        ("eclair_hooked_packets", Int(host.hooked_packets as i64)),
        (
            "eclair_data_path_delay_s",
            Float(if host.hooked_packets == 0 {
                0.0
            } else {
                host.hook_delay.as_secs_f64() / host.hooked_packets as f64
            }),
        ),
        ("eclair_core_items", Int(core.core_items() as i64)),
        ("eclair_items", Int(core.items.len() as i64)),
        (
            "eclair_reads",
            Int(core.items.iter().map(|i| i.reads as i64).sum()),
        ),
        (
            "eclair_writes",
            Int(core.items.iter().map(|i| i.writes as i64).sum()),
        ),
        (
            "eclair_core_hits",
            Int(core.items.iter().map(|i| i.hits as i64).sum()),
        ),
        ("eclair_core_mismatches", Int(core.mismatches as i64)),
        ("eclair_core_selections", Int(core.selections as i64)),
        ("eclair_core_gain_ns_per_s", Float(core.gain_ns_per_s)),
        (
            "eclair_cost_read_layer_ns",
            Float(mean(costs.iter().map(|c| c.0))),
        ),
        (
            "eclair_cost_read_core_ns",
            Float(mean(std::iter::once(core.cached_cost()))),
        ),
        (
            "eclair_cost_write_core_ns",
            Float(mean(costs.iter().map(|c| c.2))),
        ),
    ]
}

/// Rows of the `core` result table: every item an optimizer read or a tuning layer wrote, its
/// counts, frequencies and score at the last selection, and whether it is in the core.
pub fn core_rows(host: &OptimizerHost) -> Vec<Row> {
    use Value::{Float, Int, Str};
    host.core
        .items
        .iter()
        .map(|i| {
            let (c_r, _, c_w) = i.measured();
            vec![
                ("node", Int(i.node as i64)),
                ("item", Str(i.name.to_string())),
                ("layer", Str(i.spec.layer.to_string())),
                ("cacheable", Int(i.cacheable as i64)),
                ("reads", Int(i.reads as i64)),
                ("writes", Int(i.writes as i64)),
                ("hits", Int(i.hits as i64)),
                ("reads_per_s", Float(i.reads_per_s)),
                ("writes_per_s", Float(i.writes_per_s)),
                ("cost_read_layer_ns", Float(c_r)),
                ("cost_write_core_ns", Float(c_w)),
                ("score", Float(i.score)),
                ("in_core", Int(i.in_core as i64)),
            ]
        })
        .collect()
}
