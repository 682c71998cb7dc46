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

/// The sequence numbers of a neighbour's probes heard within the window.
///
/// Probes arrive in order, so the numbers are a bit mask below the last one heard
/// ([`Neighbour::last_seq`]): bit `k` is number `last_seq − k`. An estimator touches the mask
/// in the neighbour's own record, where a list of numbers was a block elsewhere in the heap (a
/// second cache miss of every probe heard). A number that would fall off the mask's 64 bits,
/// or one older than the last heard, turns the neighbour's record into the list of numbers
/// (in arrival order) for as long as it stays a neighbour: the window is then that list's, as
/// it always was, exactly.
#[derive(Debug, Clone)]
enum Heard {
    Bits(u64),
    /// Boxed: the rare form costs the record 8 bytes, not a deque's 32 (records of 48 bytes).
    #[allow(clippy::box_collection)]
    List(Box<VecDeque<u32>>),
}

impl Heard {
    /// How many numbers it holds.
    #[inline]
    fn len(&self) -> usize {
        match self {
            Heard::Bits(m) => m.count_ones() as usize,
            Heard::List(l) => l.len(),
        }
    }

    /// The list of the numbers of `Bits(mask)` below `last`, ascending.
    fn listed(mask: u64, last: u32) -> VecDeque<u32> {
        (0..64u32)
            .rev()
            .filter(|&k| mask >> k & 1 == 1)
            .map(|k| last.wrapping_sub(k))
            .collect()
    }
}

#[derive(Debug, Clone)]
pub struct Neighbour {
    /// Its probes' numbers heard within the window.
    heard: Heard,
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
    /// The neighbours' ids, ascending: a probe heard finds its sender in a line or two, apart
    /// from the records.
    ids: Vec<u32>,
    /// Their records, in the order of `ids`.
    neighbours: Vec<Neighbour>,
    /// The instant of the last prune while no probe has been heard since: pruning again at
    /// that instant changes nothing (a probe instant prunes, then lists the probe's entries).
    pruned_at: Option<SimTime>,
}

impl Etx {
    pub fn new(params: EtxParams) -> Etx {
        Etx {
            params,
            seq: 0,
            ids: Vec::new(),
            neighbours: Vec::new(),
            pruned_at: None,
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
        if self.pruned_at == Some(now) {
            return false;
        }
        self.pruned_at = Some(now);
        let (w, n) = (self.params.window, self.expected());
        // A probe is overdue only once the longest jittered period has passed.
        let period = (self.params.probe_period.ns() as f64 * (1.0 + self.params.jitter)) as u64;
        let before = self.neighbours.len();
        let mut kept = 0;
        for i in 0..self.neighbours.len() {
            let nb = &mut self.neighbours[i];
            if nb.last_heard + w <= now {
                continue;
            }
            let missed = ((now - nb.last_heard).ns() / period.max(1)) as u32;
            match &mut nb.heard {
                // Number `last_seq − k` is `missed + k` behind the newest: kept below `n`.
                Heard::Bits(m) => {
                    let keep = n.saturating_sub(missed);
                    if keep < 64 {
                        *m &= (1u64 << keep) - 1;
                    }
                }
                Heard::List(l) => {
                    let newest = nb.last_seq.wrapping_add(missed);
                    while l.front().is_some_and(|&s| newest.wrapping_sub(s) >= n) {
                        l.pop_front();
                    }
                }
            }
            self.neighbours.swap(kept, i);
            self.ids.swap(kept, i);
            kept += 1;
        }
        self.neighbours.truncate(kept);
        self.ids.truncate(kept);
        before != kept
    }

    /// Probe `seq` from `from` arrived; `reported` is how many of our probes it says it heard
    /// (`None` if the probe carried no entry readable for us).
    pub fn on_probe(&mut self, now: SimTime, from: u32, seq: u32, reported: Option<u32>) {
        // A probe moves the window: the next prune must look again, even at this instant.
        self.pruned_at = None;
        let i = match self.ids.binary_search(&from) {
            Ok(i) => i,
            Err(i) => {
                self.ids.insert(i, from);
                self.neighbours.insert(
                    i,
                    Neighbour {
                        heard: Heard::Bits(0),
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
        // As a list: a duplicate of the last number heard is dropped, any other appended.
        match &mut nb.heard {
            Heard::Bits(m) if seq == nb.last_seq => {
                if *m & 1 == 1 {
                    return; // a duplicate
                }
                *m |= 1;
            }
            // A newer number whose shift pushes no heard one off the mask.
            Heard::Bits(m)
                if seq > nb.last_seq && (*m == 0 || m.leading_zeros() >= seq - nb.last_seq) =>
            {
                *m = m.checked_shl(seq - nb.last_seq).unwrap_or(0) | 1;
            }
            Heard::Bits(m) => {
                let mut l = Heard::listed(*m, nb.last_seq);
                l.push_back(seq);
                nb.heard = Heard::List(Box::new(l));
            }
            Heard::List(l) => {
                if l.back().is_some_and(|&s| s == seq) {
                    return; // a duplicate
                }
                l.push_back(seq);
            }
        }
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
        out.extend(
            self.ids
                .iter()
                .zip(&self.neighbours)
                .map(|(&id, n)| (id, n.heard.len() as u32)),
        );
    }

    /// ETX to `nb`: `None` if it is not a neighbour or its link is unusable.
    pub fn etx(&self, nb: u32) -> Option<f64> {
        self.ids
            .binary_search(&nb)
            .ok()
            .map(|i| self.neighbours[i].etx)
            .filter(|e| e.is_finite())
    }

    /// Usable neighbours and their ETX, by id.
    pub fn links(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.ids
            .iter()
            .zip(&self.neighbours)
            .filter(|(_, n)| n.etx.is_finite())
            .map(|(&id, n)| (id, n.etx))
    }

    /// Every neighbour heard in the window, by id (usable or not).
    pub fn heard(&self) -> impl Iterator<Item = u32> + '_ {
        self.ids.iter().copied()
    }

    /// Every neighbour heard in the window and the share of its probes heard here (the
    /// delivery ratio of the link from it to this node, as of the last probe instant's window;
    /// arrivals since count too, capped at 1), by id. MORE weighs its broadcast links by these
    /// (`crate::xl::more`).
    pub fn deliveries(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        let expected = self.expected() as f64;
        self.ids
            .iter()
            .zip(&self.neighbours)
            .map(move |(&id, n)| (id, (n.heard.len() as f64 / expected).min(1.0)))
    }

    /// The delivery ratio of the link from `nb` to this node ([`Etx::deliveries`]); `None` if
    /// `nb` was not heard in the window.
    pub fn delivery_from(&self, nb: u32) -> Option<f64> {
        self.ids
            .binary_search(&nb)
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

    /// The window as a list of the numbers heard, in arrival order (what [`Heard`] stands for).
    struct ListWindow {
        heard: VecDeque<u32>,
        last_seq: u32,
        last_heard: SimTime,
    }

    /// Probes arriving in order with gaps, repeats, jumps past the mask's 64 bits and
    /// (rarely) an older number: every count the estimator reports, as a probe entry and as a
    /// delivery ratio, is the list's, pruned the same way.
    #[test]
    fn the_window_as_bits_counts_what_the_list_of_numbers_heard_counts() {
        let params = EtxParams::default();
        let (n, w) = (10, params.window);
        let period = (params.probe_period.ns() as f64 * (1.0 + params.jitter)) as u64;
        let mut rng = stream(3, 0, "test");
        let mut e = Etx::new(params);
        let mut lists: Vec<Option<ListWindow>> = (0..4).map(|_| None).collect();
        let (mut t, mut seqs) = (SimTime::ZERO, [0u32; 4]);
        let mut out = vec![];
        let (mut bits_seen, mut lists_seen) = (0, 0);
        let prune_lists = |lists: &mut Vec<Option<ListWindow>>, t: SimTime| {
            for l in lists.iter_mut() {
                let Some(lw) = l else { continue };
                if lw.last_heard + w <= t {
                    *l = None;
                    continue;
                }
                let missed = ((t - lw.last_heard).ns() / period) as u32;
                let newest = lw.last_seq.wrapping_add(missed);
                while lw
                    .heard
                    .front()
                    .is_some_and(|&s| newest.wrapping_sub(s) >= n)
                {
                    lw.heard.pop_front();
                }
            }
        };
        for step in 0..20_000 {
            // Now and then a silence longer than the window: every neighbour expires.
            let gap = if rng.gen_range(0..200) == 0 {
                12.0
            } else {
                rng.gen_range(0.05..0.6)
            };
            t += SimTime::from_secs_f64(gap);
            let from = rng.gen_range(0..4u32);
            let s = &mut seqs[from as usize];
            *s = match rng.gen_range(0..1000) {
                0..=599 => *s + 1,
                600..=849 => *s + rng.gen_range(2..5),
                850..=989 => *s,
                990..=994 => *s + rng.gen_range(60..80),
                _ => s.saturating_sub(rng.gen_range(1..4)),
            };
            let seq = *s;
            // Every fifth step a probe instant's prune comes first, at the same instant: the
            // prune after the probe must look again.
            if step % 5 == 0 {
                e.probe_entries(t, &mut out);
                prune_lists(&mut lists, t);
            }
            e.on_probe(t, from, seq, Some(1));
            let l = lists[from as usize].get_or_insert_with(|| ListWindow {
                heard: VecDeque::new(),
                last_seq: seq,
                last_heard: t,
            });
            if l.heard.back() != Some(&seq) {
                l.heard.push_back(seq);
                l.last_seq = seq;
                l.last_heard = t;
            }
            // Between prunes too (MORE reads the delivery ratios then).
            let i = e.ids.binary_search(&from).unwrap();
            assert_eq!(e.neighbours[i].heard.len(), l.heard.len(), "at step {step}");
            match e.neighbours[i].heard {
                Heard::Bits(_) => bits_seen += 1,
                Heard::List(_) => lists_seen += 1,
            }
            if step % 3 == 0 {
                e.probe_entries(t, &mut out);
                prune_lists(&mut lists, t);
                let want: Vec<(u32, u32)> = lists
                    .iter()
                    .enumerate()
                    .filter_map(|(id, l)| l.as_ref().map(|l| (id as u32, l.heard.len() as u32)))
                    .collect();
                assert_eq!(out, want, "at step {step}");
                for &(id, c) in &want {
                    let d = e.delivery_from(id).unwrap();
                    assert_eq!(d, (c as f64 / n as f64).min(1.0), "at step {step}");
                }
            }
        }
        // Both forms were exercised.
        assert!(
            bits_seen > 5_000 && lists_seen > 1_000,
            "{bits_seen} {lists_seen}"
        );
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
