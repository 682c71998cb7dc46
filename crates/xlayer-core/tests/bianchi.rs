//! Validation against Bianchi's model of 802.11 DCF saturation throughput.
//!
//! G. Bianchi, "Performance analysis of the IEEE 802.11 distributed coordination function",
//! IEEE JSAC 18(3), 2000. The model is computed here from its equations (7), (8)/(9) and (13)
//! with the same timing constants the simulator uses (802.11b, 11 Mbit/s data, 1 Mbit/s control
//! frames, long preamble), and compared with simulated saturation throughput of n stations in
//! range of one receiver. Tolerance: 5 % for every n (shared/VALIDATION.md).
//!
//! No capture. Bianchi's model loses every frame of a collision. Real DSSS receivers often
//! decode one of two equally strong 1 Mbit/s frames (DBPSK needs about −3 dB SINR), and a near
//! station wins over a far one, so the scenario puts the stations on a circle around the
//! receiver and uses the threshold error model at 10 dB (ns-2's capture threshold): every overlap
//! destroys both frames, as the model assumes.
//!
//! Collision time. After a collision the bystanders defer EIFS = SIFS + ACK + DIFS (802.11-2016
//! §10.3.2.3.7) from the end of the collided frames, so the model's Tc is `H + P + EIFS` for basic
//! access and `RTS + EIFS` with RTS/CTS (the CTS and ACK have the same 14-byte length).

use xlayer_core::Simulation;

const SLOT: f64 = 20e-6;
const SIFS: f64 = 10e-6;
const DIFS: f64 = SIFS + 2.0 * SLOT;
const PLCP: f64 = 192e-6;
const PAYLOAD_BITS: f64 = 8000.0;

/// Airtime of a DSSS frame of `bytes` at `mbps` (PSDU time rounded up to microseconds).
fn airtime(bytes: f64, mbps: f64) -> f64 {
    PLCP + (bytes * 8.0 / mbps).ceil() * 1e-6
}

/// Bianchi's fixed point: τ as a function of the conditional collision probability p.
fn tau_of_p(p: f64, w: f64, m: i32) -> f64 {
    2.0 * (1.0 - 2.0 * p) / ((1.0 - 2.0 * p) * (w + 1.0) + p * w * (1.0 - (2.0 * p).powi(m)))
}

/// Saturation throughput (payload bit/s) of `n` stations.
fn bianchi(n: u32, rts: bool) -> f64 {
    let (w, m) = (32.0, 5); // CWmin + 1 = 32, CWmax + 1 = 2^5 * 32
    let nf = n as f64;
    // Solve τ = tau_of_p(1 - (1 - τ)^(n-1)) by bisection on g(τ) = τ - tau_of_p(p(τ)).
    let (mut lo, mut hi): (f64, f64) = (1e-9, 1.0 - 1e-9);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        let p = 1.0 - (1.0 - mid).powf(nf - 1.0);
        if mid - tau_of_p(p, w, m) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let tau = 0.5 * (lo + hi);
    let p_tr = 1.0 - (1.0 - tau).powf(nf);
    let p_s = nf * tau * (1.0 - tau).powf(nf - 1.0) / p_tr;
    // 1000-byte payload + UDP 8 + IPv4 20 + LLC/SNAP 8 + MAC header 24 + FCS 4.
    let data = airtime(1064.0, 11.0);
    let ack = airtime(14.0, 1.0);
    let eifs = SIFS + ack + DIFS;
    let (ts, tc) = if rts {
        let (rts_t, cts_t) = (airtime(20.0, 1.0), airtime(14.0, 1.0));
        (
            rts_t + SIFS + cts_t + SIFS + data + SIFS + ack + DIFS,
            rts_t + eifs,
        )
    } else {
        (data + SIFS + ack + DIFS, data + eifs)
    };
    p_s * p_tr * PAYLOAD_BITS / ((1.0 - p_tr) * SLOT + p_tr * p_s * ts + p_tr * (1.0 - p_s) * tc)
}

/// `n` stations evenly on a circle of `radius` metres around the receiver at the origin, so every
/// frame reaches it with the same power: no station wins a collision by capture, as the model
/// assumes.
fn circle(n: u32, radius: f64) -> String {
    (0..n)
        .map(|i| {
            let a = 2.0 * std::f64::consts::PI * i as f64 / n as f64;
            format!(", [{:.6}, {:.6}]", radius * a.cos(), radius * a.sin())
        })
        .collect()
}

fn scenario(n: u32, rts: bool, seconds: f64) -> String {
    let mut s = format!(
        "name = \"bianchi\"\nseed = 1\nduration_s = {}\nwarmup_s = 1.0\n\
         [radio]\nstandard = \"802.11b\"\ndata_rate_mbps = 11.0\nbasic_rate_mbps = 1.0\npreamble = \"long\"\n\
         propagation = \"two_ray_ground\"\ntx_range_m = 250.0\ncs_range_m = 550.0\nrts_cts = {rts}\n\
         error_model = \"threshold\"\nsinr_threshold_db = 10.0\n\
         [topology]\nkind = \"explicit\"\npositions = [[0.0, 0.0]{}]\n",
        seconds + 1.0,
        circle(n, 10.0)
    );
    for i in 1..=n {
        s += &format!(
            "[[flows]]\nsrc = {i}\ndst = 0\nrate_bps = \"saturate\"\npayload_bytes = 1000\n"
        );
    }
    s
}

fn simulated(n: u32, rts: bool, seconds: f64) -> f64 {
    let mut sim = Simulation::from_toml(&scenario(n, rts, seconds)).expect("valid scenario");
    sim.run();
    sim.results().summary_f64("aggregate_throughput_bps")
}

fn check(rts: bool) {
    let mut report = String::new();
    let mut worst: f64 = 0.0;
    for n in [1, 5, 10, 20, 50] {
        let model = bianchi(n, rts);
        let sim = simulated(n, rts, 20.0);
        let err = (sim - model).abs() / model;
        worst = worst.max(err);
        report += &format!(
            "n={n:>2} model {:.3} Mbit/s  simulated {:.3} Mbit/s  error {:.1}%\n",
            model / 1e6,
            sim / 1e6,
            err * 100.0
        );
    }
    eprintln!("{report}");
    assert!(worst < 0.05, "Bianchi mismatch above 5%:\n{report}");
}

#[test]
fn dcf_basic_access_saturation_matches_bianchi() {
    check(false);
}

#[test]
fn dcf_rts_cts_saturation_matches_bianchi() {
    check(true);
}

#[test]
fn the_model_itself_matches_bianchis_published_shape() {
    // Throughput of basic access falls as n grows past a few stations; RTS/CTS is flatter.
    let basic: Vec<f64> = [5, 10, 20, 50].iter().map(|&n| bianchi(n, false)).collect();
    assert!(basic.windows(2).all(|w| w[0] > w[1]), "{basic:?}");
    let rts_drop = bianchi(5, true) / bianchi(50, true);
    let basic_drop = bianchi(5, false) / bianchi(50, false);
    assert!(rts_drop < basic_drop);
}
