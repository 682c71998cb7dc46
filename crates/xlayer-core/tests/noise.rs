//! Injected noise (`[[noise]]`, the CLAP slides' on-off noise) and the MAC status signals CLAP
//! reads (`mac.send_rate_bps`, `mac.underflow`), on one hop whose numbers are known without the
//! simulator: with `propagation = "range"` every node in range receives the transmit power
//! itself, so a frame's SINR is `P_tx / (thermal + injected)` and the threshold error model
//! decides each frame by that number alone.

use xlayer_core::tune::{self, TuneEventKind};
use xlayer_core::{Results, Simulation};

/// One 11 Mbit/s 802.11b hop of 50 m, 0 dBm transmit power received whole, SINR threshold
/// 10 dB at every rate, a saturating 1000-byte UDP flow from node 0 to node 1.
fn one_hop(extra: &str) -> String {
    format!(
        "duration_s = 10.0\nseed = 3\n\
         [radio]\nstandard = \"802.11b\"\ndata_rate_mbps = 11.0\nbasic_rate_mbps = 1.0\n\
         preamble = \"long\"\npropagation = \"range\"\ntx_range_m = 100.0\ntx_power_dbm = 0.0\n\
         error_model = \"threshold\"\nsinr_threshold_db = 10.0\n\
         [output]\ntimeseries_bin_s = 0.5\n\
         [topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 50.0\n\
         [[flows]]\nsrc = 0\ndst = 1\nrate_bps = \"saturate\"\npayload_bytes = 1000\n{extra}"
    )
}

mod common;
use common::{col as num, run};

fn sim(toml: &str) -> Simulation {
    Simulation::from_toml(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

/// 802.11b, long preamble (802.11-2016 §16): one DATA exchange of a 1028-byte IP packet
/// (1000 B payload + UDP + IPv4) after the previous one, in µs: DIFS (SIFS + 2 slots) + the mean
/// post-backoff (CWmin / 2 slots) + DATA (192 µs PLCP + (1028 + 24 MAC header + 4 FCS + 8
/// LLC/SNAP) bytes at 11 Mbit/s) + SIFS + ACK (192 µs + 14 bytes at 1 Mbit/s).
fn service_time_us() -> f64 {
    let (slot, sifs) = (20.0, 10.0);
    let difs = sifs + 2.0 * slot;
    let backoff = 31.0 / 2.0 * slot;
    let data = 192.0 + (1028.0 + 24.0 + 4.0 + 8.0) * 8.0 / 11.0;
    let ack = 192.0 + 14.0 * 8.0 / 1.0;
    difs + backoff + data + sifs + ack
}

/// Received throughput of flow 0 per 0.5 s bin.
fn bins(r: &Results) -> Vec<(f64, f64)> {
    r.timeseries
        .iter()
        .filter(|row| num(row, "flow") == 0.0)
        .map(|row| (num(row, "t_s"), num(row, "throughput_bps")))
        .collect()
}

#[test]
fn noise_pulses_stop_a_link_whose_sinr_they_push_below_the_threshold() {
    // The slides' form: 1 s pulses, on from 0 s, every node. -8 dBm of noise against a 0 dBm
    // signal: SINR 8 dB < 10 dB, every frame of an on period is lost; off, the hop runs at
    // full rate.
    let r = run(&one_hop(
        "[[noise]]\npower_dbm = -8.0\non_s = 1.0\noff_s = 1.0\n",
    ));
    let capacity = 1000.0 * 8.0 / (service_time_us() * 1e-6);
    let bins = bins(&r);
    assert_eq!(bins.len(), 20);
    for (t, bps) in bins {
        if (t as u64).is_multiple_of(2) {
            assert_eq!(bps, 0.0, "bin at {t} s lies in a noise pulse");
        } else {
            assert!(
                bps > 0.8 * capacity,
                "bin at {t} s is between pulses: {bps} bit/s against {capacity}"
            );
        }
    }
    for n in &r.nodes {
        // Five pulses of 1 s in 10 s.
        assert!((num(n, "noise_s") - 5.0).abs() < 1e-9, "{n:?}");
    }
    let rx = &r.nodes[1];
    assert!(num(rx, "rx_errors_noise") > 0.0);
    assert_eq!(num(rx, "rx_errors_noise"), num(rx, "rx_errors"));
}

#[test]
fn noise_below_the_margin_changes_nothing() {
    // -12 dBm: SINR 12 dB, above the threshold for the whole run: the same run as without.
    let quiet = run(&one_hop(""));
    let noisy = run(&one_hop(
        "[[noise]]\npower_w = 6.309573444801932e-5\nprocess = \"schedule\"\nschedule = [[0.0, 10.0]]\n",
    ));
    assert_eq!(format!("{:?}", quiet.flows), format!("{:?}", noisy.flows));
    assert!((num(&noisy.nodes[0], "noise_s") - 10.0).abs() < 1e-9);
    assert_eq!(num(&noisy.nodes[1], "rx_errors_noise"), 0.0);
    // Results of a scenario without noise carry no noise columns.
    assert!(quiet.nodes[0].iter().all(|(k, _)| *k != "noise_s"));
}

#[test]
fn sensed_noise_silences_the_sender_instead_of_corrupting_its_frames() {
    // Range propagation puts carrier sense at 3 dB under the transmit power: 0 dBm of noise
    // that carrier sense counts keeps the medium busy, so nothing is sent and nothing lost.
    let r = run(&one_hop(
        "[[noise]]\npower_dbm = 0.0\nprocess = \"schedule\"\nschedule = [[0.0, 10.0]]\ncarrier_sense = true\n",
    ));
    assert_eq!(num(&r.nodes[0], "mac_tx"), 0.0);
    assert_eq!(num(&r.nodes[1], "rx_errors"), 0.0);
    assert_eq!(num(&r.flows[0], "received"), 0.0);
    // The same noise unsensed: the sender sends, and the receiver loses every frame to it.
    let r = run(&one_hop(
        "[[noise]]\npower_dbm = 0.0\nprocess = \"schedule\"\nschedule = [[0.0, 10.0]]\n",
    ));
    assert!(num(&r.nodes[0], "mac_tx") > 100.0);
    assert_eq!(num(&r.flows[0], "received"), 0.0);
    assert_eq!(
        num(&r.nodes[1], "rx_errors_noise"),
        num(&r.nodes[1], "rx_errors")
    );
}

#[test]
fn a_noise_transmitter_reaches_the_nodes_its_propagation_reaches() {
    // Nodes at 0, 80 and 160 m; a source at -50 m with a 100 m range reaches node 0 only.
    let toml =
        one_hop("[[noise]]\npower_dbm = 0.0\nposition = [-50.0, 0.0]\non_s = 0.5\noff_s = 0.5\n")
            .replace("count = 2\nspacing_m = 50.0", "count = 3\nspacing_m = 80.0");
    let r = run(&toml);
    let noise: Vec<f64> = r.nodes.iter().map(|n| num(n, "noise_s")).collect();
    assert!(
        (noise[0] - 5.0).abs() < 1e-9 && noise[1] == 0.0 && noise[2] == 0.0,
        "{noise:?}"
    );
}

#[test]
fn the_phy_tuning_layer_shows_the_noise_and_announces_its_changes() {
    let mut s = sim(&one_hop(
        "[[noise]]\npower_w = 2e-5\non_s = 1.0\noff_s = 1.0\nnodes = [1]\n",
    ));
    s.world.events.subscribe(TuneEventKind::PhyNoise);
    s.run_until(0.5);
    assert!((tune::get(&mut s.world, 1, "phy.injected_noise_mw").unwrap() - 2e-2).abs() < 1e-15);
    assert_eq!(
        tune::get(&mut s.world, 0, "phy.injected_noise_mw").unwrap(),
        0.0
    );
    assert!(tune::set(&mut s.world, 1, "phy.injected_noise_mw", 1.0).is_err());
    s.run_until(1.5);
    assert_eq!(
        tune::get(&mut s.world, 1, "phy.injected_noise_mw").unwrap(),
        0.0
    );
    s.run();
    let ev: Vec<(f64, u32, f64)> = s
        .world
        .events
        .drain()
        .into_iter()
        .filter(|e| e.kind == TuneEventKind::PhyNoise)
        .map(|e| (e.time.as_secs_f64(), e.node, e.value))
        .collect();
    // Ten switches at node 1 only, alternating on (0.02 mW) and off.
    assert_eq!(ev.len(), 10, "{ev:?}");
    for (k, &(t, node, mw)) in ev.iter().enumerate() {
        assert_eq!((t, node), (k as f64, 1));
        assert_eq!(mw, if k.is_multiple_of(2) { 2e-2 } else { 0.0 });
    }
}

#[test]
fn the_mac_sending_rate_is_what_the_link_delivers_per_service_time() {
    // One saturated sender: each frame's service is DIFS + post-backoff + DATA + SIFS + ACK.
    let mut s = sim(&one_hop(""));
    s.run_until(1.0);
    let (mut sum, mut k) = (0.0, 0);
    while s.now_s() < 9.99 {
        let t = s.now_s() + 0.01;
        s.run_until(t);
        sum += tune::get(&mut s.world, 0, "mac.send_rate_bps").unwrap();
        k += 1;
    }
    let expected = 1028.0 * 8.0 / (service_time_us() * 1e-6);
    let mean = sum / k as f64;
    assert!(
        (mean / expected - 1.0).abs() < 0.05,
        "mean smoothed rate {mean} bit/s against {expected}"
    );
    // A node that never sent has no rate.
    assert_eq!(
        tune::get(&mut s.world, 1, "mac.send_rate_bps").unwrap(),
        0.0
    );
}

#[test]
fn underflow_is_announced_when_the_queue_runs_dry_and_never_under_saturation() {
    let count = |toml: &str| {
        let mut s = sim(toml);
        s.world.events.subscribe(TuneEventKind::MacUnderflow);
        s.run();
        let n = s
            .world
            .events
            .drain()
            .iter()
            .filter(|e| e.kind == TuneEventKind::MacUnderflow && e.node == 0)
            .count();
        (n, num(&s.results().nodes[0], "mac_tx"))
    };
    let (saturated, _) = count(&one_hop(""));
    assert_eq!(saturated, 0);
    // 1 Mbit/s of 1000-byte packets on a 5 Mbit/s link: each packet is alone in the queue and
    // leaves it empty (no noise, no loss: every transmission is delivered).
    let (light, sent) =
        count(&one_hop("").replace("rate_bps = \"saturate\"", "rate_bps = 1000000.0"));
    assert_eq!(light as f64, sent);
    assert!(light > 1000);
}

#[test]
fn bad_noise_sections_name_their_field() {
    for (extra, field) in [
        ("[[noise]]\non_s = 1.0\noff_s = 1.0\n", "noise[0].power_w"),
        (
            "[[noise]]\npower_w = 1e-8\npower_dbm = -50.0\non_s = 1.0\noff_s = 1.0\n",
            "noise[0].power_dbm",
        ),
        ("[[noise]]\npower_w = -1.0\non_s = 1.0\noff_s = 1.0\n", "noise[0].power_w"),
        ("[[noise]]\npower_w = 1e-8\noff_s = 1.0\n", "noise[0].on_s"),
        (
            "[[noise]]\npower_w = 1e-8\non_s = 1.0\noff_s = 1.0\nnodes = [7]\n",
            "noise[0].nodes[0]",
        ),
        (
            "[[noise]]\npower_w = 1e-8\nprocess = \"schedule\"\nschedule = [[2.0, 3.0], [1.0, 4.0]]\n",
            "noise[0].schedule[1]",
        ),
        (
            "[[noise]]\npower_w = 1e-8\nprocess = \"sometimes\"\non_s = 1.0\noff_s = 1.0\n",
            "noise[0].process",
        ),
        (
            "[[noise]]\npower_w = 1e-8\non_s = 1.0\noff_s = 1.0\nnodes = [0]\nposition = [0.0, 0.0]\n",
            "noise[0].position",
        ),
    ] {
        let err = Simulation::from_toml(&one_hop(extra)).err().unwrap_or_else(|| panic!("{extra} accepted"));
        assert!(err.to_string().contains(field), "{extra}: {err}");
    }
}

/// The shipped scenario of the CLAP slides' time-varying link, with `edit` applied to its text.
fn slides(edit: impl Fn(String) -> String) -> Results {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/noise-onoff.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    run(&edit(text))
}

#[test]
fn tcp_sack_shuts_down_on_the_slides_noisy_link_while_the_bandwidth_is_there() {
    // The slides: "TCP shuts down operation in the presence of link errors" while a saturating
    // UDP flow measures the bandwidth the link still offers (half of it, between pulses).
    const NOISE: &str = "[[noise]]\npower_w = 9.3e-8\non_s = 1.0\noff_s = 1.0\n";
    const TCP: &str = "transport = \"tcp\"\nsack = true\nsize_bytes = 1_000_000\n";
    let udp = |text: String| text.replace(TCP, "rate_bps = \"saturate\"\n");
    let quiet = |text: String| text.replace(NOISE, "");
    let available = num(&slides(udp).flows[0], "throughput_bps");
    let available_quiet = num(&slides(|t| quiet(udp(t))).flows[0], "throughput_bps");
    // Half the time under noise: half the bandwidth (within a few frames at each pulse edge).
    assert!(
        (available / available_quiet - 0.5).abs() < 0.02,
        "{available} against {available_quiet}"
    );
    let tcp = slides(|t| t);
    let tcp_quiet = slides(quiet);
    let goodput = num(&tcp.flows[0], "throughput_bps");
    assert!(
        goodput < 0.1 * available,
        "TCP-SACK got {goodput} bit/s of the {available} the link offers"
    );
    // Without noise the 1 MB transfer completes; with it, not within 30 s.
    assert!(num(&tcp_quiet.flows[0], "completion_s") < 30.0);
    assert!(num(&tcp.flows[0], "completion_s").is_nan());
}
