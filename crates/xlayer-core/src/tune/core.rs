//! ECLAIR's core: the data items (a parameter of a node's layer) worth caching, chosen from
//! the optimizers' reads and the tuning layers' writes, and served to the optimizers' reads
//! from a cache the tuning layer refreshes on each write (ECLAIR, "Core: sub-architecture for
//! reducing overheads").
//!
//! **Counting.** Every optimizer read ([`super::optimizer::Ctx::get`]) and every write through
//! a tuning layer ([`super::set_spec`], whoever writes) of an item is counted per item; the
//! counts of the last selection period are the document's estimated frequencies: `w` (reads by
//! layers other than the item's own, here the optimizers, per simulated second) and `w_t`
//! (writes into the core per simulated second).
//!
//! **Costs, measured.** `c_r`, a read through the tuning layer (the item's optimizer reads
//! that missed the cache, from the start of `Ctx::get` to its return: the item's look-up by
//! name, the layer's call); `c_c`, a read of a cached value (the same span on a hit: the
//! look-up and the value; before the first hit, the look-up timed at selection); `c_w`, a
//! write into the core (the refresh after a write: the re-read through the layer and the store;
//! before the first, `c_r`). One read in [`SAMPLE_EVERY`] is timed (and an item's first read
//! through the layer, so every item has a cost), every refresh, the clock's own overhead
//! subtracted, so the timing costs little. `c_r` and `c_w` are pooled over the items of one
//! parameter (every node's, every index's: the same code path), so that an item read rarely
//! is not judged on one cold timing; `c_c` over all cached reads. Costs are wall-clock, so they and what depends on
//! them (the scores, the chosen core, hits) vary from run to run; the simulated results do not
//! (see coherence below).
//!
//! **Score and selection**, as the document defines them: the core potential score of an item
//! is the increase in efficiency of caching it, `s = 1 − c_c/c_r − (c_w/c_r)·(w_t/w)` (the
//! cost of its reads through the layer, `c_r·w`, against the core's cost `c_c·w + c_w·w_t`,
//! divided by `c_r·w`); an item is suitable if `s > 0`. The candidates are the items of
//! utility `w > V` ([`CoreConfig::min_reads_per_s`]); sorted by score, descending, they are
//! added while the core's utility less its cost, `Q − Y`, is below the design threshold `t`
//! ([`CoreConfig::threshold_ns_per_s`]), stopping at the first item not suitable. Where the
//! document is silent we chose: (1) `Q` and `Y` in one unit so they can be subtracted — `Q =
//! Σ c_r·w` (the CPU time the core's reads would cost through the layers, ns per simulated
//! second) and `Y = Σ (c_w·w_t + c_c·w)`, so `Q − Y = Σ c_r·w·s`, the CPU time the core saves;
//! (2) a core per node (a node is a device with its own stack); (3) the selection is re-run
//! every [`CoreConfig::period`] of simulated time from the counts of the period just ended
//! (lazily, at the first optimizer read or write after the period's end, so the engine gets no
//! extra events); an item leaving the core drops its value, one entering is filled by its next
//! read through the layer; (4) the default threshold is infinite (every suitable item goes in:
//! the core costs a few dozen bytes an item and nothing bounds it here).
//!
//! **Coherence.** A cached value must equal what a read through the layer would give at that
//! instant. Only the items of [`CACHEABLE`] can enter the core: parameters that nothing but a
//! write through the tuning layer changes (the data path never writes them; checked by reading
//! every assignment of their fields: `mac.params`' retry limits, queue capacity and data rate
//! are written only by `mac::tuning::set`, the PHY's power offset only by `phy::tuning::set`,
//! the user layer's state only by `world::tuning::set_param`). Everything else is counted and
//! scored but never cached: measured quantities (queue lengths, windows, counters) change on
//! every event, and configuration the data path also writes (Fusion's `mac.cw_min`/`cw_max`,
//! DiffQ's and DPCLO's `app.rate_bps`, the receiver's `tcp.rwnd`, bounded by its buffer) would
//! need a generation counter on every data-path write. A write refreshes the cached value by
//! reading it back through the layer (a set may round, `mac.*` takes integers). A cached read
//! is not used while a tuning layer is unloaded or a fault is pending injection (those calls
//! must reach the layer). [`CoreMode::Verify`] reads through the layer on every hit as well and
//! counts the differences (`eclair_core_mismatches`), the check the tests run.

use std::collections::HashMap;
use std::time::Instant;

use super::ParamSpec;
use crate::sim::SimTime;

/// Parameters that can be cached: nothing changes them but a write through their tuning layer.
pub const CACHEABLE: &[&str] = &[
    "user.priority",
    "user.shutdown",
    "mac.short_retry_limit",
    "mac.long_retry_limit",
    "net.queue_capacity",
    "phy.data_rate_mbps",
    "phy.tx_power_offset_db",
];

/// One operation in this many is timed for the cost estimates.
pub const SAMPLE_EVERY: u64 = 8;

/// Whether the core serves reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CoreMode {
    /// Select and serve the core (ECLAIR).
    #[default]
    Auto,
    /// Count and score, never cache: every read goes through the tuning layer.
    Off,
    /// As `Auto`, and every cached read is also read through the layer and compared.
    Verify,
}

impl CoreMode {
    pub fn from_name(s: &str) -> Option<CoreMode> {
        match s {
            "auto" => Some(CoreMode::Auto),
            "off" => Some(CoreMode::Off),
            "verify" => Some(CoreMode::Verify),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            CoreMode::Auto => "auto",
            CoreMode::Off => "off",
            CoreMode::Verify => "verify",
        }
    }
}

/// The core's settings (`[eclair]` in a scenario).
#[derive(Debug, Clone, Copy)]
pub struct CoreConfig {
    pub mode: CoreMode,
    /// Selection period (simulated time).
    pub period: SimTime,
    /// The design threshold `t` on the core's utility less its cost (ns of CPU per simulated
    /// second).
    pub threshold_ns_per_s: f64,
    /// `V`: an item is a candidate if read more often than this (per simulated second).
    pub min_reads_per_s: f64,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            mode: CoreMode::Auto,
            period: SimTime::from_secs_f64(1.0),
            threshold_ns_per_s: f64::INFINITY,
            min_reads_per_s: 0.0,
        }
    }
}

/// A running mean of timed operations (ns).
#[derive(Debug, Default, Clone, Copy)]
pub struct Cost {
    sum: f64,
    n: u64,
}

impl Cost {
    fn add(&mut self, ns: f64) {
        self.sum += ns;
        self.n += 1;
    }
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// A data item: a parameter of a node's layer.
#[derive(Debug, Clone)]
pub struct Item {
    pub node: u32,
    pub name: Box<str>,
    pub spec: &'static ParamSpec,
    pub index: Option<usize>,
    pub cacheable: bool,
    /// Optimizer reads and writes through the tuning layer, whole run.
    pub reads: u64,
    pub writes: u64,
    /// Reads served from the core.
    pub hits: u64,
    period_reads: u64,
    period_writes: u64,
    /// Estimated frequencies at the last selection (per simulated second).
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    read_ns: Cost,
    write_ns: Cost,
    /// The cached value (items in the core, once read).
    value: Option<f64>,
    pub in_core: bool,
    /// The core potential score at the last selection (NaN: not scored, no reads).
    pub score: f64,
}

impl Item {
    /// Measured mean costs of this item: (read through the layer, unused, write into the core),
    /// ns; NaN where nothing was timed.
    pub fn measured(&self) -> (f64, f64, f64) {
        (
            self.read_ns.mean().unwrap_or(f64::NAN),
            f64::NAN,
            self.write_ns.mean().unwrap_or(f64::NAN),
        )
    }
}

/// The document's core potential score: `1 − c_c/c_r − (c_w/c_r)·(w_t/w)`.
pub fn potential_score(c_r: f64, c_c: f64, c_w: f64, w: f64, w_t: f64) -> f64 {
    1.0 - c_c / c_r - (c_w / c_r) * (w_t / w)
}

/// A candidate for the greedy selection.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub c_r: f64,
    pub c_c: f64,
    pub c_w: f64,
    /// Reads per second (the utility).
    pub w: f64,
    /// Writes per second.
    pub w_t: f64,
}

impl Candidate {
    pub fn score(&self) -> f64 {
        potential_score(self.c_r, self.c_c, self.c_w, self.w, self.w_t)
    }
    /// What caching the item saves: `c_r·w − (c_c·w + c_w·w_t)` = `c_r·w·s` (ns per second).
    pub fn gain(&self) -> f64 {
        self.c_r * self.w - (self.c_c * self.w + self.c_w * self.w_t)
    }
}

/// The document's greedy selection: candidates of utility `w > v`, by score descending (ties:
/// in the given order), added while `Q − Y < t`; stops at the first item whose score is not
/// positive. Returns the indices chosen, in the order added.
pub fn select(cands: &[Candidate], t: f64, v: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cands.len())
        .filter(|&i| cands[i].w > v && cands[i].score().is_finite())
        .collect();
    order.sort_by(|&a, &b| cands[b].score().total_cmp(&cands[a].score()));
    let mut core = Vec::new();
    let mut q_less_y = 0.0;
    for i in order {
        if cands[i].score() <= 0.0 {
            break;
        }
        if q_less_y < t {
            core.push(i);
            q_less_y += cands[i].gain();
        } else {
            break;
        }
    }
    core
}

/// The core of every node, its item table and its cost measurements.
#[derive(Debug)]
pub struct Core {
    pub cfg: CoreConfig,
    pub items: Vec<Item>,
    by_node: Vec<HashMap<Box<str>, usize>>,
    period_start: SimTime,
    cached_ns: Cost,
    /// Optimizer reads counted globally, to pick the ones timed.
    ops: u64,
    /// What one `Instant::now()` pair costs, subtracted from timings.
    clock_ns: f64,
    pub selections: u64,
    /// Cached reads that differed from a read through the layer (verify mode).
    pub mismatches: u64,
    /// `Q − Y` of the last selection, summed over the nodes (ns per simulated second).
    pub gain_ns_per_s: f64,
}

impl Default for Core {
    fn default() -> Self {
        Core::new(CoreConfig::default())
    }
}

/// A started timing, if this operation is one of those timed.
pub(crate) type Timing = Option<Instant>;

impl Core {
    pub fn new(cfg: CoreConfig) -> Core {
        Core {
            cfg,
            items: Vec::new(),
            by_node: Vec::new(),
            period_start: SimTime::ZERO,
            cached_ns: Cost::default(),
            ops: 0,
            clock_ns: f64::NAN,
            selections: 0,
            mismatches: 0,
            gain_ns_per_s: 0.0,
        }
    }

    /// Whether the core serves reads at all.
    #[inline]
    pub fn serving(&self) -> bool {
        self.cfg.mode != CoreMode::Off
    }

    /// The item `name` of `node`, if seen before.
    #[inline]
    pub fn lookup(&self, node: u32, name: &str) -> Option<usize> {
        self.by_node.get(node as usize)?.get(name).copied()
    }

    /// Registers item `name` of `node` (its first read or write).
    pub fn register(
        &mut self,
        node: u32,
        name: &str,
        spec: &'static ParamSpec,
        index: Option<usize>,
    ) -> usize {
        if let Some(i) = self.lookup(node, name) {
            return i;
        }
        if self.by_node.len() <= node as usize {
            self.by_node.resize_with(node as usize + 1, HashMap::new);
        }
        let i = self.items.len();
        self.items.push(Item {
            node,
            name: name.into(),
            spec,
            index,
            cacheable: CACHEABLE.contains(&spec.name),
            reads: 0,
            writes: 0,
            hits: 0,
            period_reads: 0,
            period_writes: 0,
            reads_per_s: 0.0,
            writes_per_s: 0.0,
            read_ns: Cost::default(),
            write_ns: Cost::default(),
            value: None,
            in_core: false,
            score: f64::NAN,
        });
        self.by_node[node as usize].insert(name.into(), i);
        i
    }

    /// A timing started at the beginning of an optimizer's read, for one read in
    /// [`SAMPLE_EVERY`].
    #[inline]
    pub(crate) fn start_read(&mut self) -> Timing {
        self.ops += 1;
        (self.ops % SAMPLE_EVERY == 1).then(Instant::now)
    }

    /// Counts a read of item `i`; `t` the read's timing, started now if it has none and the
    /// item has no read through the layer timed yet (so that every item gets a cost).
    #[inline]
    pub(crate) fn count_read(&mut self, i: usize, t: Timing) -> Timing {
        let it = &mut self.items[i];
        it.reads += 1;
        it.period_reads += 1;
        if t.is_none() && it.read_ns.n == 0 && it.value.is_none() {
            return Some(Instant::now());
        }
        t
    }

    /// The cached value of item `i`, if it is in the core and filled.
    #[inline]
    pub(crate) fn cached(&self, i: usize) -> Option<f64> {
        let it = &self.items[i];
        if it.in_core {
            it.value
        } else {
            None
        }
    }

    /// A read of item `i` served from the core.
    #[inline]
    pub(crate) fn hit(&mut self, i: usize, t: Timing) {
        self.items[i].hits += 1;
        if let Some(t) = t {
            let ns = self.elapsed(t);
            self.cached_ns.add(ns);
        }
    }

    /// A read of item `i` through the layer gave `v` (timed by `t`); fills the cache if the
    /// item is in the core.
    #[inline]
    pub(crate) fn missed(&mut self, i: usize, v: Option<f64>, t: Timing) {
        if let Some(t) = t {
            let ns = self.elapsed(t);
            self.items[i].read_ns.add(ns);
        }
        let it = &mut self.items[i];
        if it.in_core && self.cfg.mode != CoreMode::Off {
            it.value = v;
        }
    }

    /// Counts a write of item `i`; true if its cached value must be refreshed.
    pub(crate) fn count_write(&mut self, i: usize) -> bool {
        let it = &mut self.items[i];
        it.writes += 1;
        it.period_writes += 1;
        it.value = None;
        it.in_core && self.cfg.mode != CoreMode::Off
    }

    /// The refreshed value of item `i` after a write, and the timing of the refresh.
    pub(crate) fn refreshed(&mut self, i: usize, v: Option<f64>, t: Instant) {
        let ns = self.elapsed(t);
        let it = &mut self.items[i];
        if (it.writes - 1).is_multiple_of(SAMPLE_EVERY) {
            it.write_ns.add(ns);
        }
        it.value = v;
    }

    /// What one `Instant::now()` and `elapsed()` cost (ns), measured once.
    fn clock_overhead(&mut self) -> f64 {
        if self.clock_ns.is_nan() {
            let mut best = f64::INFINITY;
            for _ in 0..16 {
                let t = Instant::now();
                best = best.min(t.elapsed().as_nanos() as f64);
            }
            self.clock_ns = best;
        }
        self.clock_ns
    }

    fn elapsed(&mut self, t: Instant) -> f64 {
        let ns = t.elapsed().as_nanos() as f64;
        (ns - self.clock_overhead()).max(0.0)
    }

    /// The measured costs of item `i`: (c_r, c_c, c_w), ns. `c_r` and `c_w` pool the timings
    /// of every item of the same parameter (any node, any index: the same code path), since
    /// an item read or written rarely has few timings of its own and one cold one would decide.
    pub fn costs(&mut self, i: usize) -> (f64, f64, f64) {
        let spec = self.items[i].spec.name;
        let (mut read, mut write) = (Cost::default(), Cost::default());
        for it in self.items.iter().filter(|it| it.spec.name == spec) {
            read.sum += it.read_ns.sum;
            read.n += it.read_ns.n;
            write.sum += it.write_ns.sum;
            write.n += it.write_ns.n;
        }
        self.pooled_costs(i, read, write)
    }

    fn pooled_costs(&mut self, i: usize, read: Cost, write: Cost) -> (f64, f64, f64) {
        let c_r = read.mean().unwrap_or(f64::NAN);
        let c_c = match self.cached_ns.mean() {
            Some(c) => c,
            None => {
                // No hit yet: time the look-up a hit consists of.
                let (node, name) = (self.items[i].node, self.items[i].name.clone());
                let t = Instant::now();
                for _ in 0..32 {
                    std::hint::black_box(
                        self.cached(std::hint::black_box(self.lookup(node, &name).unwrap_or(i))),
                    );
                }
                (t.elapsed().as_nanos() as f64 / 32.0).max(0.0)
            }
        };
        let c_w = write.mean().unwrap_or(c_r);
        (c_r, c_c, c_w)
    }

    /// Re-selects every node's core if the period has ended at `now`.
    #[inline]
    pub(crate) fn maybe_select(&mut self, now: SimTime) {
        if now >= self.period_start + self.cfg.period {
            self.select_now(now);
        }
    }

    /// Scores every item from the period ending at `now` and selects each node's core.
    pub fn select_now(&mut self, now: SimTime) {
        let dt = (now - self.period_start).as_secs_f64();
        if dt <= 0.0 {
            return;
        }
        self.selections += 1;
        let mut cands = Vec::with_capacity(self.items.len());
        // Timings pooled by parameter (see `costs`).
        let mut pool: HashMap<&'static str, (Cost, Cost)> = HashMap::new();
        for it in &self.items {
            let p = pool.entry(it.spec.name).or_default();
            p.0.sum += it.read_ns.sum;
            p.0.n += it.read_ns.n;
            p.1.sum += it.write_ns.sum;
            p.1.n += it.write_ns.n;
        }
        for i in 0..self.items.len() {
            let (read, write) = pool[self.items[i].spec.name];
            let (c_r, c_c, c_w) = self.pooled_costs(i, read, write);
            let it = &mut self.items[i];
            it.reads_per_s = it.period_reads as f64 / dt;
            it.writes_per_s = it.period_writes as f64 / dt;
            it.period_reads = 0;
            it.period_writes = 0;
            let c = Candidate {
                c_r,
                c_c,
                c_w,
                w: it.reads_per_s,
                w_t: it.writes_per_s,
            };
            it.score = if it.reads_per_s > 0.0 {
                c.score()
            } else {
                f64::NAN
            };
            cands.push(c);
        }
        self.gain_ns_per_s = 0.0;
        // Off: scored, never selected.
        let nodes = if self.cfg.mode == CoreMode::Off {
            0
        } else {
            self.by_node.len() as u32
        };
        let mut chosen = vec![false; self.items.len()];
        for node in 0..nodes {
            let ids: Vec<usize> = (0..self.items.len())
                .filter(|&i| self.items[i].node == node && self.items[i].cacheable)
                .collect();
            let c: Vec<Candidate> = ids.iter().map(|&i| cands[i]).collect();
            for k in select(&c, self.cfg.threshold_ns_per_s, self.cfg.min_reads_per_s) {
                chosen[ids[k]] = true;
                self.gain_ns_per_s += c[k].gain();
            }
        }
        for (it, &c) in self.items.iter_mut().zip(&chosen) {
            if !c {
                it.value = None;
            }
            it.in_core = c;
        }
        self.period_start = now;
    }

    /// The measured mean cost of a cached read (ns; NaN before the first timed hit).
    pub fn cached_cost(&self) -> f64 {
        self.cached_ns.mean().unwrap_or(f64::NAN)
    }

    /// Items in the core now.
    pub fn core_items(&self) -> usize {
        self.items.iter().filter(|i| i.in_core).count()
    }

    /// Bytes the core holds (its item table and index, by capacity).
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        self.items.capacity() * size_of::<Item>()
            + self.items.iter().map(|i| i.name.len()).sum::<usize>() * 2
            + self
                .by_node
                .iter()
                .map(|m| m.capacity() * (size_of::<(Box<str>, usize)>() + 8))
                .sum::<usize>()
            + self.by_node.capacity() * size_of::<HashMap<Box<str>, usize>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(c_r: f64, c_c: f64, c_w: f64, w: f64, w_t: f64) -> Candidate {
        Candidate {
            c_r,
            c_c,
            c_w,
            w,
            w_t,
        }
    }

    #[test]
    fn the_score_is_the_documents_increase_in_efficiency() {
        // c_r = 100, c_c = 10, c_w = 120, w = 1000/s, w_t = 100/s:
        // 1 - 10/100 - (120/100)(100/1000) = 1 - 0.1 - 0.12 = 0.78.
        let a = c(100.0, 10.0, 120.0, 1000.0, 100.0);
        assert!((a.score() - 0.78).abs() < 1e-12);
        // Its gain: c_r w - (c_c w + c_w w_t) = 100000 - (10000 + 12000) = 78000 = c_r w s.
        assert!((a.gain() - 78_000.0).abs() < 1e-9);
        // Written as often as read, at the cost of a read: 1 - 0.1 - 1 < 0, not suitable.
        assert!(c(100.0, 10.0, 100.0, 50.0, 50.0).score() < 0.0);
    }

    #[test]
    fn greedy_selection_follows_the_document_by_hand() {
        let cands = [
            c(100.0, 10.0, 120.0, 1000.0, 100.0), // s = 0.78, gain 78000
            c(100.0, 10.0, 100.0, 10.0, 10.0),    // s = -0.10: not suitable
            c(200.0, 10.0, 200.0, 100.0, 0.0),    // s = 0.95, gain 19000
            c(100.0, 10.0, 100.0, 100.0, 40.0),   // s = 0.50, gain 5000
            c(100.0, 10.0, 100.0, 0.5, 0.0),      // s = 0.90, but w = 0.5 <= V = 1
        ];
        // No threshold: every suitable candidate above V, by score: 2 (0.95), 0 (0.78), 3 (0.5).
        assert_eq!(select(&cands, f64::INFINITY, 1.0), vec![2, 0, 3]);
        // V = 0 lets the rarely read one in, second by score.
        assert_eq!(select(&cands, f64::INFINITY, 0.0), vec![2, 4, 0, 3]);
        // t = 50000: after 2 (Q-Y = 19000 < t) 0 is added (97000), then Q-Y >= t: stop.
        assert_eq!(select(&cands, 50_000.0, 1.0), vec![2, 0]);
        // t = 19000: 2 goes in (0 < t), then 19000 is not below t.
        assert_eq!(select(&cands, 19_000.0, 1.0), vec![2]);
        // t = 0: nothing (Q - Y = 0 is not below 0).
        assert!(select(&cands, 0.0, 1.0).is_empty());
    }
}
