//! Wired point-to-point links (`[[wired]]`): serialization at the link rate, propagation delay,
//! drop-tail queues and random loss, checked against the arithmetic of a store-and-forward path;
//! static routing over a graph of radios and wires (an access point); and TCP Reno over a lossy
//! wired path against Padhye et al.'s model, from a scenario file.

mod common;
use common::{col, padhye_full, run};

/// Nodes 0 - 1 - 2 wired in a line (no radio link between them: 5 km apart).
fn line(link: &str, flow: &str) -> String {
    format!(
        "duration_s = 20.0\nwarmup_s = 1.0\n\
         [topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 5000.0\n\
         [[wired]]\na = 0\nb = 1\n{link}\n[[wired]]\na = 1\nb = 2\n{link}\n\
         [[flows]]\nsrc = 0\ndst = 2\npayload_bytes = 1000\n{flow}"
    )
}

#[test]
fn a_lone_packet_takes_serialization_plus_propagation_at_each_hop() {
    // 1028-byte IP packets at 1 Mbit/s: 8.224 ms on each wire, plus 10 ms of propagation;
    // 100 kbit/s of them never queue.
    let r = run(&line(
        "rate_bps = 1e6\ndelay_s = 0.01",
        "rate_bps = 100000.0",
    ));
    let f = &r.flows[0];
    let expected = 2.0 * (1028.0 * 8.0 / 1e6 + 0.01);
    assert!(
        (col(f, "delay_mean_s") - expected).abs() < 1e-9,
        "{}",
        col(f, "delay_mean_s")
    );
    assert_eq!(col(f, "received"), col(f, "sent"));
    assert_eq!(col(f, "hops"), 2.0);
    assert_eq!(
        col(&r.nodes[1], "forwarded"),
        col(&r.nodes[0], "originated")
    );
}

#[test]
fn a_saturated_wire_carries_its_rate_and_its_queue_drops_the_rest() {
    // A 4 Mbit/s source into 2 Mbit/s wires: the payload's share of the wire's rate arrives,
    // and the first wire's queue overflows.
    let r = run(&line(
        "rate_bps = 2e6\ndelay_s = 0.005",
        "rate_bps = 4000000.0",
    ));
    let f = &r.flows[0];
    let expected = 2e6 * 1000.0 / 1028.0;
    assert!(
        (col(f, "throughput_bps") / expected - 1.0).abs() < 0.01,
        "{} against {expected}",
        col(f, "throughput_bps")
    );
    assert!(col(&r.nodes[0], "wired_drops_queue") > 0.0);
    assert_eq!(col(&r.nodes[1], "wired_drops_queue"), 0.0);
}

#[test]
fn a_lossy_wire_loses_its_share() {
    // 10 % on each of two wires: 81 % arrive (1 - 0.1)^2; about 2,000 packets.
    let r = run(&line(
        "rate_bps = 1e7\ndelay_s = 0.001\nloss = 0.1",
        "rate_bps = 800000.0",
    ));
    let f = &r.flows[0];
    let ratio = col(f, "received") / col(f, "sent");
    assert!((ratio - 0.81).abs() < 0.03, "{ratio}");
    assert!(col(&r.nodes[0], "wired_lost") > 0.0);
}

#[test]
fn a_server_reaches_a_wireless_client_through_an_access_point() {
    // Server 0 wired to the access point 1, whose radio reaches client 2 (100 m away).
    let toml = "duration_s = 10.0\n[topology]\nkind = \"explicit\"\n\
                positions = [[-5000.0, 0.0], [0.0, 0.0], [100.0, 0.0]]\n\
                [[wired]]\na = 0\nb = 1\nrate_bps = 1e8\ndelay_s = 0.02\n\
                [[flows]]\nsrc = 0\ndst = 2\ntransport = \"tcp\"\nsize_bytes = 200000\n";
    let r = run(toml);
    let f = &r.flows[0];
    assert!(col(f, "completion_s") < 10.0, "{f:?}");
    assert_eq!(col(f, "hops"), 2.0);
    // The data crossed the radio at the access point, the ACKs the wire back.
    assert!(col(&r.nodes[1], "mac_tx") > 100.0);
    assert!(col(&r.nodes[1], "wired_tx") > 50.0);
    assert_eq!(col(&r.nodes[0], "mac_tx"), 0.0);
}

#[test]
fn wired_links_are_refused_with_routing_protocols_and_bad_fields_are_named() {
    for (extra, field) in [
        ("[[wired]]\na = 0\nb = 0\nrate_bps = 1e6\n", "wired[0].b"),
        ("[[wired]]\na = 0\nb = 7\nrate_bps = 1e6\n", "wired[0].b"),
        (
            "[[wired]]\na = 0\nb = 1\nrate_bps = 0.0\n",
            "wired[0].rate_bps",
        ),
        (
            "[[wired]]\na = 0\nb = 1\nrate_bps = 1e6\nloss = 1.5\n",
            "wired[0].loss",
        ),
        (
            "[[wired]]\na = 0\nb = 1\nrate_bps = 1e6\n[[wired]]\na = 1\nb = 0\nrate_bps = 1e6\n",
            "wired[1].b",
        ),
        (
            "[stack]\npreset = \"diffq-udp\"\n[[wired]]\na = 0\nb = 1\nrate_bps = 1e6\n",
            "wired",
        ),
    ] {
        let toml = format!("[topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 100.0\n{extra}");
        let err = xlayer_core::Simulation::from_toml(&toml)
            .err()
            .unwrap_or_else(|| panic!("accepted: {extra}"));
        assert!(err.to_string().contains(field), "{extra}: {err}");
    }
}

#[test]
fn reno_over_a_lossy_wired_path_follows_padhyes_model_from_a_scenario_file() {
    // The TCP test bench's path as a scenario: 100 Mbit/s, 50 ms each way, 1 % of the data
    // packets lost (none of the ACKs), one Reno flow with delayed ACKs for 300 s.
    let toml = "duration_s = 300.0\nseed = 11\n[topology]\nkind = \"chain\"\ncount = 2\n\
                spacing_m = 5000.0\n[[wired]]\na = 0\nb = 1\nrate_bps = 1e8\ndelay_s = 0.05\n\
                loss = 0.01\nreverse_loss = 0.0\n[[flows]]\nsrc = 0\ndst = 1\n\
                transport = \"tcp\"\ncc = \"reno\"\npayload_bytes = 1000\n";
    let r = run(toml);
    let measured = col(&r.flows[0], "throughput_bps") / 8000.0;
    // T0: RFC 6298's 1 s minimum RTO; b = 2 (delayed ACKs); Wmax = 65535 / 1000 segments.
    let model = padhye_full(0.01, 0.1, 2.0, 1.0, 65.0);
    let ratio = measured / model;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "{measured:.1} pkt/s against Padhye's {model:.1} (ratio {ratio:.3})"
    );
}

/// The access point topology of the flavor-aware link layer (seed document 003 §IV-V).
fn access_point(fields: &str) -> xlayer_core::Simulation {
    let toml = format!("duration_s = 5.0\n[topology]\nkind = \"access_point\"\n{fields}");
    xlayer_core::Simulation::from_toml(&toml).unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

/// Mean and standard deviation.
fn stats(xs: &[f64]) -> (f64, f64) {
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
    (m, v.sqrt())
}

#[test]
fn the_access_point_topology_wires_its_servers_and_places_its_clients() {
    let s = access_point("count = 4\ndistance_m = 400.0\nrtt_s = 0.1\n");
    let w = &s.world;
    assert_eq!(w.nodes.len(), 9);
    for c in 5..9 {
        let n = &w.nodes[c];
        assert!(((n.x * n.x + n.y * n.y).sqrt() - 400.0).abs() < 1e-9);
    }
    // Server i and the access point, both directions, half the round trip each way.
    assert_eq!(w.wired.links.len(), 8);
    for server in 1..=4 {
        let l = w.wired.link(server, 0).expect("wired to the access point");
        assert_eq!(w.wired.links[l as usize].delay.as_secs_f64(), 0.05);
        assert!(w.wired.link(0, server).is_some());
    }
}

#[test]
fn a_server_downloads_to_its_client_through_the_access_point() {
    let mut s = access_point(
        "count = 2\ndistance_m = 100.0\nrtt_s = 0.1\n\
         [[flows]]\nsrc = 1\ndst = 3\ntransport = \"tcp\"\nsize_bytes = 100000\n\
         [[flows]]\nsrc = 2\ndst = 4\ntransport = \"tcp\"\nsize_bytes = 100000\n",
    );
    s.run();
    let r = s.results();
    for f in &r.flows {
        assert!(col(f, "completion_s") < 5.0, "{f:?}");
        assert_eq!(col(f, "hops"), 2.0);
    }
}

#[test]
fn round_trips_and_distances_follow_table_ii_and_scenario_four() {
    let delays = |s: &xlayer_core::Simulation| -> Vec<f64> {
        let w = &s.world;
        (1..w.nodes.len() as u32 / 2 + 1)
            .map(|k| {
                w.wired.links[w.wired.link(k, 0).unwrap() as usize]
                    .delay
                    .as_secs_f64()
                    * 2.0
            })
            .collect()
    };
    // 600 servers each (the clients all hear each other: 360,000 radio links): sample moments
    // within about four standard errors.
    let n = "count = 600\ndistance_m = 400.0\n";
    let (m, sd) = stats(&delays(&access_point(&format!(
        "{n}rtt_distribution = \"normal\"\nrtt_s = 0.1\nrtt_std_s = 0.01\n"
    ))));
    assert!(
        (m - 0.1).abs() < 0.001 && (sd - 0.01).abs() < 0.001,
        "{m} {sd}"
    );
    let (m, sd) = stats(&delays(&access_point(&format!(
        "{n}rtt_distribution = \"exponential\"\nrtt_s = 0.1\n"
    ))));
    assert!(
        (m - 0.1).abs() < 0.006 && (sd - 0.1).abs() < 0.01,
        "{m} {sd}"
    );
    let d = delays(&access_point(&format!(
        "{n}rtt_distribution = \"uniform\"\nrtt_min_s = 0.0\nrtt_max_s = 0.2\n"
    )));
    let (m, sd) = stats(&d);
    // Uniform on [0, 0.2]: mean 0.1, standard deviation 0.2 / √12.
    assert!(
        (m - 0.1).abs() < 0.01 && (sd - 0.2 / 12f64.sqrt()).abs() < 0.005,
        "{m} {sd}"
    );
    assert!(d.iter().all(|&x| (0.0..=0.2).contains(&x)));
    // Scenario four: distances drawn from a normal distribution.
    let s = access_point("count = 600\ndistance_m = 400.0\ndistance_std_m = 50.0\n");
    let r: Vec<f64> = s.world.nodes[601..]
        .iter()
        .map(|n| (n.x * n.x + n.y * n.y).sqrt())
        .collect();
    let (m, sd) = stats(&r);
    assert!(
        (m - 400.0).abs() < 3.0 && (sd - 50.0).abs() < 3.0,
        "{m} {sd}"
    );
}

#[test]
fn bad_access_point_fields_are_named() {
    for (fields, field) in [
        ("count = 2\n", "topology.distance_m"),
        ("count = 2\ndistances_m = [100.0]\n", "topology.distances_m"),
        (
            "count = 2\ndistance_m = 100.0\nrtt_distribution = \"uniform\"\n",
            "topology.rtt_min_s",
        ),
        (
            "count = 2\ndistance_m = 100.0\nrtt_distribution = \"normal\"\n",
            "topology.rtt_std_s",
        ),
        (
            "count = 2\ndistance_m = 100.0\nspacing_m = 5.0\n",
            "topology.spacing_m",
        ),
        (
            "count = 2\ndistance_m = 100.0\n[[wired]]\na = 1\nb = 0\nrate_bps = 1e6\n",
            "wired[0].b",
        ),
    ] {
        let toml = format!("[topology]\nkind = \"access_point\"\n{fields}");
        let err = xlayer_core::Simulation::from_toml(&toml)
            .err()
            .unwrap_or_else(|| panic!("accepted: {fields}"));
        assert!(err.to_string().contains(field), "{fields}: {err}");
    }
    let err = xlayer_core::Simulation::from_toml(
        "[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 5.0\nrtt_s = 0.1\n",
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("topology.rtt_s"), "{err}");
}

#[test]
fn web_and_email_clients_get_every_object_with_their_response_times() {
    // Table I's applications over the access point, requests made frequent so a minute holds
    // many: pages every 2 s on average (1 kB HTML and 5 images of 500 B-2 kB), e-mails of 2 kB
    // every 5 s; every delivered byte checked against what the server wrote.
    let toml = "duration_s = 60.0\nseed = 3\n[topology]\nkind = \"access_point\"\ncount = 2\n\
                distance_m = 100.0\nrtt_s = 0.1\n\
                [[flows]]\nsrc = 1\ndst = 3\ntransport = \"tcp\"\nsack = true\n\
                [flows.tcp]\nverify_stream = true\n\
                [flows.app]\nkind = \"http\"\npage_interval_s = 2.0\n\
                [[flows]]\nsrc = 2\ndst = 4\ntransport = \"tcp\"\n\
                [flows.tcp]\nverify_stream = true\n\
                [flows.app]\nkind = \"email\"\nemail_interval_s = 5.0\n";
    let r = run(toml);
    let (web, mail) = (&r.flows[0], &r.flows[1]);
    for f in [web, mail] {
        assert_eq!(col(f, "stream_errors"), 0.0);
        // All but the requests still in flight at the end are done.
        assert!(col(f, "requests_done") >= col(f, "requests") - 1.0, "{f:?}");
        // A response takes at least the one-way trip from the server (the request itself is
        // not simulated), and on an idle hop well under a second.
        let t = col(f, "request_time_mean_s");
        assert!((0.05..1.0).contains(&t), "{t}");
    }
    // Poisson counts: 30 pages and 12 e-mails expected (standard deviations 5.5 and 3.5).
    assert!((14.0..=46.0).contains(&col(web, "requests")), "{web:?}");
    assert!((2.0..=23.0).contains(&col(mail, "requests")), "{mail:?}");
    assert_eq!(col(web, "objects"), 6.0 * col(web, "requests"));
    // Every e-mail delivered is 2 kB; a page's bytes are its objects'.
    assert_eq!(col(mail, "app_bytes"), 2000.0 * col(mail, "requests_done"));
    let per_page = col(web, "app_bytes") / col(web, "requests_done");
    assert!((1000.0 + 5.0 * 500.0..=1000.0 + 5.0 * 2000.0).contains(&per_page));
}

#[test]
fn web_pages_survive_a_lossy_path_byte_for_byte() {
    // Pages over a wire losing 5 % of the data packets: short last segments of each object
    // get lost and retransmitted too; every byte still arrives once and in order.
    for sack in [false, true] {
        let toml = format!(
            "duration_s = 120.0\nseed = 4\n[topology]\nkind = \"chain\"\ncount = 2\n\
             spacing_m = 1000000.0\n[[wired]]\na = 0\nb = 1\nrate_bps = 2e6\ndelay_s = 0.05\n\
             loss = 0.05\nreverse_loss = 0.0\n\
             [[flows]]\nsrc = 0\ndst = 1\ntransport = \"tcp\"\ncc = \"newreno\"\nsack = {sack}\n\
             [flows.tcp]\nverify_stream = true\n[flows.app]\nkind = \"http\"\npage_interval_s = 1.0\n"
        );
        let r = run(&toml);
        let f = &r.flows[0];
        assert_eq!(col(f, "stream_errors"), 0.0);
        assert!(col(f, "retransmits") > 10.0, "{f:?}");
        assert!(col(f, "requests") > 80.0);
        assert!(col(f, "requests_done") >= col(f, "requests") - 2.0, "{f:?}");
    }
}
