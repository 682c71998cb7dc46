//! The ETX link-quality estimator (De Couto, Aguayo, Bicket, Morris, "A high-throughput path
//! metric for multi-hop wireless routing", MobiCom 2003; DPCLO §IV-B, eq. 6).
//!
//! Depends on `sim` only; a sans-IO state machine that the node assembly drives. Each node
//! broadcasts a probe every `probe_period` (jittered by up to ±`jitter`·period so that nodes do
//! not synchronise) carrying an increasing sequence number and, for each neighbour, how many of
//! that neighbour's probes it heard during the last `window`. For a neighbour `j`:
//!
//! - reverse delivery ratio `d_r` = probes of `j` heard here in the window / probes expected in
//!   the window (`N = window / probe_period`);
//! - forward delivery ratio `d_f` = how many of our probes `j` reported hearing / expected;
//! - at each of our probe instants, `ETX ← α·ETX + (1 − α)/(d_f·d_r)` (eq. 6), starting from the
//!   first sample; a sample with `d_f·d_r = 0` makes the link unusable (ETX infinite) until a
//!   finite sample restarts it.
//!
//! The window is counted in probes through their sequence numbers: it holds `j`'s last `N`
//! sequence numbers up to the one `j` should have reached by now (its last heard number plus
//! the longest jittered periods elapsed since). A window measured in seconds would hold 9, 10 or 11 jittered
//! probes and make a perfect link look 10 % lossy at times. Since a
//! window holds few probes, the estimate is noisy, and as `1/x` is convex it is biased upwards
//! by about `Var(d)/d²` per direction (a few percent with 10 probes per window and delivery
//! ratios of 0.8 or more; more on poorer links). A neighbour
//! appears with its first heard probe and expires when none was heard for a whole window.
//!
//! Constants not in the documents: probe period 1 s and window 10 s (De Couto et al. §3: "every
//! τ = 1 s", "w = 10 s"), jitter ±10 % of the period (same paper, to avoid synchronisation);
//! α = 0.5 (DPCLO gives no value; at one update per second it smooths over ~2 s, short next to
//! the 10 s window, so the window still sets the response time).

use std::collections::VecDeque;

use rand::Rng;

use crate::sim::rng::Stream;
use crate::sim::SimTime;

/// Random stream of each node's probe jitter.
pub const STREAM: &str = "net.etx.probe";

/// Probe header: sequence number (4 bytes) and entry count (4 bytes), over IPv4 + UDP (28).
pub const PROBE_BASE_BYTES: u32 = 28 + 8;
/// One probe entry: neighbour id (4 bytes) and probes heard (2 bytes).
pub const PROBE_ENTRY_BYTES: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EtxParams {
    pub probe_period: SimTime,
    pub window: SimTime,
    pub alpha: f64,
    /// Jitter of the probe period, as a fraction of it.
    pub jitter: f64,
}

impl Default for EtxParams {
    fn default() -> Self {
        EtxParams {
            probe_period: SimTime::from_secs_f64(1.0),
            window: SimTime::from_secs_f64(10.0),
            alpha: 0.5,
            jitter: 0.1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Neighbour {
    pub id: u32,
    /// Sequence numbers of its probes heard within the window, ascending.
    heard: VecDeque<u32>,
    /// Its last sequence number heard, and when.
    last_seq: u32,
    last_heard: SimTime,
    /// How many of our probes it reported hearing, and when we learnt it.
    reported: u32,
    reported_at: SimTime,
    /// Smoothed ETX; infinite while unusable, NaN before the first sample.
    etx: f64,
}

/// One node's estimator.
#[derive(Debug, Clone)]
pub struct Etx {
    pub params: EtxParams,
    seq: u32,
    /// Sorted by id.
    neighbours: Vec<Neighbour>,
    /// Pool of emptied arrival buffers, reused so steady state allocates nothing.
    spare: Vec<VecDeque<u32>>,
}

impl Etx {
    pub fn new(params: EtxParams) -> Etx {
        Etx {
            params,
            seq: 0,
            neighbours: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Probes in a window (at least 1).
    pub fn expected(&self) -> u32 {
        ((self.params.window.ns() as f64 / self.params.probe_period.ns() as f64).round() as u32)
            .max(1)
    }

    /// Delay from one probe to the next: the period jittered uniformly by ±jitter.
    pub fn next_probe_delay(&self, rng: &mut Stream) -> SimTime {
        let j = self.params.jitter;
        let f = if j > 0.0 {
            1.0 + rng.gen_range(-j..=j)
        } else {
            1.0
        };
        SimTime((self.params.probe_period.ns() as f64 * f).round() as u64)
    }

    /// Drops sequence numbers that fell out of the window, and neighbours silent for a window.
    fn prune(&mut self, now: SimTime) -> bool {
        let (w, n) = (self.params.window, self.expected());
        // A probe is overdue only once the longest jittered period has passed.
        let period = (self.params.probe_period.ns() as f64 * (1.0 + self.params.jitter)) as u64;
        let before = self.neighbours.len();
        let spare = &mut self.spare;
        self.neighbours.retain_mut(|nb| {
            if nb.last_heard + w <= now {
                nb.heard.clear();
                spare.push(std::mem::take(&mut nb.heard));
                return false;
            }
            let missed = ((now - nb.last_heard).ns() / period.max(1)) as u32;
            let newest = nb.last_seq.wrapping_add(missed);
            while nb
                .heard
                .front()
                .is_some_and(|&s| newest.wrapping_sub(s) >= n)
            {
                nb.heard.pop_front();
            }
            true
        });
        before != self.neighbours.len()
    }

    /// Probe `seq` from `from` arrived; `reported` is how many of our probes it says it heard
    /// (`None` if the probe carried no entry readable for us).
    pub fn on_probe(&mut self, now: SimTime, from: u32, seq: u32, reported: Option<u32>) {
        let i = match self.neighbours.binary_search_by_key(&from, |n| n.id) {
            Ok(i) => i,
            Err(i) => {
                let heard = self.spare.pop().unwrap_or_default();
                self.neighbours.insert(
                    i,
                    Neighbour {
                        id: from,
                        heard,
                        last_seq: seq,
                        last_heard: now,
                        reported: 0,
                        reported_at: now,
                        etx: f64::NAN,
                    },
                );
                i
            }
        };
        let nb = &mut self.neighbours[i];
        if nb.heard.back().is_some_and(|&s| s == seq) {
            return; // a duplicate
        }
        nb.heard.push_back(seq);
        nb.last_seq = seq;
        nb.last_heard = now;
        if let Some(r) = reported {
            nb.reported = r;
            nb.reported_at = now;
        }
    }

    /// Our probe instant: expires old arrivals and silent neighbours, updates every ETX by
    /// eq. 6, and returns the new probe's sequence number. Returns also whether a neighbour
    /// appeared, expired, or changed between usable and unusable (routing may want to react).
    pub fn on_probe_tick(&mut self, now: SimTime) -> (u32, bool) {
        let mut changed = self.prune(now);
        let expected = self.expected() as f64;
        let (alpha, w) = (self.params.alpha, self.params.window);
        for nb in &mut self.neighbours {
            let dr = (nb.heard.len() as f64 / expected).min(1.0);
            let df = if nb.reported_at + w > now {
                (nb.reported as f64 / expected).min(1.0)
            } else {
                0.0
            };
            let sample = if df * dr > 0.0 {
                1.0 / (df * dr)
            } else {
                f64::INFINITY
            };
            let before = nb.etx.is_finite();
            nb.etx = if nb.etx.is_finite() && sample.is_finite() {
                alpha * nb.etx + (1.0 - alpha) * sample
            } else {
                sample
            };
            changed |= before != nb.etx.is_finite();
        }
        self.seq = self.seq.wrapping_add(1);
        (self.seq, changed)
    }

    /// The entries of our next probe: (neighbour, its probes heard in the window), by id.
    pub fn probe_entries(&mut self, now: SimTime, out: &mut Vec<(u32, u32)>) {
        self.prune(now);
        out.clear();
        out.extend(self.neighbours.iter().map(|n| (n.id, n.heard.len() as u32)));
    }

    /// ETX to `nb`: `None` if it is not a neighbour or its link is unusable.
    pub fn etx(&self, nb: u32) -> Option<f64> {
        self.neighbours
            .binary_search_by_key(&nb, |n| n.id)
            .ok()
            .map(|i| self.neighbours[i].etx)
            .filter(|e| e.is_finite())
    }

    /// Usable neighbours and their ETX, by id.
    pub fn links(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.neighbours
            .iter()
            .filter(|n| n.etx.is_finite())
            .map(|n| (n.id, n.etx))
    }

    /// Every neighbour heard in the window, by id (usable or not).
    pub fn heard(&self) -> impl Iterator<Item = u32> + '_ {
        self.neighbours.iter().map(|n| n.id)
    }

    /// Every neighbour heard in the window and the share of its probes heard here (the
    /// delivery ratio of the link from it to this node, as of the last probe instant's window;
    /// arrivals since count too, capped at 1), by id. MORE weighs its broadcast links by these
    /// (`crate::xl::more`).
    pub fn deliveries(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        let expected = self.expected() as f64;
        self.neighbours
            .iter()
            .map(move |n| (n.id, (n.heard.len() as f64 / expected).min(1.0)))
    }

    /// The delivery ratio of the link from `nb` to this node ([`Etx::deliveries`]); `None` if
    /// `nb` was not heard in the window.
    pub fn delivery_from(&self, nb: u32) -> Option<f64> {
        self.neighbours
            .binary_search_by_key(&nb, |n| n.id)
            .ok()
            .map(|i| (self.neighbours[i].heard.len() as f64 / self.expected() as f64).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::stream;

    /// Two estimators exchanging probes over a link that delivers 0 → 1 with `p01` and
    /// 1 → 0 with `p10`; returns node 0's ETX to node 1 sampled once per second after `settle`.
    fn exchange(p01: f64, p10: f64, seconds: u64, settle: u64) -> Vec<f64> {
        let params = EtxParams {
            jitter: 0.0,
            ..EtxParams::default()
        };
        let mut a = Etx::new(params);
        let mut b = Etx::new(params);
        let mut rng = stream(9, 0, "test");
        let (mut ea, mut eb) = (vec![], vec![]);
        let mut samples = vec![];
        for s in 0..seconds {
            // a probes at s + 0.0, b at s + 0.5
            let t = SimTime::from_secs_f64(s as f64);
            a.on_probe_tick(t);
            a.probe_entries(t, &mut ea);
            if rng.gen::<f64>() < p01 {
                let r = ea.iter().find(|e| e.0 == 1).map(|e| e.1).unwrap_or(0);
                b.on_probe(t, 0, s as u32 + 1, Some(r));
            }
            let t = SimTime::from_secs_f64(s as f64 + 0.5);
            b.on_probe_tick(t);
            b.probe_entries(t, &mut eb);
            if rng.gen::<f64>() < p10 {
                let r = eb.iter().find(|e| e.0 == 0).map(|e| e.1).unwrap_or(0);
                a.on_probe(t, 1, s as u32 + 1, Some(r));
            }
            if s >= settle {
                samples.push(a.etx(1).unwrap_or(f64::INFINITY));
            }
        }
        samples
    }

    #[test]
    fn a_perfect_link_has_etx_one() {
        let s = exchange(1.0, 1.0, 60, 30);
        assert!(s.iter().all(|&e| (e - 1.0).abs() < 1e-3), "{s:?}");
    }

    #[test]
    fn mean_estimate_is_near_the_inverse_of_both_delivery_ratios() {
        let s = exchange(0.9, 0.7, 2000, 20);
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        let truth = 1.0 / (0.9 * 0.7);
        assert!((mean / truth - 1.0).abs() < 0.1, "{mean} vs {truth}");
    }

    #[test]
    fn silent_neighbours_expire_after_a_window() {
        let mut a = Etx::new(EtxParams::default());
        a.on_probe(SimTime::from_secs_f64(0.5), 3, 1, Some(1));
        a.on_probe_tick(SimTime::from_secs_f64(1.0));
        assert!(a.heard().any(|n| n == 3));
        let (_, changed) = a.on_probe_tick(SimTime::from_secs_f64(10.6));
        assert!(changed && a.heard().next().is_none());
    }
}
