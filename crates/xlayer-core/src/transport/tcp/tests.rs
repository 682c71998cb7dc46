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
