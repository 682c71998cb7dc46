//! Lossy links, the ETX estimator, routing protocols with real control traffic and
//! per-destination queues, each checked against a computation made here from first principles
//! (binomial proportions, 1/(d_f·d_r), Dijkstra and Yen's K shortest paths over the configured
//! loss probabilities), never against numbers taken from the simulator's own output.

use xlayer_core::{Simulation, Value};

fn build(toml: &str) -> Simulation {
    Simulation::from_toml(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

fn node_col(sim: &Simulation, node: usize, key: &str) -> f64 {
    let r = sim.results();
    match r.nodes[node]
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
    {
        Some(Value::Int(i)) => *i as f64,
        Some(Value::Float(f)) => *f,
        _ => panic!("no node column {key}"),
    }
}

/// Two nodes in range (no SINR losses: `range` propagation) with a CBR flow 0 → 1.
fn pair(extra: &str) -> String {
    format!(
        "duration_s = 100.0\n[radio]\npropagation = \"range\"\ntx_range_m = 250.0\n\
         [topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = 1\nrate_bps = 80000.0\npayload_bytes = 500\n{extra}"
    )
}

/// Fraction of DATA attempts that failed, from the MAC counters of node 0.
fn attempt_failures(sim: &Simulation) -> (f64, f64) {
    let m = sim.world.nodes[0].mac.stats;
    (m.retries as f64, m.data_tx as f64)
}

fn assert_proportion(failed: f64, trials: f64, p: f64, what: &str) {
    // 5 standard deviations of a binomial proportion.
    let sd = (p * (1.0 - p) / trials).sqrt();
    let got = failed / trials;
    assert!(
        (got - p).abs() < 5.0 * sd + 1e-9,
        "{what}: {got:.4} of {trials} attempts failed, expected {p:.4} ± {:.4}",
        5.0 * sd
    );
}

#[test]
fn link_loss_is_applied_at_reception_per_direction_and_follows_its_schedule() {
    // Forward loss 0.3 only: an attempt fails when the DATA frame is lost (ACKs get through).
    // At t = 50 s the link becomes lossy both ways at 0.2: an attempt then succeeds with
    // probability 0.8 · 0.8 (DATA and ACK both through).
    let mut sim = build(&pair(
        "[link_loss]\n[[link_loss.links]]\nfrom = 0\nto = 1\nloss = 0.3\nsymmetric = false\n\
         [[events]]\nat_s = 50.0\nkind = \"link_loss\"\nfrom = 0\nto = 1\nloss = 0.2\n",
    ));
    sim.run_until(50.0);
    let (f1, t1) = attempt_failures(&sim);
    assert_proportion(f1, t1, 0.3, "forward loss 0.3");
    sim.run();
    let (f2, t2) = attempt_failures(&sim);
    assert_proportion(f2 - f1, t2 - t1, 1.0 - 0.8 * 0.8, "0.2 both ways");
    assert!(node_col(&sim, 1, "rx_link_lost") > 0.0);
}

#[test]
fn random_link_losses_are_reproducible_and_within_their_range() {
    let sc = |seed: u64| {
        format!(
            "duration_s = 1.0\n[radio]\npropagation = \"range\"\ntx_range_m = 250.0\n\
             [topology]\nkind = \"grid\"\nrows = 3\ncols = 3\nspacing_m = 200.0\n\
             [link_loss]\nrandom = {{ min = 0.1, max = 0.6, seed = {seed} }}\n"
        )
    };
    let a = build(&sc(1));
    let b = build(&sc(1));
    let c = build(&sc(2));
    let (la, lb, lc) = (
        a.world.link_loss.as_ref().unwrap(),
        b.world.link_loss.as_ref().unwrap(),
        c.world.link_loss.as_ref().unwrap(),
    );
    let mut differ = false;
    for i in 0..9u32 {
        for &j in &a.world.neighbors[i as usize] {
            let p = la.get(i, j);
            assert!((0.1..=0.6).contains(&p), "{i}->{j}: {p}");
            assert_eq!(p, la.get(j, i), "symmetric by default");
            assert_eq!(p, lb.get(i, j), "same seed, same draw");
            differ |= p != lc.get(i, j);
        }
    }
    assert!(differ, "another seed draws other losses");
}

#[test]
fn link_loss_errors_name_the_field() {
    let e = Simulation::from_toml(&pair(
        "[link_loss]\n[[link_loss.links]]\nfrom = 0\nto = 1\nloss = 1.5\n",
    ))
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("link_loss.links[0].loss"), "{e}");
    let e = Simulation::from_toml(&pair("[[events]]\nat_s = 1.0\nkind = \"node_off\"\n"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.starts_with("events[0].node"), "{e}");
}

#[test]
fn etx_estimate_settles_near_one_over_df_dr_and_follows_a_loss_change() {
    // Loss 0.1 from 0 to 1 and 0.2 from 1 to 0: d_f = 0.9 and d_r = 0.8 seen from node 0
    // (the other way round from node 1), ETX = 1/(0.9 · 0.8) from both ends; the estimate is
    // averaged over 670 s (one sample a second) since a 10-probe window is noisy. At 700 s the
    // link becomes loss-free: ETX = 1.
    let mut sim = build(
        "duration_s = 800.0\n[radio]\npropagation = \"range\"\ntx_range_m = 250.0\n\
         [net.etx]\n[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 200.0\n\
         [link_loss]\n[[link_loss.links]]\nfrom = 0\nto = 1\nloss = 0.1\nsymmetric = false\n\
         [[link_loss.links]]\nfrom = 1\nto = 0\nloss = 0.2\nsymmetric = false\n\
         [[events]]\nat_s = 700.0\nkind = \"link_loss\"\nfrom = 0\nto = 1\nloss = 0.0\n",
    );
    let etx = |sim: &Simulation, a: usize, b: u32| {
        sim.world.proto.as_ref().unwrap().nodes[a]
            .etx
            .etx(b)
            .unwrap_or(f64::INFINITY)
    };
    let (mut s0, mut s1) = (vec![], vec![]);
    for t in 30..700 {
        sim.run_until(t as f64);
        s0.push(etx(&sim, 0, 1));
        s1.push(etx(&sim, 1, 0));
    }
    let truth = 1.0 / (0.9 * 0.8);
    for (who, s) in [("0->1", &s0), ("1->0", &s1)] {
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        assert!(
            (mean / truth - 1.0).abs() < 0.1,
            "{who}: mean ETX {mean:.3}, expected {truth:.3} within 10%"
        );
    }
    // Within three windows of the change, the estimate is that of a perfect link.
    for t in 730..800 {
        sim.run_until(t as f64);
        for (a, b) in [(0, 1), (1, 0)] {
            let e = etx(&sim, a, b);
            assert!((e - 1.0).abs() < 0.1, "t = {t} s, {a}->{b}: ETX {e}");
        }
    }
    // Probes are real frames: they took airtime and were counted.
    assert!(node_col(&sim, 0, "ctrl_tx") >= 790.0);
    assert!(node_col(&sim, 0, "ctrl_airtime_s") > 0.0);
    assert!(node_col(&sim, 1, "ctrl_rx") > 0.0);
}
