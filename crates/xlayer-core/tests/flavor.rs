//! Passive TCP flavor detection (`[stack.flavor_link]`, `transport::flavor`) and the
//! flavor-aware link optimizer (`tune::flavor_link`, seed document 003 §IV): what a detector at
//! a router reads of connections whose flavor the test knows, and what the optimizer sets
//! through the tuning layers once it has read it. The confusion matrix over a grid of losses
//! and round trips is `validation/flavor_accuracy.py` (README).

mod common;
use common::run;
use xlayer_core::transport::flavor::{Flavor, WESTWOOD_MIN_SHARE};
use xlayer_core::tune::flavor_link::{entry, DOCUMENT_TABLE};
use xlayer_core::Results;
use xlayer_core::{tune, Simulation, Value};

/// A long-lived TCP download (`cc`, `sack`) from node 0 through the router (node 1, where the
/// detector sits) to node 2: a fast wire and a 2 Mbit/s bottleneck with a 100-packet queue, a
/// quarter of the 100 ms round trip on each wire each way, the bottleneck losing `loss` of the
/// data after the router (the document's Fig. 1 path).
fn wired(cc: &str, sack: bool, loss: f64, seed: u64) -> String {
    format!(
        "duration_s = 60.0\nseed = {seed}\n\
         [topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 1e6\n\
         [[wired]]\na = 0\nb = 1\nrate_bps = 100e6\ndelay_s = 0.025\nqueue_packets = 1000\n\
         [[wired]]\na = 1\nb = 2\nrate_bps = 2e6\ndelay_s = 0.025\nqueue_packets = 100\n\
         loss = {loss}\nreverse_loss = 0.0\n\
         [[flows]]\nsrc = 0\ndst = 2\ntransport = \"tcp\"\ncc = \"{cc}\"\nsack = {sack}\n\
         payload_bytes = 1000\n\
         [stack.flavor_link]\nnodes = [1]\noptimize = false\n"
    )
}

fn text(r: &Results, flow: usize, key: &str) -> String {
    match r.flows[flow]
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
    {
        Some(Value::Str(s)) => s.clone(),
        other => panic!("{key}: {other:?}"),
    }
}

#[test]
fn sack_is_read_from_both_syns() {
    for sack in [false, true] {
        let r = run(&wired("newreno", sack, 0.01, 1));
        assert_eq!(
            r.flow_f64(0, "flavor_sack"),
            sack as i64 as f64,
            "sack = {sack}"
        );
    }
}

#[test]
fn reno_newreno_and_westwood_are_told_apart_on_a_lossy_path() {
    // 1 % and 3 % random loss after the router: several losses per window now and then, which
    // is what sets Reno apart from NewReno; Westwood shows windows not halved.
    for loss in [0.01, 0.03] {
        for (cc, expected) in [
            ("reno", "reno"),
            ("newreno", "newreno"),
            ("westwood", "westwood"),
        ] {
            let r = run(&wired(cc, false, loss, 2));
            assert_eq!(
                text(&r, 0, "flavor_detected"),
                expected,
                "{cc} at {loss}: {:?}",
                r.flows[0]
            );
            assert!(r.flow_f64(0, "flavor_fast_recoveries") >= 3.0);
            // Confidence: the share of the evidence agreeing — for Westwood the share of its
            // recoveries not followed by a halving, which a full queue makes a minority.
            let least = if cc == "westwood" {
                WESTWOOD_MIN_SHARE
            } else {
                0.5
            };
            assert!(
                r.flow_f64(0, "flavor_confidence") >= least,
                "{:?}",
                r.flows[0]
            );
        }
    }
}

#[test]
fn with_sack_westwood_still_shows_and_the_reno_family_reads_as_newreno() {
    // Reno and NewReno recover alike under SACK (RFC 6675's scoreboard): only the family shows.
    for (cc, expected) in [
        ("reno", "newreno"),
        ("newreno", "newreno"),
        ("westwood", "westwood"),
    ] {
        let r = run(&wired(cc, true, 0.01, 3));
        assert_eq!(text(&r, 0, "flavor_detected"), expected, "{cc}+sack");
    }
}

#[test]
fn the_window_estimate_follows_the_senders_congestion_window() {
    // Mean |estimate − cwnd| / cwnd over the data segments the router saw.
    for cc in ["reno", "newreno", "westwood"] {
        let r = run(&wired(cc, false, 0.01, 4));
        let err = r.flow_f64(0, "flavor_window_error");
        assert!(
            err < 0.25,
            "{cc}: window estimate off by {err:.2} on average"
        );
    }
}

/// The document's scenario 1 (`scenarios/flavor-ap-1.toml`) shortened, with the flavor-aware
/// link layer at the access point, plus `extra` TOML.
fn access_point(extra: &str) -> String {
    let path = format!(
        "{}/../../scenarios/flavor-ap-1.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let base = std::fs::read_to_string(&path).unwrap();
    format!(
        "{}\n[stack.flavor_link]\n{extra}",
        base.replace("duration_s = 600.0", "duration_s = 90.0")
    )
}

#[test]
fn the_optimizer_sets_the_documents_table_for_the_flavor_detected() {
    let mut s = Simulation::from_toml(&access_point("")).unwrap();
    // Before any decision: 802.11a's default (1/2, 4) for every download, at the access point.
    s.run_until(0.001);
    for f in 0..4 {
        assert_eq!(
            tune::get(&mut s.world, 0, &format!("mac.flow_code_rate.{f}")).unwrap(),
            0.5
        );
        assert_eq!(
            tune::get(&mut s.world, 0, &format!("mac.flow_retry_limit.{f}")).unwrap(),
            4.0
        );
    }
    s.run();
    let r = s.results();
    let mut decided = 0;
    for f in 0..4 {
        let flavor = match text(&r, f, "flavor_detected").as_str() {
            "reno" => Flavor::Reno,
            "newreno" => Flavor::NewReno,
            "westwood" => Flavor::Westwood,
            _ => Flavor::Unknown,
        };
        decided += (flavor != Flavor::Unknown) as u32;
        let sack = r.flow_f64(f, "flavor_sack") == 1.0;
        let (code, retries) = DOCUMENT_TABLE[entry(flavor, sack)];
        let w = &mut s.world;
        assert_eq!(
            tune::get(w, 0, &format!("mac.flow_code_rate.{f}")).unwrap(),
            code.value(),
            "flow {f} ({flavor:?}, sack {sack})"
        );
        assert_eq!(
            tune::get(w, 0, &format!("mac.flow_retry_limit.{f}")).unwrap(),
            retries as f64
        );
        // The optimizer sets the access point only: the client keeps the MAC's own limits.
        assert_eq!(
            tune::get(w, 4 + f as u32, &format!("mac.flow_retry_limit.{f}")).unwrap(),
            4.0
        );
    }
    assert!(decided >= 3, "{:?}", r.flows);
    // The optimizer is ECLAIR's: attached at the access point and still active.
    assert_eq!(r.optimizers.len(), 1);
}

#[test]
fn the_table_can_be_overridden_in_the_scenario() {
    let r = {
        let mut s = Simulation::from_toml(&access_point(
            "[stack.flavor_link.table]\nreno = [\"2/3\", 3]\ndefault = [1, 1]\n",
        ))
        .unwrap();
        s.run_until(0.001);
        assert_eq!(
            tune::get(&mut s.world, 0, "mac.flow_code_rate.0").unwrap(),
            1.0
        );
        assert_eq!(
            tune::get(&mut s.world, 0, "mac.flow_retry_limit.0").unwrap(),
            1.0
        );
        s.run();
        let r = s.results();
        if text(&r, 0, "flavor_detected") == "reno" {
            let w = &mut s.world;
            assert_eq!(tune::get(w, 0, "mac.flow_code_rate.0").unwrap(), 2.0 / 3.0);
            assert_eq!(tune::get(w, 0, "mac.flow_retry_limit.0").unwrap(), 3.0);
        }
        r
    };
    assert_eq!(text(&r, 0, "transport"), "tcp-reno");
}

#[test]
fn flavor_link_settings_are_checked_by_name() {
    let cases = [
        (
            wired("reno", false, 0.01, 1).replace("nodes = [1]\n", ""),
            "stack.flavor_link.nodes",
        ),
        (
            wired("reno", false, 0.01, 1).replace("nodes = [1]", "nodes = [7]"),
            "stack.flavor_link.nodes",
        ),
        (
            wired("reno", false, 0.01, 1).replace("optimize = false", "optimize = true"),
            "stack.flavor_link.optimize",
        ),
        (
            access_point("[stack.flavor_link.table]\nbogus = [\"1/2\", 4]\n"),
            "stack.flavor_link.table.bogus",
        ),
        (
            access_point("[stack.flavor_link.table]\nreno = [\"3/4\", 4]\n"),
            "stack.flavor_link.table.reno",
        ),
    ];
    for (toml, field) in cases {
        let Err(e) = Simulation::from_toml(&toml) else {
            panic!("{field}: accepted");
        };
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
}
