//! The bins of an HDR histogram (Gil Tene's HdrHistogram) with 3 significant decimal digits and
//! a lowest value of 1, held sparsely.
//!
//! A flow's delays used to go into the `hdrhistogram` crate's `Histogram<u32>`, whose counts are
//! one dense array from the value 1 up to the largest value recorded: about 86 kB a flow for
//! delays up to a second, whatever the flow carried. With thousands of flows that was most of a
//! run's memory (the 10,000-node grid of `benches/scale.py`: 143 of 177 MB, 1,666 flows) and a
//! cache miss at every delivered packet. These bins are the same ones, so every quantile is the
//! one `Histogram::value_at_quantile` gives (a test holds them equal on millions of samples),
//! but they are kept as a short sorted list while a flow has used few of them, then as one page
//! of counts for each power of two (octave) its delays reach.
//!
//! The bins (HdrHistogram's layout for 3 digits from 1): a value `v` falls in bucket
//! `b = max(0, ⌊log2 v⌋ − 10)`, which splits `[2^(b+10), 2^(b+11))` (all of `[0, 2048)` for
//! bucket 0) into bins of width `2^b`; a quantile's value is the highest value of its bin (the
//! lowest for the quantile 0).

/// Sub-bins of a bucket past the first (the first has twice as many).
const HALF: u32 = 1024;
/// Distinct bins kept in the sorted list before the pages take over: 512 × 8 bytes, the size of
/// one page's worth of counts.
const LIST_MAX: usize = 512;

/// The bin of `v` (at least 1): its bucket and its index in HdrHistogram's counts array.
#[inline]
fn bin_of(v: u64) -> (u32, u32) {
    // 53 = 64 − 11: the bucket is how many powers of two `v` lies above [0, 2048).
    let b = 53 - (v | 2047).leading_zeros();
    let sub = (v >> b) as u32;
    (b, ((b + 1) << 10) + sub - HALF)
}

/// The lowest value of the bin at `index` (HdrHistogram's `value_for`).
#[inline]
fn bin_low(index: u32) -> u64 {
    let bucket = (index >> 10) as i32 - 1;
    let sub = (index & (HALF - 1)) + HALF;
    if bucket < 0 {
        u64::from(sub - HALF)
    } else {
        u64::from(sub) << bucket
    }
}

/// The width of the bin holding `v`.
#[inline]
fn bin_width(v: u64) -> u64 {
    1u64 << (53 - (v | 2047).leading_zeros())
}

/// Counts per bin, in bounded memory that grows with the bins used.
#[derive(Debug, Default, Clone)]
pub struct HdrBins {
    /// While few bins are used: `(bin index, count)` sorted by index.
    list: Vec<(u32, u32)>,
    /// Then: a page of counts per bucket (2048 for bucket 0, 1024 for the others), allocated when
    /// the bucket is first used.
    pages: Vec<Option<Box<[u32]>>>,
    /// Samples counted.
    total: u64,
}

impl HdrBins {
    /// Counts `v` (values below 1 count as 1, the lowest value). A bin's count stops at
    /// `u32::MAX` while the total goes on, as in HdrHistogram's `Histogram<u32>`.
    pub fn record(&mut self, v: u64) {
        let (b, index) = bin_of(v.max(1));
        self.total += 1;
        if self.pages.is_empty() {
            match self.list.binary_search_by_key(&index, |&(i, _)| i) {
                Ok(k) => {
                    let c = &mut self.list[k].1;
                    *c = c.saturating_add(1);
                    return;
                }
                Err(k) if self.list.len() < LIST_MAX => {
                    self.list.insert(k, (index, 1));
                    return;
                }
                Err(_) => self.spill_to_pages(),
            }
        }
        let c = &mut self.page(b)[Self::slot(b, index)];
        *c = c.saturating_add(1);
    }

    /// Where the bin `index` of bucket `b` is in its page.
    #[inline]
    fn slot(b: u32, index: u32) -> usize {
        if b == 0 {
            index as usize
        } else {
            (index - ((b + 1) << 10)) as usize
        }
    }

    /// Bucket `b`'s page, allocated if it is new.
    fn page(&mut self, b: u32) -> &mut [u32] {
        let b = b as usize;
        if self.pages.len() <= b {
            self.pages.resize(b + 1, None);
        }
        self.pages[b].get_or_insert_with(|| {
            let len = if b == 0 { 2 * HALF } else { HALF };
            vec![0u32; len as usize].into_boxed_slice()
        })
    }

    /// Moves the sorted list's counts into pages.
    #[cold]
    fn spill_to_pages(&mut self) {
        for (index, count) in std::mem::take(&mut self.list) {
            let low = bin_low(index);
            let (b, _) = bin_of(low.max(1));
            // Bin 0 (the value 0) is never used: values count from 1.
            let page = self.page(b);
            page[Self::slot(b, index)] = count;
        }
    }

    /// Samples counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The bins in increasing order of value, as `(index, count)`, empty ones left out.
    fn bins(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let listed = self.list.iter().copied();
        let paged = self.pages.iter().enumerate().flat_map(|(b, page)| {
            let b = b as u32;
            let base = if b == 0 { 0 } else { (b + 1) << 10 };
            page.iter()
                .flat_map(move |p| p.iter().enumerate())
                .filter(|(_, &c)| c > 0)
                .map(move |(k, &c)| (base + k as u32, c))
        });
        listed.chain(paged)
    }

    /// HdrHistogram's `value_at_quantile`: the highest value of the first bin at which the
    /// running count reaches `⌈q × total⌉` (at least 1; `q` capped at 1), the lowest for
    /// `q = 0`; 0 when nothing was counted.
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        let q = if q > 1.0 { 1.0 } else { q };
        let target = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (index, count) in self.bins() {
            seen += u64::from(count);
            if seen >= target {
                let low = bin_low(index);
                return if q == 0.0 {
                    low
                } else {
                    low.saturating_add(bin_width(low)) - 1
                };
            }
        }
        0
    }

    /// Bytes the bins hold.
    pub fn memory_bytes(&self) -> usize {
        self.list.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.pages.capacity() * std::mem::size_of::<Option<Box<[u32]>>>()
            + self
                .pages
                .iter()
                .flatten()
                .map(|p| p.len() * std::mem::size_of::<u32>())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Every quantile asked of the bins against the `hdrhistogram` crate's on the same samples.
    fn assert_same_quantiles(samples: &[u64]) {
        let mut ours = HdrBins::default();
        let mut theirs = hdrhistogram::Histogram::<u32>::new(3).unwrap();
        for &v in samples {
            ours.record(v);
            theirs.record(v.max(1)).unwrap();
        }
        assert_eq!(ours.total(), theirs.len());
        let mut qs = vec![
            0.0, 1e-12, 1e-3, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0, 1.5,
        ];
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(samples.len() as u64);
        qs.extend((0..50).map(|_| rng.gen::<f64>()));
        for q in qs {
            assert_eq!(
                ours.value_at_quantile(q),
                theirs.value_at_quantile(q),
                "q {q} over {} samples",
                samples.len()
            );
        }
    }

    #[test]
    fn quantiles_are_those_of_hdrhistogram_in_the_list_and_in_pages() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        // Few samples (the sorted list), then enough distinct bins for the pages.
        for n in [1, 2, 3, 10, 100, 511, 512, 513, 5_000, 200_000] {
            // Log-uniform over 1 ns .. 1000 s, with zeros and repeats.
            let samples: Vec<u64> = (0..n)
                .map(|i| match i % 7 {
                    0 => 0,
                    1 => 1_000_000,
                    _ => 10f64.powf(rng.gen_range(0.0..12.0)) as u64,
                })
                .collect();
            assert_same_quantiles(&samples);
        }
        // Small values only (bucket 0, where bins are one unit wide), and huge ones.
        assert_same_quantiles(&(0..3000).map(|i| (i * 7919) % 2100).collect::<Vec<_>>());
        assert_same_quantiles(&[u64::MAX / 3, 1 << 62, 5, (1 << 62) + 12_345]);
    }

    #[test]
    fn the_bins_use_memory_as_the_delays_spread_not_as_they_accumulate() {
        let mut few = HdrBins::default();
        for v in [2_000_000u64, 2_001_000, 3_500_000] {
            for _ in 0..10_000 {
                few.record(v);
            }
        }
        assert!(few.memory_bytes() <= 64, "{} bytes", few.memory_bytes());
        let mut spread = HdrBins::default();
        let mut x = 1u64;
        for _ in 0..1_000_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            spread.record(1_000_000 + (x >> 40) % 1_000_000_000); // 1 ms .. 1 s
        }
        // Ten octaves of pages (4 kB each) against hdrhistogram's dense 86 kB from 1 ns.
        assert!(
            spread.memory_bytes() < 48_000,
            "{} bytes",
            spread.memory_bytes()
        );
    }
}
