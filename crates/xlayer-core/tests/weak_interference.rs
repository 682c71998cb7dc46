//! Weak interference in bulk (`radio.weak_interference = "bulk"`, `crate::phy`) against one
//! start and one end event per receiver (`"events"`): the same results within the noise of the
//! seed, for fewer events. `validation/weak_interference.py` makes the same comparison on
//! random-200 and mesh-7x7 over 10 seeds.

mod common;
use common::run;

/// 40 nodes at random on 900 m x 900 m under ns-2's ranges (250 m reception, 550 m carrier
/// sense, two-ray ground): most of what a frame delivers is below both thresholds.
fn dense(seed: u64, mode: &str, fading: &str) -> String {
    format!(
        r#"
name = "weak"
seed = {seed}
duration_s = 4.0
warmup_s = 0.5

[radio]
standard = "802.11b"
data_rate_mbps = 11.0
basic_rate_mbps = 1.0
propagation = "two_ray_ground"
tx_range_m = 250.0
cs_range_m = 550.0
fading = "{fading}"
weak_interference = "{mode}"

[topology]
kind = "random"
count = 40
width_m = 900.0
height_m = 900.0

[flows_random]
count = 6
rate_bps = 400000.0
payload_bytes = 1000
"#
    )
}

/// Two-sided 95 % Student t quantile for `n - 1` degrees of freedom (n ≤ 6).
fn t95(n: usize) -> f64 {
    [f64::NAN, 12.706, 4.303, 3.182, 2.776, 2.571][n - 1]
}

#[test]
fn bulk_and_events_agree_within_the_noise_of_the_seed() {
    for fading in ["none", "rayleigh"] {
        let (mut diffs, mut agg) = (Vec::new(), Vec::new());
        for seed in 1..=5 {
            let ev = run(&dense(seed, "events", fading));
            let bulk = run(&dense(seed, "bulk", fading));
            let (a, b) = (
                ev.summary_f64("aggregate_throughput_bps"),
                bulk.summary_f64("aggregate_throughput_bps"),
            );
            let (e_ev, e_bulk) = (ev.summary_f64("events"), bulk.summary_f64("events"));
            eprintln!(
                "{fading}, seed {seed}: {a:.0} bit/s with events, {b:.0} in bulk; \
                 {e_ev} events against {e_bulk}"
            );
            assert!(
                e_bulk < e_ev,
                "bulk delivery saves events: {e_bulk} against {e_ev}"
            );
            diffs.push(b - a);
            agg.push(a);
        }
        let n = diffs.len();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let sd = |v: &[f64]| {
            let m = mean(v);
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
        };
        let (d, sd_d, sd_agg) = (mean(&diffs), sd(&diffs), sd(&agg));
        eprintln!(
            "{fading}: mean difference {d:.0} bit/s (sd {sd_d:.0}); the seeds' spread {sd_agg:.0}"
        );
        // The paired difference's 95 % interval holds 0 ...
        assert!(
            d.abs() <= t95(n) * sd_d / (n as f64).sqrt(),
            "{fading}: bulk − events {d:.0} bit/s, sd {sd_d:.0}"
        );
        // ... and is small against how much the aggregate moves from seed to seed.
        assert!(
            d.abs() <= 0.25 * sd_agg,
            "{fading}: bulk − events {d:.0} bit/s against a seed spread of {sd_agg:.0}"
        );
    }
}

#[test]
fn range_propagation_has_no_weak_signals_so_both_modes_are_one_run() {
    // Under `propagation = "range"` a signal arrives at full power or not at all.
    let text = include_str!("../../../scenarios/mesh-7x7.toml")
        .replace("duration_s = 60.0", "duration_s = 3.0");
    let events = text.replace("[radio]", "[radio]\nweak_interference = \"events\"");
    let (a, b) = (run(&text), run(&events));
    for key in ["aggregate_throughput_bps", "events", "delivery_ratio"] {
        assert_eq!(a.summary_f64(key), b.summary_f64(key), "{key}");
    }
    assert_eq!(a.nodes, b.nodes);
}

/// Runs `toml` with the carrier-sense-only signals (between the carrier-sense and the reception
/// threshold) delivered in bulk where the scenario allows it (the default), or, with
/// `in_bulk = false`, as one start and one end event per receiver.
fn run_sensed(toml: &str, in_bulk: bool) -> xlayer_core::Results {
    let mut sim = xlayer_core::Simulation::from_toml(toml).unwrap_or_else(|e| panic!("{e}"));
    if !in_bulk {
        sim.world.cfg.sensed_below_mw = sim.world.cfg.weak_below_mw;
    }
    sim.run();
    sim.results()
}

#[test]
fn zmac_gets_carrier_sense_only_signals_in_bulk_with_the_results_of_events() {
    // Z-MAC reads carrier sense only when it decides (an access, a response timeout), so the
    // signals a node senses but cannot decode need no events of their own: the runs are the
    // same to the last bit, for fewer events. Under ns-2's ranges most of a frame's receivers
    // within carrier-sense range cannot decode it.
    for fading in ["none", "rayleigh"] {
        for seed in [1, 2] {
            let text = dense_zmac(seed, fading);
            let bulk = run_sensed(&text, true);
            let events = run_sensed(&text, false);
            let (e_bulk, e_events) = (bulk.summary_f64("events"), events.summary_f64("events"));
            eprintln!("{fading}, seed {seed}: {e_bulk} events in bulk, {e_events} with events");
            assert!(
                e_bulk < 0.8 * e_events,
                "{fading}, seed {seed}: {e_bulk} events against {e_events}"
            );
            assert!(bulk.summary_f64("aggregate_throughput_bps") > 0.0);
            assert_same_runs(&bulk, &events, &format!("{fading}, seed {seed}"));
        }
    }
}

/// `a` and `b` are the same run to the last bit but for their event counts and wall times:
/// flows, nodes and every other summary key (compared as text: a NaN cell, a flow that never
/// completes, equals itself there).
fn assert_same_runs(a: &xlayer_core::Results, b: &xlayer_core::Results, what: &str) {
    let text = |rows: &[xlayer_core::Row]| format!("{rows:?}");
    assert_eq!(text(&a.flows), text(&b.flows), "{what}: flows");
    assert_eq!(text(&a.nodes), text(&b.nodes), "{what}: nodes");
    for (key, value) in &a.summary {
        if !matches!(*key, "events" | "events_per_s" | "wall_s") && !key.ends_with("_ns") {
            let other = b.summary.iter().find(|(k, _)| k == key).map(|(_, v)| v);
            assert_eq!(
                format!("{:?}", Some(value)),
                format!("{other:?}"),
                "{what}: summary {key}"
            );
        }
    }
}

/// The 40 nodes of [`dense`] under ZMAC+ (set-up over after 1 s).
fn dense_zmac(seed: u64, fading: &str) -> String {
    dense(seed, "bulk", fading).replace(
        "[topology]",
        "[mac]\naccess = \"zmacplus\"\n[mac.zmac]\nsetup_s = 1.0\n\n[topology]",
    )
}

#[test]
fn zmac_nodes_that_read_no_carrier_sense_get_no_weak_wake_ups_and_the_same_runs() {
    // An idle Z-MAC node with no attempt reads carrier sense only once its next slot opens
    // one, and is told it afresh then: its weak-interference wake-ups before tell it nothing
    // it uses. Without them the runs are those with them to the last bit, for fewer events.
    for fading in ["none", "rayleigh"] {
        for seed in [1, 2] {
            let text = dense_zmac(seed, fading);
            let run = |every_node: bool| {
                let mut sim = xlayer_core::Simulation::from_toml(&text).unwrap();
                sim.world.cfg.wake_every_node = every_node;
                sim.run();
                sim.results()
            };
            let (skipped, every) = (run(false), run(true));
            let (e_skipped, e_every) = (skipped.summary_f64("events"), every.summary_f64("events"));
            eprintln!("{fading}, seed {seed}: {e_skipped} events, {e_every} with every wake-up");
            assert!(
                e_skipped < e_every,
                "{fading}, seed {seed}: {e_skipped} events against {e_every}"
            );
            assert!(skipped.summary_f64("aggregate_throughput_bps") > 0.0);
            assert_same_runs(&skipped, &every, &format!("{fading}, seed {seed}"));
        }
    }
}

#[test]
fn dcf_keeps_carrier_sense_only_signals_as_events() {
    // DCF counts its backoff down through every busy period, so it keeps the events.
    let text = dense(1, "bulk", "none");
    let (a, b) = (run_sensed(&text, true), run_sensed(&text, false));
    assert_eq!(a.summary_f64("events"), b.summary_f64("events"));
}

#[test]
fn a_node_never_has_more_than_one_weak_wake_up_in_the_queue() {
    // A node whose weak signals may tip its carrier sense is woken where it turns; a later
    // look that finds an earlier turn moves that wake-up (one timer per node), so the queue
    // never holds one the node no longer wants (issue 15: nothing cancelled is popped).
    use xlayer_core::sim::Event;
    for fading in ["none", "rayleigh"] {
        let mut sim = xlayer_core::Simulation::from_toml(&dense(1, "bulk", fading)).unwrap();
        let (mut looks, mut pending_seen) = (0, 0);
        let mut t = 0.0;
        while t < 2.0 {
            t += 0.0003;
            sim.run_until(t);
            let mut per_node = std::collections::HashMap::new();
            for (_, e) in sim.world.queue.pending() {
                if let Event::WeakWake { node, .. } = e {
                    *per_node.entry(node).or_insert(0) += 1;
                }
            }
            pending_seen += per_node.len();
            looks += 1;
            for (node, count) in per_node {
                assert_eq!(
                    count, 1,
                    "{fading}: node {node} has {count} wake-ups at {t:.4} s"
                );
            }
        }
        eprintln!("{fading}: {pending_seen} wake-ups pending over {looks} looks");
        assert!(
            pending_seen > looks / 10,
            "{fading}: too few wake-ups to judge"
        );
    }
}

/// Without fading or shadowing, a sender's link list is cut once into the links that get
/// events, the carrier-sense-only ones and the weak ones (`World::transmit` then runs three
/// loops with nothing to decide per link). A shadowing of 1e-300 dB changes no power (the
/// factor 10^(z·1e-301) rounds to 1.0) but takes the link-by-link loop, so the two runs must
/// agree exactly, also when the transmit power of half the nodes falls by 6 dB mid-run and
/// comes back (the cuts move, and are computed again).
#[test]
fn cutting_link_lists_by_class_changes_no_result() {
    use xlayer_core::{tune, Simulation};
    let run_with = |sigma: &str| {
        let text = dense(3, "bulk", "none").replace(
            "weak_interference = \"bulk\"",
            &format!("weak_interference = \"bulk\"\nshadowing_sigma_db = {sigma}"),
        );
        let mut s = Simulation::from_toml(&text).unwrap();
        s.run_until(1.5);
        for node in (0..40).step_by(2) {
            tune::set(&mut s.world, node, "phy.tx_power_offset_db", -6.0).unwrap();
        }
        s.run_until(2.5);
        for node in (0..40).step_by(2) {
            tune::set(&mut s.world, node, "phy.tx_power_offset_db", 0.0).unwrap();
        }
        s.run();
        let r = s.results();
        (
            format!("{:?}\n{:?}", r.flows, r.nodes),
            r.summary_f64("events"),
        )
    };
    let (cut, events) = run_with("0.0");
    let (by_link, events_by_link) = run_with("1e-300");
    assert!(events > 10_000.0, "{events} events");
    assert_eq!(events, events_by_link);
    assert_eq!(cut, by_link);
}
