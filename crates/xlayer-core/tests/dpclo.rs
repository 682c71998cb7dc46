//! DPCLO (the practical cross-layer optimization document, §IV-V) over ZMAC+ and 802.11e.

use xlayer_core::{Results, Simulation};

fn run(toml: &str) -> Results {
    let mut sim = Simulation::from_toml(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    sim.run();
    sim.results()
}

fn with_preset(text: &str, preset: &str, seed: u64) -> String {
    text.replace("seed = 1", &format!("seed = {seed}")).replace(
        "[radio]",
        &format!("[stack]\npreset = \"{preset}\"\n\n[radio]"),
    )
}

#[test]
fn dpclo_fig5a_zmacplus_shares_far_more_evenly_than_80211e() {
    // Fig. 5(B)/(C): under information asymmetry DPCLO-802.11e leaves flow A->B much less than
    // C->D; DPCLO-ZMAC+'s slots make the disparity much smaller.
    let text = include_str!("../../../scenarios/dpclo-fig5a.toml");
    for seed in 1..=3 {
        let ratio = |preset: &str| {
            let r = run(&with_preset(text, preset, seed));
            let (a, c) = (
                r.flow_f64(0, "throughput_bps"),
                r.flow_f64(1, "throughput_bps"),
            );
            assert!(c > 0.0, "{preset} seed {seed}: C->D carried nothing");
            a / c
        };
        let (e, z) = (ratio("dpclo-80211e"), ratio("dpclo-zmacplus"));
        eprintln!("seed {seed}: A->B / C->D = {e:.3} over 802.11e, {z:.3} over ZMAC+");
        assert!(e < 0.6, "seed {seed}: 802.11e ratio {e:.3}");
        assert!(
            z > 1.5 * e && z > e + 0.1,
            "seed {seed}: ZMAC+ {z:.3} vs 802.11e {e:.3}"
        );
    }
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
