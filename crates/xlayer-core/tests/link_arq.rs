//! Link-layer ARQ persistence per flow (`retry_limit` of a flow, `mac.flow_retry_limit.<flow>`),
//! the attempts each flow's packets take (`mac_attempts_mean`), and a MAC buffer in bytes
//! (`mac.queue_bytes`): the set-up the flavor-aware link adaptation acts on (seed document 003
//! §IV). Checked on one lossy hop against stop-and-wait ARQ's textbook numbers.

mod common;
use common::{col, run};
use xlayer_core::tune;
use xlayer_core::Simulation;

/// One 11 Mbit/s hop whose frames are lost with probability `p` each way (data and ACK alike,
/// `[link_loss]`), a light CBR flow (no queueing, no collisions: each loss is the link's).
fn lossy_hop(p: f64, flow_extra: &str) -> String {
    format!(
        "duration_s = 20.0\nseed = 5\n\
         [radio]\nstandard = \"802.11b\"\ndata_rate_mbps = 11.0\n\
         [topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 50.0\n\
         [link_loss]\nlinks = [{{ from = 0, to = 1, loss = {p} }}]\n\
         [[flows]]\nsrc = 0\ndst = 1\nrate_bps = 800000.0\npayload_bytes = 1000\n{flow_extra}"
    )
}

/// Stop-and-wait ARQ over a link that loses data with probability `p` and the ACK with `p`,
/// at most `limit` attempts: an attempt succeeds with `s = (1 − p)²`, so a packet takes
/// `(1 − (1 − s)^limit) / s` attempts on average, and reaches the receiver unless every data
/// transmission is lost, `1 − p^limit`.
fn arq(p: f64, limit: u32) -> (f64, f64) {
    let s = (1.0 - p) * (1.0 - p);
    (
        (1.0 - (1.0 - s).powi(limit as i32)) / s,
        1.0 - p.powi(limit as i32),
    )
}

#[test]
fn a_flows_retry_limit_sets_its_attempts_and_delivery_as_stop_and_wait_arq_predicts() {
    let p = 0.3;
    // The MAC's own short retry limit is 7 (802.11's dot11ShortRetryLimit).
    for (extra, limit) in [("", 7), ("retry_limit = 4\n", 4), ("retry_limit = 1\n", 1)] {
        let r = run(&lossy_hop(p, extra));
        let f = &r.flows[0];
        let (attempts, delivery) = arq(p, limit);
        let got = col(f, "mac_attempts_mean");
        assert!(
            (got / attempts - 1.0).abs() < 0.05,
            "limit {limit}: {got} attempts per packet against {attempts}"
        );
        let ratio = col(f, "received") / col(f, "sent");
        assert!(
            (ratio - delivery).abs() < 0.03,
            "limit {limit}: delivery {ratio} against {delivery}"
        );
    }
}

#[test]
fn the_retry_limit_of_a_flow_is_set_through_the_mac_tuning_layer() {
    let by_scenario = run(&lossy_hop(0.3, "retry_limit = 2\n"));
    let mut s = Simulation::from_toml(&lossy_hop(0.3, "")).unwrap();
    assert_eq!(
        tune::get(&mut s.world, 0, "mac.flow_retry_limit.0").unwrap(),
        7.0
    );
    tune::set(&mut s.world, 0, "mac.flow_retry_limit.0", 2.0).unwrap();
    assert_eq!(
        tune::get(&mut s.world, 0, "mac.flow_retry_limit.0").unwrap(),
        2.0
    );
    // The receiver sends only ACKs (MAC frames, not packets of the flow): node 0 decides.
    s.run();
    assert_eq!(
        format!("{:?}", by_scenario.flows),
        format!("{:?}", s.results().flows)
    );
    for bad in ["mac.flow_retry_limit.3", "mac.flow_retry_limit"] {
        let e = tune::get(&mut s.world, 0, bad).unwrap_err().to_string();
        assert!(e.contains("flow"), "{bad}: {e}");
    }
    assert!(tune::set(&mut s.world, 0, "mac.flow_retry_limit.0", 0.0).is_err());
}

#[test]
fn a_queue_in_bytes_holds_what_fits_in_its_bytes() {
    // 1028-byte packets (1000 B + UDP + IPv4) in a 4,200-byte buffer: four at most, though
    // the packet capacity is 50.
    let toml = "duration_s = 3.0\n[mac]\nqueue_bytes = 4200\n\
                [topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 50.0\n\
                [[flows]]\nsrc = 0\ndst = 1\nrate_bps = \"saturate\"\npayload_bytes = 1000\n";
    let mut s = Simulation::from_toml(toml).unwrap();
    let mut longest = 0.0f64;
    for k in 1..300 {
        s.run_until(k as f64 * 0.01);
        longest = longest.max(tune::get(&mut s.world, 0, "mac.queue_len.0").unwrap());
    }
    assert_eq!(longest, 4.0);
    // A saturating source waits for room: it never overflows its own queue.
    assert_eq!(col(&s.results().nodes[0], "drops_queue"), 0.0);
    assert_eq!(
        tune::get(&mut s.world, 0, "mac.queue_bytes").unwrap(),
        4200.0
    );
    assert!(tune::set(&mut s.world, 0, "mac.queue_bytes", 1000.0).is_err());
    let err = Simulation::from_toml(&toml.replace("4200", "1000"))
        .err()
        .unwrap();
    assert!(err.to_string().contains("mac.queue_bytes"), "{err}");
    let err = Simulation::from_toml(&lossy_hop(0.1, "retry_limit = 0\n"))
        .err()
        .unwrap();
    assert!(err.to_string().contains("flows[0].retry_limit"), "{err}");
}
