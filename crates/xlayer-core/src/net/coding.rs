//! Random linear network coding over GF(2^8), the arithmetic MORE runs on (Chachulski, Jennings,
//! Katti, Katabi, SIGCOMM 2007; issue 19): a coded packet is a linear combination of the `K`
//! native packets of a batch, and what matters to the protocol is its coefficient vector — whether
//! it is *innovative* (not in the span of what a node already holds) and when a node holds `K`
//! independent ones (it can decode). The simulator carries the real coefficient vectors, so rank
//! and innovation are exact, not drawn from a probability; payload bytes are not coded (their
//! decoding follows from the rank).
//!
//! Field: GF(2^8) with the primitive polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d, the one of
//! Reed-Solomon codes and of most network-coding implementations), generator 2; products by
//! log/antilog tables, so coding costs table lookups (issue 19 item 5).

/// Native packets per batch at most (MORE's K = 32; the wire format's, `crate::wire::more`).
pub const MAX_BATCH: usize = crate::wire::more::MAX_BATCH;

/// A coded packet's coefficients over the batch's native packets (the first `k` are used): the
/// code vector a coded packet carries.
pub type Coeffs = crate::wire::more::CodeVector;

/// Log and antilog tables of GF(2^8) over 0x11d, built at compile time.
struct Tables {
    exp: [u8; 512],
    log: [u8; 256],
}

const fn tables() -> Tables {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        exp[i + 255] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= 0x11d;
        }
        i += 1;
    }
    // exp[510], exp[511] are never read (log sums are at most 508).
    Tables { exp, log }
}

static T: Tables = tables();

/// Product in GF(2^8).
#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        T.exp[T.log[a as usize] as usize + T.log[b as usize] as usize]
    }
}

/// Multiplicative inverse of a non-zero element.
#[inline]
pub fn inv(a: u8) -> u8 {
    debug_assert!(a != 0, "0 has no inverse");
    T.exp[255 - T.log[a as usize] as usize]
}

/// `dst += c · src` over the first `k` coefficients (addition is XOR).
#[inline]
fn axpy(dst: &mut Coeffs, c: u8, src: &Coeffs, k: usize) {
    if c == 0 {
        return;
    }
    for i in 0..k {
        dst[i] ^= mul(c, src[i]);
    }
}

/// The coefficient vectors a node holds for one batch, kept in reduced row-echelon form: the
/// rank is the number of rows, a new vector is innovative when it does not reduce to zero, and
/// fresh combinations are random combinations of the rows.
#[derive(Debug, Clone)]
pub struct Basis {
    k: usize,
    /// Rows with a leading 1 in column `pivots[i]`, every other row 0 in that column.
    rows: Vec<Coeffs>,
    pivots: Vec<usize>,
}

impl Basis {
    /// An empty basis for a batch of `k` native packets (1..=[`MAX_BATCH`]).
    pub fn new(k: usize) -> Basis {
        assert!((1..=MAX_BATCH).contains(&k), "batch size 1..=32");
        Basis {
            k,
            rows: Vec::with_capacity(k),
            pivots: Vec::with_capacity(k),
        }
    }

    /// The batch's source holds every native packet: the identity.
    pub fn full(k: usize) -> Basis {
        let mut b = Basis::new(k);
        for i in 0..k {
            let mut v = [0u8; MAX_BATCH];
            v[i] = 1;
            b.insert(&v);
        }
        b
    }

    /// Empties the basis for a new batch of `k` native packets, keeping its buffers (a
    /// forwarder's basis is reused batch after batch: no allocation in steady state).
    pub fn clear(&mut self, k: usize) {
        assert!((1..=MAX_BATCH).contains(&k), "batch size 1..=32");
        self.k = k;
        self.rows.clear();
        self.pivots.clear();
    }

    pub fn rank(&self) -> usize {
        self.rows.len()
    }

    /// Whether every native packet can be decoded.
    pub fn complete(&self) -> bool {
        self.rows.len() == self.k
    }

    /// `v` reduced by the basis (zero iff `v` is in its span).
    fn reduce(&self, v: &Coeffs) -> Coeffs {
        let mut r = *v;
        for (row, &p) in self.rows.iter().zip(&self.pivots) {
            let c = r[p];
            axpy(&mut r, c, row, self.k);
        }
        r
    }

    /// Whether `v` would raise the rank.
    pub fn is_innovative(&self, v: &Coeffs) -> bool {
        self.reduce(v)[..self.k].iter().any(|&c| c != 0)
    }

    /// Adds `v` if it is innovative; returns whether it was.
    pub fn insert(&mut self, v: &Coeffs) -> bool {
        let mut r = self.reduce(v);
        let Some(p) = r[..self.k].iter().position(|&c| c != 0) else {
            return false;
        };
        let s = inv(r[p]);
        for c in r[..self.k].iter_mut() {
            *c = mul(*c, s);
        }
        // Keep the form reduced: clear column p in the other rows.
        for row in self.rows.iter_mut() {
            let c = row[p];
            axpy(row, c, &r, self.k);
        }
        self.rows.push(r);
        self.pivots.push(p);
        true
    }

    /// A random linear combination of the rows (what a forwarder or the source sends): each
    /// row weighted by an independent uniform coefficient from `draw` (a byte source, the
    /// engine's stream of the node). Zero if the basis is empty.
    pub fn combination(&self, mut draw: impl FnMut() -> u8) -> Coeffs {
        let mut v = [0u8; MAX_BATCH];
        for row in &self.rows {
            let c = draw();
            axpy(&mut v, c, row, self.k);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn the_tables_make_a_field() {
        // 2 generates the multiplicative group: its 255 powers are the non-zero elements.
        let mut seen = [false; 256];
        for i in 0..255 {
            seen[T.exp[i] as usize] = true;
        }
        assert!(seen[1..].iter().all(|&s| s) && !seen[0]);
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1, "{a}");
        }
        // Multiplication against the definition: carry-less product reduced by 0x11d.
        let slow = |a: u8, b: u8| -> u8 {
            let (mut a, mut b, mut p) = (a as u16, b, 0u16);
            while b != 0 {
                if b & 1 != 0 {
                    p ^= a;
                }
                a <<= 1;
                if a & 0x100 != 0 {
                    a ^= 0x11d;
                }
                b >>= 1;
            }
            p as u8
        };
        for a in 0..=255u8 {
            for b in (0..=255u8).step_by(7) {
                assert_eq!(mul(a, b), slow(a, b), "{a} * {b}");
            }
        }
    }

    #[test]
    fn innovation_and_rank_are_exact() {
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let k = 32;
        let src = Basis::full(k);
        let mut dst = Basis::new(k);
        let mut sent = 0;
        while !dst.complete() {
            let v = src.combination(|| rng.gen());
            sent += 1;
            assert_eq!(dst.is_innovative(&v), dst.insert(&v));
            assert!(sent < 100);
        }
        // Uniform combinations over GF(256): 32 packets almost always suffice (about 0.4 %
        // of batches need one more), never fewer than k.
        assert!((32..=34).contains(&sent), "{sent}");
        // A complete node finds nothing innovative; a combination of a node's own rows never
        // innovates for it.
        assert!(!dst.is_innovative(&src.combination(|| rng.gen())));
        let mut half = Basis::new(k);
        for _ in 0..16 {
            half.insert(&src.combination(|| rng.gen()));
        }
        assert_eq!(half.rank(), 16);
        for _ in 0..100 {
            assert!(!half.is_innovative(&half.combination(|| rng.gen())));
        }
    }

    #[test]
    fn a_forwarder_passes_on_only_what_it_holds() {
        // Source -> forwarder (rank 10 of 32) -> destination: the destination's rank never
        // exceeds the forwarder's, however many combinations it receives from it.
        let mut rng = crate::sim::rng::stream(2, 0, "t");
        let k = 32;
        let src = Basis::full(k);
        let mut fwd = Basis::new(k);
        for _ in 0..10 {
            fwd.insert(&src.combination(|| rng.gen()));
        }
        let mut dst = Basis::new(k);
        for _ in 0..200 {
            dst.insert(&fwd.combination(|| rng.gen()));
        }
        assert_eq!(dst.rank(), 10);
    }
}
