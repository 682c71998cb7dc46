//! Z-MAC and ZMAC+ (`mac::zmac`, `mac::drand`): the set-up phase's two-hop colouring and its cost,
//! the time-frame rule, owner priority, ZMAC+ priority levels, and the DPCLO Fig. 5(A)
//! information-asymmetry scenario over 802.11 and over Z-MAC.

mod common;
use common::{col, run};

use xlayer_core::Results;

fn flow_bps(r: &Results, flow: usize) -> f64 {
    col(&r.flows[flow], "throughput_bps")
}

/// One-hop adjacency from the node positions: within `range` metres.
fn adjacency(r: &Results, range: f64) -> Vec<Vec<bool>> {
    let pos: Vec<(f64, f64)> = r.nodes.iter().map(|n| (col(n, "x"), col(n, "y"))).collect();
    let n = pos.len();
    let mut adj = vec![vec![false; n]; n];
    for i in 0..n {
        for j in 0..n {
            let d = ((pos[i].0 - pos[j].0).powi(2) + (pos[i].1 - pos[j].1).powi(2)).sqrt();
            adj[i][j] = i != j && d <= range;
        }
    }
    adj
}

fn within_two_hops(adj: &[Vec<bool>], i: usize, j: usize) -> bool {
    i != j && (adj[i][j] || (0..adj.len()).any(|k| adj[i][k] && adj[k][j]))
}

/// Checks the colouring against the topology, independently of the simulator's own view:
/// every node has a slot, no two nodes within two hops share one, and every node's frame is
/// 2^a with 2^(a-1) <= F < 2^a, F the largest slot within its two hops.
fn check_colouring(r: &Results, range: f64) -> (usize, u32) {
    let adj = adjacency(r, range);
    let n = adj.len();
    let slot: Vec<i64> = r.nodes.iter().map(|x| col(x, "zmac_slot") as i64).collect();
    let frame: Vec<u32> = r
        .nodes
        .iter()
        .map(|x| col(x, "zmac_frame") as u32)
        .collect();
    for i in 0..n {
        assert!(slot[i] >= 0, "node {i} has no slot: {slot:?}");
        for j in 0..n {
            if within_two_hops(&adj, i, j) {
                assert_ne!(slot[i], slot[j], "nodes {i} and {j} are within two hops");
            }
        }
        let f = (0..n)
            .filter(|&j| j == i || within_two_hops(&adj, i, j))
            .map(|j| slot[j] as u32)
            .max()
            .unwrap();
        let a = 32 - f.leading_zeros(); // 2^(a-1) <= F < 2^a
        assert_eq!(frame[i], 1 << a, "node {i}: F = {f}");
    }
    (n, *slot.iter().max().unwrap() as u32 + 1)
}

const RADIO: &str =
    "[radio]\nstandard = \"802.11b\"\ndata_rate_mbps = 11.0\nbasic_rate_mbps = 1.0\n\
                     propagation = \"two_ray_ground\"\ntx_range_m = 250.0\ncs_range_m = 550.0\n";

#[test]
fn setup_phase_colours_a_grid_with_distinct_slots_within_two_hops() {
    let toml = format!(
        "duration_s = 2.5\nseed = 3\n{RADIO}[mac]\naccess = \"zmac\"\n\
         [topology]\nkind = \"grid\"\nrows = 5\ncols = 5\nspacing_m = 200.0\n"
    );
    let r = run(&toml);
    let (n, slots) = check_colouring(&r, 250.0);
    let frames: f64 = r.nodes.iter().map(|x| col(x, "zmac_state_tx")).sum();
    let air: f64 = r.nodes.iter().map(|x| col(x, "zmac_ctrl_airtime_s")).sum();
    let settled = r
        .nodes
        .iter()
        .map(|x| col(x, "zmac_settled_s"))
        .fold(0.0, f64::max);
    eprintln!(
        "grid: {n} nodes, {slots} slots, settled at {settled:.3} s, {frames} STATE frames, \
         {air:.3} s of airtime"
    );
    assert!(
        settled < 2.0,
        "the colouring settles within the set-up phase"
    );
    assert!(frames >= 4.0 * n as f64, "announcements are real frames");
    assert!(air > 0.0);
    let rx: f64 = r.nodes.iter().map(|x| col(x, "rx_ok")).sum();
    assert!(rx >= frames, "neighbours decode the announcements");
}

#[test]
fn setup_phase_colours_a_random_topology_with_distinct_slots_within_two_hops() {
    let toml = format!(
        "duration_s = 2.5\nseed = 7\n{RADIO}[mac]\naccess = \"zmacplus\"\n\
         [topology]\nkind = \"random\"\ncount = 30\nwidth_m = 1000.0\nheight_m = 1000.0\n"
    );
    let r = run(&toml);
    let (n, slots) = check_colouring(&r, 250.0);
    let settled = r
        .nodes
        .iter()
        .map(|x| col(x, "zmac_settled_s"))
        .fold(0.0, f64::max);
    let frames: f64 = r.nodes.iter().map(|x| col(x, "zmac_state_tx")).sum();
    let air: f64 = r.nodes.iter().map(|x| col(x, "zmac_ctrl_airtime_s")).sum();
    eprintln!(
        "random: {n} nodes, {slots} slots, settled at {settled:.3} s, {frames} STATE frames \
         (and their beacons), {air:.3} s of airtime"
    );
}

/// The summary's set-up report: when data could go, and how many nodes have no slot.
fn setup_report(r: &Results) -> (f64, f64, f64) {
    let end = r.summary_f64("zmac_setup_end_s");
    let uncoloured = r.summary_f64("zmac_uncoloured");
    let settled = r
        .nodes
        .iter()
        .map(|x| col(x, "zmac_settled_s"))
        .fold(0.0, f64::max);
    (end, uncoloured, settled)
}

/// An "auto" set-up (the default) ends when the assignment is complete: every node coloured,
/// distinct slots within two hops (checked on the topology), and the data phase starting soon
/// after the last node settled — not at a fixed time chosen in advance.
fn assert_auto_setup_completes(r: &Results, range: f64, what: &str) {
    let (n, slots) = check_colouring(r, range);
    let (end, uncoloured, settled) = setup_report(r);
    let frames: f64 = r.nodes.iter().map(|x| col(x, "zmac_state_tx")).sum();
    eprintln!(
        "{what}: {n} nodes, {slots} slots, last node settled at {settled:.3} s, set-up ended at \
         {end:.3} s, {frames} STATE frames"
    );
    assert_eq!(uncoloured, 0.0);
    assert!(r.summary_value("warning").is_none());
    assert!(
        end >= settled,
        "the set-up cannot end before the last node settled"
    );
    // After the last change its neighbours must hear it (the local frame exchange): a few
    // announcement intervals (16 slots of about 3 ms on average), not seconds.
    assert!(
        end <= settled + 0.5,
        "the data phase starts {:.3} s after the last node settled",
        end - settled
    );
}

#[test]
fn auto_setup_ends_when_thirty_random_nodes_are_coloured() {
    let toml = format!(
        "duration_s = 3.0\nseed = 7\n{RADIO}[mac]\naccess = \"zmacplus\"\n\
         [topology]\nkind = \"random\"\ncount = 30\nwidth_m = 1000.0\nheight_m = 1000.0\n"
    );
    let r = run(&toml);
    assert_auto_setup_completes(&r, 250.0, "30 random nodes");
}

#[test]
fn auto_setup_ends_when_the_108_node_topology_is_coloured() {
    // DPCLO §V-C's 108 random nodes on 1250 m x 1250 m (scenarios/dpclo-fig6.toml's topology
    // and radio, Table I): a fixed 2 s set-up left 71 of them without a slot.
    let toml = "duration_s = 30.0\nseed = 1\n[radio]\nstandard = \"802.11b\"\n\
                data_rate_mbps = 2.0\nbasic_rate_mbps = 1.0\npropagation = \"two_ray_ground\"\n\
                tx_range_m = 250.0\ncs_range_m = 550.0\n[mac]\naccess = \"zmacplus\"\n\
                [mac.zmac]\nslot_payload_bytes = 260\n\
                [topology]\nkind = \"random\"\ncount = 108\nwidth_m = 1250.0\n\
                height_m = 1250.0\nseed = 1\n";
    let r = run(toml);
    assert_auto_setup_completes(&r, 250.0, "108 nodes");
    let (end, _, _) = setup_report(&r);
    assert!(end < 30.0, "completed before the bound");
}

#[test]
fn a_fixed_setup_too_short_reports_the_uncoloured_nodes() {
    let toml = "duration_s = 2.5\nseed = 1\n[radio]\nstandard = \"802.11b\"\n\
                data_rate_mbps = 2.0\nbasic_rate_mbps = 1.0\npropagation = \"two_ray_ground\"\n\
                tx_range_m = 250.0\ncs_range_m = 550.0\n[mac]\naccess = \"zmacplus\"\n\
                [mac.zmac]\nslot_payload_bytes = 260\nsetup_s = 2.0\n\
                [topology]\nkind = \"random\"\ncount = 108\nwidth_m = 1250.0\n\
                height_m = 1250.0\nseed = 1\n";
    let r = run(toml);
    let (end, uncoloured, _) = setup_report(&r);
    assert_eq!(end, 2.0);
    let none = r.nodes.iter().filter(|x| col(x, "zmac_slot") < 0.0).count();
    assert!(none > 0, "2 s does not colour 108 nodes");
    assert_eq!(uncoloured, none as f64);
    let w = format!("{:?}", r.summary_value("warning").expect("a warning"));
    assert!(w.contains("without a slot"), "{w}");
}

#[test]
fn setup_s_takes_auto_or_seconds_and_names_the_field_otherwise() {
    let base = format!("duration_s = 1.0\n{RADIO}[mac]\naccess = \"zmac\"\n[mac.zmac]\n");
    for (v, ok) in [
        ("\"auto\"", true),
        ("2", true),
        ("1.5", true),
        ("\"soon\"", false),
        ("-1.0", false),
    ] {
        let r = xlayer_core::Simulation::from_toml(&format!("{base}setup_s = {v}\n"));
        match (r, ok) {
            (Ok(_), true) => {}
            (Err(e), false) => assert!(e.to_string().contains("setup_s"), "{v}: {e}"),
            (Ok(_), false) => panic!("{v} accepted"),
            (Err(e), true) => panic!("{v}: {e}"),
        }
    }
}

/// Five saturated senders and one receiver, all within range of each other (a 20 m chain),
/// with `access`.
fn clique(access: &str) -> Results {
    let flows: String = (0..5)
        .map(|s| format!("[[flows]]\nsrc = {s}\ndst = 5\n"))
        .collect();
    run(&format!(
        "duration_s = 6.0\nwarmup_s = 2.0\nseed = 2\n{RADIO}[mac]\naccess = \"{access}\"\n\
         [topology]\nkind = \"chain\"\ncount = 6\nspacing_m = 20.0\n{flows}"
    ))
}

#[test]
fn an_owner_wins_its_slot_against_saturated_non_owners_far_more_often_than_in_dcf() {
    let z = clique("zmac");
    let (owned, won): (f64, f64) = z.nodes[..5].iter().fold((0.0, 0.0), |(a, b), n| {
        (
            a + col(n, "zmac_owner_attempts"),
            b + col(n, "zmac_owner_data_tx"),
        )
    });
    let owner_rate = won / owned;
    // In DCF the chance that a given saturated station wins a contention round is its share of
    // the channel accesses, about 1/5.
    let d = clique("dcf");
    let tx: Vec<f64> = d.nodes[..5].iter().map(|n| col(n, "mac_tx")).collect();
    let total: f64 = tx.iter().sum();
    let dcf_rate = tx.iter().cloned().fold(0.0, f64::max) / total;
    eprintln!(
        "owner wins {won} of {owned} owned slots ({owner_rate:.3}); DCF: best station wins {dcf_rate:.3} of the accesses"
    );
    assert!(owned > 50.0, "{owned} owned slots contended");
    assert!(owner_rate > 0.9, "{owner_rate}");
    assert!(dcf_rate < 0.35, "{dcf_rate}");
    // Every sender gets a slot of its own: the channel is shared evenly.
    let bps: Vec<f64> = (0..5).map(|f| flow_bps(&z, f)).collect();
    let (lo, hi) = (
        bps.iter().cloned().fold(f64::MAX, f64::min),
        bps.iter().cloned().fold(0.0, f64::max),
    );
    eprintln!("Z-MAC per-flow throughput {bps:?}");
    assert!(lo > 0.5 * hi, "{bps:?}");
}

/// Two saturated senders in range of each other, each to its own receiver, the first at MAC
/// level `hi`, the second at level 0.
fn two_levels(access: &str, hi: u32) -> (f64, f64) {
    let r = run(&format!(
        "duration_s = 6.0\nwarmup_s = 2.0\nseed = 4\n{RADIO}[mac]\naccess = \"{access}\"\n\
         [topology]\nkind = \"chain\"\ncount = 4\nspacing_m = 30.0\n\
         [[flows]]\nsrc = 0\ndst = 1\npriority = {hi}\n[[flows]]\nsrc = 2\ndst = 3\n"
    ));
    (flow_bps(&r, 0), flow_bps(&r, 1))
}

#[test]
fn zmacplus_gives_a_high_priority_sender_most_of_the_channel() {
    let (high, low) = two_levels("zmacplus", 2);
    let (medium, low2) = two_levels("zmacplus", 1);
    let (a, b) = two_levels("zmac", 0);
    eprintln!(
        "ZMAC+ high {high:.0} vs low {low:.0} bit/s; medium {medium:.0} vs low {low2:.0}; \
         Z-MAC (one level) {a:.0} vs {b:.0}"
    );
    assert!(high > 0.8 * (high + low), "high {high} low {low}");
    assert!(medium > 0.8 * (medium + low2), "medium {medium} low {low2}");
    assert!(a > 0.3 * (a + b) && b > 0.3 * (a + b), "{a} {b}");
}

const FIG5A: &str = include_str!("../../../scenarios/dpclo-fig5a.toml");

/// Throughputs of A -> B and C -> D on the DPCLO Fig. 5(A) scenario with `access`.
fn fig5a(access: &str) -> (f64, f64, Results) {
    let toml = FIG5A
        .replace("access = \"zmacplus\"", &format!("access = \"{access}\""))
        .replace("duration_s = 30.0", "duration_s = 15.0");
    let r = run(&toml);
    (flow_bps(&r, 0), flow_bps(&r, 1), r)
}

#[test]
fn information_asymmetry_starves_a_over_csma_and_not_over_zmac() {
    let (a_e, c_e, _) = fig5a("802.11e");
    let (a_d, c_d, _) = fig5a("dcf");
    let (a_z, c_z, rz) = fig5a("zmac");
    let (a_p, c_p, rp) = fig5a("zmacplus");
    let ratio = |a: f64, c: f64| a / c;
    eprintln!(
        "A->B / C->D: 802.11e {a_e:.0}/{c_e:.0} = {:.3}; DCF {a_d:.0}/{c_d:.0} = {:.3}; \
         Z-MAC {a_z:.0}/{c_z:.0} = {:.3}; ZMAC+ {a_p:.0}/{c_p:.0} = {:.3}",
        ratio(a_e, c_e),
        ratio(a_d, c_d),
        ratio(a_z, c_z),
        ratio(a_p, c_p)
    );
    for r in [&rz, &rp] {
        let ecn: f64 = r.nodes.iter().map(|n| col(n, "zmac_ecn_tx")).sum();
        let hcl = col(&r.nodes[2], "zmac_hcl_s");
        eprintln!("ECNs sent {ecn}, C in HCL for {hcl:.1} s");
        assert!(ecn > 0.0 && hcl > 0.0);
    }
    assert!(ratio(a_e, c_e) < 0.1, "802.11e: A must starve");
    assert!(ratio(a_d, c_d) < 0.1, "DCF: A must starve");
    // Z-MAC does not make the flows equal here: C stays a one-hop neighbour of D, which shares
    // A's slot (A and D are three hops apart), so even in HCL C contends in A's slot. But A no
    // longer starves: its ratio is two orders of magnitude above the CSMA one.
    for (name, x) in [("Z-MAC", ratio(a_z, c_z)), ("ZMAC+", ratio(a_p, c_p))] {
        assert!(x > 0.15, "{name}: ratio {x}");
        assert!(
            x > 20.0 * ratio(a_e, c_e).max(ratio(a_d, c_d)),
            "{name}: ratio {x}"
        );
    }
}

#[test]
fn zmac_runs_are_reproducible_and_depend_on_the_seed() {
    let toml = |seed: u32| {
        FIG5A
            .replace("seed = 1", &format!("seed = {seed}"))
            .replace("duration_s = 30.0", "duration_s = 4.0")
    };
    let key = |r: &Results| {
        let mut v: Vec<String> = r.flows.iter().map(|f| format!("{f:?}")).collect();
        v.extend(r.nodes.iter().map(|n| format!("{n:?}")));
        v
    };
    let a = run(&toml(1));
    let b = run(&toml(1));
    let c = run(&toml(2));
    assert_eq!(key(&a), key(&b));
    assert_ne!(key(&a), key(&c));
}

#[test]
fn etx_probes_ride_the_zmacplus_control_level() {
    let r = run(&format!(
        "duration_s = 6.0\nwarmup_s = 2.0\n{RADIO}[mac]\naccess = \"zmacplus\"\n[net.etx]\n\
         probe_period_s = 0.5\n[topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = 2\n"
    ));
    let probes_rx: f64 = r.nodes.iter().map(|n| col(n, "ctrl_rx")).sum();
    let bps = flow_bps(&r, 0);
    eprintln!("ETX probes received {probes_rx}, 2-hop flow {bps:.0} bit/s");
    assert!(probes_rx > 10.0, "{probes_rx}");
    assert!(bps > 100_000.0, "{bps}");
}
