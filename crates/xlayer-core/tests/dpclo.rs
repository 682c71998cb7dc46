//! DPCLO (the practical cross-layer optimization document, §IV-V) over ZMAC+ and 802.11e.

mod common;
use common::run;

use xlayer_core::{Results, Simulation};

fn with_preset(text: &str, preset: &str, seed: u64) -> String {
    text.replace("seed = 1", &format!("seed = {seed}")).replace(
        "[radio]",
        &format!("[stack]\npreset = \"{preset}\"\n\n[radio]"),
    )
}

#[test]
fn dpclo_fig5a_zmacplus_shares_far_more_evenly_than_80211e() {
    // Fig. 5(B)/(C): under information asymmetry one flow starves long-term over 802.11e, while
    // under ZMAC+ "the ratio of the two throughputs is much closer to 1" — here with DPCLO on
    // top of either MAC (crates/xlayer-core/tests/zmac.rs checks the MACs alone). The split is
    // min(a/c, c/a) of the two flows' throughputs (1: even; either flow may be the one that
    // starves). Over seeds 1-10: ZMAC+'s split is the more even on at least 8 seeds; the median
    // 802.11e split is below 0.1 (one flow gets under a tenth of the other: starving) and the
    // median ZMAC+ split above 0.25.
    let text = include_str!("../../../scenarios/dpclo-fig5a.toml");
    let split = |preset: &str, seed: u64| {
        let r = run(&with_preset(text, preset, seed));
        let (a, c) = (
            r.flow_f64(0, "throughput_bps"),
            r.flow_f64(1, "throughput_bps"),
        );
        if a <= 0.0 || c <= 0.0 {
            0.0
        } else {
            (a / c).min(c / a)
        }
    };
    let (mut e, mut z, mut zmac_closer) = (vec![], vec![], 0);
    for seed in 1..=10 {
        let (es, zs) = (split("dpclo-80211e", seed), split("dpclo-zmacplus", seed));
        eprintln!("seed {seed}: split {es:.3} over 802.11e, {zs:.3} over ZMAC+");
        zmac_closer += (zs > es) as u32;
        e.push(es);
        z.push(zs);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let (me, mz) = (median(&mut e), median(&mut z));
    eprintln!(
        "median split: 802.11e {me:.3}, ZMAC+ {mz:.3}; ZMAC+ more even on {zmac_closer} of 10"
    );
    assert!(
        zmac_closer >= 8,
        "ZMAC+ more even on {zmac_closer} of 10 seeds"
    );
    assert!(me < 0.1, "802.11e: median split {me:.3}, no starvation");
    assert!(mz > 0.25, "ZMAC+: median split {mz:.3}");
}

#[test]
fn dpclo_presets_set_their_components() {
    let text = include_str!("../../../scenarios/dpclo-fig5a.toml");
    let mut sim = Simulation::from_toml(&with_preset(text, "dpclo-zmacplus", 1)).unwrap();
    sim.run_until(15.0); // past Z-MAC set-up and the first DSDV routes
    let r = sim.results();
    let level_use = match r.summary_value("mac_level_use") {
        Some(xlayer_core::Value::Str(s)) => s.clone(),
        other => panic!("{other:?}"),
    };
    let used: Vec<u64> = level_use.split('/').map(|x| x.parse().unwrap()).collect();
    assert_eq!(used.len(), 4, "ZMAC+: low, medium, high, control");
    assert!(
        used[..3].iter().sum::<u64>() > 0,
        "data went out at the price levels"
    );
    assert_eq!(used[3], 0, "the control level is not used for data");
}

/// Per-flow throughput of the flows of `r` whose path has `hops` in `range` (hop counts of the
/// static shortest paths, the flows table's `hops`).
fn throughputs_by_hops(r: &Results, range: std::ops::RangeInclusive<i64>) -> Vec<f64> {
    (0..r.flows.len())
        .filter(|&i| {
            let hops = match r.flows[i].iter().find(|(k, _)| *k == "hops") {
                Some((_, xlayer_core::Value::Int(h))) => *h,
                other => panic!("hops column: {other:?}"),
            };
            range.contains(&hops)
        })
        .map(|i| r.flow_f64(i, "throughput_bps"))
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn dpclo_fig9_long_flows_keep_a_far_larger_share_of_short_flows_throughput_than_under_tcp() {
    // Fig. 9: on a random multi-hop network TCP's per-flow throughput falls steeply with the
    // path length (the 1-hop flows take the channel, the long ones starve), DPCLO-Z-MAC+'s
    // much less, and its long flows do not starve. scenarios/dpclo-fig9.toml shrunk for CI: 50
    // nodes on 1 km² (50 per km², against the document's 108 nodes on 1250 m x 1250 m, 69 per
    // km²), 12 random flows, 50 s; both stacks over DSDV-ETX. The flows of five seeds are pooled,
    // as Fig. 9 pools the flows of one large run; the statistic is the mean throughput of the
    // short flows (1-2 hops) over that of the long ones (4 hops and more). The ratio alone would
    // pass a stack that throttled every flow alike, so DPCLO's long flows must also carry more
    // than TCP's.
    let text = include_str!("../../../scenarios/dpclo-fig9.toml")
        .replace("count = 108", "count = 50")
        .replace("width_m = 1250.0", "width_m = 1000.0")
        .replace("height_m = 1250.0", "height_m = 1000.0")
        .replace("count = 20", "count = 12")
        .replace("duration_s = 100.0", "duration_s = 50.0");
    let pooled = |preset: &str| {
        let (mut short, mut long) = (vec![], vec![]);
        for seed in 1..=5 {
            let t = text.replace("seed = 1", &format!("seed = {seed}")).replace(
                "preset = \"dpclo-80211e\"",
                &format!("preset = \"{preset}\""),
            );
            let r = run(&t);
            short.extend(throughputs_by_hops(&r, 1..=2));
            long.extend(throughputs_by_hops(&r, 4..=i64::MAX));
        }
        assert!(
            short.len() >= 10 && long.len() >= 10,
            "{preset}: too few flows"
        );
        (mean(&short), mean(&long))
    };
    let (tcp_short, tcp_long) = pooled("tcp-sack");
    let (dp_short, dp_long) = pooled("dpclo-zmacplus");
    let (tcp_ratio, dp_ratio) = (tcp_short / tcp_long, dp_short / dp_long);
    eprintln!(
        "short/long flows: TCP-SACK {tcp_short:.0}/{tcp_long:.0} = {tcp_ratio:.2}, \
         DPCLO-ZMAC+ {dp_short:.0}/{dp_long:.0} = {dp_ratio:.2}"
    );
    assert!(
        tcp_ratio > 2.0 * dp_ratio,
        "TCP {tcp_ratio:.2} vs DPCLO {dp_ratio:.2}"
    );
    assert!(
        dp_ratio < 5.0,
        "DPCLO's long flows within a factor of a few: {dp_ratio:.2}"
    );
    assert!(
        dp_long > tcp_long,
        "long flows: DPCLO {dp_long:.0} bit/s, TCP {tcp_long:.0} bit/s"
    );
}

/// Runs `toml` in steps of 0.1 s; returns the results and the share of steps at which node
/// `node` used K >= 2 next hops towards `dst`, and the largest K any node used.
fn run_watching_k(toml: &str, node: usize, dst: u32) -> (Results, f64, u32) {
    let mut sim = Simulation::from_toml(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let end = sim.scenario.duration_s;
    let (mut steps, mut wide, mut k_max) = (0u32, 0u32, 0u32);
    let mut t = 0.1;
    while t <= end + 1e-9 {
        sim.run_until(t);
        let xlayer_core::xl::Scheduler::Dpclo(dp) = &sim.world.scheduler else {
            panic!("DPCLO runs");
        };
        steps += 1;
        wide += dp.k[node].iter().any(|&(d, k)| d == dst && k >= 2) as u32;
        k_max = dp.k.iter().flatten().map(|e| e.1).fold(k_max, u32::max);
        t += 0.1;
    }
    sim.run();
    (sim.results(), wide as f64 / steps as f64, k_max)
}

#[test]
fn dpclo_fig3_multi_path_splits_the_two_flows_more_fairly_than_single_path() {
    // §V-C.1, Fig. 3: with adaptive K, A also sends flow 1 over A-B-C-E, which unloads D, and the
    // two flows share more evenly than under single-path DPCLO (k_max = 1). Checked on seeds
    // 1-3 for both MACs, with the document's claim as the only margin: "better fairness". (Which
    // flow gains is not checked: here D's own flow 2 is the larger one and loses, the reverse of
    // the document's account; see the scenario's comment.)
    let text = include_str!("../../../scenarios/dpclo-fig3.toml");
    for preset in ["dpclo-zmacplus", "dpclo-80211e"] {
        let text = text.replace(
            "preset = \"dpclo-zmacplus\"",
            &format!("preset = \"{preset}\""),
        );
        for seed in 1..=3 {
            let text = text.replace("seed = 1", &format!("seed = {seed}"));
            let jain = |toml: &str| {
                let r = run(toml);
                let rates = [
                    r.flow_f64(0, "throughput_bps"),
                    r.flow_f64(1, "throughput_bps"),
                ];
                (xlayer_core::metrics::jain_index(&rates), rates)
            };
            let (single, rs) = jain(&text.replace("beta = 0.9", "beta = 0.9\nk_max = 1"));
            let (multi, rm) = jain(&text);
            eprintln!(
                "{preset} seed {seed}: Jain {single:.3} single-path ({:.0}/{:.0} kbit/s), \
                 {multi:.3} multi-path ({:.0}/{:.0} kbit/s)",
                rs[0] / 1e3,
                rs[1] / 1e3,
                rm[0] / 1e3,
                rm[1] / 1e3
            );
            assert!(
                multi > single,
                "{preset} seed {seed}: multi-path {multi:.3} vs single-path {single:.3}"
            );
        }
    }
}

#[test]
fn dpclo_k_max_1_keeps_k_at_one_and_adaptive_k_opens_the_second_path() {
    // scenarios/dpclo-fig3.toml: A's DSDV-ETX route to E goes through D; B is A's second
    // (downhill) next hop. Single-path DPCLO (k_max = 1) keeps K = 1 everywhere; with adaptive
    // K, A widens to K = 2 when it hears D's queue for E full and B then forwards some of A's
    // packets. (Single-path DPCLO may send through B too: ETX noise on the lossy A-D link can
    // turn A's one route there for a while — seed 1: after 40 s.)
    let text = include_str!("../../../scenarios/dpclo-fig3.toml");
    let (single, _, k_single) =
        run_watching_k(&text.replace("beta = 0.9", "beta = 0.9\nk_max = 1"), 0, 4);
    let (multi, wide, k_multi) = run_watching_k(text, 0, 4);
    let forwarded_by_b = |r: &Results| match r.nodes[1].iter().find(|(k, _)| *k == "forwarded") {
        Some((_, xlayer_core::Value::Int(v))) => *v,
        other => panic!("{other:?}"),
    };
    let (b_single, b_multi) = (forwarded_by_b(&single), forwarded_by_b(&multi));
    eprintln!(
        "K at most {k_single} single-path, {k_multi} multi-path (A at K = 2 {:.1} % of the \
         time); B forwarded {b_single} packets single-path, {b_multi} multi-path",
        100.0 * wide
    );
    assert_eq!(k_single, 1);
    assert!(k_multi >= 2, "A has two neighbours: ceil(0.9 * 2) = 2");
    assert!(
        wide > 0.02,
        "A used K = 2 {:.1} % of the time",
        100.0 * wide
    );
    assert!(
        b_multi > 2 * b_single,
        "B forwarded {b_multi} vs {b_single} (single-path: when A's ETX estimate of the lossy A-D link \
         rises above 2, its one route turns to B)"
    );
    let err = Simulation::from_toml(&text.replace("beta = 0.9", "beta = 0.9\nk_max = 0"))
        .err()
        .expect("k_max = 0 is refused")
        .to_string();
    assert!(err.contains("stack.dpclo.k_max"), "{err}");
}

#[test]
fn dpclo_without_etx_routes_by_hop_count_and_prices_every_link_at_etx_1() {
    // `stack.dpclo.etx = false` is Fig. 4's "without ETX": the preset makes DSDV count hops.
    let text = include_str!("../../../scenarios/dpclo-fig4.toml");
    let off = xlayer_core::scenario::Scenario::from_toml(
        &text.replace("beta = 0.9", "beta = 0.9\netx = false"),
    )
    .unwrap();
    assert_eq!(off.net.dsdv.as_ref().unwrap().metric, "hop_count");
    let on = xlayer_core::scenario::Scenario::from_toml(text).unwrap();
    assert_eq!(on.net.dsdv.as_ref().unwrap().metric, "etx");
}

#[test]
fn dpclo_etx_steers_around_a_lossy_short_path_where_hop_count_cannot() {
    // §V-C.2's first reason for Fig. 4: "The use of ETX as a routing metric allows each node to
    // select those next hop neighbors as forwarders to which they have high transmission
    // success probability". On Fig. 2's topology, A's only flow (A -> E) has the short path
    // A-D-E, whose two links lose half of all frames each way (ETX 1/(0.5·0.5) = 4 per link, 8
    // attempts per packet), and the clean long path A-B-C-E (3 attempts). Every node senses
    // every other, so the network carries one frame at a time and a packet's cost is its
    // attempts: over the clean path A -> E can carry up to 8/3 ≈ 2.7 times as much. With ETX,
    // A's DSDV route goes through B; hop count prefers D (though lost DSDV updates over the
    // lossy A-D link turn hop-count routes to B part of the time, so the gain stays below 2.7).
    let text = include_str!("../../../scenarios/dpclo-fig4.toml").replace(
        "random = { min = 0.0, max = 0.6 }",
        "links = [{ from = 0, to = 3, loss = 0.5 }, { from = 3, to = 4, loss = 0.5 }]",
    );
    let one_flow = &text[..text.find("# D -> F\n[[flows]]").unwrap()];
    let forwarded_by_b = |r: &Results| match r.nodes[1].iter().find(|(k, _)| *k == "forwarded") {
        Some((_, xlayer_core::Value::Int(v))) => *v,
        other => panic!("{other:?}"),
    };
    let (mut with, mut without) = (0.0, 0.0);
    for seed in 1..=3 {
        let text = one_flow.replace("seed = 1", &format!("seed = {seed}"));
        let (on, off) = (
            run(&text),
            run(&text.replace("beta = 0.9", "beta = 0.9\netx = false")),
        );
        let (a, b) = (
            on.flow_f64(0, "throughput_bps"),
            off.flow_f64(0, "throughput_bps"),
        );
        // Packets delivered in the 200 s measured (200-byte payloads).
        let received = a * 200.0 / 1600.0;
        eprintln!(
            "seed {seed}: A -> E {:.0} kbit/s with ETX (B forwarded {}), {:.0} without (B \
             forwarded {})",
            a / 1e3,
            forwarded_by_b(&on),
            b / 1e3,
            forwarded_by_b(&off)
        );
        assert!(
            forwarded_by_b(&on) as f64 > 0.8 * received,
            "seed {seed}: with ETX most of A's packets take the clean path through B"
        );
        with += a / 3.0;
        without += b / 3.0;
    }
    assert!(
        with > 1.5 * without,
        "A -> E {:.0} kbit/s with ETX against {:.0} without",
        with / 1e3,
        without / 1e3
    );
}

#[test]
#[ignore = "does not hold in xlayer: with ETX 175 kbit/s against 176 without (mean of 10 \
            draws, 200 s), ahead on 2 of 10 — ETX opens A's second path only in the ETX \
            variant (README, Validation)"]
fn dpclo_fig4_etx_raises_the_throughput_over_lossy_links() {
    // §V-C.2, Fig. 4: every link of Fig. 2's topology loses a fraction drawn from U[0, 0.6];
    // DPCLO-ZMAC+ with ETX (routing and eq. 7) gets more throughput than without. Seeds 1-10
    // are ten loss draws; the claim's direction is checked on the mean aggregate and on most
    // draws (a draw can leave one path so much better that both variants take it).
    let (with, without, ahead) = fig4_with_and_without_etx("");
    assert!(with > without, "{with:.0} against {without:.0}");
    assert!(ahead >= 6, "ETX ahead on {ahead} of 10 draws");
}

#[test]
fn dpclo_fig4_etx_raises_the_throughput_of_single_path_dpclo_over_lossy_links() {
    // Fig. 4's claim with K held at 1 in both variants (`k_max = 1`), which leaves what ETX
    // changes on its own: the route (DSDV-ETX against hop count) and eq. 7's price over the
    // link's ETX. With adaptive K the comparison is not like for like here: xlayer offers a
    // node only next hops downhill of it, so under hop count B (2 hops from E) is never A's
    // second next hop (A is 2 hops from E too) while under ETX it mostly is, and only the ETX
    // variant sends part of A's flow over the 3-hop path, taking airtime from D's one-hop flow
    // in this single carrier-sense domain (see the README's Fig. 4 row).
    let (with, without, ahead) = fig4_with_and_without_etx("k_max = 1");
    assert!(with > without, "{with:.0} against {without:.0}");
    assert!(ahead >= 6, "ETX ahead on {ahead} of 10 draws");
}

/// Fig. 4 over loss draws 1-10 at the document's 200 s: the mean aggregate of the two flows
/// with ETX and without (kbit/s), and on how many draws ETX is ahead; `extra` is added to
/// `[stack.dpclo]`.
fn fig4_with_and_without_etx(extra: &str) -> (f64, f64, u32) {
    let text = include_str!("../../../scenarios/dpclo-fig4.toml")
        .replace("beta = 0.9", &format!("beta = 0.9\n{extra}"));
    let (mut with, mut without, mut ahead) = (0.0, 0.0, 0);
    for seed in 1..=10 {
        let text = text.replace("seed = 1", &format!("seed = {seed}"));
        let agg = |t: &str| {
            let r = run(t);
            (r.flow_f64(0, "throughput_bps") + r.flow_f64(1, "throughput_bps")) / 1e3
        };
        let (a, b) = (
            agg(&text),
            agg(&text.replace("beta = 0.9", "beta = 0.9\netx = false")),
        );
        eprintln!("seed {seed}: with ETX {a:.0} kbit/s, without {b:.0}");
        with += a / 10.0;
        without += b / 10.0;
        ahead += (a > b) as u32;
    }
    eprintln!("mean aggregate: with ETX {with:.0}, without {without:.0}; ahead on {ahead} of 10");
    (with, without, ahead)
}

/// Long-term rates of the two flows, and the share of 1-s bins (after the warm-up) in which one
/// flow gets less than a tenth of the other while they carry traffic: short-term starvation.
fn fig5_pair(toml: &str) -> ([f64; 2], f64) {
    let r = run(toml);
    let rates = [
        r.flow_f64(0, "throughput_bps"),
        r.flow_f64(1, "throughput_bps"),
    ];
    let bins = |flow: i64| -> Vec<f64> {
        r.timeseries
            .iter()
            .filter(|row| matches!(&row[0].1, xlayer_core::Value::Int(f) if *f == flow))
            .filter(|row| common::col(row, "t_s") >= 20.0)
            .map(|row| common::col(row, "throughput_bps"))
            .collect()
    };
    let (a, b) = (bins(0), bins(1));
    let n = a.len().min(b.len());
    let lopsided = (0..n)
        .filter(|&i| a[i] + b[i] > 0.0 && (a[i] < 0.5 * b[i] || b[i] < 0.5 * a[i]))
        .count();
    (rates, lopsided as f64 / n.max(1) as f64)
}

const FIG5D: &str = include_str!("../../../scenarios/dpclo-fig5d.toml");
const FIG5G: &str = include_str!("../../../scenarios/dpclo-fig5g.toml");

/// The pair over ZMAC+ and over 802.11e with RTS/CTS (the document's DPCLO-802.11e), per seed.
fn fig5_both(text: &str, seed: u64) -> (([f64; 2], f64), ([f64; 2], f64)) {
    let text = text.replace("seed = 1", &format!("seed = {seed}"));
    let e = text
        .replace("preset = \"dpclo-zmacplus\"", "preset = \"dpclo-80211e\"")
        .replace("rts_cts = false", "rts_cts = true");
    (fig5_pair(&text), fig5_pair(&e))
}

#[test]
fn dpclo_fig5d_zmacplus_shares_evenly_where_80211e_captures_the_channel() {
    // §V-C.3, Fig. 5 (E)/(F): on the symmetric topology (D), over 802.11e "each flow captures
    // the channel for significant periods of time"; ZMAC+ "does not face this problem,
    // providing both flows with same throughput". Capture: the share of 1-s bins in which one
    // flow gets less than half of the other.
    let mut capture_e = 0.0;
    for seed in 1..=3 {
        let ((z, zc), (e, ec)) = fig5_both(FIG5D, seed);
        let jz = xlayer_core::metrics::jain_index(&z);
        eprintln!("seed {seed}: ZMAC+ {z:.0?} Jain {jz:.3} capture {zc:.2}; 802.11e {e:.0?} capture {ec:.2}");
        assert!(
            jz > 0.95 && zc <= 0.1,
            "seed {seed}: ZMAC+ {z:?}, capture {zc:.2}"
        );
        capture_e += ec / 3.0;
    }
    assert!(
        capture_e >= 0.25,
        "802.11e: capture in {capture_e:.2} of the bins"
    );
}

#[test]
#[ignore = "does not hold in xlayer: 802.11e with RTS/CTS stays unfair over 100 s on (D), Jain \
            0.91 / 0.75 / 0.83 on seeds 1-3 (README, Validation)"]
fn dpclo_fig5d_80211e_is_fair_in_the_long_term() {
    // Fig. 5 (F): "eventually however they relegate access to the other flow, resulting in
    // long term fairness".
    let mean: f64 = (1..=3)
        .map(|seed| xlayer_core::metrics::jain_index(&fig5_both(FIG5D, seed).1 .0) / 3.0)
        .sum();
    assert!(mean >= 0.9, "mean Jain {mean:.3}");
}

#[test]
fn dpclo_fig5g_80211e_with_rts_cts_carries_more_than_zmacplus_which_shares_evenly() {
    // Fig. 5 (H)/(I): on (G) ZMAC+ again gives both flows the same throughput, but "802.11e
    // shows better aggregate throughput compared to Z-MAC+" (which the document attributes to
    // RTS/CTS).
    for seed in 1..=3 {
        let ((z, _), (e, _)) = fig5_both(FIG5G, seed);
        let jz = xlayer_core::metrics::jain_index(&z);
        eprintln!("seed {seed}: ZMAC+ {z:.0?} Jain {jz:.3}; 802.11e {e:.0?}");
        assert!(jz > 0.95, "seed {seed}: ZMAC+ {z:?}");
        assert!(
            e[0] + e[1] > z[0] + z[1],
            "seed {seed}: 802.11e {e:?} against ZMAC+ {z:?}"
        );
    }
}

#[test]
#[ignore = "does not hold in xlayer: 802.11e with RTS/CTS still captures on (G), one flow below \
            half the other in 0.30 / 0.50 / 0.19 of the 1-s bins on seeds 1-3 (README)"]
fn dpclo_fig5g_rts_cts_prevents_capture() {
    // "We attribute this to the use of RTS/CTS in 802.11e which effectively synchronizes nodes
    // A and C and prevents capture."
    let mean: f64 = (1..=3).map(|seed| fig5_both(FIG5G, seed).1 .1 / 3.0).sum();
    assert!(mean <= 0.1, "capture in {mean:.2} of the bins");
}

/// Fig. 5(A) under DPCLO at Table I's settings: 2 Mbit/s and 200-byte packets (the shipped
/// scenario, which the MAC-only comparison of tests/zmac.rs also uses, runs 11 Mbit/s and
/// 1000-byte packets). Returns each seed's (A -> B, C -> D) throughputs.
fn fig5a_table_i(preset: &str) -> Vec<(f64, f64)> {
    let text = include_str!("../../../scenarios/dpclo-fig5a.toml")
        .replace("data_rate_mbps = 11.0", "data_rate_mbps = 2.0")
        .replace("payload_bytes = 1000", "payload_bytes = 200");
    (1..=10)
        .map(|seed| {
            let r = run(&with_preset(&text, preset, seed));
            (
                r.flow_f64(0, "throughput_bps"),
                r.flow_f64(1, "throughput_bps"),
            )
        })
        .collect()
}

fn split((a, c): (f64, f64)) -> f64 {
    if a <= 0.0 || c <= 0.0 {
        0.0
    } else {
        (a / c).min(c / a)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
}

#[test]
fn dpclo_fig5a_at_table_i_zmacplus_is_still_the_more_even() {
    // The same claim as above, at Table I's 2 Mbit/s and 200-byte packets: ZMAC+ the more even
    // on at least 8 of 10 seeds, its median split above 0.25.
    let (e, z) = (
        fig5a_table_i("dpclo-80211e"),
        fig5a_table_i("dpclo-zmacplus"),
    );
    let closer = z
        .iter()
        .zip(&e)
        .filter(|(z, e)| split(**z) > split(**e))
        .count();
    let (me, mz) = (
        median(e.iter().copied().map(split).collect()),
        median(z.iter().copied().map(split).collect()),
    );
    eprintln!("Table I: median split 802.11e {me:.3}, ZMAC+ {mz:.3}; ZMAC+ more even on {closer}");
    eprintln!(
        "802.11e (A->B, C->D) kbit/s: {:.0?}",
        e.iter().map(|x| (x.0 / 1e3, x.1 / 1e3)).collect::<Vec<_>>()
    );
    assert!(closer >= 8, "ZMAC+ more even on {closer} of 10");
    assert!(mz > 0.25, "ZMAC+ median split {mz:.3}");
}

#[test]
#[ignore = "does not hold at Table I's settings: 802.11e's median split is 0.118, not below 0.1 \
            (README, Validation)"]
fn dpclo_fig5a_at_table_i_one_flow_starves_over_80211e() {
    let m = median(
        fig5a_table_i("dpclo-80211e")
            .into_iter()
            .map(split)
            .collect(),
    );
    assert!(m < 0.1, "802.11e median split {m:.3}");
}

/// DPCLO Figs. 6-7 (`scenarios/dpclo-fig6.toml`), its flows shortened to 40 s (20-60 s), under
/// `preset` (and `extra` lines after `[net]`): each source's (throughput, mean delay), source 0
/// the farthest from the sink.
fn fig6(preset: &str, extra: &str) -> Vec<(f64, f64)> {
    let text = include_str!("../../../scenarios/dpclo-fig6.toml")
        .replace("duration_s = 120.0", "duration_s = 60.0")
        .replace("stop_s = 120.0", "stop_s = 60.0")
        .replace(
            "preset = \"dpclo-zmacplus\"",
            &format!("preset = \"{preset}\""),
        )
        .replace(
            "routing = \"dsdv\"",
            &format!("routing = \"dsdv\"\n{extra}"),
        );
    let r = run(&text);
    (0..8)
        .map(|i| {
            (
                r.flow_f64(i, "throughput_bps"),
                r.flow_f64(i, "delay_mean_s"),
            )
        })
        .collect()
}

/// Flows below a tenth of the best, and the three farthest sources' mean over the nearest's.
fn starved_and_bias(f: &[(f64, f64)]) -> (usize, f64) {
    let best = f.iter().map(|x| x.0).fold(0.0, f64::max);
    let starved = f.iter().filter(|x| x.0 < 0.1 * best).count();
    (starved, (f[0].0 + f[1].0 + f[2].0) / 3.0 / f[7].0)
}

#[test]
fn dpclo_fig7_tcp_starves_the_far_sources_and_dpclo_none() {
    // §V-D.1, Fig. 7: TCP "heavily favors short flows" (the nearest source takes the channel);
    // DPCLO-ZMAC+ "does not starve any flow"; a 1-packet queue per
    // destination cuts DPCLO's delay at the expense of throughput. Starving: below a tenth of
    // the stack's best flow.
    let (tcp, few) = (fig6("tcp-sack", ""), fig6("tcp-few", ""));
    let (dpclo, q1) = (
        fig6("dpclo-zmacplus", ""),
        fig6("dpclo-zmacplus", "dest_queue_packets = 1"),
    );
    let kbps = |f: &[(f64, f64)]| f.iter().map(|x| (x.0 / 1e3).round()).collect::<Vec<_>>();
    let (ts, tb) = starved_and_bias(&tcp);
    let (_, fb) = starved_and_bias(&few);
    let (ds, db) = starved_and_bias(&dpclo);
    eprintln!("TCP-SACK {:?} starved {ts} far/near {tb:.3}", kbps(&tcp));
    eprintln!("TCP-FeW {:?} far/near {fb:.3}", kbps(&few));
    eprintln!(
        "DPCLO-ZMAC+ {:?} starved {ds} far/near {db:.3}",
        kbps(&dpclo)
    );
    eprintln!("DPCLO-ZMAC+, 1-packet queues {:?}", kbps(&q1));
    assert!(ts >= 1 && tb < 0.1, "TCP: {ts} starved, far/near {tb:.3}");
    assert_eq!(ds, 0, "DPCLO starves {ds}");
    let worst = |f: &[(f64, f64)]| f.iter().map(|x| x.1).fold(0.0, f64::max);
    let agg = |f: &[(f64, f64)]| f.iter().map(|x| x.0).sum::<f64>();
    eprintln!(
        "worst delay {:.2} s with 3-packet queues, {:.2} s with 1; aggregate {:.0} against {:.0} kbit/s",
        worst(&dpclo),
        worst(&q1),
        agg(&dpclo) / 1e3,
        agg(&q1) / 1e3
    );
    assert!(worst(&q1) < worst(&dpclo) && agg(&q1) < agg(&dpclo));
}

#[test]
#[ignore = "does not hold in xlayer: DPCLO-ZMAC+'s aggregate is about a third of TCP-SACK's, its \
            worst delay about 4x TCP's, not 10x (README, Validation)"]
fn dpclo_fig7_dpclo_has_the_highest_aggregate_and_ten_times_tcps_worst_delay() {
    let (tcp, dpclo) = (fig6("tcp-sack", ""), fig6("dpclo-zmacplus", ""));
    let agg = |f: &[(f64, f64)]| f.iter().map(|x| x.0).sum::<f64>();
    let worst = |f: &[(f64, f64)]| f.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(
        agg(&dpclo) > agg(&tcp),
        "{} against {}",
        agg(&dpclo),
        agg(&tcp)
    );
    assert!(
        worst(&dpclo) >= 5.0 * worst(&tcp),
        "{} against {}",
        worst(&dpclo),
        worst(&tcp)
    );
}

#[test]
fn a_zmac_table_stays_in_a_file_run_under_another_macs_preset_and_errs_as_written() {
    // scenarios/dpclo-fig6.toml sets [mac.zmac] for ZMAC+ and is compared under TCP, Fusion and
    // DCLO too: their presets drop the table; the file as written over DCF names the field.
    use xlayer_core::Scenario;
    let text = include_str!("../../../scenarios/dpclo-fig6.toml");
    for preset in ["tcp-sack", "fusion", "dclo", "dpclo-80211e"] {
        let sc = Scenario::from_toml(&text.replace(
            "preset = \"dpclo-zmacplus\"",
            &format!("preset = \"{preset}\""),
        ))
        .unwrap_or_else(|e| panic!("{preset}: {e}"));
        assert!(
            sc.mac.zmac.is_none() || sc.mac.access.starts_with("zmac"),
            "{preset}"
        );
    }
    let zmac = Scenario::from_toml(text).unwrap();
    assert!(zmac.mac.zmac.is_some());
    let err =
        Scenario::from_toml(&text.replace("preset = \"dpclo-zmacplus\"", "preset = \"udp-dcf\""))
            .unwrap_err()
            .to_string();
    assert!(err.contains("mac.zmac"), "{err}");
}

#[test]
#[ignore = "does not hold in xlayer since the standard ACK timeout: TCP-FeW's far/near ratio \
            equals TCP-SACK's (0.050 against 0.050, seed 1; 0.074 against 0.030 before)"]
fn dpclo_fig7_tcp_few_reduces_tcps_bias() {
    // Fig. 7: "TCP-FeW reduces this bias and allows longer flows to obtain some throughput".
    let (_, tb) = starved_and_bias(&fig6("tcp-sack", ""));
    let (_, fb) = starved_and_bias(&fig6("tcp-few", ""));
    assert!(fb > tb, "TCP-FeW far/near {fb:.4} against TCP's {tb:.4}");
}
