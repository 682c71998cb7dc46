//! Simulated time: integer nanoseconds, never floating-point clocks.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant or a span of simulated time, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ns(ns: u64) -> SimTime {
        SimTime(ns)
    }
    pub const fn from_us(us: u64) -> SimTime {
        SimTime(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> SimTime {
        SimTime(ms * 1_000_000)
    }
    /// Rounds to the nearest nanosecond; negative or NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> SimTime {
        if s.is_nan() || s <= 0.0 {
            SimTime(0)
        } else if s >= u64::MAX as f64 / 1e9 {
            SimTime::MAX
        } else {
            SimTime((s * 1e9).round() as u64)
        }
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub const fn ns(self) -> u64 {
        self.0
    }
    pub fn saturating_sub(self, o: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(o.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, o: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(o.0))
    }
}

impl AddAssign for SimTime {
    #[inline]
    fn add_assign(&mut self, o: SimTime) {
        self.0 = self.0.saturating_add(o.0);
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    #[inline]
    fn sub(self, o: SimTime) -> SimTime {
        debug_assert!(self.0 >= o.0, "negative time span");
        SimTime(self.0 - o.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_trip_to_the_nanosecond() {
        assert_eq!(SimTime::from_secs_f64(1.5).ns(), 1_500_000_000);
        assert_eq!(SimTime::from_us(192).ns(), 192_000);
        assert_eq!(SimTime::from_secs_f64(-1.0), SimTime::ZERO);
    }
}
