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
