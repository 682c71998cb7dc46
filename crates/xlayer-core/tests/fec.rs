//! Per-flow FEC (`flows[].code_rate`, `mac.flow_code_rate.<flow>`; the flavor-aware link
//! layer's convolutional codes of rate 1/3, 1/2, 2/3 and 1 over 802.11a BPSK), checked two ways
//! against computations that do not go through the simulator's error model:
//!
//! - the decoded bit error rate the model takes from each code's distance spectrum (the union
//!   bound, hard decision) against a real hard-decision Viterbi decoder run in this test on
//!   random data over a binary symmetric channel;
//! - the packet error rate a link measures over Rayleigh fading against the integral of the
//!   model's AWGN packet error rate over the exponential distribution of the received power,
//!   with the mean SNR from Friis' free-space formula.

mod common;
use common::{col, run};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlayer_core::phy::error_model::{chunk_ln_success, Modulation, OfdmMode};
use xlayer_core::phy::fec::{CodeRate, ConvCode};
use xlayer_core::phy::radio::{Preamble, Standard};
use xlayer_core::phy::PhyTiming;

/// Encodes `bits` (followed by K − 1 zeros, so the trellis ends in state 0) with `code`,
/// returning each generator's output per step, `None` where the puncturing steals it.
fn encode(code: &ConvCode, bits: &[u8]) -> Vec<Vec<Option<u8>>> {
    let k = code.constraint_length;
    let period = code.period();
    let mut state = 0u32;
    let mut out = Vec::with_capacity(bits.len() + k as usize);
    let tail = std::iter::repeat_n(0u8, k as usize - 1);
    for (t, b) in bits.iter().copied().chain(tail).enumerate() {
        let register = ((b as u32) << (k - 1)) | state;
        let step = code
            .generators
            .iter()
            .enumerate()
            .map(|(g, &gen)| {
                let sent = code.puncturing.is_empty() || code.puncturing[g][t % period];
                sent.then_some(((register & gen).count_ones() % 2) as u8)
            })
            .collect();
        out.push(step);
        state = register >> 1;
    }
    out
}

/// Hard-decision Viterbi decoding (Hamming branch metrics, stolen bits not counted) of a
/// terminated block; returns the `n` information bits.
fn viterbi(code: &ConvCode, received: &[Vec<Option<u8>>], n: usize) -> Vec<u8> {
    let k = code.constraint_length;
    let states = 1usize << (k - 1);
    let inf = u32::MAX / 2;
    let mut metric = vec![inf; states];
    metric[0] = 0;
    // decisions[t][s]: the input bit and previous state that reached s at step t + 1.
    let mut decisions: Vec<Vec<(u8, u16)>> = Vec::with_capacity(received.len());
    for symbols in received {
        let mut next = vec![inf; states];
        let mut choice = vec![(0u8, 0u16); states];
        for (s, &m_s) in metric.iter().enumerate() {
            if m_s >= inf {
                continue;
            }
            for b in 0..2u32 {
                let register = (b << (k - 1)) | s as u32;
                let to = (register >> 1) as usize;
                let cost: u32 = code
                    .generators
                    .iter()
                    .zip(symbols)
                    .filter_map(|(&gen, r)| {
                        r.map(|r| ((register & gen).count_ones() % 2 != r as u32) as u32)
                    })
                    .sum();
                let m = m_s + cost;
                if m < next[to] {
                    next[to] = m;
                    choice[to] = (b as u8, s as u16);
                }
            }
        }
        metric = next;
        decisions.push(choice);
    }
    let mut bits = vec![0u8; received.len()];
    let mut s = 0usize; // terminated
    for t in (0..received.len()).rev() {
        let (b, prev) = decisions[t][s];
        bits[t] = b;
        s = prev as usize;
    }
    bits.truncate(n);
    bits
}

/// Decoded bit error rate of `code` over a binary symmetric channel of crossover `p`, measured
/// on at least `min_errors` errors or `max_bits` bits, whichever comes first.
fn simulated_ber(code: &ConvCode, p: f64, min_errors: u64, max_bits: u64, seed: u64) -> f64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let block = 2048;
    let (mut errors, mut bits) = (0u64, 0u64);
    while errors < min_errors && bits < max_bits {
        let data: Vec<u8> = (0..block).map(|_| rng.gen_range(0..2u8)).collect();
        let mut sent = encode(code, &data);
        for step in &mut sent {
            for c in step.iter_mut().flatten() {
                if rng.gen::<f64>() < p {
                    *c ^= 1;
                }
            }
        }
        let decoded = viterbi(code, &sent, block);
        errors += data.iter().zip(&decoded).filter(|(a, b)| a != b).count() as u64;
        bits += block as u64;
    }
    errors as f64 / bits as f64
}

/// The error model's decoded bit error rate for BPSK with `code` at linear SNR `snr`.
fn model_ber(code: CodeRate, snr: f64) -> f64 {
    let m = Modulation::Ofdm(OfdmMode::bpsk_coded(code));
    -chunk_ln_success(m, snr, 1.0).exp_m1()
}

/// BPSK's raw bit error rate, `½ erfc(√snr)`.
fn bpsk_raw_ber(snr: f64) -> f64 {
    0.5 * libm::erfc(snr.sqrt())
}

/// The SNR (dB) at which `ber(snr)`, falling with SNR, crosses `target`, by bisection.
fn snr_db_at(target: f64, ber: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (-10.0f64, 20.0f64);
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if ber(10f64.powf(mid / 10.0)) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn the_model_decoded_ber_follows_a_real_viterbi_decoder_within_a_db() {
    // The union bound is an upper bound, loose where errors are many: at a decoded BER of
    // 1e-4 it must lie at or above the decoder's curve and within 1.5 dB of it.
    for (code, seed) in [
        (CodeRate::OneThird, 1),
        (CodeRate::OneHalf, 2),
        (CodeRate::TwoThirds, 3),
    ] {
        let conv = ConvCode::for_rate(code).unwrap();
        // The decoder's BER on a grid of SNRs, interpolated in log BER.
        let grid: Vec<f64> = (0..=16).map(|i| -1.0 + 0.5 * i as f64).collect();
        let mut curve = vec![];
        for (i, &db) in grid.iter().enumerate() {
            let p = bpsk_raw_ber(10f64.powf(db / 10.0));
            let ber = simulated_ber(&conv, p, 200, 2_000_000, seed * 100 + i as u64);
            curve.push((db, ber));
            if ber < 1e-5 {
                break;
            }
        }
        let target = 1e-4;
        let w = curve
            .windows(2)
            .find(|w| w[0].1 >= target && w[1].1 < target)
            .unwrap_or_else(|| panic!("{code:?}: the decoder never crossed {target}: {curve:?}"));
        let ((d0, b0), (d1, b1)) = (w[0], w[1]);
        let b1 = b1.max(1e-7);
        let decoder_db = d0 + (d1 - d0) * (b0.ln() - target.ln()) / (b0.ln() - b1.ln());
        let model_db = snr_db_at(target, |s| model_ber(code, s));
        assert!(
            model_db >= decoder_db - 0.25 && model_db <= decoder_db + 1.5,
            "{code:?}: the model reaches BER {target} at {model_db:.2} dB, the decoder at \
             {decoder_db:.2} dB ({curve:?})"
        );
    }
    // Uncoded: the raw BPSK error rate itself.
    for db in [0.0, 4.0, 8.0] {
        let snr = 10f64.powf(db / 10.0);
        let (m, raw) = (model_ber(CodeRate::Uncoded, snr), bpsk_raw_ber(snr));
        assert!((m / raw - 1.0).abs() < 0.02, "{db} dB: {m} against {raw}");
    }
}

#[test]
fn stronger_codes_cost_airtime_as_12_r_mbit_s_bpsk_does() {
    // 802.11a BPSK carries 12 coded Mbit/s (48 subcarriers, one bit each per 4 µs symbol):
    // a 1064-byte PSDU takes ceil((16 + 8512 + 6) / (48 R)) symbols after the 20 µs preamble
    // and SIGNAL (802.11-2016 §17.3.2.3, Table 17-4).
    let t = PhyTiming::new(Standard::Dot11a, Preamble::Long);
    for code in CodeRate::PER_FLOW {
        let ndbps = (48.0 * code.value()).round() as u64;
        let symbols = (16 + 8512 + 6u64).div_ceil(ndbps);
        let f = t.frame_coded(1064, code.bpsk_ofdm_rate_mbps(), code.id());
        assert_eq!(f.total.ns(), (20 + 4 * symbols) * 1000, "{code:?}");
        assert_eq!(
            f.payload_modulation,
            Modulation::Ofdm(OfdmMode::bpsk_coded(code))
        );
    }
}

/// One 802.11a hop of `distance_m` under free-space loss at 5.4 GHz with per-packet Rayleigh
/// fading, 0 dBm, every frame decided by the error model (reception and carrier-sense
/// thresholds far below the noise), one attempt per frame, a saturating 1000-byte flow with
/// code rate `code`.
fn fading_hop(distance_m: f64, code: &str) -> String {
    format!(
        "duration_s = 20.0\nseed = 5\n\
         [radio]\nstandard = \"802.11a\"\npropagation = \"free_space\"\nfrequency_mhz = 5400.0\n\
         tx_power_dbm = 0.0\nnoise_figure_db = 7.0\nfading = \"rayleigh\"\nerror_model = \"ber\"\n\
         rx_threshold_dbm = -150.0\ncs_threshold_dbm = -150.0\n\
         [mac]\nshort_retry_limit = 1\nlong_retry_limit = 1\n\
         [topology]\nkind = \"chain\"\ncount = 2\nspacing_m = {distance_m}\n\
         [[flows]]\nsrc = 0\ndst = 1\nrate_bps = \"saturate\"\npayload_bytes = 1000\n\
         code_rate = \"{code}\"\n"
    )
}

/// Mean SNR (linear) of that hop by Friis: 0 dBm less 20 log10(4πd/λ), over the thermal noise
/// of 20 MHz with a 7 dB noise figure.
fn mean_snr(distance_m: f64) -> f64 {
    let lambda = 299_792_458.0 / 5.4e9;
    let rx_dbm = -20.0 * (4.0 * std::f64::consts::PI * distance_m / lambda).log10();
    let noise_dbm = -174.0 + 10.0 * 20e6f64.log10() + 7.0;
    10f64.powf((rx_dbm - noise_dbm) / 10.0)
}

/// The model's packet error rate over Rayleigh fading: its AWGN frame success (the BPSK 1/2
/// SIGNAL field and the coded PSDU) integrated over the exponential SNR of mean `mean`.
fn fading_per(code: CodeRate, mean: f64) -> f64 {
    let t = PhyTiming::new(Standard::Dot11a, Preamble::Long).frame_coded(
        1064,
        code.bpsk_ofdm_rate_mbps(),
        code.id(),
    );
    let ok = |snr: f64| {
        (chunk_ln_success(t.header_modulation, snr, t.header_bits)
            + chunk_ln_success(t.payload_modulation, snr, t.payload_bits))
        .exp()
    };
    // ∫ (1 − ok(u·mean)) e^{−u} du over u in [0, 40], Simpson's rule.
    let n = 20_000;
    let h = 40.0 / n as f64;
    let f = |u: f64| (1.0 - ok(u * mean)) * (-u).exp();
    let mut s = f(0.0) + f(40.0);
    for i in 1..n {
        s += if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * h);
    }
    s * h / 3.0
}

#[test]
fn packet_errors_over_rayleigh_fading_match_the_integral_of_the_awgn_model() {
    for (code, name) in [
        (CodeRate::OneThird, "1/3"),
        (CodeRate::OneHalf, "1/2"),
        (CodeRate::TwoThirds, "2/3"),
        (CodeRate::Uncoded, "1"),
    ] {
        for distance in [60.0, 120.0] {
            let r = run(&fading_hop(distance, name));
            let sent = col(&r.nodes[0], "mac_tx");
            let decoded = col(&r.nodes[1], "acks_sent");
            assert!(sent > 1000.0, "{name} at {distance} m: {sent} frames");
            let measured = 1.0 - decoded / sent;
            let expected = fading_per(code, mean_snr(distance));
            // Binomial spread of the measured rate, with a floor for rates near 0 or 1.
            let sigma = (expected * (1.0 - expected) / sent).sqrt().max(0.002);
            assert!(
                (measured - expected).abs() < 4.0 * sigma + 0.01,
                "{name} at {distance} m (mean SNR {:.1} dB): PER {measured:.4} measured, \
                 {expected:.4} from the integral",
                10.0 * mean_snr(distance).log10()
            );
        }
    }
}

#[test]
fn a_flows_code_rate_is_set_through_the_mac_tuning_layer_and_sets_its_airtime() {
    use xlayer_core::tune;
    use xlayer_core::Simulation;
    // A clean hop (no fading, 30 m): every frame arrives, so throughput follows airtime alone.
    let text = fading_hop(30.0, "1/2")
        .replace("fading = \"rayleigh\"\n", "")
        .replace("code_rate = \"1/2\"\n", "")
        .replace("duration_s = 20.0", "duration_s = 3.0");
    let mut last = 0.0;
    for code in CodeRate::PER_FLOW {
        let mut s = Simulation::from_toml(&text).unwrap();
        assert_eq!(
            tune::get(&mut s.world, 0, "mac.flow_code_rate.0").unwrap(),
            0.5,
            "before a setting: the code of 802.11a's 6 Mbit/s"
        );
        tune::set(&mut s.world, 0, "mac.flow_code_rate.0", code.value()).unwrap();
        assert_eq!(
            tune::get(&mut s.world, 0, "mac.flow_code_rate.0").unwrap(),
            code.value()
        );
        s.run();
        let r = s.results();
        let bps = r.flow_f64(0, "throughput_bps");
        assert!(bps > last * 1.1, "{code:?}: {bps} bit/s after {last}");
        last = bps;
    }
    let mut s = Simulation::from_toml(&text).unwrap();
    let e = tune::set(&mut s.world, 0, "mac.flow_code_rate.0", 0.4).unwrap_err();
    assert!(e.to_string().contains("1/3, 1/2, 2/3 and 1"), "{e}");
    let e = tune::set(&mut s.world, 0, "mac.flow_code_rate.3", 0.5).unwrap_err();
    assert!(e.to_string().contains("flow 3 does not exist"), "{e}");
    // 802.11b has no such codes.
    let b = text
        .replace("standard = \"802.11a\"", "standard = \"802.11b\"")
        .replace("frequency_mhz = 5400.0\n", "");
    let mut s = Simulation::from_toml(&b).unwrap();
    assert_eq!(
        tune::get(&mut s.world, 0, "mac.flow_code_rate.0").unwrap(),
        1.0
    );
    let e = tune::set(&mut s.world, 0, "mac.flow_code_rate.0", 0.5).unwrap_err();
    assert!(e.to_string().contains("802.11a"), "{e}");
    let Err(e) = Simulation::from_toml(&format!("{b}code_rate = \"1/2\"\n")) else {
        panic!("a code rate on an 802.11b flow is refused");
    };
    assert!(e.to_string().contains("flows[0].code_rate"), "{e}");
}
