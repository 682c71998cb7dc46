//! Whole-scenario behaviours of the MAC and the multi-hop path: the 802.11 chain, hidden and
//! exposed senders, EDCA priorities, and determinism.

mod common;
use common::run;

use xlayer_core::{Results, Simulation, Value};

/// A saturated chain of `hops` hops, 200 m spacing, 250 m reception and 550 m carrier sense
/// (the ns-2 defaults), 802.11b at 2 Mbit/s.
fn chain(hops: u32) -> f64 {
    let toml = format!(
        "duration_s = 22.0\nwarmup_s = 2.0\n[radio]\ndata_rate_mbps = 2.0\nbasic_rate_mbps = 1.0\n\
         tx_range_m = 250.0\ncs_range_m = 550.0\n[topology]\nkind = \"chain\"\ncount = {}\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = {hops}\n",
        hops + 1
    );
    run(&toml).summary_f64("aggregate_throughput_bps")
}

#[test]
fn chain_throughput_falls_with_hops_and_levels_off_between_a_third_and_a_seventh() {
    // Li et al., "Capacity of ad hoc wireless networks" (MobiCom 2001): an 802.11 chain falls
    // towards 1/4 of the one-hop throughput and a little below.
    let t: Vec<f64> = (1..=8).map(chain).collect();
    eprintln!("chain throughput by hops (bit/s): {t:?}");
    for w in t[..4].windows(2) {
        assert!(
            w[1] < w[0],
            "throughput must fall over the first hops: {t:?}"
        );
    }
    for (i, &x) in t.iter().enumerate().skip(4) {
        let ratio = x / t[0];
        assert!(
            (1.0 / 7.0..=1.0 / 3.0).contains(&ratio),
            "{} hops: {ratio:.3} of one hop, expected 1/7..1/3: {t:?}",
            i + 1
        );
    }
}

/// Two saturating senders to one receiver in the middle; `hidden` puts them out of each other's
/// carrier-sense range (reception and carrier sense both 250 m). 802.11b at 2 Mbit/s data and
/// 1 Mbit/s control, the classic ns-2 set-up, where an RTS is short next to a data frame.
fn two_senders(hidden: bool, rts: bool) -> Results {
    let positions = if hidden {
        "[[0.0, 0.0], [200.0, 0.0], [400.0, 0.0]]"
    } else {
        "[[0.0, 0.0], [200.0, 0.0], [30.0, 0.0]]"
    };
    let toml = format!(
        "duration_s = 21.0\nwarmup_s = 1.0\n[radio]\ndata_rate_mbps = 2.0\nbasic_rate_mbps = 1.0\n\
         tx_range_m = 250.0\nrts_cts = {rts}\n[topology]\nkind = \"explicit\"\npositions = {positions}\n\
         [[flows]]\nsrc = 0\ndst = 1\n[[flows]]\nsrc = 2\ndst = 1\n"
    );
    run(&toml)
}

fn failure_ratio(r: &Results) -> f64 {
    r.node_total("mac_retries") / r.node_total("mac_tx")
}

#[test]
fn hidden_terminals_lose_far_more_frames_than_senders_in_range() {
    let hidden = two_senders(true, false);
    let in_range = two_senders(false, false);
    let (h, c) = (failure_ratio(&hidden), failure_ratio(&in_range));
    eprintln!("failed transmissions: hidden {h:.3}, in range {c:.3}");
    assert!(h > 0.3, "hidden senders should collide often: {h:.3}");
    assert!(h > 4.0 * c, "hidden {h:.3} vs in range {c:.3}");
}

#[test]
fn rts_cts_recovers_part_of_the_hidden_terminal_loss() {
    let plain = two_senders(true, false);
    let rts = two_senders(true, true);
    let (a, b) = (
        plain.summary_f64("aggregate_throughput_bps"),
        rts.summary_f64("aggregate_throughput_bps"),
    );
    eprintln!("hidden senders: basic {a:.0} bit/s, RTS/CTS {b:.0} bit/s");
    assert!(
        b > 1.2 * a,
        "RTS/CTS should raise throughput: {a:.0} -> {b:.0}"
    );
    let in_range = two_senders(false, false).summary_f64("aggregate_throughput_bps");
    assert!(
        b < in_range,
        "but not beyond senders that hear each other: {b:.0} vs {in_range:.0}"
    );
    // The data frames themselves now rarely collide: failures move to the short RTS frames.
    let data_fail = rts.node_total("drops_retry_limit") / rts.node_total("mac_tx");
    assert!(data_fail < plain.node_total("drops_retry_limit") / plain.node_total("mac_tx"));
}

#[test]
fn higher_edca_level_gets_more_of_a_shared_channel() {
    // Two saturating senders in range of each other and of the receiver; DiffQ's 8-level table.
    let toml = "duration_s = 11.0\nwarmup_s = 1.0\n[radio]\ntx_range_m = 250.0\n[mac]\naccess = \"diffq8\"\n\
        [topology]\nkind = \"explicit\"\npositions = [[0.0, 0.0], [100.0, 0.0], [0.0, 50.0]]\n\
        [[flows]]\nsrc = 0\ndst = 1\npriority = 0\n[[flows]]\nsrc = 2\ndst = 1\npriority = 7\n";
    let r = run(toml);
    let (low, high) = (
        r.flow_f64(0, "throughput_bps"),
        r.flow_f64(1, "throughput_bps"),
    );
    eprintln!("level 0: {low:.0} bit/s, level 7: {high:.0} bit/s");
    assert!(
        high > 3.0 * low,
        "level 7 should dominate level 0: {low} vs {high}"
    );
}

fn random_scenario(seed: u64) -> String {
    format!(
        "seed = {seed}\nduration_s = 5.0\nwarmup_s = 1.0\n[radio]\ntx_range_m = 250.0\ncs_range_m = 550.0\nfading = \"rayleigh\"\n\
         [topology]\nkind = \"random\"\ncount = 20\nwidth_m = 600.0\nheight_m = 600.0\nseed = 4\n\
         [flows_random]\ncount = 4\nseed = 9\nrate_bps = 800000.0\n"
    )
}

fn without_wall(r: &Results) -> String {
    let summary: Vec<_> = r.summary.iter().filter(|(k, _)| *k != "wall_s").collect();
    format!("{summary:?}{:?}{:?}", r.flows, r.nodes)
}

#[test]
fn same_seed_gives_identical_results() {
    let a = run(&random_scenario(3));
    let b = run(&random_scenario(3));
    assert_eq!(without_wall(&a), without_wall(&b));
}

#[test]
fn another_seed_gives_different_numbers() {
    let a = run(&random_scenario(3));
    let b = run(&random_scenario(4));
    assert_ne!(without_wall(&a), without_wall(&b));
    // the topology and the flows have their own seeds: only the run's randomness changed
    assert_eq!(
        a.flows.iter().map(|f| f[..3].to_vec()).collect::<Vec<_>>(),
        b.flows.iter().map(|f| f[..3].to_vec()).collect::<Vec<_>>()
    );
}

#[test]
fn unreachable_destination_is_a_topology_error_naming_the_flow() {
    let toml = "[topology]\nkind = \"explicit\"\npositions = [[0.0, 0.0], [10000.0, 0.0]]\n[radio]\ntx_range_m = 250.0\n[[flows]]\nsrc = 0\ndst = 1\n";
    let err = Simulation::from_toml(toml)
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        err.starts_with("flows[0].dst") && err.contains("unreachable"),
        "{err}"
    );
}

#[test]
fn cbr_flow_below_capacity_is_delivered_whole() {
    let toml = "duration_s = 6.0\nwarmup_s = 1.0\n[radio]\ntx_range_m = 250.0\ncs_range_m = 550.0\n[topology]\nkind = \"chain\"\ncount = 4\nspacing_m = 200.0\n\
        [[flows]]\nsrc = 0\ndst = 3\nrate_bps = 100000.0\npayload_bytes = 500\n";
    let r = run(toml);
    let tput = r.flow_f64(0, "throughput_bps");
    assert!((tput - 100_000.0).abs() / 100_000.0 < 0.02, "{tput}");
    assert!(r.flow_f64(0, "delivery_ratio") > 0.99);
    assert_eq!(r.flow_f64(0, "hops"), 3.0);
    let delay = r.flow_f64(0, "delay_mean_s");
    assert!(delay > 0.0 && delay < 0.05, "{delay}");
}

#[test]
fn two_priority_levels_of_one_sender_lose_nothing_to_duplicate_filtering() {
    // One sender, two saturating flows on different 802.11e levels, a receiver 50 m away and
    // nothing else on the air: every acknowledged frame must reach the network layer once.
    let toml = "duration_s = 6.0\nwarmup_s = 1.0\n[radio]\ntx_range_m = 250.0\n[mac]\naccess = \"802.11e\"\n\
        [topology]\nkind = \"explicit\"\npositions = [[0.0, 0.0], [50.0, 0.0]]\n\
        [[flows]]\nsrc = 0\ndst = 1\npriority = 1\n[[flows]]\nsrc = 0\ndst = 1\npriority = 2\n";
    let r = run(toml);
    assert!(
        (r.node_f64(0, "internal_collisions") as i64) > 0,
        "the set-up must exercise internal collisions"
    );
    assert_eq!((r.node_f64(1, "duplicates") as i64), 0);
    assert_eq!(
        (r.node_f64(1, "acks_sent") as i64),
        (r.node_f64(1, "delivered") as i64)
    );
}

#[test]
fn saturating_flows_sharing_a_source_share_its_queue() {
    let toml = "duration_s = 6.0\nwarmup_s = 1.0\n[radio]\ntx_range_m = 250.0\n\
        [topology]\nkind = \"explicit\"\npositions = [[0.0, 0.0], [50.0, 0.0], [0.0, 50.0]]\n\
        [[flows]]\nsrc = 0\ndst = 1\n[[flows]]\nsrc = 0\ndst = 2\n";
    let r = run(toml);
    assert!(r.summary_f64("jain_index") > 0.95, "{:?}", r.flows);
}

#[test]
fn acknowledgements_over_long_links_arrive_before_the_timeout() {
    // 4 km of free space at 1 Mbit/s: the ACK's round trip (27 us) exceeds a slot (20 us).
    let toml = "duration_s = 3.0\n[radio]\npropagation = \"free_space\"\ntx_power_dbm = 25.0\ndata_rate_mbps = 1.0\n\
        [topology]\nkind = \"explicit\"\npositions = [[0.0, 0.0], [4000.0, 0.0]]\n\
        [[flows]]\nsrc = 0\ndst = 1\nrate_bps = 100000.0\n";
    let r = run(toml);
    assert!(r.flow_f64(0, "delivery_ratio") > 0.99);
    assert_eq!((r.node_f64(0, "mac_retries") as i64), 0);
    assert_eq!((r.node_f64(1, "duplicates") as i64), 0);
}

#[test]
fn throughput_time_series_adds_up_to_the_flow_total() {
    let toml = "duration_s = 6.0\nwarmup_s = 2.0\n[radio]\ntx_range_m = 250.0\n[output]\ntimeseries_bin_s = 0.5\n\
        [topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 100.0\n\
        [[flows]]\nsrc = 0\ndst = 1\nrate_bps = 400000.0\nstart_s = 1.0\nstop_s = 5.0\n";
    let r = run(toml);
    let series: Vec<(f64, f64)> = r
        .timeseries
        .iter()
        .map(|row| match (&row[1].1, &row[2].1) {
            (Value::Float(t), Value::Float(bps)) => (*t, *bps),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(series.len(), 12, "6 s in 0.5 s bins");
    // silent before the flow starts and after it stops, about 400 kbit/s in between
    assert_eq!(series[0].1, 0.0);
    assert_eq!(series[11].1, 0.0);
    for &(t, bps) in &series[3..9] {
        assert!((bps - 400_000.0).abs() < 20_000.0, "t = {t}: {bps}");
    }
    // the bins inside the measured window [2, 5) s carry exactly the flow's throughput
    let window_bits: f64 = series
        .iter()
        .filter(|(t, _)| *t >= 2.0 && *t < 5.0)
        .map(|(_, bps)| bps * 0.5)
        .sum();
    let tput = r.flow_f64(0, "throughput_bps");
    assert!(
        (window_bits / 3.0 - tput).abs() < 1e-6 * tput,
        "{} vs {tput}",
        window_bits / 3.0
    );
}

#[test]
fn a_flows_drop_and_path_columns_account_for_every_loss_on_its_path() {
    // One flow offered 2 Mbit/s over a hidden-terminal chain: its packets die in full queues and at
    // the retry limit. With a single flow, the flow's counts must equal the nodes' totals, and
    // the hops its packets travelled equal the static path.
    let toml = "duration_s = 12.0\nwarmup_s = 2.0\n[radio]\ndata_rate_mbps = 2.0\n\
         basic_rate_mbps = 1.0\ntx_range_m = 250.0\ncs_range_m = 300.0\n[topology]\n\
         kind = \"chain\"\ncount = 5\nspacing_m = 200.0\n[[flows]]\nsrc = 0\ndst = 4\nrate_bps = 2e6\n";
    let r = run(toml);
    let int = |key: &str| match r.flows[0].iter().find(|(k, _)| *k == key) {
        Some((_, Value::Int(i))) => *i as f64,
        other => panic!("{key}: {other:?}"),
    };
    let (queue, link) = (int("queue_drops"), int("link_drops"));
    assert!(queue > 0.0 && link > 0.0, "queue {queue}, link {link}");
    assert_eq!(queue, r.node_total("drops_queue"));
    assert_eq!(link, r.node_total("drops_retry_limit"));
    assert_eq!(int("hops"), 4.0);
    assert_eq!(r.flow_f64(0, "hops_mean"), 4.0);
}

/// A source offering more than its link carries loses the rest at its own full queue, and
/// every packet it sends is accounted for: delivered, dropped at the queue (the flow's and the
/// node's counts agree), lost on the link, or still queued at the end.
#[test]
fn an_overloaded_source_accounts_for_every_packet_it_sends() {
    let r = run(r#"
duration_s = 3.0
warmup_s = 0.0
[mac]
queue_packets = 10
[topology]
kind = "chain"
count = 2
spacing_m = 100.0
[[flows]]
src = 0
dst = 1
rate_bps = 8000000.0
payload_bytes = 1000
"#);
    let sent = r.flow_f64(0, "sent");
    let received = r.flow_f64(0, "received");
    let queue_drops = r.flow_f64(0, "queue_drops");
    let link_drops = r.flow_f64(0, "link_drops");
    assert_eq!(r.node_f64(0, "originated"), sent);
    assert_eq!(r.node_f64(0, "drops_queue"), queue_drops);
    assert!(
        queue_drops > sent / 3.0,
        "8 Mbit/s offered to an 11 Mbit/s 802.11b link: {queue_drops} of {sent} dropped"
    );
    let left = sent - received - queue_drops - link_drops;
    assert!(
        (0.0..=11.0).contains(&left),
        "{sent} sent, {received} delivered, {queue_drops} + {link_drops} dropped: \
         {left} unaccounted"
    );
}

/// Prefetching a node's cache lines before its event (on by default where the node array
/// outgrows the caches, `World::set_prefetch`) is a hint to the CPU, so no result may depend
/// on it: a 1,600-node grid of UDP flows, and DSDV with ETX probes over lossy links (signals,
/// MAC and network timers), each run with it forced off and on, come out the same.
#[test]
fn prefetching_nodes_changes_no_result() {
    let grid = "seed = 2\nduration_s = 0.6\nwarmup_s = 0.0\n[radio]\nstandard = \"802.11b\"\n\
        data_rate_mbps = 11.0\nbasic_rate_mbps = 11.0\npropagation = \"range\"\n\
        tx_range_m = 250.0\n[topology]\nkind = \"grid\"\nrows = 40\ncols = 40\nspacing_m = 200.0\n\
        [flows_random]\ncount = 150\nseed = 5\nrate_bps = 500000.0\n"
        .to_string();
    let shipped = include_str!("../../../scenarios/lossy-dsdv.toml");
    let lossy = shipped
        .replace("duration_s = 120.0", "duration_s = 40.0")
        .replace("warmup_s = 40.0", "warmup_s = 32.0");
    assert!(
        lossy.contains("duration_s = 40.0\n") && lossy.contains("warmup_s = 32.0\n"),
        "lossy-dsdv's duration lines changed"
    );
    for text in [grid, lossy] {
        let run_with = |on: bool| {
            let mut s = Simulation::from_toml(&text).unwrap();
            s.world.set_prefetch(on);
            s.run();
            let r = s.results();
            (without_wall(&r), r.summary_f64("events"))
        };
        let (off, events_off) = run_with(false);
        let (on, events_on) = run_with(true);
        assert!(events_off > 50_000.0, "{events_off} events");
        assert_eq!(events_off, events_on);
        assert_eq!(off, on);
    }
}
