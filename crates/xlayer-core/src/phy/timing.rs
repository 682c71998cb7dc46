//! Frame durations and the PHY timing constants the MAC uses.
//!
//! - 802.11b (HR/DSSS, 802.11-2016 §16, §17): slot 20 µs, SIFS 10 µs, aCWmin 31, aCWmax 1023;
//!   long PLCP preamble+header 192 µs (144 + 48 bits at 1 Mbit/s), short 96 µs (72 bits at
//!   1 Mbit/s + 48 bits at 2 Mbit/s); the PSDU time is rounded up to whole microseconds (the
//!   LENGTH field counts microseconds).
//! - ns2-2mbps: ns-2 `Mac/802_11` with the same DSSS timing and the 192 µs PLCP; PSDU time not
//!   rounded (ns-2 `txtime`).
//! - 802.11a (OFDM, §17): slot 9 µs, SIFS 16 µs, aCWmin 15, aCWmax 1023, 20 µs preamble+SIGNAL,
//!   4 µs symbols carrying `N_DBPS` bits, 16 service + 6 tail bits.

use super::error_model::{Modulation, OfdmMode};
use super::radio::{Preamble, Standard};
use crate::sim::SimTime;

#[derive(Debug, Clone, Copy)]
pub struct PhyTiming {
    pub standard: Standard,
    pub preamble: Preamble,
    pub slot: SimTime,
    pub sifs: SimTime,
}

/// How a frame's airtime splits: the PLCP part and the PSDU part, with their modulations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameTiming {
    /// Preamble + PLCP header.
    pub header: SimTime,
    pub header_modulation: Modulation,
    pub header_bits: f64,
    pub total: SimTime,
    pub payload_modulation: Modulation,
    pub payload_bits: f64,
}

fn ofdm_ndbps(rate: f64) -> u64 {
    (rate * 4.0).round() as u64 // bits per 4 µs symbol
}

impl PhyTiming {
    pub fn new(standard: Standard, preamble: Preamble) -> PhyTiming {
        match standard {
            Standard::Dot11b | Standard::Ns2 => PhyTiming {
                standard,
                preamble,
                slot: SimTime::from_us(20),
                sifs: SimTime::from_us(10),
            },
            Standard::Dot11a => PhyTiming {
                standard,
                preamble,
                slot: SimTime::from_us(9),
                sifs: SimTime::from_us(16),
            },
        }
    }

    /// Airtime of a PSDU of `bytes` bytes at `rate_mbps`, with its header/payload split.
    pub fn frame(&self, bytes: u32, rate_mbps: f64) -> FrameTiming {
        let bits = bytes as u64 * 8;
        match self.standard {
            Standard::Dot11a => {
                let ndbps = ofdm_ndbps(rate_mbps);
                let symbols = (16 + bits + 6).div_ceil(ndbps);
                let header = SimTime::from_us(20);
                FrameTiming {
                    header,
                    header_modulation: Modulation::Ofdm(OfdmMode::Bpsk12),
                    header_bits: 24.0,
                    total: header + SimTime::from_us(4 * symbols),
                    payload_modulation: Modulation::Ofdm(OfdmMode::for_rate(rate_mbps)),
                    payload_bits: bits as f64,
                }
            }
            Standard::Dot11b | Standard::Ns2 => {
                let (header, header_modulation, header_bits) = match self.preamble {
                    Preamble::Long => (SimTime::from_us(192), Modulation::Dbpsk, 192.0),
                    Preamble::Short => (SimTime::from_us(96), Modulation::Dqpsk, 120.0),
                };
                // bits / (rate Mbit/s) microseconds, in nanoseconds.
                let ns = (bits as f64 * 1000.0 / rate_mbps).ceil() as u64;
                let payload = if self.standard == Standard::Dot11b {
                    ns.div_ceil(1000) * 1000
                } else {
                    ns
                };
                FrameTiming {
                    header,
                    header_modulation,
                    header_bits,
                    total: header + SimTime::from_ns(payload),
                    payload_modulation: Modulation::for_rate(self.standard, rate_mbps),
                    payload_bits: bits as f64,
                }
            }
        }
    }

    /// Airtime of a PSDU whose payload has its own FEC (`code`: a `phy::fec::CodeRate` id,
    /// 802.11a BPSK at `rate_mbps` = 12 · R; 0: the standard's code for the rate, as
    /// [`PhyTiming::frame`]). The SIGNAL field stays BPSK 1/2.
    pub fn frame_coded(&self, bytes: u32, rate_mbps: f64, code: u8) -> FrameTiming {
        let mut t = self.frame(bytes, rate_mbps);
        if let (Standard::Dot11a, Some(c)) = (self.standard, super::fec::CodeRate::from_id(code)) {
            t.payload_modulation = Modulation::Ofdm(OfdmMode::bpsk_coded(c));
        }
        t
    }

    pub fn duration(&self, bytes: u32, rate_mbps: f64) -> SimTime {
        self.frame(bytes, rate_mbps).total
    }

    /// Noise bandwidth in Hz (22 MHz DSSS channel, 20 MHz OFDM channel).
    pub fn bandwidth_hz(&self) -> f64 {
        match self.standard {
            Standard::Dot11a => 20e6,
            _ => 22e6,
        }
    }
}

/// The airtimes of the last frames transmitted, by (bytes, rate, code): a run sends a few
/// frame sizes at a few rates (DATA, ACK, RTS, CTS, probes), and every transmission needs its
/// airtime. [`PhyTiming::frame_coded`] costs a float division, a rounding call and an integer
/// division; a hit here costs a compare. Direct-mapped, eight entries, by the frame's size; a
/// miss computes and replaces, so the answer is always `frame_coded`'s.
#[derive(Debug, Default, Clone)]
pub struct FrameMemo {
    entries: [Option<(u32, u64, u8, FrameTiming)>; 8],
}

impl FrameMemo {
    /// `timing.frame_coded(bytes, rate_mbps, code)`, remembered.
    #[inline]
    pub fn frame_coded(
        &mut self,
        timing: &PhyTiming,
        bytes: u32,
        rate_mbps: f64,
        code: u8,
    ) -> FrameTiming {
        let e = &mut self.entries[(bytes ^ (bytes >> 3) ^ code as u32) as usize & 7];
        let rate = rate_mbps.to_bits();
        match *e {
            Some((b, r, c, t)) if b == bytes && r == rate && c == code => t,
            _ => {
                let t = timing.frame_coded(bytes, rate_mbps, code);
                *e = Some((bytes, rate, code, t));
                t
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_answers_what_frame_coded_computes() {
        for (std, pre) in [
            (Standard::Dot11b, Preamble::Long),
            (Standard::Dot11b, Preamble::Short),
            (Standard::Ns2, Preamble::Long),
            (Standard::Dot11a, Preamble::Long),
        ] {
            let t = PhyTiming::new(std, pre);
            let mut memo = FrameMemo::default();
            // Sizes that share a memo entry, rates and codes that differ at one size, in an
            // order that evicts and revisits entries.
            let rates: &[f64] = if std == Standard::Dot11a {
                &[6.0, 12.0, 54.0]
            } else {
                &[1.0, 2.0, 11.0]
            };
            for round in 0..3u32 {
                for bytes in [14u32, 20, 14 + 8, 1064, 1064 + 64, 1500, 28, 0] {
                    for &rate in rates {
                        for code in [0u8, 1, 2] {
                            let b = bytes + round % 2;
                            assert_eq!(
                                memo.frame_coded(&t, b, rate, code),
                                t.frame_coded(b, rate, code),
                                "{std:?} {b} bytes at {rate} Mbit/s, code {code}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dsss_long_preamble_ack_at_1_mbps_is_304_us() {
        let t = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        assert_eq!(t.duration(14, 1.0), SimTime::from_us(192 + 112));
    }

    #[test]
    fn cck_11_rounds_psdu_time_up_to_microseconds() {
        let t = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        // 1064 bytes * 8 / 11 = 773.8 us -> 774 us
        assert_eq!(t.duration(1064, 11.0), SimTime::from_us(192 + 774));
    }

    #[test]
    fn ofdm_6_mbps_ack_is_44_us() {
        // 14-byte ACK: 16 + 112 + 6 = 134 bits / 24 per symbol = 6 symbols -> 20 + 24 = 44 us.
        let t = PhyTiming::new(Standard::Dot11a, Preamble::Long);
        assert_eq!(t.duration(14, 6.0), SimTime::from_us(44));
    }
}
