//! What ETX changes in DPCLO's Fig. 4 (`scenarios/dpclo-fig4.toml`; issue 20 item 3, README
//! Validation "DPCLO Fig. 4"): per loss draw (seed), with ETX and without, the drawn loss of each
//! link and its true ETX `1/((1-p_f)(1-p_r))`, the flows' throughput, A's DSDV next hops towards
//! E sampled every second after the warm-up (through D only, B only, both, none), D's route to
//! F (missing, or through E), the mean ETX estimates of both directions of each link, and per
//! node MAC frames, retries, retry-limit drops, packets forwarded and frames lost to the link
//! loss, with DPCLO's MAC level use; and, over every ordered pair of nodes sampled every second,
//! the pair-seconds without a route (of which to a node in range) and those whose next hops loop.
//!
//! `cargo run --release --example dpclo_fig4_paths -- scenarios/dpclo-fig4.toml 1,2,3 [220] ["k_max = 1"]`
//!
//! The optional last argument is added to `[stack.dpclo]` in both variants (`;` separates
//! lines). The topology must be Fig. 2's six nodes (A..F = 0..5).

use xlayer_core::Simulation;

const NAMES: [&str; 6] = ["A", "B", "C", "D", "E", "F"];
const LINKS: [(u32, u32); 6] = [(0, 1), (0, 3), (1, 2), (2, 4), (3, 4), (3, 5)];
const WARMUP_S: f64 = 20.0;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: dpclo_fig4_paths SCENARIO SEEDS [DURATION_S] [EXTRA]");
        std::process::exit(2);
    }
    let seeds: Vec<u64> = args[2]
        .split(',')
        .map(|s| s.parse().expect("seeds: comma-separated integers"))
        .collect();
    let dur: f64 = args
        .get(3)
        .map(|s| s.parse().expect("duration in seconds"))
        .unwrap_or(220.0);
    let extra = args.get(4).cloned().unwrap_or_default().replace(';', "\n");
    let base = std::fs::read_to_string(&args[1]).expect("scenario file");
    for seed in seeds {
        for etx in [true, false] {
            let mut text = base
                .replace("seed = 1\n", &format!("seed = {seed}\n"))
                .replace("duration_s = 220.0", &format!("duration_s = {dur}"));
            if !etx {
                text = text.replace("beta = 0.9", "beta = 0.9\netx = false");
            }
            text = text.replace("beta = 0.9", &format!("beta = 0.9\n{extra}"));
            let mut sim = Simulation::from_toml(&text).unwrap_or_else(|e| panic!("{e}"));
            if etx {
                print_losses(seed, &sim);
            }
            run_and_print(&mut sim, etx, dur);
        }
    }
}

fn print_losses(seed: u64, sim: &Simulation) {
    let w = &sim.world;
    let slot_us = w.nodes[0]
        .mac
        .zmac()
        .map_or(f64::NAN, |z| z.p.slot.ns() as f64 / 1e3);
    print!("seed {seed} (ZMAC slot {slot_us:.0} us) loss:");
    if let Some(ll) = w.link_loss.as_ref() {
        for (i, j) in LINKS {
            let (p, q) = (ll.get(i, j), ll.get(j, i));
            print!(
                " {}{}={p:.2}/{q:.2} (ETX {:.2})",
                NAMES[i as usize],
                NAMES[j as usize],
                1.0 / ((1.0 - p) * (1.0 - q))
            );
        }
    }
    println!();
}

fn run_and_print(sim: &mut Simulation, etx: bool, dur: f64) {
    let mut est = [(0.0f64, 0u32); 12];
    let mut a_via = [0u32; 4]; // D only, B only, both, none
    let (mut d_no_route_f, mut d_f_via_e) = (0, 0);
    // Pair-seconds: no route, no route to a node in range, next hops that loop.
    let (mut routeless, mut routeless_nb, mut looping) = (0u32, 0u32, 0u32);
    let mut t = WARMUP_S;
    while t < dur {
        t += 1.0;
        sim.run_until(t);
        let Some(proto) = sim.world.routing.proto() else {
            return;
        };
        for (k, &(i, j)) in LINKS.iter().enumerate() {
            for (d, (x, y)) in [(i, j), (j, i)].into_iter().enumerate() {
                if let Some(e) = proto.nodes[x as usize].etx.etx(y) {
                    est[2 * k + d].0 += e;
                    est[2 * k + d].1 += 1;
                }
            }
        }
        let (Some(da), Some(dd)) = (proto.nodes[0].dsdv.as_ref(), proto.nodes[3].dsdv.as_ref())
        else {
            return;
        };
        let hops = da.next_hops(4);
        a_via[match hops {
            [3] => 0,
            [1] => 1,
            [_, _] => 2,
            _ => 3,
        }] += 1;
        match dd.next_hop(5) {
            None => d_no_route_f += 1,
            Some(4) => d_f_via_e += 1,
            Some(_) => {}
        }
        let n = proto.nodes.len();
        let hop = |u: usize, d: u32| proto.nodes[u].dsdv.as_ref().and_then(|r| r.next_hop(d));
        for u in 0..n {
            for d in 0..n as u32 {
                if u as u32 == d {
                    continue;
                }
                let (mut x, mut steps) = (u, 0);
                while x as u32 != d && steps <= n {
                    match hop(x, d) {
                        Some(v) => x = v as usize,
                        None => break,
                    }
                    steps += 1;
                }
                if hop(u, d).is_none() {
                    routeless += 1;
                    if sim.world.neighbors[u].contains(&d) {
                        routeless_nb += 1;
                    }
                } else if steps > n {
                    looping += 1;
                }
            }
        }
    }
    let r = sim.results();
    let rate = |f: usize| {
        if r.flows.len() > f {
            r.flow_f64(f, "throughput_bps") / 1e3
        } else {
            0.0
        }
    };
    let (f0, f1) = (rate(0), rate(1));
    print!(
        "  {:6} A>E {f0:5.1} D>F {f1:5.1} agg {:5.1} kbit/s | A's next hops to E: D {} B {} both {} \
         none {}; D to F: no route {} via E {} | mean ETX estimates:",
        if etx { "ETX" } else { "no-ETX" },
        f0 + f1,
        a_via[0],
        a_via[1],
        a_via[2],
        a_via[3],
        d_no_route_f,
        d_f_via_e
    );
    for (k, (i, j)) in LINKS.iter().enumerate() {
        let m = |e: (f64, u32)| if e.1 > 0 { e.0 / e.1 as f64 } else { f64::NAN };
        print!(
            " {}{} {:.2}/{:.2}",
            NAMES[*i as usize],
            NAMES[*j as usize],
            m(est[2 * k]),
            m(est[2 * k + 1])
        );
    }
    println!();
    println!(
        "     pair-seconds without a route {routeless} (to a node in range {routeless_nb}), looping {looping}"
    );
    print!("     frames/retries/retry-limit drops/forwarded/link-lost:");
    for (i, n) in sim.world.nodes.iter().enumerate() {
        let s = n.mac.stats;
        print!(
            " {}:{}/{}/{}/{}/{}",
            NAMES[i],
            s.data_tx,
            s.retries,
            s.drops_retry_limit,
            n.net.forwarded,
            n.net.rx_link_lost
        );
    }
    if let xlayer_core::xl::Scheduler::Dpclo(d) = &sim.world.scheduler {
        print!(" | MAC levels used {:?}, holds {}", d.level_use, d.holds);
    }
    println!();
}
