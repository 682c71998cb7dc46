//! Builds a [`World`] from a validated [`Scenario`]: positions, radio thresholds, neighbour
//! lists (found through a uniform grid of cells, so building costs O(n · neighbours)), routes,
//! and flows. Topology problems — an unreachable destination above all — are reported here,
//! before anything runs.

use std::collections::HashMap;

use rand::Rng;
use rand_distr::Distribution;

use crate::app::{cbr_interval, Flow, FlowTransport, SourceKind};
use crate::error::XlError;
use crate::mac::{Mac, MacParams};
use crate::net::{routing::UNREACHABLE, StaticRoutes};
use crate::phy::error_model::default_sinr_threshold_db;
use crate::phy::propagation::{dbm_to_mw, delay_ns, mw_to_dbm, Propagation};
use crate::phy::{thermal_noise_mw, PhyConfig, PhyTiming, PreambleDetection};
use crate::scenario::{
    rate_set, ClapOptions, ErrorModelKind, Fading, PropagationKind, RateSpec, Scenario, Standard,
    TcpOptions, TopologyKind, WeakInterference,
};
use crate::sim::rng::{stream, GLOBAL};
use crate::sim::Event;
use crate::sim::SimTime;
use crate::transport::clap::ClapConfig;
use crate::transport::conn::{ClapConn, Conn, TcpConn, TfrcConn, TFRC_HEADER_BYTES};
use crate::transport::tcp::{rfc5681_initial_window, CcKind, TcpConfig, TcpReceiver, TcpSender};
use crate::transport::tfrc::TfrcConfig;
use crate::tune::optimizer::{attach, builtin, builtin_error, AttachOptions};
use crate::world::{ChannelVariation, Link, Node, ScenarioChange, World};

/// The transport fields of a flow (explicit or random).
struct FlowTransportSpec<'a> {
    transport: &'a str,
    cc: Option<&'a str>,
    sack: bool,
    size: Option<u64>,
    tcp: Option<&'a TcpOptions>,
    clap: Option<&'a ClapOptions>,
    rate: RateSpec,
    /// The flow's application writes over time (`[flows.app]`).
    app_limited: bool,
}

/// Node positions in topology order.
pub fn positions(sc: &Scenario) -> Vec<(f64, f64)> {
    let t = &sc.topology;
    match t.kind {
        TopologyKind::Explicit => t.positions.iter().map(|p| (p[0], p[1])).collect(),
        TopologyKind::Grid => {
            let (rows, cols, s) = (
                t.rows.unwrap_or(1),
                t.cols.unwrap_or(1),
                t.spacing_m.unwrap_or(1.0),
            );
            (0..rows * cols)
                .map(|i| ((i % cols) as f64 * s, (i / cols) as f64 * s))
                .collect()
        }
        TopologyKind::Chain => (0..t.count.unwrap_or(1))
            .map(|i| (i as f64 * t.spacing_m.unwrap_or(1.0), 0.0))
            .collect(),
        TopologyKind::Random => {
            let mut rng = stream(t.seed.unwrap_or(sc.seed), GLOBAL, "topology.random");
            let (w, h) = (t.width_m.unwrap_or(1.0), t.height_m.unwrap_or(1.0));
            (0..t.count.unwrap_or(1))
                .map(|_| (rng.gen::<f64>() * w, rng.gen::<f64>() * h))
                .collect()
        }
        TopologyKind::AccessPoint => {
            // The access point at the origin; the servers 1000 km away on a line (no radio
            // reaches them: they hang on their wires); client i at its distance, the clients
            // spread evenly around the access point.
            let n = t.count.unwrap_or(1);
            let mut rng = stream(
                t.seed.unwrap_or(sc.seed),
                GLOBAL,
                "topology.access_point.distances",
            );
            let mut pos = vec![(0.0, 0.0)];
            pos.extend((0..n).map(|i| (-1e6 - 1000.0 * i as f64, 0.0)));
            for i in 0..n {
                let d = match (t.distance_m, t.distance_std_m) {
                    (Some(mean), Some(std)) if std > 0.0 => {
                        let z: f64 = rand_distr::StandardNormal.sample(&mut rng);
                        // A client stays at least a metre away.
                        (mean + std * z).max(1.0)
                    }
                    (Some(d), _) => d,
                    (None, _) => t.distances_m[i as usize],
                };
                let a = 2.0 * std::f64::consts::PI * i as f64 / n as f64;
                pos.push((d * a.cos(), d * a.sin()));
            }
            pos
        }
    }
}

/// The wires a topology brings: the access point's servers, each on a wire to the access
/// point whose one-way delay is half its round trip (fixed, or drawn from the distribution of
/// the document's Table II; negative draws become 0), at `server_rate_bps` with a queue
/// deep enough (1000 packets) that the wireless hop stays the bottleneck.
pub fn topology_wired(sc: &Scenario) -> Vec<crate::scenario::WiredSpec> {
    let t = &sc.topology;
    if t.kind != TopologyKind::AccessPoint {
        return Vec::new();
    }
    let mut rng = stream(
        t.seed.unwrap_or(sc.seed),
        GLOBAL,
        "topology.access_point.rtts",
    );
    let rtt = t.rtt_s.unwrap_or(0.1);
    (1..=t.count.unwrap_or(1))
        .map(|server| {
            let r = match t.rtt_distribution.as_deref().unwrap_or("fixed") {
                "normal" => {
                    let z: f64 = rand_distr::StandardNormal.sample(&mut rng);
                    rtt + t.rtt_std_s.unwrap_or(0.0) * z
                }
                "exponential" => {
                    let e: f64 = rand_distr::Exp1.sample(&mut rng);
                    rtt * e
                }
                "uniform" => {
                    let (a, b) = (t.rtt_min_s.unwrap_or(0.0), t.rtt_max_s.unwrap_or(0.2));
                    a + (b - a) * rng.gen::<f64>()
                }
                _ => rtt,
            };
            crate::scenario::WiredSpec {
                a: server,
                b: 0,
                rate_bps: t.server_rate_bps.unwrap_or(100e6),
                delay_s: (r / 2.0).max(0.0),
                queue_packets: 1000,
                queue_bytes: None,
                loss: 0.0,
                reverse_loss: None,
            }
        })
        .collect()
}

/// Radio thresholds and the cut-off below which a signal is not delivered at all.
struct Thresholds {
    rx_dbm: f64,
    cs_dbm: f64,
    cutoff_dbm: f64,
}

fn thresholds(
    sc: &Scenario,
    prop: &Propagation,
    tx_dbm: f64,
    noise_dbm: f64,
) -> Result<Thresholds, XlError> {
    let r = &sc.radio;
    let (def_rx, def_cs) = match r.standard {
        // ns-2 Phy/WirelessPhy defaults: RXThresh_ 3.652e-10 W (250 m), CSThresh_ 1.559e-11 W (550 m).
        Standard::Ns2 => (mw_to_dbm(3.652e-7), mw_to_dbm(1.559e-8)),
        // ns-3 WifiPhy defaults: RxSensitivity -101 dBm, CcaEdThreshold -62 dBm.
        _ => (-101.0, -62.0),
    };
    if r.propagation == PropagationKind::Range {
        // Everything in range arrives at full power; nothing else arrives.
        let thr = tx_dbm - 3.0;
        return Ok(Thresholds {
            rx_dbm: thr,
            cs_dbm: thr,
            cutoff_dbm: thr,
        });
    }
    let rx_dbm = match (r.tx_range_m, r.rx_threshold_dbm) {
        (Some(d), _) => prop.rx_power_dbm(tx_dbm, d),
        (None, Some(t)) => t,
        (None, None) => def_rx,
    };
    let cs_dbm = match (r.cs_range_m, r.cs_threshold_dbm) {
        (Some(d), _) => prop.rx_power_dbm(tx_dbm, d),
        (None, Some(t)) => t,
        // A reception range given alone also bounds carrier sense.
        (None, None) if r.tx_range_m.is_some() => rx_dbm,
        (None, None) => def_cs,
    };
    // A threshold of 0 mW (a range so long the received power underflows, or a threshold of
    // -1e18 dBm) keeps the medium busy for ever; an infinite one hears nothing.
    for (dbm, field) in [
        (
            rx_dbm,
            if r.tx_range_m.is_some() {
                "radio.tx_range_m"
            } else {
                "radio.rx_threshold_dbm"
            },
        ),
        (
            cs_dbm,
            match (r.cs_range_m, r.cs_threshold_dbm) {
                (Some(_), _) => "radio.cs_range_m",
                (None, Some(_)) => "radio.cs_threshold_dbm",
                (None, None) => "radio.tx_range_m",
            },
        ),
    ] {
        if !(dbm.is_finite() && dbm_to_mw(dbm) > 0.0) {
            return Err(XlError::scenario(
                field,
                format!(
                    "gives a threshold of {dbm} dBm ({} mW); a threshold must be a finite power \
                     above 0 mW, which a range so long that no power arrives is not",
                    dbm_to_mw(dbm)
                ),
            ));
        }
    }
    let mut margin = 10.0 + 3.0 * r.shadowing_sigma_db;
    if r.fading == Fading::Rayleigh {
        margin += 10.0;
    }
    let cutoff_dbm = rx_dbm.min(cs_dbm).min(noise_dbm) - margin;
    Ok(Thresholds {
        rx_dbm,
        cs_dbm,
        cutoff_dbm,
    })
}

/// The largest distance at which the mean received power still reaches `cutoff_dbm`.
fn reach(prop: &Propagation, tx_dbm: f64, cutoff_dbm: f64) -> f64 {
    if let Propagation::Range { range_m } = prop {
        return *range_m;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while prop.rx_power_dbm(tx_dbm, hi) >= cutoff_dbm && hi < 1e7 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if prop.rx_power_dbm(tx_dbm, mid) >= cutoff_dbm {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The most directed links (pairs of nodes within radio reach) a network may have: about 300 MB
/// of link tables, and on average 100 per node at the largest size (100 000 nodes).
pub const MAX_LINKS: usize = 10_000_000;

/// Builds the runnable world.
pub fn build(sc: &Scenario) -> Result<World, XlError> {
    let r = &sc.radio;
    let standard = r.standard;
    let timing = PhyTiming::new(standard, r.preamble);
    let prop = r.propagation();
    let tx_dbm = r.tx_power_dbm.unwrap_or(16.0206);
    let noise_mw = thermal_noise_mw(timing.bandwidth_hz(), r.noise_figure_db);
    let th = thresholds(sc, &prop, tx_dbm, mw_to_dbm(noise_mw))?;
    let sinr_thresholds = rate_set(standard)
        .iter()
        .map(|&rate| {
            let db = r
                .sinr_threshold_db
                .unwrap_or_else(|| default_sinr_threshold_db(standard, rate));
            (rate, 10f64.powf(db / 10.0))
        })
        .collect();
    // Below both thresholds a signal can neither be decoded nor sensed alone: in bulk.
    let weak_below_mw = match r.weak_interference {
        WeakInterference::Bulk => dbm_to_mw(th.rx_dbm.min(th.cs_dbm)),
        WeakInterference::Events => 0.0,
    };
    let cfg = PhyConfig {
        standard,
        timing,
        error_model: r.error_model.unwrap_or(ErrorModelKind::Threshold),
        rx_threshold_mw: dbm_to_mw(th.rx_dbm),
        cs_threshold_mw: dbm_to_mw(th.cs_dbm),
        noise_mw,
        capture_ratio: r.capture_db.map(|db| 10f64.powf(db / 10.0)),
        preamble_detection: r.preamble_detection.then(|| PreambleDetection {
            min_sinr: 10f64.powf(r.preamble_detection_snr_db.unwrap_or(4.0) / 10.0),
            min_rssi_mw: dbm_to_mw(r.preamble_detection_min_rssi_dbm.unwrap_or(-82.0)),
            window: PreambleDetection::WINDOW,
        }),
        sinr_thresholds,
        weak_below_mw,
        // No carrier-sense-only band in bulk unless every MAC is Z-MAC's (`build_zmac`).
        sensed_below_mw: weak_below_mw,
        wake_every_node: false,
    };

    // A link carries traffic when its mean power reaches the reception threshold and its mean
    // SNR reaches what the data rate needs (the threshold model's value for that rate).
    let data_snr_db = mw_to_dbm(
        cfg.sinr_thresholds
            .iter()
            .find(|(rate, _)| *rate == r.data_rate())
            .map(|(_, t)| *t)
            .unwrap_or(1.0),
    );
    let noise_dbm = mw_to_dbm(noise_mw);

    // Neighbour lists through a grid of cells as wide as the longest useful link (cell indices
    // saturate far away: such cells only gather candidates, distances decide).
    let pos = positions(sc);
    let n = pos.len();
    let reach_m = reach(&prop, tx_dbm, th.cutoff_dbm).max(1e-6);
    let cell = |x: f64, y: f64| ((x / reach_m).floor() as i64, (y / reach_m).floor() as i64);
    let mut grid: HashMap<(i64, i64), Vec<u32>> = HashMap::new();
    for (i, &(x, y)) in pos.iter().enumerate() {
        grid.entry(cell(x, y)).or_default().push(i as u32);
    }
    let mut links = vec![Vec::new(); n];
    let mut neighbors = vec![Vec::new(); n];
    let mut link_count = 0usize;
    for (i, &(x, y)) in pos.iter().enumerate() {
        // Every transmission visits the links of its sender: a topology this dense would
        // exhaust memory before it ran (100 000 nodes in one cell are 10^10 links).
        if link_count > MAX_LINKS {
            return Err(XlError::topology(
                "topology",
                format!(
                    "more than {MAX_LINKS} directed links within radio reach ({n} nodes): \
                     spread the nodes out, use fewer, or shorten the radio range"
                ),
            ));
        }
        let (cx, cy) = cell(x, y);
        let mut near: Vec<u32> = Vec::new();
        for dx in -1..=1 {
            for dy in -1..=1 {
                if let Some(v) = grid.get(&(cx.saturating_add(dx), cy.saturating_add(dy))) {
                    near.extend(v.iter().copied().filter(|&j| j as usize != i));
                }
            }
        }
        near.sort_unstable();
        for j in near {
            let (xj, yj) = pos[j as usize];
            let d = ((x - xj).powi(2) + (y - yj).powi(2)).sqrt();
            let dbm = prop.rx_power_dbm(tx_dbm, d);
            let in_range = match prop {
                Propagation::Range { range_m } => d <= range_m,
                _ => dbm >= th.cutoff_dbm,
            };
            if !in_range {
                continue;
            }
            link_count += 1;
            links[i].push(Link {
                to: j,
                mean_rx_mw: dbm_to_mw(dbm),
                delay: SimTime(delay_ns(d)),
            });
            if dbm >= th.rx_dbm && dbm - noise_dbm >= data_snr_db {
                neighbors[i].push(j);
            }
        }
    }

    // Routes run over the radio neighbours and the wired links together (ascending ids, so the
    // lowest-id tie rule holds across both).
    let wires: Vec<crate::scenario::WiredSpec> = topology_wired(sc)
        .into_iter()
        .chain(sc.wired.iter().cloned())
        .collect();
    let graph: std::borrow::Cow<'_, [Vec<u32>]> = if wires.is_empty() {
        std::borrow::Cow::Borrowed(&neighbors)
    } else {
        let mut g = neighbors.clone();
        for w in &wires {
            g[w.a as usize].push(w.b);
            g[w.b as usize].push(w.a);
        }
        for l in g.iter_mut() {
            l.sort_unstable();
            l.dedup();
        }
        std::borrow::Cow::Owned(g)
    };

    // Flows (explicit, then random pairs) and the routes they need.
    let mut routes = StaticRoutes::new(&graph);
    let end = SimTime::from_secs_f64(sc.duration_s);
    let mut flows = Vec::new();
    let mut conns: Vec<Conn> = Vec::new();
    let mut add_flow = |flows: &mut Vec<Flow>,
                        src: u32,
                        dst: u32,
                        t: FlowTransportSpec<'_>,
                        payload: u32,
                        start: f64,
                        stop: Option<f64>,
                        priority: u32| {
        let id = flows.len() as u32;
        let transport = match t.transport {
            "tcp" => {
                let opts = t.tcp.cloned().unwrap_or_default();
                let cc = match t.cc.unwrap_or("newreno") {
                    "reno" => CcKind::Reno,
                    "westwood" => CcKind::Westwood,
                    "few" => CcKind::Few {
                        alpha: opts.few_alpha,
                    },
                    "paced" => CcKind::Paced {
                        rate_bps: match t.rate {
                            RateSpec::Bps(b) => b,
                            RateSpec::Saturate => 1e6,
                        },
                    },
                    _ => CcKind::NewReno,
                };
                let mut cfg = TcpConfig::new(cc);
                cfg.mss = payload;
                cfg.sack = t.sack;
                cfg.delayed_ack = opts.delayed_ack;
                cfg.delack_timeout = SimTime::from_secs_f64(opts.delack_timeout_s);
                cfg.rcv_buf_bytes = opts.rcv_buf_bytes;
                cfg.window_scale = opts.window_scale;
                cfg.initial_cwnd = opts
                    .initial_cwnd
                    .unwrap_or_else(|| rfc5681_initial_window(payload));
                cfg.min_rto = SimTime::from_secs_f64(opts.min_rto_s);
                cfg.max_rto = cfg.max_rto.max(cfg.min_rto);
                cfg.total_bytes = t.size;
                cfg.stream_key = sc.seed ^ ((id as u64) << 32) ^ 0x7c9_0000;
                cfg.verify_stream = opts.verify_stream;
                cfg.app_limited = t.app_limited;
                conns.push(Conn::Tcp(Box::new(TcpConn {
                    flow: id,
                    sender: TcpSender::new(cfg),
                    receiver: TcpReceiver::new(cfg),
                })));
                FlowTransport::Tcp(conns.len() as u32 - 1)
            }
            "tfrc" | "tfrc-ecn" => {
                conns.push(Conn::Tfrc(Box::new(TfrcConn::new(
                    id,
                    TfrcConfig {
                        segment_bytes: payload + 28 + TFRC_HEADER_BYTES,
                        ecn: t.transport == "tfrc-ecn",
                        max_rate_bps: match t.rate {
                            RateSpec::Bps(b) => Some(b),
                            RateSpec::Saturate => None,
                        },
                    },
                ))));
                FlowTransport::Tfrc(conns.len() as u32 - 1)
            }
            "clap" => {
                let o = t.clap.cloned().unwrap_or_default();
                conns.push(Conn::Clap(Box::new(ClapConn::new(
                    id,
                    ClapConfig {
                        payload_bytes: payload,
                        total_bytes: t.size,
                        probe_interval: SimTime::from_secs_f64(o.probe_interval_s),
                        probe_bytes: o.probe_bytes,
                        nack_interval: SimTime::from_secs_f64(o.nack_interval_s),
                        max_rate_bps: match t.rate {
                            RateSpec::Bps(b) => Some(b),
                            RateSpec::Saturate => None,
                        },
                        max_outstanding: o.max_outstanding,
                        stream_key: sc.seed ^ ((id as u64) << 32) ^ 0xc1a9_0000,
                    },
                ))));
                FlowTransport::Clap(conns.len() as u32 - 1)
            }
            _ => FlowTransport::Udp,
        };
        flows.push(Flow {
            id,
            src,
            dst,
            kind: match t.rate {
                RateSpec::Bps(bps) if transport == FlowTransport::Udp => SourceKind::Cbr {
                    interval: cbr_interval(payload, bps),
                },
                _ => SourceKind::Saturate,
            },
            payload_bytes: payload,
            start: SimTime::from_secs_f64(start),
            stop: stop.map(SimTime::from_secs_f64).unwrap_or(end).min(end),
            level: priority as u8,
            next_seq: 0,
            active: false,
            transport,
            app: None,
        });
    };
    // Connections with a return path (TCP's ACKs) need the route back as well.
    let two_way = |t: &str| t != "udp";
    for (i, f) in sc.flows.iter().enumerate() {
        routes.add_destination(f.dst);
        if routes.next_hop(f.src, f.dst) == UNREACHABLE {
            return Err(XlError::topology(
                format!("flows[{i}].dst"),
                format!("node {} is unreachable from node {} (the topology is disconnected at the reception range)", f.dst, f.src),
            ));
        }
        if two_way(&f.transport) {
            routes.add_destination(f.src);
            if routes.next_hop(f.dst, f.src) == UNREACHABLE {
                return Err(XlError::topology(
                    format!("flows[{i}].src"),
                    format!(
                        "node {} is unreachable from node {} (the return path a {} flow needs)",
                        f.src, f.dst, f.transport
                    ),
                ));
            }
        }
        add_flow(
            &mut flows,
            f.src,
            f.dst,
            FlowTransportSpec {
                transport: &f.transport,
                cc: f.cc.as_deref(),
                sack: f.sack,
                size: f.size_bytes,
                tcp: f.tcp.as_ref(),
                clap: f.clap.as_ref(),
                rate: f.rate_bps,
                app_limited: f.app.is_some(),
            },
            f.payload_bytes,
            f.start_s,
            f.stop_s,
            f.priority,
        );
    }
    if let Some(fr) = &sc.flows_random {
        let seed = fr.seed.unwrap_or(sc.seed);
        let mut rng = stream(seed, GLOBAL, "flows_random");
        // Arrival times and durations come from streams of their own: the pairs drawn are the
        // same with and without them.
        let mut arrivals_rng = stream(seed, GLOBAL, "flows_random.arrivals");
        let mut durations_rng = stream(seed, GLOBAL, "flows_random.durations");
        let arrivals = fr.arrivals.as_ref().map(|a| a.law());
        let durations = fr.durations.as_ref().map(|d| (d.law(), d.max_s));
        // Flows arriving once the sources have stopped (or the run has ended) are not made.
        let horizon = fr.stop_s.unwrap_or(sc.duration_s).min(sc.duration_s);
        let mut clock = fr.start_s;
        for k in 0..fr.count {
            let start = match arrivals {
                Some(a) => {
                    clock += a.sample(&mut arrivals_rng);
                    if clock >= horizon {
                        break;
                    }
                    clock
                }
                None => fr.start_s,
            };
            let stop = match durations {
                Some((d, max)) => {
                    let end = start + d.sample(&mut durations_rng, max);
                    Some(fr.stop_s.map_or(end, |s| end.min(s)))
                }
                None => fr.stop_s,
            };
            let mut found = None;
            for _ in 0..10_000 {
                let src = rng.gen_range(0..n as u32);
                let dst = rng.gen_range(0..n as u32);
                if src == dst {
                    continue;
                }
                routes.add_destination(dst);
                if routes.next_hop(src, dst) == UNREACHABLE {
                    continue;
                }
                if two_way(&fr.transport) {
                    routes.add_destination(src);
                    if routes.next_hop(dst, src) == UNREACHABLE {
                        continue;
                    }
                }
                found = Some((src, dst));
                break;
            }
            let Some((src, dst)) = found else {
                return Err(XlError::topology("flows_random.count", format!("found no connected (source, destination) pair for random flow {k}: the topology is too sparse")));
            };
            add_flow(
                &mut flows,
                src,
                dst,
                FlowTransportSpec {
                    transport: &fr.transport,
                    cc: fr.cc.as_deref(),
                    sack: fr.sack,
                    size: fr.size_bytes,
                    tcp: fr.tcp.as_ref(),
                    clap: fr.clap.as_ref(),
                    rate: fr.rate_bps,
                    app_limited: false,
                },
                fr.payload_bytes,
                start,
                stop,
                fr.priority,
            );
        }
    }

    let mac_params = MacParams {
        timing,
        data_rate_mbps: r.data_rate(),
        basic_rate_mbps: r.basic_rate(),
        rts_threshold: if r.rts_cts {
            Some(r.rts_threshold_bytes)
        } else {
            None
        },
        short_retry_limit: sc.mac.short_retry_limit,
        long_retry_limit: sc.mac.long_retry_limit,
        queue_capacity: sc.mac.queue_packets,
        queue_bytes: sc.mac.queue_bytes,
        levels: sc.mac_levels(),
    };
    // Receivers in order of propagation delay (ties by id): a transmission's arrivals are then
    // one chain of events in time order.
    for l in links.iter_mut() {
        l.sort_by_key(|l| (l.delay, l.to));
    }
    let max_delay: Vec<SimTime> = links
        .iter()
        .enumerate()
        .map(|(i, ls)| {
            ls.iter()
                .filter(|l| neighbors[i].contains(&l.to))
                .map(|l| l.delay)
                .max()
                .unwrap_or(SimTime::ZERO)
        })
        .collect();
    let mut nodes = Vec::with_capacity(pos.len());
    crate::sim::memory::advise_huge_pages(&nodes);
    nodes.extend(pos.iter().enumerate().map(|(i, &(x, y))| {
        let mut node = Node::new(
            i as u32,
            x,
            y,
            {
                let mut mac = Mac::new(i as u32, mac_params.clone());
                mac.set_max_propagation(max_delay[i]);
                mac
            },
            sc.seed,
        );
        // Under the bit-error model only a capture reads a reception's lowest SINR (it sets
        // this back when attached).
        node.phy
            .set_min_sinr_unread(cfg.error_model == ErrorModelKind::Ber);
        node
    }));
    let variation = ChannelVariation {
        fading: r.fading,
        shadowing_sigma_db: r.shadowing_sigma_db,
    };
    // DiffQ sources start at the configured rate (a tenth of the data rate by default) and
    // follow their rate controller from there.
    let diffq = if sc.stack.preset.starts_with("diffq") {
        let d = sc.stack.diffq.clone().unwrap_or_default();
        let max_bps = r.data_rate() * 1e6;
        let init = d.initial_rate_bps.unwrap_or(max_bps / 10.0).min(max_bps);
        for f in flows.iter_mut() {
            if f.transport == FlowTransport::Udp {
                f.kind = SourceKind::Cbr {
                    interval: cbr_interval(f.payload_bytes, init),
                };
            }
        }
        for c in conns.iter_mut().filter_map(Conn::tcp_mut) {
            c.sender.set_pace_rate_quiet(init);
        }
        Some((d, init, max_bps))
    } else {
        None
    };
    // DPCLO sources are UDP sources at their adapted rate, starting at the configured one.
    let dpclo = if sc.stack.preset.starts_with("dpclo") {
        let d = sc.stack.dpclo.clone().unwrap_or_default();
        for f in flows.iter_mut() {
            f.kind = SourceKind::Cbr {
                interval: SimTime::from_secs_f64(1.0 / d.initial_rate_pps),
            };
        }
        Some(d)
    } else {
        None
    };
    // DCLO sources are UDP sources at their eq. 2 rate, starting at the rate of a one-packet
    // price. A source never offers more than its packets at the data rate.
    let dclo = if sc.stack.preset == "dclo" {
        let d = sc.stack.dclo.clone().unwrap_or_default();
        let max_pps: Vec<f64> = flows
            .iter()
            .map(|f| r.data_rate() * 1e6 / 8.0 / f.payload_bytes as f64)
            .collect();
        let first_pps: Vec<f64> = max_pps
            .iter()
            .map(|&max| crate::xl::dclo::source_rate(1, d.utility_weight, d.min_rate_pps, max))
            .collect();
        for (f, &pps) in flows.iter_mut().zip(&first_pps) {
            f.kind = SourceKind::Cbr {
                interval: SimTime::from_secs_f64(1.0 / pps),
            };
        }
        Some((d, max_pps, first_pps))
    } else {
        None
    };
    let mut world = World::new(
        cfg,
        nodes,
        links,
        neighbors,
        routes,
        flows,
        variation,
        sc.net.ttl as u8,
        SimTime::from_secs_f64(sc.warmup_s),
        end,
    );
    world.timeseries_bin = sc.output.timeseries_bin_s.map(SimTime::from_secs_f64);
    world.conns = conns;
    world.register_link_readers();
    if sc.output.tcp_trace {
        world.tcp_trace = Some(Vec::new());
    }
    for f in &world.flows {
        if f.transport != FlowTransport::Udp && f.stop < end {
            world.queue.schedule(f.stop, Event::FlowStop { flow: f.id });
        }
    }
    build_link_loss_and_events(sc, &mut world)?;
    build_noise(sc, &mut world, &prop, &pos);
    for w in &wires {
        let delay = SimTime::from_secs_f64(w.delay_s);
        let back = w.reverse_loss.unwrap_or(w.loss);
        for (from, to, loss) in [(w.a, w.b, w.loss), (w.b, w.a, back)] {
            world.wired.add(
                from,
                to,
                w.rate_bps,
                delay,
                w.queue_packets,
                w.queue_bytes,
                loss,
                sc.seed,
            );
        }
    }
    // Explicit flows come first, in order: flow i is `flows[i]`.
    for (i, f) in sc.flows.iter().enumerate() {
        if let Some(app) = &f.app {
            use crate::app::traffic::{AppTraffic, STREAM};
            world.flows[i].app = Some(Box::new(AppTraffic::new(
                app.model(),
                stream(sc.seed, i as u32, STREAM),
            )));
        }
        if let Some(limit) = f.retry_limit {
            for node in &mut world.nodes {
                node.mac.set_flow_retry_limit(i as u32, limit);
            }
        }
        if let Some(code) = f.code_rate {
            for node in &mut world.nodes {
                node.mac.set_flow_code(i as u32, code.0);
            }
        }
    }
    build_net_protocols(sc, &mut world);
    if let Some(cap) = sc.net.dest_queue_packets {
        for node in &mut world.nodes {
            node.queueing = crate::net::queue::Queueing::per_destination(cap);
        }
    }
    if let Some((d, init, max_bps)) = diffq {
        use crate::xl::diffq::{RateControl, SourceRate};
        let control = if d.rate_control == "log_utility" {
            RateControl::LogUtility
        } else {
            RateControl::Aimd {
                alpha_mbps: d.alpha_mbps,
                beta: d.beta,
            }
        };
        let levels = sc.mac_levels().len();
        world.sources = crate::xl::SourceControl::Diffq(crate::xl::diffq::DiffqSources {
            rates: world
                .flows
                .iter()
                .map(|_| SourceRate::new(control, d.queue_thresh, init, max_bps))
                .collect(),
        });
        world.scheduler = crate::xl::Scheduler::Diffq(crate::xl::diffq::DiffqScheduler {
            scheduling: d.mode != "rate_only",
            prioritization: d.mode == "full",
            max_queue: sc
                .net
                .dest_queue_packets
                .unwrap_or(crate::scenario::DIFFQ_QUEUE_PACKETS),
            levels: levels as u8,
            rng: (0..n as u32)
                .map(|i| stream(sc.seed, i, "net.diffq"))
                .collect(),
            level_use: vec![0; levels],
            expiry: SimTime::from_secs_f64(d.neighbour_expiry_s),
            hold_negative: d.mode == "full" && d.hold_negative,
            holds: 0,
            next_hops: d.next_hops,
        });
        if d.mode == "full" && d.hold_negative {
            // Held packets are reconsidered on every overheard frame and, should a neighbour
            // fall silent, on the back-pressure tick once its queue length has expired.
            world
                .queue
                .schedule(crate::xl::diffq::DIFFQ_TICK, Event::BackpressureTick);
        }
    }
    if matches!(sc.stack.preset.as_str(), "more" | "diffq-more") {
        use crate::xl::more::{More, MoreParams};
        let o = sc.stack.more.clone().unwrap_or_default();
        let params = MoreParams {
            batch_size: o.batch_size as usize,
            prune_threshold: o.prune_threshold,
        };
        let flows = world
            .flows
            .iter()
            .map(|f| (f.id, f.src, f.dst, f.payload_bytes));
        let more = More::new(params, n, flows, world.flows.len(), sc.seed);
        world.forwarding = crate::xl::Forwarding::More(Box::new(more));
    }
    if sc.stack.preset == "fusion" {
        use crate::xl::fusion::{FusionNode, FusionParams};
        let o = sc.stack.fusion.clone().unwrap_or_default();
        let params = FusionParams {
            flow_control: o.flow_control,
            rate_limit: o.rate_limit,
            prioritized_mac: o.prioritized_mac,
            queue_packets: sc.mac.queue_packets,
            queue_threshold: o.queue_threshold,
            bit_expiry: SimTime::from_secs_f64(o.bit_expiry_s),
            source_window: SimTime::from_secs_f64(o.source_window_s),
            token_bucket: o.token_bucket,
            cw_divisor: o.cw_divisor,
        };
        world.gate = crate::xl::AnyGate::Fusion(crate::xl::fusion::Fusion {
            params,
            nodes: (0..n).map(|_| FusionNode::new(o.token_bucket)).collect(),
            base_levels: sc.mac_levels(),
        });
    }
    build_zmac(sc, &mut world);
    if let Some(d) = dpclo {
        use crate::xl::dpclo::SourceRate;
        let levels = sc.mac_levels().len();
        // A source never offers more than its packets at the data rate.
        let max_pps = r.data_rate() * 1e6 / 8.0;
        let interval = SimTime::from_secs_f64(d.update_interval_s);
        world.scheduler = crate::xl::Scheduler::Dpclo(crate::xl::dpclo::DpcloScheduler {
            l_lowmark: d.l_lowmark,
            l_highmark: d.l_highmark,
            beta: d.beta,
            k_max: d.k_max.unwrap_or(u32::MAX),
            use_etx: d.etx,
            cap: sc.net.dest_queue_packets.unwrap_or(3),
            k: vec![Vec::new(); n],
            interval,
            level_use: vec![0; levels],
            holds: 0,
            expiry: SimTime::from_secs_f64(1.0),
            at_mac: vec![None; n],
        });
        world.sources = crate::xl::SourceControl::Dpclo(crate::xl::dpclo::DpcloSources {
            rates: world
                .flows
                .iter()
                .map(|f| {
                    SourceRate::new(
                        d.initial_rate_pps,
                        d.delta_pps,
                        d.update_interval_s,
                        max_pps / f.payload_bytes as f64,
                    )
                })
                .collect(),
            refused: vec![0; world.flows.len()],
        });
        world.queue.schedule(interval, Event::BackpressureTick);
    }
    if let Some((d, max_pps, first_pps)) = dclo {
        let secs = SimTime::from_secs_f64;
        world.sources = crate::xl::SourceControl::Dclo(crate::xl::dclo::DcloSources {
            utility_weight: d.utility_weight,
            min_pps: d.min_rate_pps,
            max_pps,
            rates: first_pps,
        });
        world.scheduler = crate::xl::Scheduler::Dclo(crate::xl::dclo::Dclo {
            interval: secs(d.interval_s),
            price_jitter: secs(d.price_jitter_s),
            match_delay: secs(d.match_delay_s),
            request_timeout: secs(d.request_timeout_s),
            max_requests: d.max_requests,
            cap: sc.net.dest_queue_packets.unwrap_or(3),
            seed: sc.seed,
            current: 0,
            nodes: vec![Default::default(); n],
            rng: (0..n as u32)
                .map(|i| stream(sc.seed, i, "net.dclo"))
                .collect(),
            matched: 0,
            prices_sent: 0,
            requests_sent: 0,
            accepts_sent: 0,
        });
        // The first interval starts once Z-MAC has assigned its slots (control packets sent
        // earlier would wait in the MAC queues until then).
        // With an "auto" set-up its end is not known yet: the set-up's watch schedules it.
        let first = match sc.mac.access.as_str() {
            "zmac" | "zmacplus" => sc.mac.zmac.clone().unwrap_or_default().setup_s.seconds(),
            _ => Some(0.0),
        };
        match first {
            Some(first) => world.queue.schedule(secs(first), Event::BackpressureTick),
            None => {
                if let Some(w) = world.zmac_setup.as_mut() {
                    w.start_tick = true;
                }
            }
        }
    }
    world.optimizers.core = crate::tune::core::Core::new(sc.eclair.config());
    attach_optimizers(&mut world, &sc.optimizers)?;
    if let Some(f) = &sc.stack.flavor_link {
        // Detection at the nodes; the optimizer there too unless detection only.
        for &node in f.nodes.as_deref().unwrap_or(&[0]) {
            world.nodes[node as usize].flavor = Some(Box::default());
            if f.optimize {
                let opt = builtin("flavor_link", &f.table)
                    .map_err(|m| builtin_error("stack.flavor_link.table", m))?;
                attach(
                    &mut world,
                    node,
                    opt,
                    AttachOptions::new("flavor_link".to_string()),
                )?;
            }
        }
    }
    Ok(world)
}

/// Attaches the scenario's Rust optimizers; keeps the Python ones for the Python API
/// (`World::python_optimizers`).
fn attach_optimizers(
    w: &mut World,
    specs: &[crate::scenario::OptimizerSpec],
) -> Result<(), XlError> {
    for (i, spec) in specs.iter().enumerate() {
        let field = format!("optimizers[{i}]");
        let Some(name) = &spec.rust else {
            w.python_optimizers.push(spec.clone());
            continue;
        };
        let nodes: Vec<u32> = match &spec.nodes {
            Some(n) => n.clone(),
            None => (0..w.nodes.len() as u32).collect(),
        };
        for node in nodes {
            let opt = builtin(name, &spec.args).map_err(|m| builtin_error(&field, m))?;
            let mut o = AttachOptions::new(name.clone());
            o.latency = SimTime::from_secs_f64(spec.latency_s);
            o.conflict_window = SimTime::from_secs_f64(spec.conflict_window_s);
            o.delivery = spec.delivery_mode();
            attach(w, node, opt, o)?;
        }
    }
    Ok(())
}

/// Z-MAC / ZMAC+ (`mac.access = "zmac" | "zmacplus"`): switches every MAC to the slot access.
fn build_zmac(sc: &Scenario, world: &mut World) {
    use crate::mac::zmac::{new_board, slot_length, SetupWatch, Zmac, ZmacParams};
    let plus = match sc.mac.access.as_str() {
        "zmac" => false,
        "zmacplus" => true,
        _ => return,
    };
    let z = sc.mac.zmac.clone().unwrap_or_default();
    let timing = world.cfg.timing;
    let r = &sc.radio;
    let slot = slot_length(
        &timing,
        r.data_rate(),
        r.basic_rate(),
        z.tno_slots,
        // A slot carries one data exchange: size it for the scenario's largest packet (IP, TCP
        // or UDP/TFRC and the DiffQ header fit in 60 bytes), 1500 bytes without flows.
        z.slot_payload_bytes.unwrap_or_else(|| {
            world
                .flows
                .iter()
                .map(|f| f.payload_bytes + 60)
                .max()
                .unwrap_or(1500)
        }),
        plus,
        z.beacon_bytes,
    );
    // "auto": the MACs take the bound as their end until the watch ends the set-up earlier.
    let setup_end = SimTime::from_secs_f64(z.setup_s.seconds().unwrap_or(z.setup_max_s));
    let discovery_end = SimTime::from_secs_f64(z.discovery_secs());
    if z.setup_s.seconds().is_none() {
        world.zmac_setup = Some(SetupWatch {
            slot,
            max_end: setup_end,
            end: None,
            completed: false,
            start_tick: false,
        });
        // no slot is taken before discovery ends: the first check is at the boundary after it
        let first = SimTime(discovery_end.ns().div_ceil(slot.ns()) * slot.ns());
        world.queue.schedule(first, Event::ZmacSetupCheck);
    }
    let p = ZmacParams {
        plus,
        to_slots: z.to_slots,
        tno_slots: z.tno_slots,
        slot,
        setup_end,
        discovery_end,
        announce_interval_slots: z.announce_interval_slots,
        ecn_loss_threshold: z.ecn_loss_threshold,
        hcl_duration: SimTime::from_secs_f64(z.hcl_duration_s),
        beacon_bytes: z.beacon_bytes,
    };
    // Z-MAC reads carrier sense only when it decides (at an access, a response timeout), so the
    // signals a node can sense but not decode reach it in bulk, without events (`Phy::add_sensed`),
    // when weak interference does. Not with preamble detection, whose detection period an
    // arrival of any power can end (`Phy::signal_start`).
    if sc.radio.weak_interference == crate::phy::WeakInterference::Bulk
        && world.cfg.preamble_detection.is_none()
    {
        world.cfg.sensed_below_mw = world.cfg.sensed_below_mw.max(world.cfg.rx_threshold_mw);
    }
    let board = new_board(world.nodes.len());
    for n in world.nodes.iter_mut() {
        let zm = Zmac::new(n.id, p, board.clone(), sc.seed);
        n.mac.enable_zmac(zm, &mut world.queue);
    }
}

/// Link losses (random draws, then explicit links) and the scenario's scheduled changes.
fn build_link_loss_and_events(sc: &Scenario, world: &mut World) -> Result<(), XlError> {
    use crate::net::linkloss::{LinkLoss, RANDOM_STREAM};
    let loss_events = sc.events.iter().any(|e| e.kind == "link_loss");
    if sc.link_loss.is_some() || loss_events {
        let targets = world
            .links
            .iter()
            .map(|ls| ls.iter().map(|l| l.to).collect())
            .collect();
        let mut ll = LinkLoss::new(sc.seed, targets);
        let out_of_reach = |field: String, from: u32, to: u32| {
            XlError::topology(
                field,
                format!(
                    "node {to} is out of the radio reach of node {from}: no link to make lossy"
                ),
            )
        };
        if let Some(spec) = &sc.link_loss {
            if let Some(r) = &spec.random {
                // Pairs in reception range, in (lower id, higher id) order: one draw per pair
                // (symmetric) or per direction.
                let mut rng = stream(r.seed.unwrap_or(sc.seed), GLOBAL, RANDOM_STREAM);
                for i in 0..world.neighbors.len() as u32 {
                    for &j in &world.neighbors[i as usize] {
                        if j <= i {
                            continue;
                        }
                        let p = r.min + (r.max - r.min) * rng.gen::<f64>();
                        ll.set(i, j, p);
                        let q = if r.symmetric {
                            p
                        } else {
                            r.min + (r.max - r.min) * rng.gen::<f64>()
                        };
                        ll.set(j, i, q);
                    }
                }
            }
            for (k, l) in spec.links.iter().enumerate() {
                if !ll.set(l.from, l.to, l.loss) {
                    return Err(out_of_reach(
                        format!("link_loss.links[{k}].to"),
                        l.from,
                        l.to,
                    ));
                }
                if l.symmetric && !ll.set(l.to, l.from, l.loss) {
                    return Err(out_of_reach(
                        format!("link_loss.links[{k}].from"),
                        l.to,
                        l.from,
                    ));
                }
            }
        }
        for (k, e) in sc.events.iter().enumerate() {
            if e.kind == "link_loss" {
                let (a, b) = (e.from.unwrap_or(0), e.to.unwrap_or(0));
                if !ll.has_link(a, b) || !ll.has_link(b, a) {
                    return Err(out_of_reach(format!("events[{k}].to"), a, b));
                }
            }
        }
        world.link_loss = Some(ll);
    }
    for e in &sc.events {
        let change = match e.kind.as_str() {
            "node_off" => ScenarioChange::NodeOff(e.node.unwrap_or(0)),
            "node_on" => ScenarioChange::NodeOn(e.node.unwrap_or(0)),
            _ => ScenarioChange::LinkLoss {
                from: e.from.unwrap_or(0),
                to: e.to.unwrap_or(0),
                loss: e.loss.unwrap_or(0.0),
            },
        };
        let mut push = |c| {
            let index = world.scenario_events.len() as u32;
            world.scenario_events.push(c);
            world.queue.schedule(
                SimTime::from_secs_f64(e.at_s),
                crate::sim::Event::ScenarioChange { index },
            );
        };
        push(change);
        if let ScenarioChange::LinkLoss { from, to, loss } = change {
            if e.symmetric.unwrap_or(true) {
                push(ScenarioChange::LinkLoss {
                    from: to,
                    to: from,
                    loss,
                });
            }
        }
    }
    Ok(())
}

/// The scenario's noise sources (`[[noise]]`): the nodes each reaches and with what power, its
/// on-off process and its first switch.
fn build_noise(sc: &Scenario, world: &mut World, prop: &Propagation, pos: &[(f64, f64)]) {
    use crate::phy::noise::{NoiseProcess, NoiseSource, STREAM};
    let secs = SimTime::from_secs_f64;
    let noise_floor_mw = world.cfg.noise_mw;
    for (i, s) in sc.noise.iter().enumerate() {
        let mw = s.watts() * 1000.0;
        let targets: Vec<(u32, f64)> = match (s.position, &s.nodes) {
            (Some([x, y]), _) => {
                let dbm = mw_to_dbm(mw);
                pos.iter()
                    .enumerate()
                    .map(|(j, &(xj, yj))| {
                        let d = ((x - xj).powi(2) + (y - yj).powi(2)).sqrt();
                        (j as u32, dbm_to_mw(prop.rx_power_dbm(dbm, d)))
                    })
                    // Nodes where the source is 30 dB below thermal noise or weaker do not
                    // notice it: leave them out.
                    .filter(|&(_, p)| p >= noise_floor_mw * 1e-3)
                    .collect()
            }
            (None, Some(nodes)) => {
                let mut v: Vec<u32> = nodes.clone();
                v.sort_unstable();
                v.dedup();
                v.into_iter().map(|j| (j, mw)).collect()
            }
            (None, None) => (0..pos.len() as u32).map(|j| (j, mw)).collect(),
        };
        let (on, off) = (secs(s.on_s.unwrap_or(1.0)), secs(s.off_s.unwrap_or(1.0)));
        let process = match s.process.as_str() {
            "exponential" => NoiseProcess::Exponential {
                mean_on: on,
                mean_off: off,
            },
            "schedule" => NoiseProcess::Schedule(
                s.schedule
                    .iter()
                    .map(|&[a, b]| (secs(a), secs(b)))
                    .collect(),
            ),
            _ => NoiseProcess::Pulses { on, off },
        };
        let source = NoiseSource::new(
            targets,
            s.carrier_sense,
            process,
            secs(s.start_s),
            stream(sc.seed, i as u32, STREAM),
        );
        let end = SimTime::from_secs_f64(sc.duration_s);
        if let Some(t) = source.first_switch().filter(|&t| t < end) {
            world.queue.schedule(t, Event::Noise { source: i as u32 });
        }
        world.noise.push(source);
    }
}

/// The control protocols the scenario runs (ETX probing, routing), with their first timers.
fn build_net_protocols(sc: &Scenario, world: &mut World) {
    use crate::net::etx::EtxParams;
    use crate::net::proto::NetProto;
    use crate::sim::event::NetTimerKind;
    let Some(e) = sc.net.etx.clone() else {
        return;
    };
    let params = EtxParams {
        probe_period: SimTime::from_secs_f64(e.probe_period_s),
        window: SimTime::from_secs_f64(e.window_s),
        alpha: e.alpha,
        jitter: e.jitter,
    };
    let n = world.nodes.len();
    let mut proto = NetProto::new(n, sc.seed, params);
    for node in 0..n as u32 {
        let at = proto.first_probe(node);
        world.queue.schedule(
            at,
            crate::sim::Event::NetTimer {
                node,
                kind: NetTimerKind::EtxProbe,
            },
        );
    }
    if let Some(d) = &sc.net.dsdv {
        use crate::net::dsdv::{DsdvParams, Metric};
        let secs = SimTime::from_secs_f64;
        proto.enable_dsdv(DsdvParams {
            update_interval: secs(d.update_interval_s),
            k: d.k_next_hops as usize,
            initial_settling: secs(d.initial_settling_s),
            settling_weight: d.settling_weight,
            min_trigger_gap: secs(d.min_trigger_gap_s),
            route_timeout: secs(d.route_timeout_s.unwrap_or(3.0 * d.update_interval_s)),
            metric: if d.metric == "hop_count" {
                Metric::HopCount
            } else {
                Metric::Etx
            },
            incremental: d.triggered_updates == "incremental",
        });
        for node in 0..n as u32 {
            let at = proto.dsdv_next_periodic(node, true);
            world.queue.schedule(
                at,
                crate::sim::Event::NetTimer {
                    node,
                    kind: NetTimerKind::DsdvPeriodic,
                },
            );
        }
    }
    if let Some(o) = &sc.net.olsr {
        use crate::net::olsr::OlsrParams;
        let secs = SimTime::from_secs_f64;
        proto.enable_olsr(OlsrParams {
            tc_interval: secs(o.tc_interval_s),
            max_jitter: secs(o.max_jitter_s),
            neighb_hold: secs(o.neighb_hold_s),
        });
        for node in 0..n as u32 {
            let at = proto.olsr_next_tc(node, true);
            world.queue.schedule(
                at,
                crate::sim::Event::NetTimer {
                    node,
                    kind: NetTimerKind::OlsrTc,
                },
            );
        }
    }
    world.routing = std::mem::take(&mut world.routing).with_protocols(proto);
}
