use super::testbed::{run, Loss, PathConfig};
use super::*;

fn path(loss: Loss) -> PathConfig {
    PathConfig {
        one_way_delay: SimTime::from_secs_f64(0.05),
        rate_bps: 10e6,
        loss,
        ack_loss: 0.0,
        seed: 7,
    }
}

#[test]
fn lossless_transfer_completes_in_order() {
    let mut cfg = TcpConfig::new(CcKind::Reno);
    cfg.total_bytes = Some(200_500);
    cfg.verify_stream = true;
    cfg.stream_key = 42;
    let rep = run(cfg, &path(Loss::None), SimTime::from_secs_f64(60.0), true);
    assert_eq!(rep.delivered_bytes, 200_500);
    assert!(rep.completed_at.is_some());
    assert!(rep.sender_done, "the FIN handshake completes");
    assert_eq!(rep.retransmits, 0);
}

fn bulk(cc: CcKind, sack: bool, total: u64) -> TcpConfig {
    let mut cfg = TcpConfig::new(cc);
    cfg.sack = sack;
    cfg.total_bytes = Some(total);
    cfg
}

#[test]
fn connection_closes_when_the_fin_overtakes_a_lost_last_segment() {
    // 5 segments; the last data segment (transmission 4) is lost, the FIN arrives first.
    let rep = run(
        bulk(CcKind::NewReno, false, 5000),
        &path(Loss::Listed(vec![4])),
        SimTime::from_secs_f64(600.0),
        false,
    );
    assert_eq!(rep.delivered_bytes, 5000);
    assert!(rep.sender_done, "the close handshake must finish");
}

#[test]
fn every_connection_closes_under_heavy_data_and_ack_loss() {
    for (cc, sack) in [
        (CcKind::Reno, false),
        (CcKind::NewReno, true),
        (CcKind::Paced { rate_bps: 1e6 }, true),
        (CcKind::Paced { rate_bps: 1e6 }, false),
    ] {
        for seed in 0..40 {
            let mut p = path(Loss::Bernoulli(0.15));
            p.ack_loss = 0.15;
            p.seed = seed;
            let rep = run(
                bulk(cc, sack, 20_000),
                &p,
                SimTime::from_secs_f64(3000.0),
                false,
            );
            assert_eq!(
                rep.delivered_bytes, 20_000,
                "{cc:?} sack {sack} seed {seed}"
            );
            assert!(
                rep.sender_done,
                "{cc:?} sack {sack} seed {seed}: close stalled"
            );
        }
    }
}

#[test]
fn raising_the_pace_rate_takes_effect_at_once() {
    let mut cfg = bulk(CcKind::Paced { rate_bps: 1.0 }, false, 1_000_000);
    cfg.initial_cwnd = 1;
    let mut s = TcpSender::new(cfg);
    let mut out = TcpOut::default();
    s.open(SimTime::ZERO, &mut out);
    let synack = TcpHeader {
        ack: 1,
        flags: SYN | ACK,
        wnd: 65535,
        ..TcpHeader::default()
    };
    s.on_ack(SimTime::from_secs_f64(0.1), &synack, &mut out);
    // One segment went out at 1 bit/s: the next would be due hours later.
    out.clear();
    let now = SimTime::from_secs_f64(1.0);
    s.set_pace_rate(now, 10e6, &mut out);
    let due = out
        .timers
        .iter()
        .filter(|t| t.0 == TcpTimer::Pace)
        .map(|t| t.1)
        .min()
        .expect("a pace timer");
    assert!(due < SimTime::from_secs_f64(1.01), "next segment at {due}");
}

#[test]
fn newreno_full_ack_leaves_at_least_two_segments_of_window() {
    let mut cfg = bulk(CcKind::NewReno, false, 400_000);
    cfg.rcv_buf_bytes = 20_000; // receive-window limited
    let rep = run(
        cfg,
        &path(Loss::Listed(vec![60])),
        SimTime::from_secs_f64(60.0),
        false,
    );
    assert_eq!(rep.fast_retransmits, 1);
    assert_eq!(rep.timeouts, 0);
    let min_after = rep
        .cwnd_trace
        .iter()
        .map(|&(_, w)| w)
        .skip_while(|&w| w < 5.0)
        .fold(f64::INFINITY, f64::min);
    assert!(min_after >= 2.0, "cwnd fell to {min_after}");
}

#[test]
fn a_sack_block_ending_at_the_fin_does_not_mark_the_fin() {
    let mut s = TcpSender::new(bulk(CcKind::NewReno, true, 3000));
    let mut out = TcpOut::default();
    s.open(SimTime::ZERO, &mut out);
    let t = SimTime::from_secs_f64(0.1);
    s.on_ack(
        t,
        &TcpHeader {
            ack: 1,
            flags: SYN | ACK | SACK_PERMITTED,
            wnd: 65535,
            ..TcpHeader::default()
        },
        &mut out,
    );
    out.clear();
    // Segments 1 and 2 (bytes 1001..3001) SACKed, segment 0 missing: one duplicate ACK.
    let mut dup = TcpHeader {
        ack: 1,
        flags: ACK,
        wnd: 65535,
        nsack: 1,
        ..TcpHeader::default()
    };
    dup.sack[0] = (1001, 3001);
    s.on_ack(SimTime::from_secs_f64(0.2), &dup, &mut out);
    assert_eq!(
        s.stats.fast_retransmits, 0,
        "two SACKed segments are below DupThresh; the FIN must not count"
    );
}

#[test]
fn westwood_does_not_raise_its_window_on_a_loss() {
    let mut cfg = TcpConfig::new(CcKind::Westwood);
    cfg.sack = true;
    for seed in 1..=10 {
        let mut p = path(Loss::Bernoulli(0.01));
        p.seed = seed;
        let rep = run(cfg, &p, SimTime::from_secs_f64(60.0), false);
        // Mascolo et al.: on three duplicate ACKs, cwnd = min(cwnd, BWE·RTTmin/MSS). (At the
        // end of recovery cwnd may rise to ssthresh, as Linux's Westwood+ does.)
        assert!(!rep.fast_loss_steps.is_empty());
        for &(before, after) in &rep.fast_loss_steps {
            assert!(after <= before + 1e-9, "seed {seed}: {before} -> {after}");
        }
    }
}

#[test]
fn receiver_retransmits_its_fin_and_closes_without_the_final_ack() {
    let cfg = bulk(CcKind::Reno, false, 1000);
    let mut r = TcpReceiver::new(cfg);
    let mut out = TcpOut::default();
    let t = |s: f64| SimTime::from_secs_f64(s);
    r.on_segment(
        t(0.0),
        &TcpHeader {
            flags: SYN,
            ..TcpHeader::default()
        },
        &mut out,
    );
    let data = TcpHeader {
        seq: 1,
        ack: 1,
        flags: ACK | FIN,
        len: 1000,
        ..TcpHeader::default()
    };
    out.clear();
    r.on_segment(t(0.1), &data, &mut out);
    assert_eq!(r.state, RecvState::LastAck);
    assert!(out.segments.iter().any(|h| h.has(FIN)));
    // No final ACK ever comes: the FIN is repeated with back-off, then the receiver closes.
    let mut fins = 0;
    let mut now = t(0.1);
    for _ in 0..100 {
        let Some(at) = out.timers.iter().map(|x| x.1).min() else {
            break;
        };
        now = at;
        out.clear();
        r.on_timer(now, &mut out);
        fins += out.segments.iter().filter(|h| h.has(FIN)).count();
    }
    assert_eq!(fins as u32, receiver::FIN_RETRIES);
    assert_eq!(r.state, RecvState::Closed);
    assert!(now < t(200.0));
}
