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
        if r.fading == Fading::Rayleigh && r.propagation == PropagationKind::Range {
            return Err(bad(
                "radio.fading",
                "fading cannot be combined with propagation = \"range\"",
            ));
        }
        Ok(())
    }
}
