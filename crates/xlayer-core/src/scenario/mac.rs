//! The `[mac]` section: the access method (DCF, EDCA presets, a custom level table, Z-MAC and
//! ZMAC+), retry and queue limits ([`MacConfig`], [`ZmacConfig`], [`EdcaLevel`]), and their
//! validation. `MacConfig::validate` takes the one value it needs from another section,
//! `radio.rts_cts`; the level table in force depends on `radio.standard`, passed in likewise.

use serde::{Deserialize, Serialize};

use super::check::{bad, default_from_serde, positive};
use super::radio::Standard;
use crate::error::XlError;
pub use crate::mac::EdcaLevel;

default_from_serde!(ZmacConfig, MacConfig);

/// MAC access: DCF (one level) or EDCA with a preset or explicit level table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MacConfig {
    /// "dcf", "802.11e" (4 levels), "diffq8" (8 levels, DiffQ Table 1), "custom" (`levels`),
    /// "zmac" (Z-MAC, 1 level) or "zmacplus" (ZMAC+, 4 levels: low, medium, high, control).
    #[serde(default = "MacConfig::default_access")]
    pub access: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<EdcaLevel>,
    #[serde(default = "MacConfig::default_short_retry")]
    pub short_retry_limit: u32,
    #[serde(default = "MacConfig::default_long_retry")]
    pub long_retry_limit: u32,
    #[serde(default = "MacConfig::default_queue")]
    pub queue_packets: u32,
    /// Each level's queue also holds at most this many bytes (network-layer packet sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u32>,
    /// Z-MAC / ZMAC+ settings (`mac::zmac`), used with access "zmac" and "zmacplus".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zmac: Option<ZmacConfig>,
}

/// With `setup_s = "auto"` the discovery period defaults to `discovery_fraction` of this (the
/// old fixed set-up's default length, so the discovery period is unchanged: 0.5 s).
pub const AUTO_DISCOVERY_BASE_S: f64 = 2.0;

/// The length of Z-MAC's set-up phase (`mac.zmac.setup_s`): until the slot assignment
/// completes, or a fixed number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SetupSpec {
    #[default]
    Auto,
    Seconds(f64),
}

impl SetupSpec {
    /// The fixed length, `None` for `"auto"`.
    pub fn seconds(self) -> Option<f64> {
        match self {
            SetupSpec::Auto => None,
            SetupSpec::Seconds(s) => Some(s),
        }
    }
}

impl Serialize for SetupSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SetupSpec::Auto => s.serialize_str("auto"),
            SetupSpec::Seconds(v) => s.serialize_f64(*v),
        }
    }
}

impl<'de> Deserialize<'de> for SetupSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, Visitor};
        struct V;
        impl Visitor<'_> for V {
            type Value = SetupSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\" or a number of seconds")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SetupSpec, E> {
                if v == "auto" {
                    Ok(SetupSpec::Auto)
                } else {
                    Err(E::custom(format!(
                        "expected \"auto\" or a number of seconds, found \"{v}\""
                    )))
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SetupSpec, E> {
                Ok(SetupSpec::Seconds(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SetupSpec, E> {
                Ok(SetupSpec::Seconds(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SetupSpec, E> {
                Ok(SetupSpec::Seconds(v as f64))
            }
        }
        d.deserialize_any(V)
    }
}

/// Z-MAC / ZMAC+ settings (see `mac::zmac` and `docs/scenario.md`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZmacConfig {
    /// Owner contention window `[0, To)` in PHY slot times (Z-MAC: 8).
    #[serde(default = "ZmacConfig::default_to")]
    pub to_slots: u32,
    /// Non-owners contend in `[To, Tno)` (Z-MAC: 32).
    #[serde(default = "ZmacConfig::default_tno")]
    pub tno_slots: u32,
    /// Network-packet size one TDMA slot is dimensioned for; default: the scenario's largest
    /// flow packet (payload + 60 bytes of network and transport headers), 1500 without flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_payload_bytes: Option<u32>,
    /// Length of the slot-assignment set-up phase (data waits until it ends): `"auto"` (the
    /// default) ends it at the slot boundary after the colouring completes, at the latest at
    /// `setup_max_s`; a number of seconds fixes it.
    #[serde(default)]
    pub setup_s: SetupSpec,
    /// Upper bound of an `"auto"` set-up phase.
    #[serde(default = "ZmacConfig::default_setup_max")]
    pub setup_max_s: f64,
    /// Fraction of a fixed set-up phase spent discovering neighbours before taking slots.
    #[serde(default = "ZmacConfig::default_discovery")]
    pub discovery_fraction: f64,
    /// Length of the discovery period; default `discovery_fraction · setup_s` with a fixed
    /// set-up, `discovery_fraction` × 2 s (0.5 s) with `"auto"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_s: Option<f64>,
    /// Mean number of TDMA slots between two STATE announcements of a node.
    #[serde(default = "ZmacConfig::default_announce")]
    pub announce_interval_slots: u32,
    /// Consecutive unacknowledged DATA frames that make a node send an ECN.
    #[serde(default = "ZmacConfig::default_ecn_losses")]
    pub ecn_loss_threshold: u32,
    /// How long a forwarded ECN keeps a node in high contention (HCL).
    #[serde(default = "ZmacConfig::default_hcl")]
    pub hcl_duration_s: f64,
    /// PSDU bytes of a ZMAC+ beacon (0: PLCP preamble and header only).
    #[serde(default)]
    pub beacon_bytes: u32,
}

impl ZmacConfig {
    /// The discovery period's length in seconds (see `discovery_s`).
    pub fn discovery_secs(&self) -> f64 {
        self.discovery_s.unwrap_or(match self.setup_s {
            SetupSpec::Seconds(s) => s * self.discovery_fraction,
            SetupSpec::Auto => AUTO_DISCOVERY_BASE_S * self.discovery_fraction,
        })
    }

    fn default_to() -> u32 {
        8
    }
    fn default_tno() -> u32 {
        32
    }
    fn default_setup_max() -> f64 {
        30.0
    }
    fn default_discovery() -> f64 {
        0.25
    }
    fn default_announce() -> u32 {
        16
    }
    fn default_ecn_losses() -> u32 {
        2
    }
    fn default_hcl() -> f64 {
        0.5
    }
}

impl MacConfig {
    fn default_access() -> String {
        "dcf".into()
    }
    fn default_short_retry() -> u32 {
        7
    }
    fn default_long_retry() -> u32 {
        4
    }
    fn default_queue() -> u32 {
        50
    }
}

impl MacConfig {
    /// Checks the access method, its level table or Z-MAC settings, and the retry and queue
    /// limits. `rts_cts` is `radio.rts_cts` (Z-MAC does not use RTS/CTS).
    pub(super) fn validate(&self, rts_cts: bool) -> Result<(), XlError> {
        let m = self;
        match m.access.as_str() {
            "dcf" | "802.11e" | "diffq8" => {
                if !m.levels.is_empty() {
                    return Err(bad(
                        "mac.levels",
                        format!(
                            "only used with access = \"custom\" (access is \"{}\")",
                            m.access
                        ),
                    ));
                }
            }
            "custom" => {
                if m.levels.len() > 16 {
                    return Err(bad(
                        "mac.levels",
                        format!("at most 16 priority levels, found {}", m.levels.len()),
                    ));
                }
                if m.levels.is_empty() {
                    return Err(bad(
                        "mac.levels",
                        "access = \"custom\" needs at least one level",
                    ));
                }
            }
            "zmac" | "zmacplus" => {
                if !m.levels.is_empty() {
                    return Err(bad("mac.levels", "only used with access = \"custom\""));
                }
                if rts_cts {
                    return Err(bad(
                        "radio.rts_cts",
                        "RTS/CTS is not used with access = \"zmac\" or \"zmacplus\"",
                    ));
                }
                let z = m.zmac.clone().unwrap_or_default();
                if z.tno_slots <= z.to_slots || z.tno_slots > 1024 {
                    return Err(bad(
                        "mac.zmac.tno_slots",
                        format!(
                            "need to_slots < tno_slots <= 1024, found {} and {}",
                            z.to_slots, z.tno_slots
                        ),
                    ));
                }
                if z.slot_payload_bytes.is_some_and(|b| b == 0 || b > 65535) {
                    return Err(bad("mac.zmac.slot_payload_bytes", "must be 1..=65535"));
                }
                if let SetupSpec::Seconds(s) = z.setup_s {
                    if !(s.is_finite() && s >= 0.0) {
                        return Err(bad(
                            "mac.zmac.setup_s",
                            "must be \"auto\" or a finite number >= 0",
                        ));
                    }
                }
                positive("mac.zmac.setup_max_s", z.setup_max_s)?;
                if !(0.0..1.0).contains(&z.discovery_fraction) {
                    return Err(bad("mac.zmac.discovery_fraction", "must be in [0, 1)"));
                }
                if let Some(d) = z.discovery_s {
                    let bound = z.setup_s.seconds().unwrap_or(z.setup_max_s);
                    if !(d.is_finite() && d >= 0.0 && (d < bound || bound == 0.0)) {
                        return Err(bad(
                            "mac.zmac.discovery_s",
                            format!("must be >= 0 and below the set-up's length ({bound} s)"),
                        ));
                    }
                }
                if z.announce_interval_slots < 2 {
                    return Err(bad(
                        "mac.zmac.announce_interval_slots",
                        "must be at least 2",
                    ));
                }
                if z.ecn_loss_threshold == 0 {
                    return Err(bad("mac.zmac.ecn_loss_threshold", "must be at least 1"));
                }
                positive("mac.zmac.hcl_duration_s", z.hcl_duration_s)?;
                if z.beacon_bytes > 2304 {
                    return Err(bad("mac.zmac.beacon_bytes", "must be at most 2304"));
                }
            }
            other => {
                return Err(bad("mac.access", format!("unknown access \"{other}\"; allowed: \"dcf\", \"802.11e\", \"diffq8\", \"custom\", \"zmac\", \"zmacplus\"")));
            }
        }
        if m.zmac.is_some() && !matches!(m.access.as_str(), "zmac" | "zmacplus") {
            return Err(bad(
                "mac.zmac",
                "only used with access = \"zmac\" or \"zmacplus\"",
            ));
        }
        for (i, l) in m.levels.iter().enumerate() {
            if l.aifsn < 1 {
                return Err(bad(format!("mac.levels[{i}].aifsn"), "must be at least 1"));
            }
            if l.cw_min == 0 || l.cw_max < l.cw_min || l.cw_max > 65535 {
                return Err(bad(
                    format!("mac.levels[{i}]"),
                    format!(
                        "need 1 <= cw_min <= cw_max <= 65535, found cw_min {} cw_max {}",
                        l.cw_min, l.cw_max
                    ),
                ));
            }
        }
        if m.short_retry_limit == 0 || m.short_retry_limit > 255 {
            return Err(bad(
                "mac.short_retry_limit",
                format!("must be 1..=255, found {}", m.short_retry_limit),
            ));
        }
        if m.long_retry_limit == 0 || m.long_retry_limit > 255 {
            return Err(bad(
                "mac.long_retry_limit",
                format!("must be 1..=255, found {}", m.long_retry_limit),
            ));
        }
        // A saturating source keeps its queue full: a queue without a practical bound would
        // take every packet it can make at once.
        if m.queue_packets == 0 || m.queue_packets > 65535 {
            return Err(bad(
                "mac.queue_packets",
                format!("must be 1..=65535, found {}", m.queue_packets),
            ));
        }
        // At least one packet of the largest size 802.11 carries (a 2304-byte MSDU) fits.
        if let Some(b) = m
            .queue_bytes
            .filter(|b| !(2304..=1_000_000_000).contains(b))
        {
            return Err(bad(
                "mac.queue_bytes",
                format!("must be 2304..=1000000000 bytes (one 802.11 MSDU at least), found {b}"),
            ));
        }
        Ok(())
    }

    /// The EDCA level table of `access` (or `levels`) under the radio `standard`, lowest
    /// priority first (what `Scenario::mac_levels` gives).
    pub(super) fn edca_levels(&self, standard: Standard) -> Vec<EdcaLevel> {
        let (cw_min, cw_max) = match standard {
            Standard::Dot11a => (15, 1023),
            _ => (31, 1023),
        };
        let l = |aifsn, cw_min, cw_max| EdcaLevel {
            aifsn,
            cw_min,
            cw_max,
        };
        match self.access.as_str() {
            // DCF: DIFS = SIFS + 2 slots (802.11-2016 §10.3.2.3.4).
            "dcf" => vec![l(2, cw_min, cw_max)],
            // 802.11-2016 Table 9-137 default EDCA parameters: AC_BK, AC_BE, AC_VI, AC_VO.
            "802.11e" => vec![
                l(7, cw_min, cw_max),
                l(3, cw_min, cw_max),
                l(2, cw_min.div_ceil(2) - 1, cw_min),
                l(2, (cw_min + 1) / 4 - 1, cw_min.div_ceil(2) - 1),
            ],
            // DiffQ Table 1: AIFS, CWmin and CWmax exponents (CW = 2^x - 1) for levels 0..7.
            "diffq8" => {
                let aifs = [7, 6, 6, 6, 3, 3, 3, 2];
                let cmin = [5, 5, 5, 5, 4, 3, 2, 1];
                let cmax = [10, 9, 8, 7, 5, 4, 3, 3];
                (0..8)
                    .map(|i| l(aifs[i], (1 << cmin[i]) - 1, (1 << cmax[i]) - 1))
                    .collect()
            }
            // Z-MAC: one queue; ZMAC+: low, medium, high and control (DPCLO §IV-F). Their
            // EDCA parameters are not used by the Z-MAC access.
            "zmac" => vec![l(2, cw_min, cw_max)],
            "zmacplus" => vec![l(2, cw_min, cw_max); 4],
            _ => self.levels.clone(),
        }
    }
}
