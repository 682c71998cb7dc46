//! CLAP (the CLAP slides, seed document 001) against TCP-SACK and against the available
//! bandwidth (a saturating UDP flow on the same channel), on the slides' set-ups shipped in
//! `scenarios/clap-*.toml`: 802.11b at 11 Mbit/s, MAC retries disabled, 1 MB files, with and
//! without the 1 s pulses of 9.3e-8 W noise. Each test asserts a claim of the slides (its
//! direction and rough size); where our figures fall short of the slides' the README's CLAP
//! rows give both.

mod common;
use common::{col, run};
use xlayer_core::Results;

const FILE_BYTES: f64 = 1e6;

/// A shipped scenario run under `preset` (`clap`, `tcp-sack`, or `udp`: saturating sources).
fn run_as(file: &str, preset: &str) -> Results {
    let path = format!("{}/../../scenarios/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let text = text.replace("preset = \"clap\"", &format!("preset = \"{preset}\""));
    run(&text)
}

/// A file transfer's rate (bit/s): its bytes over its completion time; 0 if it did not finish.
fn transfer_bps(r: &Results, flow: usize) -> f64 {
    let t = col(&r.flows[flow], "completion_s");
    if t.is_finite() {
        FILE_BYTES * 8.0 / t
    } else {
        0.0
    }
}

fn aggregate_transfer_bps(r: &Results) -> f64 {
    (0..r.flows.len()).map(|i| transfer_bps(r, i)).sum()
}

/// The file's bytes all reached the application, once and in order, for every flow.
fn assert_whole_files(r: &Results) {
    for f in &r.flows {
        assert_eq!(col(f, "app_bytes"), FILE_BYTES, "{f:?}");
        assert_eq!(col(f, "stream_errors"), 0.0, "{f:?}");
        assert!(col(f, "completion_s").is_finite(), "{f:?}");
    }
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * q)
}

#[test]
fn clap_on_a_clean_hop_is_well_ahead_of_tcp_sack_whose_timeouts_come_from_self_interference() {
    let clap = run_as("clap-1hop.toml", "clap");
    let tcp = run_as("clap-1hop.toml", "tcp-sack");
    let udp = run_as("clap-1hop.toml", "udp");
    assert_whole_files(&clap);
    let (c, t) = (transfer_bps(&clap, 0), transfer_bps(&tcp, 0));
    let available = udp.flow_f64(0, "throughput_bps");
    // The slides: +300 %. Well ahead: at least twice TCP-SACK's rate.
    assert!(c >= 2.0 * t, "CLAP {c} bit/s, TCP-SACK {t} bit/s");
    // CLAP uses the link as a saturating UDP flow does.
    assert!(
        c >= 0.85 * available,
        "CLAP {c} bit/s of {available} available"
    );
    // Why: one flow alone on a noise-free hop, so every frame TCP lost collided with its own
    // data or ACKs, and those losses cost it retransmission timeouts.
    let f = &tcp.flows[0];
    assert!(col(f, "timeouts") >= 1.0, "{f:?}");
    assert!(col(f, "link_drops") >= 1.0, "{f:?}");
    assert_eq!(tcp.node_total("rx_errors_noise"), 0.0);
}

#[test]
fn under_on_off_noise_tcp_sack_collapses_while_clap_uses_the_good_periods() {
    let clap = run_as("clap-noise.toml", "clap");
    let tcp = run_as("clap-noise.toml", "tcp-sack");
    let udp = run_as("clap-noise.toml", "udp");
    assert_whole_files(&clap);
    let c = transfer_bps(&clap, 0);
    // TCP-SACK does not finish 1 MB in 30 s: its rate is what reached the receiver.
    let t = tcp.flow_f64(0, "throughput_bps").max(transfer_bps(&tcp, 0));
    let available = udp.flow_f64(0, "throughput_bps");
    // The link is on half the time: the available bandwidth is about half a clean hop's.
    assert!(udp.node_total("noise_s") > 0.0);
    // "TCP shuts down": under a twentieth of what the channel offers.
    assert!(
        t < 0.05 * available,
        "TCP-SACK {t} bit/s of {available} available"
    );
    // The slides: CLAP's gain over TCP-SACK is 4500 % (46 times).
    assert!(c >= 46.0 * t, "CLAP {c} bit/s, TCP-SACK {t} bit/s");
    // "CLAP adapts its rate quickly enough to utilize available link bandwidth".
    assert!(
        c >= 0.75 * available,
        "CLAP {c} bit/s of {available} available"
    );
}

#[test]
fn several_clap_flows_on_one_hop_share_fairly_and_carry_about_three_times_tcp_sack() {
    let clap = run_as("clap-multiflow.toml", "clap");
    let tcp = run_as("clap-multiflow.toml", "tcp-sack");
    assert_whole_files(&clap);
    let (c, t) = (aggregate_transfer_bps(&clap), aggregate_transfer_bps(&tcp));
    // The slides: 3:1. At least 2:1.
    assert!(c >= 2.0 * t, "CLAP {c} bit/s, TCP-SACK {t} bit/s in all");
    let rates: Vec<f64> = (0..3).map(|i| transfer_bps(&clap, i)).collect();
    assert!(jain(&rates) > 0.95, "{rates:?}");
}

/// The probe overhead the slides' expression gives for one flow: `16 p / (f + 2t + d)` bit/s,
/// read as a probe and its reply of `p` bytes each per round, a round lasting the probe
/// interval `f` plus the probe's round trip `2t + d` (measured: the flow's mean probe RTT).
fn probe_overhead_expected(r: &Results, flow: usize, p: f64, f: f64) -> f64 {
    let rtt = col(&r.flows[flow], "clap_probe_rtt_mean_s");
    16.0 * p / (f + rtt)
}

#[test]
fn clap_over_several_hops_stays_near_the_available_bandwidth_with_and_without_noise() {
    for file in ["clap-multihop.toml", "clap-multihop-noise.toml"] {
        let clap = run_as(file, "clap");
        let udp = run_as(file, "udp");
        let tcp = run_as(file, "tcp-sack");
        assert_whole_files(&clap);
        let c = aggregate_transfer_bps(&clap);
        let available: f64 = (0..2).map(|i| udp.flow_f64(i, "throughput_bps")).sum();
        assert!(
            c >= 0.8 * available,
            "{file}: CLAP {c} bit/s of {available} available"
        );
        let t = aggregate_transfer_bps(&tcp)
            .max((0..2).map(|i| tcp.flow_f64(i, "throughput_bps")).sum());
        assert!(c > t, "{file}: CLAP {c} bit/s, TCP-SACK {t} bit/s");
        for i in 0..2 {
            let f = &clap.flows[i];
            assert_eq!(col(f, "hops_mean"), 2.0);
            // The relay stamped its MAC's sending rate on the probes.
            let path = col(f, "clap_path_rate_bps");
            assert!(
                path > 0.0 && path < 11e6,
                "{file}: flow {i} path rate {path}"
            );
        }
    }
}

#[test]
fn the_probe_overhead_matches_the_slides_expression_within_ten_percent() {
    // The expression counts probe rounds that come back. A lost round waits the probe timeout
    // instead, so the check runs where rounds are not lost: one flow of clap-multihop.toml
    // over its two hops (no relay queue shared with another flow) with the MAC's default
    // retries. With both flows and retries disabled a fifth to a third of the rounds are lost
    // and the measured overhead falls below the expression (README, CLAP rows). p = 500 bytes
    // and f = 0.1 s put the expression at the slides' 80 kbit/s per flow before the round
    // trip is counted.
    let path = format!(
        "{}/../../scenarios/clap-multihop.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("short_retry_limit = 1", "short_retry_limit = 7")
        .replace("long_retry_limit = 1", "long_retry_limit = 4");
    let text = &text[..text.rfind("[[flows]]").expect("two flows")];
    for p in [44.0, 500.0] {
        let text = text.replace(
            "size_bytes = 1_000_000",
            &format!(
                "size_bytes = 1_000_000\nclap = {{ probe_bytes = {p}, probe_interval_s = 0.1 }}"
            ),
        );
        let r = run(&text);
        assert_whole_files(&r);
        let f = &r.flows[0];
        let measured = col(f, "clap_probe_overhead_bps");
        let expected = probe_overhead_expected(&r, 0, p, 0.1);
        assert!(
            (measured / expected - 1.0).abs() < 0.10,
            "p = {p}: {measured} bit/s measured, {expected} expected: {f:?}"
        );
        assert!(col(f, "clap_probes") >= 10.0, "{f:?}");
    }
}

#[test]
fn a_long_lived_clap_flow_runs_until_its_stop_and_delivers_in_order() {
    // No size: CLAP sends until stop_s; everything delivered is checked, nothing completes.
    let path = format!(
        "{}/../../scenarios/clap-1hop.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("size_bytes = 1_000_000\n", "stop_s = 5.0\n")
        .replace("duration_s = 30.0", "duration_s = 8.0");
    let r = run(&text);
    let f = &r.flows[0];
    assert!(col(f, "completion_s").is_nan());
    assert_eq!(col(f, "stream_errors"), 0.0);
    // Close to the hop's capacity for the 5 s it ran (4.87 Mbit/s saturating UDP).
    let bits = col(f, "app_bytes") * 8.0;
    assert!(bits > 0.8 * 4.87e6 * 5.0, "{bits} bits in 5 s");
    // Nothing leaves after the stop: the bytes match what 5 s at most can carry.
    assert!(bits < 1.05 * 4.87e6 * 5.0 + 8e6 * 0.1, "{bits} bits");
}
