//! The TCP endpoints against analytic models and against each other, over an ideal wired path
//! (fixed delay, a fast link, losses drawn independently of the window): Padhye et al.'s model
//! of Reno, the ordering of the congestion-control variants, and byte-exact reliability.

use xlayer_core::sim::SimTime;
use xlayer_core::transport::tcp::testbed::{run, Loss, PathConfig};
use xlayer_core::transport::tcp::{CcKind, TcpConfig};

mod common;
use common::padhye_full;

fn wired(loss: Loss, seed: u64) -> PathConfig {
    PathConfig {
        one_way_delay: SimTime::from_secs_f64(0.05),
        rate_bps: 100e6,
        loss,
        ack_loss: 0.0,
        seed,
    }
}

fn goodput_pps(cc: CcKind, sack: bool, loss: Loss, secs: f64, seed: u64) -> f64 {
    let mut cfg = TcpConfig::new(cc);
    cfg.sack = sack;
    let rep = run(cfg, &wired(loss, seed), SimTime::from_secs_f64(secs), false);
    rep.delivered_bytes as f64 / cfg.mss as f64 / secs
}

#[test]
fn reno_follows_padhye_full_model_within_25_percent() {
    let rtt = 0.1;
    for &p in &[0.001, 0.005, 0.01, 0.02, 0.05] {
        let secs = if p < 0.004 { 600.0 } else { 300.0 };
        let measured = goodput_pps(CcKind::Reno, false, Loss::Bernoulli(p), secs, 11);
        // T0: the RTO the sender uses here is RFC 6298's 1 s minimum (SRTT + 4 RTTVAR is
        // far below it); b = 2 for delayed ACKs; Wmax = 65535-byte window / 1000-byte MSS.
        let model = padhye_full(p, rtt, 2.0, 1.0, 65.0);
        let ratio = measured / model;
        println!("p = {p}: measured {measured:.1} pkt/s, model {model:.1}, ratio {ratio:.3}");
        assert!(
            (0.75..=1.25).contains(&ratio),
            "p = {p}: {measured:.1} pkt/s vs Padhye {model:.1} (ratio {ratio:.3})"
        );
    }
}

fn mean_goodput(cc: CcKind, sack: bool, loss: &Loss) -> f64 {
    (1..=4)
        .map(|seed| goodput_pps(cc, sack, loss.clone(), 200.0, seed))
        .sum::<f64>()
        / 4.0
}

/// The set-up of the flavor-aware link adaptation document's Fig. 1: one flow over a lossy
/// path with a 100 ms RTT, a 2 Mbit/s bottleneck and 400-byte packets.
fn doc003_goodput(cc: CcKind, p: f64) -> f64 {
    let mut total = 0.0;
    for seed in 1..=4 {
        let mut cfg = TcpConfig::new(cc);
        cfg.mss = 400 - 40;
        let mut path = wired(Loss::Bernoulli(p), seed);
        path.rate_bps = 2e6;
        let secs = 200.0;
        let rep = run(cfg, &path, SimTime::from_secs_f64(secs), false);
        total += rep.delivered_bytes as f64 * 8.0 / secs;
    }
    total / 4.0
}

#[test]
fn under_random_loss_westwood_beats_newreno_which_matches_or_beats_reno() {
    for &p in &[0.01, 0.03, 0.05] {
        let reno = doc003_goodput(CcKind::Reno, p);
        let newreno = doc003_goodput(CcKind::NewReno, p);
        let westwood = doc003_goodput(CcKind::Westwood, p);
        println!("p = {p}: reno {reno:.0}, newreno {newreno:.0}, westwood+ {westwood:.0} bit/s");
        assert!(
            westwood > newreno,
            "p = {p}: Westwood+ {westwood:.1} <= NewReno {newreno:.1}"
        );
        // "NewReno ≥ Reno" up to the noise of four seeds.
        assert!(
            newreno >= 0.97 * reno,
            "p = {p}: NewReno {newreno:.1} < Reno {reno:.1}"
        );
    }
}

#[test]
fn sack_improves_reno_and_newreno_under_bursts_of_losses() {
    // Every 60th data transmission starts a burst of three losses.
    let loss = Loss::Bursts {
        period: 60,
        burst: 3,
    };
    for cc in [CcKind::Reno, CcKind::NewReno] {
        let plain = mean_goodput(cc, false, &loss);
        let sack = mean_goodput(cc, true, &loss);
        println!(
            "{}: without SACK {plain:.1}, with SACK {sack:.1} pkt/s",
            cc.name()
        );
        assert!(
            sack > 1.1 * plain,
            "{}: SACK {sack:.1} vs {plain:.1}",
            cc.name()
        );
    }
}

#[test]
fn every_variant_delivers_every_byte_once_and_in_order_over_a_lossy_path() {
    let total: u64 = 300_000 + 123; // a short last segment
    let variants = [
        (CcKind::Reno, false),
        (CcKind::Reno, true),
        (CcKind::NewReno, false),
        (CcKind::NewReno, true),
        (CcKind::Westwood, false),
        (CcKind::Few { alpha: 0.01 }, false),
        (CcKind::Paced { rate_bps: 2e6 }, false),
        (CcKind::Paced { rate_bps: 2e6 }, true),
    ];
    for (cc, sack) in variants {
        for seed in 1..=3 {
            let mut cfg = TcpConfig::new(cc);
            cfg.sack = sack;
            cfg.total_bytes = Some(total);
            cfg.verify_stream = true;
            cfg.stream_key = 1000 + seed;
            let mut path = wired(Loss::Bernoulli(0.05), seed);
            path.ack_loss = 0.05; // handshake and FIN segments get lost too
            let rep = run(cfg, &path, SimTime::from_secs_f64(2000.0), true);
            let name = format!(
                "{}{} seed {seed}",
                cc.name(),
                if sack { "+sack" } else { "" }
            );
            assert!(rep.data_lost > 0, "{name}: the path lost nothing");
            // The application saw one contiguous stream from offset 0, every chunk carrying
            // the bytes that belong at its offset.
            let mut expect = 0u64;
            for &(off, len, ok) in &rep.chunks {
                assert_eq!(off, expect, "{name}: gap or repeat at offset {expect}");
                assert!(ok, "{name}: wrong bytes at offset {off}");
                expect += len as u64;
            }
            assert_eq!(expect, total, "{name}: delivered {expect} of {total} bytes");
            assert!(rep.completed_at.is_some(), "{name}: no completion");
        }
    }
}
