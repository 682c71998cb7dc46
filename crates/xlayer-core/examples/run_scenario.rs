//! Runs a scenario file with the Rust core alone and prints the summary — for profiling the
//! engine without Python (`cargo run --release --example run_scenario -- scenarios/mesh-7x7.toml`).

use xlayer_core::{Simulation, Value};

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "scenarios/mesh-7x7.toml".into());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let t0 = std::time::Instant::now();
    let mut sim = Simulation::from_toml(&text).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let setup = t0.elapsed();
    sim.run();
    let r = sim.results();
    for (k, v) in &r.summary {
        match v {
            Value::Float(f) => println!("{k:>26} {f:.6}"),
            Value::Int(i) => println!("{k:>26} {i}"),
            Value::Str(s) => println!("{k:>26} {s}"),
        }
    }
    for (i, f) in r.flows.iter().enumerate() {
        let cell = |k: &str| {
            f.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| format!("{v:?}"))
                .unwrap_or_default()
        };
        println!(
            "flow {i}: {} hops {} {} bit/s, completion {}, retransmits {}, timeouts {}",
            cell("transport"),
            cell("hops"),
            r.flow_f64(i, "throughput_bps"),
            cell("completion_s"),
            cell("retransmits"),
            cell("timeouts")
        );
    }
    // XLAYER_ROWS=1 prints every row of the flows and nodes tables too.
    if std::env::var_os("XLAYER_ROWS").is_some() {
        for (i, f) in r.flows.iter().enumerate() {
            println!("flow {i} row: {f:?}");
        }
        for (i, n) in r.nodes.iter().enumerate() {
            println!("node {i} row: {n:?}");
        }
    }
    for key in [
        "drops_dest_queue",
        "drops_dest_queue_transit",
        "drops_queue",
        "drops_retry_limit",
    ] {
        let total = r.node_total(key);
        println!("{key:>26} {total}");
    }
    let wall = r.summary_f64("wall_s");
    println!(
        "{:>26} {:.0}",
        "events_per_s",
        r.summary_f64("events") / wall
    );
    println!("{:>26} {:.2}", "setup_ms", setup.as_secs_f64() * 1e3);
    println!(
        "{:>26} {:.1}",
        "sim_s_per_wall_s",
        r.summary_f64("sim_time_s") / wall
    );
}
