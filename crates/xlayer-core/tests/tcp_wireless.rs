//! TCP and TFRC over the wireless simulator: reliability across a lossy multi-hop path, sharing
//! of one bottleneck, and the multi-hop fairness problem of DiffQ's Fig. 2.

mod common;
use common::run;

use xlayer_core::{Results, Simulation, Value};

fn flow_str(r: &Results, flow: usize, key: &str) -> String {
    match r.flows[flow]
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
    {
        Some(Value::Str(s)) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// 802.11b at 2 Mbit/s, ns-2 ranges (250 m reception, 550 m carrier sense).
const RADIO: &str =
    "[radio]\nstandard = \"802.11b\"\ndata_rate_mbps = 2.0\nbasic_rate_mbps = 1.0\n\
                     propagation = \"two_ray_ground\"\ntx_range_m = 250.0\ncs_range_m = 550.0\n";

#[test]
fn every_variant_delivers_a_bulk_transfer_exactly_once_over_a_lossy_four_hop_path() {
    // Rayleigh fading on 150 m hops and only three MAC attempts per frame: the MAC loses packets
    // (and TCP ACKs, SYNs and FINs) that TCP has to repair end to end.
    let size = 150_000 + 77;
    for (cc, sack) in [
        ("reno", false),
        ("newreno", false),
        ("newreno", true),
        ("westwood", false),
        ("few", false),
    ] {
        let toml = format!(
            "duration_s = 300.0\nseed = 3\n{RADIO}fading = \"rayleigh\"\n[mac]\nshort_retry_limit = 3\n\
             [topology]\nkind = \"chain\"\ncount = 5\nspacing_m = 150.0\n\
             [[flows]]\nsrc = 0\ndst = 4\ntransport = \"tcp\"\ncc = \"{cc}\"\nsack = {sack}\n\
             size_bytes = {size}\npayload_bytes = 1000\n[flows.tcp]\nverify_stream = true\n"
        );
        let r = run(&toml);
        let name = format!("{cc}{}", if sack { "+sack" } else { "" });
        let drops: f64 = r
            .nodes
            .iter()
            .map(
                |row| match row.iter().find(|(k, _)| *k == "drops_retry_limit") {
                    Some((_, Value::Int(i))) => *i as f64,
                    _ => 0.0,
                },
            )
            .sum();
        assert!(
            drops > 0.0,
            "{name}: the MAC dropped nothing, the test proves nothing"
        );
        assert!(
            r.flow_f64(0, "retransmits") > 0.0,
            "{name}: no TCP retransmission"
        );
        assert_eq!(
            r.flow_f64(0, "app_bytes"),
            size as f64,
            "{name}: bytes delivered"
        );
        assert_eq!(
            r.flow_f64(0, "stream_errors"),
            0.0,
            "{name}: wrong bytes delivered"
        );
        assert!(
            r.flow_f64(0, "completion_s").is_finite(),
            "{name}: the transfer did not complete"
        );
    }
}

fn two_senders_one_receiver(second: &str, seed: u64) -> Results {
    // Senders 0 and 2 both 150 m from receiver 1, 300 m from each other (they sense each other).
    let toml = format!(
        "duration_s = 120.0\nwarmup_s = 20.0\nseed = {seed}\n{RADIO}\
         [topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 150.0\n\
         [[flows]]\nsrc = 0\ndst = 1\ntransport = \"tcp\"\ncc = \"reno\"\n\
         [[flows]]\nsrc = 2\ndst = 1\n{second}\n"
    );
    run(&toml)
}

#[test]
fn two_reno_flows_on_one_bottleneck_share_it_fairly() {
    for seed in 1..=3 {
        let r = two_senders_one_receiver("transport = \"tcp\"\ncc = \"reno\"", seed);
        let (a, b) = (
            r.flow_f64(0, "throughput_bps"),
            r.flow_f64(1, "throughput_bps"),
        );
        let jain = r.summary_f64("jain_index");
        assert!(
            jain > 0.95,
            "seed {seed}: {a:.0} and {b:.0} bit/s, Jain {jain:.3}"
        );
        assert!(
            a + b > 1.0e6,
            "seed {seed}: the bottleneck is barely used ({a:.0} + {b:.0})"
        );
    }
}

#[test]
fn tfrc_and_tcp_on_one_bottleneck_share_within_a_factor_of_two() {
    for seed in 1..=3 {
        let r = two_senders_one_receiver("transport = \"tfrc\"", seed);
        assert_eq!(flow_str(&r, 1, "transport"), "tfrc");
        let (tcp, tfrc) = (
            r.flow_f64(0, "throughput_bps"),
            r.flow_f64(1, "throughput_bps"),
        );
        let ratio = tcp / tfrc;
        assert!(
            (0.5..=2.0).contains(&ratio),
            "seed {seed}: TCP {tcp:.0} vs TFRC {tfrc:.0} bit/s (ratio {ratio:.2})"
        );
    }
}

fn lone_flow(transport: &str) -> Results {
    let toml = format!(
        "duration_s = 60.0\nwarmup_s = 10.0\n{RADIO}[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 150.0\n\
         [[flows]]\nsrc = 0\ndst = 1\ntransport = \"{transport}\"\n"
    );
    run(&toml)
}

#[test]
fn tfrc_ecn_alone_keeps_the_link_busy_like_a_saturating_source() {
    // Alone on a link TFRC-ECN sees no loss events (losses do not count) until its own queue
    // passes 75% of 50 packets, so it runs the link near what a backlogged UDP source gets.
    let udp = lone_flow("udp").flow_f64(0, "throughput_bps");
    let r = lone_flow("tfrc-ecn");
    assert_eq!(flow_str(&r, 0, "transport"), "tfrc-ecn");
    let ecn = r.flow_f64(0, "throughput_bps");
    assert!(
        ecn > 0.8 * udp && ecn <= 1.01 * udp,
        "TFRC-ECN alone {ecn:.0} bit/s vs saturating UDP {udp:.0} bit/s"
    );
}

#[test]
fn diffq_fig2_the_three_hop_tcp_flow_starves_once_the_one_hop_flows_join() {
    let text = include_str!("../../../scenarios/diffq-fig2.toml");
    for seed in 1..=3 {
        let toml = text.replace("seed = 1", &format!("seed = {seed}"));
        let mut sim = Simulation::from_toml(&toml).unwrap();
        sim.run();
        let r = sim.results();
        let long = r.flow_f64(0, "throughput_bps");
        let (e, g) = (
            r.flow_f64(1, "throughput_bps"),
            r.flow_f64(2, "throughput_bps"),
        );
        assert!(
            long < 0.2 * e && long < 0.2 * g,
            "seed {seed}: 3-hop {long:.0} bit/s vs 1-hop {e:.0} and {g:.0} bit/s"
        );
        // Before the 1-hop flows join, the 3-hop flow does carry traffic.
        let early: Vec<f64> = r
            .timeseries
            .iter()
            .filter_map(|row| {
                let get = |k: &str| row.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
                match (get("flow"), get("t_s"), get("throughput_bps")) {
                    (Some(Value::Int(0)), Some(Value::Float(t)), Some(Value::Float(x)))
                        if (5.0..20.0).contains(&t) =>
                    {
                        Some(x)
                    }
                    _ => None,
                }
            })
            .collect();
        let early_mean = early.iter().sum::<f64>() / early.len().max(1) as f64;
        assert!(
            early_mean > 5.0 * long.max(1.0) && early_mean > 100e3,
            "seed {seed}: alone the 3-hop flow carried {early_mean:.0} bit/s, later {long:.0}"
        );
    }
}

fn fig2_with(preset: &str, seed: u64) -> Results {
    let text = include_str!("../../../scenarios/diffq-fig2.toml");
    let toml = text.replace("seed = 1", &format!("seed = {seed}")).replace(
        "[radio]",
        &format!("[stack]\npreset = \"{preset}\"\n\n[radio]"),
    );
    run(&toml)
}

#[test]
fn diffq_fig2_diffq_keeps_all_three_flows_fair() {
    // DiffQ Fig. 10: with differential backlog scheduling, MAC priorities and source rate
    // control the 3-hop flow keeps a share; the issue asks for a Jain index of at least 0.8
    // over the period when all three flows run.
    for preset in ["diffq-tcp", "diffq-udp"] {
        for seed in 1..=3 {
            let r = fig2_with(preset, seed);
            let rates: Vec<f64> = (0..3).map(|i| r.flow_f64(i, "throughput_bps")).collect();
            let jain = r.summary_f64("jain_index");
            assert!(
                jain >= 0.8,
                "{preset} seed {seed}: Jain {jain:.3}, rates {rates:?}"
            );
            assert!(
                rates[0] > 0.15 * rates[1],
                "{preset} seed {seed}: {rates:?}"
            );
            let tcp = fig2_with("tcp-sack", seed);
            assert!(
                jain > tcp.summary_f64("jain_index") + 0.05,
                "{preset} seed {seed}: no fairer than TCP-SACK"
            );
        }
    }
}

#[test]
fn diffq_ablation_each_component_cuts_queue_drops_at_intermediate_nodes() {
    // DiffQ §6.4 / Fig. 15: queue overflows at intermediate nodes fall from rate control only,
    // to rate control + scheduling, to full DiffQ (by a large factor), and "this is reflected in
    // the log utilities": full DiffQ's is the highest.
    let text = include_str!("../../../scenarios/diffq-ablation.toml");
    let (drops, utility): (Vec<i64>, Vec<f64>) = ["rate_only", "rate_scheduling", "full"]
        .iter()
        .map(|m| {
            let r = run(&text.replace("mode = \"full\"", &format!("mode = \"{m}\"")));
            (
                (r.node_total("drops_dest_queue_transit") as i64),
                r.summary_f64("log_utility"),
            )
        })
        .unzip();
    eprintln!(
        "rate_only / rate_scheduling / full: transit queue drops {drops:?}, log utility {utility:?}"
    );
    assert!(drops[0] > drops[1] && drops[1] > drops[2], "{drops:?}");
    assert!(
        drops[1] > 10 * drops[2],
        "full DiffQ should cut drops by a large factor: {drops:?}"
    );
    assert!(
        utility[2] > utility[0] && utility[2] > utility[1],
        "full DiffQ should have the highest log utility: {utility:?}"
    );
}
