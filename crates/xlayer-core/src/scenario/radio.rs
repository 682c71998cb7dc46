//! The `[radio]` section: the standard and its rates, propagation, error model and fading
//! ([`Radio`] and its enums), and its validation: rates the standard offers, the preamble, a range
//! or a threshold (not both), positive physical values. `Radio::validate` needs no other section;
//! it fills in the defaults that depend on the standard, so the written scenario states them.

use serde::{Deserialize, Serialize};

use super::check::{bad, default_from_serde, positive};
use crate::error::XlError;
use crate::phy::propagation::{friis_loss_db, Propagation, SPEED_OF_LIGHT};
pub use crate::phy::radio::{
    rate_set, ErrorModelKind, Fading, Preamble, PropagationKind, Standard, WeakInterference,
};

default_from_serde!(Radio);

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Radio {
    #[serde(default = "Radio::default_standard")]
    pub standard: Standard,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_rate_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_rate_mbps: Option<f64>,
    #[serde(default = "Radio::default_preamble")]
    pub preamble: Preamble,
    #[serde(default = "Radio::default_propagation")]
    pub propagation: PropagationKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_power_dbm: Option<f64>,
    #[serde(default = "Radio::default_antenna_height")]
    pub antenna_height_m: f64,
    #[serde(default = "Radio::default_exponent")]
    pub path_loss_exponent: f64,
    #[serde(default = "Radio::default_ref_distance")]
    pub reference_distance_m: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_range_m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cs_range_m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_threshold_dbm: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cs_threshold_dbm: Option<f64>,
    #[serde(default = "Radio::default_noise_figure")]
    pub noise_figure_db: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_model: Option<ErrorModelKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sinr_threshold_db: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_db: Option<f64>,
    #[serde(default)]
    pub shadowing_sigma_db: f64,
    #[serde(default = "Radio::default_fading")]
    pub fading: Fading,
    #[serde(default)]
    pub rts_cts: bool,
    #[serde(default)]
    pub rts_threshold_bytes: u32,
    /// How signals below both thresholds reach receivers: in bulk (default) or as events.
    #[serde(default)]
    pub weak_interference: WeakInterference,
    /// Preamble detection (`crate::phy`, "Preamble detection"): a receiver locks onto a frame
    /// only if its preamble's SINR and power reach the two fields below. Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preamble_detection: bool,
    /// The SINR (dB) a preamble needs; with detection on, 4 dB by default (ns-3 3.44
    /// `ThresholdPreambleDetectionModel::Threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preamble_detection_snr_db: Option<f64>,
    /// The power (dBm) a preamble needs; with detection on, −82 dBm by default (ns-3 3.44
    /// `ThresholdPreambleDetectionModel::MinimumRssi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preamble_detection_min_rssi_dbm: Option<f64>,
}

impl Radio {
    /// The path-loss model this radio section describes.
    pub fn propagation(&self) -> Propagation {
        let r = self;
        let lambda = SPEED_OF_LIGHT / (r.frequency_mhz.unwrap_or(2412.0) * 1e6);
        match r.propagation {
            PropagationKind::FreeSpace => Propagation::FreeSpace { lambda },
            PropagationKind::TwoRayGround => Propagation::TwoRayGround {
                lambda,
                ht: r.antenna_height_m,
                hr: r.antenna_height_m,
            },
            PropagationKind::LogDistance => Propagation::LogDistance {
                exponent: r.path_loss_exponent,
                d0: r.reference_distance_m,
                l0_db: friis_loss_db(lambda, r.reference_distance_m),
            },
            PropagationKind::Range => Propagation::Range {
                range_m: r.tx_range_m.unwrap_or(250.0),
            },
        }
    }

    fn default_standard() -> Standard {
        Standard::Dot11b
    }
    fn default_preamble() -> Preamble {
        Preamble::Long
    }
    fn default_propagation() -> PropagationKind {
        PropagationKind::TwoRayGround
    }
    fn default_antenna_height() -> f64 {
        1.5
    }
    fn default_exponent() -> f64 {
        3.0
    }
    fn default_ref_distance() -> f64 {
        1.0
    }
    fn default_noise_figure() -> f64 {
        7.0
    }
    fn default_fading() -> Fading {
        Fading::None
    }
    pub fn data_rate(&self) -> f64 {
        self.data_rate_mbps.unwrap_or(match self.standard {
            Standard::Dot11b => 11.0,
            Standard::Dot11a => 6.0,
            Standard::Ns2 => 2.0,
        })
    }
    pub fn basic_rate(&self) -> f64 {
        self.basic_rate_mbps.unwrap_or(match self.standard {
            Standard::Dot11b | Standard::Ns2 => 1.0,
            Standard::Dot11a => 6.0,
        })
    }
}

impl Radio {
    /// Checks the radio's values and fills in the defaults its standard gives: the data and basic
    /// rates, frequency, transmit power, error model and (ns-2) capture threshold.
    pub(super) fn validate(&mut self) -> Result<(), XlError> {
        let r = self;
        let rates = rate_set(r.standard);
        let std_name = serde_json::to_string(&r.standard).unwrap_or_default();
        for (field, v) in [
            ("radio.data_rate_mbps", r.data_rate()),
            ("radio.basic_rate_mbps", r.basic_rate()),
        ] {
            if !rates.contains(&v) {
                return Err(bad(
                    field,
                    format!("{v} Mbit/s is not a rate of {std_name}; allowed: {rates:?}"),
                ));
            }
        }
        r.data_rate_mbps = Some(r.data_rate());
        r.basic_rate_mbps = Some(r.basic_rate());
        if r.preamble == Preamble::Short && r.standard != Standard::Dot11b {
            return Err(bad("radio.preamble", "\"short\" exists only for 802.11b"));
        }
        if r.preamble == Preamble::Short && (r.data_rate() == 1.0 || r.basic_rate() == 1.0) {
            return Err(bad("radio.preamble", "the short preamble cannot carry 1 Mbit/s frames (802.11-2016 §16.2.2.3); use 2 Mbit/s or more"));
        }
        if r.frequency_mhz.is_none() {
            r.frequency_mhz = Some(match r.standard {
                Standard::Dot11b => 2412.0,
                Standard::Dot11a => 5180.0,
                Standard::Ns2 => 914.0,
            });
        }
        positive("radio.frequency_mhz", r.frequency_mhz.unwrap())?;
        if r.tx_power_dbm.is_none() {
            // ns-3 YansWifiPhy TxPowerStart/End default 16.0206 dBm; ns-2 Phy/WirelessPhy Pt_ 0.28183815 W.
            r.tx_power_dbm = Some(match r.standard {
                Standard::Ns2 => 24.4998,
                _ => 16.0206,
            });
        }
        if !r.tx_power_dbm.unwrap().is_finite() {
            return Err(bad("radio.tx_power_dbm", "must be a finite number"));
        }
        positive("radio.antenna_height_m", r.antenna_height_m)?;
        positive("radio.path_loss_exponent", r.path_loss_exponent)?;
        positive("radio.reference_distance_m", r.reference_distance_m)?;
        if !(r.noise_figure_db.is_finite() && r.noise_figure_db >= 0.0) {
            return Err(bad(
                "radio.noise_figure_db",
                format!("must be >= 0, found {}", r.noise_figure_db),
            ));
        }
        if !(r.shadowing_sigma_db.is_finite() && r.shadowing_sigma_db >= 0.0) {
            return Err(bad(
                "radio.shadowing_sigma_db",
                format!("must be >= 0, found {}", r.shadowing_sigma_db),
            ));
        }
        if let Some(v) = r.tx_range_m {
            positive("radio.tx_range_m", v)?;
            if r.rx_threshold_dbm.is_some() {
                return Err(bad(
                    "radio.rx_threshold_dbm",
                    "give either tx_range_m or rx_threshold_dbm, not both",
                ));
            }
        }
        if let Some(v) = r.cs_range_m {
            positive("radio.cs_range_m", v)?;
            if r.cs_threshold_dbm.is_some() {
                return Err(bad(
                    "radio.cs_threshold_dbm",
                    "give either cs_range_m or cs_threshold_dbm, not both",
                ));
            }
            if r.propagation == PropagationKind::Range {
                return Err(bad(
                    "radio.cs_range_m",
                    "not used with propagation = \"range\": nothing is heard beyond tx_range_m",
                ));
            }
            if let Some(t) = r.tx_range_m {
                if v < t {
                    return Err(bad(
                        "radio.cs_range_m",
                        format!("must be at least tx_range_m ({t}), found {v}"),
                    ));
                }
            }
        }
        if r.propagation == PropagationKind::Range && r.tx_range_m.is_none() {
            return Err(bad(
                "radio.tx_range_m",
                "propagation = \"range\" needs tx_range_m (the cut-off distance)",
            ));
        }
        if r.error_model.is_none() {
            r.error_model = Some(match r.standard {
                Standard::Dot11b | Standard::Dot11a => ErrorModelKind::Ber,
                Standard::Ns2 => ErrorModelKind::Threshold,
            });
        }
        if r.capture_db.is_none() && r.standard == Standard::Ns2 {
            r.capture_db = Some(10.0); // ns-2 Phy/WirelessPhy CPThresh_ = 10.0
        }
        if let Some(c) = r.capture_db {
            if !(c.is_finite() && c >= 0.0) {
                return Err(bad(
                    "radio.capture_db",
                    format!("must be >= 0 dB, found {c}"),
                ));
            }
        }
        if let Some(t) = r.sinr_threshold_db {
            if !t.is_finite() {
                return Err(bad(
                    "radio.sinr_threshold_db",
                    "must be a finite number of dB",
                ));
            }
        }
        if r.preamble_detection {
            // ns-3 3.44 ThresholdPreambleDetectionModel: Threshold 4 dB, MinimumRssi -82 dBm.
            r.preamble_detection_snr_db = Some(r.preamble_detection_snr_db.unwrap_or(4.0));
            r.preamble_detection_min_rssi_dbm =
                Some(r.preamble_detection_min_rssi_dbm.unwrap_or(-82.0));
        }
        for (field, v) in [
            (
                "radio.preamble_detection_snr_db",
                r.preamble_detection_snr_db,
            ),
            (
                "radio.preamble_detection_min_rssi_dbm",
                r.preamble_detection_min_rssi_dbm,
            ),
        ] {
            match v {
                Some(_) if !r.preamble_detection => {
                    return Err(bad(
                        field,
                        "has no effect without radio.preamble_detection = true",
                    ))
                }
                Some(x) if !x.is_finite() => {
                    return Err(bad(field, "must be a finite number"));
                }
                _ => {}
            }
        }
        if r.fading == Fading::Rayleigh && r.propagation == PropagationKind::Range {
            return Err(bad(
                "radio.fading",
                "fading cannot be combined with propagation = \"range\"",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    const CHAIN: &str = "[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 100.0\n";

    fn resolved(radio: &str) -> Result<super::Radio, String> {
        let text = format!("{CHAIN}[radio]\n{radio}\n");
        crate::scenario::Scenario::from_toml(&text)
            .map(|s| s.radio)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn preamble_detection_takes_ns3s_thresholds_and_states_them() {
        let r = resolved("preamble_detection = true").unwrap();
        assert_eq!(r.preamble_detection_snr_db, Some(4.0));
        assert_eq!(r.preamble_detection_min_rssi_dbm, Some(-82.0));
        let r = resolved("preamble_detection = true\npreamble_detection_snr_db = 6.0").unwrap();
        assert_eq!(r.preamble_detection_snr_db, Some(6.0));
        let off = resolved("").unwrap();
        assert_eq!(off.preamble_detection_snr_db, None);
    }

    #[test]
    fn preamble_detection_thresholds_are_refused_naming_the_field() {
        for (radio, field) in [
            (
                "preamble_detection_snr_db = 4.0",
                "radio.preamble_detection_snr_db",
            ),
            (
                "preamble_detection = true\npreamble_detection_min_rssi_dbm = nan",
                "radio.preamble_detection_min_rssi_dbm",
            ),
        ] {
            let err = resolved(radio).expect_err(field);
            assert!(err.contains(field), "{err}");
        }
    }
}
