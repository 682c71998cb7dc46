//! DiffQ against TCP-SACK at scale (DiffQ §6.3, Figs. 11-12 and Table 3): random flows on a
//! random 40-node topology, 4 to 32 flows, several seeds.

mod common;
use common::run;

use xlayer_core::Simulation;

/// Mean over seeds of (Jain index, median per-flow throughput, aggregate throughput, log
/// utility).
fn measure(preset: &str, flows: u32, seeds: &[u64]) -> (f64, f64, f64, f64) {
    let text = include_str!("../../../scenarios/diffq-ablation.toml");
    let runs: Vec<(f64, f64, f64, f64)> = seeds
        .iter()
        .map(|&seed| {
            // The paper's runs last a minute; 40 s (30 s measured) keeps the test short.
            let toml = text
                .replace("preset = \"diffq-udp\"", &format!("preset = \"{preset}\""))
                .replace("seed = 1", &format!("seed = {seed}"))
                .replace("count = 16", &format!("count = {flows}"))
                .replace("duration_s = 60.0", "duration_s = 40.0");
            let r = run(&toml);
            let mut tp: Vec<f64> = (0..r.flows.len())
                .map(|i| r.flow_f64(i, "throughput_bps"))
                .collect();
            tp.sort_by(f64::total_cmp);
            let n = tp.len();
            let median = if n % 2 == 1 {
                tp[n / 2]
            } else {
                (tp[n / 2 - 1] + tp[n / 2]) / 2.0
            };
            (
                r.summary_f64("jain_index"),
                median,
                r.summary_f64("aggregate_throughput_bps"),
                r.summary_f64("log_utility"),
            )
        })
        .collect();
    let k = runs.len() as f64;
    (
        runs.iter().map(|r| r.0).sum::<f64>() / k,
        runs.iter().map(|r| r.1).sum::<f64>() / k,
        runs.iter().map(|r| r.2).sum::<f64>() / k,
        runs.iter().map(|r| r.3).sum::<f64>() / k,
    )
}

/// `measure` for two stacks at each flow count, each on its own thread.
type Pair = ((f64, f64, f64, f64), (f64, f64, f64, f64));
fn compare(a: &str, b: &str, counts: &[u32], seeds: &[u64]) -> Vec<Pair> {
    std::thread::scope(|s| {
        let handles: Vec<_> = counts
            .iter()
            .map(|&n| {
                (
                    s.spawn(move || measure(a, n, seeds)),
                    s.spawn(move || measure(b, n, seeds)),
                )
            })
            .collect();
        handles
            .into_iter()
            .map(|(x, y)| (x.join().unwrap(), y.join().unwrap()))
            .collect()
    })
}

#[test]
fn diffq_tcp_is_fairer_than_tcp_sack_and_the_gap_grows_with_the_number_of_flows() {
    // §6.3: DiffQ-TCP's fairness index is higher than TCP-SACK's, its median per-flow
    // throughput higher, and the median ratio (Table 3) grows with the number of flows, while
    // the aggregate stays comparable (Fig. 12(b)). The document's ratios (1.96 / 3.45 / 4.35 /
    // 8.18 for 4 / 8 / 16 / 32 flows) are far larger than xlayer's (about 0.9 / 1.0 / 1.2 /
    // 1.15): its testbed's TCP-SACK starved up to 60 % of the flows, xlayer's starves few; only
    // the direction and the growth are asserted.
    let seeds = [1, 2, 3];
    let counts = [4u32, 8, 16, 32];
    let results = compare("diffq-tcp", "tcp-sack", &counts, &seeds);
    let mut ratios = Vec::new();
    for (&n, &((dj, dm, da, _), (tj, tm, ta, _))) in counts.iter().zip(&results) {
        eprintln!(
            "{n:2} flows: Jain {dj:.3} vs {tj:.3}, median {:.1} vs {:.1} kbit/s, aggregate {:.2} vs {:.2} Mbit/s (DiffQ-TCP vs TCP-SACK)",
            dm / 1e3,
            tm / 1e3,
            da / 1e6,
            ta / 1e6
        );
        assert!(dj > tj, "{n} flows: Jain {dj:.3} vs TCP-SACK {tj:.3}");
        assert!(
            da > 0.6 * ta,
            "{n} flows: aggregate {da:.0} against TCP-SACK's {ta:.0} is not comparable"
        );
        ratios.push(dm / tm);
    }
    eprintln!("median ratio DiffQ-TCP / TCP-SACK by flow count: {ratios:.2?}");
    assert!(ratios[2] > 1.0 && ratios[3] > 1.0, "{ratios:.2?}");
    assert!(
        ratios[2] > ratios[0] && ratios[3] > ratios[0],
        "the median gap should grow with the number of flows: {ratios:.2?}"
    );
}

#[test]
fn diffq_udp_is_fairer_than_tfrc_ecn_with_many_flows() {
    // §6.3, Figs. 13-14: "DiffQ-UDP achieves still much better fairness than TFRC-ECN" — even
    // without losses as congestion signals, an end-to-end rate control leaves flows starving.
    // (The document also reports up to 20 % more aggregate throughput; xlayer measures 80-86 %
    // of TFRC-ECN's, so that part is not asserted.)
    let counts = [16u32, 32];
    for (&n, &((dj, dm, da, du), (tj, tm, ta, tu))) in
        counts
            .iter()
            .zip(&compare("diffq-udp", "tfrc-ecn", &counts, &[1, 2, 3]))
    {
        eprintln!(
            "{n:2} flows: Jain {dj:.3} vs {tj:.3}, median {:.1} vs {:.1} kbit/s, aggregate {:.2} vs {:.2} Mbit/s, log utility {du:.1} vs {tu:.1} (DiffQ-UDP vs TFRC-ECN)",
            dm / 1e3,
            tm / 1e3,
            da / 1e6,
            ta / 1e6
        );
        assert!(
            dj > tj + 0.05,
            "{n} flows: Jain {dj:.3} vs TFRC-ECN {tj:.3}"
        );
        assert!(dm > tm, "{n} flows: median {dm:.0} vs TFRC-ECN {tm:.0}");
        assert!(
            du > tu,
            "{n} flows: log utility {du:.1} vs TFRC-ECN {tu:.1}"
        );
    }
}

#[test]
fn multi_path_diffq_spreads_a_flow_over_its_candidate_forwarders() {
    // §4.2: with a candidate forwarder set a flow is no longer tied to one next hop. Relay 1
    // also carries node 4's flow; with two candidates flow 0 sends a larger part of its
    // packets through relay 2 than single-path DiffQ does over the same DSDV-ETX routing
    // (which moves between the relays only when their ETX estimates cross).
    let text = include_str!("../../../scenarios/diffq-multipath.toml")
        .replace("[radio]", "[net]\nrouting = \"dsdv\"\n\n[radio]");
    let share = |k: u32| {
        let (mut r1, mut r2) = (0, 0);
        for seed in 1..=3 {
            let r = run(&text
                .replace("seed = 1", &format!("seed = {seed}"))
                .replace("next_hops = 2", &format!("next_hops = {k}")));
            for f in 0..2 {
                assert!(
                    r.flow_f64(f, "throughput_bps") > 100e3,
                    "K = {k}, seed {seed}: flow {f} starved"
                );
            }
            r1 += r.node_f64(1, "forwarded") as i64;
            r2 += r.node_f64(2, "forwarded") as i64;
        }
        eprintln!("K = {k}: relay 1 forwarded {r1}, relay 2 {r2} (seeds 1-3)");
        r2 as f64 / (r1 + r2) as f64
    };
    let (single, multi) = (share(1), share(2));
    assert!(
        multi > single + 0.08,
        "relay 2's share: {multi:.3} with two candidates, {single:.3} with one"
    );
}

#[test]
fn multi_path_settings_that_cannot_work_are_errors_naming_the_field() {
    let text = include_str!("../../../scenarios/diffq-multipath.toml");
    for bad in [
        text.replace("\nnext_hops = 2\n", "\nnext_hops = 0\n"),
        text.replace(
            "\nnext_hops = 2\n",
            "\nnext_hops = 2\nmode = \"rate_only\"\n",
        ),
        text.replace("[radio]", "[net]\nrouting = \"olsr\"\n\n[radio]"),
    ] {
        let e = Simulation::from_toml(&bad)
            .err()
            .expect("an error")
            .to_string();
        assert!(e.contains("stack.diffq.next_hops"), "{e}");
    }
    let sim = Simulation::from_toml(text).unwrap();
    assert_eq!(sim.scenario.net.routing, "dsdv");
    assert!(sim.scenario.net.dsdv.as_ref().unwrap().k_next_hops >= 2);
}

/// A starved pair and what it gets alone: `(src, dst, bit/s)`.
type StarvedPair = (u32, u32, f64);

/// The pairs TCP-SACK starves (below 1 kbit/s, Fig. 12's line) among the 32 random flows of
/// `scenarios/diffq-testbed.toml` on `seed`, and the throughput each one gets when it runs
/// alone under TCP-SACK on the same network over the same minute: `(src, dst, bit/s)`.
fn tcp_starved_pairs_alone(seed: u64) -> Vec<StarvedPair> {
    let text = include_str!("../../../scenarios/diffq-testbed.toml")
        .replace("preset = \"diffq-tcp\"", "preset = \"tcp-sack\"")
        // The run's seed (the first `seed = 1`) draws the pairs; the topology's stays 1.
        .replacen("seed = 1", &format!("seed = {seed}"), 1);
    let crowded = run(&text);
    let starved: Vec<(u32, u32)> = (0..crowded.flows.len())
        .filter(|&i| crowded.flow_f64(i, "throughput_bps") < 1e3)
        .map(|i| {
            (
                crowded.flow_f64(i, "src") as u32,
                crowded.flow_f64(i, "dst") as u32,
            )
        })
        .collect();
    let random = "[flows_random]\ncount = 32\npayload_bytes = 1400\nstart_s = 10.0";
    assert!(text.contains(random), "the scenario's flows changed");
    starved
        .into_iter()
        .map(|(src, dst)| {
            let alone = run(&text.replace(
                random,
                &format!(
                    "[[flows]]\nsrc = {src}\ndst = {dst}\npayload_bytes = 1400\nstart_s = 10.0"
                ),
            ));
            (src, dst, alone.flow_f64(0, "throughput_bps"))
        })
        .collect()
}

/// [`tcp_starved_pairs_alone`] on seeds 1-3, each seed on its own thread.
fn tcp_starved_pairs_alone_seeds_1_to_3() -> Vec<(u64, Vec<StarvedPair>)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = [1u64, 2, 3]
            .iter()
            .map(|&seed| (seed, s.spawn(move || tcp_starved_pairs_alone(seed))))
            .collect();
        handles
            .into_iter()
            .map(|(seed, h)| (seed, h.join().unwrap()))
            .collect()
    })
}

#[test]
fn the_paths_tcp_starves_on_the_testbed_carry_hundreds_of_kbit_s_alone() {
    // §6.3: "these paths where TCP flows are starving can support more than 500 kbps when run
    // without any competing flows" — the starvation of 32 flows comes from their competition,
    // not from paths too poor to carry a flow (issue 20: the flows DiffQ-TCP starves there are
    // connections stalled behind segments that contention loses, README, Validation). Rough
    // size: the median pair alone carries at least half the document's figure.
    let mut alone = Vec::new();
    for (seed, pairs) in tcp_starved_pairs_alone_seeds_1_to_3() {
        eprintln!(
            "seed {seed}: {} pairs starved by TCP-SACK at 32 flows, alone (kbit/s): {:.0?}",
            pairs.len(),
            pairs.iter().map(|p| p.2 / 1e3).collect::<Vec<_>>()
        );
        assert!(!pairs.is_empty(), "seed {seed}: TCP-SACK starved no pair");
        alone.extend(pairs.iter().map(|p| p.2));
    }
    alone.sort_by(f64::total_cmp);
    let median = alone[alone.len() / 2];
    assert!(
        median >= 250e3,
        "the pairs TCP-SACK starves carry a median {:.0} kbit/s alone",
        median / 1e3
    );
}

#[test]
#[ignore = "does not hold: alone, 5 of the 21 pairs TCP-SACK starves on seeds 1-3 carry more than 500 kbit/s (median 300, least 143); README, Validation"]
fn every_path_tcp_starves_on_the_testbed_carries_more_than_500_kbit_s_alone() {
    // The document's §6.3 literally: every path on which TCP starves supports more than
    // 500 kbit/s without competing flows.
    for (seed, pairs) in tcp_starved_pairs_alone_seeds_1_to_3() {
        for (src, dst, bps) in pairs {
            assert!(
                bps > 500e3,
                "seed {seed}: {src}→{dst} carries {:.0} kbit/s alone",
                bps / 1e3
            );
        }
    }
}
