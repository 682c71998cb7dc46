//! Flows arriving over time (`[flows_random.arrivals]`, `[flows_random.durations]`): the
//! arrival and duration laws a run's flows follow, checked against the laws' own moments, and
//! the flows that arrive after the sources stop left out.

use xlayer_core::Simulation;

fn build(extra: &str) -> Simulation {
    let toml = format!(
        "duration_s = 200.0\n[topology]\nkind = \"chain\"\ncount = 4\nspacing_m = 100.0\n\
         [flows_random]\ncount = 10000\nrate_bps = 10000.0\n{extra}"
    );
    Simulation::from_toml(&toml).unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

fn starts_and_lengths(s: &Simulation) -> (Vec<f64>, Vec<f64>) {
    let end = s.world.end.as_secs_f64();
    s.world
        .flows
        .iter()
        .map(|f| {
            let (a, b) = (f.start.as_secs_f64(), f.stop.as_secs_f64().min(end));
            (a, b - a)
        })
        .unzip()
}

#[test]
fn poisson_arrivals_come_at_the_rate_asked_until_the_sources_stop() {
    // Mean 0.5 s over 200 s: about 400 flows (Poisson count: standard deviation 20).
    let s = build("[flows_random.arrivals]\nprocess = \"poisson\"\nmean_s = 0.5\n");
    let (starts, _) = starts_and_lengths(&s);
    assert!(
        (340..=460).contains(&starts.len()),
        "{} flows",
        starts.len()
    );
    assert!(starts.windows(2).all(|w| w[0] <= w[1]) && *starts.last().unwrap() < 200.0);
    let gaps: Vec<f64> = std::iter::once(starts[0])
        .chain(starts.windows(2).map(|w| w[1] - w[0]))
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((mean / 0.5 - 1.0).abs() < 0.1, "mean gap {mean}");
    // Sources stopping at 50 s: arrivals end there.
    let s = build("stop_s = 50.0\n[flows_random.arrivals]\nprocess = \"poisson\"\nmean_s = 0.5\n");
    let (starts, lengths) = starts_and_lengths(&s);
    assert!((70..=130).contains(&starts.len()), "{} flows", starts.len());
    assert!(starts
        .iter()
        .zip(&lengths)
        .all(|(a, l)| a + l <= 50.0 + 1e-9));
}

#[test]
fn durations_follow_their_law_and_cap() {
    // Log-normal of mean 2 s and σ 1: median 2 e^(-1/2) = 1.213 s; capped at 10 s.
    let s = build(
        "[flows_random.arrivals]\nprocess = \"weibull\"\nmean_s = 0.1\nshape = 0.7\n\
         [flows_random.durations]\ndistribution = \"lognormal\"\nmean_s = 2.0\nsigma = 1.0\nmax_s = 10.0\n",
    );
    let (_, mut lengths) = starts_and_lengths(&s);
    // Durations running past the end of the run are cut there; look at flows that start early.
    lengths.truncate(1500);
    lengths.sort_by(f64::total_cmp);
    let median = lengths[lengths.len() / 2];
    assert!(
        (median / (2.0 * (-0.5f64).exp()) - 1.0).abs() < 0.08,
        "median {median}"
    );
    assert!(*lengths.last().unwrap() <= 10.0 + 1e-9);
    assert!(
        lengths.iter().filter(|&&l| l > 9.999).count() > 0,
        "the cap is reached"
    );
}

#[test]
fn arrivals_do_not_change_the_pairs_drawn() {
    let plain = build("");
    let timed = build("[flows_random.arrivals]\nprocess = \"poisson\"\nmean_s = 0.5\n");
    let pairs = |s: &Simulation| -> Vec<(u32, u32)> {
        s.world.flows.iter().map(|f| (f.src, f.dst)).collect()
    };
    let (a, b) = (pairs(&plain), pairs(&timed));
    assert_eq!(a[..b.len()], b[..]);
    // Without arrivals every flow starts at start_s, as before.
    assert!(plain.world.flows.iter().all(|f| f.start.ns() == 0));
}

#[test]
fn bad_arrival_and_duration_tables_name_their_field() {
    for (extra, field) in [
        (
            "[flows_random.arrivals]\nprocess = \"weibull\"\nmean_s = 1.0\n",
            "flows_random.arrivals.shape",
        ),
        (
            "[flows_random.arrivals]\nprocess = \"poisson\"\nmean_s = 1.0\nshape = 2.0\n",
            "flows_random.arrivals.shape",
        ),
        (
            "[flows_random.arrivals]\nprocess = \"bursty\"\nmean_s = 1.0\n",
            "flows_random.arrivals.process",
        ),
        (
            "[flows_random.arrivals]\nprocess = \"poisson\"\nmean_s = -1.0\n",
            "flows_random.arrivals.mean_s",
        ),
        (
            "[flows_random.durations]\ndistribution = \"pareto\"\nmean_s = 1.0\nalpha = 1.0\n",
            "flows_random.durations.alpha",
        ),
        (
            "[flows_random.durations]\ndistribution = \"lognormal\"\nmean_s = 1.0\n",
            "flows_random.durations.sigma",
        ),
        (
            "[flows_random.durations]\ndistribution = \"exponential\"\nmean_s = 1.0\nsigma = 1.0\n",
            "flows_random.durations.sigma",
        ),
        (
            "[flows_random.durations]\ndistribution = \"fixed\"\nmean_s = 1.0\nmax_s = 0.0\n",
            "flows_random.durations.max_s",
        ),
    ] {
        let toml =
            format!("[topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 100.0\n[flows_random]\ncount = 3\n{extra}");
        let err = Simulation::from_toml(&toml)
            .err()
            .unwrap_or_else(|| panic!("accepted: {extra}"));
        assert!(err.to_string().contains(field), "{extra}: {err}");
    }
}
