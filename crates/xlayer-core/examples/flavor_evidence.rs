//! Prints the passive flavor detector's evidence, for tuning its thresholds
//! (`transport::flavor`): per connection of each capture, or for the one flow of the
//! validation path of `validation/flavor_accuracy.py` simulated here — the decision, the
//! windows (segments) before and after each fast recovery, the partial-ACK evidence, the
//! timeouts, the ProbeRTT dips and the handshake's round trips.
//!
//! ```sh
//! cargo run --release --example flavor_evidence -- capture A.pcap B.pcap ...
//! cargo run --release --example flavor_evidence -- sim westwood true 0.01 0.1 1 60
//! ```

use xlayer_core::transport::flavor::Detector;
use xlayer_core::transport::flavor_capture::detect_flavors;
use xlayer_core::Simulation;

fn show(name: &str, d: &Detector, key: u64, flavor: &str, sack: bool, conf: f64) {
    let Some((ratios, prompt, late)) = d.evidence(key) else {
        return;
    };
    let (dips, rs, rr) = d.dips_and_round_trips(key).unwrap_or((&[], None, None));
    let dips: Vec<String> = dips
        .iter()
        .map(|t| format!("{:.2}", t.as_secs_f64()))
        .collect();
    let dips = format!("{}{:?}", dips.len(), dips);
    let det = d.detection(key).expect("seen");
    let r: Vec<String> = ratios
        .iter()
        .map(|(b, a)| format!("{:.0}/{:.0}={:.2}", a, b, a / b))
        .collect();
    println!(
        "{name}\t{flavor}\tsack={sack}\tconf={conf:.2}\tdips={dips}\tprompt={prompt}\tlate={late}\tto={}\trs={:?}\trr={:?}\t[{}]",
        det.timeouts,
        rs.map(|t| (t.as_secs_f64() * 1e3).round()),
        rr.map(|t| (t.as_secs_f64() * 1e3).round()),
        r.join(" ")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("capture") => {
            for path in &args[1..] {
                let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
                let caps = match detect_flavors(&bytes) {
                    Ok(c) => c,
                    Err(e) => {
                        println!("{path}\terror: {e}");
                        continue;
                    }
                };
                // Run again keeping the detector, for its evidence.
                let d = xlayer_core::transport::flavor_capture::detector_of(&bytes)
                    .expect("read once already");
                for (i, c) in caps.connections.iter().enumerate() {
                    if c.data_bytes < 100_000 {
                        continue;
                    }
                    let name = std::path::Path::new(path)
                        .file_name()
                        .map_or(path.clone(), |n| n.to_string_lossy().into_owned());
                    show(
                        &name,
                        &d,
                        i as u64,
                        c.detection.flavor.name(),
                        c.detection.sack,
                        c.detection.confidence,
                    );
                }
            }
        }
        Some("sim") => {
            let [cc, sack, loss, rtt, seed, dur] = &args[1..7] else {
                panic!("sim CC SACK LOSS RTT SEED DURATION");
            };
            let rtt: f64 = rtt.parse().expect("rtt");
            let json = format!(
                r#"{{"name":"flavor-accuracy","seed":{seed},"duration_s":{dur},
                "topology":{{"kind":"chain","count":3,"spacing_m":1e6}},
                "wired":[{{"a":0,"b":1,"rate_bps":100e6,"delay_s":{q},"queue_packets":1000}},
                         {{"a":1,"b":2,"rate_bps":2e6,"delay_s":{q},"queue_packets":100,"loss":{loss},"reverse_loss":0.0}}],
                "flows":[{{"src":0,"dst":2,"transport":"tcp","cc":"{cc}","sack":{sack},"payload_bytes":1000}}],
                "stack":{{"flavor_link":{{"nodes":[1],"optimize":false}}}}}}"#,
                q = rtt / 4.0
            );
            let mut sim = Simulation::from_json(&json).expect("scenario");
            // Optional FROM_S TO_S: print the window estimates between them.
            let window: Option<(f64, f64)> = args
                .get(7)
                .zip(args.get(8))
                .map(|(a, b)| (a.parse().expect("from"), b.parse().expect("to")));
            if window.is_some() {
                if let Some(m) = sim.world.nodes[1].flavor.as_deref_mut() {
                    m.detector.trace = true;
                }
            }
            sim.run();
            if let (Some((from, to)), Some(m)) = (window, sim.world.nodes[1].flavor.as_deref()) {
                for (t, w) in m.detector.window_trace(0) {
                    let t = t.as_secs_f64();
                    if t >= from && t <= to {
                        println!("{t:.4} {w}");
                    }
                }
            }
            let m = sim.world.nodes[1]
                .flavor
                .as_deref()
                .expect("detector at node 1");
            let det = m.detector.detection(0).expect("flow 0 seen");
            show(
                &format!("sim {cc} sack={sack} loss={loss} rtt={rtt} seed={seed}"),
                &m.detector,
                0,
                det.flavor.name(),
                det.sack,
                det.confidence,
            );
        }
        Some("trace") => {
            // trace FILE FROM_S TO_S: the window estimates of the capture's first bulk connection.
            let bytes = std::fs::read(&args[1]).expect("capture");
            let (from, to): (f64, f64) = (args[2].parse().unwrap(), args[3].parse().unwrap());
            let caps = detect_flavors(&bytes).expect("capture reads");
            let key = caps
                .connections
                .iter()
                .position(|c| c.data_bytes > 100_000)
                .unwrap_or(0);
            let d = xlayer_core::transport::flavor_capture::detector_of(&bytes).expect("reads");
            for (t, w) in d.window_trace(key as u64) {
                let t = t.as_secs_f64();
                if t >= from && t <= to {
                    println!("{t:.4} {w}");
                }
            }
        }
        _ => {
            eprintln!("usage: flavor_evidence capture FILE... | sim CC SACK LOSS RTT SEED DURATION")
        }
    }
}
