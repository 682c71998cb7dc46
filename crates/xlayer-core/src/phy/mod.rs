//! The physical layer: propagation, noise, SINR reception, rates and error models.
//!
//! Depends only on `sim` and the scenario types. One [`Phy`] per node tracks every signal
//! arriving at its antenna. It locks onto a frame whose power reaches the reception threshold
//! while it is idle, and integrates the frame's SINR over *chunks* of constant interference
//! (cumulative interference of every overlapping signal, plus thermal noise). At the frame's end
//! the error model decides: with `ber`, the frame survives with probability
//! `Π_chunks (1 − BER(SINR))^bits`; with `threshold`, it survives if its SINR never fell below the
//! rate's threshold. A stronger frame arriving during the current frame's PLCP preamble takes the
//! receiver over when it is `capture_db` stronger (preamble capture). Carrier sense is busy while
//! the node transmits, while it receives a frame, or while the total received energy reaches the
//! carrier-sense threshold — a threshold apart from the reception one, so a 550 m carrier-sense
//! range can surround a 250 m reception range as in ns-2.
//!
//! Thermal noise: `−174 dBm/Hz + 10 log10(bandwidth) + noise figure` (ns-3 `YansWifiPhy`, noise
//! figure default 7 dB). Injected noise ([`noise`], the scenario's `[[noise]]`) adds to it while
//! a source is on; carrier sense counts it only for sources that ask.

pub mod error_model;
pub mod fec;
pub mod noise;
pub mod propagation;
pub mod radio;
pub mod timing;
pub mod tuning;

use rand::Rng;

use crate::sim::rng::Stream;
use crate::sim::SimTime;
use error_model::{chunk_ln_success, Modulation};
use radio::{ErrorModelKind, Standard};
pub use timing::{FrameTiming, PhyTiming};

/// Radio parameters shared by every node of a scenario.
#[derive(Debug, Clone)]
pub struct PhyConfig {
    pub standard: Standard,
    pub timing: PhyTiming,
    pub error_model: ErrorModelKind,
    pub rx_threshold_mw: f64,
    pub cs_threshold_mw: f64,
    pub noise_mw: f64,
    /// Power ratio for preamble capture (`None`: no capture).
    pub capture_ratio: Option<f64>,
    /// Linear SINR thresholds of the threshold model, per rate of the standard.
    pub sinr_thresholds: Vec<(f64, f64)>,
}

impl PhyConfig {
    fn sinr_threshold(&self, rate: f64) -> f64 {
        self.sinr_thresholds
            .iter()
            .find(|(r, _)| *r == rate)
            .map(|(_, t)| *t)
            .unwrap_or(1.0)
    }
}

/// What a receiver needs to know about a transmission on the air.
#[derive(Debug, Clone, Copy)]
pub struct PhyTx {
    pub src: u32,
    pub start: SimTime,
    pub rate_mbps: f64,
    pub timing: FrameTiming,
}

#[derive(Debug, Clone, Copy)]
struct Signal {
    tx: u32,
    power_mw: f64,
}

#[derive(Debug, Clone, Copy)]
struct Reception {
    tx: u32,
    power_mw: f64,
    header_end: SimTime,
    end: SimTime,
    rate_mbps: f64,
    header_mod: Modulation,
    payload_mod: Modulation,
    header_bits_per_ns: f64,
    payload_bits_per_ns: f64,
    chunk_start: SimTime,
    interference_mw: f64,
    min_sinr: f64,
    ln_ok: f64,
    /// Injected noise was on at some time during the reception.
    noisy: bool,
    /// The largest thermal plus injected noise over the reception (mW).
    noise_mw: f64,
}

/// What the receiver measured over the last frame it finished receiving (decoded or lost), for
/// captures: its power, the noise (thermal plus injected, the largest over the frame) and its
/// lowest SINR, the one the threshold error model compares.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RxReport {
    pub power_mw: f64,
    pub noise_mw: f64,
    pub min_sinr: f64,
}

/// The outcome of a frame this node was receiving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxOutcome {
    /// Decoded: hand transmission `tx` to the MAC.
    Ok { tx: u32 },
    /// Lost to noise or interference (the MAC then defers by EIFS).
    Error { tx: u32 },
}

/// Per-node PHY state.
#[derive(Debug, Default)]
pub struct Phy {
    signals: Vec<Signal>,
    /// Total power of `signals`, kept as a running sum so carrier sense and interference cost
    /// O(1) per event; summed afresh whenever two signals or fewer remain, which bounds
    /// rounding drift.
    energy_mw: f64,
    rx: Option<Reception>,
    transmitting: bool,
    /// Frames lost while locked (interference, noise, capture, or our own transmission).
    pub rx_errors: u64,
    /// Decoded frames.
    pub rx_ok: u64,
    /// Transmit power offset from the scenario's `tx_power_dbm` (tuning layer; ≤ 0 dB), and
    /// the factor it multiplies received powers by.
    pub tx_power_offset_db: f64,
    tx_power_factor: f64,
    /// Injected noise at the antenna now (mW), the part of it carrier sense counts, and how
    /// many sources are on (at zero the sums are reset exactly).
    injected_mw: f64,
    injected_cs_mw: f64,
    injected_sources: u32,
    /// Since when injected noise has been on, and the time under noise before that.
    noise_since: Option<SimTime>,
    noise_before: SimTime,
    /// Frames lost while locked whose reception overlapped injected noise (also in
    /// `rx_errors`).
    pub rx_errors_noise: u64,
    /// The last frame received to its end.
    last_rx: RxReport,
}

impl Phy {
    pub fn new() -> Phy {
        Phy {
            signals: Vec::with_capacity(16),
            tx_power_factor: 1.0,
            ..Default::default()
        }
    }

    /// Sets the transmit power offset (dB, at most 0) and the factor it makes.
    pub fn set_tx_power_offset_db(&mut self, db: f64) {
        self.tx_power_offset_db = db;
        self.tx_power_factor = 10f64.powf(db / 10.0);
    }

    /// What received powers are multiplied by: the transmit power offset as a factor.
    #[inline]
    pub fn tx_power_factor(&self) -> f64 {
        self.tx_power_factor
    }

    /// Physical carrier sense.
    #[inline]
    pub fn busy(&self, cfg: &PhyConfig) -> bool {
        self.transmitting
            || self.rx.is_some()
            || self.total_mw() + self.injected_cs_mw >= cfg.cs_threshold_mw
    }

    /// Injected noise power at the antenna now, mW.
    pub fn injected_noise_mw(&self) -> f64 {
        self.injected_mw
    }

    /// Time spent under injected noise up to `now`.
    pub fn noise_time(&self, now: SimTime) -> SimTime {
        self.noise_before + self.noise_since.map_or(SimTime::ZERO, |t| now - t)
    }

    /// A noise source reaching this node with `mw` switches on (`on`) or off at `now`. The
    /// reception under way sees the new noise from now on (its SINR chunk closes first).
    pub fn switch_injected_noise(
        &mut self,
        now: SimTime,
        mw: f64,
        carrier_sense: bool,
        on: bool,
        cfg: &PhyConfig,
    ) {
        let injected = self.injected_mw;
        if let Some(rx) = self.rx.as_mut() {
            Self::close_chunk(rx, now, cfg, injected);
        }
        if on {
            self.injected_sources += 1;
            self.injected_mw += mw;
            if carrier_sense {
                self.injected_cs_mw += mw;
            }
            if self.noise_since.is_none() {
                self.noise_since = Some(now);
            }
        } else {
            self.injected_sources = self.injected_sources.saturating_sub(1);
            self.injected_mw -= mw;
            if carrier_sense {
                self.injected_cs_mw -= mw;
            }
            if self.injected_sources == 0 {
                self.injected_mw = 0.0;
                self.injected_cs_mw = 0.0;
                if let Some(t) = self.noise_since.take() {
                    self.noise_before += now - t;
                }
            }
        }
        if let (Some(rx), true) = (self.rx.as_mut(), self.injected_mw > 0.0) {
            rx.noisy = true;
        }
    }

    pub fn is_transmitting(&self) -> bool {
        self.transmitting
    }

    pub fn is_receiving(&self) -> bool {
        self.rx.is_some()
    }

    #[inline]
    fn total_mw(&self) -> f64 {
        self.energy_mw
    }

    /// Integrates the reception's SINR from its chunk start to `now`, with `injected_mw` of
    /// injected noise over the chunk.
    fn close_chunk(rx: &mut Reception, now: SimTime, cfg: &PhyConfig, injected_mw: f64) {
        if now <= rx.chunk_start {
            return;
        }
        let sinr = rx.power_mw / (cfg.noise_mw + injected_mw + rx.interference_mw);
        rx.min_sinr = rx.min_sinr.min(sinr);
        rx.noise_mw = rx.noise_mw.max(cfg.noise_mw + injected_mw);
        if cfg.error_model == ErrorModelKind::Ber {
            let (a, b) = (rx.chunk_start, now);
            let header_ns = b.min(rx.header_end).ns().saturating_sub(a.ns());
            let payload_ns = b.ns().saturating_sub(a.max(rx.header_end).ns());
            if header_ns > 0 {
                rx.ln_ok += chunk_ln_success(
                    rx.header_mod,
                    sinr,
                    header_ns as f64 * rx.header_bits_per_ns,
                );
            }
            if payload_ns > 0 {
                rx.ln_ok += chunk_ln_success(
                    rx.payload_mod,
                    sinr,
                    payload_ns as f64 * rx.payload_bits_per_ns,
                );
            }
        }
        rx.chunk_start = now;
    }

    fn lock(&mut self, now: SimTime, tx: u32, power_mw: f64, info: &PhyTx) {
        let t = &info.timing;
        let payload_ns = (t.total - t.header).ns().max(1);
        self.rx = Some(Reception {
            tx,
            power_mw,
            // `now` is the frame's arrival here (locking happens only at a signal's start), which
            // is later than `info.start` by the propagation delay.
            header_end: now + t.header,
            end: now + t.total,
            rate_mbps: info.rate_mbps,
            header_mod: t.header_modulation,
            payload_mod: t.payload_modulation,
            header_bits_per_ns: t.header_bits / t.header.ns().max(1) as f64,
            payload_bits_per_ns: t.payload_bits / payload_ns as f64,
            chunk_start: now,
            interference_mw: (self.energy_mw - power_mw).max(0.0),
            min_sinr: f64::INFINITY,
            ln_ok: 0.0,
            noisy: self.injected_mw > 0.0,
            noise_mw: 0.0,
        });
    }

    /// The first bit of `tx` arrives. Returns true if the receiver locked onto it.
    pub fn signal_start(
        &mut self,
        now: SimTime,
        tx: u32,
        power_mw: f64,
        info: &PhyTx,
        cfg: &PhyConfig,
    ) -> bool {
        self.signals.push(Signal { tx, power_mw });
        self.energy_mw += power_mw;
        if self.transmitting {
            return false;
        }
        match self.rx {
            None => {
                if power_mw >= cfg.rx_threshold_mw {
                    self.lock(now, tx, power_mw, info);
                    true
                } else {
                    false
                }
            }
            Some(ref mut rx) => {
                let capture = match cfg.capture_ratio {
                    Some(ratio) => {
                        now < rx.header_end
                            && power_mw >= rx.power_mw * ratio
                            && power_mw >= cfg.rx_threshold_mw
                    }
                    None => false,
                };
                if capture {
                    self.rx_errors += 1;
                    self.lock(now, tx, power_mw, info);
                    true
                } else {
                    Self::close_chunk(rx, now, cfg, self.injected_mw);
                    rx.interference_mw += power_mw;
                    false
                }
            }
        }
    }

    /// The last bit of `tx` arrives. Returns the outcome if it was the frame being received.
    pub fn signal_end(
        &mut self,
        now: SimTime,
        tx: u32,
        cfg: &PhyConfig,
        rng: &mut Stream,
    ) -> Option<RxOutcome> {
        if let Some(i) = self.signals.iter().position(|s| s.tx == tx) {
            let gone = self.signals.swap_remove(i);
            self.energy_mw = if self.signals.len() <= 2 {
                self.signals.iter().map(|s| s.power_mw).sum()
            } else {
                self.energy_mw - gone.power_mw
            };
        }
        let rx = self.rx.as_mut()?;
        Self::close_chunk(rx, now, cfg, self.injected_mw);
        if rx.tx != tx {
            rx.interference_mw = (self.energy_mw - rx.power_mw).max(0.0);
            return None;
        }
        debug_assert_eq!(rx.end, now);
        let ok = match cfg.error_model {
            ErrorModelKind::Threshold => rx.min_sinr >= cfg.sinr_threshold(rx.rate_mbps),
            ErrorModelKind::Ber => rng.gen::<f64>() < rx.ln_ok.exp(),
        };
        let noisy = rx.noisy;
        self.last_rx = RxReport {
            power_mw: rx.power_mw,
            noise_mw: rx.noise_mw,
            min_sinr: rx.min_sinr,
        };
        self.rx = None;
        if ok {
            self.rx_ok += 1;
            Some(RxOutcome::Ok { tx })
        } else {
            self.rx_errors += 1;
            self.rx_errors_noise += noisy as u64;
            Some(RxOutcome::Error { tx })
        }
    }

    /// What the receiver measured over the frame whose end `signal_end` last reported.
    pub fn last_rx(&self) -> RxReport {
        self.last_rx
    }

    /// The node starts transmitting: a frame being received is lost (half duplex).
    pub fn start_tx(&mut self) {
        if self.rx.take().is_some() {
            self.rx_errors += 1;
        }
        self.transmitting = true;
    }

    pub fn end_tx(&mut self) {
        self.transmitting = false;
    }
}

/// Thermal noise power in mW for a bandwidth and noise figure.
pub fn thermal_noise_mw(bandwidth_hz: f64, noise_figure_db: f64) -> f64 {
    propagation::dbm_to_mw(-174.0 + 10.0 * bandwidth_hz.log10() + noise_figure_db)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::radio::Preamble;

    fn cfg(model: ErrorModelKind, capture: Option<f64>) -> PhyConfig {
        let timing = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        PhyConfig {
            standard: Standard::Dot11b,
            timing,
            error_model: model,
            rx_threshold_mw: 1e-9,
            cs_threshold_mw: 1e-10,
            noise_mw: thermal_noise_mw(22e6, 7.0),
            capture_ratio: capture,
            sinr_thresholds: vec![(11.0, 10f64.powf(0.8))],
        }
    }

    fn tx(start: u64) -> PhyTx {
        let timing = PhyTiming::new(Standard::Dot11b, Preamble::Long);
        PhyTx {
            src: 0,
            start: SimTime(start),
            rate_mbps: 11.0,
            timing: timing.frame(1064, 11.0),
        }
    }

    #[test]
    fn lone_strong_frame_is_received() {
        let c = cfg(ErrorModelKind::Ber, None);
        let mut p = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let t = tx(0);
        assert!(p.signal_start(SimTime(0), 7, 1e-6, &t, &c));
        assert!(p.busy(&c));
        assert_eq!(
            p.signal_end(SimTime(0) + t.timing.total, 7, &c, &mut rng),
            Some(RxOutcome::Ok { tx: 7 })
        );
        assert!(!p.busy(&c));
    }

    #[test]
    fn equal_power_overlap_destroys_the_frame() {
        for model in [ErrorModelKind::Ber, ErrorModelKind::Threshold] {
            let c = cfg(model, None);
            let mut p = Phy::new();
            let mut rng = crate::sim::rng::stream(1, 0, "t");
            let (a, b) = (tx(0), tx(100_000));
            p.signal_start(SimTime(0), 1, 1e-6, &a, &c);
            assert!(!p.signal_start(SimTime(100_000), 2, 1e-6, &b, &c));
            assert_eq!(
                p.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
                Some(RxOutcome::Error { tx: 1 })
            );
            assert_eq!(
                p.signal_end(b.start + b.timing.total, 2, &c, &mut rng),
                None
            );
        }
    }

    #[test]
    fn much_stronger_frame_survives_weak_interference() {
        let c = cfg(ErrorModelKind::Threshold, None);
        let mut p = Phy::new();
        let mut rng = crate::sim::rng::stream(1, 0, "t");
        let (a, b) = (tx(0), tx(100_000));
        p.signal_start(SimTime(0), 1, 1e-6, &a, &c);
        p.signal_start(SimTime(100_000), 2, 1e-9, &b, &c); // 30 dB weaker
        assert_eq!(
            p.signal_end(a.start + a.timing.total, 1, &c, &mut rng),
            Some(RxOutcome::Ok { tx: 1 })
        );
    }

    #[test]
    fn stronger_frame_captures_during_preamble_only() {
        let c = cfg(ErrorModelKind::Threshold, Some(10.0));
        let mut p = Phy::new();
        let (a, b) = (tx(0), tx(50_000));
        p.signal_start(SimTime(0), 1, 1e-8, &a, &c);
        assert!(
            p.signal_start(SimTime(50_000), 2, 1e-6, &b, &c),
            "inside the 192 us preamble"
        );
        let mut q = Phy::new();
        let late = tx(300_000);
        q.signal_start(SimTime(0), 1, 1e-8, &a, &c);
        assert!(
            !q.signal_start(SimTime(300_000), 2, 1e-6, &late, &c),
            "after the preamble"
        );
    }

    #[test]
    fn energy_below_reception_threshold_still_senses_busy() {
        let c = cfg(ErrorModelKind::Ber, None);
        let mut p = Phy::new();
        assert!(!p.signal_start(SimTime(0), 1, 5e-10, &tx(0), &c));
        assert!(p.busy(&c));
    }
}
