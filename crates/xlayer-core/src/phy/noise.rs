//! Injected noise: sources of additive noise power that switch on and off (the CLAP slides'
//! "ORBIT-like time-varying links": on-off additive Gaussian noise, 9.3e-8 W in 1 s pulses).
//!
//! A [`NoiseSource`] reaches a set of nodes, each with its own power at the antenna (the same
//! power at every listed node, or the power a noise transmitter at a position delivers through
//! the scenario's propagation), and follows an on-off [`NoiseProcess`]: fixed pulses, exponential
//! on and off periods, or an explicit schedule. While on, its power adds to the thermal noise in
//! the SINR of every reception at those nodes ([`super::Phy::set_injected_noise`]). Noise is
//! Gaussian and white over the channel, so it enters the SINR as noise power does, and the
//! error models apply unchanged.
//!
//! Carrier sense: by default injected noise does not count in the energy that carrier sense
//! compares with its threshold — it lowers the SINR only, as the additive noise of the slides'
//! ns-2 set-up (ns-2's carrier sense compares each arriving frame's power with `CSThresh`, and
//! noise added to the error computation never reaches it). A real noise generator is energy on
//! the air, which an energy-detecting CCA sees: `carrier_sense = true` counts it too (then a
//! loud source silences the nodes it reaches instead of corrupting their frames).

use rand_distr::{Distribution, Exp1};

use crate::sim::rng::Stream;
use crate::sim::SimTime;

/// Random stream of each noise source's exponential periods (one per source, by its index).
pub const STREAM: &str = "phy.noise";

/// When a source is on.
#[derive(Debug, Clone)]
pub enum NoiseProcess {
    /// On for `on`, off for `off`, repeating from the first switch-on.
    Pulses { on: SimTime, off: SimTime },
    /// On and off periods drawn from exponential distributions of these means.
    Exponential { mean_on: SimTime, mean_off: SimTime },
    /// On over each `(start, end)` interval, sorted and disjoint.
    Schedule(Vec<(SimTime, SimTime)>),
}

/// One noise source and where it stands.
#[derive(Debug, Clone)]
pub struct NoiseSource {
    /// The nodes it reaches and the power each receives while it is on (mW).
    pub targets: Vec<(u32, f64)>,
    /// Whether carrier sense counts its energy.
    pub carrier_sense: bool,
    pub process: NoiseProcess,
    /// When the first switch-on happens (pulses and exponential processes).
    pub start: SimTime,
    pub on: bool,
    /// Next schedule interval (schedule processes).
    next_interval: usize,
    rng: Stream,
}

impl NoiseSource {
    pub fn new(
        targets: Vec<(u32, f64)>,
        carrier_sense: bool,
        process: NoiseProcess,
        start: SimTime,
        rng: Stream,
    ) -> NoiseSource {
        NoiseSource {
            targets,
            carrier_sense,
            process,
            start,
            on: false,
            next_interval: 0,
            rng,
        }
    }

    /// When the source first switches on (`None`: never).
    pub fn first_switch(&self) -> Option<SimTime> {
        match &self.process {
            NoiseProcess::Schedule(s) => s.first().map(|&(a, _)| a),
            _ => Some(self.start),
        }
    }

    /// The source switches (on if it was off, off if it was on) at `now`; returns when it
    /// switches next (`None`: it stays as it is now).
    pub fn switch(&mut self, now: SimTime) -> Option<SimTime> {
        self.on = !self.on;
        let exp = |rng: &mut Stream, mean: SimTime| {
            let e: f64 = Exp1.sample(rng);
            // At least 1 ns, so that a draw of zero still moves time on.
            SimTime(((e * mean.ns() as f64).round() as u64).max(1))
        };
        match &self.process {
            NoiseProcess::Pulses { on, off } => Some(now + if self.on { *on } else { *off }),
            NoiseProcess::Exponential { mean_on, mean_off } => {
                let mean = if self.on { *mean_on } else { *mean_off };
                Some(now + exp(&mut self.rng, mean))
            }
            NoiseProcess::Schedule(s) => {
                if self.on {
                    Some(s[self.next_interval].1)
                } else {
                    self.next_interval += 1;
                    s.get(self.next_interval).map(|&(a, _)| a)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(process: NoiseProcess) -> NoiseSource {
        NoiseSource::new(
            vec![(0, 1e-4)],
            false,
            process,
            SimTime::ZERO,
            crate::sim::rng::stream(1, 0, STREAM),
        )
    }

    #[test]
    fn pulses_alternate_on_and_off_from_the_start() {
        let s = SimTime::from_secs_f64;
        let mut n = source(NoiseProcess::Pulses {
            on: s(1.0),
            off: s(2.0),
        });
        assert_eq!(n.first_switch(), Some(SimTime::ZERO));
        let mut t = SimTime::ZERO;
        let mut seen = vec![];
        for _ in 0..4 {
            let next = n.switch(t).unwrap();
            seen.push((n.on, (next - t).as_secs_f64()));
            t = next;
        }
        assert_eq!(seen, [(true, 1.0), (false, 2.0), (true, 1.0), (false, 2.0)]);
    }

    #[test]
    fn exponential_periods_have_the_given_means() {
        let s = SimTime::from_secs_f64;
        let mut n = source(NoiseProcess::Exponential {
            mean_on: s(1.0),
            mean_off: s(3.0),
        });
        let (mut on, mut off, mut t) = (0.0, 0.0, SimTime::ZERO);
        let k = 20_000;
        for _ in 0..2 * k {
            let next = n.switch(t).unwrap();
            let d = (next - t).as_secs_f64();
            if n.on {
                on += d
            } else {
                off += d
            }
            t = next;
        }
        // Means of 20,000 exponential draws: standard error 0.7 % of the mean.
        assert!((on / k as f64 - 1.0).abs() < 0.03, "{}", on / k as f64);
        assert!((off / k as f64 - 3.0).abs() < 0.09, "{}", off / k as f64);
    }

    #[test]
    fn a_schedule_is_followed_then_stays_off() {
        let s = SimTime::from_secs_f64;
        let mut n = source(NoiseProcess::Schedule(vec![
            (s(1.0), s(2.0)),
            (s(5.0), s(5.5)),
        ]));
        assert_eq!(n.first_switch(), Some(s(1.0)));
        assert_eq!(n.switch(s(1.0)), Some(s(2.0)));
        assert!(n.on);
        assert_eq!(n.switch(s(2.0)), Some(s(5.0)));
        assert!(!n.on);
        assert_eq!(n.switch(s(5.0)), Some(s(5.5)));
        assert_eq!(n.switch(s(5.5)), None);
        assert!(!n.on);
    }
}
