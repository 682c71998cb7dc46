//! Per-link loss probabilities, applied at reception on top of the SINR model.
//!
//! Depends on `sim` only. A directed link `from → to` may carry a loss probability `p`: a frame
//! that the PHY decoded correctly at `to` from `from` is then dropped with probability `p`, as if
//! it had been received in error (the MAC sees a corrupted frame and applies EIFS). Every frame
//! is subject to it — data, ACK, RTS/CTS and broadcast control packets alike — so with loss `p_f`
//! forwards and `p_r` backwards a unicast attempt succeeds with probability `(1-p_f)(1-p_r)`, the
//! model behind ETX (De Couto et al., MobiCom 2003). Losses can be fixed per link, drawn per
//! link from a range with a seed (DPCLO §V-B, Fig. 4: uniform in [0, 0.6]), and changed at
//! scheduled times (scenario `events`).
//!
//! The draw uses the receiver's stream [`STREAM`] and happens only on links whose loss is
//! above zero, so scenarios without lossy links draw nothing and run exactly as before.

use rand::Rng;

use crate::sim::rng::{stream, Stream};

/// Random stream of each receiver for its loss draws.
pub const STREAM: &str = "net.link_loss";
/// Random stream (node [`crate::sim::rng::GLOBAL`]) that draws per-link losses from a range.
pub const RANDOM_STREAM: &str = "net.link_loss.random";

/// Loss probability of every directed channel link.
#[derive(Debug)]
pub struct LinkLoss {
    /// `targets[src]`: receivers of `src`, in the order of the world's link lists.
    targets: Vec<Vec<u32>>,
    /// `loss[src][k]`: loss probability of the link `src → targets[src][k]`.
    loss: Vec<Vec<f64>>,
    rng: Vec<Stream>,
}

impl LinkLoss {
    /// No losses yet over the links `targets[src]` (the world's link lists, in their order).
    pub fn new(seed: u64, targets: Vec<Vec<u32>>) -> LinkLoss {
        let n = targets.len();
        LinkLoss {
            loss: targets.iter().map(|t| vec![0.0; t.len()]).collect(),
            targets,
            rng: (0..n as u32).map(|i| stream(seed, i, STREAM)).collect(),
        }
    }

    fn index(&self, from: u32, to: u32) -> Option<usize> {
        self.targets
            .get(from as usize)?
            .iter()
            .position(|&t| t == to)
    }

    /// Sets the loss of `from → to`. Returns false if `to` is not within `from`'s channel reach.
    pub fn set(&mut self, from: u32, to: u32, p: f64) -> bool {
        debug_assert!((0.0..=1.0).contains(&p));
        match self.index(from, to) {
            Some(k) => {
                self.loss[from as usize][k] = p;
                true
            }
            None => false,
        }
    }

    /// Whether `to` is within `from`'s channel reach (a link that can be made lossy).
    pub fn has_link(&self, from: u32, to: u32) -> bool {
        self.index(from, to).is_some()
    }

    /// Loss probability of `from → to` (0 where none was set or out of reach).
    pub fn get(&self, from: u32, to: u32) -> f64 {
        self.index(from, to)
            .map(|k| self.loss[from as usize][k])
            .unwrap_or(0.0)
    }

    /// Whether the frame that `src` sent over its `k`-th link (to `rx`) is lost.
    #[inline]
    pub fn lost(&mut self, src: u32, k: usize, rx: u32) -> bool {
        let p = self.loss[src as usize][k];
        p > 0.0 && self.rng[rx as usize].gen::<f64>() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_fraction_matches_the_set_probability_per_direction() {
        let mut ll = LinkLoss::new(5, vec![vec![1], vec![0]]);
        assert!(ll.set(0, 1, 0.3));
        assert!(!ll.set(0, 7, 0.3), "no such link");
        let n = 100_000;
        let lost = (0..n).filter(|_| ll.lost(0, 0, 1)).count() as f64 / n as f64;
        // 5 standard deviations of a binomial proportion.
        let sd = (0.3f64 * 0.7 / n as f64).sqrt();
        assert!((lost - 0.3).abs() < 5.0 * sd, "{lost}");
        assert!((0..1000).all(|_| !ll.lost(1, 0, 0)), "reverse is lossless");
        assert_eq!(ll.get(0, 1), 0.3);
        assert_eq!(ll.get(1, 0), 0.0);
    }
}
